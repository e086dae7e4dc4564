"""httpcore's network layer on plain asyncio protocols, for the gateway's upstream client.

httpx and httpcore stay in charge of HTTP (connection pool, h11, TLS,
errors); this replaces only the byte transport under them. httpcore's default
backend goes through anyio, which for every network read sets up a cancel
scope and a `fail_after` timer and pauses and resumes the socket (an epoll
change each time). On a paced stream that is one read per token, and the
profile of the gateway under load put a quarter of its CPU there.

Here a connection is an `asyncio.Protocol` that keeps what the socket
delivers until httpcore reads it: no timer unless a timeout is asked for (the
gateway's own deadlines need none, see `navagent.gateway.upstream`), and the
socket is paused only when `max_buffered` bytes are waiting, which is what
keeps a slow client's stream from pulling the provider's whole answer into
memory: TCP pushes back on the provider instead.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import httpcore
import httpx

__all__ = ["AsyncioNetworkBackend", "LinearPool", "upstream_transport"]

MAX_BUFFERED = 256 * 1024
"""Bytes held per connection before the socket is paused (TCP then pushes back)."""

_SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


def upstream_transport(
    limits: httpx.Limits,
    *,
    max_buffered: int = MAX_BUFFERED,
    socket_options: Iterable[_SocketOption] | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> httpx.AsyncHTTPTransport:
    """The transport httpx would build (pool, h11, TLS, errors) over `AsyncioNetworkBackend`."""
    transport = httpx.AsyncHTTPTransport(limits=limits)
    # httpx has no parameter for httpcore's `network_backend`: give its
    # transport the pool it would have built, with our backend.
    transport._pool = LinearPool(
        ssl_context=ssl_context or httpx.create_ssl_context(),
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        socket_options=socket_options,
        network_backend=AsyncioNetworkBackend(max_buffered=max_buffered),
    )
    return transport


class LinearPool(httpcore.AsyncConnectionPool):
    """httpcore's pool, with its bookkeeping pass made linear in the number of connections.

    httpcore 1.0's `_assign_requests_to_connections` runs on every request and
    every response close, and for each idle connection it counts all of them
    again: quadratic in the pool's size. With a few hundred streams open, every
    stream's end cost the gateway milliseconds, and the profile of 300 paced
    streams put 9% of all CPU there (encode/httpcore#1035 fixes it upstream,
    still unmerged). Same decisions, made in one pass; surplus idle
    connections (beyond `max_keepalive_connections`) are counted as such.
    """

    def _assign_requests_to_connections(self) -> list[httpcore.AsyncConnectionInterface]:
        closing: list[httpcore.AsyncConnectionInterface] = []
        kept: list[httpcore.AsyncConnectionInterface] = []
        idle: list[httpcore.AsyncConnectionInterface] = []
        for connection in self._connections:
            if connection.is_closed():
                continue
            if connection.has_expired():
                closing.append(connection)
                continue
            kept.append(connection)
            if connection.is_idle():
                idle.append(connection)
        surplus = len(idle) - self._max_keepalive_connections
        if surplus > 0:
            dropped = {id(connection) for connection in idle[:surplus]}
            closing.extend(idle[:surplus])
            kept = [connection for connection in kept if id(connection) not in dropped]
            idle = idle[surplus:]
        self._connections = kept

        queued = [request for request in self._requests if request.is_queued()]
        if not queued:
            return closing
        available = [connection for connection in kept if connection.is_available()]
        for pool_request in queued:
            origin = pool_request.request.url.origin
            reusable = next((c for c in available if c.can_handle_request(origin)), None)
            if reusable is not None:
                pool_request.assign_to_connection(reusable)
            elif len(self._connections) < self._max_connections:
                connection = self.create_connection(origin)
                self._connections.append(connection)
                pool_request.assign_to_connection(connection)
            elif idle:
                # Make room: close an idle connection (to another origin).
                victim = idle.pop(0)
                if victim in available:
                    available.remove(victim)
                self._connections.remove(victim)
                closing.append(victim)
                connection = self.create_connection(origin)
                self._connections.append(connection)
                pool_request.assign_to_connection(connection)
        return closing


class _Connection(asyncio.Protocol):
    """Bytes received and not yet read, and whoever is waiting for them."""

    def __init__(self, max_buffered: int) -> None:
        self.transport: asyncio.Transport | None = None
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.max_buffered = max_buffered
        self.eof = False
        self.error: Exception | None = None
        self.paused = False
        self.waiter: asyncio.Future[None] | None = None
        self.drained: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.buffered += len(data)
        if self.buffered >= self.max_buffered and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake()
        drained, self.drained = self.drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def pause_writing(self) -> None:
        if self.drained is None:
            self.drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        drained, self.drained = self.drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def take(self, max_bytes: int) -> bytes:
        """Up to `max_bytes` of what is buffered (at least one byte; the caller checked)."""
        chunk = self.chunks.popleft()
        if len(chunk) > max_bytes:
            self.chunks.appendleft(chunk[max_bytes:])
            chunk = chunk[:max_bytes]
        else:
            while self.chunks and len(chunk) + len(self.chunks[0]) <= max_bytes:
                chunk += self.chunks.popleft()
        self.buffered -= len(chunk)
        if self.paused and self.buffered < self.max_buffered // 2 and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return chunk


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, transport: asyncio.Transport, connection: _Connection) -> None:
        self._transport = transport
        self._connection = connection

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        connection = self._connection
        if not connection.chunks:
            if connection.eof:
                if connection.error is not None:
                    raise httpcore.ReadError(_describe(connection.error))
                return b""
            waiter = connection.waiter = asyncio.get_running_loop().create_future()
            try:
                if timeout is None:
                    await waiter
                else:
                    async with asyncio.timeout(timeout):
                        await waiter
            except TimeoutError:
                raise httpcore.ReadTimeout("timed out waiting for the provider") from None
            if not connection.chunks:
                if connection.error is not None:
                    raise httpcore.ReadError(_describe(connection.error))
                return b""
        return connection.take(max_bytes)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        connection = self._connection
        if connection.eof or self._transport.is_closing():
            raise httpcore.WriteError(_describe(connection.error) if connection.error else "closed")
        self._transport.write(buffer)
        drained = connection.drained
        if drained is not None:
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(drained)
            except TimeoutError:
                raise httpcore.WriteTimeout("timed out sending to the provider") from None
            if connection.error is not None:
                raise httpcore.WriteError(_describe(connection.error))

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            transport = await loop.start_tls(
                self._transport,
                self._connection,
                ssl_context,
                server_hostname=server_hostname,
                ssl_handshake_timeout=timeout,
            )
        except TimeoutError:
            self._transport.close()
            raise httpcore.ConnectTimeout("timed out in the TLS handshake") from None
        except (OSError, ssl.SSLError, ConnectionError) as exc:
            self._transport.close()
            raise httpcore.ConnectError(_describe(exc)) from None
        if transport is None:  # the connection closed during the handshake
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        self._connection.transport = transport
        return _Stream(transport, self._connection)

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        if info == "socket":
            return self._transport.get_extra_info("socket")
        if info == "is_readable":
            # An idle keep-alive connection with something to read has been
            # closed (or broken) by the server: httpcore then drops it.
            return bool(self._connection.chunks) or self._connection.eof
        return None


class AsyncioNetworkBackend(httpcore.AsyncNetworkBackend):
    """Connections as asyncio protocols (works with any asyncio loop, uvloop included)."""

    def __init__(self, *, max_buffered: int = MAX_BUFFERED) -> None:
        self._max_buffered = max_buffered

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        local = (local_address, 0) if local_address else None
        return await self._open(
            lambda loop, factory: loop.create_connection(factory, host, port, local_addr=local),
            f"{host}:{port}",
            timeout,
            socket_options,
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return await self._open(
            lambda loop, factory: loop.create_unix_connection(factory, path),
            path,
            timeout,
            socket_options,
        )

    async def _open(
        self,
        connect: Callable[
            [asyncio.AbstractEventLoop, Callable[[], _Connection]],
            Awaitable[tuple[asyncio.BaseTransport, Any]],
        ],
        where: str,
        timeout: float | None,
        socket_options: Iterable[_SocketOption] | None,
    ) -> httpcore.AsyncNetworkStream:
        """Connect with `connect`, mapping failures to httpcore's connect errors."""
        connection = _Connection(self._max_buffered)
        try:
            async with asyncio.timeout(timeout):
                transport, _ = await connect(asyncio.get_running_loop(), lambda: connection)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"timed out connecting to {where}") from None
        except OSError as exc:
            raise httpcore.ConnectError(_describe(exc)) from None
        stream_transport: asyncio.Transport = transport  # type: ignore[assignment]
        _apply(stream_transport, socket_options)
        return _Stream(stream_transport, connection)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _apply(transport: asyncio.Transport, options: Iterable[_SocketOption] | None) -> None:
    sock: socket.socket | None = transport.get_extra_info("socket")
    if sock is None:
        return
    for option in options or ():
        sock.setsockopt(*option)


def _describe(exc: BaseException) -> str:
    """An OS error as a short reason (what anyio's messages would have said)."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"[Errno {exc.errno}] {exc.strerror}"
    return str(exc) or type(exc).__name__
