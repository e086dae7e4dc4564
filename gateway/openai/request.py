"""Neutral `ChatRequest` -> OpenAI Chat Completions request (pure)."""

from __future__ import annotations

from typing import assert_never

from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    Tool,
    ToolResultMessage,
    UserMessage,
)
from navagent.gateway._types import UpstreamRequest
from navagent.gateway._urls import openai_style_request
from navagent.gateway.openai.wire import RequestBody, RequestMessage, ToolParam

__all__ = ["build_messages", "build_request"]


def build_request(
    request: ChatRequest, /, *, endpoint: str, model: str, api_key: str
) -> UpstreamRequest:
    """Build `POST {endpoint}/v1/chat/completions` for `request`.

    The model comes from the route, never from the caller. Streaming with
    `include_usage` is always requested so the final chunk carries token
    counts. Thinking parts are not sent: Chat Completions has no field for
    them and other providers' signatures mean nothing to OpenAI. A refusal
    goes back in the assistant message's own `refusal` field. Prompt caching
    needs nothing here: OpenAI caches long repeated prefixes by itself and
    reports them as `prompt_tokens_details.cached_tokens`.
    """
    body: RequestBody = {
        "model": model,
        "messages": build_messages(request.messages),
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


def build_messages(messages: tuple[Message, ...]) -> list[RequestMessage]:
    """Map neutral messages one to one onto Chat Completions messages."""
    return [_message(message) for message in messages]


def _message(message: Message) -> RequestMessage:
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
            return assistant
        case ToolResultMessage():
            return {
                "role": "tool",
                "tool_call_id": message.tool_call_id,
                "content": message.content,
            }
        case _:
            assert_never(message)


def _tool(tool: Tool) -> ToolParam:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }
