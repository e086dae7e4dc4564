"""The client side of `navigator.chat.v1`: one streamed completion per call.

`ChatClient` is what the agent loop depends on; `GrpcChatClient` is the real
one, talking to the gateway over `grpc.aio`. Whatever goes wrong on the wire,
`stream()` never raises (except `asyncio.CancelledError`): failures become a
`StreamError` with one clear sentence and a stable `ErrorCode`, and exactly one
terminal event is always the last thing yielded. The agent can then treat every
completion the same way, and the REPL prints one line instead of a traceback.

`routing_hints()` asks the gateway which routing hints it serves (the
`ListRoutingHints` extension), so `/model` can refuse an unknown one at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self, cast

import grpc
import grpc.aio

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from navagent.core.convert import event_from_proto, request_to_proto
from navagent.core.errors import InvalidMessageError, NavAgentError
from navagent.core.events import ChatError, ErrorCode, StreamError, StreamEvent, is_terminal
from navagent.core.messages import ChatRequest

__all__ = [
    "DEFAULT_FIRST_EVENT_TIMEOUT_S",
    "DEFAULT_IDLE_TIMEOUT_S",
    "LIST_HINTS_TIMEOUT_S",
    "ChatClient",
    "GatewayConfigError",
    "GatewayUnreachableError",
    "GrpcChatClient",
    "RoutingHintsUnavailableError",
    "TlsConfig",
    "error_from_status",
    "open_stream",
]

DEFAULT_FIRST_EVENT_TIMEOUT_S = 120.0
"""How long to wait for the first event: covers route selection, the
provider's time to first token (long for big prompts), and room for the
gateway to retry once within its own 60 s first-token limit."""
DEFAULT_IDLE_TIMEOUT_S = 60.0
"""How long the stream may stay silent between two events."""
LIST_HINTS_TIMEOUT_S = 5.0
"""How long `routing_hints()` waits: the gateway answers from memory."""


class ChatClient(Protocol):
    """Streams one completion; the agent loop's only view of the model."""

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Yield the completion's events, ending with exactly one terminal event.

        Implementations never raise except `asyncio.CancelledError`; failures are
        a final `StreamError`. Closing the iterator early (`aclose()`) or
        cancelling the consuming task cancels the underlying call.
        """
        ...


@asynccontextmanager
async def open_stream(
    client: ChatClient, request: ChatRequest
) -> AsyncGenerator[AsyncIterator[StreamEvent], None]:
    """Start `client.stream(request)` and close it when the block exits.

    An async generator abandoned after its terminal event, on an early exit or
    on an exception is only finalised by the garbage collector; closing it here
    cancels the underlying call at once.
    """
    events = client.stream(request)
    try:
        yield events
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


class GatewayConfigError(NavAgentError, ValueError):
    """The client options are unusable (unreadable TLS file, malformed token)."""


class GatewayUnreachableError(NavAgentError):
    """`wait_ready` gave up: no connection to the gateway within the timeout."""


class RoutingHintsUnavailableError(NavAgentError):
    """The gateway did not list its routing hints; the message says why, in one sentence.

    `unsupported` is True when the gateway has no `ListRoutingHints` (an older
    gateway, or another implementation of the contract).
    """

    def __init__(self, message: str, *, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported


@dataclass(frozen=True)
class TlsConfig:
    """TLS settings for the gateway channel.

    Attributes:
        ca_file: PEM bundle that signs the gateway's certificate; None uses the
            system roots.
        cert_file: Client certificate chain (PEM) for mutual TLS.
        key_file: Private key (PEM) of `cert_file`; required with it.
        server_name: Name to verify the gateway's certificate against instead of
            the target host, for gateways reached by IP or through a tunnel.
    """

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    server_name: str | None = None


class GrpcChatClient:
    """`ChatClient` over a `grpc.aio` channel to the gateway's Chat service.

    The channel is opened lazily inside the running event loop and closed by
    `aclose()` or by leaving `async with`. The bearer token is sent as
    `authorization: Bearer <token>` metadata on every call (gRPC call
    credentials would refuse a plaintext channel, which local gateways use) and
    never appears in errors or in `repr()`.
    """

    def __init__(
        self,
        target: str,
        *,
        tls: TlsConfig | None = None,
        bearer_token: str | None = None,
        first_event_timeout: float = DEFAULT_FIRST_EVENT_TIMEOUT_S,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
        channel_options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        """Prepare a client; nothing connects until the first call.

        Args:
            target: The gateway as `HOST:PORT`.
            tls: TLS settings; None means a plaintext channel.
            bearer_token: Sent as `authorization: Bearer <token>` when set.
            first_event_timeout: Seconds to wait for the first event of a stream.
            idle_timeout: Seconds the stream may stay silent between events.
            channel_options: Extra gRPC channel arguments.

        Raises:
            GatewayConfigError: a TLS file cannot be read, a certificate has no
                key, a timeout is not positive, or the token has whitespace.
        """
        if not target.strip():
            raise GatewayConfigError("the gateway target is empty; expected HOST:PORT")
        if first_event_timeout <= 0 or idle_timeout <= 0:
            raise GatewayConfigError("stream timeouts must be positive numbers of seconds")
        self._target = target.strip()
        self._first_event_timeout = first_event_timeout
        self._idle_timeout = idle_timeout
        self._metadata: tuple[tuple[str, str], ...] = ()
        self._token = ""
        if bearer_token is not None:
            token = bearer_token.strip()
            # gRPC metadata values must be printable ASCII without spaces.
            if not token or not (token.isascii() and token.isprintable()) or " " in token:
                raise GatewayConfigError(
                    "the bearer token is empty or contains whitespace or non-ASCII characters"
                )
            self._token = token
            self._metadata = (("authorization", f"Bearer {token}"),)
        self._credentials = _channel_credentials(tls) if tls is not None else None
        options = list(channel_options)
        if tls is not None and tls.server_name:
            options.append(("grpc.ssl_target_name_override", tls.server_name))
        self._options = tuple(options)
        self._channel: grpc.aio.Channel | None = None

    @property
    def target(self) -> str:
        """The gateway address, `HOST:PORT`."""
        return self._target

    def __repr__(self) -> str:
        tls = "tls" if self._credentials is not None else "plaintext"
        auth = ", bearer token set" if self._token else ""
        return f"GrpcChatClient({self._target!r}, {tls}{auth})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the channel, cancelling calls still in flight; safe to repeat."""
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.close()

    async def wait_ready(self, timeout: float) -> None:
        """Connect now, so a CLI can fail fast before the user types anything.

        A refused TCP connection (nothing listens there) is reported at once;
        anything else slow or failing is retried until `timeout`.

        Raises:
            GatewayUnreachableError: the connection was refused, or no working
                connection within `timeout` s.
        """
        channel = self._get_channel()
        try:
            async with asyncio.timeout(timeout):
                state = channel.get_state(try_to_connect=True)
                while state is not grpc.ChannelConnectivity.READY:
                    if state is grpc.ChannelConnectivity.TRANSIENT_FAILURE and await _refused(
                        self._target
                    ):
                        raise GatewayUnreachableError(
                            f"cannot reach the gateway at {self._target} (connection refused:"
                            " nothing is listening there)"
                        )
                    await channel.wait_for_state_change(state)
                    state = channel.get_state(try_to_connect=True)
        except TimeoutError:
            raise GatewayUnreachableError(
                f"cannot reach the gateway at {self._target} (no connection within {timeout:g} s)"
            ) from None

    async def routing_hints(self) -> tuple[str, ...]:
        """The routing hints the gateway serves this client, sorted (one cheap call).

        Raises:
            RoutingHintsUnavailableError: the gateway cannot list them
                (`unsupported`), or the call failed; the message says which.
        """
        stub = chat_pb2_grpc.ChatStub(self._get_channel())
        try:
            response = await stub.ListRoutingHints(
                pb.ListRoutingHintsRequest(),
                metadata=self._metadata,
                timeout=LIST_HINTS_TIMEOUT_S,
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() is grpc.StatusCode.UNIMPLEMENTED:
                raise RoutingHintsUnavailableError(
                    f"the gateway at {self._target} cannot list its routing hints",
                    unsupported=True,
                ) from None
            failed = self._redacted(
                error_from_status(exc.code(), exc.details(), target=self._target)
            )
            raise RoutingHintsUnavailableError(failed.error.message) from None
        return tuple(response.routing_hints)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Stream one completion; see `ChatClient.stream` for the guarantees."""
        stub = chat_pb2_grpc.ChatStub(self._get_channel())
        call = stub.ChatStream(
            request_to_proto(request, extended_events=True), metadata=self._metadata
        )
        try:
            timeout, timeout_is_first = self._first_event_timeout, True
            while True:
                item = await self._read(call, timeout, first=timeout_is_first)
                if isinstance(item, StreamError):
                    yield item
                    return
                if item is None:
                    yield _error(
                        "the gateway ended the stream without a final message or an error",
                        "internal",
                        retryable=True,
                    )
                    return
                timeout, timeout_is_first = self._idle_timeout, False
                event = self._decode(item)
                if event is None:
                    continue
                yield event
                if is_terminal(event):
                    return
        finally:
            # No-op once the call is done; otherwise the server sees CANCELLED
            # at once, whether we stopped on a timeout, a terminal event, an
            # early aclose() or a cancelled consumer.
            call.cancel()

    async def _read(
        self,
        call: grpc.aio.UnaryStreamCall[pb.ChatStreamRequest, pb.ChatStreamEvent],
        timeout: float,
        *,
        first: bool,
    ) -> pb.ChatStreamEvent | StreamError | None:
        """Read one message; None at the end of the stream, a `StreamError` on failure."""
        try:
            async with asyncio.timeout(timeout):
                message = await call.read()
            return None if message is grpc.aio.EOF else cast(pb.ChatStreamEvent, message)
        except TimeoutError:
            call.cancel()
            waited = "the first event" if first else "the next event"
            return _error(
                f"the gateway at {self._target} sent nothing for {timeout:g} s while waiting"
                f" for {waited}",
                "timeout",
                retryable=True,
            )
        except grpc.aio.AioRpcError as exc:
            return self._redacted(error_from_status(exc.code(), exc.details(), target=self._target))
        except Exception as exc:  # the stream() contract: failures are events, never raised
            return self._redacted(
                _error(f"the gateway call failed ({type(exc).__name__}: {exc})", "internal")
            )

    def _decode(self, message: pb.ChatStreamEvent) -> StreamEvent | None:
        try:
            return event_from_proto(message)
        except InvalidMessageError as exc:
            return _error(f"the gateway sent an invalid event: {exc}", "internal")

    def _redacted(self, event: StreamError) -> StreamError:
        if not self._token or self._token not in event.error.message:
            return event
        message = event.error.message.replace(self._token, "[redacted]")
        return StreamError(error=event.error.model_copy(update={"message": message}))

    def _get_channel(self) -> grpc.aio.Channel:
        if self._channel is None:
            if self._credentials is None:
                self._channel = grpc.aio.insecure_channel(self._target, options=self._options)
            else:
                self._channel = grpc.aio.secure_channel(
                    self._target, self._credentials, options=self._options
                )
        return self._channel


def error_from_status(
    code: grpc.StatusCode | None, details: str | None, *, target: str
) -> StreamError:
    """Map a failed gRPC call's status to the one-sentence error the user sees.

    The gateway answers protocol-level problems with a status (no route,
    malformed request, quota) and upstream failures with an error event; this
    covers the former and the transport's own failures.
    """
    detail = (details or "").strip()
    match code:
        case grpc.StatusCode.UNAVAILABLE:
            return _error(f"cannot reach the gateway at {target}", "upstream_unavailable", True)
        case grpc.StatusCode.UNAUTHENTICATED:
            return _error(
                f"the gateway at {target} rejected the credentials"
                + (f": {detail}" if detail else "")
                + "; pass the token with --auth-token-env VAR (the variable holding it)",
                "auth",
            )
        case grpc.StatusCode.PERMISSION_DENIED:
            return _error(_with_detail("the gateway refused this request", detail), "auth")
        case grpc.StatusCode.FAILED_PRECONDITION:
            # The gateway's text says what to fix (e.g. how to add a route).
            return _error(detail or "the gateway cannot serve this request", "invalid_request")
        case grpc.StatusCode.INVALID_ARGUMENT:
            return _error(
                _with_detail("the gateway rejected the request", detail), "invalid_request"
            )
        case grpc.StatusCode.RESOURCE_EXHAUSTED:
            return _resource_exhausted(detail)
        case grpc.StatusCode.DEADLINE_EXCEEDED:
            return _error(f"the call to the gateway at {target} timed out", "timeout", True)
        case grpc.StatusCode.CANCELLED:
            return _error(_with_detail("the gateway cancelled the call", detail), "cancelled")
        case grpc.StatusCode.UNIMPLEMENTED:
            return _error(
                f"the server at {target} does not offer navigator.chat.v1 Chat/ChatStream",
                "invalid_request",
            )
        case _:
            name = code.name if code is not None else "UNKNOWN"
            return _error(_with_detail(f"the gateway call failed ({name})", detail), "internal")


def _resource_exhausted(detail: str) -> StreamError:
    """RESOURCE_EXHAUSTED has several causes; name the one this is."""
    if "larger than max" in detail or "message larger" in detail:
        # gRPC's own size check, in this client or the gateway: not rate limiting.
        return _error(
            f"a message was larger than gRPC allows ({detail}); the gateway caps its "
            "messages with --max-message-bytes and the request size with --max-request-bytes",
            "invalid_request",
        )
    if "concurrent streams" in detail:
        return _error(detail, "overloaded", True)
    return _error(_with_detail("the gateway is out of capacity", detail), "rate_limited", True)


def _with_detail(sentence: str, detail: str) -> str:
    return f"{sentence}: {detail}" if detail else sentence


def _error(message: str, code: ErrorCode, retryable: bool = False) -> StreamError:
    return StreamError(error=ChatError(message=message, code=code, retryable=retryable))


async def _refused(target: str) -> bool:
    """True when a TCP connect to `target` (`HOST:PORT`) is actively refused."""
    host, colon, port = target.rpartition(":")
    if not colon or not port.isdigit() or "/" in host:
        return False  # a gRPC URI (dns:///, unix:) we do not probe
    try:
        async with asyncio.timeout(1.0):
            _, writer = await asyncio.open_connection(host.strip("[]"), int(port))
    except ConnectionRefusedError:
        return True
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return False


def _channel_credentials(tls: TlsConfig) -> grpc.ChannelCredentials:
    if (tls.cert_file is None) != (tls.key_file is None):
        raise GatewayConfigError("mutual TLS needs both a client certificate and its key")
    ca = _read_pem(tls.ca_file, "CA")
    key = _read_pem(tls.key_file, "client key")
    cert = _read_pem(tls.cert_file, "client certificate")
    _check_pem(tls, ca)
    return grpc.ssl_channel_credentials(
        root_certificates=ca, private_key=key, certificate_chain=cert
    )


def _check_pem(tls: TlsConfig, ca: bytes | None) -> None:
    """Fail on unusable TLS files now; gRPC would only report an unreachable gateway."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if ca is not None:
        try:
            context.load_verify_locations(cadata=ca.decode("ascii", errors="replace"))
        except (ssl.SSLError, ValueError) as exc:
            raise GatewayConfigError(
                f"the TLS CA file {tls.ca_file} is invalid: not a PEM certificate bundle"
                f" ({getattr(exc, 'reason', None) or exc})"
            ) from None
    if tls.cert_file is not None and tls.key_file is not None:
        try:
            context.load_cert_chain(tls.cert_file, tls.key_file)
        except (ssl.SSLError, OSError) as exc:
            raise GatewayConfigError(
                f"the client certificate {tls.cert_file} or key {tls.key_file} is invalid"
                f" or they do not match ({getattr(exc, 'reason', None) or exc})"
            ) from None


def _read_pem(path: Path | None, what: str) -> bytes | None:
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise GatewayConfigError(
            f"cannot read the TLS {what} file {path}: {exc.strerror or exc}"
        ) from None
