"""Conversion between the neutral model and `navigator.chat.v1` protobuf.

This is the only module that knows both shapes. Decoding validates: a message
that the neutral model cannot represent raises `InvalidMessageError` naming the
offending field, so the gateway can answer INVALID_ARGUMENT instead of sending
a provider something it will reject.
"""

from __future__ import annotations

import json
import math
from typing import Any, assert_never, cast, get_args

from pydantic import ValidationError

from navagent.core._proto import chat_pb2 as pb
from navagent.core.errors import InvalidMessageError
from navagent.core.events import (
    ChatError,
    ErrorCode,
    FinishReason,
    MessageComplete,
    RefusalDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallStart,
    TurnEnd,
    Usage,
)
from navagent.core.messages import (
    DEFAULT_ROUTING_HINT,
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

__all__ = [
    "event_from_proto",
    "error_to_proto",
    "event_to_fixed_proto",
    "event_to_proto",
    "message_from_proto",
    "message_to_proto",
    "request_from_proto",
    "request_to_proto",
]

_ERROR_CODES: dict[ErrorCode, pb.ErrorCode.ValueType] = {
    "rate_limited": pb.ERROR_CODE_RATE_LIMITED,
    "overloaded": pb.ERROR_CODE_OVERLOADED,
    "auth": pb.ERROR_CODE_AUTH,
    "invalid_request": pb.ERROR_CODE_INVALID_REQUEST,
    "upstream_unavailable": pb.ERROR_CODE_UPSTREAM_UNAVAILABLE,
    "timeout": pb.ERROR_CODE_TIMEOUT,
    "cancelled": pb.ERROR_CODE_CANCELLED,
    "internal": pb.ERROR_CODE_INTERNAL,
}
_ERROR_CODE_NAMES: dict[pb.ErrorCode.ValueType, ErrorCode] = {
    number: name for name, number in _ERROR_CODES.items()
}
_FINISH_REASONS: frozenset[str] = frozenset(get_args(FinishReason))


# --- messages --------------------------------------------------------------


def message_to_proto(message: Message) -> pb.ChatMessage:
    """Encode one neutral message."""
    match message:
        case SystemMessage() | UserMessage():
            return pb.ChatMessage(role=message.role, content=message.content)
        case AssistantMessage():
            return pb.ChatMessage(
                role="assistant",
                content=message.content,
                tool_calls=[
                    pb.ToolCall(id=call.id, name=call.name, arguments=call.arguments)
                    for call in message.tool_calls
                ],
                thinking=[
                    pb.ThinkingBlock(text=part.text, origin=part.origin, payload=part.payload)
                    for part in message.thinking
                ],
                refusal=message.refusal,
            )
        case ToolResultMessage():
            return pb.ChatMessage(
                role="tool", content=message.content, tool_call_id=message.tool_call_id
            )
        case _:
            assert_never(message)


def message_from_proto(message: pb.ChatMessage, *, where: str = "message") -> Message:
    """Decode one message; `where` prefixes error texts (e.g. "messages[3]")."""
    role = message.role.strip().lower()
    if role != "assistant" and (message.tool_calls or message.thinking):
        raise InvalidMessageError(f"{where}: only assistant messages may carry tool_calls")
    if role != "assistant" and message.refusal:
        raise InvalidMessageError(f"{where}: only assistant messages may carry a refusal")
    if role != "tool" and message.tool_call_id:
        raise InvalidMessageError(f"{where}: only tool messages may carry tool_call_id")
    if role == "system":
        return SystemMessage(content=message.content)
    if role == "user":
        return UserMessage(content=message.content)
    if role == "assistant":
        return AssistantMessage(
            content=message.content,
            tool_calls=tuple(
                _tool_call_from_proto(call, where=f"{where}.tool_calls[{i}]")
                for i, call in enumerate(message.tool_calls)
            ),
            thinking=tuple(
                ThinkingPart(text=block.text, origin=block.origin, payload=block.payload)
                for block in message.thinking
            ),
            refusal=message.refusal,
        )
    if role == "tool":
        if not message.tool_call_id:
            raise InvalidMessageError(f"{where}: a tool message needs tool_call_id")
        return ToolResultMessage(tool_call_id=message.tool_call_id, content=message.content)
    raise InvalidMessageError(
        f"{where}: unknown role {message.role!r}; expected system, user, assistant or tool"
    )


def _tool_call_from_proto(call: pb.ToolCall, *, where: str) -> ToolCall:
    if not call.id or not call.name:
        raise InvalidMessageError(f"{where}: a tool call needs an id and a name")
    # NaN or Infinity in arguments is only invalid JSON, which arguments may be
    # (kept raw for the agent to tell the model); an unpaired surrogate cannot
    # even be encoded for a provider.
    problem = _json_problem(call.arguments, constants_allowed=True)
    if problem:
        raise InvalidMessageError(f"{where} ({call.name}): arguments {problem}")
    return ToolCall(id=call.id, name=call.name, arguments=call.arguments)


class _NonFiniteError(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonFiniteError(name)


def _json_problem(text: str, *, constants_allowed: bool = False) -> str | None:
    """Why `text` is JSON no provider accepts (NaN, Infinity, lone surrogates), or None.

    Text that is not JSON at all is not a problem here: arguments are kept raw
    so the agent can tell the model, and schemas are checked separately. With
    `constants_allowed`, NaN and Infinity count as such non-JSON text.
    """
    try:
        value = json.loads(text, parse_constant=None if constants_allowed else _reject_constant)
    except _NonFiniteError as exc:
        return f"contain {exc.args[0]}, which JSON does not allow"
    except (ValueError, RecursionError):
        return None
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return "contain an unpaired UTF-16 surrogate escape (\\ud800-\\udfff)"
    except RecursionError:
        return "are nested too deeply"
    return None


# --- requests --------------------------------------------------------------


def request_to_proto(request: ChatRequest, *, extended_events: bool = True) -> pb.ChatStreamRequest:
    """Encode a request; `extended_events` opts in to the extension events."""
    encoded = pb.ChatStreamRequest(
        messages=[message_to_proto(message) for message in request.messages],
        tools=[
            pb.Tool(
                name=tool.name,
                description=tool.description,
                parameters_schema=json.dumps(tool.parameters, separators=(",", ":")),
            )
            for tool in request.tools
        ],
        routing_hint=request.routing_hint,
        extended_events=extended_events,
    )
    if request.max_tokens is not None:
        encoded.max_tokens = request.max_tokens
    if request.temperature is not None:
        encoded.temperature = request.temperature
    return encoded


def request_from_proto(request: pb.ChatStreamRequest) -> ChatRequest:
    """Decode and validate a request.

    Raises:
        InvalidMessageError: a message, tool or option breaks the contract.
    """
    if not request.messages:
        raise InvalidMessageError("messages: a request needs at least one message")
    try:
        return ChatRequest(
            messages=tuple(
                message_from_proto(message, where=f"messages[{i}]")
                for i, message in enumerate(request.messages)
            ),
            tools=tuple(
                _tool_from_proto(tool, where=f"tools[{i}]") for i, tool in enumerate(request.tools)
            ),
            routing_hint=_routing_hint_from_proto(request.routing_hint),
            max_tokens=_max_tokens_from_proto(request),
            temperature=_temperature_from_proto(request),
        )
    except ValidationError as exc:  # a contract check of the model itself
        first = exc.errors()[0]
        place = ".".join(str(part) for part in first["loc"]) or "request"
        raise InvalidMessageError(f"{place}: {first['msg']}") from None


MAX_ROUTING_HINT_CHARS = 256


def _routing_hint_from_proto(hint: str) -> str:
    hint = hint.strip()
    if len(hint) > MAX_ROUTING_HINT_CHARS:
        raise InvalidMessageError(
            f"routing_hint: {len(hint)} characters, more than the {MAX_ROUTING_HINT_CHARS} allowed"
        )
    if not hint.isprintable():
        raise InvalidMessageError("routing_hint: must not contain control characters")
    return hint or DEFAULT_ROUTING_HINT


def _temperature_from_proto(request: pb.ChatStreamRequest) -> float | None:
    if not request.HasField("temperature"):
        return None
    value = request.temperature
    if not math.isfinite(value) or not 0 <= value <= 2:
        raise InvalidMessageError(f"temperature: must be a number from 0 to 2, got {value}")
    return value


def _max_tokens_from_proto(request: pb.ChatStreamRequest) -> int | None:
    if not request.HasField("max_tokens"):
        return None
    if request.max_tokens == 0:
        raise InvalidMessageError("max_tokens: must be at least 1 when set")
    return request.max_tokens


def _tool_from_proto(tool: pb.Tool, *, where: str) -> Tool:
    if not tool.name:
        raise InvalidMessageError(f"{where}: a tool needs a name")
    schema: Any = {"type": "object"}
    if tool.parameters_schema.strip():
        problem = _json_problem(tool.parameters_schema)
        if problem:
            raise InvalidMessageError(f"{where} ({tool.name}): parameters_schema: values {problem}")
        try:
            schema = json.loads(tool.parameters_schema)
        except (ValueError, RecursionError) as exc:
            raise InvalidMessageError(
                f"{where} ({tool.name}): parameters_schema is not valid JSON: {exc}"
            ) from None
        if not isinstance(schema, dict):
            raise InvalidMessageError(
                f"{where} ({tool.name}): parameters_schema must be a JSON object"
            )
    return Tool(name=tool.name, description=tool.description, parameters=schema)


# --- events ----------------------------------------------------------------


def event_to_proto(event: StreamEvent) -> pb.ChatStreamEvent:
    """Encode one stream event."""
    match event:
        case TextDelta():
            return pb.ChatStreamEvent(content_delta=pb.ContentDelta(text=event.text))
        case ThinkingDelta():
            return pb.ChatStreamEvent(thinking_delta=pb.ThinkingDelta(text=event.text))
        case RefusalDelta():
            return pb.ChatStreamEvent(refusal_delta=pb.RefusalDelta(text=event.text))
        case ToolCallStart():
            return pb.ChatStreamEvent(
                tool_call_start=pb.ToolCallStart(index=event.index, id=event.id, name=event.name)
            )
        case TurnEnd():
            return pb.ChatStreamEvent(
                turn_end=pb.TurnEnd(
                    finish_reason=event.finish_reason,
                    provider_finish_reason=event.provider_finish_reason,
                    usage=pb.Usage(
                        input_tokens=event.usage.input_tokens,
                        cache_read_tokens=event.usage.cache_read_tokens,
                        cache_write_tokens=event.usage.cache_write_tokens,
                        output_tokens=event.usage.output_tokens,
                        reasoning_tokens=event.usage.reasoning_tokens,
                    ),
                )
            )
        case MessageComplete():
            return pb.ChatStreamEvent(message=message_to_proto(event.message))
        case StreamError():
            return pb.ChatStreamEvent(error=error_to_proto(event.error))
        case _:
            assert_never(event)


def event_to_fixed_proto(event: StreamEvent) -> pb.ChatStreamEvent | None:
    """Encode for a client built from the fixed schema; None for what it cannot read.

    Such a client knows only content deltas, the final message and errors, so a
    refusal reaches it as plain text (a content delta, and appended to the final
    message's content), and the other extension events are dropped.
    """
    match event:
        case TextDelta() | MessageComplete() | StreamError():
            if isinstance(event, MessageComplete) and event.message.refusal:
                message = event.message
                plain = message.model_copy(
                    update={"content": message.content + message.refusal, "refusal": ""}
                )
                return event_to_proto(MessageComplete(message=plain))
            return event_to_proto(event)
        case RefusalDelta():
            return pb.ChatStreamEvent(content_delta=pb.ContentDelta(text=event.text))
        case ThinkingDelta() | ToolCallStart() | TurnEnd():
            return None
        case _:
            assert_never(event)


def error_to_proto(error: ChatError) -> pb.ChatError:
    """Encode an error; a missing status code is 0 on the wire."""
    return pb.ChatError(
        message=error.message,
        status_code=error.status_code or 0,
        code=_ERROR_CODES[error.code],
        retryable=error.retryable,
    )


def event_from_proto(event: pb.ChatStreamEvent) -> StreamEvent | None:
    """Decode one stream event; None for an event this version does not know.

    A newer gateway may send extension events we have no field for; they
    arrive with no oneof set and are skipped rather than treated as an error.
    """
    kind = event.WhichOneof("event")
    if kind == "content_delta":
        return TextDelta(text=event.content_delta.text)
    if kind == "thinking_delta":
        return ThinkingDelta(text=event.thinking_delta.text)
    if kind == "refusal_delta":
        return RefusalDelta(text=event.refusal_delta.text)
    if kind == "tool_call_start":
        start = event.tool_call_start
        return ToolCallStart(index=start.index, id=start.id, name=start.name)
    if kind == "turn_end":
        end = event.turn_end
        reason = end.finish_reason if end.finish_reason in _FINISH_REASONS else "other"
        return TurnEnd(
            finish_reason=cast(FinishReason, reason),
            provider_finish_reason=end.provider_finish_reason,
            usage=Usage(
                input_tokens=end.usage.input_tokens,
                cache_read_tokens=end.usage.cache_read_tokens,
                cache_write_tokens=end.usage.cache_write_tokens,
                output_tokens=end.usage.output_tokens,
                reasoning_tokens=end.usage.reasoning_tokens,
            ),
        )
    if kind == "message":
        message = message_from_proto(event.message)
        if not isinstance(message, AssistantMessage):
            raise InvalidMessageError(f"message: final message has role {message.role!r}")
        return MessageComplete(message=message)
    if kind == "error":
        error = event.error
        return StreamError(
            error=ChatError(
                message=error.message,
                status_code=error.status_code or None,
                # A gateway that predates error codes sends UNSPECIFIED.
                code=_ERROR_CODE_NAMES.get(error.code, "internal"),
                retryable=error.retryable,
            )
        )
    return None
