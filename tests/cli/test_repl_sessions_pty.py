"""Issue 20 with `nav agent --demo` itself in a pseudo-terminal: routes, sessions, the demo.

The real gateway (in process, its routes list), the real session database
under a private state dir, and a colour terminal replayed through pyte, at
the widths a person uses.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.cli.harness import NAV, run_nav
from tests.cli.terminal import PtySession
from tests.cli.test_repl_keys_pty import CTRL_D, ENTER, WIDTHS, colour_env

pytestmark = pytest.mark.slow  # each test starts `nav agent --demo` in a terminal

DATE = re.compile(r"\b20\d\d-\d\d-\d\d \d\d:\d\d\b")


def demo(tmp_path: Path, *args: str, columns: int = 80) -> PtySession:
    term = PtySession([NAV, "agent", "--demo", *args], env=colour_env(tmp_path), columns=columns)
    term.wait_prompt()
    return term


def leave(term: PtySession) -> int:
    term.wait_prompt()
    term.send(CTRL_D)
    return term.finish()


# Item 9: /model lists the gateway's routing hints and refuses an unknown one at once.
def test_model_asks_the_gateway_and_refuses_an_unknown_hint(tmp_path: Path) -> None:
    term = demo(tmp_path)
    try:
        term.send("/model" + ENTER)
        term.wait_for("the gateway has: agent")
        term.wait_prompt()
        term.send("/model fast" + ENTER)
        term.wait_for("no routing hint 'fast'")
        term.wait_prompt()
        term.send("list my sandboxes" + ENTER)  # still answered: the route did not change
        term.wait_for("gpu-trainer")
        assert leave(term) == 0
    finally:
        term.close()
    assert not any("no inference route" in line for line in term.lines())


def seeded(tmp_path_factory: pytest.TempPathFactory, *made: tuple[str, str]) -> Path:
    """A state dir with a `--demo` session per (name, prompt), each made by `nav`."""
    home = tmp_path_factory.mktemp("seeded")
    env = colour_env(home)
    for name, prompt in made:
        run = run_nav("agent", "--demo", "--session", name, "-p", prompt, env=env)
        assert run.returncode == 0, run.stderr
    return home / "state"


# Made once per module (a `nav` run costs about a second of CPU); each test
# works on a copy.
@pytest.fixture(scope="module")
def alpha_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return seeded(tmp_path_factory, ("alpha-run", "list my sandboxes"))


@pytest.fixture(scope="module")
def two_sessions_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return seeded(
        tmp_path_factory,
        ("incident-2026-11-ops", "why is gpu-trainer failing? show its logs please"),
        ("quick", "list my sandboxes"),
    )


# Item 11: /sessions, /resume NAME with Tab, /export FILE, inside the REPL.
@pytest.mark.parametrize("columns", WIDTHS)
def test_sessions_resume_and_export_in_the_repl(
    tmp_path: Path, alpha_state: Path, columns: int
) -> None:
    shutil.copytree(alpha_state, tmp_path / "state")
    term = demo(tmp_path, "--session", "beta-run", columns=columns)
    try:
        term.send("/sessions" + ENTER)
        term.wait_for("continues one")
        term.wait_prompt()
        term.send("/resume al")
        term.send("\t")
        term.wait_for("nav> /resume alpha-run")
        term.send(ENTER)
        term.wait_for("Resuming session alpha-run")
        term.wait_prompt()
        term.send(f"/export {tmp_path / 'alpha.md'}" + ENTER)
        term.wait_for("wrote ")
        assert leave(term) == 0
    finally:
        term.close()
    lines = term.lines()
    header = next(line for line in lines if line.startswith("session "))
    assert "last active (UTC)" in header
    rows = [line for line in lines if line.startswith("alpha-run")]
    assert rows and all(DATE.search(row) for row in rows), rows
    assert not any("..." in line or "…" in line for line in rows)
    markdown = (tmp_path / "alpha.md").read_text(encoding="utf-8")
    assert "# nav agent session alpha-run" in markdown and "list my sandboxes" in markdown


# Item 12: a plain --demo says on exit that its conversation is not kept.
def test_a_plain_demo_says_its_conversation_is_discarded(tmp_path: Path) -> None:
    term = demo(tmp_path)
    try:
        term.send("list my sandboxes" + ENTER)
        term.wait_for("gpu-trainer")
        assert leave(term) == 0
    finally:
        term.close()
    text = " ".join(" ".join(term.lines()).split())
    assert "this --demo conversation was not saved" in text
    assert "nav agent --demo --session NAME" in text
    assert "resume with:" not in text


# Item 12: the sessions table at every width: whole dates, one header line,
# and a footer that gives --demo sessions their --demo.
@pytest.mark.parametrize("columns", WIDTHS)
def test_sessions_table_keeps_dates_and_headers_whole(
    tmp_path: Path, two_sessions_state: Path, columns: int
) -> None:
    shutil.copytree(two_sessions_state, tmp_path / "state")
    env = colour_env(tmp_path)
    term = PtySession([NAV, "agent", "sessions"], env=env, columns=columns)
    try:
        assert term.finish() == 0
    finally:
        term.close()
    lines = [line for line in term.lines() if line.strip()]
    header = lines[0]
    assert header.split()[:2] == ["session", "cluster"] and "last active (UTC)" in header
    rows = [line for line in lines if line.startswith(("incident-2026-11-ops", "quick"))]
    assert len(rows) == 2
    for row in rows:
        assert DATE.search(row), row
        assert " * " in row  # a --demo session
    footer = " ".join(" ".join(lines[3:]).split())
    assert "`nav agent --demo --session NAME`" in footer
    listed = json.loads(run_nav("agent", "sessions", "--json", env=env).stdout)
    assert all(session["demo"] for session in listed)


# Item 12: a --demo session outside --demo is refused with the command that works.
def test_a_demo_session_resumed_without_demo_names_the_command(tmp_path: Path) -> None:
    env = colour_env(tmp_path)
    made = run_nav("agent", "--demo", "--session", "tried", "-p", "list my sandboxes", env=env)
    assert made.returncode == 0, made.stderr
    result = run_nav("agent", "--session", "tried", "-p", "hello", env=env)
    assert result.returncode == 2
    assert "resume it with `nav agent --demo --session tried`" in result.stderr
