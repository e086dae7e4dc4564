"""Neutral `ChatRequest` -> Gemini `streamGenerateContent` request (pure).

- The model goes in the URL (`/v1beta/models/{model}:streamGenerateContent`)
  and streaming is asked for with `?alt=sse` (the registry row's `path` and
  `stream_query`); the key travels in `x-goog-api-key`, never in the URL.
- System messages, joined with a blank line, become `systemInstruction`.
- Turns are `user` and `model`; tool results are `functionResponse` parts in
  a user turn, and neighbouring turns of one role merge into one (the API
  wants a model turn's calls answered by one user turn, in order).
- Calls go back as `functionCall` parts with their parsed `args`, without
  `id`: the Gemini API pairs results with calls by name and order and sends
  no ids of its own, so ours (derived) would mean nothing to it.
- A `functionResponse` needs the function's name: it is taken from the call
  the result answers; its text goes under `response.result`.
- Thought signatures of this route's parts (`ThinkingPart.origin`) go back
  on the part that carried them (`thoughtSignature`): on the call with the
  same id, on the text, or on a `thought: true` part with the thinking text.
  Other routes' reasoning is dropped, as Gemini accepts a history without it.
- Tools are one `functionDeclarations` entry, with `parametersJsonSchema`
  (full JSON Schema, as pydantic writes it).
- `thinkingConfig.includeThoughts` asks thinking models (2.5 and later) for
  thought summaries; 1.x and 2.0 models refuse any thinking config, so they
  get none.
"""

from __future__ import annotations

from typing import Literal, assert_never

from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)
from navagent.core.wire_formats import wire_format
from navagent.gateway._origin import own_payload, route_origin
from navagent.gateway._types import DEFAULT_ROUTE_OPTIONS, RouteOptions, UpstreamRequest
from navagent.gateway._urls import api_url
from navagent.gateway.gemini.wire import (
    Content,
    FunctionDeclaration,
    GenerationConfig,
    Part,
    RequestBody,
)

__all__ = ["PROTOCOL", "build_contents", "build_request"]

_ROW = wire_format("gemini")
PROTOCOL = _ROW.protocol
_NOT_THINKING = ("gemini-1", "gemini-2.0")
"""Model names that do not think: a thinking config is an error for them."""


def build_request(
    request: ChatRequest,
    /,
    *,
    endpoint: str,
    model: str,
    api_key: str,
    options: RouteOptions = DEFAULT_ROUTE_OPTIONS,  # noqa: ARG001 - the protocol's shape
) -> UpstreamRequest:
    """Build `POST {endpoint}/v1beta/models/{model}:streamGenerateContent?alt=sse`."""
    origin = route_origin(PROTOCOL, endpoint, model, api_key)
    body: RequestBody = {"contents": build_contents(request.messages, origin=origin)}
    system = "\n\n".join(
        message.content
        for message in request.messages
        if isinstance(message, SystemMessage) and message.content.strip()
    )
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    if request.tools:
        declarations: list[FunctionDeclaration] = []
        for tool in request.tools:
            declaration: FunctionDeclaration = {
                "name": tool.name,
                "parametersJsonSchema": tool.parameters,
            }
            if tool.description:
                declaration["description"] = tool.description
            declarations.append(declaration)
        body["tools"] = [{"functionDeclarations": declarations}]
    name = model.strip().removeprefix("models/")
    config: GenerationConfig = {}
    if not name.startswith(_NOT_THINKING):
        config["thinkingConfig"] = {"includeThoughts": True}
    if request.max_tokens:
        config["maxOutputTokens"] = request.max_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if config:
        body["generationConfig"] = config
    return UpstreamRequest(
        url=api_url(endpoint, _ROW.request_path(name), query=_ROW.stream_query),
        headers={
            _ROW.auth_header: api_key,
            "content-type": "application/json",
            "accept": "text/event-stream",
        },
        body=dict(body),
    )


def build_contents(messages: tuple[Message, ...], *, origin: str) -> list[Content]:
    """Map the non-system messages to Gemini turns; same-role neighbours merge."""
    names = {
        call.id: call.name
        for message in messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls
    }
    turns: list[Content] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        role, parts = _turn(message, origin, names)
        if not parts:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["parts"] = _merge(turns[-1]["parts"], parts)
        else:
            turns.append({"role": role, "parts": parts})
    return turns


def _turn(
    message: UserMessage | AssistantMessage | ToolResultMessage,
    origin: str,
    names: dict[str, str],
) -> tuple[Literal["user", "model"], list[Part]]:
    match message:
        case UserMessage():
            return "user", [{"text": message.content}] if message.content.strip() else []
        case AssistantMessage():
            return "model", _model_parts(message, origin)
        case ToolResultMessage():
            name = names.get(message.tool_call_id, message.tool_call_id)
            return "user", [
                {"functionResponse": {"name": name, "response": {"result": message.content}}}
            ]
        case _:
            assert_never(message)


def _model_parts(message: AssistantMessage, origin: str) -> list[Part]:
    """Thought (signed), text, refusal, then calls; each signature on the part it came with."""
    signed: dict[tuple[str, str], str] = {}
    thought_text = ""
    for thinking in message.thinking:
        payload = own_payload(thinking, origin)
        entries = payload.get("signatures") if payload else None
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("signature"), str):
                key = (str(entry.get("on", "")), str(entry.get("call_id", "")))
                signed.setdefault(key, entry["signature"])
        if payload and ("thought", "") in signed and not thought_text:
            thought_text = thinking.text
    parts: list[Part] = []
    if ("thought", "") in signed:
        parts.append(
            {"text": thought_text, "thought": True, "thoughtSignature": signed["thought", ""]}
        )
    text = message.content + (f"\n\n{message.refusal}" if message.refusal.strip() else "")
    if text.strip() or ("text", "") in signed:
        part: Part = {"text": text}
        if ("text", "") in signed:
            part["thoughtSignature"] = signed["text", ""]
        parts.append(part)
    for call in message.tool_calls:
        call_part: Part = {
            "functionCall": {"name": call.name, "args": call.parsed_arguments() or {}}
        }
        if ("call", call.id) in signed:
            call_part["thoughtSignature"] = signed["call", call.id]
        parts.append(call_part)
    return parts


def _merge(earlier: list[Part], later: list[Part]) -> list[Part]:
    """Join two same-role turns; function responses stay ahead of text, as calls were answered."""
    parts = earlier + later
    responses = [part for part in parts if "functionResponse" in part]
    if not responses:
        return parts
    return responses + [part for part in parts if "functionResponse" not in part]
