"""The bounded hand-over between a stream's upstream reader and its client writer.

A reader task pulls from the provider while the writer sends to the client:
each gRPC write is a round trip through gRPC's completion queue, far slower
than reading and translating a token, so whatever the reader collects during
one write goes out in the next, adjacent deltas merged. Merging happens here,
as the events arrive: a run of text (reasoning, refusal) deltas is held as compact
text, not as one event object per token (~500 bytes each, against ~4 for a
short token's characters).

With a slow client that pile would grow without end (a whole 600k-token
answer held in memory), so the backlog is bounded: once it holds
`limit_chars` characters the reader waits, stops reading the provider's
socket, and TCP pushes back on the provider. A fast client never notices: the
writer takes everything pending in one go. No merged delta is longer than
`max_delta_chars`, and a single giant delta is split to fit, so a client's
gRPC message limit is never at risk from a delta.
"""

from __future__ import annotations

import asyncio

from navagent.core.events import RefusalDelta, StreamEvent, TextDelta, ThinkingDelta
from navagent.gateway._rope import Rope

__all__ = ["Backlog"]

_EVENT_CHARS = 64
"""What any other event counts for, so a flood of small events is bounded too."""

_Delta = type[TextDelta] | type[ThinkingDelta] | type[RefusalDelta]


class Backlog:
    """Events waiting for the client, merged and bounded; one reader, one writer."""

    __slots__ = (
        "_chars",
        "_closed",
        "_events",
        "_limit",
        "_max_delta",
        "_readable",
        "_run",
        "_run_kind",
        "_writable",
    )

    def __init__(self, *, limit_chars: int, max_delta_chars: int) -> None:
        self._limit = limit_chars
        self._max_delta = max_delta_chars
        self._events: list[StreamEvent] = []
        self._run = Rope()
        self._run_kind: _Delta | None = None
        self._chars = 0
        self._closed = False
        self._readable = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()

    async def put(self, batch: list[StreamEvent]) -> None:
        """Add a batch; wait while the backlog is over its limit.

        The batch is always accepted whole, so the backlog exceeds its limit by
        at most one batch (one network read's events).
        """
        was_empty = not self._chars
        for event in batch:
            kind = type(event)
            if kind is TextDelta or kind is ThinkingDelta or kind is RefusalDelta:
                text: str = event.text  # type: ignore[union-attr]
                if kind is not self._run_kind or len(self._run) + len(text) > self._max_delta:
                    self._flush_run()
                    self._run_kind = kind
                self._run.append(text)
                self._chars += len(text) or 1
            else:
                self._flush_run()
                self._events.append(event)
                self._chars += _EVENT_CHARS
        self._readable.set()
        if self._chars >= self._limit:
            self._writable.clear()
            await self._writable.wait()
        elif was_empty:
            # httpx hands over buffered chunks without suspending; let the idle
            # writer send this batch before the reader piles up the next.
            await asyncio.sleep(0)

    def close(self) -> None:
        """No more batches will come; `take` returns what is left, then []."""
        self._closed = True
        self._readable.set()

    async def take(self) -> list[StreamEvent]:
        """Everything pending, merged, once there is something; [] once closed and drained."""
        while not self._chars and not self._closed:
            self._readable.clear()
            await self._readable.wait()
        self._flush_run()
        events, self._events = self._events, []
        self._chars = 0
        self._writable.set()
        return events

    def _flush_run(self) -> None:
        kind = self._run_kind
        if kind is None:
            return
        text = str(self._run)
        self._run, self._run_kind = Rope(), None
        step = self._max_delta
        self._events.extend(kind(text=text[i : i + step]) for i in range(0, len(text), step))
