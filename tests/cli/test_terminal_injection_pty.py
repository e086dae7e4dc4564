"""Escape sequences from a model, a tool and a cassette, on a real terminal (issue 27 §3).

`nav agent --routes` runs in a pseudo-terminal against a simulated provider
whose model (a `ModelFunction`, run in this process) answers with every kind
of sequence a terminal would obey: an OSC 52 clipboard write, an OSC 0 title,
an OSC 8 link, `ESC[2J`, the C1 CSI U+009B, a concealed (`ESC[8m`) part of a
command it asks to run, bidi overrides. The tools are nav-sim's. What the
program writes is replayed through pyte: the title stays unset, the screen
is not cleared, and each sequence is on screen as visible text. The bytes
written hold none of the sequences themselves.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from navagent.fixtures.provider import Conversation, Plan, PlannedCall, SimulatedProvider
from tests.cli.harness import NAV, NAV_SIM
from tests.cli.terminal import PtySession, color_env

pytestmark = pytest.mark.slow  # each test starts `nav` as a process

ANSWER = (
    "OSC52 \x1b]52;c;aGVsbG8=\x07 TITLE \x1b]0;PWNED\x07 LINK \x1b]8;;http://evil.example\x1b\\"
    "here\x1b]8;;\x1b\\ CLEAR \x1b[2J C1 \x9b2J BIDI \u202eevil\u202c\n\n"
    "`code \x1b[31m` and [x](http://a\x1b]52;c;aGk=\x07/) END\n"
)
ANSWER_SHOWN = [
    "OSC52 ^[]52;c;aGVsbG8=^G",
    "TITLE ^[]0;PWNED^G",
    "LINK ^[]8;;http://evil.example^[\\here^[]8;;^[\\",
    "CLEAR ^[[2J",
    "C1 \\x9b2J",
    "BIDI \\u202eevil\\u202c",
    "code ^[[31m",
]
COMMAND = "echo shown\x1b[8m hidden\x1b[0m \x9b2J \u202eevil\u202c"
"""What the model asks `sandbox_create` to run: `ESC[8m` would hide ` hidden` at the prompt."""
ARGV_SHOWN = "-- echo 'shown^[[8m' 'hidden^[[0m' '\\x9b2J' '\\u202eevil\\u202c'"
NEVER_WRITTEN = [b"\x1b]52", b"\x1b]0;", b"\x1b]8;;http://evil", "\x9b".encode(), b"\x1b[8m"]
NEVER_WRITTEN += [b"\x1b[2J", "\u202e".encode()]
KEY = "sim-terminal-test-key"
"""The route's key: long enough that masking it rewrites nothing else in a recording."""


def hostile(conversation: Conversation) -> Plan:
    """Asks to create a sandbox when told to, answers with every sequence otherwise."""
    last = conversation.messages[-1]
    if last.role == "tool":
        return Plan(text="Created.")
    if "create" in (last.content or ""):
        arguments = {"name": "box", "command": COMMAND}
        return Plan(tool_calls=(PlannedCall("sandbox_create", arguments),))
    return Plan(text=ANSWER)


@pytest.fixture(scope="module")
def provider() -> Iterator[SimulatedProvider]:
    with SimulatedProvider(model=hostile) as sim:
        yield sim


@pytest.fixture
def agent_env(tmp_path: Path, provider: SimulatedProvider) -> tuple[list[str], dict[str, str]]:
    routes = tmp_path / "routes.yaml"
    routes.write_text(
        f"routes:\n  - routing_hint: agent\n    endpoint: {provider.base_url}\n    model: m\n"
        f"    protocols: [openai_chat_completions]\n    api_key: {KEY}\n",
        encoding="utf-8",
    )
    env = color_env(
        NAV_AGENT_CLI=NAV_SIM,
        NAV_SIM_STATE=str(tmp_path / "cluster.json"),
        NAV_AGENT_STATE_DIR=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    for key in ("NAVIGATOR_CLUSTER", "NAV_AGENT_GATEWAY", "NAV_SIM_FAULT"):
        env.pop(key, None)
    return [NAV, "agent", "--routes", str(routes), "--cluster", "demo"], env


def run_plugin(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """The replay harness as a pytest plugin, verbose, on `project`'s scenarios."""
    (project / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nasyncio_mode = "auto"\n'
        'asyncio_default_fixture_loop_scope = "function"\n',
        encoding="utf-8",
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:xdist", "-p", "no:cacheprovider"],
        capture_output=True,
        timeout=120,
        env={key: value for key, value in env.items() if key != "CI"},
        cwd=project,
    )


def assert_not_obeyed(session: PtySession, banner: str) -> None:
    """Nothing was obeyed: no title, the screen not cleared, no sequence in the bytes."""
    assert session.screen.title == ""
    assert any(banner in line for line in session.screen.screen_lines), "the screen was cleared"
    for sequence in NEVER_WRITTEN:
        assert sequence not in session.raw, sequence


@pytest.mark.parametrize("markdown", [True, False], ids=["markdown", "no-markdown"])
def test_answers_history_confirmation_and_show_display_every_sequence_visibly(
    agent_env: tuple[list[str], dict[str, str]], markdown: bool
) -> None:
    argv, env = agent_env
    session = PtySession(argv + ([] if markdown else ["--no-markdown"]), env=env, columns=160)
    try:
        session.wait_prompt()
        session.send("say it\r")
        session.wait_for_text("END")
        session.wait_prompt()
        for shown in ANSWER_SHOWN:
            assert shown in session.display, (shown, session.display)
        assert_not_obeyed(session, "nav agent · cluster demo")

        session.send("/history\r")
        session.wait_for_text("messages (the full log")
        session.wait_prompt()
        assert session.display.count("TITLE ^[]0;PWNED^G") == 2  # the answer, then /history

        session.send("create a sandbox\r")
        session.wait_for_text("Run it? [y/N]")
        asked = session.screen_text()
        assert f"--keep {ARGV_SHOWN} Run it? [y/N]" in asked, asked
        session.send("y\r")
        session.wait_for_text("Created.")
        session.wait_prompt()

        session.send("/show 1\r")
        session.wait_for_text("[1] sandbox_create")
        session.wait_prompt()
        # nav's own escapes are stripped from tool output; what is left shows visibly.
        assert "shown hidden \\x9b2J \\u202eevil\\u202c" in session.display, session.display
        assert_not_obeyed(session, "nav agent · cluster demo")
        session.send("\x04")
        assert session.finish() == 0
    finally:
        session.close()


def test_piped_stdout_is_the_answer_unchanged_and_stderr_is_visible(
    agent_env: tuple[list[str], dict[str, str]],
) -> None:
    argv, env = agent_env
    result = subprocess.run(
        [*argv, "--yes"],
        input=b"say it\ncreate a sandbox\n",
        capture_output=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (ANSWER + "\n" + "Created.\n").encode()  # every byte as sent
    assert b"\x1b" not in result.stderr and "\x9b".encode() not in result.stderr
    assert b"\\x9b2J" in result.stderr  # the tool line, visible


def test_replay_verbose_shows_cassette_text_visibly(
    agent_env: tuple[list[str], dict[str, str]], tmp_path: Path
) -> None:
    argv, env = agent_env
    project = tmp_path / "project"
    project.mkdir()
    recorded = subprocess.run(
        [*argv, "--record", "hostile", "-p", "say it"],
        capture_output=True,
        timeout=60,
        env=env,
        cwd=project,
    )
    assert recorded.returncode == 0, recorded.stderr
    assert (project / "scenarios" / "hostile.yaml").is_file(), recorded.stderr
    scenario = project / "scenarios" / "hostile.yaml"
    # A second expectation the answer does not meet: the failure block quotes both.
    unmet = '      - "MISSING \\e]0;FAILED\\a \\x9b2J"\n'
    original = scenario.read_text(encoding="utf-8")
    scenario.write_text(original.replace("contains:\n", "contains:\n" + unmet), encoding="utf-8")
    session = PtySession([NAV, "scenario", "replay", "-v"], env=env, columns=200, cwd=project)
    try:
        session.wait_for_text("0 passed, 1 failed")
        assert session.finish() == 1
    finally:
        session.close()
    shown = "\n".join(session.lines())
    assert "FAIL  hostile[openai]" in shown
    # The failure block quotes the expectation and the answer as Python literals.
    assert "does not contain 'MISSING \\x1b]0;FAILED\\x07 \\x9b2J'" in shown, shown
    assert "TITLE \\x1b]0;PWNED\\x07" in shown, shown
    assert session.screen.title == ""
    for sequence in NEVER_WRITTEN:
        assert sequence not in session.raw, sequence

    failed = run_plugin(project, env)
    assert failed.returncode == 1, failed.stdout
    assert b"MISSING \\x1b]0;FAILED\\x07 \\x9b2J" in failed.stdout, failed.stdout
    assert b"\x1b" not in failed.stdout and "\x9b".encode() not in failed.stdout

    scenario.write_text(original, encoding="utf-8")
    passed = run_plugin(project, env)
    assert passed.returncode == 0, passed.stdout
    assert b"answer: OSC52 ^[]52;c;aGVsbG8=^G TITLE ^[]0;PWNED^G" in passed.stdout, passed.stdout
    assert b"\x1b" not in passed.stdout and "\x9b".encode() not in passed.stdout

    session = PtySession([NAV, "scenario", "replay", "-v"], env=env, columns=200, cwd=project)
    try:
        session.wait_for_text("1 passed, 0 failed")
        assert session.finish() == 0
    finally:
        session.close()
    transcript = "\n".join(session.lines())
    assert "answer: OSC52 ^[]52;c;aGVsbG8=^G TITLE ^[]0;PWNED^G" in transcript, transcript
    assert session.screen.title == ""
    for sequence in NEVER_WRITTEN:
        assert sequence not in session.raw, sequence
