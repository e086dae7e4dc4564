"""The provider-neutral conversation model.

Every layer speaks these types: the agent builds them, the gateway translates
them to and from provider wire formats, and `navagent.core.convert` maps them
to the `navigator.chat.v1` protobuf messages. They are frozen so a history can
be shared between the agent, the session store and a pending request without
copies going stale.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "AssistantMessage",
    "ChatRequest",
    "Message",
    "SystemMessage",
    "ThinkingPart",
    "Tool",
    "ToolCall",
    "ToolResultMessage",
    "UserMessage",
]

DEFAULT_ROUTING_HINT = "agent"


class FrozenModel(BaseModel):
    """Base for neutral types: immutable, and unknown fields are an error."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def _not_json(name: str) -> Any:
    """Refuse NaN and Infinity, which Python's json accepts and JSON does not."""
    raise ValueError(f"{name} is not JSON")


class ToolCall(FrozenModel):
    """One call the model asked for."""

    id: str
    """Provider-issued id; the matching tool result carries it back."""
    name: str
    """Tool name, as offered in the request."""
    arguments: str = "{}"
    """Arguments exactly as the model produced them: a JSON object string.

    Kept raw, not parsed, because a model can emit invalid JSON and the agent
    must be able to tell it so. Empty arguments mean the empty object.
    """

    @field_validator("arguments")
    @classmethod
    def _empty_means_empty_object(cls, arguments: str) -> str:
        return arguments or "{}"

    def parsed_arguments(self) -> dict[str, Any] | None:
        """Return the arguments as a dict, or None when they are not a JSON object."""
        try:
            value = (
                json.loads(self.arguments, parse_constant=_not_json)
                if self.arguments.strip()
                else {}
            )
        except (ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) else None


class ThinkingPart(FrozenModel):
    """A reasoning block: its text for people, and opaque state for the route that wrote it.

    Providers want reasoning back in their own shapes (Anthropic signed or
    redacted thinking blocks, OpenAI Responses encrypted reasoning items,
    OpenRouter `reasoning_details`, DeepSeek `reasoning_content`). The neutral
    model does not know them: whatever a provider needs back travels in
    `payload`, which only the request builder of the route named by `origin`
    reads. Every other route drops it, which every provider accepts, so a
    failover never sends reasoning where it cannot be read.
    """

    text: str = ""
    """The (possibly summarised) reasoning text, as shown to people."""
    origin: str = ""
    """The route that produced the part: `<protocol>:<digest of endpoint, model and key>`.

    Set by that route's stream translator; empty for parts whose origin is
    unknown (saved before origins existed), which no route reads back.
    """
    payload: str = ""
    """Opaque provider state for `origin` (JSON text whose shape belongs to that protocol)."""


class SystemMessage(FrozenModel):
    """Instructions for the model."""

    role: Literal["system"] = "system"
    content: str


class UserMessage(FrozenModel):
    """What the user typed."""

    role: Literal["user"] = "user"
    content: str


class AssistantMessage(FrozenModel):
    """A completed model turn: text, tool calls, or both."""

    role: Literal["assistant"] = "assistant"
    content: str = ""
    """Visible text; empty when the model only called tools."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Calls to run, in the order the model made them."""
    thinking: tuple[ThinkingPart, ...] = ()
    """Reasoning blocks in the order received; replayed before text and calls."""
    refusal: str = ""
    """The model's refusal, kept apart from `content` so it is never taken for an answer."""

    @property
    def is_empty(self) -> bool:
        """True for a completion with no text, no refusal and no tool calls."""
        return not self.content and not self.tool_calls and not self.refusal


class ToolResultMessage(FrozenModel):
    """The outcome of one tool call, sent back to the model."""

    role: Literal["tool"] = "tool"
    tool_call_id: str
    """Id of the `ToolCall` this answers."""
    content: str


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolResultMessage,
    Field(discriminator="role"),
]
"""Any conversation message, discriminated on `role`."""


class Tool(FrozenModel):
    """A function the model may call."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """JSON Schema of the arguments object."""


class ChatRequest(FrozenModel):
    """One completion request, as the gateway receives it."""

    messages: tuple[Message, ...]
    tools: tuple[Tool, ...] = ()
    routing_hint: str = DEFAULT_ROUTING_HINT
    """Selects the route; the empty hint is normalised to "agent"."""
    max_tokens: int | None = None
    """Upper bound on output tokens; providers that need one get a default."""
    temperature: float | None = None
