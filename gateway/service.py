"""The `navigator.chat.v1.Chat` servicer: protobuf in, dispatcher, protobuf out.

The handler is a coroutine that writes with `context.write` rather than an
async generator, so every await of a stream (upstream reads and client writes)
happens inside it. That is what lets a graceful shutdown cancel a stream and
still send it a final `error` event: with a generator, a cancellation that lands
while gRPC is writing never reaches our code.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import aclosing
from dataclasses import dataclass, field

import grpc

from navagent.core._proto import chat_pb2 as pb
from navagent.core.convert import event_to_fixed_proto, event_to_proto, request_from_proto
from navagent.core.errors import InvalidMessageError
from navagent.core.events import (
    CONTENT_EVENTS,
    ChatError,
    MessageComplete,
    StreamError,
    StreamEvent,
    TurnEnd,
)
from navagent.core.messages import ChatRequest
from navagent.gateway.coalesce import coalesce_deltas
from navagent.gateway.dispatch import Dispatcher, NoRouteError, StreamRecord

__all__ = ["SERVICE_NAME", "ChatService", "chat_rpc_handler"]

SERVICE_NAME = "navigator.chat.v1.Chat"
_CONTENT_EVENTS = CONTENT_EVENTS

log = logging.getLogger("navagent.gateway")


@dataclass
class _StreamLog:
    """Facts about one stream, logged as a single line when it ends."""

    hint: str = "-"
    record: StreamRecord = field(default_factory=StreamRecord)
    started: float = field(default_factory=time.monotonic)
    first_token: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    outcome: str = "ok"

    def emit(self) -> None:
        duration = time.monotonic() - self.started
        ttft = "-" if self.first_token is None else f"{self.first_token - self.started:.3f}s"
        log.info(
            "stream hint=%s route=%s protocol=%s model=%s attempts=%d duration=%.3fs ttft=%s "
            "tokens_in=%d tokens_out=%d outcome=%s",
            self.hint,
            self.record.route,
            self.record.protocol,
            self.record.model,
            self.record.attempts,
            duration,
            ttft,
            self.input_tokens,
            self.output_tokens,
            self.outcome,
        )


class ChatService:
    """Serves `Chat.ChatStream` from a `Dispatcher`, within a stream limit."""

    def __init__(self, dispatcher: Dispatcher, *, max_concurrent_streams: int = 256) -> None:
        self._dispatcher = dispatcher
        self._limit = max_concurrent_streams
        self._active: set[asyncio.Task[object]] = set()
        self._closing = False

    @property
    def active_streams(self) -> int:
        """Streams in flight now."""
        return len(self._active)

    async def wait_idle(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for in-flight streams to end; True if they all did."""
        deadline = time.monotonic() + timeout_s
        while self._active and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return not self._active

    def cancel_all(self) -> None:
        """End every in-flight stream now with a `cancelled` error event."""
        self._closing = True
        for task in list(self._active):
            task.cancel("gateway shutting down")

    async def chat_stream(
        self, request: pb.ChatStreamRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> None:
        """Handle one `ChatStream` call."""
        stream_log = _StreamLog(hint=request.routing_hint.strip() or "agent")
        if len(self._active) >= self._limit:
            stream_log.outcome = "rejected"
            stream_log.emit()
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the gateway is serving its limit of {self._limit} concurrent streams; "
                "retry shortly",
            )
        try:
            neutral = request_from_proto(request)
        except InvalidMessageError as exc:
            stream_log.outcome = "invalid_argument"
            stream_log.emit()
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        task = asyncio.current_task()
        assert task is not None
        self._active.add(task)
        try:
            await self._serve(neutral, request.extended_events, context, stream_log)
        except NoRouteError as exc:
            stream_log.outcome = "no_route"
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        except asyncio.CancelledError:
            if not self._closing:
                stream_log.outcome = "cancelled"
                raise
            task.uncancel()
            stream_log.outcome = "error:cancelled"
            await context.write(
                event_to_proto(
                    StreamError(
                        error=ChatError(
                            message="the gateway is shutting down; send the request again",
                            code="cancelled",
                            retryable=True,
                        )
                    )
                )
            )
        finally:
            self._active.discard(task)
            stream_log.emit()

    async def _serve(
        self,
        request: ChatRequest,
        extended: bool,
        context: grpc.aio.ServicerContext[object, object],
        stream_log: _StreamLog,
    ) -> None:
        """Forward the dispatcher's events to the client.

        A reader task pulls from the provider while this coroutine writes: each
        gRPC write is a round trip through gRPC's completion queue, far slower
        than reading and translating a token. Whatever the reader collected
        during one write goes out in the next, adjacent deltas merged, so a
        fast provider costs a few large messages and a slow one still gets
        every token forwarded the moment it arrives.
        """
        pending: list[StreamEvent] = []
        arrived = asyncio.Event()
        reader = asyncio.create_task(self._read(request, stream_log, pending, arrived))
        try:
            while not reader.done() or pending:
                if not pending:
                    await arrived.wait()
                arrived.clear()
                events = coalesce_deltas(pending[:])
                pending.clear()
                for event in events:
                    _note(stream_log, event)
                    # Fixed-schema clients get no extension events, refusals as text.
                    encoded = event_to_proto(event) if extended else event_to_fixed_proto(event)
                    if encoded is not None:
                        await context.write(encoded)
            await reader  # re-raises what ended the reader early (NoRouteError)
        finally:
            if not reader.done():
                reader.cancel()
                await asyncio.wait([reader])

    async def _read(
        self,
        request: ChatRequest,
        stream_log: _StreamLog,
        pending: list[StreamEvent],
        arrived: asyncio.Event,
    ) -> None:
        try:
            batches = self._dispatcher.stream(request, record=stream_log.record)
            async with aclosing(batches):
                async for batch in batches:
                    writer_idle = not pending
                    pending.extend(batch)
                    arrived.set()
                    if writer_idle:
                        # httpx hands over buffered chunks without suspending, so
                        # without this the writer would wait for the whole buffer.
                        await asyncio.sleep(0)
        finally:
            arrived.set()


def _note(stream_log: _StreamLog, event: StreamEvent) -> None:
    """Update the stream's log facts with one outgoing event."""
    if stream_log.first_token is None and isinstance(event, _CONTENT_EVENTS):
        stream_log.first_token = time.monotonic()
    if isinstance(event, TurnEnd):
        stream_log.input_tokens = event.usage.input_tokens
        stream_log.output_tokens = event.usage.output_tokens
    elif isinstance(event, StreamError):
        stream_log.outcome = f"error:{event.error.code}"
    elif isinstance(event, MessageComplete):
        stream_log.outcome = "ok"


def chat_rpc_handler(service: ChatService) -> grpc.GenericRpcHandler:
    """The generic handler that registers `service` under `navigator.chat.v1.Chat`.

    Registered by hand rather than through the generated
    `add_ChatServicer_to_server`, whose servicer base types the method as a
    generator; ours is a coroutine that writes (see the module docstring).
    """
    return grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            "ChatStream": grpc.unary_stream_rpc_method_handler(
                service.chat_stream,
                request_deserializer=pb.ChatStreamRequest.FromString,
                response_serializer=pb.ChatStreamEvent.SerializeToString,
            )
        },
    )
