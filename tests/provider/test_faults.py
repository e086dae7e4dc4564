"""Faults: the marker grammar, the fault book, and what each fault does on the wire."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import httpx
import pytest

from navagent.fixtures.provider import Fault, SimulatedProvider, parse_fault, parse_marker
from navagent.fixtures.provider.wire._faults import FaultBook, MarkerFault, strip_markers
from navagent.fixtures.provider.wire._respond import is_content_delta
from tests.provider import _helpers as h

HEADERS = {"authorization": "Bearer k", "x-api-key": "k", "anthropic-version": "2023-06-01"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[sim-fault: http-429]", MarkerFault(Fault("http-429"))),
        (
            "please [SIM-FAULT: Overloaded-Mid-Stream after=5] list",
            MarkerFault(Fault("error-mid-stream", after=5)),
        ),
        (
            "[sim-fault: stall after=0 seconds=1.5 times=always step=2]",
            MarkerFault(Fault("stall", after=0, seconds=1.5), times=None, step=2),
        ),
        ("[sim-fault: stall seconds=forever]", MarkerFault(Fault("stall", seconds=None))),
        (
            "[sim-fault: http-429 retry-after=7 times=3]",
            MarkerFault(Fault("http-429", retry_after=7), times=3),
        ),
        ("no marker here [sim-fault", None),
    ],
)
def test_marker_grammar(text, expected) -> None:
    assert parse_marker(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[sim-fault: explode]", "unknown fault kind 'explode'"),
        ("[sim-fault: ]", "no fault kind given"),
        ("[sim-fault: reset after=-1]", "after='-1' must be an integer >= 0"),
        ("[sim-fault: stall seconds=0]", "seconds='0' must be a positive number or 'forever'"),
        ("[sim-fault: reset times=0]", "times='0' must be an integer >= 1"),
        ("[sim-fault: reset later]", "parameter 'later' must look like key=value"),
        ("[sim-fault: reset colour=red]", "unknown parameter 'colour'"),
    ],
)
def test_malformed_markers_say_what_is_wrong(text, problem) -> None:
    with pytest.raises(ValueError, match="bad sim-fault marker") as caught:
        parse_marker(text)
    assert problem in str(caught.value)


def test_markers_are_stripped_and_inject_grammar_refuses_marker_only_keys() -> None:
    assert strip_markers("delete it [sim-fault: reset]  now") == "delete it now"
    assert parse_fault("stall after=3 seconds=2") == Fault("stall", after=3, seconds=2.0)
    with pytest.raises(ValueError, match="apply to markers only"):
        parse_fault("reset times=2")


def test_fault_book_counts_injections_and_marker_hits() -> None:
    book = FaultBook()
    book.inject(Fault("reset"), times=2, provider="anthropic")
    take = book.take
    assert take(provider="openai", marker=None, turn_key="t", step=1) is None
    assert take(provider="anthropic", marker=None, turn_key="t", step=1) == Fault("reset")
    assert take(provider="anthropic", marker=None, turn_key="t", step=1) == Fault("reset")
    assert take(provider="anthropic", marker=None, turn_key="t", step=1) is None
    once = MarkerFault(Fault("http-500"))
    assert take(provider="openai", marker=once, turn_key="t", step=1) == Fault("http-500")
    assert take(provider="openai", marker=once, turn_key="t", step=1) is None  # the retry passes
    assert take(provider="openai", marker=once, turn_key="other turn", step=1) == Fault("http-500")
    later = MarkerFault(Fault("reset"), times=None, step=2)
    assert take(provider="openai", marker=later, turn_key="t", step=1) is None
    assert all(take(provider="openai", marker=later, turn_key="t", step=2) for _ in range(3))


def post(sim: SimulatedProvider, path: str, body: dict[str, Any]) -> httpx.Response:
    with httpx.Client(base_url=sim.base_url, timeout=5) as client:
        return client.post(path, json=body, headers=HEADERS)


def test_marker_fault_fires_once_then_the_retry_succeeds(sim) -> None:
    body = h.anthropic_body([h.user("list my sandboxes [sim-fault: http-429 retry-after=3]")])
    refused = post(sim, "/v1/messages", body)
    assert refused.status_code == 429 and refused.headers["retry-after"] == "3"
    assert refused.json()["error"]["type"] == "rate_limit_error"
    retried = post(sim, "/v1/messages", body)
    assert retried.status_code == 200
    assert h.fold_anthropic(retried.content)["calls"][0]["name"] == "sandbox_list"
    assert [r.fault for r in sim.requests] == ["http-429 retry-after=3", None]


def test_malformed_marker_is_a_400(sim) -> None:
    response = post(sim, "/v1/chat/completions", h.openai_body([h.user("[sim-fault: boom]")]))
    assert response.status_code == 400
    assert "unknown fault kind 'boom'" in response.json()["error"]["message"]


def events(body: bytes) -> list[str]:
    return [data for _, data in h.sse_events(body)]


def test_error_mid_stream_ends_the_response_cleanly(sim) -> None:
    sim.inject("error-mid-stream after=3", provider="anthropic")
    response = post(sim, "/v1/messages", h.anthropic_body([h.user("hello")]))
    kinds = [event for event, _ in h.sse_events(response.content)]
    # after=3 counts content deltas: the preamble, three text deltas, then the error.
    deltas = ["content_block_delta"] * 3
    assert kinds == ["message_start", "content_block_start", "ping", *deltas, "error"]
    (*_, last) = sim.wait_idle()
    assert last.outcome == "fault" and last.events_sent == 7


def test_invalid_json_inserts_one_broken_event_and_keeps_the_rest(sim) -> None:
    body = h.openai_body([h.user("hello")])
    clean = events(post(sim, "/v1/chat/completions", body).content)
    sim.reset()  # same occurrence, same ids
    sim.inject("invalid-json after=1")
    broken = events(post(sim, "/v1/chat/completions", body).content)
    assert len(broken) == len(clean) + 1
    cut = next(index for index, (a, b) in enumerate(zip(broken, clean, strict=False)) if a != b)
    assert clean[cut].startswith(broken[cut])
    assert broken[cut + 1 :] == clean[cut:]
    # after=1 counts content deltas: the broken event comes right after the first one.
    sent = [is_content_delta(b"data: %s\n\n" % e.encode(), "openai") for e in clean[:cut]]
    assert sent.count(True) == 1 and sent[-1]


def test_reset_sends_rst_without_a_terminator(sim) -> None:
    sim.inject("reset after=2")
    with httpx.Client(base_url=sim.base_url) as client:
        received = []
        with pytest.raises(httpx.TransportError):
            with client.stream(
                "POST",
                "/v1/chat/completions",
                json=h.openai_body([h.user("hello")]),
                headers=HEADERS,
            ) as response:
                for line in response.iter_lines():
                    if line:
                        received.append(line)
    # after=2 counts content deltas: the reset comes right after the second one.
    sent = [is_content_delta(line.encode() + b"\n\n", "openai") for line in received]
    assert sent.count(True) == 2 and sent[-1]
    (*_, last) = sim.wait_idle()
    assert last.events_sent == len(received) and last.outcome == "fault"


def test_finite_stall_delays_then_completes(sim) -> None:
    sim.inject("stall after=2 seconds=0.3")
    start = time.monotonic()
    response = post(sim, "/v1/messages", h.anthropic_body([h.user("hello")]))
    assert time.monotonic() - start >= 0.3
    assert h.fold_anthropic(response.content)["stop"] == "end_turn"
    assert sim.requests[-1].fault == "stall after=2 seconds=0.3"


def test_server_notices_promptly_when_the_client_leaves_a_stalled_stream(sim) -> None:
    sim.inject("stall after=2")
    with httpx.Client(base_url=sim.base_url) as client:
        with client.stream(
            "POST", "/v1/messages", json=h.anthropic_body([h.user("hello")]), headers=HEADERS
        ) as response:
            lines = response.iter_lines()
            assert next(lines).startswith("event: message_start")
            deltas = 0
            while deltas < 2:  # read up to the stall, so what was sent does not race the exit
                deltas += next(lines) == "event: content_block_delta"
        left_at = time.monotonic()
    (record,) = sim.wait_for(lambda rs: bool(rs) and rs[-1].closed_by_client, timeout=2)
    assert record.closed_at is not None and record.closed_at - left_at < 0.5
    # message_start, content_block_start, ping, then the two text deltas of after=2
    assert record.events_sent == 5 and record.events_planned > 5


def test_server_notices_a_client_leaving_during_pacing(sim) -> None:
    sim.pacing_ms = 100
    with socket.create_connection(("127.0.0.1", sim.port)) as raw:
        payload = httpx.Request(
            "POST",
            sim.base_url + "/v1/messages",
            json=h.anthropic_body([h.user("hello")]),
            headers=HEADERS,
        )
        head = "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items())
        raw.sendall(
            f"{head}Content-Length: {len(payload.content)}\r\n\r\n".encode() + payload.content
        )
        received = b""
        while b"event: message_start" not in received:
            received += raw.recv(4096)
    (record,) = sim.wait_for(lambda rs: bool(rs) and rs[-1].outcome == "client_closed", timeout=2)
    assert record.closed_by_client and 0 < record.events_sent < record.events_planned


def test_non_streaming_requests_get_the_whole_body_faults(sim) -> None:
    body = h.anthropic_body([h.user("hello")], stream=None)
    sim.inject("error-mid-stream")
    overloaded = post(sim, "/v1/messages", body)
    assert (
        overloaded.status_code == 529 and overloaded.json()["error"]["type"] == "overloaded_error"
    )
    sim.inject("invalid-json")
    cut = post(sim, "/v1/messages", body)
    assert cut.status_code == 200 and cut.content.startswith(b'{"model"')
    with pytest.raises(ValueError):
        cut.json()
    sim.inject("reset")
    with pytest.raises(httpx.TransportError):
        post(sim, "/v1/messages", body)


def test_stop_ends_open_streams_promptly() -> None:
    sim = SimulatedProvider().start()
    sim.inject("stall after=1")
    failures: list[BaseException] = []

    def read() -> None:
        try:
            with httpx.Client(base_url=sim.base_url, timeout=10) as client:
                client.post(
                    "/v1/messages", json=h.anthropic_body([h.user("hello")]), headers=HEADERS
                )
        except httpx.HTTPError as error:
            failures.append(error)

    reader = threading.Thread(target=read)
    reader.start()
    sim.wait_for(lambda rs: bool(rs) and rs[-1].events_sent == 4)  # 3 + one content delta
    start = time.monotonic()
    sim.stop()
    reader.join(5)
    assert time.monotonic() - start < 1.0 and not reader.is_alive()
    assert len(failures) == 1  # the client sees the stream cut, not a clean end
    assert sim.wait_idle()[-1].outcome == "server_stopped"


@pytest.mark.slow
async def test_hundreds_of_concurrent_streams(sim) -> None:
    sim.pacing_ms = 5
    limits = httpx.Limits(max_connections=300, max_keepalive_connections=300)
    async with httpx.AsyncClient(base_url=sim.base_url, limits=limits, timeout=30) as client:

        async def one(i: int) -> Any:
            body = h.openai_body([h.user(f"show sandbox box-{i}")])
            response = await client.post("/v1/chat/completions", json=body, headers=HEADERS)
            return h.fold_openai(response.content)["calls"][0]["arguments"]

        results = await asyncio.gather(*(one(i) for i in range(250)))
    assert results == [f'{{"name": "box-{i}"}}' for i in range(250)]
    assert sum(r.outcome == "completed" for r in sim.wait_idle()) == 250
