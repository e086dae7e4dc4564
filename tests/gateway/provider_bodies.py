"""Small, realistic provider SSE bodies for gateway tests (built, not recorded).

The text streams are the formats' test kits' (`navagent.fixtures.provider.wire._kit`).
"""

from __future__ import annotations

import json
from typing import Any

from navagent.fixtures.provider.formats.openai.kit import openai_chunk
from navagent.fixtures.provider.formats.openai_responses.kit import responses_event
from navagent.fixtures.provider.wire._kit import kit_for, sse_event

__all__ = [
    "anthropic_error_body",
    "anthropic_error_event",
    "anthropic_text",
    "openai_chunk",
    "openai_error_body",
    "openai_text",
    "openai_tool_call",
    "responses_error_event",
    "responses_event",
    "responses_text",
    "sse",
]


def sse(data: Any, event: str | None = None) -> bytes:
    return sse_event(data, event)


def openai_text(*pieces: str, done: bool = True) -> list[bytes]:
    """The kit's Chat Completions text stream; `done=False` drops `[DONE]`."""
    events = kit_for("openai").text(pieces).events
    return events if done else events[:-1]


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
    """The kit's Messages text stream; `stop=False` drops `message_stop`."""
    events = kit_for("anthropic").text(pieces).events
    return events if stop else events[:-1]


def anthropic_error_event(kind: str = "overloaded_error", message: str = "Overloaded") -> bytes:
    return sse({"type": "error", "error": {"type": kind, "message": message}}, "error")


def openai_error_body(message: str, kind: str = "server_error") -> bytes:
    return json.dumps(
        {"error": {"message": message, "type": kind, "param": None, "code": None}}
    ).encode()


def anthropic_error_body(message: str, kind: str = "overloaded_error") -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


def responses_text(*pieces: str, done: bool = True) -> list[bytes]:
    """The kit's Responses text stream; `done=False` drops `response.completed`."""
    events = kit_for("openai-responses").text(pieces).events
    return events if done else events[:-1]


def responses_error_event(message: str = "The server is overloaded") -> bytes:
    return responses_event("error", code="server_error", message=message, param=None)
