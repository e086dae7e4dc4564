"""Route selection, retries and failover for one Chat stream.

The rule that shapes this module: a failure may be retried, or handed to the
next candidate route, only while nothing has reached the client. Once an event
has been yielded, any failure ends the stream with one `StreamError`.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field

from navagent.core.errors import NavAgentError
from navagent.core.events import ChatError, StreamError, StreamEvent
from navagent.core.messages import ChatRequest
from navagent.gateway.routes import Route, RouteTable
from navagent.gateway.upstream import Upstream, UpstreamFailure

__all__ = ["Dispatcher", "NoRouteError", "RetryPolicy", "StreamRecord"]


class NoRouteError(NavAgentError):
    """No enabled route serves the request's routing hint."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry one route before failing over."""

    attempts_per_route: int = 3
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    max_retry_after_s: float = 30.0
    """A `retry-after` longer than this fails over instead of waiting."""

    def delay(self, attempt: int, *, retry_after_s: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number `attempt` (1-based).

        The provider's `retry-after` wins when given; otherwise exponential
        backoff with full jitter (AWS architecture blog, "Exponential Backoff
        And Jitter"), so many clients retrying at once spread out.
        """
        if retry_after_s is not None:
            return retry_after_s
        return rng.uniform(0, min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1)))


@dataclass
class StreamRecord:
    """What the dispatcher did for one stream, for the gateway's log line."""

    route: str = "-"
    protocol: str = "-"
    model: str = "-"
    attempts: int = 0
    upstream: list[tuple[str, str, str]] = field(default_factory=list)
    """(kind, route, status) for each attempt, retry and failover, for the metrics."""


class Dispatcher:
    """Serves a `ChatRequest` from the first candidate route that works."""

    def __init__(
        self,
        routes: RouteTable,
        upstream: Upstream,
        *,
        policy: RetryPolicy = RetryPolicy(),
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.routes = routes
        self._upstream = upstream
        self._policy = policy
        self._sleep = sleep
        self._rng = rng or random.Random()

    async def stream(
        self, request: ChatRequest, *, record: StreamRecord | None = None
    ) -> AsyncGenerator[list[StreamEvent], None]:
        """Yield the events of one completion in batches; the last event is terminal.

        Raises:
            NoRouteError: before yielding anything, when no route serves the hint.
        """
        record = record if record is not None else StreamRecord()
        routes = self.routes  # one table for the whole stream, even if it is swapped
        candidates = routes.candidates(request.routing_hint)
        if not candidates:
            raise NoRouteError(routes.no_route_message(request.routing_hint))
        # One first-content budget for the whole stream: retries, backoff and
        # failover all spend it, so the client hears something within it.
        first_content_by = self._upstream.first_content_deadline()
        loop = asyncio.get_running_loop()
        last_error: ChatError | None = None
        for route in candidates:
            attempt = 0
            while attempt < self._policy.attempts_per_route and loop.time() < first_content_by:
                attempt += 1
                _note(record, route)
                sent_any = False
                try:
                    # aclosing: an abandoned attempt closes its HTTP response now,
                    # not whenever the generator happens to be collected.
                    attempt_stream = self._upstream.stream(
                        route, request, first_content_by=first_content_by
                    )
                    async with aclosing(attempt_stream) as batches:
                        async for batch in batches:
                            first = batch[0]
                            if not sent_any and isinstance(first, StreamError):
                                # A failure reported inside the stream, before the
                                # client saw anything: as good as an HTTP error.
                                raise UpstreamFailure(first.error)
                            if not sent_any:
                                record.upstream.append(("attempt", route.name, "200"))
                            sent_any = True
                            yield batch
                    return
                except UpstreamFailure as failure:
                    if sent_any:
                        yield [StreamError(error=failure.error)]
                        return
                    last_error = failure.error
                    status = _status(failure.error)
                    record.upstream.append(("attempt", route.name, status))
                    wait = self._retry_delay(failure, attempt)
                    if wait is None:
                        if route is not candidates[-1]:
                            record.upstream.append(("failover", route.name, status))
                        break
                    if loop.time() + wait >= first_content_by:
                        # Waiting would spend the whole budget: answer now instead.
                        yield [StreamError(error=last_error)]
                        return
                    record.upstream.append(("retry", route.name, status))
                    await self._sleep(wait)
        yield [StreamError(error=last_error or self._upstream.timeouts.first_content_error())]

    def _retry_delay(self, failure: UpstreamFailure, attempt: int) -> float | None:
        """Seconds to wait before retrying the same route, or None to fail over."""
        policy = self._policy
        if not failure.error.retryable or attempt >= policy.attempts_per_route:
            return None
        if failure.retry_after_s is not None and failure.retry_after_s > policy.max_retry_after_s:
            return None
        return policy.delay(attempt, retry_after_s=failure.retry_after_s, rng=self._rng)


def _status(error: ChatError) -> str:
    """An attempt's result as a bounded label: the HTTP status, else the error code."""
    return str(error.status_code) if error.status_code else error.code


def _note(record: StreamRecord, route: Route) -> None:
    record.route = route.name
    record.protocol = route.chat_protocol or "-"
    record.model = route.model
    record.attempts += 1
