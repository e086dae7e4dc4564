"""What happened in a replayed conversation, turn by turn.

The transcript is built from the agent's own events (the same ones the REPL
renders) and the confirmation questions it asked. It is what expectations
are checked against and what the tests snapshot: user turns, tool calls with
their arguments and outcomes, thinking, compaction, the assistant's texts,
how each turn ended and what it cost (usage, with the REPL's usage line).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field

from navagent.cli.render import format_usage
from navagent.core.agent_events import (
    AgentEvent,
    ContextCompacted,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnFinishReason,
)
from navagent.core.events import ErrorCode, MessageComplete, ThinkingDelta, TurnEnd, Usage
from navagent.core.messages import FrozenModel, ToolCall
from navagent.core.tools import ToolStatus

__all__ = [
    "CompactionStep",
    "Step",
    "TextStep",
    "ThinkingStep",
    "ToolStep",
    "Transcript",
    "TranscriptBuilder",
    "TranscriptTurn",
    "TurnError",
]


class TextStep(FrozenModel):
    """Text the assistant wrote (an answer, or a sentence before tool calls)."""

    kind: Literal["text"] = "text"
    text: str


class ThinkingStep(FrozenModel):
    """Reasoning the model streamed before its text or calls."""

    kind: Literal["thinking"] = "thinking"
    text: str


class ToolStep(FrozenModel):
    """One tool call and how it ended."""

    kind: Literal["tool"] = "tool"
    id: str
    """The provider's call id (masked in snapshots: it differs per provider)."""
    name: str
    arguments: dict[str, Any] | str
    """Parsed arguments; the raw text when they are not a JSON object."""
    status: ToolStatus | None = None
    """None if the turn ended before the call finished."""
    exit_code: int | None = None
    confirmed: bool | None = None
    """The answer given when the call asked for confirmation."""


class CompactionStep(FrozenModel):
    """Older turns were replaced by a summary."""

    kind: Literal["compacted"] = "compacted"
    summarized_messages: int
    kept_messages: int


Step = Annotated[TextStep | ThinkingStep | ToolStep | CompactionStep, Field(discriminator="kind")]


class TurnError(FrozenModel):
    """Why a turn failed."""

    code: ErrorCode
    message: str


class TranscriptTurn(FrozenModel):
    """One user message and everything that followed it."""

    user: str
    resumed: bool = False
    """The agent was rebuilt from the session store before this turn."""
    steps: tuple[Step, ...] = ()
    finish: TurnFinishReason | None = None
    """None if the turn never finished (a harness problem)."""
    answer: str = ""
    """The text of the message that ended the turn."""
    error: TurnError | None = None
    confirmations_asked: int = 0
    usage: Usage = Usage()
    """What the turn's completions cost together, as the providers reported it."""
    usage_line: str = ""
    """The REPL's usage line for the turn (empty when nothing was reported)."""

    @property
    def tools(self) -> tuple[ToolStep, ...]:
        """The tool calls, in the order they were made."""
        return tuple(step for step in self.steps if isinstance(step, ToolStep))

    @property
    def thinking(self) -> bool:
        """True when any reasoning was streamed during the turn."""
        return any(isinstance(step, ThinkingStep) for step in self.steps)

    @property
    def compacted(self) -> bool:
        """True when the context was compacted during the turn."""
        return any(isinstance(step, CompactionStep) for step in self.steps)


class Transcript(FrozenModel):
    """A whole replayed conversation."""

    scenario: str
    provider: str
    turns: tuple[TranscriptTurn, ...] = ()

    def to_data(self) -> dict[str, Any]:
        """Plain data for snapshots (JSON types only)."""
        return self.model_dump(mode="json")


def _arguments(call: ToolCall) -> dict[str, Any] | str:
    parsed = call.parsed_arguments()
    return parsed if parsed is not None else call.arguments


class TranscriptBuilder:
    """Collects agent events into `TranscriptTurn`s; use `sink` as the agent's event sink."""

    def __init__(self, *, scenario: str, provider: str) -> None:
        self._scenario = scenario
        self._provider = provider
        self._turns: list[TranscriptTurn] = []
        self._current: dict[str, Any] | None = None
        self._steps: list[Any] = []
        self._tool_positions: dict[str, int] = {}
        self._thinking: list[str] = []
        self._last_text = ""
        self._usage = Usage()

    def start_turn(self, user: str, *, resumed: bool) -> None:
        """Begin recording the turn for `user`'s message."""
        self.end_turn()
        self._current = {"user": user, "resumed": resumed, "confirmations_asked": 0}
        self._steps = []
        self._tool_positions = {}
        self._thinking = []
        self._last_text = ""
        self._usage = Usage()

    def note_confirmation(self, call: ToolCall, answer: bool) -> None:
        """Record the answer the scenario gave when `call` asked for confirmation."""
        assert self._current is not None
        self._current["confirmations_asked"] += 1
        position = self._tool_positions.get(call.id)
        if position is not None:
            self._steps[position] = self._steps[position].model_copy(update={"confirmed": answer})

    def sink(self, event: AgentEvent) -> None:
        """The agent's event sink."""
        match event:
            case ThinkingDelta():
                self._thinking.append(event.text)
            case TurnEnd():
                self._usage += event.usage
            case MessageComplete():
                self._flush_thinking(event)
                self._last_text = event.message.content
                if event.message.content:
                    self._steps.append(TextStep(text=event.message.content))
            case ToolStarted():
                call = event.call
                self._tool_positions[call.id] = len(self._steps)
                self._steps.append(ToolStep(id=call.id, name=call.name, arguments=_arguments(call)))
            case ToolFinished():
                outcome = event.outcome
                position = self._tool_positions[outcome.call.id]
                self._steps[position] = self._steps[position].model_copy(
                    update={"status": outcome.status, "exit_code": outcome.exit_code}
                )
            case ContextCompacted():
                self._steps.append(
                    CompactionStep(
                        summarized_messages=event.summarized_messages,
                        kept_messages=event.kept_messages,
                    )
                )
            case TurnFinished():
                self._finish(event)
            case _:
                pass

    def _flush_thinking(self, event: MessageComplete) -> None:
        parts = [part.text for part in event.message.thinking if part.text]
        text = "\n".join(parts) or "".join(self._thinking)
        if text:
            self._steps.append(ThinkingStep(text=text))
        self._thinking = []

    def _finish(self, event: TurnFinished) -> None:
        if self._current is None:
            return
        answer = self._last_text if event.reason == "answered" else ""
        self._current.update(finish=event.reason, answer=answer)
        if event.error is not None:
            self._current["error"] = TurnError(code=event.error.code, message=event.error.message)

    def end_turn(self) -> None:
        """Close the current turn (also done by `start_turn` and `transcript`)."""
        if self._current is not None:
            usage = self._usage
            line = format_usage(usage) if usage.input_tokens or usage.output_tokens else ""
            self._turns.append(
                TranscriptTurn(
                    **self._current, steps=tuple(self._steps), usage=usage, usage_line=line
                )
            )
            self._current = None

    def transcript(self) -> Transcript:
        """Everything recorded so far."""
        self.end_turn()
        return Transcript(
            scenario=self._scenario, provider=self._provider, turns=tuple(self._turns)
        )


def render_arguments(arguments: dict[str, Any] | str) -> str:
    """Arguments as compact JSON, for one-line messages."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)
