"""OpenAI Chat Completions wire shapes (https://platform.openai.com/docs/api-reference/chat).

TypedDicts, not pydantic models: the stream translator runs once per SSE
event and validating each chunk into models would cost more than the JSON
parse itself. They document the shapes and type the request builder; the
translator reads chunks defensively and reports a malformed one by name.
Servers add fields freely (`obfuscation`, `service_tier`, `moderation`, ...),
so nothing here is closed.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "ChatCompletionChunk",
    "ChoiceDelta",
    "ChunkChoice",
    "CompletionTokensDetails",
    "CompletionUsage",
    "ErrorObject",
    "FunctionCall",
    "FunctionDefinition",
    "FunctionDelta",
    "PromptTokensDetails",
    "ReasoningPayload",
    "RequestBody",
    "RequestMessage",
    "StreamOptions",
    "ToolCallDelta",
    "ToolCallParam",
    "ToolParam",
]


# --- request ---------------------------------------------------------------


class FunctionCall(TypedDict):
    """A called function: name and raw arguments."""

    name: str
    arguments: str
    """A JSON object as a string."""


class ToolCallParam(TypedDict):
    """An assistant tool call in a request."""

    id: str
    type: Literal["function"]
    function: FunctionCall


class RequestMessage(TypedDict):
    """One request message; roles map one to one from the neutral model."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None
    """None only on an assistant message that carries tool calls and no text."""
    tool_calls: NotRequired[list[ToolCallParam]]
    tool_call_id: NotRequired[str]
    refusal: NotRequired[str]
    """Assistant only: the model's refusal, apart from its content."""
    reasoning_content: NotRequired[str]
    """Assistant only, not OpenAI's: reasoning sent back (`reasoning_echo: reasoning_content`)."""
    reasoning_details: NotRequired[list[dict[str, Any]]]
    """Assistant only, OpenRouter's: the reasoning items as received, sent back unchanged."""


class FunctionDefinition(TypedDict):
    """A function the model may call."""

    name: str
    description: NotRequired[str]
    parameters: dict[str, Any]


class ToolParam(TypedDict):
    """A tool definition in a request."""

    type: Literal["function"]
    function: FunctionDefinition


class StreamOptions(TypedDict):
    """Streaming options; `include_usage` asks for the final usage chunk."""

    include_usage: bool


class RequestBody(TypedDict):
    """The `POST /v1/chat/completions` body."""

    model: str
    messages: list[RequestMessage]
    stream: Literal[True]
    stream_options: StreamOptions
    tools: NotRequired[list[ToolParam]]
    max_tokens: NotRequired[int]
    temperature: NotRequired[float]


# --- stream ----------------------------------------------------------------


class FunctionDelta(TypedDict, total=False):
    """A fragment of a called function."""

    name: str | None
    arguments: str | None


class ToolCallDelta(TypedDict, total=False):
    """A fragment of one tool call, keyed by `index`."""

    index: int
    """Which call this fragment belongs to; the only key every fragment has."""
    id: str | None
    """On the first fragment of a call only."""
    type: str | None
    function: FunctionDelta | None


class ChoiceDelta(TypedDict, total=False):
    """What one chunk adds to a choice's message."""

    role: str | None
    content: str | None
    refusal: str | None
    tool_calls: list[ToolCallDelta] | None
    function_call: FunctionDelta | None
    """Legacy `functions` API: the one call's name, then argument fragments."""
    reasoning_content: str | None
    """Not OpenAI's: reasoning text (DeepSeek, Qwen, xAI, Z.ai, llama.cpp, SGLang, vLLM)."""
    reasoning: str | None
    """Not OpenAI's: reasoning text (Groq, Cerebras, OpenRouter, newer vLLM)."""
    reasoning_details: list[dict[str, Any]] | None
    """OpenRouter: reasoning items (`reasoning.text`, `.summary`, `.encrypted`), by `index`."""


class ReasoningPayload(TypedDict):
    """What a Chat Completions stream leaves in `ThinkingPart.payload`."""

    reasoning_details: list[dict[str, Any]]
    """OpenRouter's items, merged by `index` (text joined, signatures and data whole)."""


class ChunkChoice(TypedDict, total=False):
    """One choice's part of a chunk; `n > 1` interleaves several."""

    index: int
    delta: ChoiceDelta
    finish_reason: str | None
    """stop, tool_calls, length, content_filter, function_call; null until the end."""


class PromptTokensDetails(TypedDict, total=False):
    """Parts of `prompt_tokens`."""

    cached_tokens: int
    """Read from the (automatic) prompt cache; included in `prompt_tokens`."""


class CompletionTokensDetails(TypedDict, total=False):
    """Parts of `completion_tokens`."""

    reasoning_tokens: int


class CompletionUsage(TypedDict, total=False):
    """Token counts, in the usage chunk only."""

    prompt_tokens: int
    """All input tokens, cached ones included."""
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails | None
    completion_tokens_details: CompletionTokensDetails | None


class ErrorObject(TypedDict, total=False):
    """The `error` object of an error response or error data line."""

    message: str
    type: str | None
    code: str | None
    param: str | None


class ChatCompletionChunk(TypedDict, total=False):
    """One `data:` payload.

    The usage chunk has `choices: []`; with `include_usage` every other chunk
    carries `usage: null`.
    """

    id: str
    object: str
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: CompletionUsage | None
    error: ErrorObject
    """Present instead of the rest when the server fails mid-stream."""
