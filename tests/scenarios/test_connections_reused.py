"""Connection reuse, which no answer shows: the `connections-reused` promise (issue 42).

A cosmic-ray mutant that stopped `gateway/upstream.py`'s `_finish_body` from
reading the end of a finished body passed every replay and the sweep: each
answer was right, and each response was closed half-read, so httpx closed its
connection instead of pooling it and every turn paid a new TLS handshake.
Replays answer in process (no socket), so the harness plays httpx's pool rule
at the transport (`faults/_connections`); the real-socket test below holds
that model to what httpcore and a real server do.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import grpc
import httpx
import pytest

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from navagent.core.wire_formats import ROUTE_PROTOCOLS
from navagent.fixtures.harness import SimulatedCluster, load_scenario, replay_scenario
from navagent.fixtures.harness.faults._connections import PooledConnections
from navagent.fixtures.provider import SimulatedProvider
from navagent.gateway import upstream
from navagent.gateway._network import upstream_transport
from navagent.gateway.routes import parse_routes
from navagent.gateway.server import Gateway
from navagent.gateway.settings import GatewaySettings
from tests.scenarios.conftest import CopyCase

ORIGIN = "http://provider.test:80"


class _Body(httpx.AsyncByteStream):
    """A harness body: its pieces, then a clean end (`end_in_reach` as the harness's say)."""

    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces
        self._left = -1

    @property
    def end_in_reach(self) -> bool:
        return self._left == 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self._left = len(self._pieces)
        for piece in self._pieces:
            self._left -= 1
            yield piece


class _Provider(httpx.AsyncBaseTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=_Body([b"data: 1\n\n", b"data: 2\n\n"]))


async def _read(client: httpx.AsyncClient, pieces: int | None) -> None:
    """One request; read `pieces` chunks then close (None: read to the end)."""
    async with client.stream("POST", "http://provider.test/v1/x") as response:
        chunks = response.aiter_raw()
        if pieces is None:
            async for _chunk in chunks:
                pass
        for _ in range(pieces or 0):
            await anext(chunks)
        await response.aclose()


async def test_bodies_read_to_their_end_share_one_connection() -> None:
    pool = PooledConnections(_Provider())
    async with httpx.AsyncClient(transport=pool) as client:
        for _ in range(3):
            await _read(client, None)
    assert (pool.ledger.opened[ORIGIN], pool.ledger.requests[ORIGIN]) == (1, 3)
    assert pool.ledger.breaches() == []


async def test_a_body_closed_with_its_end_unread_breaks_the_promise() -> None:
    pool = PooledConnections(_Provider())
    async with httpx.AsyncClient(transport=pool) as client:
        for _ in range(3):
            await _read(client, 2)  # every piece, never the end behind them
    assert pool.ledger.opened[ORIGIN] == 3
    breaches = pool.ledger.breaches()
    assert "request 1 to http://provider.test:80 (/v1/x): its response was closed" in breaches[0]
    assert breaches[-1].startswith("3 connections opened to http://provider.test:80 for 3")


async def test_a_body_cut_mid_way_or_by_a_cancel_costs_its_connection_and_no_breach() -> None:
    pool = PooledConnections(_Provider())
    async with httpx.AsyncClient(transport=pool) as client:
        await _read(client, 1)  # cut mid-body: a reset, a stall, a fault

        async def cancelled() -> None:
            async with client.stream("POST", "http://provider.test/v1/x") as response:
                chunks = response.aiter_raw()
                await anext(chunks)
                await anext(chunks)
                try:
                    await asyncio.sleep(3600)  # the call is cancelled here, its end unread
                finally:
                    await response.aclose()

        task = asyncio.create_task(cancelled())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await _read(client, None)
    assert (pool.ledger.opened[ORIGIN], pool.ledger.cut[ORIGIN]) == (3, 2)
    assert pool.ledger.breaches() == []


async def test_a_stream_that_leaves_its_end_unread_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("providers", providers=("anthropic",))
    scenario = load_scenario(folder / "providers.yaml")
    assert (await replay_scenario(scenario, "anthropic", cluster=cluster)).passed

    # The surviving mutant's effect: the tail of a finished body is never read.
    monkeypatch.setattr(upstream, "_finish_body", lambda chunks: None)
    result = await replay_scenario(scenario, "anthropic", cluster=cluster)

    assert not result.passed
    reused = [p for p in result.problems if p.startswith("[connections-reused]")]
    assert reused and "closed with the end of its body unread" in reused[0], result.problems
    assert any("connections opened to http://" in p for p in reused), reused


async def _complete(gateway: Gateway) -> pb.ChatStreamEvent:
    request = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="hello there")])
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        events = [e async for e in chat_pb2_grpc.ChatStub(channel).ChatStream(request)]
    return events[-1]


async def _three_streams(
    provider: SimulatedProvider, protocol: str, transport: httpx.AsyncBaseTransport
) -> tuple[int, int]:
    """Three completions one after another: (connections the server accepted, the model's)."""
    routes = parse_routes(
        {
            "routes": [
                {
                    "routing_hint": "agent",
                    "endpoint": provider.base_url,
                    "model": "sim-1",
                    "protocols": [protocol],
                    "api_key": "sk-sim-reuse",
                }
            ]
        },
        source="reuse",
    )
    provider.reset()
    pool = PooledConnections(transport)
    http = httpx.AsyncClient(transport=pool)
    gateway = Gateway(GatewaySettings(listen="127.0.0.1:0"), routes, http_client=http)
    await gateway.start()
    try:
        for _ in range(3):
            assert (await _complete(gateway)).WhichOneof("event") == "message"
    finally:
        await gateway.stop(grace_s=0)
        await http.aclose()
        await asyncio.sleep(0.01)  # aiohttp closes its sockets on the loop's next turns
    provider.wait_idle()
    return provider.connections, sum(pool.ledger.opened.values())


@pytest.mark.parametrize("protocol", ROUTE_PROTOCOLS)
@pytest.mark.parametrize(
    ("transport", "planted_connections"),
    [
        # httpx's own (httpcore): only a body read to its end is pooled, as the model plays.
        (lambda: httpx.AsyncHTTPTransport(), 3),
        # The shipped one (aiohttp) also pools a connection whose body's end arrived unread
        # (`ResponseHandler.should_close` reads `payload.is_eof()`): the tail costs it nothing.
        (lambda: upstream_transport(httpx.Limits()), 1),
    ],
    ids=["httpx", "aiohttp"],
)
async def test_the_model_counts_what_a_real_server_accepts(
    protocol: str,
    transport: Callable[[], httpx.AsyncBaseTransport],
    planted_connections: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over real sockets, 3 streams one after another: the server's count and the model's.

    Clean, one connection on either transport. With the tail left unread, the model
    counts one per stream, as httpcore opens them; aiohttp still reuses one.
    """
    with SimulatedProvider() as provider:
        provider.pacing_ms = 0
        clean = await _three_streams(provider, protocol, transport())
        monkeypatch.setattr(upstream, "_finish_body", lambda chunks: None)
        planted = await _three_streams(provider, protocol, transport())
    # Gemini's stream has no terminal event: its message completes when the body ends,
    # so the end is read whatever `_finish_body` does.
    tail_read = protocol == "google_gemini"
    # One connection each, or two where a loaded machine starts the next request before
    # the last response has closed (two open at once, which the model allows for too).
    assert clean[0] == clean[1] <= 2, clean
    if tail_read:
        assert planted[0] == planted[1] <= 2, planted
    else:
        assert planted[1] == 3, planted  # the model: httpx's rule, one per stream
        assert planted[0] == 3 if planted_connections == 3 else planted[0] <= 2, planted
