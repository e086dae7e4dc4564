"""Neutral stream events: what one streamed completion produces.

A well-formed stream is zero or more deltas (`TextDelta`, `ThinkingDelta`,
`RefusalDelta`, `ToolCallStart`), then at most one `TurnEnd`, then exactly one terminal event:
`MessageComplete` on success or `StreamError` on failure. Nothing follows a
terminal event.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from navagent.core.messages import AssistantMessage, FrozenModel

__all__ = [
    "ChatError",
    "ErrorCode",
    "FinishReason",
    "CONTENT_EVENTS",
    "MessageComplete",
    "RefusalDelta",
    "StreamError",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallStart",
    "TurnEnd",
    "Usage",
    "format_usage",
    "is_terminal",
]

ErrorCode = Literal[
    "rate_limited",
    "overloaded",
    "auth",
    "invalid_request",
    "upstream_unavailable",
    "timeout",
    "cancelled",
    "internal",
]
"""Stable, machine-readable failure classes (`ChatError.code` on the wire)."""

FinishReason = Literal[
    "stop", "tool_calls", "length", "content_filter", "refusal", "pause_turn", "other"
]
"""Why the model stopped, normalised across providers.

`refusal`: the model declined (Anthropic `stop_reason: refusal`, or an OpenAI
turn that carried a refusal). `pause_turn`: Anthropic paused a long-running
server-tool turn; a client that uses server tools sends the message back to let
it continue, one without server tools should never see it and ends the turn.
"""


class TextDelta(FrozenModel):
    """A piece of visible text, as it arrived."""

    kind: Literal["text_delta"] = "text_delta"
    text: str


class ThinkingDelta(FrozenModel):
    """A piece of reasoning text, as it arrived."""

    kind: Literal["thinking_delta"] = "thinking_delta"
    text: str


class RefusalDelta(FrozenModel):
    """A piece of a refusal, as it arrived; kept apart from the answer's text."""

    kind: Literal["refusal_delta"] = "refusal_delta"
    text: str


class ToolCallStart(FrozenModel):
    """A tool call whose name is known; its arguments are still streaming."""

    kind: Literal["tool_call_start"] = "tool_call_start"
    index: int
    """Position in the final message's `tool_calls` (ours, not the vendor's index)."""
    id: str
    name: str


class Usage(FrozenModel):
    """Token counts for one completion, with the same meaning on every provider.

    The cache and reasoning counts are parts of the totals, not additions:
    OpenAI's `prompt_tokens` already include cached tokens, while Anthropic's
    `input_tokens` exclude cache reads and writes, so its translator adds them.
    """

    input_tokens: int = 0
    """All input tokens, including those read from or written to the cache."""
    cache_read_tokens: int = 0
    """Of `input_tokens`, those read from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """Of `input_tokens`, those written to the provider's prompt cache."""
    output_tokens: int = 0
    """All output tokens, including reasoning."""
    reasoning_tokens: int = 0
    """Of `output_tokens`, those spent on (possibly hidden) reasoning."""

    def __add__(self, other: Usage) -> Usage:
        """The counts of two completions together (a turn, a session)."""
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


def format_usage(usage: Usage) -> str:
    """Token counts in one line: `1,200 tokens in (1,024 cached) · 30 out`.

    The cache and reasoning counts are parts of the totals (see `Usage`), shown
    only when there are any.
    """
    cache = [
        f"{count:,} {label}"
        for count, label in (
            (usage.cache_read_tokens, "cached"),
            (usage.cache_write_tokens, "written to cache"),
        )
        if count
    ]
    inputs = f"{usage.input_tokens:,} tokens in" + (f" ({', '.join(cache)})" if cache else "")
    reasoning = f" ({usage.reasoning_tokens:,} reasoning)" if usage.reasoning_tokens else ""
    return f"{inputs} · {usage.output_tokens:,} out{reasoning}"


class TurnEnd(FrozenModel):
    """Why the model stopped and what it cost; sent just before `MessageComplete`."""

    kind: Literal["turn_end"] = "turn_end"
    finish_reason: FinishReason
    provider_finish_reason: str = ""
    """The provider's own value, e.g. "end_turn", "tool_use" or "tool_calls"."""
    usage: Usage = Usage()


class MessageComplete(FrozenModel):
    """The final assistant message: full text and every tool call complete."""

    kind: Literal["message"] = "message"
    message: AssistantMessage


class ChatError(FrozenModel):
    """Why a completion failed; short, useful, and free of secrets."""

    message: str
    status_code: int | None = None
    """The upstream HTTP status where there is one."""
    code: ErrorCode = "internal"
    retryable: bool = False
    """True when sending the same request again later may succeed."""


class StreamError(FrozenModel):
    """The completion failed; no final message follows."""

    kind: Literal["error"] = "error"
    error: ChatError


StreamEvent = Annotated[
    TextDelta
    | ThinkingDelta
    | RefusalDelta
    | ToolCallStart
    | TurnEnd
    | MessageComplete
    | StreamError,
    Field(discriminator="kind"),
]
"""Any neutral stream event, discriminated on `kind`."""

CONTENT_EVENTS = (TextDelta, ThinkingDelta, RefusalDelta, ToolCallStart)
"""The events that show the model has started answering (time to first token)."""


def is_terminal(event: StreamEvent) -> bool:
    """Return True for the events that end a stream (final message or error)."""
    return isinstance(event, MessageComplete | StreamError)
