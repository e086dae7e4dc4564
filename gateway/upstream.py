"""One streamed completion from one provider route, over a shared httpx client.

`Upstream.stream` makes a single attempt: build the provider request, POST it,
decode the SSE body and translate it into neutral events. It does not retry;
`navagent.gateway.dispatch` decides about retries and failover, because only it
knows whether anything has reached the client yet.

Time limits (`Timeouts`), each a bound on one kind of wait:

- `connect_s`: the TCP/TLS connect of one attempt;
- `first_token_s`: from the call's arrival to the first content, across every
  attempt of the stream (the dispatcher passes `first_content_by`):
  connecting, waiting for response headers, reading an error body and
  keep-alives all count, so a provider that accepts the connection and then
  stalls still times out;
- `idle_s`: once streaming, the longest wait for content *progress* (text,
  reasoning or tool-call arguments, as the translator counts it). Pings, SSE
  comments and empty deltas keep a socket busy without progress and do not
  reset it. One timer per stream enforces both (`_Watchdog`), not one per read.

The stream's maximum duration is the service's to enforce: it also covers time
spent waiting for a slow client.

Every failure becomes an `UpstreamFailure` whose `ChatError` says which phase
failed, in words a client can act on, and has passed through the one
redaction path (`navagent.gateway.errors.clean_message`).
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import functools
import json
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass

import httpx

from navagent.core.errors import NavAgentError
from navagent.core.events import ChatError, StreamEvent
from navagent.core.messages import ChatRequest
from navagent.gateway._chunks import BodyChunks
from navagent.gateway._encoding import (
    ACCEPT_ENCODING,
    BoundedDecoder,
    EncodingRefused,
    decoded_pieces,
    decoder_for,
)
from navagent.gateway._network import AiohttpTransport, Answer
from navagent.gateway.coalesce import coalesce_deltas
from navagent.gateway.errors import clean_message
from navagent.gateway.protocols import PROTOCOLS, ChatProtocol, StreamTranslator
from navagent.gateway.routes import Route
from navagent.gateway.sse import SSEDecoder

__all__ = [
    "Timeouts",
    "UnsendableRequestError",
    "Upstream",
    "UpstreamFailure",
    "parse_retry_after",
]

_ERROR_BODY_LIMIT = 64 * 1024
GATHER_BYTES = 16 * 1024
"""Already-buffered body translated in one go before the stream lets the event
loop run others: one fast stream cannot hold the loop for long."""
BATCH_BYTES = 256 * 1024
"""At most this much body (a few thousand SSE events) is merged into one batch."""
FLUSH_FIRST_S = 0.001
"""After the first delta, the rest of its read waits this long before it is
translated. grpc.aio hands written messages to the wire from a Python thread
(its poller), which needs the GIL: a loop that goes straight on to translate
a 200-event burst holds the GIL until it is done, and the first delta waits
with it. Sleeping lets the loop go idle (serving other streams meanwhile) and
the poller send; measured with bench/first_delta.py, the burst's added time to
first delta went from +1.3-1.6 ms (no wait, or `sleep(0)`) to +0.2-0.5 ms."""
MAX_EVENT_BYTES = 8 * 1024 * 1024
"""Largest single SSE event accepted: far above any real one, and it bounds what
one event can make the gateway hold (the decoder itself has no cap)."""
_Response = httpx.Response | Answer
"""An upstream answer: httpx's, or the transport's own (`Upstream._send`)."""


@dataclass(frozen=True)
class Timeouts:
    """Upstream time limits, in seconds (see the module docstring)."""

    connect_s: float = 10.0
    first_token_s: float = 60.0
    idle_s: float = 60.0

    def idle_error(self) -> ChatError:
        """The failure of a stream that made no content progress within `idle_s`."""
        return _idle_error(self.idle_s)

    def first_content_error(self) -> ChatError:
        """The failure of a stream that produced no content within `first_token_s`."""
        return _first_content_error(self.first_token_s)


# Every stream holds both errors ready from its start; made once, not per request.
@functools.lru_cache(maxsize=16)
def _idle_error(idle_s: float) -> ChatError:
    return ChatError(
        message=(
            f"the provider sent nothing for {idle_s:g}s (--idle-timeout; keep-alives do not count)"
        ),
        code="timeout",
        retryable=True,
    )


@functools.lru_cache(maxsize=16)
def _first_content_error(first_token_s: float) -> ChatError:
    return ChatError(
        message=(
            f"the provider produced no output within {first_token_s:g}s "
            "(connecting, response headers and first token; --first-token-timeout)"
        ),
        code="timeout",
        retryable=True,
    )


class UpstreamFailure(Exception):
    """An attempt failed; `error` is what the client would see."""

    def __init__(self, error: ChatError, *, retry_after_s: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after_s = retry_after_s


class UnsendableRequestError(NavAgentError, ValueError):
    """The request cannot be encoded for the provider (the client's fault, not the provider's)."""


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after` (delta-seconds or an HTTP date), if given."""
    value = headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if seconds == seconds else None  # NaN is no answer
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, OverflowError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


class Upstream:
    """Streams completions from provider routes through one pooled httpx client.

    With `transport` (the client's own, which the gateway made and nothing
    else wraps), each request goes to it directly (`AiohttpTransport.open`),
    with the client's default headers: the client's `send` adds nothing such
    a client uses (no auth, hooks, redirects or base URL) and, with httpx's
    `Request` and `Response`, cost about 100 us of CPU per request
    (bench/request_layers.py). Nor does it keep a provider's cookies to send
    back, which the transport never meant to (`_network`). A client the
    caller configured (the harness's event hooks, a test's mock) is always
    sent through.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        timeouts: Timeouts = Timeouts(),
        transport: AiohttpTransport | None = None,
    ) -> None:
        self._client = client
        self.timeouts = timeouts
        # No httpx read timeout: every read already waits under one of our own
        # deadlines (first content, then content progress), and httpx's costs a
        # timer per network read.
        self._httpx_timeout = httpx.Timeout(
            connect=timeouts.connect_s,
            read=None,
            write=timeouts.idle_s,
            pool=timeouts.connect_s,
        )
        self._transport = transport
        self._timeout_dict = self._httpx_timeout.as_dict()
        self._default_headers = {name.lower(): value for name, value in client.headers.items()}
        """The client's own headers (user-agent, accept, ...), under the request's."""

    @staticmethod
    def protocol_for(route: Route) -> ChatProtocol:
        """The chat protocol this route is served with."""
        name = route.chat_protocol
        if name is None:  # RouteTable.candidates never returns such a route
            raise ValueError(f"route {route.name} has no chat protocol")
        return PROTOCOLS[name]

    def first_content_deadline(self) -> float:
        """The loop time by which a stream starting now must produce content."""
        return asyncio.get_running_loop().time() + self.timeouts.first_token_s

    async def stream(
        self, route: Route, request: ChatRequest, *, first_content_by: float | None = None
    ) -> AsyncGenerator[list[StreamEvent], None]:
        """Yield the neutral events of one attempt in non-empty batches, one per network wait.

        Adjacent deltas within a batch are merged (`coalesce_deltas`); the last
        event of the last batch is terminal.

        Raises:
            UpstreamFailure: the attempt failed (connection, HTTP status,
                timeout, malformed or non-SSE answer). A failure the provider
                reports inside a 200 stream arrives as a `StreamError` event.
            UnsendableRequestError: the request cannot be encoded as JSON.
        """
        first_content_by = first_content_by or self.first_content_deadline()
        protocol = self.protocol_for(route)
        outgoing = protocol.build_request(
            request,
            endpoint=route.endpoint,
            model=route.model,
            api_key=route.api_key.get_secret_value(),
            options=route.options,
        )
        content = _encode_json(outgoing.body)
        url, headers = _endpoint_credentials(
            outgoing.url,
            {
                **outgoing.headers,
                "content-type": "application/json",
                "accept-encoding": ACCEPT_ENCODING,
            },
        )
        response: _Response | None = None
        try:
            async with asyncio.timeout_at(first_content_by):
                response = await self._send(url, headers, content)
                if response.status_code != 200:
                    raise await _status_failure(protocol, route, response)
                if not _is_event_stream(response):
                    raise await _not_a_stream(protocol, response)
            decoder = _stream_decoder(response)
            translator = protocol.translator_for(
                endpoint=route.endpoint,
                model=route.model,
                api_key=route.api_key.get_secret_value(),
                options=route.options,
            )
            async for batch in _translate(
                translator, response, decoder, first_content_by, self.timeouts
            ):
                yield batch
        except TimeoutError:
            raise UpstreamFailure(self.timeouts.first_content_error()) from None
        except httpx.TimeoutException as exc:
            raise UpstreamFailure(_timeout_error(exc, self.timeouts)) from None
        except httpx.HTTPError as exc:
            raise UpstreamFailure(_transport_error(exc, answered=response is not None)) from None
        finally:
            if response is not None:
                await response.aclose()

    async def _send(self, url: httpx.URL, headers: dict[str, str], content: bytes) -> _Response:
        """POST `content`; the response's body still streams."""
        if self._transport is None or self._client.is_closed:  # closed: the client says so
            request = self._client.build_request(
                "POST", url, headers=headers, content=content, timeout=self._httpx_timeout
            )
            return await self._client.send(request, stream=True)
        merged = {**self._default_headers, **{name.lower(): v for name, v in headers.items()}}
        return await self._transport.open(
            "POST", str(url), merged.items(), content, self._timeout_dict
        )


async def _translate(
    translator: StreamTranslator,
    response: _Response,
    decoder: BoundedDecoder,
    first_content_by: float,
    timeouts: Timeouts,
) -> AsyncGenerator[list[StreamEvent], None]:
    """Decode and translate a 200 body until the translator emits its terminal event.

    Yields one batch per wait for the network: the chunk that ended the wait
    and every chunk already buffered behind it (up to `BATCH_BYTES`, taken
    `GATHER_BYTES` at a time with the loop free in between), so a provider
    writing faster than the client reads costs merged deltas, not a message
    per token. The exception is the first content: it leaves alone, as soon
    as it is translated, and the rest of its read follows as the next batch
    (`FLUSH_FIRST_S` later), so a burst after a pause (fast providers,
    buffering proxies) costs the client no time to first delta. Each wait
    runs under a deadline (first content, then content progress); no wait
    spans a yield, so a slow client is never blamed on the provider.

    The body is decoded here, a bounded piece at a time (`_encoding`), not
    by httpx: each piece meets the event cap before the next is inflated.
    """
    events = _BodyEvents(translator)
    pieces = _decoded_body(response, decoder)
    # The gateway's own transport says what it holds without a read, when the bytes are its own.
    held = response.ready_raw if isinstance(response, Answer) and decoder.identity else None
    chunks = BodyChunks(pieces, held=held)
    loop = asyncio.get_running_loop()
    progress = translator.progress
    deadline, expired = first_content_by, timeouts.first_content_error()
    idle_error = timeouts.idle_error()
    streaming = False  # True once content arrived: then `deadline` is the idle deadline
    watchdog = _Watchdog(loop)
    try:
        while not translator.done:
            # A silent socket fails after idle_s in either phase (what httpx's
            # read timeout used to do), progress or not.
            silent_by = loop.time() + timeouts.idle_s
            if events.held:  # the rest of the read that brought the first content
                await asyncio.sleep(FLUSH_FIRST_S)
                batch = events.release()
            else:
                try:
                    with watchdog.reading(min(deadline, silent_by)):
                        chunk = await chunks.next()
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    failure = expired if deadline <= silent_by else idle_error
                    raise UpstreamFailure(failure) from None
                batch = events.absorb(chunk, first_content=not streaming)
            ended: bool | None = False
            if streaming or translator.progress == progress:  # else the first content: send it
                ended = await events.fill(chunks, batch, first_content=not streaming)
            if translator.progress != progress:
                progress = translator.progress
                deadline, expired = loop.time() + timeouts.idle_s, idle_error
                streaming = True
            if batch:
                handed_over = loop.time()
                yield coalesce_deltas(batch)
                if streaming:
                    # Time spent waiting for the client (back-pressure) is not the
                    # provider's silence: the idle clock stops while we are away.
                    deadline += loop.time() - handed_over
            if ended:
                break
        if not translator.done:
            yield coalesce_deltas(events.finish())
        else:
            _finish_body(chunks)
    finally:
        watchdog.close()
        await chunks.abandon()
        await _close(pieces)


_BLANK_LINE = re.compile(rb"\r\n\r\n|\n\n|\r\r")
"""An SSE event's end, in any of the three line endings (one pass finds the first)."""


def _event_end(data: bytes, start: int) -> int:
    """Where the first SSE event from `start` ends (after its blank line), or `len(data)`."""
    blank = _BLANK_LINE.search(data, start)
    return len(data) if blank is None else blank.end()


def _finish_body(chunks: BodyChunks) -> None:
    """Read what is left of a body that is already here, without waiting for more.

    The terminal event usually comes just before the end of the HTTP body (the
    chunked encoding's last chunk). Reading that too lets the connection go
    back to the pool for the next request, instead of being closed as a
    response abandoned half-read.
    """
    left = GATHER_BYTES
    try:
        while left > 0 and (chunk := chunks.ready()) is not None:
            left -= len(chunk)
    except StopAsyncIteration:
        pass


class _BodyEvents:
    """SSE decoding and translation of one body, chunk by chunk.

    `absorb(..., first_content=True)` decodes and translates event by event
    and stops at the one that brings the first content, holding the rest of
    the chunk's bytes; `release` decodes and translates them.
    """

    __slots__ = ("_decoder", "_held", "_translator")

    def __init__(self, translator: StreamTranslator) -> None:
        self._decoder = SSEDecoder()
        self._translator = translator
        self._held = b""

    @property
    def held(self) -> bool:
        """True while bytes of a chunk wait to be decoded (see `release`)."""
        return bool(self._held)

    def absorb(
        self,
        chunk: bytes,
        batch: list[StreamEvent] | None = None,
        *,
        first_content: bool = False,
    ) -> list[StreamEvent]:
        """`batch` (or a new list) with the events of `chunk` added.

        With `first_content`, the chunk is taken one event at a time, and
        what follows the event that makes content progress is held for
        `release`. Where it is cut never matters to the result: the decoder
        takes bytes split anywhere.
        """
        batch = [] if batch is None else batch
        if not first_content:
            self._translate(chunk, batch)
            return batch
        progress, start = self._translator.progress, 0
        while start < len(chunk) and self._translator.progress == progress:
            end = _event_end(chunk, start)
            self._translate(chunk[start:end], batch)
            start = end
        self._held = chunk[start:]
        return batch

    def release(self) -> list[StreamEvent]:
        """The events of what `absorb` held back, translated."""
        held, self._held = self._held, b""
        return self._translate(held, [])

    def _translate(self, data: bytes, batch: list[StreamEvent]) -> list[StreamEvent]:
        decoder, translator = self._decoder, self._translator
        for sse in decoder.feed(data):
            batch.extend(translator.handle(sse))
        if decoder.pending_bytes > MAX_EVENT_BYTES:
            raise UpstreamFailure(
                ChatError(
                    message=(
                        f"the provider sent a single event larger than "
                        f"{MAX_EVENT_BYTES // 2**20} MiB; the gateway refuses it"
                    ),
                    code="upstream_unavailable",
                )
            )
        return batch

    async def fill(
        self, chunks: BodyChunks, batch: list[StreamEvent], *, first_content: bool
    ) -> bool | None:
        """Add chunks already buffered, up to `BATCH_BYTES`, with the loop free in between.

        Returns as `gather` does.
        """
        for slice_ in range(BATCH_BYTES // GATHER_BYTES):
            if slice_:
                await asyncio.sleep(0)  # more is buffered: let other streams run first
            ended = self.gather(chunks, batch, first_content=first_content)
            if ended is not None:
                return ended
        return None

    def gather(
        self, chunks: BodyChunks, batch: list[StreamEvent], *, first_content: bool = False
    ) -> bool | None:
        """Add chunks already buffered, up to `GATHER_BYTES`.

        With `first_content`, only up to the first content, as in `absorb`.
        Returns True at the body's end, False when nothing more is buffered
        (or the translator is done, or the first content came), None when the
        slice is full and more may be.
        """
        translator = self._translator
        progress = translator.progress
        gathered = 0
        while not translator.done:
            if gathered >= GATHER_BYTES:
                return None
            try:
                chunk = chunks.ready()
            except StopAsyncIteration:
                return True
            if chunk is None:
                return False
            self.absorb(chunk, batch, first_content=first_content)
            if first_content and translator.progress != progress:
                return False
            gathered += len(chunk)
        return False

    def finish(self) -> list[StreamEvent]:
        """The events of an unterminated last event, then the translator's own end."""
        translator = self._translator
        batch = [event for sse in self._decoder.finish() for event in translator.handle(sse)]
        return batch + translator.finish()


class _Watchdog:
    """A read deadline that costs nothing per read: one timer, re-armed only when it fires.

    `asyncio.timeout_at` around every read schedules and cancels a timer per
    network read (one per token on a paced stream). Here the timer is armed
    once; when it fires early (the deadline has moved on with progress) it
    re-arms for the current deadline, and it only cancels the read in progress
    when the deadline has really passed. Between reads (while the stream's
    events are handed on) it never cancels anything.
    """

    __slots__ = ("_deadline", "_fired", "_handle", "_loop", "_reading", "_task")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._task: asyncio.Task[object] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._deadline = 0.0
        self._reading = False
        self._fired = False

    def reading(self, deadline: float) -> _Watchdog:
        """Guard the next read with `deadline` (loop time)."""
        self._deadline = deadline
        return self

    def __enter__(self) -> None:
        if self._task is None:
            self._task = asyncio.current_task()
        self._reading = True
        handle = self._handle
        if handle is None or handle.when() > self._deadline:
            if handle is not None:
                handle.cancel()
            self._handle = self._loop.call_at(self._deadline, self._expire)

    def __exit__(self, kind: type[BaseException] | None, *_rest: object) -> None:
        self._reading = False
        if self._fired:
            self._fired = False
            task = self._task
            if kind is asyncio.CancelledError and task is not None and task.uncancel() == 0:
                raise TimeoutError

    def _expire(self) -> None:
        self._handle = None
        if not self._reading:
            return  # armed again by the next read
        if self._loop.time() < self._deadline:
            self._handle = self._loop.call_at(self._deadline, self._expire)
        elif self._task is not None:
            self._fired = True
            self._task.cancel()

    def close(self) -> None:
        """Drop the timer (the stream is over)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


def _endpoint_credentials(url: str, headers: dict[str, str]) -> tuple[httpx.URL, dict[str, str]]:
    """The request URL without `user:password@`, and the headers with them as Basic auth.

    An endpoint's credentials are for what answers at it (a proxy in front
    of the provider): they go as `Authorization: Basic`, never in the request
    line. httpx would turn them into Basic auth too, replacing a Bearer key;
    routes refuse that combination, and here the protocol's own
    `authorization` header always wins.
    """
    parsed, login = _split_credentials(url)
    if login is not None and "authorization" not in headers:
        headers = {**headers, "authorization": f"Basic {login}"}
    return parsed, headers


@functools.lru_cache(maxsize=256)
def _split_credentials(url: str) -> tuple[httpx.URL, str | None]:
    """`url` parsed, without its `user:password@`, and those as a Basic login (or None).

    Cached: a route's URL is the same on every request, and parsing it anew
    cost about 20 us of CPU per request (bench/request_layers.py).
    """
    parsed = httpx.URL(url)
    if not parsed.userinfo:
        return parsed, None
    login = base64.b64encode(f"{parsed.username}:{parsed.password}".encode()).decode("ascii")
    return parsed.copy_with(username=None, password=None), login


def _encode_json(body: object) -> bytes:
    """The request body as UTF-8 JSON; NaN, infinities and lone surrogates are refused."""
    try:
        return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, TypeError, UnicodeEncodeError) as exc:
        raise UnsendableRequestError(
            f"the request cannot be sent as JSON: {clean_message(str(exc))}"
        ) from None


def _decoded_body(response: _Response, decoder: BoundedDecoder) -> AsyncIterator[bytes]:
    """The body's bytes, decoded by `decoder` a bounded piece at a time.

    A body that is not encoded is read as it comes, with no layer between.
    """
    if response.is_stream_consumed:  # made from bytes (a test's mock): httpx has decoded them
        return response.aiter_bytes()
    if decoder.identity:
        return response.aiter_raw()
    return decoded_pieces(response.aiter_raw(), decoder)


async def _close(body: AsyncIterator[bytes]) -> None:
    """Close `body` when it can be (an async generator, or a transport's own iterator)."""
    aclose = getattr(body, "aclose", None)
    if aclose is not None:
        await aclose()


def _stream_decoder(response: _Response) -> BoundedDecoder:
    """The decoder of an event stream's body; a stacked or unknown encoding fails the attempt."""
    try:
        return decoder_for(response.headers.get("content-encoding", ""))
    except EncodingRefused as exc:
        raise UpstreamFailure(
            ChatError(
                message=clean_message(f"the provider's event stream was refused: {exc}"),
                code="upstream_unavailable",
                retryable=False,
            )
        ) from None


def _is_event_stream(response: _Response) -> bool:
    media = response.headers.get("content-type", "text/event-stream").split(";")[0]
    return media.strip().lower() in ("text/event-stream", "")


async def _read_bounded(response: _Response) -> bytes:
    """At most `_ERROR_BODY_LIMIT` decoded bytes of a body (none when its encoding is refused)."""
    try:
        decoder = decoder_for(response.headers.get("content-encoding", ""))
    except EncodingRefused:
        return b""
    body = bytearray()
    pieces = _decoded_body(response, decoder)
    try:
        async for piece in pieces:
            body += piece[: _ERROR_BODY_LIMIT - len(body)]
            if len(body) >= _ERROR_BODY_LIMIT:
                break
    finally:
        await _close(pieces)
    return bytes(body)


async def _status_failure(
    protocol: ChatProtocol, route: Route, response: _Response
) -> UpstreamFailure:
    error = protocol.error_from_response(response.status_code, await _read_bounded(response))
    if error.code == "auth":
        # Say whose key was refused, never the key: the route's, not the client's token.
        error = error.model_copy(
            update={
                "message": clean_message(
                    f"the provider refused the API key of route {route.name} "
                    f"({route.key_source}): {error.message}"
                )
            }
        )
    return UpstreamFailure(error, retry_after_s=parse_retry_after(response.headers))


async def _not_a_stream(protocol: ChatProtocol, response: _Response) -> UpstreamFailure:
    """A 200 answer that is not an event stream: an error body, or a wrong endpoint."""
    body = await _read_bounded(response)
    error = protocol.error_from_response(502, body)
    media = response.headers.get("content-type", "").split(";")[0].strip() or "no content type"
    return UpstreamFailure(
        ChatError(
            message=clean_message(
                f"the provider answered HTTP 200 with {media}, not an event stream "
                f"(is the route's endpoint a streaming chat API?): {error.message}"
            ),
            status_code=200,
            code=error.code if error.code != "upstream_unavailable" else "invalid_request",
            retryable=False,
        )
    )


def _timeout_error(exc: httpx.TimeoutException, timeouts: Timeouts) -> ChatError:
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return ChatError(
            message=f"could not connect to the provider within {timeouts.connect_s:g}s",
            code="upstream_unavailable",
            retryable=True,
        )
    return timeouts.idle_error()


def _transport_error(exc: httpx.HTTPError, *, answered: bool) -> ChatError:
    reason = _reason(exc)
    if isinstance(exc, httpx.ConnectError):
        message = f"cannot connect to the provider: {reason}"
    elif isinstance(exc, httpx.DecodingError):
        message = f"the provider's response could not be decoded: {reason}"
    elif answered:
        message = f"the connection to the provider broke mid-stream: {reason}"
    else:
        message = f"the connection to the provider broke before it answered: {reason}"
    return ChatError(
        message=clean_message(message),
        code="upstream_unavailable",
        retryable=not isinstance(exc, httpx.DecodingError),
    )


def _reason(exc: Exception) -> str:
    # Only the first line: httpx messages carry no request body.
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
