"""A scenario's `cluster:` section shapes the nav-sim state its tools see."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from navagent.fixtures.harness import ClusterError, ScenarioError, SimulatedCluster, parse_scenario
from navagent.fixtures.harness.scenarios._model import ClusterSpec, SandboxSpec


def names(state: dict[str, Any], cluster: str = "demo") -> list[str]:
    return [sandbox["name"] for sandbox in state["clusters"][cluster]["sandboxes"]]


def test_the_default_is_nav_sims_own_seed(cluster: SimulatedCluster) -> None:
    state = cluster.build_state(ClusterSpec())
    assert names(state) == ["dev-box", "gpu-trainer", "py-worker"]
    assert state["clusters"]["offline"]["gateway"] == "down"
    # A copy each time: one replay's changes never leak into the next.
    state["clusters"]["demo"]["sandboxes"].clear()
    assert names(cluster.build_state(ClusterSpec())) == ["dev-box", "gpu-trainer", "py-worker"]


def test_sandboxes_are_removed_and_added(cluster: SimulatedCluster) -> None:
    spec = ClusterSpec(
        remove_sandboxes=("py-worker",),
        add_sandboxes=(SandboxSpec(name="web-1", phase="Error", age_minutes=5, logs=("a", "b")),),
    )
    state = cluster.build_state(spec)
    assert names(state) == ["dev-box", "gpu-trainer", "web-1"]
    added = state["clusters"]["demo"]["sandboxes"][-1]
    assert added["phase"] == "Error"
    assert [line["message"] for line in added["logs"]] == ["a", "b"]
    assert (
        added["logs"][0]["ts_ms"]
        < added["logs"][1]["ts_ms"]
        < added["created_at_ms"] + 5 * 60_000 + 1
    )


def test_an_empty_cluster_has_nothing(cluster: SimulatedCluster) -> None:
    state = cluster.build_state(ClusterSpec(start="empty"))
    demo = state["clusters"]["demo"]
    assert demo["sandboxes"] == demo["providers"] == demo["inference_routes"] == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (ClusterSpec(name="nowhere"), "nav-sim has no cluster 'nowhere' (it has: demo, offline)"),
        (
            ClusterSpec(remove_sandboxes=("ghost",)),
            "remove_sandboxes: no sandbox 'ghost' in cluster 'demo'",
        ),
        (
            ClusterSpec(add_sandboxes=(SandboxSpec(name="dev-box"),)),
            "add_sandboxes: sandbox 'dev-box' already exists",
        ),
    ],
)
def test_a_cluster_section_that_does_not_fit_is_an_error(
    cluster: SimulatedCluster, spec: ClusterSpec, message: str
) -> None:
    with pytest.raises(ClusterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cluster.build_state(spec)


def test_a_sandbox_name_nav_would_refuse_is_a_scenario_error() -> None:
    text = (
        "id: s\ndescription: d\ncluster:\n  add_sandboxes:\n    - name: Café\nturns:\n  - user: x\n"
    )
    with pytest.raises(
        ScenarioError,
        match=r"s.yaml:5: cluster.add_sandboxes\[0\].name: 'Café' is not a sandbox name",
    ):
        parse_scenario(text, source="s.yaml")


def test_nav_sim_runs_on_the_prepared_state(cluster: SimulatedCluster, tmp_path: Path) -> None:
    spec = ClusterSpec(
        add_sandboxes=(SandboxSpec(name="intl-box", logs=("Grüße ✓",)),),
        fault="provider list=exit:3",
    )
    run = cluster.prepare(spec, tmp_path)
    assert run.state_path is not None and run.tape is None
    assert json.loads(run.state_path.read_text(encoding="utf-8"))["format"] == "nav-sim/1"
    logs = subprocess.run(
        [str(run.binary), "--cluster", run.name, "sandbox", "logs", "intl-box"],
        env=dict(run.env),
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Grüße ✓" in logs.stdout
    failing = subprocess.run(
        [str(run.binary), "--cluster", run.name, "provider", "list"],
        env=dict(run.env),
        capture_output=True,
        text=True,
        check=False,
    )
    assert failing.returncode == 3
    assert run.env["NAV_SIM_CLOCK"] == "2026-03-04T17:02:11Z"


def test_the_callers_nav_sim_settings_do_not_leak_in(
    cluster: SimulatedCluster, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("NAV_SIM_FAULT", "*=exit:9")
    monkeypatch.setenv("NAVIGATOR_CLUSTER", "offline")
    run = cluster.prepare(ClusterSpec(), tmp_path)
    assert "NAV_SIM_FAULT" not in run.env and "NAVIGATOR_CLUSTER" not in run.env


async def test_a_nav_sim_that_cannot_run_fails_the_replay_with_the_reason(
    copy_case, tmp_path: Path
) -> None:
    from navagent.fixtures.harness import load_scenario, replay_scenario

    folder = copy_case("providers", providers=("openai",))
    broken = SimulatedCluster(binary=tmp_path / "no-nav-sim")
    result = await replay_scenario(
        load_scenario(folder / "providers.yaml"), "openai", cluster=broken
    )
    assert not result.passed
    assert result.reason.startswith(
        f"{folder / 'providers.yaml'}: cannot run {tmp_path / 'no-nav-sim'}"
    )


def _bare_name_as_path(value: str, origin: str, search_path: str | None) -> Path:
    """The planted defect: `_lookup` treats a bare `NAV_AGENT_CLI` name as a path."""
    from navagent.core import nav_cli

    return nav_cli._executable(Path(value).expanduser(), origin)


def test_the_tools_cli_is_found_as_nav_agent_finds_it_by_a_bare_name(tmp_path: Path) -> None:
    fresh = SimulatedCluster()
    run = fresh.prepare(ClusterSpec(), tmp_path)
    assert run.binary == fresh.binary.absolute()
    assert fresh.executor.binary == run.binary  # later commands still run in process


async def test_a_bare_name_taken_for_a_path_fails_every_replay_naming_nav_agent_cli(
    copy_case, monkeypatch
) -> None:
    """The sampled survivor's class: `_lookup` no longer searches PATH for a bare name."""
    from navagent.core import nav_cli
    from navagent.fixtures.harness import load_scenario, replay_scenario

    folder = copy_case("providers", providers=("openai",))
    monkeypatch.setattr(nav_cli, "_lookup", _bare_name_as_path)
    result = await replay_scenario(
        load_scenario(folder / "providers.yaml"), "openai", cluster=SimulatedCluster()
    )
    assert not result.passed
    assert "the tools' CLI lookup failed: NAV_AGENT_CLI: nav-sim does not exist" in result.reason


async def test_a_lookup_that_ignores_nav_agent_cli_fails_every_replay(
    copy_case, monkeypatch
) -> None:
    """Another of the class: `resolve_nav_cli` reads another variable, so `nav` on PATH wins."""
    from navagent.core import nav_cli
    from navagent.fixtures.harness import load_scenario, replay_scenario

    folder = copy_case("providers", providers=("openai",))
    monkeypatch.setattr(nav_cli, "NAV_AGENT_CLI_ENV", "NAV_CLI")
    result = await replay_scenario(
        load_scenario(folder / "providers.yaml"), "openai", cluster=SimulatedCluster()
    )
    assert not result.passed
    assert "the tools' CLI lookup of 'nav-sim' found" in result.reason
