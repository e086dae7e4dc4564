"""Configuration an operator gets wrong: duplicate route names, CPU counts, variable names."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import httpx
import pytest

from navagent.gateway import settings as settings_module
from navagent.gateway.routes import RoutesError, load_routes
from navagent.gateway.server import Gateway
from navagent.gateway.settings import GatewaySettings, environment_warnings, usable_cpus
from tests.gateway.test_dispatch import KEY

ROUTE = (
    "  - name: {name}\n    routing_hint: {hint}\n    endpoint: http://p.test/v1\n"
    "    model: m\n    protocols: [openai_chat_completions]\n    api_key: " + KEY + "\n"
)


def routes_file(path: Path, *routes: tuple[str, str]) -> Path:
    path.write_text(
        "routes:\n" + "".join(ROUTE.format(name=n, hint=h) for n, h in routes), encoding="utf-8"
    )
    return path


def test_two_routes_with_one_name_are_refused_naming_both_positions(tmp_path: Path) -> None:
    path = routes_file(tmp_path / "r.yaml", ("main", "agent"), ("x", "fast"), ("main", "fast"))
    with pytest.raises(RoutesError) as info:
        load_routes(path)
    assert "route 3 ('fast')" in str(info.value) and "route 1's" in str(info.value)
    assert "'main'" in str(info.value)
    # A given name may not take another route's default name either.
    clash = routes_file(tmp_path / "c.yaml", ("agent#2", "agent"), ("unnamed", "agent"))
    clash.write_text(clash.read_text().replace("name: unnamed", "enabled: true"), encoding="utf-8")
    with pytest.raises(RoutesError, match="route 1's"):
        load_routes(clash)


async def test_a_reload_with_duplicate_names_keeps_the_current_routes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = routes_file(tmp_path / "r.yaml", ("main", "agent"))
    gateway = Gateway(
        GatewaySettings.loopback(routes=path),
        load_routes(path),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(500))),
    )
    routes_file(path, ("main", "agent"), ("main", "fast"))
    assert await gateway.reload() is False
    assert [route.name for route in gateway.routes.routes] == ["main"]
    failed = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert "keeping the current routes" in failed[0] and "route 1's" in failed[0]


def test_usable_cpus_follow_affinity_and_the_cgroup_quota(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3, 4, 5, 6, 7})
    root = tmp_path / "cgroup"
    root.mkdir()
    monkeypatch.setattr(settings_module, "_cgroup_quota", lambda: settings_module._read_quota(root))
    assert usable_cpus() == 8  # no quota file: the affinity mask
    (root / "cpu.max").write_text("max 100000\n")
    assert usable_cpus() == 8
    (root / "cpu.max").write_text("150000 100000\n")  # 1.5 CPUs: two workers
    assert usable_cpus() == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {3})  # taskset -c 3
    assert usable_cpus() == 1


def test_worker_counts_beyond_four_per_usable_cpu_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(settings_module, "usable_cpus", lambda: 2)
    assert GatewaySettings.loopback().worker_count == 2
    assert GatewaySettings.loopback(workers=8).worker_count == 8
    with pytest.raises(ValueError, match="--workers 9 is more than .* 2 CPU"):
        _ = GatewaySettings.loopback(workers=9).worker_count


def test_variables_are_named_after_the_options() -> None:
    environ = {
        "NAV_GATEWAY_GRACE_PERIOD": "1",
        "NAV_GATEWAY_IDLE_TIMEOUT_S": "5",
        "NAV_GATEWAY_WORKER": "2",
        "NAV_GATEWAY_TOKEN": "x",
        "OTHER": "y",
    }
    warnings = environment_warnings(environ, also_known={"NAV_GATEWAY_TOKEN"})
    assert warnings == [
        "NAV_GATEWAY_IDLE_TIMEOUT_S is deprecated; use NAV_GATEWAY_IDLE_TIMEOUT"
        " (it is read for now)",
        "NAV_GATEWAY_WORKER is not a gateway setting and is ignored"
        " (did you mean NAV_GATEWAY_WORKERS?)",
    ]
    names = GatewaySettings.environment_names()
    assert names["NAV_GATEWAY_GRACE_PERIOD"] == "grace_period_s"
    assert names["NAV_GATEWAY_FIRST_TOKEN_TIMEOUT"] == "first_token_timeout_s"


def test_new_names_win_over_deprecated_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAV_GATEWAY_GRACE_PERIOD_S", "4")
    assert GatewaySettings().grace_period_s == 4
    monkeypatch.setenv("NAV_GATEWAY_GRACE_PERIOD", "3")
    assert GatewaySettings().grace_period_s == 3
    assert GatewaySettings(grace_period_s=1).grace_period_s == 1
