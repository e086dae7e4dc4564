"""The gateway's upstream transport (aiohttp under httpx's API) and BodyChunks."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import httpx
import pytest

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from navagent.core.events import MessageComplete
from navagent.core.messages import ChatRequest, UserMessage
from navagent.gateway import _chunks
from navagent.gateway._chunks import BodyChunks
from navagent.gateway._network import Answer, upstream_transport
from navagent.gateway.routes import RouteTable, parse_routes
from navagent.gateway.server import Gateway
from navagent.gateway.settings import GatewaySettings
from navagent.gateway.upstream import Upstream
from tests.certs import make_pki
from tests.core.fake_programs import wait_until
from tests.gateway.provider_bodies import openai_text

BODY = openai_text("one", "two")


def chunked(parts: list[bytes]) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


class Provider:
    """A tiny HTTP/1.1 server: answers every request with BODY, keeps connections alive.

    `close_after`: close the connection after one answer; `cut`: send the head
    and half the body, then close (`reset`: with a TCP reset); `hold`: send the
    head and keep the body open until `release` is set; `trickle`: send the
    body's events 50 ms apart.
    """

    def __init__(
        self,
        *,
        close_after: bool = False,
        cut: bool = False,
        reset: bool = False,
        hold: bool = False,
        trickle: bool = False,
    ) -> None:
        self.trickle = trickle
        self.connections = 0
        self.heads: list[bytes] = []
        self.open_now = 0
        self.most_open = 0
        self.close_after = close_after
        self.cut = cut or reset
        self.reset = reset
        self.hold = hold
        self.release = asyncio.Event()
        self.server: asyncio.Server | None = None

    async def start(self, ssl_context: ssl.SSLContext | None = None) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=ssl_context)
        port: int = self.server.sockets[0].getsockname()[1]
        return port

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head)
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                await reader.readexactly(length)
                head = (
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n"
                )
                body = chunked(BODY)
                if self.cut:
                    # A reset follows whole events (the bytes must still arrive);
                    # a clean cut stops half-way through one.
                    sent = chunked(BODY[:1])[:-5] if self.reset else body[: len(body) // 2]
                    writer.write(head + sent)
                    await writer.drain()
                    if self.reset:
                        await asyncio.sleep(0.05)
                        linger = struct.pack("ii", 1, 0)  # close with RST, not FIN
                        writer.get_extra_info("socket").setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, linger
                        )
                        writer.transport.abort()
                    break
                if self.hold:
                    writer.write(head)
                    await self.release.wait()
                if self.trickle:
                    writer.write(head)
                    for event in BODY:
                        await asyncio.sleep(0.05)
                        writer.write(chunked([event])[:-5])
                    writer.write(b"0\r\n\r\n")
                    await writer.drain()
                    break
                writer.write(body if self.hold else head + body)
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.open_now -= 1
            writer.close()

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


def routes_to(port: int) -> RouteTable:
    """One OpenAI route for the hint `agent`, to the provider on `port`."""
    return parse_routes(
        {
            "routes": [
                {
                    "routing_hint": "agent",
                    "endpoint": f"http://127.0.0.1:{port}/v1",
                    "model": "m",
                    "protocols": ["openai_chat_completions"],
                    "api_key": "sk-test-direct-0123456789",
                }
            ]
        },
        source="test",
    )


async def post(client: httpx.AsyncClient, url: str) -> bytes:
    async with client.stream("POST", url, content=b"{}") as response:
        assert response.status_code == 200
        return b"".join([chunk async for chunk in response.aiter_bytes()])


async def test_streams_a_body_and_reuses_the_connection() -> None:
    provider = Provider()
    port = await provider.start()
    async with httpx.AsyncClient(transport=upstream_transport(httpx.Limits())) as client:
        for _ in range(3):
            assert await post(client, f"http://127.0.0.1:{port}/v1") == b"".join(BODY)
    await provider.stop()
    assert provider.connections == 1


async def test_a_connection_the_provider_closed_is_not_reused() -> None:
    provider = Provider(close_after=True)
    port = await provider.start()
    async with httpx.AsyncClient(transport=upstream_transport(httpx.Limits())) as client:
        for _ in range(3):
            assert await post(client, f"http://127.0.0.1:{port}/v1") == b"".join(BODY)
            await asyncio.sleep(0.05)  # the provider's close reaches us while idle
    await provider.stop()
    assert provider.connections == 3


async def test_a_refused_connection_is_a_connect_error() -> None:
    provider = Provider()
    port = await provider.start()
    await provider.stop()  # nothing listens there now
    async with httpx.AsyncClient(transport=upstream_transport(httpx.Limits())) as client:
        with pytest.raises(httpx.ConnectError, match="Connect"):
            await post(client, f"http://127.0.0.1:{port}/v1")


async def test_tls_verifies_the_provider(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    if pki is None:
        pytest.skip("neither the cryptography package nor openssl is available")
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(pki.server_cert, pki.server_key)
    provider = Provider()
    port = await provider.start(server)
    url = f"https://localhost:{port}/v1"
    trusting = ssl.create_default_context(cafile=str(pki.ca))
    async with httpx.AsyncClient(
        transport=upstream_transport(httpx.Limits(), ssl_context=trusting)
    ) as client:
        assert await post(client, url) == b"".join(BODY)
    stranger = ssl.create_default_context(cafile=str(pki.other_ca))
    async with httpx.AsyncClient(
        transport=upstream_transport(httpx.Limits(), ssl_context=stranger)
    ) as client:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await post(client, url)
    await provider.stop()


async def test_streams_give_their_connection_back_to_the_pool() -> None:
    # The terminal event comes before the body's last chunk: the stream must
    # still read that, or every request would cost a new connection (and a
    # pool of one would run dry).
    provider = Provider()
    port = await provider.start()
    (route,) = parse_routes(
        {
            "routes": [
                {
                    "name": "p",
                    "routing_hint": "agent",
                    "endpoint": f"http://127.0.0.1:{port}/v1",
                    "model": "m",
                    "protocols": ["openai_chat_completions"],
                    "api_key": "sk-test-pool-0123456789",
                }
            ]
        },
        source="test",
    ).routes
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(transport=upstream_transport(limits)) as client:
        upstream = Upstream(client)
        request = ChatRequest(messages=(UserMessage(content="hi"),))
        for _ in range(20):
            batches = [batch async for batch in upstream.stream(route, request)]
            final = batches[-1][-1]
            assert isinstance(final, MessageComplete) and final.message.content == "onetwo"
    await provider.stop()
    assert provider.connections == 1


async def test_the_gateways_own_requests_go_straight_to_aiohttp_with_the_clients_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # httpx.AsyncClient.send (and httpx's Request and Response) cost ~100 us per request
    # and add nothing the gateway's own client uses (issue 44); the request still
    # carries the client's headers.
    provider = Provider()
    port = await provider.start()
    routes = routes_to(port)

    async def through_the_client(*_args: object, **_kwargs: object) -> httpx.Response:
        raise AssertionError("sent through httpx.AsyncClient.send")

    def built(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("built an httpx.Request or httpx.Response")

    monkeypatch.setattr(httpx.AsyncClient, "send", through_the_client)
    monkeypatch.setattr(httpx.Request, "__init__", built)
    monkeypatch.setattr(httpx.Response, "__init__", built)
    gateway = Gateway(GatewaySettings.loopback(), routes)
    await gateway.start()
    try:
        async with grpc.aio.insecure_channel(gateway.address) as channel:
            call = chat_pb2_grpc.ChatStub(channel).ChatStream(
                pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="hi")])
            )
            events = [event async for event in call]
    finally:
        await gateway.stop(grace_s=0)
        await provider.stop()
    assert events[-1].message.content == "onetwo"
    (head,) = provider.heads
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    sent = head.lower()
    assert f"user-agent: python-httpx/{httpx.__version__}".encode() in sent
    assert b"authorization: bearer sk-test-direct-0123456789" in sent
    assert b"content-type: application/json" in sent and b"accept-encoding: " in sent


async def test_a_body_cut_mid_stream_is_a_protocol_error_not_a_connect_error() -> None:
    # The gateway words a failure by its httpx type: a cut body must never read
    # "could not connect" (httpx-aiohttp maps it to ConnectTimeout).
    provider = Provider(cut=True)
    port = await provider.start()
    async with httpx.AsyncClient(transport=upstream_transport(httpx.Limits())) as client:
        with pytest.raises(httpx.RemoteProtocolError) as raised:
            await post(client, f"http://127.0.0.1:{port}/v1")
    assert not isinstance(raised.value, httpx.ConnectError | httpx.TimeoutException)
    await provider.stop()


async def test_a_body_cut_by_a_reset_is_a_read_error_in_the_sockets_words() -> None:
    # As httpx's own transport words it: recordings of a reset stay the same.
    provider = Provider(reset=True)
    port = await provider.start()
    async with httpx.AsyncClient(transport=upstream_transport(httpx.Limits())) as client:
        with pytest.raises(httpx.ReadError, match=r"^\[Errno 104\] Connection reset by peer$"):
            await post(client, f"http://127.0.0.1:{port}/v1")
    await provider.stop()


async def test_the_bytes_before_a_reset_are_handed_on_before_its_error() -> None:
    # aiohttp raises a failure ahead of what it had buffered: those bytes are the
    # provider's last events, and the recorder keeps them "as the wire did it".
    provider = Provider(reset=True)
    port = await provider.start()
    received = bytearray()
    async with httpx.AsyncClient(transport=upstream_transport(httpx.Limits())) as client:
        async with client.stream("POST", f"http://127.0.0.1:{port}/v1", content=b"{}") as response:
            await asyncio.sleep(0.3)  # not reading: the event and then the reset are buffered
            with pytest.raises(httpx.ReadError, match="Connection reset by peer"):
                async for chunk in response.aiter_raw():
                    received += chunk
    assert bytes(received) == BODY[0]
    await provider.stop()


async def test_a_full_pool_queues_requests_and_times_out_as_a_connect_timeout() -> None:
    provider = Provider(hold=True)
    port = await provider.start()
    url = f"http://127.0.0.1:{port}/v1"
    limits = httpx.Limits(max_connections=2, max_keepalive_connections=2)
    async with httpx.AsyncClient(transport=upstream_transport(limits)) as client:
        bodies = [asyncio.create_task(post(client, url)) for _ in range(6)]
        assert await wait_until(lambda: provider.most_open >= 2)
        await asyncio.sleep(0.1)
        assert provider.most_open == 2  # the others wait for a connection
        with pytest.raises(httpx.ConnectTimeout):
            await client.post(url, content=b"{}", timeout=httpx.Timeout(5, pool=0.1))
        provider.release.set()
        assert await asyncio.gather(*bodies) == [b"".join(BODY)] * 6
    await provider.stop()
    assert provider.connections == 2


ON_UVLOOP = {
    "stream-and-reuse": test_streams_a_body_and_reuses_the_connection,
    "closed-not-reused": test_a_connection_the_provider_closed_is_not_reused,
    "refused": test_a_refused_connection_is_a_connect_error,
    "back-to-the-pool": test_streams_give_their_connection_back_to_the_pool,
    "cut-mid-body": test_a_body_cut_mid_stream_is_a_protocol_error_not_a_connect_error,
    "reset-mid-body": test_a_body_cut_by_a_reset_is_a_read_error_in_the_sockets_words,
    "full-pool": test_a_full_pool_queues_requests_and_times_out_as_a_connect_timeout,
}


@pytest.mark.parametrize("case", sorted(ON_UVLOOP))
def test_the_transport_on_uvloop(case: str) -> None:
    # The gateway runs on uvloop when it is installed (gateway/_loop.py).
    uvloop = pytest.importorskip("uvloop")
    uvloop.run(ON_UVLOOP[case]())


def test_tls_on_uvloop(tmp_path: Path) -> None:
    uvloop = pytest.importorskip("uvloop")
    uvloop.run(test_tls_verifies_the_provider(tmp_path))


# --- BodyChunks ---------------------------------------------------------------


class Feed:
    """An async iterator of chunks that arrive when the test says so."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.cleaned_up = False

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        try:
            while (chunk := await self.queue.get()) is not None:
                yield chunk
        finally:
            self.cleaned_up = True


async def test_ready_takes_only_what_is_already_there() -> None:
    feed = Feed()
    chunks = BodyChunks(feed.chunks())
    for part in (b"a", b"b"):
        feed.queue.put_nowait(part)
    assert await chunks.next() == b"a"
    assert chunks.ready() == b"b"
    assert chunks.ready() is None  # nothing there: a read is now waiting
    assert chunks.ready() is None  # and is not started twice
    feed.queue.put_nowait(b"c")
    assert await chunks.next() == b"c"  # the waiting read resumed, nothing lost
    feed.queue.put_nowait(None)
    with pytest.raises(StopAsyncIteration):
        await chunks.next()


async def test_ready_reports_the_end_of_the_body() -> None:
    feed = Feed()
    chunks = BodyChunks(feed.chunks())
    feed.queue.put_nowait(b"a")
    feed.queue.put_nowait(None)
    assert await chunks.next() == b"a"
    with pytest.raises(StopAsyncIteration):
        chunks.ready()


async def test_abandon_cancels_a_waiting_read_so_it_cleans_up() -> None:
    feed = Feed()
    body = feed.chunks()
    chunks = BodyChunks(body)
    feed.queue.put_nowait(b"a")
    assert await chunks.next() == b"a"
    assert chunks.ready() is None
    await chunks.abandon()
    assert feed.cleaned_up
    await body.aclose()  # the generator is no longer running: closing it is fine


async def test_a_cancelled_task_cancels_the_resumed_read() -> None:
    feed = Feed()
    chunks = BodyChunks(feed.chunks())
    assert chunks.ready() is None
    task = asyncio.create_task(chunks.next())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert feed.cleaned_up


async def test_a_read_that_fails_in_ready_fails_the_next_read() -> None:
    async def breaking() -> AsyncGenerator[bytes, None]:
        yield b"a"
        raise ConnectionResetError("peer closed")

    chunks = BodyChunks(breaking())
    assert await chunks.next() == b"a"
    assert chunks.ready() is None  # what came before the break goes out first
    with pytest.raises(ConnectionResetError, match="peer closed"):
        await chunks.next()


# --- What the gateway's own transport holds, without a read -------------------


@asynccontextmanager
async def answered(provider: Provider) -> AsyncIterator[Answer]:
    """The gateway's own transport's answer from `provider`, closed after."""
    port = await provider.start()
    transport = upstream_transport(httpx.Limits())
    try:
        answer = await transport.open("POST", f"http://127.0.0.1:{port}/v1", [], b"{}", {})
        yield answer
        await answer.aclose()
    finally:
        await transport.aclose()
        await provider.stop()


async def test_ready_raw_hands_over_what_arrived_and_never_starts_a_read() -> None:
    provider = Provider(hold=True)
    async with answered(provider) as answer:
        assert answer.ready_raw() is None  # the head only: nothing of the body yet
        provider.release.set()
        body = bytearray()
        while len(body) < len(b"".join(BODY)):
            await asyncio.sleep(0.01)
            body += answer.ready_raw() or b""
        assert bytes(body) == b"".join(BODY)
        await asyncio.sleep(0.05)
        with pytest.raises(StopAsyncIteration):
            answer.ready_raw()
        assert [chunk async for chunk in answer.aiter_raw()] == []  # nothing read twice


async def test_ready_raw_leaves_a_failure_to_the_next_read_after_the_bytes_before_it() -> None:
    async with answered(Provider(reset=True)) as answer:
        await asyncio.sleep(0.3)  # the event, then the reset, have arrived
        assert answer.ready_raw() is None
        received = bytearray()
        with pytest.raises(httpx.ReadError, match="Connection reset by peer"):
            async for chunk in answer.aiter_raw():
                received += chunk
        assert bytes(received) == BODY[0]


async def test_the_gateways_own_transport_never_leaves_a_read_suspended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A suspended read is resumed through `_Resumed` at every one of a paced stream's
    # reads; the gateway's own transport says what it holds instead (issue 44).
    def resumed(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a read was left suspended and resumed")

    monkeypatch.setattr(_chunks._Resumed, "__init__", resumed)
    provider = Provider(trickle=True)  # every read after the first waits for the network
    port = await provider.start()
    transport = upstream_transport(httpx.Limits())
    client = httpx.AsyncClient(transport=transport)
    upstream = Upstream(client, transport=transport)
    route = routes_to(port).candidates("agent")[0]
    request = ChatRequest(messages=[UserMessage(content="hi")])
    try:
        events = [event async for batch in upstream.stream(route, request) for event in batch]
    finally:
        await client.aclose()
        await provider.stop()
    assert isinstance(events[-1], MessageComplete) and events[-1].message.content == "onetwo"
