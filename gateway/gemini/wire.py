"""Google Gemini wire shapes (https://ai.google.dev/api/generate-content).

TypedDicts, as for the other providers: they document the shapes and type
the request builder; the translator reads events defensively. Field names
are the REST API's camelCase ones.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "Content",
    "FunctionCall",
    "FunctionDeclaration",
    "FunctionResponse",
    "GenerationConfig",
    "Part",
    "RequestBody",
    "SignedPart",
    "SystemInstruction",
    "ThinkingConfig",
    "ThinkingPayload",
    "ToolParam",
    "UsageMetadata",
]


class FunctionCall(TypedDict):
    """A whole function call: Gemini never streams arguments in pieces."""

    name: str
    args: dict[str, Any]
    id: NotRequired[str]


class FunctionResponse(TypedDict):
    """A tool's output; `response` must be an object, so the text goes under `result`."""

    name: str
    response: dict[str, Any]
    id: NotRequired[str]


class Part(TypedDict, total=False):
    """One part of a turn: text (`thought` marks reasoning), a call or a call's result.

    `thoughtSignature` (base64) may sit on any part the model wrote; it goes
    back on the same part of the next request.
    """

    text: str
    thought: bool
    thoughtSignature: str
    functionCall: FunctionCall
    functionResponse: FunctionResponse


class Content(TypedDict):
    """One turn; `role` is `user` or `model` (the system prompt has no role)."""

    role: Literal["user", "model"]
    parts: list[Part]


class FunctionDeclaration(TypedDict):
    """A tool; `parametersJsonSchema` is full JSON Schema (`parameters`: OpenAPI's subset)."""

    name: str
    description: NotRequired[str]
    parametersJsonSchema: dict[str, Any]


class ToolParam(TypedDict):
    """The request's one tool entry holding every declaration."""

    functionDeclarations: list[FunctionDeclaration]


class ThinkingConfig(TypedDict):
    """`includeThoughts`: stream thought summaries as `thought: true` parts."""

    includeThoughts: bool


class GenerationConfig(TypedDict, total=False):
    """Sampling and output options."""

    maxOutputTokens: int
    temperature: float
    thinkingConfig: ThinkingConfig


class SystemInstruction(TypedDict):
    """The system prompt: parts without a role."""

    parts: list[Part]


class RequestBody(TypedDict):
    """The `streamGenerateContent` body; the model is in the URL, not here."""

    contents: list[Content]
    systemInstruction: NotRequired[SystemInstruction]
    tools: NotRequired[list[ToolParam]]
    generationConfig: NotRequired[GenerationConfig]


class UsageMetadata(TypedDict, total=False):
    """Token counts, cumulative.

    `promptTokenCount` includes `cachedContentTokenCount`, and
    `candidatesTokenCount` excludes `thoughtsTokenCount`.
    """

    promptTokenCount: int
    cachedContentTokenCount: int
    candidatesTokenCount: int
    thoughtsTokenCount: int
    toolUsePromptTokenCount: int
    totalTokenCount: int


class SignedPart(TypedDict, total=False):
    """Where one `thoughtSignature` came: on `text`, a `thought`, or the `call` with `call_id`."""

    on: Literal["text", "thought", "call"]
    call_id: str
    signature: str


class ThinkingPayload(TypedDict):
    """What a Gemini response leaves in `ThinkingPart.payload`: its signatures, in order."""

    signatures: list[SignedPart]
