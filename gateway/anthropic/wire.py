"""Anthropic Messages wire shapes (https://docs.anthropic.com/en/api/messages-streaming).

TypedDicts, not pydantic models: the stream translator runs once per SSE
event and validating each event into models would cost more than the JSON
parse itself. They document the shapes and type the request builder; the
translator reads events defensively and reports a malformed one by name.
New block, delta and event types appear regularly (server tools,
citations, ...); the translator ignores what it does not know.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "CacheControl",
    "ContentBlockParam",
    "ErrorEvent",
    "ErrorObject",
    "MessageDelta",
    "MessageDeltaEvent",
    "MessageStartEvent",
    "OutputTokensDetails",
    "RedactedThinkingBlockParam",
    "RequestBody",
    "RequestMessage",
    "StreamBlock",
    "StreamDelta",
    "StreamMessage",
    "StreamUsage",
    "TextBlockParam",
    "ThinkingBlockParam",
    "ThinkingDisabledParam",
    "ThinkingPayload",
    "ToolParam",
    "ToolResultBlockParam",
    "ToolUseBlockParam",
]


# --- request ---------------------------------------------------------------


class CacheControl(TypedDict):
    """Marks the end of a prompt prefix to cache (a breakpoint; at most four per request)."""

    type: Literal["ephemeral"]


class TextBlockParam(TypedDict):
    """A text block; `text` is never empty (the API rejects empty text blocks)."""

    type: Literal["text"]
    text: str
    cache_control: NotRequired[CacheControl]


class ThinkingPayload(TypedDict, total=False):
    """What a thinking block leaves in `ThinkingPart.payload`: one of the two, never both."""

    signature: str
    """Authenticates the part's text; a thinking block goes back with it, unchanged."""
    redacted_data: str
    """The encrypted content of a `redacted_thinking` block (the part has no text)."""


class ThinkingBlockParam(TypedDict):
    """A thinking block replayed unchanged with its signature."""

    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingBlockParam(TypedDict):
    """A redacted thinking block replayed unchanged."""

    type: Literal["redacted_thinking"]
    data: str


class ToolUseBlockParam(TypedDict):
    """An assistant tool call; `input` is the parsed arguments object."""

    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]
    cache_control: NotRequired[CacheControl]


class ToolResultBlockParam(TypedDict):
    """A tool's output, inside a user message."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: NotRequired[str]
    cache_control: NotRequired[CacheControl]


ContentBlockParam = (
    TextBlockParam
    | ThinkingBlockParam
    | RedactedThinkingBlockParam
    | ToolUseBlockParam
    | ToolResultBlockParam
)


class RequestMessage(TypedDict):
    """One turn; roles strictly alternate, starting from user."""

    role: Literal["user", "assistant"]
    content: list[ContentBlockParam]


class ToolParam(TypedDict):
    """A client tool definition."""

    name: str
    description: NotRequired[str]
    input_schema: dict[str, Any]
    cache_control: NotRequired[CacheControl]


class ThinkingDisabledParam(TypedDict):
    """`thinking: {type: disabled}`: no thinking here (for a model that thinks by default)."""

    type: Literal["disabled"]


class RequestBody(TypedDict):
    """The `POST /v1/messages` body."""

    model: str
    max_tokens: int
    messages: list[RequestMessage]
    stream: Literal[True]
    system: NotRequired[list[TextBlockParam]]
    """Text blocks (a plain string is accepted too, but cannot carry a breakpoint)."""
    tools: NotRequired[list[ToolParam]]
    temperature: NotRequired[float]
    thinking: NotRequired[ThinkingDisabledParam]


# --- stream ----------------------------------------------------------------


class OutputTokensDetails(TypedDict, total=False):
    """Parts of `output_tokens` (newer models)."""

    thinking_tokens: int


class StreamUsage(TypedDict, total=False):
    """Token counts; `message_delta` counts are cumulative and overwrite.

    `input_tokens` excludes the cache counts: the whole input is the sum of
    the three.
    """

    input_tokens: int | None
    cache_read_input_tokens: int | None
    cache_creation_input_tokens: int | None
    output_tokens: int
    output_tokens_details: OutputTokensDetails


class StreamMessage(TypedDict, total=False):
    """The message skeleton in `message_start`.

    Usually `content: []` and `stop_reason: null`, but it may already hold
    whole blocks and a stop reason (programmatic tool calling).
    """

    id: str
    model: str
    content: list[StreamBlock]
    stop_reason: str | None
    usage: StreamUsage


class MessageStartEvent(TypedDict):
    """`message_start`: carries the input token count."""

    type: Literal["message_start"]
    message: StreamMessage


class StreamBlock(TypedDict, total=False):
    """`content_block_start.content_block`: text, tool_use, thinking, redacted_thinking, ..."""

    type: str
    text: str
    id: str
    name: str
    input: dict[str, Any]
    thinking: str
    signature: str
    data: str


class StreamDelta(TypedDict, total=False):
    """`content_block_delta.delta`: text_delta, input_json_delta, thinking_delta, ..."""

    type: str
    text: str
    partial_json: str
    thinking: str
    signature: str


class MessageDelta(TypedDict, total=False):
    """`message_delta.delta`."""

    stop_reason: str | None
    stop_sequence: str | None


class MessageDeltaEvent(TypedDict):
    """`message_delta`: stop reason and the final output token count."""

    type: Literal["message_delta"]
    delta: MessageDelta
    usage: StreamUsage


class ErrorObject(TypedDict, total=False):
    """The `error` object of an error event or error response."""

    type: str
    message: str


class ErrorEvent(TypedDict):
    """`error`: the stream failed (e.g. overloaded_error) and no message follows."""

    type: Literal["error"]
    error: ErrorObject
