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

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from navagent.core.wire_formats import wire_format
from tests.cli.harness import run_nav
from tests.scenarios.stand_ins import (
    CERT_LINE,
    CLUSTER,
    CLUSTER_ENDPOINT,
    CONVERSATIONS,
    STAND_IN_KEY,
    StandInProvider,
    StandInWorld,
    offline_env,
)

Run = subprocess.CompletedProcess[str]

pytestmark = pytest.mark.slow  # each test starts `nav` processes

LAST_ANSWER_PIECE = {
    "openai": ('"content":" test"', '"content":" tset"'),
    "anthropic": ('"text":"!"', '"text":"?"'),
}
"""A piece of the last turn's streamed answer (the real stream's own token), and a change to it."""
TIMEOUT = 60
TURNS = ("how is my cluster doing?", "thanks. anything else I should know?")


def nav(*args: str, world: StandInWorld, env: dict[str, str], stdin: str = "") -> Run:
    return run_nav(*args, env=env, stdin=stdin, timeout=TIMEOUT, cwd=world.project)


def record(world: StandInWorld, wire: str, *, turns: tuple[str, ...] = TURNS, name: str) -> Run:
    """The session, run as a user runs it, against the stand-ins; then the cluster is gone."""
    bodies = [stream.body() for stream in CONVERSATIONS[wire]]
    with StandInProvider(bodies) as provider:
        routes = world.routes(provider, wire, wire_format(wire).protocol)
        run = nav(
            "agent", "--routes", str(routes), "--cluster", CLUSTER, "--record", name,
            world=world, env=world.live_env(), stdin="\n".join(turns) + "\n",
        )  # fmt: skip
    world.nav.unlink()
    # The first turn calls tools, then answers (two requests); every other turn answers.
    assert len(provider.requests) == len(turns) + 1, run.stderr
    return run


@pytest.mark.parametrize("wire", sorted(CONVERSATIONS))
def test_a_recorded_session_replays_offline_and_fails_when_a_cassette_changes(
    tmp_path: Path, wire: str
) -> None:
    world = StandInWorld.make(tmp_path)
    run = record(world, wire, name="prod-check")
    assert run.returncode == 0, run.stderr
    assert "recorded scenarios/prod-check.yaml (2 turns" in run.stderr, run.stderr
    project, env = world.project, offline_env(world.home)
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

    replay = nav("scenario", "replay", "prod-check", world=world, env=env)
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
    broken = nav("scenario", "replay", "prod-check", world=world, env=env)
    assert broken.returncode == 1 and broken.stderr == ""  # one block, no vcrpy advice
    assert "turn 1, request 2" in broken.stdout
    assert "served from the tool cassette tools/prod-check.yaml" in broken.stdout
    tools.write_text(original, "utf-8")

    recorded = provider.read_text("utf-8")
    piece, changed = LAST_ANSWER_PIECE[wire]
    assert recorded.count(piece) == 1
    provider.write_text(recorded.replace(piece, changed), "utf-8")
    broken = nav("scenario", "replay", "prod-check", world=world, env=env)
    assert broken.returncode == 1, broken.stdout
    assert "turn 2" in broken.stdout and "answer" in broken.stdout


def test_a_recording_that_would_keep_certificate_material_is_refused_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    world = StandInWorld.make(tmp_path)
    # This cluster's nav prints its certificate (a misconfigured debug flag, say).
    text = world.nav.read_text("utf-8")
    world.nav.write_text(text.replace("Version: 0.9.4", f"Version: 0.9.4\\n  {CERT_LINE}"), "utf-8")
    run = record(world, "openai", turns=TURNS[:1], name="leaky")
    assert run.returncode == 0  # the conversation itself went fine
    assert "not recorded: the recording was refused" in run.stderr
    assert "looks like the cluster's certificate or key" in run.stderr
    assert CERT_LINE not in run.stderr
    assert not list(world.project.rglob("*.yaml")), "no partial file may stay behind"
