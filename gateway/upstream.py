"""One streamed completion from one provider route, over a shared httpx client.

`Upstream.stream` makes a single attempt: build the provider request, POST it,
decode the SSE body and translate it into neutral events. It does not retry;
`navagent.gateway.dispatch` decides about retries and failover, because only it
knows whether anything has reached the client yet.

Timeouts: `connect_s` bounds the TCP/TLS connect, `idle_s` the silence between
two chunks of the body (httpx's read timeout, enforced at the socket with no
per-chunk cost), and `first_token_s` the wait from sending the request to the
first content event (pings and `message_start` do not count, so a provider
that keeps the connection alive without producing anything still times out).
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass

import httpx

from navagent.core.events import (
    CONTENT_EVENTS,
    ChatError,
    StreamError,
    StreamEvent,
)
from navagent.core.messages import ChatRequest
from navagent.gateway.coalesce import coalesce_deltas
from navagent.gateway.protocols import PROTOCOLS, ChatProtocol, StreamTranslator
from navagent.gateway.routes import Route
from navagent.gateway.sse import SSEDecoder

__all__ = ["Timeouts", "Upstream", "UpstreamFailure", "parse_retry_after"]

_ERROR_BODY_LIMIT = 64 * 1024
_CONTENT_EVENTS = CONTENT_EVENTS


@dataclass(frozen=True)
class Timeouts:
    """Upstream time limits, in seconds."""

    connect_s: float = 10.0
    first_token_s: float = 60.0
    idle_s: float = 60.0


class UpstreamFailure(Exception):
    """An attempt failed; `error` is what the client would see."""

    def __init__(self, error: ChatError, *, retry_after_s: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after_s = retry_after_s


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after` (delta-seconds or an HTTP date), if given."""
    value = headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


class Upstream:
    """Streams completions from provider routes through one pooled httpx client."""

    def __init__(self, client: httpx.AsyncClient, *, timeouts: Timeouts = Timeouts()) -> None:
        self._client = client
        self._timeouts = timeouts
        self._httpx_timeout = httpx.Timeout(
            connect=timeouts.connect_s,
            read=timeouts.idle_s,
            write=timeouts.idle_s,
            pool=timeouts.connect_s,
        )

    @staticmethod
    def protocol_for(route: Route) -> ChatProtocol:
        """The chat protocol this route is served with."""
        name = route.chat_protocol
        if name is None:  # RouteTable.candidates never returns such a route
            raise ValueError(f"route {route.name} has no chat protocol")
        return PROTOCOLS[name]

    async def stream(
        self, route: Route, request: ChatRequest
    ) -> AsyncGenerator[list[StreamEvent], None]:
        """Yield the neutral events of one attempt, one non-empty batch per network read.

        Adjacent deltas within a batch are merged (`coalesce_deltas`); the last
        event of the last batch is terminal.

        Raises:
            UpstreamFailure: the attempt failed (connection, HTTP status,
                timeout, malformed stream). A failure the provider reports
                inside a 200 stream arrives as a `StreamError` event instead.
        """
        protocol = self.protocol_for(route)
        key = route.api_key.get_secret_value()
        outgoing = protocol.build_request(
            request, endpoint=route.endpoint, model=route.model, api_key=key
        )
        deadline = asyncio.get_running_loop().time() + self._timeouts.first_token_s
        try:
            async with self._client.stream(
                "POST",
                outgoing.url,
                headers=dict(outgoing.headers),
                json=outgoing.body,
                timeout=self._httpx_timeout,
            ) as response:
                if response.status_code != 200:
                    failure = await self._status_failure(protocol, response)
                    raise UpstreamFailure(
                        _scrubbed(failure.error, key), retry_after_s=failure.retry_after_s
                    )
                translator = protocol.translator_for(endpoint=route.endpoint, model=route.model)
                async for batch in _translate(translator, response, first_token_deadline=deadline):
                    last = batch[-1]
                    if isinstance(last, StreamError):
                        batch[-1] = StreamError(error=_scrubbed(last.error, key))
                    yield batch
        except TimeoutError:
            limit = self._timeouts.first_token_s
            raise UpstreamFailure(
                ChatError(
                    message=f"the provider produced no output within {limit:g}s",
                    code="timeout",
                    retryable=True,
                )
            ) from None
        except httpx.TimeoutException as exc:
            raise UpstreamFailure(_timeout_error(exc, self._timeouts)) from None
        except httpx.TransportError as exc:
            raise UpstreamFailure(_transport_error(exc)) from None

    @staticmethod
    async def _status_failure(protocol: ChatProtocol, response: httpx.Response) -> UpstreamFailure:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk[: _ERROR_BODY_LIMIT - len(body)]
            if len(body) >= _ERROR_BODY_LIMIT:
                break
        error = protocol.error_from_response(response.status_code, bytes(body))
        return UpstreamFailure(error, retry_after_s=parse_retry_after(response.headers))


async def _translate(
    translator: StreamTranslator, response: httpx.Response, *, first_token_deadline: float
) -> AsyncGenerator[list[StreamEvent], None]:
    """Decode and translate a 200 body until the translator emits its terminal event.

    Yields one batch per network read that produced events.

    Raises:
        TimeoutError: no content event before `first_token_deadline` (loop time).
    """
    decoder = SSEDecoder()
    chunks = response.aiter_bytes()
    deadline: float | None = first_token_deadline
    while not translator.done:
        try:
            if deadline is None:
                chunk = await anext(chunks)
            else:
                # The timeout scope covers only this await, never a yield.
                async with asyncio.timeout_at(deadline):
                    chunk = await anext(chunks)
        except StopAsyncIteration:
            break
        batch = [event for sse in decoder.feed(chunk) for event in translator.handle(sse)]
        if batch:
            if deadline is not None and any(isinstance(e, _CONTENT_EVENTS) for e in batch):
                deadline = None
            yield coalesce_deltas(batch)
    if not translator.done:
        batch = [event for sse in decoder.finish() for event in translator.handle(sse)]
        yield coalesce_deltas(batch + translator.finish())


def _scrubbed(error: ChatError, key: str) -> ChatError:
    """`error` without the route's key: some providers echo a rejected key back."""
    if not key or key not in error.message:
        return error
    return error.model_copy(update={"message": error.message.replace(key, "[redacted]")})


def _timeout_error(exc: httpx.TimeoutException, timeouts: Timeouts) -> ChatError:
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return ChatError(
            message=f"could not connect to the provider within {timeouts.connect_s:g}s",
            code="upstream_unavailable",
            retryable=True,
        )
    return ChatError(
        message=f"the provider sent nothing for {timeouts.idle_s:g}s",
        code="timeout",
        retryable=True,
    )


def _transport_error(exc: httpx.TransportError) -> ChatError:
    if isinstance(exc, httpx.ConnectError):
        return ChatError(
            message=f"cannot connect to the provider: {_reason(exc)}",
            code="upstream_unavailable",
            retryable=True,
        )
    return ChatError(
        message=f"connection to the provider failed mid-stream: {_reason(exc)}",
        code="upstream_unavailable",
        retryable=True,
    )


def _reason(exc: Exception) -> str:
    # httpx messages carry no URL query or headers; keep only the first line.
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]
