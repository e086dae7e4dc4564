"""Neutral `ChatRequest` -> Anthropic Messages request (pure).

The Messages API is stricter than the neutral model, so this is where the
conversation is reshaped:

- every system message is lifted into the top-level `system` string, joined
  with a blank line, in order (not only the last one);
- assistant turns replay thinking blocks first, those this route produced
  (`ThinkingPart.origin`) with their signatures (redacted ones as
  `redacted_thinking`; others are dropped, as Anthropic accepts), then text, then a refusal as text
  (the Messages API has no refusal field; the model should see what it
  said), then `tool_use` blocks whose `input` is the parsed arguments (`{}`
  when they are not a JSON object);
- tool results become `tool_result` blocks in a user turn; consecutive
  results, and a user message right after them, share ONE user turn, because
  roles must alternate. In a merged user turn the tool results come first, as
  the API requires;
- text that is empty or only whitespace is never sent as a text block (the
  API rejects it); a message left with no blocks is dropped and its
  neighbours merge;
- `max_tokens` is required: `DEFAULT_MAX_TOKENS` when the request sets none;
- prompt caching: an agent resends its whole history on every call, so the
  body marks `cache_control` breakpoints (the API caches the prefix up to each
  one, in the order tools, system, messages, and bills reads at a tenth):
  the last tool, the system prompt, and the last block of the last message,
  a breakpoint that moves forward as the history grows (the API finds the
  previous request's entry by looking back from it). Three, within the API's
  limit of four. Thinking blocks cannot carry one;
- a thinking conversation whose open tool loop cannot send its thinking back
  (another route wrote it after a failover, a fault cut its signature, an older
  session never kept it) asks for `thinking: {type: disabled}`. With thinking
  on, the API refuses every request whose last assistant turn, followed by tool
  results, does not start with a thinking block, so the session would be stuck
  for good; with thinking off it takes the history as it is and the loop closes
  (thinking comes back with the next user turn, where no such rule applies).
"""

from __future__ import annotations

from typing import Literal, assert_never

from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    ThinkingPart,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.gateway._origin import own_payload, route_origin
from navagent.gateway._types import DEFAULT_ROUTE_OPTIONS, RouteOptions, UpstreamRequest
from navagent.gateway._urls import api_url
from navagent.gateway.anthropic.wire import (
    CacheControl,
    ContentBlockParam,
    RequestBody,
    RequestMessage,
    ToolParam,
    ToolUseBlockParam,
)

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_MAX_TOKENS",
    "PROTOCOL",
    "build_messages",
    "build_request",
]

PROTOCOL = "anthropic_messages"

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
"""Sent when the request sets no `max_tokens`, which the Messages API requires."""


def build_request(
    request: ChatRequest,
    /,
    *,
    endpoint: str,
    model: str,
    api_key: str,
    options: RouteOptions = DEFAULT_ROUTE_OPTIONS,  # noqa: ARG001 - the protocol's shape
) -> UpstreamRequest:
    """Build `POST {endpoint}/v1/messages` for `request` (model from the route)."""
    origin = route_origin(PROTOCOL, endpoint, model, api_key)
    messages = build_messages(request.messages, origin=origin)
    _mark_last_block(messages)
    body: RequestBody = {
        "model": model,
        "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": messages,
        "stream": True,
    }
    system = "\n\n".join(
        message.content
        for message in request.messages
        if isinstance(message, SystemMessage) and message.content.strip()
    )
    if system:
        body["system"] = [{"type": "text", "text": system, "cache_control": _breakpoint()}]
    if request.tools:
        tools = [_tool(tool) for tool in request.tools]
        tools[-1]["cache_control"] = _breakpoint()
        body["tools"] = tools
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if _loop_lost_its_thinking(request.messages, messages):
        body["thinking"] = {"type": "disabled"}
    return UpstreamRequest(
        url=api_url(endpoint, "messages"),
        headers={
            "x-api-key": api_key,
            "anthropic-version": ANTHROPIC_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream",
        },
        body=dict(body),
    )


def build_messages(messages: tuple[Message, ...], *, origin: str) -> list[RequestMessage]:
    """Map the non-system messages to strictly alternating Anthropic turns.

    Thinking blocks go back only when `origin` (the route's) produced them.
    """
    turns: list[RequestMessage] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        role, blocks = _turn(message, origin)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] = _merge(turns[-1]["content"], blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _turn(
    message: UserMessage | AssistantMessage | ToolResultMessage, origin: str
) -> tuple[Literal["user", "assistant"], list[ContentBlockParam]]:
    match message:
        case UserMessage():
            return "user", _text_blocks(message.content)
        case AssistantMessage():
            blocks: list[ContentBlockParam] = [
                block for part in message.thinking if (block := _thinking(part, origin)) is not None
            ]
            blocks += _text_blocks(message.content)
            blocks += _text_blocks(message.refusal)
            blocks += [_tool_use(call) for call in message.tool_calls]
            return "assistant", blocks
        case ToolResultMessage():
            if message.content:
                return "user", [
                    {
                        "type": "tool_result",
                        "tool_use_id": message.tool_call_id,
                        "content": message.content,
                    }
                ]
            return "user", [{"type": "tool_result", "tool_use_id": message.tool_call_id}]
        case _:
            assert_never(message)


def _loop_lost_its_thinking(history: tuple[Message, ...], turns: list[RequestMessage]) -> bool:
    """True when the model thinks, a tool loop is open and its assistant turn cannot show it.

    Anthropic's rule, with thinking on: the last assistant turn, when tool results
    follow it, starts with a thinking block. The model thinks when any answer in
    the history carried thinking (the gateway never turns thinking on itself: the
    model or its deployment does); a conversation that never thought is left as it is.
    """
    if len(turns) < 2 or turns[-2]["role"] != "assistant":
        return False
    if not any(block["type"] == "tool_result" for block in turns[-1]["content"]):
        return False
    first = turns[-2]["content"][0]["type"] if turns[-2]["content"] else ""
    if first in ("thinking", "redacted_thinking"):
        return False
    return any(isinstance(message, AssistantMessage) and message.thinking for message in history)


def _mark_last_block(turns: list[RequestMessage]) -> None:
    """Put the moving breakpoint on the last block of the last turn that may carry one.

    Text, tool_use and tool_result blocks may; thinking blocks may not.
    """
    if not turns:
        return
    for block in reversed(turns[-1]["content"]):
        if block["type"] == "text" or block["type"] == "tool_use" or block["type"] == "tool_result":
            block["cache_control"] = _breakpoint()
            return


def _breakpoint() -> CacheControl:
    return {"type": "ephemeral"}


def _merge(
    earlier: list[ContentBlockParam], later: list[ContentBlockParam]
) -> list[ContentBlockParam]:
    """Join two same-role turns; tool results stay ahead of everything else."""
    blocks = earlier + later
    results = [block for block in blocks if block["type"] == "tool_result"]
    if not results:
        return blocks
    return results + [block for block in blocks if block["type"] != "tool_result"]


def _text_blocks(text: str) -> list[ContentBlockParam]:
    return [{"type": "text", "text": text}] if text.strip() else []


def _thinking(part: ThinkingPart, origin: str) -> ContentBlockParam | None:
    """Replay one reasoning block of this route; an unsigned one cannot be verified: dropped."""
    payload = own_payload(part, origin)
    if payload is None:
        return None
    redacted, signature = payload.get("redacted_data"), payload.get("signature")
    if type(redacted) is str and redacted:
        return {"type": "redacted_thinking", "data": redacted}
    if type(signature) is str and signature:
        return {"type": "thinking", "thinking": part.text, "signature": signature}
    return None


def _tool_use(call: ToolCall) -> ToolUseBlockParam:
    return {
        "type": "tool_use",
        "id": call.id,
        "name": call.name,
        "input": call.parsed_arguments() or {},
    }


def _tool(tool: Tool) -> ToolParam:
    param: ToolParam = {"name": tool.name, "input_schema": tool.parameters}
    if tool.description:
        param["description"] = tool.description
    return param
