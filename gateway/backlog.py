"""The bounded hand-over between a stream's upstream reader and its client writer.

A reader task pulls from the provider while the writer sends to the client:
each gRPC write is a round trip through gRPC's completion queue, far slower
than reading and translating a token, so whatever the reader collects during
one write goes out in the next, merged. With a slow client that pile would
grow without end (a whole 600k-token answer held in memory), so the backlog
is bounded: once it holds `limit_chars` characters of content the reader
waits, stops reading the provider's socket, and TCP pushes back on the
provider. A fast client never notices: the writer takes everything pending
in one go.
"""

from __future__ import annotations

import asyncio

from navagent.core.events import StreamEvent, TextDelta, ThinkingDelta

__all__ = ["Backlog"]

_EVENT_CHARS = 64
"""What a non-delta event counts for, so a flood of tiny events is bounded too."""


class Backlog:
    """Events waiting for the client, bounded in characters; one reader, one writer."""

    __slots__ = ("_chars", "_closed", "_events", "_limit", "_readable", "_writable")

    def __init__(self, limit_chars: int) -> None:
        self._limit = limit_chars
        self._events: list[StreamEvent] = []
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
        was_empty = not self._events
        self._events.extend(batch)
        self._chars += sum(
            len(event.text)
            if type(event) is TextDelta or type(event) is ThinkingDelta
            else _EVENT_CHARS
            for event in batch
        )
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
        """Everything pending, once there is something; [] once closed and drained."""
        while not self._events and not self._closed:
            self._readable.clear()
            await self._readable.wait()
        events, self._events = self._events, []
        self._chars = 0
        self._writable.set()
        return events
