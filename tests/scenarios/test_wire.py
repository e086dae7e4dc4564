"""The cassette at the gateway's upstream transport keeps what the wire did, and plays it back.

Each test records one streamed request (or two: an attempt and its retry)
from the simulated provider through `CassetteTransport`, reads the cassette
file back, and replays it: the same bytes must arrive, then the same end
(a break with the same exception, or a silence that lasts until the reader
gives up).
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from vcr.errors import CannotOverwriteExistingCassetteException

from navagent.fixtures.harness.cassettes._cassette import open_cassette
from navagent.fixtures.harness.cassettes._wire import (
    GAVE_UP_S,
    CassetteTransport,
    _RecordedBody,
    body_pieces,
)
from navagent.fixtures.provider import SimulatedProvider
from navagent.gateway._network import upstream_transport

BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 100,
    "stream": True,
    "messages": [{"role": "user", "content": "hello"}],
}
HEADERS = {"anthropic-version": "2023-06-01", "x-api-key": "k", "accept": "text/event-stream"}


@pytest.fixture
def sim() -> Iterator[SimulatedProvider]:
    with SimulatedProvider() as provider:
        yield provider


async def _read(
    client: httpx.AsyncClient, url: str, *, give_up_after: float = 5.0
) -> tuple[bytes, str]:
    """POST one streamed request; everything that arrived, and how it ended."""
    received = bytearray()
    try:
        async with client.stream("POST", url, json=BODY, headers=HEADERS) as response:
            async with asyncio.timeout(give_up_after):
                async for chunk in response.aiter_bytes():
                    received += chunk
    except TimeoutError:
        return bytes(received), "gave up"
    except httpx.TransportError as exc:
        return bytes(received), type(exc).__name__
    return bytes(received), "complete"


async def _record(
    sim: SimulatedProvider, path: Path, fault: str | None, *, give_up_after: float = 5.0
) -> list[tuple[bytes, str]]:
    if fault is not None:
        sim.inject(fault)
    transport = CassetteTransport(upstream_transport(httpx.Limits()))
    results = []
    async with httpx.AsyncClient(transport=transport) as client:
        with open_cassette(path, record=True) as cassette:
            async with transport.using(cassette):
                url = f"{sim.base_url}/v1/messages"
                results.append(await _read(client, url, give_up_after=give_up_after))
                if fault is not None and results[0][1] != "complete":
                    results.append(await _read(client, url))  # the retry
    return results


async def _replay(path: Path, *, count: int, give_up_after: float = 5.0) -> list[tuple[bytes, str]]:
    transport = CassetteTransport(upstream_transport(httpx.Limits()))
    results = []
    async with httpx.AsyncClient(transport=transport) as client:
        with open_cassette(path) as cassette:
            async with transport.using(cassette):
                for _ in range(count):
                    url = "http://simulated-provider.invalid/v1/messages"
                    results.append(await _read(client, url, give_up_after=give_up_after))
            assert cassette.all_played
    return results


def _responses(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [interaction["response"] for interaction in data["interactions"]]


async def test_a_reset_mid_stream_is_kept_with_the_bytes_before_it_and_replayed_there(
    sim: SimulatedProvider, tmp_path: Path
) -> None:
    path = tmp_path / "reset.yaml"
    live = await _record(sim, path, "reset after=4")
    assert [end for _, end in live] == ["ReadError", "complete"]
    first, retry = _responses(path)
    assert first["end"] == {"error": "ReadError", "message": "[Errno 104] Connection reset by peer"}
    assert first["body"]["string"].encode() == live[0][0]
    assert "end" not in retry  # the retry is its own interaction, complete
    assert b"message_stop" not in live[0][0] and b"message_stop" in live[1][0]
    assert await _replay(path, count=2) == live


@pytest.mark.parametrize("seconds", ["forever", "0.9"])
async def test_a_stall_is_kept_as_silence_and_replayed_as_silence(
    sim: SimulatedProvider, tmp_path: Path, seconds: str
) -> None:
    # A stall that ends after the reader gave up is silence too: the reader never saw the rest.
    path = tmp_path / "stall.yaml"
    live = await _record(sim, path, f"stall after=3 seconds={seconds}", give_up_after=0.5)
    assert live[0][1] == "gave up"
    first = _responses(path)[0]
    assert first["end"] == "silent"
    assert first["body"]["string"].encode() == live[0][0]
    started = time.perf_counter()
    replayed = await _replay(path, count=2, give_up_after=0.5)
    assert replayed == live
    assert time.perf_counter() - started < 4  # the reader's own timeout, not a real stall


async def test_a_body_closed_at_once_stays_complete_however_late_its_finish_runs(
    tmp_path: Path,
) -> None:
    # The gateway has its terminal event, starts one more read and lets go at
    # once; the loop is then busy (a tool, a render) before the recorder's
    # finish runs. The wait that counts is the gateway's, not the loop's.
    release = asyncio.Event()

    async def body() -> Any:
        yield b"data: one\n\n"
        await release.wait()

    inner = httpx.MockTransport(
        lambda _request: httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=body()
        )
    )
    transport = CassetteTransport(inner)
    path = tmp_path / "busy.yaml"
    async with httpx.AsyncClient(transport=transport) as client:
        with open_cassette(path, record=True) as cassette:
            async with transport.using(cassette):
                async with client.stream("POST", "http://p.test/v1/messages") as response:
                    chunks = response.aiter_raw()
                    assert await anext(chunks) == b"data: one\n\n"
                    read = asyncio.ensure_future(anext(chunks))
                    await asyncio.sleep(0.01)  # the read waits for the body's end
                    read.cancel()
                    with pytest.raises(asyncio.CancelledError):
                        await read
                time.sleep(GAVE_UP_S + 0.2)  # a busy loop: the finish task has not run
                release.set()
    (recorded,) = _responses(path)
    assert "end" not in recorded, recorded["end"]
    assert recorded["body"]["string"] == "data: one\n\n"


async def test_a_complete_stream_records_no_end_and_replays_one_event_per_chunk(
    sim: SimulatedProvider, tmp_path: Path
) -> None:
    path = tmp_path / "ok.yaml"
    live = await _record(sim, path, None)
    assert live[0][1] == "complete"
    (response,) = _responses(path)
    assert "end" not in response
    assert await _replay(path, count=1) == live


def test_body_pieces_cut_after_each_event_and_keep_a_partial_tail() -> None:
    body = b'event: a\ndata: 1\n\ndata: 2\r\n\r\ndata: {"cut'
    assert body_pieces(body) == [b"event: a\ndata: 1\n\n", b"data: 2\r\n\r\n", b'data: {"cut']
    assert b"".join(body_pieces(body)) == body
    assert body_pieces(b'{"json": true}') == [b'{"json": true}']


async def test_a_request_that_never_got_a_response_is_kept_and_fails_the_same_way(
    tmp_path: Path,
) -> None:
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    path = tmp_path / "refused.yaml"
    transport = CassetteTransport(upstream_transport(httpx.Limits()))
    async with httpx.AsyncClient(transport=transport) as client:
        with open_cassette(path, record=True) as cassette:
            async with transport.using(cassette):
                live = await _read(client, f"http://127.0.0.1:{port}/v1/messages")
    assert live == (b"", "ConnectError")
    (response,) = _responses(path)
    assert response["status"]["code"] == 0 and response["end"]["error"] == "ConnectError"
    assert await _replay(path, count=1) == [live]


async def test_record_modes_mean_what_they_mean_in_vcrpy(
    sim: SimulatedProvider, tmp_path: Path
) -> None:
    path = tmp_path / "modes.yaml"
    (first,) = await _record(sim, path, None)
    url = f"{sim.base_url}/v1/messages"
    other = {**BODY, "messages": [{"role": "user", "content": "list my sandboxes"}]}
    transport = CassetteTransport(upstream_transport(httpx.Limits()))
    async with httpx.AsyncClient(transport=transport) as client:
        with open_cassette(path, record_mode="once") as cassette:
            async with transport.using(cassette):
                assert await _read(client, url) == first  # played, not sent
                with pytest.raises(CannotOverwriteExistingCassetteException):
                    await client.post(url, json=other, headers=HEADERS)
        sent_before = len(sim.requests)
        with open_cassette(path, record_mode="new_episodes") as cassette:
            async with transport.using(cassette):
                assert await _read(client, url) == first
                response = await client.post(url, json=other, headers=HEADERS)
                assert response.status_code == 200
    assert len(sim.requests) == sent_before + 1  # only the new request went out
    assert len(_responses(path)) == 2


async def test_a_chunk_two_readers_wait_on_is_recorded_once_and_none_is_lost(
    tmp_path: Path,
) -> None:
    # A read the gateway let go (a cancelled turn, a read `BodyChunks` left suspended)
    # can be resumed after `finish` took its chunk: both then hold the same read.
    # Each awaiter keeping the chunk wrote it twice and lost the next (a key cut in half).
    release = asyncio.Event()

    async def body() -> Any:
        yield b"data: one\n\n"
        await release.wait()
        for word in (b"two", b"three", b"four"):
            yield b"data: " + word + b"\n\n"

    inner = httpx.MockTransport(
        lambda _request: httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=body()
        )
    )
    transport = CassetteTransport(inner)
    path = tmp_path / "twice.yaml"
    with open_cassette(path, record=True) as cassette:
        async with transport.using(cassette):
            response = await transport.handle_async_request(
                httpx.Request("POST", "http://p.test/v1/messages")
            )
            recording = response.stream
            assert isinstance(recording, _RecordedBody)
            chunks = aiter(recording)
            assert await anext(chunks) == b"data: one\n\n"
            stale = asyncio.ensure_future(anext(chunks))  # the read the gateway lets go
            await asyncio.sleep(0.01)
            finish = recording.finish()
            await asyncio.sleep(0.01)  # both now wait on the same read
            release.set()
            assert await stale == b"data: two\n\n"
            await finish
    (recorded,) = _responses(path)
    assert recorded["body"]["string"] == "data: one\n\ndata: two\n\ndata: three\n\ndata: four\n\n"
