"""The first content of a stream leaves before the rest of its read is translated.

A fast provider (or a buffering proxy) delivers a burst of events in one read
after a pause. Translating and merging the whole read before sending
anything would make time to first delta grow with the size of the read; the
gateway sends the first content alone and merges the rest behind it. Each
format's burst is the simulator's own stream for that format, so every
registered format is covered by this one test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from navagent.core.events import MessageComplete, StreamEvent, TextDelta
from navagent.core.messages import ChatRequest, UserMessage
from navagent.core.wire_formats import FORMAT_IDS, wire_format
from navagent.fixtures.provider.wire._format import ParsedBody, plugin_for
from navagent.fixtures.provider.wire._ids import IdSource
from navagent.fixtures.provider.wire._script import Script
from navagent.gateway import upstream as upstream_module
from navagent.gateway.protocols import PROTOCOLS
from navagent.gateway.routes import Route, parse_routes
from navagent.gateway.upstream import Upstream

TOKENS = tuple(f" tok{i}" for i in range(200))
REQUEST = ChatRequest(messages=(UserMessage(content="go"),))


def burst_route(protocol: str) -> Route:
    (route,) = parse_routes(
        {
            "routes": [
                {
                    "name": "burst",
                    "routing_hint": "agent",
                    "endpoint": "http://burst.provider.test/v1",
                    "model": "m",
                    "protocols": [protocol],
                    "api_key": "sk-test-burst-0123456789",
                }
            ]
        },
        source="test",
    ).routes
    return route


def burst(format_id: str) -> list[bytes]:
    """The simulator's stream of a 200-token answer in `format_id`, event by event."""
    encoded = plugin_for(format_id).encode(
        Script(text=TOKENS, input_tokens=9, output_tokens=len(TOKENS)),
        ParsedBody(
            model=wire_format(format_id).default_model,
            messages=(),
            tools=(),
            stream=True,
            max_tokens=None,
            include_usage=True,
        ),
        response_id="resp-burst",
        ids=IdSource("burst", 1),
        created=1,
    )
    return list(encoded.frames)


class Buffered(httpx.AsyncByteStream):
    """A body whose reads are all there at once (no read waits for the network)."""

    def __init__(self, reads: list[bytes]) -> None:
        self._reads = reads

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for read in self._reads:
            yield read


class CountingTranslator:
    """A protocol's translator that counts the provider events it was handed."""

    def __init__(self, inner: Any, counts: list[int]) -> None:
        self._inner = inner
        self._counts = counts

    def handle(self, sse: Any) -> list[StreamEvent]:
        self._counts[0] += 1
        events: list[StreamEvent] = self._inner.handle(sse)
        return events

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.mark.parametrize("preamble_apart", [False, True], ids=["one-read", "preamble-apart"])
@pytest.mark.parametrize("format_id", FORMAT_IDS)
async def test_a_bursts_first_delta_leaves_before_the_rest_of_the_read_is_translated(
    format_id: str, preamble_apart: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = wire_format(format_id)
    handled = [0]
    protocol = PROTOCOLS[row.protocol]
    counting = dataclasses.replace(
        protocol,
        new_translator=lambda **kw: CountingTranslator(protocol.new_translator(**kw), handled),
    )
    monkeypatch.setattr(upstream_module, "PROTOCOLS", {row.protocol: counting})
    events = burst(format_id)
    # In one read, or the stream's opening event first and the burst behind it
    # (taken from what is already buffered, not read from the network).
    reads = [events[0], b"".join(events[1:])] if preamble_apart else [b"".join(events)]
    transport = httpx.MockTransport(
        lambda request: httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=Buffered(reads)
        )
    )
    async with httpx.AsyncClient(transport=transport) as client:
        batches = Upstream(client).stream(burst_route(row.protocol), REQUEST)
        first = await anext(batches)
        handled_before_first_delta = handled[0]
        rest = [event async for batch in batches for event in batch]

    assert [e.text for e in first if isinstance(e, TextDelta)] == [TOKENS[0]]
    # Only the events up to the first token were translated when it left:
    # not the other 199 tokens and the end of the stream, all in the same read.
    assert handled_before_first_delta < 10
    assert handled[0] > len(TOKENS)
    # The rest of the read went out merged, and the answer is whole.
    assert [e.text for e in rest if isinstance(e, TextDelta)] == ["".join(TOKENS[1:])]
    final = rest[-1]
    assert isinstance(final, MessageComplete) and final.message.content == "".join(TOKENS)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    format_id=st.sampled_from(FORMAT_IDS),
    line_end=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=10**6), max_size=12),
)
async def test_where_reads_split_the_body_never_changes_what_the_client_gets(
    format_id: str, line_end: str, cuts: list[int]
) -> None:
    # The first content is cut out of its read event by event: any split of
    # the body into reads, in any of SSE's three line endings, gives the same
    # answer and the same text, with the first token always first on its own.
    body = b"".join(burst(format_id)).replace(b"\n", line_end.encode())
    points = sorted({cut % (len(body) + 1) for cut in cuts} | {0, len(body)})
    reads = [body[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]
    transport = httpx.MockTransport(
        lambda request: httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=Buffered(reads)
        )
    )
    async with httpx.AsyncClient(transport=transport) as client:
        stream = Upstream(client).stream(burst_route(wire_format(format_id).protocol), REQUEST)
        batches = [batch async for batch in stream]
    texts = [e.text for batch in batches for e in batch if isinstance(e, TextDelta)]
    final = batches[-1][-1]
    assert isinstance(final, MessageComplete), final
    assert "".join(texts) == final.message.content
    assert final.message.content == "".join(TOKENS)
    first_text = next(batch for batch in batches if any(isinstance(e, TextDelta) for e in batch))
    assert [e.text for e in first_text if isinstance(e, TextDelta)][0].startswith(TOKENS[0])
