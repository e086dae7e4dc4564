"""Per-caller route scope: who may call the gateway, for which routing hints, how often.

A callers file looks like::

    callers:
      - name: ci-bot                   # shown in logs and in refusals
        token_hash: sha256:9f86d0...   # `nav gateway hash-token` makes one
        routing_hints: [agent, fast]   # or ["*"] for every hint
        max_concurrent_streams: 8      # optional: this caller's own limit

The file never holds a token, only its SHA-256: gateway tokens are long random
strings, so a plain hash cannot be reversed, and a leaked file grants nothing.
A presented token is hashed once and compared with every caller's hash in
constant time (`hmac.compare_digest`, no early exit), so timing tells nothing
about which caller, or how much of a hash, matched.

The interceptor authenticates (an unknown token is UNAUTHENTICATED; health
stays open) and runs the call with its `Caller` in a context variable; the
Chat service asks `check_caller_scope` once it knows the call's routing hint,
before it looks for a route (so a scoped caller cannot tell a hint the gateway
serves from one it does not), and `admit_caller` before it streams; they
answer PERMISSION_DENIED or RESOURCE_EXHAUSTED naming the hint and the
caller, never the token. A caller's own limit is counted in the gateway's
`Slots`, in a counter that belongs to the caller's name (`assign_counters`):
with several workers it means the whole gateway, as `--max-concurrent-streams`
does, and a reload that keeps a caller keeps its streams in flight counted,
wherever the caller moved in the file. Slots count one gateway, not its
replicas: with a caller store (`--caller-store`, `caller_store.py`),
`share_caller_lease` also counts the stream there, across replicas, and
refuses in the same words.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeAlias, cast

import grpc
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from navagent.core.errors import NavAgentError
from navagent.core.messages import DEFAULT_ROUTING_HINT
from navagent.gateway import metrics
from navagent.gateway._config_file import nearest_key, read_yaml_file
from navagent.gateway._slots import GATEWAY, WorkerSlots
from navagent.gateway.caller_store import CallerStore, StoreLease

__all__ = [
    "ALL_HINTS",
    "Caller",
    "CallerAuthInterceptor",
    "CallerLease",
    "CallerRefusedError",
    "CallerTable",
    "CallersError",
    "MAX_LIMITED_CALLERS",
    "SLOT_COUNTERS",
    "acting_as",
    "admit_caller",
    "assign_counters",
    "caller_name",
    "check_caller_scope",
    "current_caller",
    "hash_token",
    "load_callers",
    "parse_callers",
    "share_caller_lease",
]

ALL_HINTS = "*"
MAX_LIMITED_CALLERS = 255
"""Callers with their own `max_concurrent_streams` one file may hold."""
SLOT_COUNTERS = 1 + MAX_LIMITED_CALLERS
"""Counters the gateway's `Slots` need: the gateway's own, then one per limited
caller (create `Slots` with `counters=SLOT_COUNTERS`)."""
_HASH = re.compile(r"sha256:[0-9a-f]{64}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_HEALTH_PREFIX = "/grpc.health.v1.Health/"
_Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"  # generic only in the stubs


class CallersError(NavAgentError):
    """A callers file that cannot be used; the text names file, caller and field."""


class CallerRefusedError(NavAgentError):
    """A call its caller may not make: the status, its text and the logged outcome."""

    def __init__(self, code: grpc.StatusCode, message: str, outcome: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.outcome = outcome


def hash_token(token: str) -> str:
    """The `token_hash` a callers file holds for `token` (surrounding whitespace dropped)."""
    return "sha256:" + hashlib.sha256(token.strip().encode()).hexdigest()


@dataclass(frozen=True)
class Caller:
    """One authenticated client: its name, the hints it may use and its own limit."""

    name: str
    digest: bytes
    """SHA-256 of the caller's token (never the token)."""
    routing_hints: frozenset[str] | None
    """None: every hint."""
    max_concurrent_streams: int | None = None
    counter: int | None = None
    """The slot counter of its own limit, kept by name across reloads
    (`assign_counters`); None until assigned, or without a limit."""

    def may_use(self, hint: str) -> bool:
        """Whether this caller may send calls for routing hint `hint`."""
        return self.routing_hints is None or hint in self.routing_hints


class _CallerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    token_hash: str = Field(repr=False)
    routing_hints: tuple[str, ...]
    max_concurrent_streams: int | None = Field(default=None, ge=1)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise ValueError(
                "must be 1-64 letters, digits or ._@- (it appears in logs and refusals)"
            )
        return value

    @field_validator("token_hash")
    @classmethod
    def _sha256(cls, value: str) -> str:
        if not _HASH.fullmatch(value.strip().lower()):
            # Never quote the value: it may be a token pasted in by mistake.
            raise ValueError(
                "must be sha256:<64 hex digits>; make it with `nav gateway hash-token` "
                "(the file holds no plaintext token)"
            )
        return value.strip().lower()

    @field_validator("routing_hints")
    @classmethod
    def _hints(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        hints = tuple(hint.strip() for hint in value if hint.strip())
        if not hints:
            raise ValueError(f'list at least one routing hint, or "{ALL_HINTS}" for every hint')
        return hints


_CALLER_KEYS = frozenset(_CallerSpec.model_fields)


class CallerTable:
    """The callers the gateway knows, found by token."""

    def __init__(self, callers: Sequence[Caller], *, source: str = "<callers>") -> None:
        self.callers = tuple(callers)
        self.source = source

    def identify(self, token: str) -> Caller | None:
        """The caller whose token this is, or None; every hash is compared, in constant time."""
        digest = hashlib.sha256(token.encode()).digest()
        found: Caller | None = None
        for caller in self.callers:
            if hmac.compare_digest(digest, caller.digest):
                found = caller
        return found

    def with_token(self, name: str, token: str) -> CallerTable:
        """This table plus an all-hints caller for `token` (the `--auth-token-env` one)."""
        digest = hashlib.sha256(token.encode()).digest()
        extra = Caller(name=name, digest=digest, routing_hints=None)
        return CallerTable((*self.callers, extra), source=self.source)


def parse_callers(document: Any, *, source: str) -> CallerTable:
    """Validate a parsed callers document.

    Raises:
        CallersError: naming the file, the caller (position and name) and the field.
    """
    if not isinstance(document, dict) or not isinstance(document.get("callers"), list):
        raise CallersError(f"{source}: expected a mapping with a `callers:` list")
    callers: list[Caller] = []
    for position, entry in enumerate(document["callers"], start=1):
        name = entry.get("name") if isinstance(entry, dict) else None
        where = f"{source}: caller {position}" + (f" ({name!r})" if isinstance(name, str) else "")
        if not isinstance(entry, dict):
            raise CallersError(f"{where}: expected a mapping, got {type(entry).__name__}")
        try:
            spec = _CallerSpec.model_validate(entry)
        except ValidationError as exc:
            raise CallersError(f"{where}: {_field_problem(exc)}") from None
        digest = bytes.fromhex(spec.token_hash.removeprefix("sha256:"))
        for known in callers:
            if known.name == spec.name:
                raise CallersError(f"{where}: the name {spec.name!r} is already used")
            if known.digest == digest:
                raise CallersError(f"{where}: same token_hash as caller {known.name!r}")
        hints = None if ALL_HINTS in spec.routing_hints else frozenset(spec.routing_hints)
        limited = sum(1 for known in callers if known.max_concurrent_streams is not None)
        if spec.max_concurrent_streams is not None and limited >= MAX_LIMITED_CALLERS:
            raise CallersError(
                f"{where}: more than {MAX_LIMITED_CALLERS} callers with their own "
                "max_concurrent_streams; give some callers none"
            )
        callers.append(Caller(spec.name, digest, hints, spec.max_concurrent_streams))
    # Fresh counters, as for a gateway's first table; a reload reassigns them by name.
    return assign_counters(CallerTable(callers, source=source), None, lambda _counter: 0)


def assign_counters(
    table: CallerTable, previous: CallerTable | None, busy: Callable[[int], int]
) -> CallerTable:
    """`table` with a slot counter for each caller with its own limit, keyed by name.

    A caller `previous` had keeps its counter, so its streams in flight stay
    counted across the reload; a new caller gets a counter no kept caller has
    and no stream holds (`busy(counter) == 0`: a removed caller's streams may
    still be running).

    Raises:
        CallersError: every counter is taken (removed callers still streaming).
    """
    kept = (
        {c.name: c.counter for c in previous.callers if c.counter is not None} if previous else {}
    )
    taken = {kept[c.name] for c in table.callers if c.max_concurrent_streams and c.name in kept}
    free = (n for n in range(1, SLOT_COUNTERS) if n not in taken)
    assigned: list[Caller] = []
    for caller in table.callers:
        counter = None
        if caller.max_concurrent_streams is not None:
            counter = kept.get(caller.name)
            if counter is None:
                counter = next((n for n in free if busy(n) == 0), None)
                if counter is None:
                    raise CallersError(
                        f"{table.source}: no stream counter is free for caller {caller.name!r} "
                        "(callers removed by a reload are still streaming); reload again shortly"
                    )
        assigned.append(replace(caller, counter=counter))
    return CallerTable(assigned, source=table.source)


def _field_problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "caller"
    if first["type"] == "missing":
        return f"missing required field {field!r}"
    if first["type"] == "extra_forbidden":
        close = nearest_key(field, _CALLER_KEYS)
        return f"unknown key {field!r}" + (f" (did you mean {close!r}?)" if close else "")
    message = first["msg"].removeprefix("Value error, ")
    return f"field {field!r}: {message}"


def load_callers(path: Path) -> CallerTable:
    """Read and validate a callers file.

    Raises:
        CallersError: the file cannot be read or parsed, or a caller is invalid.
    """
    document = read_yaml_file(path, what="callers file", error=CallersError)
    return parse_callers(document, source=str(path))


# --- the call's caller, and what it may do -----------------------------------

_current: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "navagent_gateway_caller", default=None
)


@contextmanager
def acting_as(caller: Caller | None) -> Iterator[None]:
    """Run the block as `caller`'s call (the interceptor wraps each call in this)."""
    reset = _current.set(caller)
    try:
        yield
    finally:
        _current.reset(reset)


def current_caller() -> Caller | None:
    """The authenticated caller of the call being served; None when auth is off."""
    return _current.get()


@dataclass
class CallerLease:
    """One of a caller's concurrent stream slots, held until `release`."""

    _slots: WorkerSlots | None
    _counter: int = GATEWAY
    _released: bool = False
    _shared: StoreLease | None = None
    """Its lease in the caller store, once `share_caller_lease` took one."""

    def release(self) -> None:
        """Give the slot back (once; later calls do nothing)."""
        if self._slots is not None and not self._released:
            self._released = True
            self._slots.release(self._counter)
            if self._shared is not None:
                self._shared.release()


_NO_LEASE = CallerLease(None)


def caller_name() -> str:
    """The current caller's name for the log, `-` when auth is off."""
    caller = _current.get()
    return "-" if caller is None else caller.name


def check_caller_scope(hint: str) -> None:
    """Refuse a hint outside the current caller's scope, whether or not the gateway serves it.

    A scoped caller learns nothing about the gateway's other hints: a hint it
    may not use and a hint no route serves get the same status and the same
    sentence, naming only the hints it may use.

    Raises:
        CallerRefusedError: PERMISSION_DENIED, the hint is outside the scope.
    """
    caller = current_caller()
    hint = hint.strip() or DEFAULT_ROUTING_HINT
    if caller is None or caller.may_use(hint):
        return
    allowed = ", ".join(sorted(caller.routing_hints or ()))
    raise CallerRefusedError(
        grpc.StatusCode.PERMISSION_DENIED,
        f"caller {caller.name!r} may not use routing hint {hint!r} (it may use: {allowed}); "
        "the gateway operator can add the hint to its routing_hints in the callers file",
        "permission_denied",
    )


def admit_caller(hint: str, slots: WorkerSlots) -> CallerLease:
    """Check the current caller may stream for `hint` now; the slot it holds meanwhile.

    Raises:
        CallerRefusedError: PERMISSION_DENIED for a hint outside the caller's
            scope, RESOURCE_EXHAUSTED at the caller's own stream limit.
    """
    caller = current_caller()
    if caller is None:
        return _NO_LEASE
    check_caller_scope(hint)
    limit, counter = caller.max_concurrent_streams, caller.counter
    if limit is None or counter is None:
        return _NO_LEASE
    if not slots.try_acquire(limit, counter):
        raise _at_limit(caller.name, limit)
    return CallerLease(slots, counter)


async def share_caller_lease(lease: CallerLease, store: CallerStore) -> None:
    """Count `lease`, taken by `admit_caller`, in the store every replica shares too.

    Nothing to do for a call without a limit. When the store cannot be reached
    the lease stands on this gateway's count alone (`caller_store`: fail open).

    Raises:
        CallerRefusedError: RESOURCE_EXHAUSTED, in `admit_caller`'s words: the
            caller's streams across the replicas are at its limit (`lease` is
            still the caller's to release).
    """
    caller = current_caller()
    if lease._slots is None or caller is None or caller.max_concurrent_streams is None:
        return
    shared = await store.acquire(caller.name, caller.max_concurrent_streams)
    if shared is None:
        raise _at_limit(caller.name, caller.max_concurrent_streams)
    lease._shared = shared


def _at_limit(name: str, limit: int) -> CallerRefusedError:
    """The one refusal of a caller at its own limit, counted here or across replicas."""
    return CallerRefusedError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        f"caller {name!r} is serving its limit of {limit} concurrent streams; retry shortly",
        "caller_limit",
    )


class CallerAuthInterceptor(grpc.aio.ServerInterceptor):
    """Admits calls whose bearer token belongs to a known caller; health stays open.

    The table is read through `table()` on every call, so a reload takes effect
    for the next call.
    """

    def __init__(self, table: Callable[[], CallerTable]) -> None:
        self._table = table

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[_Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> _Handler | None:
        """Pass known callers' calls (carrying the caller) and health checks through."""
        handler = await continuation(handler_call_details)
        if handler is None or handler_call_details.method.startswith(_HEALTH_PREFIX):
            return handler
        token = _bearer(handler_call_details.invocation_metadata)
        caller = self._table().identify(token) if token is not None else None
        if caller is None:
            return _rejecting(handler)
        return _with_caller(handler, caller)


def _bearer(metadata: Iterable[tuple[str, str | bytes]] | None) -> str | None:
    for key, value in metadata or ():
        if key == "authorization":
            text = value.decode("latin-1") if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


def _with_caller(handler: _Handler, caller: Caller) -> _Handler:
    """`handler` run with `caller` as the current caller (Chat's unary calls)."""
    serde = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    # Our Chat handlers are coroutines (ChatStream writes, see service.py);
    # the stubs type every behaviour as synchronous.
    if handler.unary_stream is not None:
        inner = cast(Callable[..., Awaitable[Any]], handler.unary_stream)
        return grpc.unary_stream_rpc_method_handler(_acting_as(caller, inner), **serde)
    if handler.unary_unary is not None:
        inner = cast(Callable[..., Awaitable[Any]], handler.unary_unary)
        return grpc.unary_unary_rpc_method_handler(_acting_as(caller, inner), **serde)
    return handler


def _acting_as(
    caller: Caller, inner: Callable[..., Awaitable[Any]]
) -> Callable[..., Awaitable[Any]]:
    async def behavior(request: object, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        with acting_as(caller):
            return await inner(request, context)

    return behavior


def _rejecting(handler: _Handler) -> _Handler:
    """A handler of the same shape as `handler` that answers UNAUTHENTICATED."""

    async def deny(_request: object, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        metrics.record_refused("unauthenticated")
        await context.abort(
            grpc.StatusCode.UNAUTHENTICATED,
            "missing or invalid bearer token (send metadata `authorization: Bearer <token>`)",
        )

    serde = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(deny, **serde)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(deny, **serde)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(deny, **serde)
    return grpc.unary_unary_rpc_method_handler(deny, **serde)
