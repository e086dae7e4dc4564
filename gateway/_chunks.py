"""A response body's chunks, with a way to take the next one only if it is already here.

A provider that writes faster than the client reads leaves many HTTP chunks
in the connection's buffers, and a transport may hand them out one per
iteration (httpx's own does; the gateway's aiohttp one hands over all that
has arrived, and the harness's cassettes replay a recording's chunks). To
send them to the client as one merged delta instead of one gRPC message each,
the stream takes whatever is already buffered before it writes (`ready`),
without ever waiting for more: waiting would delay a paced stream's token.

`ready` starts the next read; if that read has to wait for the network, it is
kept, suspended, and `next` resumes it later: nothing is read twice or lost.
A read left suspended when the stream ends is cancelled by `abandon`, so the
HTTP layers below clean up as they would for any cancelled read. A body that
can say what it holds without a read (the gateway's own transport,
`Answer.ready_raw`) is asked instead: then no read is ever left suspended,
and each of a paced stream's reads is a plain `await`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Generator
from typing import Any

__all__ = ["BodyChunks"]

_CHECKPOINTS = 16
"""Bare yields `ready` passes through before it treats the read as waiting."""


class BodyChunks:
    """`chunks` for one reader: `await next()`, `ready()`, and `abandon()` at the end."""

    __slots__ = ("_chunks", "_failure", "_held", "_step", "_yielded")

    def __init__(
        self,
        chunks: AsyncIterator[bytes],
        *,
        held: Callable[[], bytes | None] | None = None,
    ) -> None:
        self._chunks = chunks
        self._held = held
        """What `chunks` holds unread, without a read (as `ready`), when its body can say."""
        self._failure: Exception | None = None
        """A read that `ready` saw fail: raised by `next`, after what came before it."""
        self._step: Generator[Any, Any, bytes] | None = None
        """A started read that is waiting for the network (`_yielded` is what it waits on)."""
        self._yielded: Any = None

    def ready(self) -> bytes | None:
        """The next chunk if it is there without waiting, else None.

        Raises:
            StopAsyncIteration: the body has ended.
        """
        if self._held is not None:
            return self._held()
        if self._step is not None or self._failure is not None:
            return None
        step = self._chunks.__anext__().__await__()
        try:
            yielded = step.send(None)
            for _ in range(_CHECKPOINTS):
                if yielded is not None:
                    break
                # A bare yield is a checkpoint (anyio's, in httpcore's clean-up
                # at the end of a body), not a wait: carry on at once, so no
                # read is ever left suspended half-way through a clean-up.
                yielded = step.send(None)
        except StopIteration as done:
            chunk: bytes = done.value
            return chunk
        except StopAsyncIteration:
            raise
        except Exception as exc:  # the connection broke: first hand on what came before
            self._failure = exc
            return None
        self._step, self._yielded = step, yielded
        return None

    async def next(self) -> bytes:
        """The next chunk, waiting for it if need be (StopAsyncIteration at the end)."""
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure
        step = self._step
        if step is None:
            return await anext(self._chunks)
        self._step = None
        return await _Resumed(step, self._yielded)

    async def abandon(self) -> None:
        """Cancel a read that `ready` left waiting, and let it clean up."""
        step, self._step = self._step, None
        if step is None:
            return
        try:
            await _Resumed(step, None, throw=asyncio.CancelledError())
        except (asyncio.CancelledError, StopAsyncIteration):
            pass


class _Resumed:
    """Continue a suspended read inside the awaiting task, as if it had never stopped."""

    __slots__ = ("_step", "_throw", "_yielded")

    def __init__(
        self,
        step: Generator[Any, Any, bytes],
        yielded: Any,
        *,
        throw: BaseException | None = None,
    ) -> None:
        self._step = step
        self._yielded = yielded
        self._throw = throw

    def __await__(self) -> Generator[Any, Any, bytes]:
        step = self._step
        try:
            value = self._yielded if self._throw is None else step.throw(self._throw)
            while True:
                try:
                    sent = yield value
                except BaseException as exc:  # handed on to the read, whatever it is
                    value = step.throw(exc)
                else:
                    value = step.send(sent)
        except StopIteration as done:
            chunk: bytes = done.value
            return chunk
