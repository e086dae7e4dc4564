"""Per-caller route scope: tokens by hash, hints each caller may use, its own stream limit."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from navagent.gateway._slots import GATEWAY, Slots
from navagent.gateway.callers import (
    SLOT_COUNTERS,
    CallerRefusedError,
    CallersError,
    acting_as,
    admit_caller,
    hash_token,
    load_callers,
    parse_callers,
)
from navagent.gateway.server import Gateway
from navagent.gateway.settings import GatewaySettings
from tests.cli.test_gateway_cmd import NAV
from tests.gateway.test_dispatch import route, table
from tests.gateway.test_reload import PacedProvider

CI_TOKEN = "ci-token-5a1b9c7d3e0f2468"
OPS_TOKEN = "ops-token-0f1e2d3c4b5a6978"
ENV_TOKEN = "env-token-88d7c6b5a4f3e2d1"
TOKENS = (CI_TOKEN, OPS_TOKEN, ENV_TOKEN)


def callers_yaml(ci_hints: str = "[agent]") -> str:
    return (
        "callers:\n"
        f"  - name: ci\n    token_hash: {hash_token(CI_TOKEN)}\n"
        f"    routing_hints: {ci_hints}\n    max_concurrent_streams: 1\n"
        f"  - name: ops\n    token_hash: {hash_token(OPS_TOKEN)}\n"
        '    routing_hints: ["*"]\n'
    )


@pytest.fixture
async def gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Gateway, Path, PacedProvider]]:
    monkeypatch.setenv("NAV_TEST_CALLERS_TOKEN", ENV_TOKEN)
    path = tmp_path / "callers.yaml"
    path.write_text(callers_yaml(), encoding="utf-8")
    provider = PacedProvider(tokens=3, delay=0.0)
    server = Gateway(
        GatewaySettings(
            listen="127.0.0.1:0", callers=path, auth_token_env="NAV_TEST_CALLERS_TOKEN"
        ),
        table(route("a"), route("b", routing_hint="fast")),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(provider)),
    )
    await server.start()
    yield server, path, provider
    await server.stop(grace_s=0)


async def call(gateway: Gateway, token: str | None, hint: str = "agent") -> str:
    """The answer's text; raises the call's status as AioRpcError."""
    metadata = () if token is None else (("authorization", f"Bearer {token}"),)
    request = pb.ChatStreamRequest(
        messages=[pb.ChatMessage(role="user", content="hi")], routing_hint=hint
    )
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        stub = chat_pb2_grpc.ChatStub(channel)
        events = [event async for event in stub.ChatStream(request, metadata=metadata)]
    assert events[-1].WhichOneof("event") == "message", events[-1]
    return events[-1].message.content


async def refused(gateway: Gateway, token: str | None, hint: str = "agent") -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call(gateway, token, hint)
    details = str(info.value.details())
    assert not any(token in details for token in TOKENS)
    return info.value


async def test_a_scoped_token_is_refused_another_hint_naming_hint_and_caller(
    gateway, caplog: pytest.LogCaptureFixture
) -> None:
    server, _path, provider = gateway
    caplog.set_level(logging.INFO, logger="navagent.gateway")
    assert await call(server, CI_TOKEN, "agent") == "aaa"
    error = await refused(server, CI_TOKEN, "fast")
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "caller 'ci' may not use routing hint 'fast'" in str(error.details())
    assert "it may use: agent" in str(error.details())
    # All-hints callers: one from the file, one from --auth-token-env.
    assert await call(server, OPS_TOKEN, "fast") == "bbb"
    assert await call(server, ENV_TOKEN, "fast") == "bbb"
    assert provider.hosts == ["a", "b", "b"], "a refused call never reaches a provider"
    streams = [r.getMessage() for r in caplog.records if r.getMessage().startswith("stream ")]
    assert "hint=fast caller=ci" in streams[1] and "outcome=permission_denied" in streams[1]
    assert "caller=NAV_TEST_CALLERS_TOKEN" in streams[3]
    assert not any(token in r.getMessage() for r in caplog.records for token in TOKENS)


@pytest.mark.parametrize(
    "metadata_token", [None, "not-a-known-token-000", CI_TOKEN.upper(), hash_token(CI_TOKEN)]
)
async def test_unknown_token_is_unauthenticated(gateway, metadata_token: str | None) -> None:
    server, _path, provider = gateway
    error = await refused(server, metadata_token)
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert provider.hosts == []


async def test_each_caller_has_its_own_stream_limit(
    gateway, caplog: pytest.LogCaptureFixture
) -> None:
    server, _path, provider = gateway
    caplog.set_level(logging.INFO, logger="navagent.gateway")
    provider.tokens, provider.delay = 20, 0.02
    first = asyncio.create_task(call(server, CI_TOKEN))
    while server.service.active_streams == 0:
        await asyncio.sleep(0.01)
    error = await refused(server, CI_TOKEN)
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "caller 'ci' is serving its limit of 1 concurrent streams" in str(error.details())
    # Another caller is not held back by ci's limit.
    others = await asyncio.gather(call(server, OPS_TOKEN), call(server, OPS_TOKEN))
    assert list(others) == ["a" * 20] * 2
    assert await first == "a" * 20
    # The slot is given back when the stream ends.
    assert await call(server, CI_TOKEN) == "a" * 20
    assert not any(token in r.getMessage() for r in caplog.records for token in TOKENS)


async def test_reload_takes_a_new_callers_file_and_keeps_the_old_on_error(
    gateway, caplog: pytest.LogCaptureFixture
) -> None:
    server, path, _provider = gateway
    caplog.set_level(logging.INFO, logger="navagent.gateway")
    path.write_text(callers_yaml("[agent, fast]"), encoding="utf-8")
    await server.reload()  # no routes file: the callers are still reloaded
    assert await call(server, CI_TOKEN, "fast") == "bbb"
    path.write_text(callers_yaml("[agent, fast]").replace("sha256:", "plain:"), encoding="utf-8")
    assert await server.reload() is False
    assert await call(server, CI_TOKEN, "fast") == "bbb"
    failed = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(failed) == 1 and "keeping the current callers" in failed[0]
    assert "field 'token_hash': must be sha256:<64 hex digits>" in failed[0]


def test_a_callers_limit_holds_across_workers_sharing_the_slots(tmp_path: Path) -> None:
    path = tmp_path / "callers.yaml"
    path.write_text(callers_yaml(), encoding="utf-8")
    ci = load_callers(path).identify(CI_TOKEN)
    slots = Slots.shared(workers=2, counters=SLOT_COUNTERS)
    try:
        first, second = slots.worker(0), slots.worker(1)
        with acting_as(ci):
            lease = admit_caller("agent", first)
            with pytest.raises(CallerRefusedError) as info:
                admit_caller("agent", second)  # the other worker sees ci's stream
            assert info.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert slots.in_use(GATEWAY) == 0, "a caller's slot is not the gateway's"
            lease.release()
            lease.release()  # idempotent: one slot, given back once
            admit_caller("agent", second).release()
            assert ci is not None and ci.counter is not None
            assert slots.in_use(ci.counter) == 0
        with acting_as(None):  # auth off: nothing counted, nothing refused
            admit_caller("anything", first).release()
    finally:
        slots.close()


def test_callers_with_limits_get_distinct_counters() -> None:
    document = {
        "callers": [
            entry(name=f"c{i}", token_hash=hash_token(f"token-number-{i:04d}"), **limit)
            for i, limit in enumerate(
                [{"max_concurrent_streams": 1}, {}, {"max_concurrent_streams": 2}]
            )
        ]
    }
    counters = [caller.counter for caller in parse_callers(document, source="f").callers]
    assert counters == [1, None, 2]


def test_token_hash_is_the_sha256_of_the_stripped_token() -> None:
    assert hash_token(f"  {CI_TOKEN}\n") == hash_token(CI_TOKEN)
    assert hash_token(CI_TOKEN) == "sha256:" + hashlib.sha256(CI_TOKEN.encode()).hexdigest()


def entry(**fields: Any) -> dict[str, Any]:
    return {
        "name": "ci",
        "token_hash": hash_token(CI_TOKEN),
        "routing_hints": ["agent"],
        **fields,
    }


@pytest.mark.parametrize(
    ("document", "phrase"),
    [
        ({"callers": [entry(token_hash=CI_TOKEN)]}, "field 'token_hash': must be sha256:"),
        ({"callers": [entry(routing_hint=["x"])]}, "unknown key 'routing_hint'"),
        ({"callers": [entry(routing_hints=[" "])]}, "list at least one routing hint"),
        ({"callers": [entry(name="a b")]}, "field 'name': must be 1-64 letters"),
        ({"callers": [entry(max_concurrent_streams=0)]}, "max_concurrent_streams"),
        ({"callers": [entry(), entry()]}, "caller 2 ('ci'): the name 'ci' is already used"),
        (
            {"callers": [entry(), entry(name="other")]},
            "same token_hash as caller 'ci'",
        ),
        ({"callers": [entry(token_hash=None)]}, "token_hash"),
        ({"caller": []}, "expected a mapping with a `callers:` list"),
    ],
)
def test_bad_callers_files_are_refused_without_quoting_a_token(
    document: dict[str, Any], phrase: str
) -> None:
    with pytest.raises(CallersError) as info:
        parse_callers(document, source="callers.yaml")
    assert phrase in str(info.value) and str(info.value).startswith("callers.yaml: ")
    assert CI_TOKEN not in str(info.value)


def test_did_you_mean_for_a_misspelt_key() -> None:
    with pytest.raises(CallersError, match="did you mean 'routing_hints'"):
        parse_callers({"callers": [entry(routing_hint=["x"])]}, source="f")


def test_identify_compares_every_hash(tmp_path: Path) -> None:
    path = tmp_path / "callers.yaml"
    path.write_text(callers_yaml(), encoding="utf-8")
    callers = load_callers(path)
    found = callers.identify(OPS_TOKEN)
    assert found is not None and found.name == "ops" and found.may_use("anything")
    ci = callers.identify(CI_TOKEN)
    assert ci is not None and ci.may_use("agent") and not ci.may_use("fast")
    assert callers.identify(OPS_TOKEN[:-1]) is None
    assert callers.with_token("ENV", ENV_TOKEN).identify(ENV_TOKEN) is not None


def test_unreadable_callers_file_stops_start_up(tmp_path: Path) -> None:
    with pytest.raises(CallersError, match="cannot read callers file"):
        load_callers(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("callers: [", encoding="utf-8")
    with pytest.raises(CallersError, match="not valid YAML at line"):
        load_callers(tmp_path / "bad.yaml")


def test_hash_token_command_reads_stdin_and_refuses_weak_tokens() -> None:
    def run(stdin: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [NAV, "gateway", "hash-token"], input=stdin, capture_output=True, text=True, timeout=30
        )

    made = run(CI_TOKEN + "\n")
    assert made.returncode == 0 and made.stdout.strip() == hash_token(CI_TOKEN)
    assert CI_TOKEN not in made.stdout + made.stderr
    short = run("abc\n")
    assert short.returncode == 2 and "at least 16" in short.stderr
    spaced = run("two words but long enough\n")
    assert spaced.returncode == 2 and "contains a space" in spaced.stderr


async def test_health_stays_open_and_reflection_needs_a_known_token(gateway) -> None:
    server, _path, _provider = gateway

    async def list_services(metadata: tuple[tuple[str, str], ...]) -> set[str]:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            request = reflection_pb2.ServerReflectionRequest(list_services="")
            replies = stub.ServerReflectionInfo(iter([request]), metadata=metadata)
            reply = await anext(aiter(replies))
        return {service.name for service in reply.list_services_response.service}

    with pytest.raises(grpc.aio.AioRpcError) as info:
        await list_services(())
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "navigator.chat.v1.Chat" in await list_services(
        (("authorization", f"Bearer {CI_TOKEN}"),)
    )
    async with grpc.aio.insecure_channel(server.address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def two_limited(first: str, second: str) -> str:
    """Callers `ci` and `ops`, each with a limit of one stream, in the order given."""
    tokens = {"ci": CI_TOKEN, "ops": OPS_TOKEN}
    return "callers:\n" + "".join(
        f"  - name: {name}\n    token_hash: {hash_token(tokens[name])}\n"
        '    routing_hints: ["*"]\n    max_concurrent_streams: 1\n'
        for name in (first, second)
    )


async def test_a_callers_limit_follows_its_name_across_a_reload_that_moves_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "callers.yaml"
    path.write_text(two_limited("ci", "ops"), encoding="utf-8")
    provider = PacedProvider(tokens=40, delay=0.02)
    server = Gateway(
        GatewaySettings(listen="127.0.0.1:0", callers=path),
        table(route("a")),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(provider)),
    )
    await server.start()
    try:
        busy = asyncio.create_task(call(server, CI_TOKEN))  # ci holds its one stream
        while server.service.active_streams == 0:
            await asyncio.sleep(0.01)
        path.write_text(two_limited("ops", "ci"), encoding="utf-8")  # ci moves down
        await server.reload()  # no routes file to re-read: the callers are what changed
        assert server.callers is not None
        assert [caller.name for caller in server.callers.callers] == ["ops", "ci"]
        # The idle caller is served; the busy one is still at its limit.
        provider.tokens, provider.delay = 3, 0.0
        assert await call(server, OPS_TOKEN) == "aaa"
        assert (await refused(server, CI_TOKEN)).code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        await busy
        assert await call(server, CI_TOKEN) == "aaa"  # its slot came back under its name
    finally:
        await server.stop(grace_s=0)


def test_reassigned_counters_skip_those_a_removed_callers_streams_still_hold() -> None:
    from navagent.gateway.callers import CallerTable, assign_counters

    before = parse_callers(yaml_doc(two_limited("ci", "ops")), source="f")
    counters = {c.name: c.counter for c in before.callers}
    after = parse_callers(
        yaml_doc(two_limited("ci", "ops").replace("name: ops", "name: new")), source="f"
    )
    held = {counters["ops"]: 1}  # the removed caller still streams
    table = assign_counters(after, before, lambda counter: held.get(counter, 0))
    moved = {c.name: c.counter for c in table.callers}
    assert moved["ci"] == counters["ci"] and moved["new"] not in counters.values()
    assert isinstance(table, CallerTable)


def yaml_doc(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


async def hints_for(gateway: Gateway, token: str | None) -> list[str]:
    metadata = () if token is None else (("authorization", f"Bearer {token}"),)
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        stub = chat_pb2_grpc.ChatStub(channel)
        response = await stub.ListRoutingHints(pb.ListRoutingHintsRequest(), metadata=metadata)
    return list(response.routing_hints)


# Issue 20, item 9: a client lists the hints it may use before it sends anything.
async def test_list_routing_hints_answers_each_caller_its_own_scope(gateway) -> None:
    server, _path, provider = gateway
    assert await hints_for(server, CI_TOKEN) == ["agent"]
    assert await hints_for(server, OPS_TOKEN) == ["agent", "fast"]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await hints_for(server, "not-a-known-token-000")
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert provider.hosts == [], "listing never reaches a provider"


# Issue 27, section 4: a scoped caller learns nothing of the gateway's other hints.
async def test_a_scoped_caller_cannot_tell_an_unserved_hint_from_one_out_of_its_scope(
    gateway,
) -> None:
    server, path, provider = gateway
    path.write_text(callers_yaml("[agent, ghost]"), encoding="utf-8")
    await server.reload()
    answers = {hint: await refused(server, CI_TOKEN, hint) for hint in ("fast", "nosuch")}
    assert {error.code() for error in answers.values()} == {grpc.StatusCode.PERMISSION_DENIED}
    shapes = {str(error.details()).replace(repr(hint), "HINT") for hint, error in answers.items()}
    assert len(shapes) == 1, shapes
    assert "fast" not in str(answers["nosuch"].details())
    assert "it may use: agent, ghost" in str(answers["nosuch"].details())
    # A hint inside its scope that no route serves: the routes' other hints stay unnamed.
    unserved = await refused(server, CI_TOKEN, "ghost")
    assert unserved.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "no inference route for routing hint 'ghost'" in str(unserved.details())
    assert "fast" not in str(unserved.details())
    assert await hints_for(server, CI_TOKEN) == ["agent"]
    # An all-hints caller is told every hint the gateway has.
    unknown = await refused(server, OPS_TOKEN, "nosuch")
    assert unknown.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "the gateway has hints: agent, fast" in str(unknown.details())
    assert provider.hosts == [], "a refused call never reaches a provider"
