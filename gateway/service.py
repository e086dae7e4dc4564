"""The `navigator.chat.v1.Chat` servicer: protobuf in, dispatcher, protobuf out.

`ListRoutingHints` (an extension RPC) answers which routing hints a
`ChatStream` from the caller would be served for; the rest of this module is
`ChatStream`.

The handler is a coroutine that writes with `context.write` rather than an
async generator, so every await of a stream (upstream reads and client writes)
happens inside it. That is what lets a graceful shutdown cancel a stream and
still send it a final `error` event: with a generator, a cancellation that lands
while gRPC is writing never reaches our code.

Every call ends in exactly one outcome, and the per-stream log line says which:
a terminal event (`ok` or `error:<code>`), or a status (`INVALID_ARGUMENT`,
`FAILED_PRECONDITION`, `RESOURCE_EXHAUSTED`, or `INTERNAL` carrying the request
id for anything unexpected, whose traceback is logged at DEBUG only). Status
texts and error events pass through the one redaction path and are bounded.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from contextlib import aclosing
from dataclasses import dataclass, field

import grpc
from google.protobuf.message import DecodeError

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
from navagent.core.redaction import Redacted, clip, redacted
from navagent.gateway import metrics
from navagent.gateway._slots import GATEWAY, Slots, WorkerSlots
from navagent.gateway.caller_store import CallerStore
from navagent.gateway.callers import (
    SLOT_COUNTERS,
    CallerLease,
    CallerRefusedError,
    admit_caller,
    caller_name,
    check_caller_scope,
    current_caller,
    share_caller_lease,
)
from navagent.gateway.coalesce import split_long_deltas
from navagent.gateway.dispatch import Dispatcher, NoRouteError, StreamRecord
from navagent.gateway.errors import clean_message
from navagent.gateway.upstream import UnsendableRequestError

__all__ = ["SERVICE_NAME", "ChatService", "StreamLimits", "chat_rpc_handler"]

SERVICE_NAME = "navigator.chat.v1.Chat"
_MAX_STATUS_CHARS = 1024
_LAST_WRITE_S = 2.0
"""How long a stream's last `error` event may wait for a write still pending in gRPC."""
_TERMINAL = (MessageComplete, StreamError)
_FIELD_CHARS = 80
_FIELD_READ_CHARS = 1024
_BARE = re.compile(r"[A-Za-z0-9._:/#@+-]{1,80}")

log = logging.getLogger("navagent.gateway")


@dataclass(frozen=True)
class StreamLimits:
    """What one stream may cost: time, and the size of what it sends and holds."""

    max_concurrent_streams: int = 256
    max_duration_s: float = 1800.0
    max_message_bytes: int = 4 * 1024 * 1024 - 64 * 1024
    """Largest message sent; a merged delta is at most a quarter of it in characters."""

    @property
    def max_delta_chars(self) -> int:
        """Characters per delta message: under `max_message_bytes` even at 4 bytes each."""
        return self.max_message_bytes // 4


def _field(value: str) -> Redacted:
    """A log field value, redacted before it is cut (bare when plainly safe, else quoted).

    The search reads up to `_FIELD_READ_CHARS` of the value, though the line
    shows 80: a secret the 80-character cut splits is masked whole, and one
    split where the search stops is masked from its start (`cut=True`), so
    a client's megabyte of routing hint costs no more than that. Escaped
    after the search, and searched again when escaping changed it.
    """
    if _BARE.fullmatch(value):
        return redacted(value)
    head = value[:_FIELD_READ_CHARS]
    cut = len(head) < len(value)
    clean = redacted(head, cut=cut)
    escaped = clean.encode("unicode_escape").decode("ascii").replace('"', '\\"')
    if escaped != clean:  # an escape can join what the first search saw apart
        clean = redacted(escaped, cut=cut)
    shown = clean if len(clean) <= _FIELD_CHARS else clean[:_FIELD_CHARS] + "…"
    return Redacted('"' + shown + '"')


@dataclass
class _StreamLog:
    """Facts about one stream, logged as a single line when it ends."""

    request_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    hint: str = "-"
    caller: str = "-"
    record: StreamRecord = field(default_factory=StreamRecord)
    started: float = field(default_factory=time.monotonic)
    first_token: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    outcome: str | None = None
    """None until the call's one outcome is known; then it never changes."""
    hint_label: str = "other"
    """The hint as a metrics label, once admitted (so a route has it)."""
    admitted: bool = False
    emitted: bool = False
    """The line is logged and the metrics counted once, at the first `emit`."""

    def admit(self, hint_label: str) -> None:
        """The call passed admission: it is now a stream."""
        self.hint_label = hint_label
        self.admitted = True
        metrics.record_admitted(hint_label)

    def settle(self, outcome: str) -> None:
        """Record the call's outcome, unless one is already recorded."""
        if self.outcome is None:
            self.outcome = outcome

    def emit(self) -> None:
        """Log the line and count the metrics, once."""
        if self.emitted:
            return
        self.emitted = True
        duration = time.monotonic() - self.started
        if log.isEnabledFor(logging.INFO):
            self._log_line(duration)
        if metrics.enabled():
            metrics.record_finished(self._facts(duration), admitted=self.admitted)

    def _log_line(self, duration: float) -> None:
        # Every text field is redacted on its own (`Redacted`), so the line is not searched
        # whole again; the rest the gateway makes from numbers and its own ids.
        ttft = "-" if self.first_token is None else f"{self.first_token - self.started:.3f}s"
        log.info(
            "stream id=%s hint=%s caller=%s route=%s protocol=%s model=%s attempts=%d "
            "duration=%.3fs ttft=%s tokens_in=%s tokens_out=%s outcome=%s",
            Redacted(self.request_id),
            _field(self.hint),
            _field(self.caller),
            _field(self.record.route),
            redacted(self.record.protocol),
            _field(self.record.model),
            self.record.attempts,
            duration,
            Redacted(ttft),
            _count(self.input_tokens),
            _count(self.output_tokens),
            redacted(self.outcome or "unknown"),
        )

    def _facts(self, duration_s: float) -> metrics.StreamFacts:
        return metrics.StreamFacts(
            hint_label=self.hint_label,
            route=self.record.route,
            protocol=self.record.protocol,
            outcome=self.outcome or "unknown",
            duration_s=duration_s,
            time_to_first_delta_s=(
                None if self.first_token is None else self.first_token - self.started
            ),
            tokens=[
                ("input", self.input_tokens or 0),
                ("output", self.output_tokens or 0),
                ("cache_read", self.cache_read_tokens or 0),
            ],
            upstream=self.record.upstream,
        )


def _count(tokens: int | None) -> int | Redacted:
    return _NO_COUNT if tokens is None else tokens


_NO_COUNT = Redacted("-")


class _Unparseable:
    """Stands for a request body that is not a `ChatStreamRequest`."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem


def _parse_request(data: bytes) -> pb.ChatStreamRequest | _Unparseable:
    """The request deserializer: never raises, so a corrupt body is INVALID_ARGUMENT."""
    try:
        return pb.ChatStreamRequest.FromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        return _Unparseable(f"the request is not a valid ChatStreamRequest: {exc}")


class ChatService:
    """Serves `Chat.ChatStream` from a `Dispatcher`, within `StreamLimits`."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        limits: StreamLimits = StreamLimits(),
        slots: WorkerSlots | None = None,
        caller_store: CallerStore | None = None,
    ) -> None:
        self._dispatcher = dispatcher
        self.limits = limits
        self._slots = slots or Slots.local(counters=SLOT_COUNTERS).worker(0)
        """Where `max_concurrent_streams` and each caller's own limit are counted:
        gateway-wide, across workers."""
        self._caller_store = caller_store
        """Where callers' limits are also counted across replicas (`--caller-store`)."""
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
        self,
        request: pb.ChatStreamRequest | _Unparseable,
        context: grpc.aio.ServicerContext[object, object],
    ) -> None:
        """Handle one `ChatStream` call; every path ends in one logged outcome."""
        stream_log = _StreamLog(caller=caller_name())
        context.set_trailing_metadata((("x-request-id", stream_log.request_id),))
        task = asyncio.current_task()
        assert task is not None
        lease: CallerLease | None = None
        slot = False
        try:
            neutral, extended = self._admit(request, stream_log)
            # Every refusal comes before the stream is admitted (and counted as started).
            lease = admit_caller(stream_log.hint, self._slots)
            if self._caller_store is not None:
                await share_caller_lease(lease, self._caller_store)
            slot = self._take_slot()
            stream_log.admit(stream_log.hint)  # a route's hint: bounded, a fair label
            self._active.add(task)
            try:
                async with asyncio.timeout(self.limits.max_duration_s):
                    await self._serve(neutral, extended, context, stream_log)
            except TimeoutError:
                await self._end_with(context, stream_log, _too_long(self.limits.max_duration_s))
        except (_Refused, CallerRefusedError) as refused:
            await _refuse(context, stream_log, refused.outcome, refused.code, refused.message)
        except NoRouteError as exc:
            await _refuse(
                context, stream_log, "no_route", grpc.StatusCode.FAILED_PRECONDITION, str(exc)
            )
        except UnsendableRequestError as exc:
            await _refuse(
                context, stream_log, "invalid_argument", grpc.StatusCode.INVALID_ARGUMENT, str(exc)
            )
        except asyncio.CancelledError:
            if not self._closing:
                stream_log.settle("cancelled")  # the client went away
                raise
            task.uncancel()
            await self._end_with(context, stream_log, _SHUTTING_DOWN)
        except grpc.aio.AbortError:
            raise
        except Exception as exc:  # the one place that must catch everything
            await self._internal(context, stream_log, exc)
        finally:
            self._active.discard(task)
            if slot:
                self._slots.release(GATEWAY)
            if lease is not None:
                lease.release()
            stream_log.emit()

    async def list_routing_hints(
        self,
        _request: pb.ListRoutingHintsRequest,
        _context: grpc.aio.ServicerContext[object, object],
    ) -> pb.ListRoutingHintsResponse:
        """Handle one `ListRoutingHints` call: the hints served, those the caller may use."""
        caller = current_caller()
        hints = [
            hint
            for hint in self._dispatcher.routes.chat_hints()
            if caller is None or caller.may_use(hint)
        ]
        return pb.ListRoutingHintsResponse(routing_hints=hints)

    def _admit(
        self, request: pb.ChatStreamRequest | _Unparseable, stream_log: _StreamLog
    ) -> tuple[ChatRequest, bool]:
        """The validated request and whether the client wants extension events.

        Raises:
            _Refused: with the status that says why the call cannot be served.
        """
        if isinstance(request, _Unparseable):
            raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, request.problem, "invalid_argument")
        stream_log.hint = request.routing_hint.strip() or "agent"
        try:
            admitted = request_from_proto(request), request.extended_events
        except InvalidMessageError as exc:
            raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, str(exc), "invalid_argument") from None
        check_caller_scope(stream_log.hint)  # before the routes: out of scope says nothing more
        routes = self._dispatcher.routes
        if not routes.candidates(stream_log.hint):  # before taking a slot
            caller = current_caller()
            visible = None if caller is None else caller.may_use
            raise NoRouteError(routes.no_route_message(stream_log.hint, visible=visible))
        return admitted

    def _take_slot(self) -> bool:
        """One of the gateway's `max_concurrent_streams` slots (True), or a refusal.

        Raises:
            _Refused: RESOURCE_EXHAUSTED, the gateway is at its limit.
        """
        if not self._slots.try_acquire(self.limits.max_concurrent_streams, GATEWAY):
            raise _Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the gateway is serving its limit of {self.limits.max_concurrent_streams} "
                "concurrent streams; retry shortly",
                "gateway_limit",
            )
        return True

    async def _internal(
        self,
        context: grpc.aio.ServicerContext[object, object],
        stream_log: _StreamLog,
        exc: Exception,
    ) -> None:
        """Answer an unexpected failure: one log line, INTERNAL or an error event."""
        if context.cancelled() or context.done():
            stream_log.settle("cancelled")  # a write after the client went away
            return
        rid = stream_log.request_id
        log.error("stream id=%s internal error: %s: %s", rid, type(exc).__name__, exc)
        log.debug("stream id=%s traceback", rid, exc_info=exc)
        message = f"internal gateway error (request id {rid}; the gateway log has details)"
        if stream_log.outcome is not None:
            return
        if stream_log.first_token is None:
            await _refuse(context, stream_log, "internal", grpc.StatusCode.INTERNAL, message)
        else:
            await self._end_with(context, stream_log, ChatError(message=message, code="internal"))

    async def _end_with(
        self,
        context: grpc.aio.ServicerContext[object, object],
        stream_log: _StreamLog,
        error: ChatError,
    ) -> None:
        """End a stream that has no terminal event yet with `error`."""
        if stream_log.outcome is not None:
            return
        message = event_to_proto(StreamError(error=error))
        deadline = time.monotonic() + _LAST_WRITE_S
        while True:
            try:
                await context.write(message)
                break
            except Exception:
                if context.cancelled():  # the client is gone: there is no one left to tell
                    stream_log.settle("cancelled")
                    return
                if time.monotonic() < deadline:
                    # A shutdown's cancellation that landed inside a write leaves that
                    # write pending in gRPC's core (TOO_MANY_OPERATIONS) until it is sent.
                    await asyncio.sleep(0.01)
                    continue
                # Still not writable: end with a status, never an empty OK.
                code = grpc.StatusCode.UNAVAILABLE if error.retryable else grpc.StatusCode.INTERNAL
                await _refuse(context, stream_log, f"error:{error.code}", code, error.message)
                return
        stream_log.settle(f"error:{error.code}")

    async def _serve(
        self,
        request: ChatRequest,
        extended: bool,
        context: grpc.aio.ServicerContext[object, object],
        stream_log: _StreamLog,
    ) -> None:
        """Forward the dispatcher's events to the client as they come.

        One task reads and writes in turn: while a write waits for a slow
        client, nothing is read, the provider's bytes wait in a bounded buffer
        (`navagent.gateway._network`) and then in the kernel, and TCP pushes
        back on the provider. Whatever arrived meanwhile comes out of the next
        read as one merged delta, so a slow client costs fewer messages, not
        more memory.
        """
        max_delta_chars = self.limits.max_delta_chars
        batches = self._dispatcher.stream(request, record=stream_log.record)
        async with aclosing(batches):
            async for batch in batches:
                for event in split_long_deltas(batch, max_delta_chars):
                    await self._write(event, extended, context, stream_log)

    async def _write(
        self,
        event: StreamEvent,
        extended: bool,
        context: grpc.aio.ServicerContext[object, object],
        stream_log: _StreamLog,
    ) -> None:
        if stream_log.outcome is not None:
            return  # nothing follows a terminal event
        if isinstance(event, StreamError):
            event = StreamError(error=_outgoing(event.error))
        # Fixed-schema clients get no extension events, and refusals as text.
        message = event_to_proto(event) if extended else event_to_fixed_proto(event)
        if (
            isinstance(event, MessageComplete)
            and message is not None
            and message.ByteSize() > self.limits.max_message_bytes
        ):
            event = StreamError(error=self._too_large(message.ByteSize()))
            message = event_to_proto(event)
        _note(stream_log, event)
        if message is not None:
            await context.write(message)
        if isinstance(event, _TERMINAL):
            ok = isinstance(event, MessageComplete)
            stream_log.settle("ok" if ok else f"error:{event.error.code}")  # type: ignore[union-attr]

    def _too_large(self, size: int) -> ChatError:
        limit = self.limits.max_message_bytes
        return ChatError(
            message=(
                f"the answer is {size / 2**20:.1f} MiB, over the gateway's limit of "
                f"{limit / 2**20:.1f} MiB per message (--max-message-bytes); ask for fewer "
                "output tokens (max_tokens)"
            ),
            code="invalid_request",
        )


class _Refused(Exception):
    """A call refused before streaming: its status, text and logged outcome."""

    def __init__(self, code: grpc.StatusCode, message: str, outcome: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.outcome = outcome


_SHUTTING_DOWN = ChatError(
    message="the gateway is shutting down; send the request again",
    code="cancelled",
    retryable=True,
)


def _too_long(limit_s: float) -> ChatError:
    return ChatError(
        message=(
            f"the stream reached the gateway's maximum duration of {limit_s:g}s "
            "(--max-stream-duration)"
        ),
        code="timeout",
    )


def _outgoing(error: ChatError) -> ChatError:
    """`error` as it may leave the gateway: redacted, then bounded."""
    cleaned = clean_message(error.message)
    return error if cleaned == error.message else error.model_copy(update={"message": cleaned})


async def _refuse(
    context: grpc.aio.ServicerContext[object, object],
    stream_log: _StreamLog,
    outcome: str,
    code: grpc.StatusCode,
    message: str,
) -> None:
    """End a refused call, its outcome logged and counted before the client hears it.

    A client that scrapes the metrics right after its call then sees it counted.
    """
    stream_log.settle(outcome)
    stream_log.emit()
    await _abort(context, code, message)


async def _abort(
    context: grpc.aio.ServicerContext[object, object], code: grpc.StatusCode, message: str
) -> None:
    """End the call with a status whose text is redacted and bounded."""
    await context.abort(code, clip(message, _MAX_STATUS_CHARS))


def _note(stream_log: _StreamLog, event: StreamEvent) -> None:
    """Update the stream's log facts with one outgoing event."""
    if stream_log.first_token is None and isinstance(event, CONTENT_EVENTS):
        stream_log.first_token = time.monotonic()
    if isinstance(event, TurnEnd):
        stream_log.input_tokens = event.usage.input_tokens
        stream_log.output_tokens = event.usage.output_tokens
        stream_log.cache_read_tokens = event.usage.cache_read_tokens


def chat_rpc_handler(service: ChatService) -> grpc.GenericRpcHandler:
    """The generic handler that registers `service` under `navigator.chat.v1.Chat`.

    Registered by hand rather than through the generated
    `add_ChatServicer_to_server`, whose servicer base types the method as a
    generator; ours is a coroutine that writes (see the module docstring).
    The deserializer never raises (`_parse_request`), so a corrupt request is
    an INVALID_ARGUMENT with a reason rather than gRPC's own error.
    """
    return grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            "ChatStream": grpc.unary_stream_rpc_method_handler(
                service.chat_stream,
                request_deserializer=_parse_request,
                response_serializer=pb.ChatStreamEvent.SerializeToString,
            ),
            "ListRoutingHints": grpc.unary_unary_rpc_method_handler(
                service.list_routing_hints,
                request_deserializer=pb.ListRoutingHintsRequest.FromString,
                response_serializer=pb.ListRoutingHintsResponse.SerializeToString,
            ),
        },
    )
