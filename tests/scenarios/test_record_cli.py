"""Recording from the command line and the REPL: options, resumed sessions, saved sessions, /record.

The demo is the cheapest embedded gateway (no stand-ins needed); the
recordings it makes go through the same capture, export and replay as a
real provider's (`test_record_session.py` proves those with real streams).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from navagent.core.messages import UserMessage
from navagent.core.sessions import SessionStore
from tests.cli.harness import NAV, run_nav
from tests.cli.terminal import PtySession
from tests.scenarios.stand_ins import (
    CLUSTER,
    CONVERSATIONS,
    StandInProvider,
    StandInWorld,
    offline_env,
)

Run = subprocess.CompletedProcess[str]

pytestmark = pytest.mark.slow  # each test starts `nav` processes

TIMEOUT = 60


def env_for(home: Path) -> dict[str, str]:
    return offline_env(home)


def nav(*args: str, cwd: Path, env: dict[str, str], stdin: str = "") -> Run:
    return run_nav(*args, env=env, stdin=stdin, timeout=TIMEOUT, cwd=cwd)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--routes", "routes.yaml", "--gateway", "h:1"],
            "--gateway talks to a gateway running elsewhere and --routes runs one in this process",
        ),
        (["--routes", "routes.yaml", "--demo"], "--routes cannot be used with it"),
        (["--record", "x", "--gateway", "h:1"], "--record needs the gateway in this process"),
        (["--demo", "--record", "Bad Name"], "is not a scenario name"),
        (["--demo", "--record", "taken"], "scenarios/taken.yaml already exists"),
        (["--demo", "--record", "twin"], "scenarios/twin.yml already exists (scenario 'twin')"),
        (["--routes", "missing.yaml"], "--routes: "),
    ],
)
def test_unusable_recording_options_are_refused_before_anything_runs(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "taken.yaml").write_text("id: taken\n", "utf-8")
    (tmp_path / "scenarios" / "twin.yml").write_text("id: twin\n", "utf-8")
    (tmp_path / "routes.yaml").write_text(
        "routes: [{routing_hint: agent, endpoint: 'http://127.0.0.1:9', model: m,"
        " protocols: [openai_chat_completions], api_key: k-123456}]\n",
        "utf-8",
    )
    run = nav("agent", *args, "-p", "hi", cwd=tmp_path, env=env_for(tmp_path))
    assert run.returncode == 2, run.stderr
    assert message in run.stderr
    assert "Traceback" not in run.stderr


def test_a_resumed_session_keeps_its_recording_and_replays_with_the_resume(
    tmp_path: Path,
) -> None:
    env = env_for(tmp_path)
    first = nav(
        "agent", "--demo", "--session", "s1", "-p", "list my sandboxes", cwd=tmp_path, env=env
    )
    assert first.returncode == 0, first.stderr
    second = nav(
        "agent", "--demo", "--session", "s1", "--record", "resumed",
        "-p", "show the logs of gpu-trainer", cwd=tmp_path, env=env,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert "recorded scenarios/resumed.yaml (2 turns" in second.stderr, second.stderr
    data = yaml.safe_load((tmp_path / "scenarios" / "resumed.yaml").read_text("utf-8"))
    assert [turn.get("resume", False) for turn in data["turns"]] == [False, True]
    assert data["turns"][1]["expect"]["tools"][0]["name"] == "sandbox_logs"
    replay = nav("scenario", "replay", "resumed", cwd=tmp_path, env=env)
    assert replay.returncode == 0, replay.stdout


def test_a_saved_session_is_exported_as_a_scenario_when_it_was_recorded(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    run = nav("agent", "--demo", "--session", "kept", cwd=tmp_path, env=env,
              stdin="list my sandboxes\nwhy is gpu-trainer failing?\n")  # fmt: skip
    assert run.returncode == 0, run.stderr
    exported = nav("agent", "sessions", "export", "kept", "--scenario", "kept-check",
                   cwd=tmp_path, env=env)  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert "recorded scenarios/kept-check.yaml (2 turns, openai)" in exported.stderr
    assert nav("scenario", "replay", "kept-check", cwd=tmp_path, env=env).returncode == 0
    tools = tmp_path / "cassettes" / "tools" / "kept-check.yaml"
    tools.write_text(tools.read_text("utf-8").replace("gpu-trainer", "gpu-trainor"), "utf-8")
    broken = nav("scenario", "replay", "kept-check", cwd=tmp_path, env=env)
    assert broken.returncode == 1
    assert "served from the tool cassette tools/kept-check.yaml" in broken.stdout
    again = nav("agent", "sessions", "export", "kept", "--scenario", "kept-check",
                cwd=tmp_path, env=env)  # fmt: skip
    assert again.returncode == 1 and "already exists" in again.stderr

    with SessionStore(tmp_path / "state" / "sessions.db") as store:
        store.create(name="remote", cluster="prod")  # as a session against a remote gateway
    refused = nav("agent", "sessions", "export", "remote", "--scenario", "r", cwd=tmp_path, env=env)
    assert refused.returncode == 1
    assert (
        "was not recorded" in refused.stderr and "--routes routes.yaml --record" in refused.stderr
    )
    with SessionStore(tmp_path / "state" / "sessions.db") as store:
        later = store.recorder(store.open("kept").id)
        later.record_message(UserMessage(content="said later, through a remote gateway"))
    went_on = nav("agent", "sessions", "export", "kept", "--scenario", "k2", cwd=tmp_path, env=env)
    assert went_on.returncode == 1 and "it went on after its recording (1 later" in went_on.stderr
    removed = nav("agent", "sessions", "rm", "kept", cwd=tmp_path, env=env)
    assert removed.returncode == 0
    assert not list((tmp_path / "state" / "recordings").iterdir())


def _repl_record(term: PtySession, first: str, second: str) -> None:
    """Say `first`, `/record repl-check`, say `second`, leave; the recording is reported."""
    term.wait_prompt()
    term.send(first + "\r")
    term.wait_for("tokens in")
    term.wait_prompt()
    term.send("/record repl-check\r")
    term.wait_for_text("will be written as scenarios/repl-check.yaml")
    term.wait_prompt()
    term.send(second + "\r")
    term.wait_for("tokens in")
    term.wait_prompt()
    term.send("exit\r")
    assert term.finish() == 0
    assert "recorded scenarios/repl-check.yaml (2 turns, openai)" in " ".join(
        " ".join(term.lines()).split()
    )


def test_record_in_the_demo_repl_writes_the_whole_conversation_so_far(tmp_path: Path) -> None:
    env = env_for(tmp_path) | {"TERM": "xterm"}
    term = PtySession([NAV, "agent", "--demo"], env=env, columns=120, cwd=tmp_path)
    try:
        _repl_record(term, "list my sandboxes", "why is gpu-trainer failing?")
    finally:
        term.close()
    data = yaml.safe_load((tmp_path / "scenarios" / "repl-check.yaml").read_text("utf-8"))
    assert [turn["user"] for turn in data["turns"]] == [
        "list my sandboxes",
        "why is gpu-trainer failing?",
    ]
    assert data["cluster"] == {"name": "demo", "source": "recorded"}
    replay = nav("scenario", "replay", "repl-check", cwd=tmp_path, env=env_for(tmp_path))
    assert replay.returncode == 0, replay.stdout


def test_record_in_the_repl_against_real_streams_and_a_real_looking_cluster(
    tmp_path: Path,
) -> None:
    """The pty REPL against the stand-ins (real recorded streams, a cluster unlike nav-sim)."""
    bodies = [stream.body() for stream in CONVERSATIONS["openai"]]
    world = StandInWorld.make(tmp_path)
    with StandInProvider(bodies) as provider:
        routes = world.routes(provider, "openai", "openai_chat_completions")
        term = PtySession(
            [NAV, "agent", "--routes", str(routes), "--cluster", CLUSTER],
            env=world.live_env(TERM="xterm"), columns=120, cwd=world.project,
        )  # fmt: skip
        try:
            _repl_record(term, "how is my cluster doing?", "thanks")
        finally:
            term.close()
    world.nav.unlink()
    data = yaml.safe_load((world.project / "scenarios" / "repl-check.yaml").read_text("utf-8"))
    assert data["options"].get("confirmation", "ask") == "ask"
    assert [turn["user"] for turn in data["turns"]] == ["how is my cluster doing?", "thanks"]
    replay = nav("scenario", "replay", "repl-check", cwd=world.project, env=env_for(world.home))
    assert replay.returncode == 0, replay.stdout
