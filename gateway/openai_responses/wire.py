"""OpenAI Responses wire shapes (https://platform.openai.com/docs/api-reference/responses).

TypedDicts, as for Chat Completions: the translator reads each event
defensively instead of validating it into models, which would cost more than
the JSON parse. Field names follow openai-python's `types/responses`
(`ResponseInputItemParam`, `ResponseStreamEvent`). Servers add fields freely
(`obfuscation`, `logprobs`, `content_filters`, ...), so nothing here is closed.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "FunctionCallItem",
    "FunctionCallOutputItem",
    "FunctionToolParam",
    "InputItem",
    "MessageItem",
    "ReasoningItem",
    "ReasoningParam",
    "ReasoningPayload",
    "RequestBody",
    "ResponseObject",
    "ResponseUsage",
    "SummaryText",
]


# --- request: input items ----------------------------------------------------


class MessageItem(TypedDict):
    """`EasyInputMessageParam`: instructions, user text or earlier assistant text."""

    type: Literal["message"]
    role: Literal["developer", "user", "assistant"]
    content: str


class SummaryText(TypedDict):
    """One reasoning summary part."""

    type: Literal["summary_text"]
    text: str


class ReasoningItem(TypedDict):
    """`ResponseReasoningItemParam`, sent back as received.

    With `store: false` the encrypted content is what lets the server restore
    the reasoning.
    """

    type: Literal["reasoning"]
    id: str
    summary: list[SummaryText]
    encrypted_content: str


class ReasoningPayload(TypedDict):
    """What a reasoning item leaves in `ThinkingPart.payload` to be sent back in place."""

    item_id: str
    """`rs_...`."""
    encrypted_content: str
    """Empty unless the request asked for `reasoning.encrypted_content`."""
    summary: list[str]
    """Summary parts as received (the part's text is them joined)."""
    after_tool_calls: int
    """How many of the message's tool calls came before the item (items interleave)."""


class FunctionCallItem(TypedDict):
    """`ResponseFunctionToolCallParam`: an earlier call, keyed by `call_id`.

    The item id (`fc_...`) is left out on purpose: with it, the API insists on
    the reasoning item that preceded the call, which a failover may have dropped.
    """

    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str


class FunctionCallOutputItem(TypedDict):
    """`FunctionCallOutput`: a tool result for `call_id`."""

    type: Literal["function_call_output"]
    call_id: str
    output: str


InputItem = MessageItem | ReasoningItem | FunctionCallItem | FunctionCallOutputItem


class FunctionToolParam(TypedDict):
    """A function tool; `strict: false` because our schemas are not strict-mode schemas."""

    type: Literal["function"]
    name: str
    description: NotRequired[str]
    parameters: dict[str, Any]
    strict: bool


class ReasoningParam(TypedDict):
    """Reasoning options; `summary: auto` streams summaries as thinking."""

    summary: Literal["auto", "concise", "detailed"]


class RequestBody(TypedDict):
    """The `POST /v1/responses` body."""

    model: str
    input: list[InputItem]
    stream: Literal[True]
    store: Literal[False]
    include: NotRequired[list[str]]
    reasoning: NotRequired[ReasoningParam]
    tools: NotRequired[list[FunctionToolParam]]
    max_output_tokens: NotRequired[int]
    temperature: NotRequired[float]


# --- stream ------------------------------------------------------------------


class ResponseUsage(TypedDict, total=False):
    """Token counts of `response.completed` / `response.incomplete`."""

    input_tokens: int
    """All input tokens, cached ones included."""
    input_tokens_details: dict[str, int]
    """`cached_tokens`, and `cache_write_tokens` on newer responses."""
    output_tokens: int
    """All output tokens, reasoning ones included."""
    output_tokens_details: dict[str, int]
    """`reasoning_tokens`."""
    total_tokens: int


class ResponseObject(TypedDict, total=False):
    """The `response` of the lifecycle events (`response.created`, `.completed`, ...)."""

    id: str
    status: str
    """in_progress, queued, completed, incomplete, failed, cancelled."""
    error: dict[str, Any] | None
    """`{code, message}` on `response.failed`."""
    incomplete_details: dict[str, Any] | None
    """`{reason: max_output_tokens | content_filter}` on `response.incomplete`."""
    output: list[dict[str, Any]]
    usage: ResponseUsage | None
