"""The whole gateway path over real sockets: gRPC client -> gateway -> HTTP provider.

The provider is the simulated one from `navagent.fixtures.provider`, a real
HTTP server on 127.0.0.1, so these tests see what the MockTransport tests
cannot: socket-level idle timeouts, a provider that notices its client left,
and keep-alive across calls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from navagent.core.convert import message_from_proto, message_to_proto
from navagent.core.messages import AssistantMessage
from navagent.core.tools import TOOLS
from navagent.core.wire_formats import ROUTE_PROTOCOLS, WIRE_FORMATS
from navagent.fixtures.provider import SimulatedProvider
from navagent.fixtures.provider.wire._format import plugin_for
from navagent.gateway.routes import parse_routes
from navagent.gateway.server import Gateway
from navagent.gateway.settings import GatewaySettings
from tests.gateway.thinking_parts import payload_of

PROTOCOLS = ROUTE_PROTOCOLS
TOOL_PROTOS = [
    pb.Tool(name=t.name, description=t.description, parameters_schema="{}") for t in TOOLS
]


@pytest.fixture(scope="module")
def provider() -> Iterator[SimulatedProvider]:
    with SimulatedProvider() as sim:
        yield sim


@pytest.fixture(params=PROTOCOLS)
async def gateway(
    request: pytest.FixtureRequest, provider: SimulatedProvider
) -> AsyncIterator[Gateway]:
    provider.reset()
    provider.pacing_ms = 0
    routes = parse_routes(
        {
            "routes": [
                {
                    "routing_hint": "agent",
                    "endpoint": provider.base_url,
                    "model": "sim-1",
                    "protocols": [request.param],
                    "api_key": "sk-sim-e2e",
                }
            ]
        },
        source="e2e",
    )
    settings = GatewaySettings(listen="127.0.0.1:0", idle_timeout_s=0.5, attempts_per_route=1)
    gateway = Gateway(settings, routes)
    await gateway.start()
    yield gateway
    await gateway.stop(grace_s=0)


def ask(text: str) -> pb.ChatStreamRequest:
    return pb.ChatStreamRequest(
        messages=[pb.ChatMessage(role="user", content=text)],
        tools=TOOL_PROTOS,
        extended_events=True,
    )


async def collect(gateway: Gateway, request: pb.ChatStreamRequest) -> list[pb.ChatStreamEvent]:
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        return [e async for e in chat_pb2_grpc.ChatStub(channel).ChatStream(request)]


async def test_text_answer_streams_deltas_then_message(
    gateway: Gateway, provider: SimulatedProvider
) -> None:
    provider.pacing_ms = 5  # tokens slower than we forward them: each goes out alone
    events = await collect(gateway, ask("hello there"))
    deltas = [e.content_delta.text for e in events if e.WhichOneof("event") == "content_delta"]
    assert len(deltas) > 10  # streamed word by word, not in one piece
    final = events[-1]
    assert final.WhichOneof("event") == "message"
    assert final.message.content == "".join(deltas) and final.message.content


async def test_parallel_tool_calls_arrive_complete(gateway: Gateway) -> None:
    events = await collect(gateway, ask("list my sandboxes and list providers"))
    starts = [e.tool_call_start.name for e in events if e.WhichOneof("event") == "tool_call_start"]
    assert starts == ["sandbox_list", "provider_list"]
    message = events[-1].message
    assert [c.name for c in message.tool_calls] == ["sandbox_list", "provider_list"]
    assert all(c.id and c.arguments == "{}" for c in message.tool_calls)
    turn_end = next(e.turn_end for e in events if e.WhichOneof("event") == "turn_end")
    assert turn_end.finish_reason == "tool_calls" and turn_end.usage.input_tokens > 0


async def test_stall_mid_stream_hits_the_idle_timeout(
    gateway: Gateway, provider: SimulatedProvider
) -> None:
    provider.inject("stall after=3 seconds=forever")
    started = time.monotonic()
    events = await collect(gateway, ask("hello there"))
    assert events[-1].WhichOneof("event") == "error"
    assert events[-1].error.code == pb.ERROR_CODE_TIMEOUT
    assert "sent nothing for 0.5s" in events[-1].error.message
    assert time.monotonic() - started < 5


async def test_connection_reset_mid_stream_is_an_error_event(
    gateway: Gateway, provider: SimulatedProvider
) -> None:
    provider.inject("reset after=4")
    events = await collect(gateway, ask("hello there"))
    assert events[-1].WhichOneof("event") == "error"
    assert events[-1].error.code == pb.ERROR_CODE_UPSTREAM_UNAVAILABLE
    assert not any(e.WhichOneof("event") == "message" for e in events)


async def test_provider_error_mid_stream_keeps_the_provider_message(
    gateway: Gateway, provider: SimulatedProvider
) -> None:
    provider.inject("error-mid-stream after=4")
    events = await collect(gateway, ask("hello there"))
    error = events[-1].error
    assert events[-1].WhichOneof("event") == "error" and error.retryable
    # The provider's own words, as its simulator plug-in sends them mid-stream.
    protocol = str(gateway.routes.routes[0].chat_protocol)
    row = next(row for row in WIRE_FORMATS.values() if row.protocol == protocol)
    frame = plugin_for(row.id).stream_error(request_id="r", response_id="x", position=0)
    assert error.code in (pb.ERROR_CODE_OVERLOADED, pb.ERROR_CODE_UPSTREAM_UNAVAILABLE)
    assert error.message and error.message in frame.decode()


async def test_client_cancel_closes_the_upstream_within_a_second(
    gateway: Gateway, provider: SimulatedProvider
) -> None:
    provider.pacing_ms = 50  # a long, slow answer
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        call = chat_pb2_grpc.ChatStub(channel).ChatStream(ask("hello there"))
        await call.read()  # the stream is flowing
        cancelled_at = time.monotonic()
        call.cancel()
    (record,) = await asyncio.to_thread(
        provider.wait_for, lambda log: bool(log) and log[0].closed_at is not None, 5.0
    )
    assert record.closed_by_client
    assert record.closed_at is not None and record.closed_at - cancelled_at < 1.0
    assert record.events_sent < record.events_planned


@pytest.mark.parametrize(
    ("backup", "model"),
    [("openai_responses", "gpt-5"), ("anthropic_messages", "sim-1")],
    ids=["other-responses-model", "anthropic"],
)
async def test_failover_never_sends_reasoning_to_a_route_that_cannot_read_it(
    provider: SimulatedProvider, backup: str, model: str
) -> None:
    provider.reset()
    provider.pacing_ms = 0

    def route(protocol: str, model: str) -> dict[str, object]:
        return {
            "routing_hint": "agent",
            "endpoint": provider.base_url,
            "model": model,
            "protocols": [protocol],
            "api_key": "sk-sim-e2e",
        }

    routes = parse_routes(
        {"routes": [route("openai_responses", "gpt-5-mini"), route(backup, model)]},
        source="e2e",
    )
    gateway = Gateway(GatewaySettings(listen="127.0.0.1:0", attempts_per_route=1), routes)
    await gateway.start()
    try:
        first = await collect(gateway, ask("list my sandboxes"))
        answer = message_from_proto(first[-1].message)
        assert isinstance(answer, AssistantMessage)
        reasoning = payload_of(answer.thinking[0])
        assert reasoning["encrypted_content"]
        call = answer.tool_calls[0]
        history = ask("list my sandboxes")
        history.messages.extend(
            [
                message_to_proto(answer),
                pb.ChatMessage(role="tool", tool_call_id=call.id, content="No sandboxes."),
            ]
        )
        provider.inject("http-500", provider="openai-responses")
        second = await collect(gateway, history)
    finally:
        await gateway.stop(grace_s=0)
    assert second[-1].WhichOneof("event") == "message", second[-1]
    first_route, failed, backup_request = provider.requests
    assert failed.status == 500 and backup_request.status == 200
    sent = str(backup_request.body)
    assert reasoning["item_id"] not in sent
    assert reasoning["encrypted_content"] not in sent
