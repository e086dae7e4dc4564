"""The gateway's upstream HTTP: aiohttp's connections and parser behind httpx's API.

Every layer above keeps speaking httpx (`AsyncClient`, `Request`,
`Response`, its exceptions; the harness serves cassettes as an httpx
transport). Only the bytes go through aiohttp, whose response parser is
llhttp in C: h11's pure-Python parser cost more per streamed token than the
gateway's own translation (issue 33). This is the approach openai-python
ships as `DefaultAioHttpClient` (the `httpx-aiohttp` package); that package's
transport is not used because it maps every connection error to
`ConnectTimeout` (a stream cut mid-body would read "could not connect"),
leaves the read buffer at aiohttp's default and has no socket options,
all of which the gateway's errors, back-pressure and tests depend on.

What the transport keeps from httpx's own:

- limits: at most `max_connections` connections, idle ones dropped after
  `keepalive_expiry` (aiohttp has no separate cap on idle connections);
- timeouts: httpx's `connect` bounds the TCP/TLS connect, `pool` the wait for
  a free connection plus the connect; `read` and `write` are the
  gateway's own (`navagent.gateway.upstream`);
- back-pressure: at most about `max_buffered` bytes of a response wait in
  memory before the socket stops being read, so TCP pushes back on the
  provider while the client is slow;
- errors: a refused or unreachable provider is `httpx.ConnectError`, a
  connect or pool timeout `httpx.ConnectTimeout`, a connection lost before
  or during the body `httpx.RemoteProtocolError` or `httpx.ReadError`, a bad
  certificate `httpx.ConnectError` naming it;
- nothing else: no redirects, no cookies, no proxy from the environment, no
  decompression (the gateway decodes `content-encoding` itself, a bounded piece
  at a time: `navagent.gateway._encoding`), and the URL is sent
  as httpx encoded it.
"""

from __future__ import annotations

import functools
import socket
import ssl
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:  # aiohttp is imported at the first request: `nav agent` may never make one
    import aiohttp
    import yarl
    from aiohttp.client_proto import ResponseHandler

__all__ = [
    "MAX_BUFFERED",
    "AiohttpTransport",
    "Answer",
    "SocketOption",
    "preload",
    "upstream_transport",
]

MAX_BUFFERED = 256 * 1024
"""Bytes of a response held before its socket is paused (TCP then pushes back)."""

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


def preload() -> None:
    """Import aiohttp now, in a process that will serve calls (`nav gateway serve`).

    Otherwise the first call pays the import (about 150 ms, with the garbage
    it leaves for a full collection), stalling every stream on the loop.
    """
    import aiohttp  # noqa: F401


def upstream_transport(
    limits: httpx.Limits,
    *,
    max_buffered: int = MAX_BUFFERED,
    socket_options: Iterable[SocketOption] | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> AiohttpTransport:
    """The transport of the gateway's upstream `httpx.AsyncClient` (and the harness's)."""
    return AiohttpTransport(
        limits, max_buffered=max_buffered, socket_options=socket_options, ssl_context=ssl_context
    )


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An httpx transport that sends each request through one pooled aiohttp session."""

    def __init__(
        self,
        limits: httpx.Limits,
        *,
        max_buffered: int = MAX_BUFFERED,
        socket_options: Iterable[SocketOption] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._limits = limits
        self._max_buffered = max_buffered
        self._socket_options = tuple(socket_options or ())
        self._ssl_context = ssl_context or httpx.create_ssl_context()
        self._session: aiohttp.ClientSession | None = None
        """Made on the first request: aiohttp binds it to the running loop."""

    def _new_session(self) -> aiohttp.ClientSession:
        import aiohttp  # about 150 ms, paid by the first request only

        limits = self._limits
        connector = aiohttp.TCPConnector(
            limit=limits.max_connections or 0,
            keepalive_timeout=limits.keepalive_expiry,
            ssl=self._ssl_context,
            socket_factory=self._socket if self._socket_options else None,
        )
        return aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None),
            auto_decompress=False,
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            # aiohttp pauses the socket at twice its read buffer.
            read_bufsize=max(1, self._max_buffered // 2),
            skip_auto_headers=("user-agent", "accept", "accept-encoding"),
        )

    def _socket(self, address: tuple[int, int, int, str, tuple[object, ...]]) -> socket.socket:
        family, kind, proto, _, _ = address
        sock = socket.socket(family=family, type=kind, proto=proto)
        for option in self._socket_options:
            sock.setsockopt(*option)
        return sock

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request`; the response's body streams from the open connection."""
        response = await self._send(
            request.method,
            str(request.url),
            request.headers.multi_items(),
            request.content,  # the gateway always sends a built body
            request.extensions.get("timeout", {}),
            request,
        )
        return httpx.Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=_Body(response, request),
            request=request,
            extensions={
                "http_version": b"HTTP/1.1",
                "reason_phrase": (response.reason or "").encode("latin-1", "replace"),
            },
        )

    async def open(
        self,
        method: str,
        url: str,
        headers: Iterable[tuple[str, str]],
        content: bytes,
        timeout: Mapping[str, float | None],
    ) -> Answer:
        """Send a request without httpx's `Request` and `Response` (the gateway's own calls).

        Building those two cost about 20 us of CPU per request on a quiet
        machine (bench/request_layers.py); failures are the same httpx
        exceptions, without a request attached. `timeout` is httpx's, as a dict.
        """
        return Answer(await self._send(method, url, headers, content, timeout, None))

    async def _send(
        self,
        method: str,
        url: str,
        headers: Iterable[tuple[str, str]],
        content: bytes,
        timeout: Mapping[str, float | None],
        request: httpx.Request | None,
    ) -> aiohttp.ClientResponse:
        if self._session is None:
            self._session = self._new_session()
        with _HttpxErrors(request):
            return await self._session.request(
                method,
                _aiohttp_url(url),
                headers=list(headers),
                data=content or None,
                allow_redirects=False,
                timeout=_aiohttp_timeout(
                    timeout.get("pool"), timeout.get("connect"), timeout.get("read")
                ),
            )

    async def aclose(self) -> None:
        """Close every pooled connection."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()


@functools.lru_cache(maxsize=256)
def _aiohttp_url(url: str) -> yarl.URL:
    """`url` as aiohttp takes it, sent as httpx encoded it (a route's URL repeats: cached)."""
    from yarl import URL

    return URL(url, encoded=True)


@functools.lru_cache(maxsize=16)
def _aiohttp_timeout(
    pool: float | None, connect: float | None, read: float | None
) -> aiohttp.ClientTimeout:
    import aiohttp

    return aiohttp.ClientTimeout(total=None, connect=pool, sock_connect=connect, sock_read=read)


class Answer:
    """An answer to `AiohttpTransport.open`: what the gateway reads of an `httpx.Response`.

    The status, the headers (case-insensitive, as aiohttp keeps them), the
    body as it arrives (`aiter_raw`) and `aclose`, which behave as the
    transport's `httpx.Response` does.
    """

    __slots__ = ("_body", "headers", "status_code")

    is_stream_consumed = False
    """Never: the body is read from the connection (httpx's mocks set this)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.status_code: int = response.status
        self.headers: Mapping[str, str] = response.headers
        self._body = _Body(response, None)

    def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive, undecoded."""
        return self._body.__aiter__()

    def ready_raw(self) -> bytes | None:
        """The body's bytes that have arrived unread, without waiting; None when none have.

        None too once the body has failed: the next read of `aiter_raw`
        raises it, after what came before it.

        Raises:
            StopAsyncIteration: the body has ended and all of it was read.
        """
        return self._body.ready()

    aiter_bytes = aiter_raw
    """The same: the transport never decodes (`auto_decompress=False`)."""

    async def aclose(self) -> None:
        """Give the connection back (the body was read) or close it (it was not)."""
        await self._body.aclose()


class _Body(httpx.AsyncByteStream):
    """A response body as aiohttp receives it: each read hands over what has arrived."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request | None) -> None:
        self._response = response
        self._request = request
        # Kept now: aiohttp lets go of the connection when the body fails.
        self._connection = response.connection.protocol if response.connection else None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        import aiohttp

        content = self._response.content
        with _HttpxErrors(self._request, self._connection):
            while True:
                try:
                    chunk = await content.readany()
                except aiohttp.ClientError:
                    # aiohttp raises a failure ahead of the bytes that came before
                    # it; those are the provider's last events: hand them on first.
                    left = _buffered(content)
                    if not left:
                        raise
                    yield left
                    raise
                if not chunk:
                    return
                yield chunk

    def ready(self) -> bytes | None:
        """What has arrived unread, without waiting (see `Answer.ready_raw`).

        It starts no read, so none is left half-done to be resumed later, as
        `BodyChunks.ready` has to leave one on any other body.
        """
        content = self._response.content
        if content.exception() is not None:
            return None
        chunk = content.read_nowait()
        if chunk:
            return chunk
        if content.at_eof():
            raise StopAsyncIteration
        return None

    async def aclose(self) -> None:
        # A body read to its end gives the connection back to the pool; one
        # abandoned half-way closes it, as httpx's own transport does.
        self._response.release()


class _HttpxErrors:
    """Raise aiohttp's failures as the httpx exceptions the gateway tells apart.

    A body cut by a socket error is a `ReadError` with that error's words
    (`[Errno 104] Connection reset by peer`), as httpx's own transport says
    it, so recordings and messages stay the same across transports. A class,
    not a generator: every body's read loop sits inside one, and closing a
    body half-read (a stream that ends before its last chunk) passes
    `GeneratorExit` through it, which a generator-based manager pays for.
    """

    __slots__ = ("_connection", "_request")

    def __init__(
        self, request: httpx.Request | None, connection: ResponseHandler | None = None
    ) -> None:
        self._request = request
        self._connection = connection

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, _tb: object
    ) -> None:
        import aiohttp

        if isinstance(exc, aiohttp.ClientError | OSError):
            raise _as_httpx(exc, self._request, self._connection) from exc


def _as_httpx(
    exc: Exception, request: httpx.Request | None, connection: ResponseHandler | None
) -> httpx.HTTPError:
    """The httpx exception for one of aiohttp's (or a socket's) failures."""
    import aiohttp

    if isinstance(exc, aiohttp.ClientPayloadError):
        cause = _socket_error(connection)
        if cause is not None:  # the socket failed (a reset): as httpx's own transport words it
            return httpx.ReadError(str(cause), request=request)
        return httpx.RemoteProtocolError(_reason(exc), request=request)
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return httpx.RemoteProtocolError(
            "the provider closed the connection without a complete response", request=request
        )
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(_reason(exc), request=request)
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return httpx.ReadTimeout(_reason(exc), request=request)
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return httpx.ConnectError(
            f"the provider's TLS certificate was refused: {exc.certificate_error}",
            request=request,
        )
    if isinstance(exc, aiohttp.ClientConnectorError):
        return httpx.ConnectError(_reason(exc), request=request)
    if isinstance(exc, aiohttp.ClientResponseError):  # e.g. an unparseable status line or header
        return httpx.RemoteProtocolError(_reason(exc), request=request)
    return httpx.ReadError(_reason(exc), request=request)


def _buffered(content: aiohttp.StreamReader) -> bytes:
    """What `content` holds unread, once it has failed.

    aiohttp has no public way to it: `readany` raises the failure first. Its
    buffer is read directly (tests/gateway/test_network.py pins that the bytes
    before a reset are handed on, so an aiohttp that changes this fails there).
    """
    if not getattr(content, "_buffer", None):  # an aiohttp without it: the bytes are lost
        return b""
    return content._read_nowait(-1)


def _socket_error(connection: ResponseHandler | None) -> OSError | None:
    """The socket error that ended `connection`, if one did.

    aiohttp words it only inside the payload error's message; the
    connection's protocol keeps it as its exception.
    """
    failure = connection.exception() if connection is not None else None
    return failure if isinstance(failure, OSError) else None


def _reason(exc: BaseException) -> str:
    """The first line of an aiohttp error, or its kind when it says nothing."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
