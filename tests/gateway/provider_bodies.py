"""Small, realistic provider SSE bodies for gateway tests (built, not recorded)."""

from __future__ import annotations

import json
from typing import Any


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


def openai_chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    return sse(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
    )


def openai_text(*pieces: str, done: bool = True) -> list[bytes]:
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": piece}) for piece in pieces]
    chunks.append(openai_chunk({}, "stop"))
    chunks.append(
        sse(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "gpt-test",
                "choices": [],
                "usage": {"prompt_tokens": 11, "completion_tokens": len(pieces), "total_tokens": 0},
            }
        )
    )
    if done:
        chunks.append(sse("[DONE]"))
    return chunks


def openai_tool_call(call_id: str, name: str, *argument_pieces: str) -> list[bytes]:
    first = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }
    chunks = [openai_chunk({"role": "assistant", "content": None, "tool_calls": [first]})]
    chunks += [
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        for piece in argument_pieces
    ]
    chunks.append(openai_chunk({}, "tool_calls"))
    chunks.append(sse("[DONE]"))
    return chunks


def anthropic_text(*pieces: str, stop: bool = True) -> list[bytes]:
    chunks = [
        sse(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_test",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-test",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 21, "output_tokens": 1},
                },
            },
            "message_start",
        ),
        sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        ),
        sse({"type": "ping"}, "ping"),
    ]
    chunks += [
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": piece},
            },
            "content_block_delta",
        )
        for piece in pieces
    ]
    chunks.append(sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    chunks.append(
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": len(pieces)},
            },
            "message_delta",
        )
    )
    if stop:
        chunks.append(sse({"type": "message_stop"}, "message_stop"))
    return chunks


def anthropic_error_event(kind: str = "overloaded_error", message: str = "Overloaded") -> bytes:
    return sse({"type": "error", "error": {"type": kind, "message": message}}, "error")


def openai_error_body(message: str, kind: str = "server_error") -> bytes:
    return json.dumps(
        {"error": {"message": message, "type": kind, "param": None, "code": None}}
    ).encode()


def anthropic_error_body(message: str, kind: str = "overloaded_error") -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


def responses_event(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, kind)


def responses_text(*pieces: str, done: bool = True) -> list[bytes]:
    """An OpenAI Responses stream of one message; `done=False` drops `response.completed`."""
    response = {"id": "resp_test", "object": "response", "status": "in_progress", "output": []}
    item = {"id": "msg_test", "type": "message", "role": "assistant", "status": "in_progress"}
    chunks = [
        responses_event("response.created", response=response),
        responses_event("response.output_item.added", output_index=0, item={**item, "content": []}),
        responses_event(
            "response.content_part.added",
            item_id="msg_test",
            output_index=0,
            content_index=0,
            part={"type": "output_text", "text": "", "annotations": []},
        ),
    ]
    chunks += [
        responses_event(
            "response.output_text.delta",
            item_id="msg_test",
            output_index=0,
            content_index=0,
            delta=piece,
        )
        for piece in pieces
    ]
    text = "".join(pieces)
    part = {"type": "output_text", "text": text, "annotations": []}
    chunks.append(
        responses_event(
            "response.output_text.done",
            item_id="msg_test",
            output_index=0,
            content_index=0,
            text=text,
        )
    )
    chunks.append(
        responses_event(
            "response.output_item.done",
            output_index=0,
            item={**item, "status": "completed", "content": [part]},
        )
    )
    if done:
        usage = {"input_tokens": 11, "output_tokens": len(pieces), "total_tokens": 0}
        final = {
            **response,
            "status": "completed",
            "output": [{**item, "status": "completed", "content": [part]}],
            "usage": usage,
        }
        chunks.append(responses_event("response.completed", response=final))
    return chunks


def responses_error_event(message: str = "The server is overloaded") -> bytes:
    return responses_event("error", code="server_error", message=message, param=None)
