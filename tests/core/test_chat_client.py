"""GrpcChatClient against an in-process grpc.aio server with a scripted servicer."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from navagent.core.chat_client import (
    GatewayConfigError,
    GatewayUnreachableError,
    GrpcChatClient,
    RoutingHintsUnavailableError,
    TlsConfig,
    error_from_status,
    open_stream,
)
from navagent.core.convert import request_from_proto
from navagent.core.events import (
    MessageComplete,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallStart,
    TurnEnd,
    Usage,
)
from navagent.core.messages import AssistantMessage, ChatRequest, ToolCall, UserMessage
from tests.certs import Pki, make_pki
from tests.core.fakes import TOOLS

REQUEST = ChatRequest(messages=(UserMessage(content="hi"),), tools=TOOLS, max_tokens=64)
FINAL = pb.ChatStreamEvent(message=pb.ChatMessage(role="assistant", content="hello"))
TOKEN = "s3cret-token-value"

Behaviour = Callable[[pb.ChatStreamRequest, Any], AsyncIterator[pb.ChatStreamEvent]]


def delta(text: str) -> pb.ChatStreamEvent:
    return pb.ChatStreamEvent(content_delta=pb.ContentDelta(text=text))


async def hello(request: pb.ChatStreamRequest, context: Any) -> AsyncIterator[pb.ChatStreamEvent]:
    yield delta("hel")
    yield delta("lo")
    yield FINAL


class ScriptedServicer(chat_pb2_grpc.ChatServicer):
    """Plays `behaviour` for each call and notes what the server saw."""

    def __init__(self) -> None:
        self.behaviour: Behaviour = hello
        self.requests: list[pb.ChatStreamRequest] = []
        self.metadata: list[dict[str, Any]] = []
        self.cancelled = asyncio.Event()
        self.target = ""
        self.hints: tuple[str, ...] | None = None
        """What ListRoutingHints answers; None: UNIMPLEMENTED, as an older gateway."""

    async def ListRoutingHints(
        self, request: pb.ListRoutingHintsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ListRoutingHintsResponse:
        self.metadata.append(dict(context.invocation_metadata() or ()))
        if self.hints is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not implemented!")
        return pb.ListRoutingHintsResponse(routing_hints=self.hints)

    async def ChatStream(
        self, request: pb.ChatStreamRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.ChatStreamEvent]:
        self.requests.append(request)
        self.metadata.append(dict(context.invocation_metadata() or ()))
        try:
            async for event in self.behaviour(request, context):
                yield event
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


async def start_server(
    credentials: grpc.ServerCredentials | None = None,
) -> tuple[grpc.aio.Server, ScriptedServicer]:
    server = grpc.aio.server()
    servicer = ScriptedServicer()
    chat_pb2_grpc.add_ChatServicer_to_server(servicer, server)
    if credentials is None:
        port = server.add_insecure_port("127.0.0.1:0")
    else:
        port = server.add_secure_port("127.0.0.1:0", credentials)
    await server.start()
    servicer.target = f"127.0.0.1:{port}"
    return server, servicer


@pytest.fixture
async def gateway() -> AsyncIterator[ScriptedServicer]:
    server, servicer = await start_server()
    yield servicer
    await server.stop(None)


async def collect(client: GrpcChatClient, request: ChatRequest = REQUEST) -> list[StreamEvent]:
    return [event async for event in client.stream(request)]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_chat_client_decodes_events_and_sends_extended_request(
    gateway: ScriptedServicer,
) -> None:
    async def every_kind(
        request: pb.ChatStreamRequest, context: Any
    ) -> AsyncIterator[pb.ChatStreamEvent]:
        yield pb.ChatStreamEvent(thinking_delta=pb.ThinkingDelta(text="hmm"))
        yield delta("Listing")
        yield pb.ChatStreamEvent()  # an extension this client does not know: skipped
        yield pb.ChatStreamEvent(
            tool_call_start=pb.ToolCallStart(index=0, id="c1", name="sandbox_list")
        )
        yield pb.ChatStreamEvent(
            turn_end=pb.TurnEnd(
                finish_reason="tool_calls", usage=pb.Usage(input_tokens=7, output_tokens=3)
            )
        )
        yield pb.ChatStreamEvent(
            message=pb.ChatMessage(
                role="assistant",
                content="Listing",
                tool_calls=[pb.ToolCall(id="c1", name="sandbox_list", arguments="{}")],
            )
        )

    gateway.behaviour = every_kind
    async with GrpcChatClient(gateway.target) as client:
        events = await collect(client)

    assert events == [
        ThinkingDelta(text="hmm"),
        TextDelta(text="Listing"),
        ToolCallStart(index=0, id="c1", name="sandbox_list"),
        TurnEnd(finish_reason="tool_calls", usage=Usage(input_tokens=7, output_tokens=3)),
        MessageComplete(
            message=AssistantMessage(
                content="Listing", tool_calls=(ToolCall(id="c1", name="sandbox_list"),)
            )
        ),
    ]
    (received,) = gateway.requests
    assert received.extended_events
    assert request_from_proto(received) == REQUEST


async def test_chat_client_stream_without_terminal_event(gateway: ScriptedServicer) -> None:
    async def trails_off(request: Any, context: Any) -> AsyncIterator[pb.ChatStreamEvent]:
        yield delta("and then")

    gateway.behaviour = trails_off
    async with GrpcChatClient(gateway.target) as client:
        events = await collect(client)

    assert events[0] == TextDelta(text="and then")
    assert isinstance(events[1], StreamError)
    assert events[1].error.message == (
        "the gateway ended the stream without a final message or an error"
    )
    assert len(events) == 2


async def test_chat_client_stops_at_the_first_terminal_event(gateway: ScriptedServicer) -> None:
    async def chatty(request: Any, context: Any) -> AsyncIterator[pb.ChatStreamEvent]:
        yield FINAL
        yield delta("after the end")
        yield FINAL

    gateway.behaviour = chatty
    async with GrpcChatClient(gateway.target) as client:
        events = await collect(client)
    assert events == [MessageComplete(message=AssistantMessage(content="hello"))]


async def test_chat_client_invalid_event_becomes_an_error(gateway: ScriptedServicer) -> None:
    async def wrong_role(request: Any, context: Any) -> AsyncIterator[pb.ChatStreamEvent]:
        yield pb.ChatStreamEvent(message=pb.ChatMessage(role="user", content="?"))

    gateway.behaviour = wrong_role
    async with GrpcChatClient(gateway.target) as client:
        (event,) = await collect(client)
    assert isinstance(event, StreamError)
    assert event.error.message.startswith("the gateway sent an invalid event: message: final")


STATUS_CASES = [
    (
        grpc.StatusCode.UNAVAILABLE,
        "going away",
        "upstream_unavailable",
        True,
        "cannot reach the gateway at {target}",
    ),
    (
        grpc.StatusCode.UNAUTHENTICATED,
        "bad token",
        "auth",
        False,
        "the gateway at {target} rejected the credentials: bad token; pass the token with"
        " --auth-token-env VAR (the variable holding it)",
    ),
    (
        grpc.StatusCode.PERMISSION_DENIED,
        "not yours",
        "auth",
        False,
        "the gateway refused this request: not yours",
    ),
    (
        grpc.StatusCode.FAILED_PRECONDITION,
        "no route for routing_hint 'agent'; add one to routes.yaml",
        "invalid_request",
        False,
        "no route for routing_hint 'agent'; add one to routes.yaml",
    ),
    (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "slow down",
        "rate_limited",
        True,
        "the gateway is out of capacity: slow down",
    ),
    # Issue 9: gRPC's size check is not rate limiting; say what it is.
    (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "Received message larger than max (5000000 vs. 4194304)",
        "invalid_request",
        False,
        "a message was larger than gRPC allows (Received message larger than max "
        "(5000000 vs. 4194304)); the gateway caps its messages with --max-message-bytes "
        "and the request size with --max-request-bytes",
    ),
    (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "the gateway is serving its limit of 2 concurrent streams; retry shortly",
        "overloaded",
        True,
        "the gateway is serving its limit of 2 concurrent streams; retry shortly",
    ),
    (
        grpc.StatusCode.DEADLINE_EXCEEDED,
        "late",
        "timeout",
        True,
        "the call to the gateway at {target} timed out",
    ),
    (
        grpc.StatusCode.INVALID_ARGUMENT,
        "messages[0]: unknown role",
        "invalid_request",
        False,
        "the gateway rejected the request: messages[0]: unknown role",
    ),
    (
        grpc.StatusCode.INTERNAL,
        "boom",
        "internal",
        False,
        "the gateway call failed (INTERNAL): boom",
    ),
    (
        grpc.StatusCode.UNIMPLEMENTED,
        "",
        "invalid_request",
        False,
        "the server at {target} does not offer navigator.chat.v1 Chat/ChatStream",
    ),
]


@pytest.mark.parametrize(
    ("status", "details", "code", "retryable", "message"),
    STATUS_CASES,
    ids=[case[0].name for case in STATUS_CASES],
)
async def test_chat_client_maps_grpc_status(
    gateway: ScriptedServicer,
    status: grpc.StatusCode,
    details: str,
    code: str,
    retryable: bool,
    message: str,
) -> None:
    async def aborts(request: Any, context: Any) -> AsyncIterator[pb.ChatStreamEvent]:
        await context.abort(status, details)
        yield FINAL  # pragma: no cover - abort raises

    gateway.behaviour = aborts
    async with GrpcChatClient(gateway.target) as client:
        (event,) = await collect(client)

    assert isinstance(event, StreamError)
    assert event.error.message == message.format(target=gateway.target)
    assert (event.error.code, event.error.retryable) == (code, retryable)


def test_error_from_status_unimplemented_and_cancelled_without_server() -> None:
    cancelled = error_from_status(grpc.StatusCode.CANCELLED, "", target="h:1")
    assert (cancelled.error.code, cancelled.error.message) == (
        "cancelled",
        "the gateway cancelled the call",
    )
    unknown = error_from_status(None, None, target="h:1")
    assert unknown.error.message == "the gateway call failed (UNKNOWN)"


async def test_chat_client_first_event_timeout_cancels_the_call(
    gateway: ScriptedServicer,
) -> None:
    async def silent(request: Any, context: Any) -> AsyncIterator[pb.ChatStreamEvent]:
        await asyncio.sleep(30)
        yield FINAL

    gateway.behaviour = silent
    async with GrpcChatClient(gateway.target, first_event_timeout=0.2) as client:
        (event,) = await collect(client)

    assert isinstance(event, StreamError)
    assert event.error.code == "timeout"
    assert event.error.message == (
        f"the gateway at {gateway.target} sent nothing for 0.2 s while waiting for the first event"
    )
    async with asyncio.timeout(1):
        await gateway.cancelled.wait()


async def test_chat_client_idle_timeout_between_events(gateway: ScriptedServicer) -> None:
    async def stalls(request: Any, context: Any) -> AsyncIterator[pb.ChatStreamEvent]:
        yield delta("one")
        await asyncio.sleep(30)
        yield FINAL

    gateway.behaviour = stalls
    client = GrpcChatClient(gateway.target, first_event_timeout=5, idle_timeout=0.2)
    async with client:
        events = await collect(client)

    assert events[0] == TextDelta(text="one")
    assert isinstance(events[1], StreamError) and events[1].error.code == "timeout"
    assert events[1].error.message.endswith(
        "sent nothing for 0.2 s while waiting for the next event"
    )
    async with asyncio.timeout(1):
        await gateway.cancelled.wait()


async def test_chat_client_sends_bearer_token_and_never_shows_it(
    gateway: ScriptedServicer,
) -> None:
    async def echoes_token(request: Any, context: Any) -> AsyncIterator[pb.ChatStreamEvent]:
        header = dict(context.invocation_metadata())["authorization"]
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, f"unknown credential {header}")
        yield FINAL  # pragma: no cover

    async with GrpcChatClient(gateway.target, bearer_token=TOKEN) as client:
        await collect(client)
        gateway.behaviour = echoes_token
        (event,) = await collect(client)
        shown = repr(client)

    assert gateway.metadata[0]["authorization"] == f"Bearer {TOKEN}"
    assert isinstance(event, StreamError) and event.error.code == "auth"
    assert TOKEN not in event.error.message
    assert "unknown credential Bearer [redacted]" in event.error.message
    assert TOKEN not in shown and "bearer token set" in shown


async def test_chat_client_without_token_sends_no_authorization(
    gateway: ScriptedServicer,
) -> None:
    async with GrpcChatClient(gateway.target) as client:
        await collect(client)
    assert "authorization" not in gateway.metadata[0]


async def test_chat_client_unreachable_target() -> None:
    target = f"127.0.0.1:{closed_port()}"
    async with GrpcChatClient(target) as client:
        (event,) = await collect(client)
        with pytest.raises(GatewayUnreachableError) as unreachable:
            await client.wait_ready(0.3)

    assert isinstance(event, StreamError)
    assert (event.error.code, event.error.message) == (
        "upstream_unavailable",
        f"cannot reach the gateway at {target}",
    )
    assert str(unreachable.value) == (
        f"cannot reach the gateway at {target} (connection refused: nothing is listening there)"
    )


async def test_chat_client_refused_connection_is_reported_before_the_timeout() -> None:
    target = f"127.0.0.1:{closed_port()}"
    loop = asyncio.get_running_loop()
    async with GrpcChatClient(target) as client:
        started = loop.time()
        with pytest.raises(GatewayUnreachableError, match="connection refused"):
            await client.wait_ready(5)
        assert loop.time() - started < 2.5


async def test_chat_client_silent_listener_waits_for_the_timeout() -> None:
    # Accepts TCP but never speaks HTTP/2: not refused, so it is the timeout.
    accepted: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda _r, w: accepted.append(w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, GrpcChatClient(f"127.0.0.1:{port}") as client:
        with pytest.raises(GatewayUnreachableError, match="no connection within 0.5 s"):
            await client.wait_ready(0.5)
    for writer in accepted:
        writer.close()


def test_chat_client_invalid_ca_file_says_so(tmp_path: Path) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text("this is not a certificate\n")
    with pytest.raises(GatewayConfigError, match=f"the TLS CA file {bad} is invalid"):
        GrpcChatClient("h:1", tls=TlsConfig(ca_file=bad))


async def test_chat_client_wait_ready_against_a_live_gateway(gateway: ScriptedServicer) -> None:
    async with GrpcChatClient(gateway.target) as client:
        await client.wait_ready(2)
        assert await collect(client)


async def test_chat_client_cancelled_consumer_cancels_the_call(gateway: ScriptedServicer) -> None:
    async def endless(request: Any, context: Any) -> AsyncIterator[pb.ChatStreamEvent]:
        yield delta("thinking")
        await asyncio.sleep(30)
        yield FINAL

    gateway.behaviour = endless
    first = asyncio.Event()

    async def consume(client: GrpcChatClient) -> None:
        async for _event in client.stream(REQUEST):
            first.set()

    async with GrpcChatClient(gateway.target) as client:
        task = asyncio.create_task(consume(client))
        await asyncio.wait_for(first.wait(), 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        async with asyncio.timeout(1):
            await gateway.cancelled.wait()


async def test_chat_client_closing_the_stream_early_cancels_the_call(
    gateway: ScriptedServicer,
) -> None:
    async def endless(request: Any, context: Any) -> AsyncIterator[pb.ChatStreamEvent]:
        yield delta("a")
        await asyncio.sleep(30)
        yield FINAL

    gateway.behaviour = endless
    async with GrpcChatClient(gateway.target) as client:
        async with open_stream(client, REQUEST) as events:
            async for _event in events:
                break
        async with asyncio.timeout(1):
            await gateway.cancelled.wait()


def test_chat_client_config_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    with pytest.raises(GatewayConfigError, match=f"cannot read the TLS CA file {missing}"):
        GrpcChatClient("h:1", tls=TlsConfig(ca_file=missing))
    with pytest.raises(GatewayConfigError, match="needs both a client certificate and its key"):
        GrpcChatClient("h:1", tls=TlsConfig(cert_file=missing))
    for token in ("two words", "tab\there", "tök", " "):
        with pytest.raises(GatewayConfigError, match="whitespace or non-ASCII") as bad:
            GrpcChatClient("h:1", bearer_token=token)
        assert token.strip() not in str(bad.value) or not token.strip()
    with pytest.raises(GatewayConfigError, match="positive"):
        GrpcChatClient("h:1", idle_timeout=0)
    with pytest.raises(GatewayConfigError, match="HOST:PORT"):
        GrpcChatClient(" ")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    made = make_pki(tmp_path_factory.mktemp("pki"))
    if made is None:
        pytest.skip("neither the cryptography package nor the openssl command is available")
    return made


@pytest.fixture
async def tls_gateway(pki: Pki) -> AsyncIterator[ScriptedServicer]:
    credentials = grpc.ssl_server_credentials(
        [(pki.server_key.read_bytes(), pki.server_cert.read_bytes())],
        root_certificates=pki.ca.read_bytes(),
        require_client_auth=True,
    )
    server, servicer = await start_server(credentials)
    yield servicer
    await server.stop(None)


async def test_chat_client_mutual_tls(tls_gateway: ScriptedServicer, pki: Pki) -> None:
    tls = TlsConfig(ca_file=pki.ca, cert_file=pki.client_cert, key_file=pki.client_key)
    async with GrpcChatClient(tls_gateway.target, tls=tls, bearer_token=TOKEN) as client:
        await client.wait_ready(5)
        events = await collect(client)
        assert "tls" in repr(client)
    assert events[-1] == MessageComplete(message=AssistantMessage(content="hello"))
    assert tls_gateway.metadata[0]["authorization"] == f"Bearer {TOKEN}"


async def test_chat_client_tls_server_name_override(
    tls_gateway: ScriptedServicer, pki: Pki
) -> None:
    tls = TlsConfig(
        ca_file=pki.ca,
        cert_file=pki.client_cert,
        key_file=pki.client_key,
        server_name="gateway.test",
    )
    async with GrpcChatClient(tls_gateway.target, tls=tls) as client:
        events = await collect(client)
    assert isinstance(events[-1], MessageComplete)


@pytest.mark.parametrize(
    "case", ["untrusted-ca", "no-client-cert", "plaintext", "wrong-server-name"]
)
async def test_chat_client_tls_failures_are_unreachable(
    tls_gateway: ScriptedServicer, pki: Pki, case: str
) -> None:
    tls: TlsConfig | None = {
        "untrusted-ca": TlsConfig(
            ca_file=pki.other_ca, cert_file=pki.client_cert, key_file=pki.client_key
        ),
        "no-client-cert": TlsConfig(ca_file=pki.ca),
        "plaintext": None,
        "wrong-server-name": TlsConfig(
            ca_file=pki.ca,
            cert_file=pki.client_cert,
            key_file=pki.client_key,
            server_name="elsewhere.test",
        ),
    }[case]
    async with GrpcChatClient(tls_gateway.target, tls=tls) as client:
        events = await collect(client)
    assert len(events) == 1 and isinstance(events[0], StreamError)
    assert events[0].error.code == "upstream_unavailable"
    assert not tls_gateway.requests, "the servicer must never be reached"


# Issue 20, item 9: /model asks the gateway which routing hints it has.
async def test_chat_client_lists_routing_hints_with_the_token(gateway: ScriptedServicer) -> None:
    gateway.hints = ("agent", "fast")
    async with GrpcChatClient(gateway.target, bearer_token="s3cret-token") as client:
        assert await client.routing_hints() == ("agent", "fast")
    assert gateway.metadata[-1]["authorization"] == "Bearer s3cret-token"


async def test_chat_client_routing_hints_of_an_older_gateway_are_unsupported(
    gateway: ScriptedServicer,
) -> None:
    async with GrpcChatClient(gateway.target) as client:
        with pytest.raises(RoutingHintsUnavailableError) as info:
            await client.routing_hints()
    assert info.value.unsupported
    assert "cannot list its routing hints" in str(info.value)


async def test_chat_client_routing_hints_from_nowhere_say_why() -> None:
    async with GrpcChatClient(f"127.0.0.1:{closed_port()}") as client:
        with pytest.raises(RoutingHintsUnavailableError) as info:
            await client.routing_hints()
    assert not info.value.unsupported
    assert "cannot reach the gateway" in str(info.value)
