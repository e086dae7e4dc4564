"""Hot reload: SIGHUP swaps the routes table; streams in flight keep theirs."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import httpx
import pytest

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from navagent.gateway.routes import load_routes
from navagent.gateway.server import Gateway, watch_reload_signal
from navagent.gateway.settings import GatewaySettings
from tests.gateway.provider_bodies import openai_text
from tests.gateway.test_dispatch import KEY, body, route, table

HELLO = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="hello")])


def routes_yaml(*routes: tuple[str, str], extra: str = "") -> str:
    """A routes file with one openai route per (name, hint)."""
    lines = ["routes:"]
    for name, hint in routes:
        lines += [
            f"  - name: {name}",
            f"    routing_hint: {hint}",
            f"    endpoint: http://{name}.provider.test/v1",
            f"    model: model-{name}",
            "    protocols: [openai_chat_completions]",
            f"    api_key: {KEY}",
        ]
    return "\n".join(lines) + "\n" + extra


class PacedProvider:
    """Streams `tokens` pieces naming the host, one every `delay` seconds, for every request."""

    def __init__(self, tokens: int = 10, delay: float = 0.02) -> None:
        self.tokens, self.delay = tokens, delay
        self.hosts: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host.split(".")[0]
        self.hosts.append(host)
        chunks = openai_text(*[host] * self.tokens)
        return httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=body(chunks, delay=self.delay),
        )


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[tuple[Gateway, Path, PacedProvider]]:
    path = tmp_path / "routes.yaml"
    path.write_text(routes_yaml(("a", "agent")), encoding="utf-8")
    provider = PacedProvider()
    server = Gateway(
        GatewaySettings(listen="127.0.0.1:0", routes=path),
        load_routes(path),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(provider)),
    )
    await server.start()
    yield server, path, provider
    await server.stop(grace_s=0)


async def call(gateway: Gateway, hint: str = "agent") -> list[pb.ChatStreamEvent]:
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        request = pb.ChatStreamRequest(messages=HELLO.messages, routing_hint=hint)
        return [event async for event in chat_pb2_grpc.ChatStub(channel).ChatStream(request)]


def answer(events: list[pb.ChatStreamEvent]) -> str:
    assert events[-1].WhichOneof("event") == "message", events[-1]
    return events[-1].message.content


async def test_sighup_swap_under_load_drops_no_stream(gateway) -> None:
    server, path, provider = gateway
    provider.tokens, provider.delay = 20, 0.05  # ~1 s per stream
    watch_reload_signal(server)
    try:
        before = [asyncio.create_task(call(server)) for _ in range(100)]
        while len(provider.hosts) < 100:  # every stream has its route and is streaming
            await asyncio.sleep(0.01)
        path.write_text(routes_yaml(("b", "agent")), encoding="utf-8")
        old = server.routes
        os.kill(os.getpid(), signal.SIGHUP)
        while server.routes is old:
            await asyncio.sleep(0.01)
        assert server.service.active_streams > 0, "the swap must land while streams run"
        after = [asyncio.create_task(call(server)) for _ in range(100)]
        old_answers = [answer(events) for events in await asyncio.gather(*before)]
        new_answers = [answer(events) for events in await asyncio.gather(*after)]
    finally:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
    # Every stream that started before the swap finished on the old route,
    # every call after it used the new one; none failed.
    assert old_answers == ["a" * 20] * 100
    assert new_answers == ["b" * 20] * 100
    assert provider.hosts.count("a") == 100 and provider.hosts.count("b") == 100


@pytest.mark.parametrize(
    ("broken", "why"),
    [
        ("routes: [\n  - {", "not valid YAML at line"),
        (routes_yaml(("b", "agent")).replace("model: model-b", "model: ''"), "field 'model'"),
        (
            "routes:\n  - routing_hint: agent\n    endpoint: http://x\n    model: m\n"
            "    protocols: [openai_chat_completions]\n    api_key_env: NAV_TEST_UNSET_KEY\n",
            "environment variable NAV_TEST_UNSET_KEY is not set",
        ),
    ],
)
async def test_bad_reload_keeps_the_old_routes_and_says_why_in_one_line(
    gateway, caplog: pytest.LogCaptureFixture, broken: str, why: str
) -> None:
    server, path, provider = gateway
    caplog.set_level(logging.INFO, logger="navagent.gateway")
    old = server.routes
    path.write_text(broken, encoding="utf-8")
    assert await server.reload() is False
    assert server.routes is old and server.dispatcher.routes is old
    assert answer(await call(server)) == "a" * provider.tokens
    failures = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(failures) == 1 and "\n" not in failures[0]
    assert failures[0].startswith("reload failed, keeping the current routes:")
    assert why in failures[0] and str(path) in failures[0]
    assert all(KEY not in record.getMessage() for record in caplog.records)


async def test_reload_logs_the_new_files_warnings_and_serves_new_hints(
    gateway, caplog: pytest.LogCaptureFixture
) -> None:
    server, path, _provider = gateway
    caplog.set_level(logging.INFO, logger="navagent.gateway")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call(server, "fast")
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    path.write_text(
        routes_yaml(("a", "agent"), ("b", "fast")) + "    enabeld: false\n", encoding="utf-8"
    )
    assert await server.reload() is True
    assert answer(await call(server, "fast")) == "b" * 10
    lines = [record.getMessage() for record in caplog.records]
    assert any("unknown key 'enabeld'" in line and "'enabled'" in line for line in lines)
    assert any(
        line.startswith(f"routes reloaded from {path}: 2 route(s)") and "fast->" in line
        for line in lines
    )


async def test_reload_without_a_routes_file_changes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with httpx.AsyncClient() as client:
        server = Gateway(
            GatewaySettings(listen="127.0.0.1:0"), table(route("a")), http_client=client
        )
        old = server.routes
        caplog.set_level(logging.INFO, logger="navagent.gateway")
        assert await server.reload() is False
    assert server.routes is old
    assert "started without --routes" in caplog.text
