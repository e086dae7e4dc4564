"""The gRPC gateway end to end in-process: gRPC client -> server -> MockTransport provider."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from navagent.gateway.routes import RouteTable
from navagent.gateway.server import Gateway
from navagent.gateway.settings import GatewaySettings
from tests.certs import make_pki
from tests.fixed_schema import CHAT_STREAM_METHOD, fixed_schema
from tests.gateway.provider_bodies import openai_text, openai_tool_call
from tests.gateway.streams import transcript
from tests.gateway.test_dispatch import KEY, Provider, route, status, stream, table

HELLO = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="hello")])
StartGateway = Callable[..., Awaitable[Gateway]]


@pytest.fixture
async def start_gateway() -> AsyncIterator[StartGateway]:
    running: list[Gateway] = []

    async def start(routes: RouteTable, provider: Provider, **settings: Any) -> Gateway:
        gateway = Gateway(
            GatewaySettings(listen="127.0.0.1:0", **settings),
            routes,
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(provider)),
        )
        await gateway.start()
        running.append(gateway)
        return gateway

    yield start
    for gateway in running:
        await gateway.stop(grace_s=0)


async def call(
    gateway: Gateway,
    request: pb.ChatStreamRequest = HELLO,
    *,
    metadata: tuple[tuple[str, str], ...] = (),
) -> list[pb.ChatStreamEvent]:
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        stub = chat_pb2_grpc.ChatStub(channel)
        return [event async for event in stub.ChatStream(request, metadata=metadata)]


def kinds(events: list[pb.ChatStreamEvent]) -> list[str]:
    return [str(event.WhichOneof("event")) for event in events]


async def test_text_stream_without_extensions_has_only_fixed_events(start_gateway) -> None:
    gateway = await start_gateway(table(route("a")), Provider(a=[stream(openai_text("Hel", "lo"))]))
    events = await call(gateway)
    # Deltas that arrive together may be merged; their text is what matters.
    assert set(kinds(events)[:-1]) == {"content_delta"} and kinds(events)[-1] == "message"
    assert "".join(e.content_delta.text for e in events[:-1]) == "Hello"
    assert events[-1].message.content == "Hello" and events[-1].message.role == "assistant"


async def test_extended_events_add_tool_call_start_and_turn_end(start_gateway) -> None:
    provider = Provider(a=[stream(openai_tool_call("call_9", "sandbox_list", "{}"))])
    gateway = await start_gateway(table(route("a")), provider)
    request = pb.ChatStreamRequest(messages=HELLO.messages, extended_events=True)
    events = await call(gateway, request)
    assert kinds(events) == ["tool_call_start", "turn_end", "message"]
    assert events[0].tool_call_start.name == "sandbox_list"
    assert events[1].turn_end.finish_reason == "tool_calls"
    assert events[2].message.tool_calls[0].id == "call_9"


async def test_fixed_schema_client_streams_successfully(start_gateway) -> None:
    # What the Navigator `nav` client knows: only the fixed fields.
    fixed = fixed_schema()
    gateway = await start_gateway(table(route("a")), Provider(a=[stream(openai_text("Hi"))]))
    request = fixed.ChatStreamRequest(
        messages=[fixed.ChatMessage(role="user", content="hello")],
        tools=[fixed.Tool(name="sandbox_list", description="List", parameters_schema="{}")],
    )
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        method = channel.unary_stream(
            CHAT_STREAM_METHOD,
            request_serializer=fixed.ChatStreamRequest.SerializeToString,
            response_deserializer=fixed.ChatStreamEvent.FromString,
        )
        events = [event async for event in method(request)]
    assert [e.WhichOneof("event") for e in events] == ["content_delta", "message"]
    assert events[-1].message.content == "Hi"


async def test_refusal_is_its_own_event_for_extended_clients_and_text_for_fixed_ones(
    start_gateway,
) -> None:
    refusal = "I’m sorry, I can’t help with that."
    provider = Provider(a=[stream([transcript("openai", "refusal_deltas")])] * 2)
    gateway = await start_gateway(table(route("a")), provider)

    extended = await call(
        gateway, pb.ChatStreamRequest(messages=HELLO.messages, extended_events=True)
    )
    assert set(kinds(extended)[:-2]) == {"refusal_delta"}
    assert "".join(e.refusal_delta.text for e in extended[:-2]) == refusal
    assert extended[-2].turn_end.finish_reason == "refusal"
    assert (extended[-1].message.content, extended[-1].message.refusal) == ("", refusal)

    fixed = fixed_schema()
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        method = channel.unary_stream(
            CHAT_STREAM_METHOD,
            request_serializer=fixed.ChatStreamRequest.SerializeToString,
            response_deserializer=fixed.ChatStreamEvent.FromString,
        )
        request = fixed.ChatStreamRequest(messages=[fixed.ChatMessage(role="user", content="hi")])
        plain = [event async for event in method(request)]
    assert {e.WhichOneof("event") for e in plain[:-1]} == {"content_delta"}
    assert "".join(e.content_delta.text for e in plain[:-1]) == refusal
    assert plain[-1].message.content == refusal


async def test_upstream_error_is_one_error_event(start_gateway) -> None:
    provider = Provider(a=[status(401, b'{"error": {"message": "bad key", "type": "x"}}')])
    gateway = await start_gateway(table(route("a")), provider)
    events = await call(gateway, pb.ChatStreamRequest(messages=HELLO.messages))
    assert kinds(events) == ["error"]
    error = events[0].error
    assert (error.status_code, error.code, error.retryable) == (401, pb.ERROR_CODE_AUTH, False)
    assert "bad key" in error.message


async def test_no_route_is_failed_precondition_saying_how_to_add_one(start_gateway) -> None:
    gateway = await start_gateway(table(route("a")), Provider())
    request = pb.ChatStreamRequest(messages=HELLO.messages, routing_hint="batch")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call(gateway, request)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "'batch'" in str(info.value.details()) and "routing_hint: batch" in str(
        info.value.details()
    )


async def test_empty_hint_means_agent(start_gateway) -> None:
    gateway = await start_gateway(table(route("a")), Provider(a=[stream(openai_text("ok"))]))
    events = await call(gateway, pb.ChatStreamRequest(messages=HELLO.messages, routing_hint=""))
    assert events[-1].message.content == "ok"


async def test_invalid_request_is_invalid_argument_naming_the_field(start_gateway) -> None:
    gateway = await start_gateway(table(route("a")), Provider())
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call(gateway, pb.ChatStreamRequest(messages=[pb.ChatMessage(role="robot")]))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "messages[0]: unknown role 'robot'" in str(info.value.details())


async def test_bearer_auth(start_gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAV_TEST_GATEWAY_TOKEN", "s3cret-token")
    provider = Provider(a=[stream(openai_text("in"))])
    gateway = await start_gateway(
        table(route("a")), provider, auth_token_env="NAV_TEST_GATEWAY_TOKEN"
    )
    for metadata in [
        (),
        (("authorization", "Bearer wrong"),),
        (("authorization", "s3cret-token"),),
    ]:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await call(gateway, metadata=metadata)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "s3cret-token" not in str(info.value.details())
    assert provider.requests == []
    events = await call(gateway, metadata=(("authorization", "Bearer s3cret-token"),))
    assert events[-1].message.content == "in"
    # Health stays open without a token.
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="navigator.chat.v1.Chat")
        )
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_reflection_lists_the_chat_service(start_gateway) -> None:
    gateway = await start_gateway(table(route("a")), Provider())
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        responses = stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        )
        reply = await anext(aiter(responses))
    names = {service.name for service in reply.list_services_response.service}
    assert {"navigator.chat.v1.Chat", "grpc.health.v1.Health"} <= names


async def test_tls_and_mutual_tls(start_gateway, tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    if pki is None:
        pytest.skip("neither the cryptography package nor openssl is available")
    provider = Provider(a=[stream(openai_text("tls")), stream(openai_text("mtls"))])
    routes = table(route("a"))
    tls = await start_gateway(routes, provider, tls_cert=pki.server_cert, tls_key=pki.server_key)
    mtls = await start_gateway(
        routes,
        provider,
        tls_cert=pki.server_cert,
        tls_key=pki.server_key,
        tls_client_ca=pki.ca,
    )
    ca = pki.ca.read_bytes()

    async def secure_call(gateway: Gateway, credentials: grpc.ChannelCredentials) -> str:
        async with grpc.aio.secure_channel(gateway.address, credentials) as channel:
            events = [e async for e in chat_pb2_grpc.ChatStub(channel).ChatStream(HELLO)]
        return events[-1].message.content

    assert await secure_call(tls, grpc.ssl_channel_credentials(ca)) == "tls"
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await secure_call(mtls, grpc.ssl_channel_credentials(ca))
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    client = grpc.ssl_channel_credentials(
        ca, pki.client_key.read_bytes(), pki.client_cert.read_bytes()
    )
    assert await secure_call(mtls, client) == "mtls"


async def test_concurrent_stream_limit(start_gateway) -> None:
    slow = stream(openai_text(*["x"] * 40), delay=0.05)
    gateway = await start_gateway(table(route("a")), Provider(a=[slow]), max_concurrent_streams=1)
    first = asyncio.create_task(call(gateway))
    while gateway.service.active_streams == 0:
        await asyncio.sleep(0.01)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call(gateway)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "limit of 1 concurrent streams" in str(info.value.details())
    assert (await first)[-1].message.content == "x" * 40


async def test_request_size_limit(start_gateway) -> None:
    gateway = await start_gateway(table(route("a")), Provider(), max_request_bytes=4096)
    big = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="y" * 10_000)])
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call(gateway, big)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_graceful_shutdown_lets_streams_finish_within_grace(start_gateway) -> None:
    provider = Provider(a=[stream(openai_text("a", "b", "c"), delay=0.05)])
    gateway = await start_gateway(table(route("a")), provider)
    running = asyncio.create_task(call(gateway))
    while gateway.service.active_streams == 0:
        await asyncio.sleep(0.01)
    await gateway.stop(grace_s=5)
    assert (await running)[-1].message.content == "abc"


async def test_graceful_shutdown_ends_overdue_streams_with_an_error_event(start_gateway) -> None:
    provider = Provider(a=[stream(openai_text(*["z"] * 200), delay=0.05)])
    gateway = await start_gateway(table(route("a")), provider)
    running = asyncio.create_task(call(gateway))
    while gateway.service.active_streams == 0:
        await asyncio.sleep(0.01)
    await asyncio.wait_for(gateway.stop(grace_s=0.2), 5)
    events = await running
    assert events[-1].WhichOneof("event") == "error"
    assert events[-1].error.code == pb.ERROR_CODE_CANCELLED and events[-1].error.retryable
    assert "shutting down" in events[-1].error.message
    assert not any(e.WhichOneof("event") == "message" for e in events)


async def test_logs_say_ready_and_one_line_per_stream_without_keys(
    start_gateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="navagent.gateway")
    provider = Provider(
        a=[stream(openai_text("ok")), status(429, b'{"error": {"message": "slow"}}')]
        + [status(429, b"{}")] * 2
    )
    gateway = await start_gateway(table(route("a")), provider)
    await call(gateway)
    await call(gateway)
    lines = [record.getMessage() for record in caplog.records]
    ready = next(line for line in lines if line.startswith("gateway ready"))
    assert gateway.address in ready and "1 route(s)" in ready
    assert "agent->openai_chat_completions" in ready
    assert ready.endswith(f"; nav-agent {version('nav-agent')}")  # which build a report is from
    streams = [line for line in lines if line.startswith("stream ")]
    assert len(streams) == 2
    assert "route=a protocol=openai_chat_completions model=model-a" in streams[0]
    assert "outcome=ok" in streams[0] and "tokens_in=11 tokens_out=1" in streams[0]
    assert "ttft=" in streams[0] and "ttft=-" not in streams[0]
    assert "attempts=3" in streams[1] and "outcome=error:rate_limited" in streams[1]
    assert all(KEY not in line for line in lines)


async def test_deltas_that_pile_up_during_a_write_go_out_merged(start_gateway) -> None:
    # A provider far faster than gRPC writes: the text arrives intact in far
    # fewer messages than tokens (each write carries what arrived meanwhile).
    tokens = [f" t{i}" for i in range(500)]
    gateway = await start_gateway(table(route("a")), Provider(a=[stream(openai_text(*tokens))]))
    events = await call(gateway)
    deltas = [e.content_delta.text for e in events if e.WhichOneof("event") == "content_delta"]
    assert "".join(deltas) == "".join(tokens) == events[-1].message.content
    assert len(deltas) < len(tokens) / 2
