"""A fault-injecting provider over real sockets, for the gateway's fault matrix.

A raw asyncio HTTP/1.1 server (no framework, so it can misbehave at the byte
level: stall before its headers, lie about its content encoding, reset the
connection mid-body). A route selects its behaviour by endpoint path:
`http://127.0.0.1:PORT/f/<fault>` makes the gateway POST to
`/f/<fault>` plus its format's path (`/v1/messages`, ...), and the registry
row whose path matches picks the wire format, whose test kit
(`navagent.fixtures.provider.wire._kit`) gives the bytes. Every connection is
recorded (headers, body, bytes the gateway actually read, whether it hung
up), so tests can assert on what the gateway sent and on back-pressure.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import socket
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from navagent.core.wire_formats import WIRE_FORMATS, WireFormat
from navagent.fixtures.provider.wire._kit import FormatKit, TextStream, kit_for, sse_event

SECRET = "LiteralSecret-not-sk-shaped-7Qz9"
"""The routes' key: not credential-shaped, so only the redaction registry can catch it."""


@dataclass
class Connection:
    """One request the gateway made, and what became of it."""

    fault: str
    wire: WireFormat
    headers: dict[str, str]
    body: bytes
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    bytes_sent: int = 0
    hung_up: asyncio.Event = field(default_factory=asyncio.Event)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()  # blocks while the gateway is not reading: back-pressure
        self.bytes_sent += len(data)

    async def head(self, status: int = 200, content_type: str = "text/event-stream", **extra: str):
        lines = [f"HTTP/1.1 {status} X", f"content-type: {content_type}"]
        lines += [f"{name.replace('_', '-')}: {value}" for name, value in extra.items()]
        lines += ["transfer-encoding: chunked", "", ""]
        await self.send("\r\n".join(lines).encode())

    async def chunk(self, data: bytes) -> None:
        if data:
            await self.send(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    async def end(self) -> None:
        await self.send(b"0\r\n\r\n")

    async def full(self, status: int, body: bytes, content_type: str = "application/json", **extra):
        await self.head(status, content_type, **extra)
        await self.chunk(body)
        await self.end()

    @property
    def kit(self) -> FormatKit:
        return kit_for(self.wire.id)

    def text(self, *pieces: str) -> TextStream:
        """The wire's text stream, in opening events, one delta per piece, closing events."""
        return self.kit.text(pieces)

    def keepalive(self) -> bytes:
        return self.kit.keepalive

    def error_event(self) -> bytes:
        return self.kit.error_event

    def error_body(self, status: int, message: str) -> bytes:
        return self.kit.error_body(status, message)


Behaviour = Callable[[Connection], Awaitable[None]]


async def _ok(conn: Connection) -> None:
    await conn.head()
    for piece in conn.text("Hel", "lo").events:
        await conn.chunk(piece)
    await conn.end()


async def _stall_before_headers(conn: Connection) -> None:
    await conn.hung_up.wait()


async def _stall_after_headers(conn: Connection) -> None:
    await conn.head()
    await conn.hung_up.wait()


async def _keepalive_only(conn: Connection) -> None:
    await conn.head()
    for event in conn.text("x").opening:  # events without content (none for some formats)
        await conn.chunk(event)
    while not conn.hung_up.is_set():
        await conn.chunk(conn.keepalive())
        await asyncio.sleep(0.05)


async def _keepalive_after_first_token(conn: Connection) -> None:
    await conn.head()
    for piece in conn.text("first").unfinished:  # up to the first delta, no end
        await conn.chunk(piece)
    while not conn.hung_up.is_set():
        await conn.chunk(conn.keepalive())
        await asyncio.sleep(0.05)


async def _trickle_forever(conn: Connection) -> None:
    await conn.head()
    stream = conn.text("tick ")
    for piece in stream.opening:
        await conn.chunk(piece)
    while not conn.hung_up.is_set():
        await conn.chunk(stream.deltas[0])
        await asyncio.sleep(0.05)


async def _json_200(conn: Connection) -> None:
    body = {"id": "x", "object": "chat.completion", "choices": [{"message": {"content": "hi"}}]}
    await conn.full(200, json.dumps(body).encode())


async def _bad_gzip(conn: Connection) -> None:
    await conn.head(content_encoding="gzip")
    await conn.chunk(b"this is not gzip at all, whatever the header says")
    await conn.end()


async def _reset_before_headers(conn: Connection) -> None:
    conn.writer.transport.abort()


async def _reset_mid_stream(conn: Connection) -> None:
    await conn.head()
    for piece in conn.text("partial").unfinished:
        await conn.chunk(piece)
    await asyncio.sleep(0.05)
    conn.writer.transport.abort()


async def _unauthorized_echoing_key(conn: Connection) -> None:
    # Providers echo a rejected key; this one puts it right at the gateway's cut.
    message = "Incorrect API key provided. " + "x" * 960 + " " + SECRET + " and more"
    await conn.full(401, conn.error_body(401, message))


async def _rate_limited_long(conn: Connection) -> None:
    message = (
        "This request would exceed the rate limit for your organization of 50,000 input "
        "tokens per minute. For details, refer to: https://docs.anthropic.com/en/api/rate-limits. "
        "You can see the response headers for current usage. Please reduce the prompt length "
        "or the maximum tokens requested, or try again later. "
    ) * 4 + "You may also contact sales at https://www.anthropic.com/contact-sales to discuss."
    await conn.full(429, conn.error_body(429, message), retry_after="0")


async def _error_event_mid_stream(conn: Connection) -> None:
    await conn.head()
    for piece in conn.text("partial").unfinished:
        await conn.chunk(piece)
    await conn.chunk(conn.error_event())
    await conn.end()


async def _invalid_json(conn: Connection) -> None:
    await conn.head()
    for event in conn.text("ok").opening[:1]:  # an event without content, if the format has one
        await conn.chunk(event)
    await conn.chunk(sse_event("{this is not json"))
    await conn.end()


async def _truncated(conn: Connection) -> None:
    # Cut before the closing events: a body that ends after OpenAI's finish
    # reason (no [DONE]) is complete, as TGI 2.0 ends every stream (issue 23).
    await conn.head()
    for piece in conn.text("cut").unfinished:
        await conn.chunk(piece)
    await conn.end()


async def _giant_delta(conn: Connection) -> None:
    """One 3 MB text delta in one event: the client must get it split, or refused."""
    await conn.head()
    for piece in conn.text("y" * 3_000_000).events:
        await conn.chunk(piece)
    await conn.end()


async def _oversized_event(conn: Connection) -> None:
    """An event that never ends: 9 MiB of one data line."""
    await conn.head()
    await conn.chunk(b"data: " + b"z" * (9 * 2**20))
    await conn.hung_up.wait()


STACKED_GZIP_BOMB = base64.b64decode(
    "H4sIAAAAAAACA+3cLTKFARSA4XvdG4zgJ0gCy1DMUGSBbCzAGpgxkmITsmRG1ewAzQKMIEjGz71rkL73edLJJ545"
    "825eLY5mFiZvD+Px33B+/X37vrg0AgAAAAbu/OViMjsGjLZ+nvYPjgAAAIChO1lZns6PAl/HG3vWAQAAAIN3ubO9"
    "Ov8Q+Dg7nVoHAAAADN765+vu/Bbw+HO3dmgfAAAAMHjPggEAAACQIhgAAAAALYIBAAAA0CIYAAAAADGCAQAAANAi"
    "GAAAAAAtggEAAADQIhgAAAAAMYIBAAAA0CIYAAAAAC2CAQAAANAiGAAAAAAxggEAAADQIhgAAAAALYIBAAAA0CIY"
    "AAAAADGCAQAAANAiGAAAAAAtggEAAADQIhgAAAAAMYIBAAAA0CIYAAAAAC2CAQAAANAiGAAAAAAxggEAAADQIhgA"
    "AAAALYIBAAAA0CIYAAAAADGCAQAAANAiGAAAAAAtggEAAADQIhgAAAAAMYIBAAAA0CIYAAAAAC2CAQAAANAiGAAA"
    "AAAxggEAAADQIhgAAAAALYIBAAAA0CIYAAAAADGCAQAAANAiGAAAAAAtggEAAADQIhgAAAAAMYIBAAAA0CIYAAAA"
    "AC2CAQAAANAiGAAAAAAxggEAAADQIhgAAAAALYIBAAAA0CIYAAAAADGCAQAAANAiGAAAAAAtggEAAADQIhgAAAAA"
    "MYIBAAAA0CIYAAAAAC2CAQAAANAiGAAAAAAxggEAAADQIhgAAAAALYIBAAAA0CIYAAAAADGCAQAAANAiGAAAAAAt"
    "ggEAAADQIhgAAAAAMYIBAAAA0CIYAAAAAC2CAQAAANAiGAAAAAAxggEAAADQIhgAAAAALYIBAAAA0CIYAAAAADGC"
    "AQAAANAiGAAAAAAtggEAAADQIhgAAAAAMYIBAAAA0CIYAAAAAC2CAQAAANAiGAAAAAAxggEAAADQIhgAAAAALYIB"
    "AAAA0CIYAAAAADGCAQAAANAiGAAAAAAtggEAAADQIhgAAAAAMYIBAAAA0CIYAAAAAC2CAQAAANAiGAAAAAAxggEA"
    "AADQIhgAAAAALYIBAAAA0CIYAAAAADGCAQAAANAiGAAAAAAtggEAAADQIhgAAAAAMYIBAAAA0CIYAAAAAC2CAQAA"
    "ANAiGAAAAAAxggEAAADQIhgAAAAALYIBAAAA0CIYAAAAADGCAQAAANAiGAAAAAAtggEAAADQIhgAAAAAMYIBAAAA"
    "0CIYAAAAAC2CAQAAANAiGAAAAAAxggEAAADQIhgAAAAALTf/GQwYbV3cn86eDH4B2h0p53T2BwA="
)
"""980 bytes: gzip of the gzip of 512 MiB of zeros (`gzip_layers(bytes(2**29), 2)` at level 9)."""
GZIP_BOMB_BYTES = 128 * 2**20
"""What `gzip_bomb` inflates to: one event that never ends, 16 times the gateway's cap."""


def gzip_layers(data: bytes, layers: int) -> bytes:
    for _ in range(layers):
        data = zlib.compress(data, 9, wbits=zlib.MAX_WBITS | 16)
    return data


@functools.cache
def gzip_bomb() -> bytes:
    """About 128 KB of gzip holding `data: ` and 128 MiB of one line (made once, ~0.5 s)."""
    return gzip_layers(b"data: " + b"z" * GZIP_BOMB_BYTES, 1)


async def _stacked_gzip(conn: Connection) -> None:
    await conn.head(content_encoding="gzip, gzip")
    await conn.chunk(STACKED_GZIP_BOMB)
    await conn.end()


async def _unknown_encoding(conn: Connection) -> None:
    await conn.head(content_encoding="br")
    await conn.chunk(b"\x1b\x00\x00\x00 not really brotli")
    await conn.end()


async def _gzip_bomb(conn: Connection) -> None:
    await conn.head(content_encoding="gzip")
    await conn.chunk(gzip_bomb())
    await conn.end()


async def _empty_data_lines(conn: Connection) -> None:
    """An event that never ends, made of 16 MiB of empty `data:` lines."""
    await conn.head()
    block = b"data:\n" * (2**20 // 6)
    for _ in range(16):
        await conn.chunk(block)
    await conn.hung_up.wait()


FIREHOSE_WORDS = 60_000


async def _firehose(conn: Connection) -> None:
    """`FIREHOSE_WORDS` one-word deltas as fast as the socket takes them (~11 MB)."""
    await conn.head()
    stream = conn.text("word ")
    for piece in stream.opening:
        await conn.chunk(piece)
    for _ in range(FIREHOSE_WORDS // 500):
        await conn.chunk(stream.deltas[0] * 500)
    for piece in stream.closing:
        await conn.chunk(piece)
    await conn.end()


BEHAVIOURS: dict[str, Behaviour] = {
    "ok": _ok,
    "stall_before_headers": _stall_before_headers,
    "stall_after_headers": _stall_after_headers,
    "keepalive_only": _keepalive_only,
    "keepalive_after_first_token": _keepalive_after_first_token,
    "trickle_forever": _trickle_forever,
    "json_200": _json_200,
    "bad_gzip": _bad_gzip,
    "stacked_gzip": _stacked_gzip,
    "unknown_encoding": _unknown_encoding,
    "gzip_bomb": _gzip_bomb,
    "empty_data_lines": _empty_data_lines,
    "reset_before_headers": _reset_before_headers,
    "reset_mid_stream": _reset_mid_stream,
    "unauthorized_echoing_key": _unauthorized_echoing_key,
    "rate_limited_long": _rate_limited_long,
    "error_event_mid_stream": _error_event_mid_stream,
    "invalid_json": _invalid_json,
    "truncated": _truncated,
    "giant_delta": _giant_delta,
    "oversized_event": _oversized_event,
    "firehose": _firehose,
}


class FaultUpstream:
    """The server; `connections` records every request in arrival order."""

    def __init__(self) -> None:
        self.connections: list[Connection] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    def endpoint(self, fault: str) -> str:
        return f"http://127.0.0.1:{self.port}/f/{fault}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        request_line, *header_lines = head.split("\r\n")
        headers = {}
        for line in header_lines:
            if ":" in line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        path = urlsplit(request_line.split(" ")[1]).path
        fault = path.split("/")[2]
        conn = Connection(fault, _wire_of(path), headers, body, reader, writer)
        # Small kernel buffers, so back-pressure shows within a few hundred KB.
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        self.connections.append(conn)
        watcher = asyncio.create_task(_watch_hangup(conn))
        try:
            await BEHAVIOURS[fault](conn)
        finally:
            watcher.cancel()


def _wire_of(path: str) -> WireFormat:
    """The registry row whose path `path` is, under its `/f/<fault>` prefix."""
    rest = "/" + path.split("/", 3)[3]
    (row,) = [row for row in WIRE_FORMATS.values() if row.match_path(rest) is not None][:1]
    return row


async def _watch_hangup(conn: Connection) -> None:
    """Set `hung_up` when the gateway closes its side (it sends nothing after the request)."""
    with contextlib.suppress(Exception):
        await conn.reader.read()
    conn.hung_up.set()


@contextlib.asynccontextmanager
async def fault_upstream() -> AsyncIterator[FaultUpstream]:
    server = FaultUpstream()
    await asyncio.to_thread(gzip_bomb)  # once per process, before any deadline runs
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
