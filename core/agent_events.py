"""What the agent loop tells its sink while a turn runs.

The sink receives every neutral stream event of every completion unchanged
(`TextDelta`, `ToolCallStart`, `MessageComplete`, `StreamError`, ...) plus the
loop's own events defined here: each tool call starting and finishing, context
compaction, notices, one `TurnStarted` first and exactly one `TurnFinished`
at the end of each turn.
Together they form `AgentEvent`, discriminated on `kind`, so a UI can `match`
on one union.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import Field

from navagent.core.events import (
    ChatError,
    MessageComplete,
    RefusalDelta,
    StreamError,
    TextDelta,
    ThinkingDelta,
    ToolCallStart,
    TurnEnd,
)
from navagent.core.messages import FrozenModel, ToolCall
from navagent.core.tools import ToolOutcome

__all__ = [
    "AgentEvent",
    "AgentNotice",
    "ContextCompacted",
    "EventSink",
    "ToolFinished",
    "ToolStarted",
    "TurnFinished",
    "TurnFinishReason",
    "TurnStarted",
]

TurnFinishReason = Literal[
    "answered", "refused", "paused", "iteration_limit", "error", "timeout", "cancelled"
]
"""Why a turn ended: the model answered without tool calls, the model declined
to answer (a refusal), the provider paused the turn (`pause_turn`, which only
server-side tools cause; this agent has none), the per-turn iteration limit
was hit, a completion failed, a completion timed out, or the user cancelled
the turn."""


class ToolStarted(FrozenModel):
    """A tool call is about to run."""

    kind: Literal["tool_started"] = "tool_started"
    index: int
    """Position of the call in its assistant message's `tool_calls`."""
    call: ToolCall


class ToolFinished(FrozenModel):
    """A tool call ended; its result is (or is about to be) in the history."""

    kind: Literal["tool_finished"] = "tool_finished"
    index: int
    """Position of the call in its assistant message's `tool_calls`."""
    outcome: ToolOutcome
    """Status `cancelled` when the turn was cancelled before the tool finished."""


class ContextCompacted(FrozenModel):
    """Older turns were replaced by a model-written summary."""

    kind: Literal["compacted"] = "compacted"
    summarized_messages: int
    """How many history messages the summary replaced."""
    kept_messages: int
    """How many recent history messages were kept verbatim."""
    tokens_before: int
    """Estimated request size before compaction (see `compaction.estimate_tokens`)."""
    tokens_after: int


class AgentNotice(FrozenModel):
    """Something the user should know that is not part of the conversation."""

    kind: Literal["notice"] = "notice"
    level: Literal["info", "warning", "error"] = "info"
    text: str


class TurnStarted(FrozenModel):
    """A turn begins; always the first event of a turn, so scripts can group events."""

    kind: Literal["turn_started"] = "turn_started"
    text: str
    """The user's message."""
    session_id: str = ""
    """The session the turn is saved in; empty when nothing is saved."""


class TurnFinished(FrozenModel):
    """The turn is over; always the last event of a turn."""

    kind: Literal["turn_finished"] = "turn_finished"
    reason: TurnFinishReason
    session_id: str = ""
    """The session the turn is saved in; empty when nothing is saved."""
    message: str = ""
    """One sentence for the user when the turn did not end with an answer."""
    iterations: int = 0
    """Completions requested during the turn (compaction summaries excluded)."""
    error: ChatError | None = None
    """The failure, for reasons `error` and `timeout`."""
    partial: bool = False
    """The failed completion had streamed text the user saw; it is not kept in the history,
    so whatever shows it says so (the REPL marks it incomplete)."""


AgentEvent = Annotated[
    TextDelta
    | ThinkingDelta
    | RefusalDelta
    | ToolCallStart
    | TurnEnd
    | MessageComplete
    | StreamError
    | ToolStarted
    | ToolFinished
    | ContextCompacted
    | AgentNotice
    | TurnStarted
    | TurnFinished,
    Field(discriminator="kind"),
]
"""Anything the agent reports to its sink, discriminated on `kind`."""

EventSink = Callable[[AgentEvent], None]
"""Receives events in order on the event loop; it must return quickly (print,
queue), because the loop waits for it before reading the next event."""
