"""Callers' limits across replicas: gateways sharing one real Redis (`--caller-store`)."""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import httpx
import pydantic
import pytest
import redis

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from navagent.gateway.caller_store import CallerStore
from navagent.gateway.callers import hash_token
from navagent.gateway.server import Gateway
from navagent.gateway.settings import GatewaySettings
from tests.gateway.provider_bodies import openai_text
from tests.gateway.redis_server import RedisServer, redis_server
from tests.gateway.test_dispatch import route, table

__all__ = ["redis_server"]  # the fixture, imported to be used here

CI_TOKEN = "ci-token-5a1b9c7d3e0f2468"
KEY = "nav-gateway:caller-streams:ci"
LEASE_S = 0.6
"""Short leases (refreshed every 0.2 s), so expiry is seen in well under a second."""
LOGGER = "navagent.gateway.caller_store"


def at_limit(limit: int) -> str:
    """The refusal of a caller at its limit: the same whether one gateway or the store counts."""
    return f"caller 'ci' is serving its limit of {limit} concurrent streams; retry shortly"


class GatedProvider:
    """Answers "x" once `gate` is set: until then every stream holds its slots."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.requests = 0
        self.status = 200

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        if self.status != 200:
            return httpx.Response(self.status, json={"error": {"message": "refused upstream"}})
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=self._body()
        )

    async def _body(self) -> AsyncIterator[bytes]:
        await self.gate.wait()
        for chunk in openai_text("x"):
            yield chunk


def callers_file(tmp_path: Path, limit: int) -> Path:
    """A callers file with one caller, ci, limited to `limit` streams."""
    callers = tmp_path / "callers.yaml"
    callers.write_text(
        f"callers:\n  - name: ci\n    token_hash: {hash_token(CI_TOKEN)}\n"
        f"    routing_hints: [agent]\n    max_concurrent_streams: {limit}\n",
        encoding="utf-8",
    )
    return callers


@asynccontextmanager
async def gateways(
    tmp_path: Path,
    provider: GatedProvider,
    stores: list[CallerStore | str],
    *,
    limit: int,
    **settings: Any,
) -> AsyncIterator[list[Gateway]]:
    """One gateway per store (a `CallerStore`, or a URL for `--caller-store` to make one)."""
    callers = callers_file(tmp_path, limit)
    started = []
    try:
        for store in stores:
            url = store if isinstance(store, str) else None
            gateway = Gateway(
                GatewaySettings(
                    listen="127.0.0.1:0", callers=callers, caller_store=url, **settings
                ),
                table(route("a")),
                http_client=httpx.AsyncClient(transport=httpx.MockTransport(provider)),
                caller_store=None if isinstance(store, str) else store,
            )
            await gateway.start(announce=False)
            started.append(gateway)
        yield started
    finally:
        provider.gate.set()
        for gateway in started:
            await gateway.stop(grace_s=0)


async def call(gateway: Gateway) -> pb.ChatStreamEvent:
    """The call's last event; raises its status as `AioRpcError`."""
    request = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="hi")])
    metadata = (("authorization", f"Bearer {CI_TOKEN}"),)
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        stub = chat_pb2_grpc.ChatStub(channel)
        events = [event async for event in stub.ChatStream(request, metadata=metadata)]
    return events[-1]


async def refusal(gateway: Gateway) -> str:
    """The details of the RESOURCE_EXHAUSTED a call gets now."""
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call(gateway)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, info.value
    return str(info.value.details())


async def streaming(provider: GatedProvider, gateway: Gateway, count: int) -> asyncio.Task[Any]:
    """A call on `gateway`, once it reached the provider (`count` requests in all)."""
    task = asyncio.create_task(call(gateway))
    await until(lambda: provider.requests >= count, what=f"{count} streams at the provider")
    return task


async def until(condition: Callable[[], bool], *, what: str, within_s: float = 3.0) -> float:
    """Wait for `condition`; the seconds it took."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < within_s, f"no {what} within {within_s} s"
        await asyncio.sleep(0.01)
    return time.monotonic() - started


def leases(server: RedisServer) -> int:
    """The leases in ci's set, read straight from the server."""
    with redis.Redis(unix_socket_path=str(server.socket)) as client:
        return int(client.zcard(KEY))


def messages(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and text in r.getMessage()]


async def test_two_gateways_give_a_caller_exactly_its_limit_across_both(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    provider = GatedProvider()
    # Both from `--caller-store`, as `nav gateway serve` makes them.
    async with gateways(tmp_path, provider, [redis_server.url] * 2, limit=3) as (one, two):
        held = [await streaming(provider, one, 1)]
        held += [await streaming(provider, two, n) for n in (2, 3)]
        assert leases(redis_server) == 3
        # `one` serves a single stream of ci's three: only the shared count refuses this.
        assert await refusal(one) == at_limit(3)
        assert await refusal(two) == at_limit(3)
        assert provider.requests == 3, "a refused call never reaches the provider"
        provider.gate.set()
        assert [(await task).message.content for task in held] == ["x"] * 3
        await until(lambda: leases(redis_server) == 0, what="lease left")
        # Eight calls at once, four on each: three streams, five refusals.
        provider.gate.clear()
        burst = [asyncio.create_task(call(gateway)) for gateway in (one, two) * 4]

        def settled() -> bool:
            return provider.requests == 6 and sum(task.done() for task in burst) == 5

        await until(settled, what="3 more streams and 5 refusals")
        await asyncio.sleep(0.1)
        assert settled() and leases(redis_server) == 3, "no fourth stream later"
        for task in burst:
            if task.done():
                error = task.exception()
                assert isinstance(error, grpc.aio.AioRpcError), error
                assert error.details() == at_limit(3)
        streams = [task for task in burst if not task.done()]
        provider.gate.set()
        assert [(await task).message.content for task in streams] == ["x"] * 3
        await until(lambda: leases(redis_server) == 0, what="lease left")
        assert one.slots_held() == two.slots_held() == {}


async def test_the_same_words_refuse_a_caller_with_one_gateway_and_no_store(
    tmp_path: Path,
) -> None:
    provider = GatedProvider()
    gateway = Gateway(
        GatewaySettings(listen="127.0.0.1:0", callers=callers_file(tmp_path, 1)),
        table(route("a")),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(provider)),
    )
    await gateway.start(announce=False)
    try:
        held = await streaming(provider, gateway, 1)
        assert await refusal(gateway) == at_limit(1)
        provider.gate.set()
        await held
    finally:
        await gateway.stop(grace_s=0)


async def test_concurrent_acquires_from_two_replicas_never_pass_the_limit(
    redis_server: RedisServer,
) -> None:
    # A long command timeout: what is tested is the count, and on a loaded machine one
    # of 40 concurrent calls could pass 0.5 s and rightly fail open (granted locally).
    stores = [CallerStore(redis_server.url, timeout_s=30.0) for _ in range(2)]
    try:
        taken = await asyncio.gather(*(stores[n % 2].acquire("ci", 5) for n in range(40)))
        granted = [lease for lease in taken if lease is not None]
        assert len(granted) == 5 and leases(redis_server) == 5
        for lease in granted:
            lease.release()
        await until(lambda: leases(redis_server) == 0, what="lease left")
        assert await stores[1].acquire("ci", 5) is not None
    finally:
        for store in stores:
            await store.aclose()


async def _answered(provider: GatedProvider, gateway: Gateway) -> None:
    provider.gate.set()
    assert (await call(gateway)).message.content == "x"


async def _upstream_error(provider: GatedProvider, gateway: Gateway) -> None:
    provider.status = 400
    assert (await call(gateway)).error.code == pb.ERROR_CODE_INVALID_REQUEST


async def _client_gone(provider: GatedProvider, gateway: Gateway) -> None:
    task = await streaming(provider, gateway, 1)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def _timeout(provider: GatedProvider, gateway: Gateway) -> None:
    assert (await call(gateway)).error.code == pb.ERROR_CODE_TIMEOUT  # max_stream_duration below


async def _internal_error(provider: GatedProvider, gateway: Gateway) -> None:
    async def broken(*_args: object) -> None:
        raise RuntimeError("a bug in the gateway")

    setattr(gateway.service, "_serve", broken)  # noqa: B010 - a method, replaced
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call(gateway)
    assert info.value.code() == grpc.StatusCode.INTERNAL


async def _shutdown(provider: GatedProvider, gateway: Gateway) -> None:
    task = await streaming(provider, gateway, 1)
    await gateway.stop(grace_s=0)  # ends the stream with `cancelled`, then closes the store
    assert (await task).error.code == pb.ERROR_CODE_CANCELLED


@pytest.mark.parametrize(
    "ending",
    [_answered, _upstream_error, _client_gone, _timeout, _internal_error, _shutdown],
    ids=lambda ending: ending.__name__.strip("_"),
)
async def test_every_ending_gives_the_shared_slot_back(
    tmp_path: Path,
    redis_server: RedisServer,
    ending: Callable[[GatedProvider, Gateway], Awaitable[None]],
) -> None:
    provider = GatedProvider()
    # 30 s leases: gone within a second, so removed, not expired.
    store, other = CallerStore(redis_server.url), CallerStore(redis_server.url)
    shortly = {"max_stream_duration_s": 0.3}  # for the timeout
    async with gateways(tmp_path, provider, [store, other], limit=1, **shortly) as pair:
        gateway, replica = pair
        await ending(provider, gateway)
        await until(lambda: leases(redis_server) == 0, what="lease left", within_s=1.0)
        assert store.held("ci") == 0 and gateway.slots_held() == {}
        provider.status = 200
        provider.gate.set()
        assert (await call(replica)).message.content == "x", "the other replica may stream"


KILLED_REPLICA = """
import asyncio, sys
from navagent.gateway.caller_store import CallerStore

async def main() -> None:
    store = CallerStore(sys.argv[1], lease_s=float(sys.argv[2]))
    assert all([await store.acquire("ci", 2), await store.acquire("ci", 2)])
    print("holding", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_a_killed_replicas_leases_expire_and_a_living_ones_do_not(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    replica = subprocess.Popen(
        [sys.executable, "-c", KILLED_REPLICA, redis_server.url, str(LEASE_S)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert replica.stdout is not None and replica.stdout.readline() == "holding\n"
        provider = GatedProvider()
        provider.gate.set()
        store = CallerStore(redis_server.url, lease_s=LEASE_S)
        async with gateways(tmp_path, provider, [store], limit=2) as (gateway,):
            await asyncio.sleep(1.5 * LEASE_S)  # past the leases' first expiry: refreshed
            assert await refusal(gateway) == at_limit(2)
            replica.kill()
            replica.wait(10)
            # Within one lease of the kill (the last refresh was at most then).
            await until(lambda: not leases(redis_server), what="expiry", within_s=LEASE_S + 0.5)
            assert (await call(gateway)).message.content == "x"
    finally:
        replica.kill()
        replica.wait(10)
        assert replica.stdout is not None
        replica.stdout.close()


async def test_store_down_fails_open_per_replica_logs_once_and_catches_up(
    tmp_path: Path, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    provider = GatedProvider()
    stores = [CallerStore(redis_server.url, lease_s=LEASE_S, retry_s=0.2) for _ in range(2)]
    async with gateways(tmp_path, provider, [*stores], limit=1) as (one, two):
        redis_server.stop()
        # Each replica still holds ci to its limit, in the same words; none errs.
        held = [await streaming(provider, one, 1), await streaming(provider, two, 2)]
        for _ in range(3):
            assert await refusal(one) == at_limit(1)
            assert await refusal(two) == at_limit(1)
        down = messages(caplog, "unreachable")
        assert len(down) == 2, "once per replica, not per call"
        assert f"caller store {redis_server.url} unreachable" in down[0]
        assert "failing open" in down[0]
        # Back: the streams admitted meanwhile join the shared count.
        redis_server.start()
        await until(lambda: leases(redis_server) == 2, what="outage streams in the store")
        # A refresh lands in the store before its replica logs: wait for the lines too.
        await until(lambda: len(messages(caplog, "answers again")) >= 2, what="both replicas' line")
        assert len(messages(caplog, "answers again")) == 2, "once per replica"
        assert all(store.reachable for store in stores)
        provider.gate.set()
        assert [(await task).message.content for task in held] == ["x", "x"]
        await until(lambda: leases(redis_server) == 0, what="lease left")
        assert (await call(two)).message.content == "x"
    assert len(messages(caplog, "unreachable")) == 2


async def test_a_store_that_hangs_costs_one_call_the_timeout_then_none() -> None:
    folder = Path(tempfile.mkdtemp(prefix="nav-hang-"))
    accepted: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        await reader.read()  # reads the command, never answers

    server = await asyncio.start_unix_server(silent, path=str(folder / "s.sock"))
    store = CallerStore(f"unix://{folder}/s.sock", timeout_s=0.1, retry_s=60)
    try:
        started = time.monotonic()
        assert await store.acquire("ci", 1) is not None  # open: admitted, counted here
        assert 0.1 <= time.monotonic() - started < 1.0
        started = time.monotonic()
        assert await store.acquire("ci", 1) is not None
        assert time.monotonic() - started < 0.05, "not asked again before retry_s"
        assert not store.reachable
    finally:
        await store.aclose()
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_store_url_is_checked_and_its_password_never_shown(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    password = "hunter2-store-password-77"
    for bad, problem in [
        (f"http://:{password}@cache:6379", "got a URL with scheme 'http'"),
        (f"redis://:{password}@:6379/0", "the URL names no host"),
        ("unix://", "names no socket path"),
        (f"redis://:{password}@cache:99999", "port out of range"),
    ]:
        with pytest.raises(pydantic.ValidationError) as info:
            GatewaySettings(caller_store=bad)
        assert problem in str(info.value) and password not in str(info.value)
        with pytest.raises(ValueError, match="--caller-store: ") as error:
            CallerStore(bad)
        assert password not in str(error.value)
    url = f"redis://:{password}@cache.internal:6380/2"
    monkeypatch.setenv("NAV_GATEWAY_CALLER_STORE", url)
    settings = GatewaySettings()
    assert settings.caller_store == url and password not in repr(settings)
    assert CallerStore(url).address == "redis://cache.internal:6380/2"


async def test_an_unreachable_store_is_logged_without_its_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    password = "hunter2-store-password-77"
    store = CallerStore(f"redis://:{password}@127.0.0.1:1/0", retry_s=60)
    try:
        assert await store.acquire("ci", 1) is not None
    finally:
        await store.aclose()
    (line,) = messages(caplog, "unreachable")
    assert "caller store redis://127.0.0.1:1/0 unreachable (ConnectionError" in line
    assert password not in line
