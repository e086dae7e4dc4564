"""Neutral `ChatRequest` -> OpenAI Chat Completions request (pure).

Reasoning goes back on assistant messages only where the route's server wants
it, in the shape the route's `reasoning_echo` option names, and only the
reasoning this route produced (`ThinkingPart.origin`):

- `reasoning_details` (the default): OpenRouter's `reasoning_details` items,
  unchanged (encrypted reasoning, Gemini thought signatures and Claude
  signatures must come back for the next call to keep its reasoning, or to
  be accepted at all). Only servers that streamed such items get any back.
- `reasoning_content`: the reasoning text as `reasoning_content` (DeepSeek's
  thinking mode, which answers 400 "Missing `reasoning_content` field in the
  assistant message" when an assistant message that made tool calls lacks
  it; so such a message always carries the field, empty when its reasoning
  came from another route). Plus the `reasoning_details`, if any.
- `none`: nothing (DeepSeek's older `deepseek-reasoner`, which answers 400
  when `reasoning_content` is sent back).

Other providers' reasoning is never sent: their signatures mean nothing here.
"""

from __future__ import annotations

from typing import Any, assert_never

from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    Tool,
    ToolResultMessage,
    UserMessage,
)
from navagent.gateway._origin import own_payload, route_origin
from navagent.gateway._types import (
    DEFAULT_ROUTE_OPTIONS,
    ReasoningEcho,
    RouteOptions,
    UpstreamRequest,
)
from navagent.gateway._urls import openai_style_request
from navagent.gateway.openai.wire import RequestBody, RequestMessage, ToolParam

__all__ = ["PROTOCOL", "build_messages", "build_request"]

PROTOCOL = "openai_chat_completions"


def build_request(
    request: ChatRequest,
    /,
    *,
    endpoint: str,
    model: str,
    api_key: str,
    options: RouteOptions = DEFAULT_ROUTE_OPTIONS,
) -> UpstreamRequest:
    """Build `POST {endpoint}/v1/chat/completions` for `request`.

    The model comes from the route, never from the caller. Streaming with
    `include_usage` is always requested so the final chunk carries token
    counts. Reasoning goes back as `options.reasoning_echo` says (module
    docstring). A refusal
    goes back in the assistant message's own `refusal` field. Prompt caching
    needs nothing here: OpenAI caches long repeated prefixes by itself and
    reports them as `prompt_tokens_details.cached_tokens`.
    """
    body: RequestBody = {
        "model": model,
        "messages": build_messages(
            request.messages,
            origin=route_origin(PROTOCOL, endpoint, model, api_key),
            echo=options.reasoning_echo,
        ),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [_tool(tool) for tool in request.tools]
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return openai_style_request(endpoint, "chat/completions", api_key=api_key, body=body)


def build_messages(
    messages: tuple[Message, ...], *, origin: str = "", echo: ReasoningEcho = "none"
) -> list[RequestMessage]:
    """Map neutral messages one to one onto Chat Completions messages.

    `origin` is the route's: only its own reasoning goes back, as `echo` says.
    """
    return [_message(message, origin, echo) for message in messages]


def _message(message: Message, origin: str, echo: ReasoningEcho) -> RequestMessage:
    match message:
        case SystemMessage() | UserMessage():
            return {"role": message.role, "content": message.content}
        case AssistantMessage():
            assistant: RequestMessage = {"role": "assistant", "content": message.content}
            if message.tool_calls:
                # OpenAI's own shape for a pure tool-call turn is null content.
                assistant["content"] = message.content or None
                assistant["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in message.tool_calls
                ]
            if message.refusal:
                assistant["refusal"] = message.refusal
            if echo != "none":
                _echo_reasoning(assistant, message, origin, echo)
            return assistant
        case ToolResultMessage():
            return {
                "role": "tool",
                "tool_call_id": message.tool_call_id,
                "content": message.content,
            }
        case _:
            assert_never(message)


def _echo_reasoning(
    assistant: RequestMessage, message: AssistantMessage, origin: str, echo: ReasoningEcho
) -> None:
    """Add this route's own reasoning to `assistant` in the shape `echo` names."""
    own = [part for part in message.thinking if part.origin == origin]
    if echo == "reasoning_content":
        text = "".join(part.text for part in own)
        if text or message.tool_calls:
            assistant["reasoning_content"] = text
    details: list[dict[str, Any]] = []
    for part in own:
        payload = own_payload(part, origin)
        items = payload.get("reasoning_details") if payload is not None else None
        if type(items) is list:
            details += [item for item in items if type(item) is dict]
    if details:
        assistant["reasoning_details"] = details


def _tool(tool: Tool) -> ToolParam:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }
