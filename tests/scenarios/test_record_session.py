"""Record real, replay anywhere: a `nav agent` session becomes a CI scenario (issue 19).

The session runs as a user runs it, as a process: `nav agent --routes FILE
--record NAME`, its gateway in process, against a stand-in provider that
serves real recorded streams and a stand-in `nav` whose cluster is nothing
like nav-sim's. Then the stand-ins are gone and a fresh `nav scenario
replay` process replays the written scenario, green, with no key, no
network and no cluster; and a changed tool cassette or provider cassette
fails it, saying where.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from navagent.core.wire_formats import wire_format
from tests.scenarios.stand_ins import (
    CERT_LINE,
    CLUSTER,
    CLUSTER_ENDPOINT,
    CONVERSATIONS,
    STAND_IN_KEY,
    StandInProvider,
    routes_yaml,
    write_navigator_config,
    write_stand_in_nav,
)

pytestmark = pytest.mark.slow  # each test starts `nav` processes

NAV = [str(Path(sys.executable).with_name("nav"))]
LAST_ANSWER_PIECE = {
    "openai": ('"content":" test"', '"content":" tset"'),
    "anthropic": ('"text":"!"', '"text":"?"'),
}
"""A piece of the last turn's streamed answer (the real stream's own token), and a change to it."""
TIMEOUT = 60
TURNS = ("how is my cluster doing?", "thanks. anything else I should know?")


def _clean_env(home: Path) -> dict[str, str]:
    """No key, no tool binary, no cluster config: what a CI machine has."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("NAV_", "NAVIGATOR_", "XDG_", "STAND_IN"))
    }
    env |= {"HOME": str(home), "NAV_AGENT_STATE_DIR": str(home / "state"), "NO_COLOR": "1"}
    return env


def _nav(
    args: list[str], *, cwd: Path, env: dict[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*NAV, *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def _record(tmp_path: Path, wire: str) -> tuple[Path, dict[str, str], StandInProvider]:
    """Run the session with the stand-ins; return the project folder and a clean env."""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    (home / "config").mkdir(parents=True)
    write_navigator_config(home / "config")
    nav = write_stand_in_nav(tmp_path)
    bodies = [stream.body() for stream in CONVERSATIONS[wire]]
    with StandInProvider(bodies) as provider:
        routes = tmp_path / "routes.yaml"
        routes.write_text(routes_yaml(provider, wire, wire_format(wire).protocol), "utf-8")
        env = _clean_env(home) | {
            "STAND_IN_KEY": STAND_IN_KEY,
            "NAV_AGENT_CLI": str(nav),
            "XDG_CONFIG_HOME": str(home / "config"),
        }
        run = _nav(
            ["agent", "--routes", str(routes), "--cluster", CLUSTER, "--record", "prod-check"],
            cwd=project,
            env=env,
            stdin="\n".join(TURNS) + "\n",
        )
        assert run.returncode == 0, run.stderr
        assert "recorded scenarios/prod-check.yaml (2 turns" in run.stderr, run.stderr
    nav.unlink()  # the cluster is gone too
    assert len(provider.requests) == 3
    return project, _clean_env(home), provider


@pytest.mark.parametrize("wire", sorted(CONVERSATIONS))
def test_a_recorded_session_replays_offline_and_fails_when_a_cassette_changes(
    tmp_path: Path, wire: str
) -> None:
    project, env, _ = _record(tmp_path, wire)
    scenario = project / "scenarios" / "prod-check.yaml"
    tools = project / "cassettes" / "tools" / "prod-check.yaml"
    provider = project / "cassettes" / wire_format(wire).cassette_folder / "prod-check.yaml"

    data = yaml.safe_load(scenario.read_text("utf-8"))
    assert data["cluster"] == {"name": CLUSTER, "source": "recorded"}
    assert data["formats"] == [wire] and data["options"]["confirmation"] == "unavailable"
    assert [turn["user"] for turn in data["turns"]] == list(TURNS)
    first = data["turns"][0]["expect"]
    assert [(t["name"], t["status"]) for t in first["tools"]] == [
        ("cluster_status", "ok"),
        ("sandbox_list", "ok"),
    ]
    assert first["finish"] == "answered" and data["turns"][1]["expect"]["tools"] == []

    written = "".join(path.read_text("utf-8") for path in (scenario, tools, provider))
    assert "train-7" in written  # the stand-in cluster's own output, not nav-sim's
    for secret in (STAND_IN_KEY, CLUSTER_ENDPOINT, "10.20.30.40", CERT_LINE):
        assert secret not in written
    assert "https://cluster-endpoint.invalid" in tools.read_text("utf-8")

    replay = _nav(["scenario", "replay", "prod-check"], cwd=project, env=env)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert f"PASS  prod-check[{wire}]" in replay.stdout
    assert replay.stderr == ""
    plugin = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "scenarios"],
        cwd=project, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )  # fmt: skip
    assert plugin.returncode == 0 and "1 passed" in plugin.stdout, plugin.stdout

    original = tools.read_text("utf-8")
    tools.write_text(original.replace("etl-nightly", "etl-hourly"), "utf-8")
    broken = _nav(["scenario", "replay", "prod-check"], cwd=project, env=env)
    assert broken.returncode == 1 and broken.stderr == ""  # one block, no vcrpy advice
    assert "turn 1, request 2" in broken.stdout
    assert "served from the tool cassette tools/prod-check.yaml" in broken.stdout
    tools.write_text(original, "utf-8")

    recorded = provider.read_text("utf-8")
    piece, changed = LAST_ANSWER_PIECE[wire]
    assert recorded.count(piece) == 1
    provider.write_text(recorded.replace(piece, changed), "utf-8")
    broken = _nav(["scenario", "replay", "prod-check"], cwd=project, env=env)
    assert broken.returncode == 1, broken.stdout
    assert "turn 2" in broken.stdout and "answer" in broken.stdout


def test_a_recording_that_would_keep_certificate_material_is_refused_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    (home / "config").mkdir(parents=True)
    write_navigator_config(home / "config")
    nav = write_stand_in_nav(tmp_path)
    # This cluster's nav prints its certificate (a misconfigured debug flag, say).
    nav.write_text(
        nav.read_text("utf-8").replace("Version: 0.9.4", f"Version: 0.9.4\\n  {CERT_LINE}"),
        "utf-8",
    )
    bodies = [stream.body() for stream in CONVERSATIONS["openai"]]
    with StandInProvider(bodies) as provider:
        routes = tmp_path / "routes.yaml"
        routes.write_text(routes_yaml(provider, "openai", "openai_chat_completions"), "utf-8")
        env = _clean_env(home) | {
            "STAND_IN_KEY": STAND_IN_KEY,
            "NAV_AGENT_CLI": str(nav),
            "XDG_CONFIG_HOME": str(home / "config"),
        }
        run = _nav(
            ["agent", "--routes", str(routes), "--cluster", CLUSTER, "--record", "leaky"],
            cwd=project,
            env=env,
            stdin=TURNS[0] + "\n",
        )
    assert run.returncode == 0  # the conversation itself went fine
    assert "not recorded: the recording was refused" in run.stderr
    assert "looks like the cluster's certificate or key" in run.stderr
    assert CERT_LINE not in run.stderr
    assert not list(project.rglob("*.yaml")), "no partial file may stay behind"
