"""Neutral `ChatRequest` -> OpenAI Responses request (pure).

The history becomes `input` items:

- system messages are `developer` messages, in place (the Responses API's
  name for instructions; reasoning models read `system` as that too);
- user text is a `user` message; assistant text (and a refusal, which input
  messages have no part for) an `assistant` message;
- each tool call is a `function_call` item keyed by its `call_id`, each tool
  result a `function_call_output` with the same `call_id`;
- reasoning items this route produced (`ThinkingPart.origin` equals the
  route's; their `ReasoningPayload`) go back in their place: before the text,
  or before the call they preceded (`after_tool_calls`). A reasoning item must
  be followed by an item of its own turn, so one with nothing after it is
  dropped, as are parts from other routes or protocols and parts without
  encrypted content (with `store: false` the server keeps nothing, so an id
  alone is refused).

`store: false` always: the gateway is stateless. Reasoning models (o-series,
gpt-5 and later) also get `include: ["reasoning.encrypted_content"]` and
`reasoning.summary: auto`, and never `temperature`, which they reject; other
models get `temperature` and neither of the reasoning options, which they reject.
"""

from __future__ import annotations

from typing import assert_never

from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    ThinkingPart,
    Tool,
    ToolResultMessage,
    UserMessage,
)
from navagent.gateway._origin import own_payload, route_origin
from navagent.gateway._types import DEFAULT_ROUTE_OPTIONS, RouteOptions, UpstreamRequest
from navagent.gateway._urls import openai_style_request
from navagent.gateway.openai_responses.wire import (
    FunctionToolParam,
    InputItem,
    ReasoningItem,
    RequestBody,
)

__all__ = ["PROTOCOL", "build_input", "build_request", "is_reasoning_model"]

PROTOCOL = "openai_responses"
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5", "codex")


def is_reasoning_model(model: str) -> bool:
    """True for models that reason (and so reject `temperature`); gpt-5-chat does not."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return name.startswith(_REASONING_PREFIXES) and not name.startswith("gpt-5-chat")


def build_request(
    request: ChatRequest,
    /,
    *,
    endpoint: str,
    model: str,
    api_key: str,
    options: RouteOptions = DEFAULT_ROUTE_OPTIONS,  # noqa: ARG001 - the protocol's shape
) -> UpstreamRequest:
    """Build `POST {endpoint}/v1/responses` for `request` (model from the route)."""
    reasoning = is_reasoning_model(model)
    body: RequestBody = {
        "model": model,
        "input": build_input(
            request.messages, origin=route_origin(PROTOCOL, endpoint, model, api_key)
        ),
        "stream": True,
        "store": False,
    }
    if reasoning:
        body["include"] = ["reasoning.encrypted_content"]
        body["reasoning"] = {"summary": "auto"}
    if request.tools:
        body["tools"] = [_tool(tool) for tool in request.tools]
    if request.max_tokens is not None:
        body["max_output_tokens"] = request.max_tokens
    if request.temperature is not None and not reasoning:
        body["temperature"] = request.temperature
    return openai_style_request(endpoint, "responses", api_key=api_key, body=body)


def build_input(messages: tuple[Message, ...], *, origin: str) -> list[InputItem]:
    """Map the history to input items; reasoning is replayed only to `origin`."""
    items: list[InputItem] = []
    for message in messages:
        match message:
            case SystemMessage():
                items.append({"type": "message", "role": "developer", "content": message.content})
            case UserMessage():
                items.append({"type": "message", "role": "user", "content": message.content})
            case AssistantMessage():
                items += _assistant_items(message, origin)
            case ToolResultMessage():
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": message.tool_call_id,
                        "output": message.content,
                    }
                )
            case _:
                assert_never(message)
    return items


def _assistant_items(message: AssistantMessage, origin: str) -> list[InputItem]:
    calls = message.tool_calls
    reasoning: list[list[ReasoningItem]] = [[] for _ in range(len(calls) + 1)]
    for part in message.thinking:
        replay = _reasoning(part, origin)
        if replay is not None:
            item, after_tool_calls = replay
            reasoning[min(after_tool_calls, len(calls))].append(item)
    items: list[InputItem] = list(reasoning[0])
    # A refusal goes back as the assistant's text: input messages have no refusal part.
    text = "\n\n".join(part for part in (message.content, message.refusal) if part)
    if text:
        items.append({"type": "message", "role": "assistant", "content": text})
    for position, call in enumerate(calls):
        if position:
            items += reasoning[position]
        items.append(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            }
        )
    # Reasoning with nothing after it in its turn: the API refuses it.
    while items and items[-1]["type"] == "reasoning":
        items.pop()
    return items


def _reasoning(part: ThinkingPart, origin: str) -> tuple[ReasoningItem, int] | None:
    """The item to send back and how many calls precede it; None when not replayable.

    Only this route's parts with encrypted content qualify: with `store:
    false` an id alone is refused.
    """
    payload = own_payload(part, origin)
    if payload is None:
        return None
    item_id, encrypted = payload.get("item_id"), payload.get("encrypted_content")
    summary, after = payload.get("summary"), payload.get("after_tool_calls")
    if type(item_id) is not str or not item_id or type(encrypted) is not str or not encrypted:
        return None
    texts = [text for text in summary if type(text) is str] if type(summary) is list else []
    item: ReasoningItem = {
        "type": "reasoning",
        "id": item_id,
        "summary": [{"type": "summary_text", "text": text} for text in texts],
        "encrypted_content": encrypted,
    }
    return item, after if type(after) is int and after >= 0 else 0


def _tool(tool: Tool) -> FunctionToolParam:
    param: FunctionToolParam = {
        "type": "function",
        "name": tool.name,
        "parameters": tool.parameters,
        "strict": False,
    }
    if tool.description:
        param["description"] = tool.description
    return param
