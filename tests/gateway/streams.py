"""Helpers for the translator tests: bytes through decoder + translator, contract checks."""

from __future__ import annotations

import random
from pathlib import Path

from navagent.core.events import (
    MessageComplete,
    RefusalDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallStart,
    TurnEnd,
    is_terminal,
)
from navagent.core.wire_formats import wire_format
from navagent.gateway._types import DEFAULT_ROUTE_OPTIONS, RouteOptions
from navagent.gateway.protocols import PROTOCOLS
from navagent.gateway.sse import SSEDecoder

ROOT = Path(__file__).resolve().parents[2]
TRANSCRIPTS = ROOT / "fixtures" / "sse"
FAKE_KEY = "sk-test-FAKE-0000-not-a-real-key"


def transcript(provider: str, name: str) -> bytes:
    """The bytes of fixtures/sse/<provider>/<name>.sse, exactly as stored."""
    return (TRANSCRIPTS / provider / f"{name}.sse").read_bytes()


def random_chunks(body: bytes, *, seed: int, max_size: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    chunks, i = [], 0
    while i < len(body):
        size = rng.randint(1, max_size)
        chunks.append(body[i : i + size])
        i += size
    return chunks


def translate(
    provider: str,
    chunks: list[bytes] | bytes,
    *,
    origin: str = "",
    options: RouteOptions = DEFAULT_ROUTE_OPTIONS,
) -> list[StreamEvent]:
    """Decode and translate a body the way the gateway will, and check the stream contract."""
    if isinstance(chunks, bytes):
        chunks = [chunks]
    decoder = SSEDecoder()
    protocol = PROTOCOLS[wire_format(provider).protocol]
    translator = protocol.new_translator(origin=origin, options=options)
    events: list[StreamEvent] = []
    for chunk in chunks:
        for sse in decoder.feed(chunk):
            events += translator.handle(sse)
    for sse in decoder.finish():
        events += translator.handle(sse)
    events += translator.finish()
    assert translator.done
    assert translator.finish() == []
    check_contract(events)
    return events


def check_contract(events: list[StreamEvent]) -> None:
    """Deltas, then TurnEnd + MessageComplete, or a StreamError; deltas fold into the message."""
    terminals = [i for i, event in enumerate(events) if is_terminal(event)]
    assert terminals == [len(events) - 1], events
    turn_ends = [i for i, event in enumerate(events) if isinstance(event, TurnEnd)]
    final = events[-1]
    if not isinstance(final, MessageComplete):
        assert turn_ends == []
        return
    assert turn_ends == [len(events) - 2]
    message = final.message
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == message.content
    assert "".join(e.text for e in events if isinstance(e, RefusalDelta)) == message.refusal
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "".join(
        part.text for part in message.thinking
    )
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert sorted(s.index for s in starts) == list(range(len(message.tool_calls)))
    for start in starts:
        call = message.tool_calls[start.index]
        assert (start.id, start.name) == (call.id, call.name)


def final_message(events: list[StreamEvent]) -> MessageComplete:
    assert isinstance(events[-1], MessageComplete), events[-1]
    return events[-1]


def turn_end(events: list[StreamEvent]) -> TurnEnd:
    assert isinstance(events[-2], TurnEnd), events
    return events[-2]


def stream_error(events: list[StreamEvent]) -> StreamError:
    assert isinstance(events[-1], StreamError), events[-1]
    return events[-1]
