"""Test doubles for the agent loop: a scripted chat client and a fake tool runner.

Both record what they saw, so tests assert on the exact requests the loop sent
and on which tool tasks were started, finished or cancelled.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field

from navagent.core.agent_events import AgentEvent
from navagent.core.compaction import SUMMARY_INSTRUCTION_PREFIX
from navagent.core.events import (
    ChatError,
    ErrorCode,
    MessageComplete,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallStart,
    TurnEnd,
)
from navagent.core.messages import AssistantMessage, ChatRequest, Tool, ToolCall, UserMessage
from navagent.core.tools import ToolOutcome

TOOLS = (
    Tool(name="sandbox_list", description="List sandboxes."),
    Tool(
        name="sandbox_logs",
        description="Show a sandbox's logs.",
        parameters={"type": "object", "properties": {"name": {"type": "string"}}},
    ),
)
SYSTEM_PROMPT = "You operate a Navigator cluster."


@dataclass(frozen=True)
class Stall:
    """A script step that waits for `until` (forever when None)."""

    until: asyncio.Event | None = None


ScriptItem = StreamEvent | Stall


def text_completion(text: str, *, pieces: int = 2) -> list[ScriptItem]:
    """Deltas that spell `text`, then the final message."""
    size = max(1, -(-len(text) // pieces))
    deltas: list[ScriptItem] = [
        TextDelta(text=text[i : i + size]) for i in range(0, len(text), size)
    ]
    return [
        *deltas,
        TurnEnd(finish_reason="stop"),
        MessageComplete(message=AssistantMessage(content=text)),
    ]


def call(call_id: str, tool: str = "sandbox_list", /, **arguments: str) -> ToolCall:
    return ToolCall(id=call_id, name=tool, arguments=json.dumps(arguments))


def tool_completion(*calls: ToolCall, text: str = "") -> list[ScriptItem]:
    """Optional text, a start event per call, then the final message with the calls."""
    items: list[ScriptItem] = [TextDelta(text=text)] if text else []
    items += [ToolCallStart(index=i, id=c.id, name=c.name) for i, c in enumerate(calls)]
    return [
        *items,
        TurnEnd(finish_reason="tool_calls"),
        MessageComplete(message=AssistantMessage(content=text, tool_calls=calls)),
    ]


def error_completion(
    message: str = "upstream exploded", code: ErrorCode = "overloaded", *, text: str = ""
) -> list[ScriptItem]:
    items: list[ScriptItem] = [TextDelta(text=text)] if text else []
    return [*items, StreamError(error=ChatError(message=message, code=code))]


class ScriptedChatClient:
    """A `ChatClient` that plays one script per request, in order.

    Summary requests (last message starts with the compaction instruction)
    take their script from `summaries` instead, so tests need not predict
    when compaction kicks in.
    """

    def __init__(
        self,
        scripts: Iterable[Sequence[ScriptItem]] = (),
        *,
        summaries: Iterable[Sequence[ScriptItem]] = (),
    ) -> None:
        self.scripts: list[Sequence[ScriptItem]] = list(scripts)
        self.summaries: list[Sequence[ScriptItem]] = list(summaries)
        self.requests: list[ChatRequest] = []
        self.summary_requests: list[ChatRequest] = []
        self.interrupted = 0
        """Streams closed or cancelled before their script ended."""

    def add(self, *scripts: Sequence[ScriptItem]) -> None:
        self.scripts.extend(scripts)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        last = request.messages[-1]
        if isinstance(last, UserMessage) and last.content.startswith(SUMMARY_INSTRUCTION_PREFIX):
            self.summary_requests.append(request)
            assert self.summaries, "unexpected summary request"
            script = self.summaries.pop(0)
        else:
            self.requests.append(request)
            assert self.scripts, f"unexpected request #{len(self.requests)}"
            script = self.scripts.pop(0)
        finished = False
        try:
            for item in script:
                if isinstance(item, Stall):
                    await (
                        item.until.wait()
                        if item.until
                        else asyncio.get_running_loop().create_future()
                    )
                else:
                    yield item
            finished = True
        finally:
            if not finished:
                self.interrupted += 1


@dataclass
class FakeToolRunner:
    """Runs calls by name: optional delay, hang forever, or raise."""

    delays: dict[str, float] = field(default_factory=dict)
    """Per call id, seconds to sleep before answering."""
    hang: set[str] = field(default_factory=set)
    """Call ids that never finish (until cancelled)."""
    explode: set[str] = field(default_factory=set)
    """Call ids whose run raises (breaking the runner contract)."""
    started: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    running: int = 0
    max_running: int = 0

    async def run(self, call: ToolCall) -> ToolOutcome:
        self.started.append(call.id)
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            if call.id in self.hang:
                await asyncio.get_running_loop().create_future()
            await asyncio.sleep(self.delays.get(call.id, 0))
            if call.id in self.explode:
                raise RuntimeError(f"runner bug on {call.id}")
        except asyncio.CancelledError:
            self.cancelled.append(call.id)
            raise
        finally:
            self.running -= 1
        self.finished.append(call.id)
        return ToolOutcome(
            call=call,
            status="ok",
            content=f"{call.name} {call.arguments} -> ok ({call.id})",
            argv=("nav", call.name),
        )


class EventLog(list[AgentEvent]):
    """A sink that keeps every event; `kinds()` for order assertions."""

    def __call__(self, event: AgentEvent) -> None:
        self.append(event)

    def kinds(self) -> list[str]:
        return [event.kind for event in self]

    def of(self, kind: str) -> list[AgentEvent]:
        return [event for event in self if event.kind == kind]
