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
    """A reasoning block, kept so it can be sent back on the next request.

    Anthropic requires the thinking blocks of the last assistant turn, with
    their signatures, to be replayed unchanged when tool results follow.
    OpenAI Responses reasoning items (`item_id`, `encrypted_content`) are sent
    back in their place, before the calls that followed them, so the model
    keeps its reasoning across a tool loop. Each protocol replays only the
    parts it produced itself (see `origin`); the others are dropped, which
    every provider accepts.
    """

    text: str = ""
    """The (possibly summarised) reasoning text; Responses summary parts joined by a blank line."""
    signature: str = ""
    """Opaque provider signature that authenticates `text`."""
    redacted_data: str = ""
    """Encrypted content of a redacted block; set instead of `text`."""
    item_id: str = ""
    """OpenAI Responses reasoning item id (`rs_...`)."""
    encrypted_content: str = ""
    """OpenAI Responses opaque reasoning state (`include: ["reasoning.encrypted_content"]`)."""
    summary: tuple[str, ...] = ()
    """OpenAI Responses summary parts, as received (`text` is them joined)."""
    origin: str = ""
    """Which route may read the opaque fields back: `<protocol>:<digest of endpoint and model>`.

    Set by the translator of the route that produced the part; a request
    builder replays an opaque part only to a route with the same origin, so a
    failover to another provider never sends it reasoning it cannot decrypt.
    """
    after_tool_calls: int = 0
    """How many of the message's tool calls came before this part (Responses
    output items interleave: reasoning, call, reasoning, call)."""


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
