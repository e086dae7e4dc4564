"""Property (issue 9): whatever a client sends, the gateway answers with a status it chose.

Arbitrary `ChatStreamRequest`s (NaN and infinities, surrogate escapes in JSON
strings, huge and empty fields, unknown roles, stray tool calls) and arbitrary
bytes as the request body go through the real in-process server. Only a
completed stream (`OK`, ending in exactly one terminal event),
`INVALID_ARGUMENT`, `RESOURCE_EXHAUSTED` or `FAILED_PRECONDITION` may come
back: never `UNKNOWN` or `INTERNAL`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from navagent.gateway.server import Gateway
from navagent.gateway.settings import GatewaySettings
from tests.gateway.provider_bodies import openai_text
from tests.gateway.test_dispatch import Provider, route, stream, table

ALLOWED = {
    grpc.StatusCode.OK,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.FAILED_PRECONDITION,
}
MAX_REQUEST_BYTES = 64 * 1024

json_ish = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "",
            "{}",
            '{"type": "object"}',
            '{"type": "object", "minimum": NaN}',
            '{"a": Infinity}',
            '{"a": -Infinity}',
            '{"description": "\\ud800"}',
            '{"description": "\\udc80\\ud83d"}',
            '{"ok": "\\ud83d\\ude80"}',
            "[" * 3000 + "]" * 3000,
            "[" * 3000,
            "null",
            "[1, 2]",
        ]
    ),
)
texts = st.one_of(st.text(max_size=200), st.just("x" * 70_000), st.just(""))
roles = st.sampled_from(["system", "user", "assistant", "tool", "", "USER", "robot"])

tool_calls = st.builds(
    pb.ToolCall, id=st.text(max_size=8), name=st.text(max_size=8), arguments=json_ish
)
messages = st.builds(
    pb.ChatMessage,
    role=roles,
    content=texts,
    tool_calls=st.lists(tool_calls, max_size=2),
    tool_call_id=st.text(max_size=8),
    thinking=st.lists(
        st.builds(
            pb.ThinkingBlock,
            text=st.text(max_size=20),
            origin=st.text(max_size=20),
            payload=st.text(max_size=20),
        ),
        max_size=1,
    ),
)
tools = st.builds(pb.Tool, name=st.text(max_size=10), description=texts, parameters_schema=json_ish)


@st.composite
def requests(draw: st.DrawFn) -> pb.ChatStreamRequest:
    request = pb.ChatStreamRequest(
        messages=draw(st.lists(messages, max_size=4)),
        tools=draw(st.lists(tools, max_size=2)),
        routing_hint=draw(
            st.one_of(st.sampled_from(["", "agent", " agent ", "other"]), st.text(max_size=300))
        ),
        extended_events=draw(st.booleans()),
    )
    if draw(st.booleans()):
        request.max_tokens = draw(st.integers(min_value=0, max_value=2**32 - 1))
    if draw(st.booleans()):
        request.temperature = draw(st.floats(allow_nan=True, allow_infinity=True))
    return request


class Served:
    """One gateway on one event loop, shared by every example of a test."""

    def __init__(self) -> None:
        self.runner = asyncio.Runner()
        replies = [stream(openai_text("ok")) for _ in range(1000)]
        self.gateway = Gateway(
            GatewaySettings.loopback(max_request_bytes=MAX_REQUEST_BYTES),
            table(route("a")),
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(Provider(a=replies))),
        )
        self.runner.run(self.gateway.start())
        self.channel = self.runner.run(self._channel())

    async def _channel(self) -> grpc.aio.Channel:
        return grpc.aio.insecure_channel(self.gateway.address)

    def call(self, request: Any, *, raw: bool = False) -> tuple[grpc.StatusCode, list[Any]]:
        async def run() -> tuple[grpc.StatusCode, list[Any]]:
            if raw:
                rpc: Any = self.channel.unary_stream("/navigator.chat.v1.Chat/ChatStream")(request)
            else:
                rpc = chat_pb2_grpc.ChatStub(self.channel).ChatStream(request)
            events = []
            try:
                async for event in rpc:
                    events.append(event)
            except grpc.aio.AioRpcError:
                pass
            return await rpc.code(), events

        return self.runner.run(run())

    def close(self) -> None:
        self.runner.run(self.channel.close())
        self.runner.run(self.gateway.stop(grace_s=0))
        self.runner.close()


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    server = Served()
    yield server
    server.close()


def assert_chosen(status: grpc.StatusCode, events: list[Any], *, raw: bool = False) -> None:
    assert status in ALLOWED, status
    if status == grpc.StatusCode.OK:
        if raw:
            events = [pb.ChatStreamEvent.FromString(event) for event in events]
        kinds = [event.WhichOneof("event") for event in events]
        assert kinds.count("message") + kinds.count("error") == 1 and kinds[-1] in (
            "message",
            "error",
        ), kinds


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=requests())
def test_any_request_gets_a_chosen_status(served: Served, request: pb.ChatStreamRequest) -> None:
    assert_chosen(*served.call(request))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=300))
def test_any_bytes_as_the_body_get_a_chosen_status(served: Served, body: bytes) -> None:
    status, events = served.call(body, raw=True)
    assert_chosen(status, events, raw=True)


def test_a_request_over_the_size_limit_is_resource_exhausted(served: Served) -> None:
    big = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="x" * 100_000)])
    status, events = served.call(big)
    assert status == grpc.StatusCode.RESOURCE_EXHAUSTED and not events
