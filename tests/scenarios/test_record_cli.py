"""Recording from the command line and the REPL: options, resumed sessions, saved sessions, /record.

The demo is the cheapest embedded gateway (no stand-ins needed); the
recordings it makes go through the same capture, export and replay as a
real provider's (`test_record_session.py` proves those with real streams).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from navagent.core.messages import UserMessage
from navagent.core.sessions import SessionStore
from tests.cli.terminal import PtySession
from tests.scenarios.stand_ins import (
    CLUSTER,
    CONVERSATIONS,
    STAND_IN_KEY,
    StandInProvider,
    routes_yaml,
    write_navigator_config,
    write_stand_in_nav,
)

pytestmark = pytest.mark.slow  # each test starts `nav` processes

NAV = str(Path(sys.executable).with_name("nav"))
TIMEOUT = 60


def env_for(home: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("NAV_", "NAVIGATOR_", "XDG_"))
    }
    return env | {"HOME": str(home), "NAV_AGENT_STATE_DIR": str(home / "state"), "NO_COLOR": "1"}


def nav(
    *args: str, cwd: Path, env: dict[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NAV, *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
        timeout=TIMEOUT, check=False,
    )  # fmt: skip


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
        (["--routes", "missing.yaml"], "--routes: "),
    ],
)
def test_unusable_recording_options_are_refused_before_anything_runs(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "taken.yaml").write_text("id: taken\n", "utf-8")
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
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    write_navigator_config(home / "config")
    project = tmp_path / "project"
    project.mkdir()
    stand_in = write_stand_in_nav(tmp_path)
    with StandInProvider(bodies) as provider:
        routes = tmp_path / "routes.yaml"
        routes.write_text(routes_yaml(provider, "openai", "openai_chat_completions"), "utf-8")
        env = env_for(home) | {
            "STAND_IN_KEY": STAND_IN_KEY,
            "NAV_AGENT_CLI": str(stand_in),
            "XDG_CONFIG_HOME": str(home / "config"),
            "TERM": "xterm",
        }
        term = PtySession(
            [NAV, "agent", "--routes", str(routes), "--cluster", CLUSTER],
            env=env, columns=120, cwd=project,
        )  # fmt: skip
        try:
            _repl_record(term, "how is my cluster doing?", "thanks")
        finally:
            term.close()
    stand_in.unlink()
    data = yaml.safe_load((project / "scenarios" / "repl-check.yaml").read_text("utf-8"))
    assert data["options"].get("confirmation", "ask") == "ask"
    assert [turn["user"] for turn in data["turns"]] == ["how is my cluster doing?", "thanks"]
    replay = nav("scenario", "replay", "repl-check", cwd=project, env=env_for(home))
    assert replay.returncode == 0, replay.stdout
