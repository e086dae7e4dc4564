"""Issue 32 in a real pseudo-terminal: a terminal user's habits.

Ctrl-Z and `fg`, Ctrl-R, a paste taller than the window, quick resizes,
narrow windows, `TERM=dumb`, and an empty named session. The REPL runs as
`tests.cli.gated_repl` (its model held by gate files) or as `nav agent
--demo`; where suspending matters it runs under an interactive bash, whose job
control is what stops and continues it. Each step waits for what a person
would see; nothing depends on how fast the machine is.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from navagent.core.messages import UserMessage
from navagent.core.sessions import SessionStore
from tests.cli.harness import NAV, run_nav
from tests.cli.terminal import PtySession
from tests.cli.test_repl_keys_pty import CTRL_D, ENTER, ESC, PASTE, colour_env

pytestmark = pytest.mark.slow  # each test starts a program in a terminal

ROOT = Path(__file__).resolve().parents[2]
CTRL_R, CTRL_Z = "\x12", "\x1a"
WIDTHS = [40, 80, 120]
SHELL_PROMPT = "$"


class Gated:
    """`tests.cli.gated_repl` in a terminal (under bash with `shell=True`), and its gates."""

    def __init__(
        self, tmp_path: Path, script: dict[str, Any], columns: int, *, shell: bool, lines: int
    ) -> None:
        self.gates = tmp_path / "gates"
        self.gates.mkdir(exist_ok=True)
        self.state = tmp_path / "state"
        path = tmp_path / "script.json"
        script = {"gates": str(self.gates), "state": str(self.state), **script}
        path.write_text(json.dumps(script), encoding="utf-8")
        argv = [sys.executable, "-m", "tests.cli.gated_repl", str(path)]
        env = colour_env(tmp_path)
        if shell:
            env |= {"PS1": SHELL_PROMPT + " ", "HISTFILE": "/dev/null"}
            self.term = PtySession(
                ["bash", "--norc", "--noprofile", "-i"],
                env=env,
                columns=columns,
                lines=lines,
                cwd=ROOT,
            )
            self.term.wait_prompt(SHELL_PROMPT)
            self.term.send(" ".join(argv) + ENTER)
        else:
            self.term = PtySession(argv, env=env, columns=columns, lines=lines, cwd=ROOT)

    def open(self, name: str) -> None:
        (self.gates / name).touch()

    def user_messages(self) -> list[str]:
        with SessionStore(self.state / "sessions.db") as store:
            [session] = store.list_sessions()
            log = store.full_log(session.id)
        return [message.content for message in log if isinstance(message, UserMessage)]


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[Any]:
    started: list[Gated] = []

    def start(
        script: dict[str, Any], columns: int = 80, *, shell: bool = False, lines: int = 40
    ) -> Gated:
        started.append(Gated(tmp_path, script, columns, shell=shell, lines=lines))
        started[-1].term.wait_prompt()
        return started[-1]

    yield start
    for each in started:
        each.term.close()


def stopped(term: PtySession) -> None:
    """Wait until bash says the job stopped and shows its own prompt."""
    term.wait_until(
        lambda: "Stopped" in term.display and term.display.rstrip().endswith(SHELL_PROMPT),
        what="bash reporting the job stopped",
    )


def job_pid(term: PtySession) -> int:
    """The REPL's pid: the one child of the bash in the terminal."""
    children = Path(f"/proc/{term.child.pid}/task/{term.child.pid}/children").read_text("ascii")
    [pid] = children.split()
    return int(pid)


def last_line(term: PtySession) -> str:
    """The last row on screen that shows anything."""
    return next((line for line in reversed(term.screen.screen_lines) if line.strip()), "")


def count(lines: list[str], text: str) -> int:
    return sum(text in line for line in lines)


# Item 1: Ctrl-Z suspends at the prompt and mid-turn; `fg` continues the turn,
# which redraws and finishes; a SIGTSTP from `kill` does the same. Nothing of
# ^Z reaches the line, the model or the session.
@pytest.mark.parametrize("columns", WIDTHS)
def test_ctrl_z_and_sigtstp_suspend_and_fg_continues_the_turn(gated, columns: int) -> None:
    repl = gated(
        {
            "completions": [
                {"before": "Thinking about it.\n\nStill", "gate": "answer", "text": " done one."},
                {"before": "Second look.", "gate": "second", "text": " Done two."},
                {"text": "Done three."},
            ]
        },
        columns,
        shell=True,
    )
    term = repl.term
    term.send(CTRL_Z)  # at the prompt
    stopped(term)
    term.send("fg" + ENTER)
    term.wait_prompt()
    term.send("first" + ENTER)
    term.wait_for("Thinking about it.")
    term.send(CTRL_Z)  # mid-turn: raw mode, so it is a key, not the terminal's signal
    stopped(term)
    repl.open("answer")  # the stopped process cannot go on meanwhile
    term.send("fg" + ENTER)
    term.wait_for("Still done one.")
    term.wait_prompt()
    term.send("second" + ENTER)
    term.wait_for("Second look.")
    os.kill(job_pid(term), signal.SIGTSTP)  # as `kill -TSTP` would
    stopped(term)
    term.send("fg" + ENTER)
    repl.open("second")
    term.wait_for("Done two.")
    term.wait_prompt()
    term.send("third" + ENTER)  # keys work as before
    term.wait_for("Done three.")
    term.wait_prompt()
    term.send(CTRL_D)
    term.wait_prompt(SHELL_PROMPT)
    term.send("exit" + ENTER)
    term.finish()

    lines = term.lines()
    assert count(lines, "Stopped") == 3
    assert not any("^Z" in line for line in lines)
    assert count(lines, "Thinking about it.") == 1, lines
    assert count(lines, "Still done one.") == 1, lines
    assert count(lines, "Second look.") == 1, lines
    assert not any("thinking…" in line for line in lines), "no spinner left behind"
    assert repl.user_messages() == ["first", "second", "third"]


# Item 2: Ctrl-R finds an earlier message; Enter sends the match, as a shell does.
@pytest.mark.parametrize("columns", WIDTHS)
def test_ctrl_r_finds_an_earlier_message_and_enter_sends_it(gated, columns: int) -> None:
    repl = gated(
        {
            "completions": [
                {"text": "One."},
                {"text": "Two."},
                {"text": "Three."},
                {"text": "Four."},
            ]
        },
        columns,
    )
    term = repl.term
    for message, answer in (("alpha one", "One."), ("beta two", "Two.")):
        term.send(message + ENTER)
        term.wait_for(answer)
        term.wait_prompt()
    term.send(CTRL_R + "alp")
    term.wait_until(
        lambda: "reverse-i-search" in term.display and "alpha one" in last_line(term),
        what="the search showing its match",
    )
    term.send(ENTER)
    term.wait_for("Three.")
    term.wait_prompt()
    # Esc ends a search with the match left to edit.
    term.send(CTRL_R + "bet")
    term.wait_until(lambda: "beta two" in last_line(term), what="the match")
    term.send(ESC)
    term.wait_until(
        lambda: "reverse-i-search" not in term.display and "nav> beta two" in last_line(term),
        what="the match in the line",
    )
    term.send("\x05 more" + ENTER)  # Ctrl-E: to the end of the match, to add to it
    term.wait_for("Four.")
    term.wait_prompt()
    term.send(CTRL_D)
    assert term.finish() == 0
    assert repl.user_messages() == ["alpha one", "beta two", "alpha one", "beta two more"]


# Item 7: `--session NAME` then leaving at once keeps nothing: not listed, not
# named in a resume hint, not offered to Tab.
def test_an_empty_named_session_is_not_kept(tmp_path: Path) -> None:
    env = colour_env(tmp_path)
    term = PtySession([NAV, "agent", "--demo", "--session", "empty-one"], env=env, columns=80)
    try:
        term.wait_prompt()
        assert "session empty-one (new)" in term.screen_text()
        term.send(CTRL_D)
        assert term.finish() == 0
    finally:
        term.close()
    assert "resume with" not in " ".join(term.lines())
    listed = json.loads(run_nav("agent", "sessions", "--json", env=env).stdout)
    assert listed == []

    term = PtySession([NAV, "agent", "--demo", "--session", "kept-one"], env=env, columns=80)
    try:
        term.wait_prompt()
        term.send("/resume em\t")
        term.wait_for("nav> /resume em")
        term.pump(0.3)
        assert "empty-one" not in term.display, "Tab offers no empty session"
        term.send("\x15list my sandboxes" + ENTER)  # Ctrl-U, then a real message
        term.wait_for("saved as session kept-one")
        term.wait_prompt()
        term.send(CTRL_D)
        assert term.finish() == 0
    finally:
        term.close()
    assert any("resume with: nav agent --demo --session kept-one" in line for line in term.lines())
    listed = json.loads(run_nav("agent", "sessions", "--json", env=env).stdout)
    assert [session["name"] for session in listed] == ["kept-one"]
    assert listed[0]["message_count"] > 0


# Item 6: on a dumb terminal not one control sequence is written - no
# bracketed paste, no cursor visibility, no colour, no cursor movement - through
# a turn with a tool, a `Run it?` question and a slash command.
@pytest.mark.parametrize("term_name", ["dumb", "unknown"])
def test_a_dumb_terminal_gets_no_control_sequence(tmp_path: Path, term_name: str) -> None:
    env = colour_env(tmp_path) | {"TERM": term_name}
    term = PtySession([NAV, "agent", "--demo"], env=env, columns=80)
    try:
        term.wait_prompt()
        term.send("delete py-worker" + ENTER)
        term.wait_for("Run it? [y/N]")
        term.send("n" + ENTER)
        term.wait_for("declined")
        term.wait_prompt()
        term.send("list my sandboxes" + ENTER)
        term.wait_for("gpu-trainer")
        term.wait_prompt()
        term.send("/history" + ENTER)
        term.wait_for("the full log")
        term.wait_prompt()
        term.send(CTRL_D)
        assert term.finish() == 0
    finally:
        term.close()
    assert b"\x1b" not in term.raw, sorted(set(re.findall(rb"\x1b[^a-zA-Z]*[a-zA-Z~]", term.raw)))
    assert "nav> list my sandboxes" in term.lines()


def rows_between(lines: list[str], first: str, last: str) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(last))
    return lines[start + 1 : end]


def hanging_items(rows: list[str], indent: int, deeper: int) -> list[str]:
    """Rows that start `indent` in, with those `indent + deeper` in joined to the one above."""
    items: list[str] = []
    for row in rows:
        assert row.startswith(" " * indent), f"a row out of its indent: {row!r}"
        if deeper and row.startswith(" " * (indent + deeper)):
            assert items, f"a wrapped row with nothing above it: {row!r}"
            items[-1] += " " + row.strip()
        else:
            assert not row[indent].isspace() or not deeper, row
            items.append(row.strip())
    return items


# Item 5: banner examples and tool lines wrap under their own indent.
@pytest.mark.parametrize("columns", WIDTHS)
def test_banner_examples_and_tool_lines_wrap_under_their_indent(
    tmp_path: Path, columns: int
) -> None:
    from navagent.cli.demo import DEMO_PROMPTS

    term = PtySession([NAV, "agent", "--demo"], env=colour_env(tmp_path), columns=columns)
    try:
        term.wait_prompt()
        term.send("create a sandbox named scratch running echo hello" + ENTER)
        term.wait_for("Run it? [y/N]")
        term.send("n" + ENTER)
        term.wait_prompt()
        term.send(CTRL_D)
        assert term.finish() == 0
    finally:
        term.close()
    lines = term.lines()
    examples = hanging_items(rows_between(lines, "Try:", "Type /help"), 4, 2)
    assert examples == list(DEMO_PROMPTS)
    call = rows_between(lines, "  → sandbox_create", "sandbox_create wants to run")
    start = next(line for line in lines if line.startswith("  → sandbox_create"))
    tool_line = " ".join([start.strip(), *hanging_items(call, 4, 0)])
    assert tool_line == '→ sandbox_create name=scratch command="echo hello"'
    assert any(line.startswith("  ✗ sandbox_create · declined") for line in lines)


LONG_NAME = "incident-2026-11-ops-database-migration-east"


def session_rows(lines: list[str], names: list[str]) -> dict[str, tuple[str, str]]:
    """Each session of a sessions table: its name, whole on one line -> (that line, the next).

    `lines` are logical lines (what the terminal wrapped is joined): a name
    longer than the window may only be wrapped by the terminal, never by us.
    """
    found: dict[str, tuple[str, str]] = {}
    for at, line in enumerate(lines):
        for name in names:
            if name not in found and re.match(rf"{re.escape(name)}( \*)?(  |$)", line):
                found[name] = (line, lines[at + 1] if at + 1 < len(lines) else "")
    return found


SESSION_NAMES = (LONG_NAME, "py-worker-provisioning", "quick")


@pytest.fixture(scope="module")
def three_sessions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A state dir holding three `--demo` sessions made by `nav`, and each one's date.

    Made once per module (each `nav` run costs about a second of CPU); every
    width works on a copy of it.
    """
    home = tmp_path_factory.mktemp("three-sessions")
    env = colour_env(home)
    for name in SESSION_NAMES:
        made = run_nav("agent", "--demo", "--session", name, "-p", "list my sandboxes", env=env)
        assert made.returncode == 0, made.stderr
    listed = json.loads(run_nav("agent", "sessions", "--json", env=env).stdout)
    return home / "state", {s["name"]: s["updated_at"][:16].replace("T", " ") for s in listed}


# Items 5 (issue 32) and 1 (issue 41): at any width `nav agent sessions` and
# `/sessions` keep every name whole on one line (it is what `/resume` takes):
# the date shortens and the count goes first, then the row goes under the name.
@pytest.mark.parametrize("columns", WIDTHS)
def test_sessions_keep_names_whole_at_any_width(
    tmp_path: Path, three_sessions: tuple[Path, dict[str, str]], columns: int
) -> None:
    state, dates = three_sessions
    shutil.copytree(state, tmp_path / "state")
    env = colour_env(tmp_path)
    names = list(SESSION_NAMES)
    assert len(dates) == 3

    term = PtySession([NAV, "agent", "sessions"], env=env, columns=columns)
    try:
        assert term.finish() == 0
    finally:
        term.close()
    shown = [session_rows(term.screen.logical_lines, names)]
    rows = term.lines()
    for name in names:  # a name that fits the window is on one row of it
        assert len(name) + 2 > columns or any(row.startswith(name) for row in rows), rows

    term = PtySession([NAV, "agent", "--demo", "--session", "quick"], env=env, columns=columns)
    try:
        term.wait_prompt()
        term.send("/sessions" + ENTER)
        term.wait_for("continues one")
        term.wait_prompt()
        term.send(CTRL_D)
        assert term.finish() == 0
    finally:
        term.close()
    lines = term.screen.logical_lines
    shown.append(session_rows(lines[lines.index("nav> /sessions") + 1 :], names))
    for rows_of in shown:
        assert set(rows_of) == set(names), rows_of
        for name, (line, below) in rows_of.items():
            date = dates[name]
            assert date in line or date[5:] in line or date in below, (name, line, below)
    assert not any("..." in line or "…" in line for line in lines if "quick" in line)


# Item 3: a paste taller than the window is sent whole and stays whole in the
# scrollback: its `nav>` row and first lines kept, no screenful shown twice.
@pytest.mark.parametrize("columns", WIDTHS)
def test_a_paste_taller_than_the_window_keeps_its_start(gated, columns: int) -> None:
    repl = gated({"completions": [{"text": "Got it."}, {"text": "Again."}]}, columns, lines=15)
    term = repl.term
    body = "\n".join(
        f"row {i:02d} of the paste, long enough to wrap at forty" for i in range(1, 41)
    )
    term.send(PASTE.format(body))
    term.wait_for("row 40 of the paste")
    term.send(ENTER)
    term.wait_for("Got it.")
    term.wait_prompt()
    term.send("short one" + ENTER)  # a message that fits is shown as it always was
    term.wait_for("Again.")
    term.wait_prompt()
    term.send(CTRL_D)
    assert term.finish() == 0

    lines = term.lines()
    assert any(line.startswith("nav> row 01 of the paste") for line in lines), lines[:20]
    text = " ".join(" ".join(lines).split())
    markers = [f"row {i:02d} of the paste" for i in range(1, 41)]
    assert [text.count(marker) for marker in markers] == [1] * 40, text
    places = [text.index(marker) for marker in markers]
    assert places == sorted(places) and text.index("Got it.") > places[-1]
    assert lines.count("nav> short one") == 1
    assert repl.user_messages() == [body, "short one"]


FRAME_S = 0.1
"""Two width changes this close together fall within one frame of the answer."""
PARAGRAPH = (
    "The growing block of this answer is a long paragraph that wraps over several rows at"
    " any width, so that a terminal which re-wraps it on a resize changes how many rows it"
    " takes, and an erase that counts them at the wrong width leaves rows behind."
)


# Item 4: two width changes within one frame while an answer streams leave no
# stale rows: each piece of the answer is on screen once, in the scrollback too.
@pytest.mark.parametrize("columns", WIDTHS)
def test_two_width_changes_within_a_frame_leave_no_stale_rows(gated, columns: int) -> None:
    repl = gated(
        {"completions": [{"before": PARAGRAPH, "gate": "answer", "text": " End."}]},
        columns,
        lines=30,
    )
    term = repl.term
    term.send("go" + ENTER)
    term.wait_for_text("leaves rows behind.")
    # Narrower twice, then wider twice: each pair within a frame.
    for first, second in ((columns - 1, columns // 3), (columns // 3 + 1, columns)):
        term.resize_twice(first, second, 30, within=FRAME_S)
        for _ in range(5):  # frames at the new width
            term.pump(0.1)
    term.resize(columns, 30)
    repl.open("answer")
    term.wait_for("End.")
    term.wait_prompt()
    term.send(CTRL_D)
    assert term.finish() == 0
    text = " ".join(" ".join(term.lines()).split())
    for piece in ("The growing block", "a terminal which re-wraps", "leaves rows behind. End."):
        assert text.count(piece) == 1, (piece, term.lines())


# Item 1: Ctrl-Z at a `Run it?` question suspends too; after `fg` the question
# is asked again below the shell's lines and answered as usual.
def test_ctrl_z_at_run_it_suspends_and_fg_asks_again(gated) -> None:
    repl = gated(
        {"completions": [{"tools": ["sandbox_create"]}, {"text": "Created."}]}, 80, shell=True
    )
    term = repl.term
    term.send("make one" + ENTER)
    term.wait_prompt("Run it? [y/N]")
    term.send(CTRL_Z)
    stopped(term)
    term.send("fg" + ENTER)
    term.wait_until(
        lambda: last_line(term).startswith("Run it? [y/N]") and "fg" in term.display,
        what="the question asked again after fg",
    )
    term.send("y" + ENTER)
    repl.open("tool1")
    term.wait_for("Created.")
    term.wait_prompt()
    term.send(CTRL_D)
    term.wait_prompt(SHELL_PROMPT)
    term.send("exit" + ENTER)
    term.finish()
    assert any("✓ sandbox_create" in line for line in term.lines())
    assert not any("^Z" in line for line in term.lines())


# Issue 41: a 200-line paste in a 40-row window, sent with Enter, at the prompt
# or while a turn still runs, is in the scrollback once, in order, with its
# prompt: not its last screenful (the input area) and then the echoed message.
@pytest.mark.parametrize("during_a_turn", [False, True], ids=["at-the-prompt", "mid-turn"])
@pytest.mark.parametrize("columns", WIDTHS)
def test_a_two_hundred_line_paste_appears_once(gated, columns: int, during_a_turn: bool) -> None:
    first = {"before": "Working on it.", "gate": "answer", "text": " Done."}
    repl = gated({"completions": [first, {"text": "Got it."}]}, columns, lines=40)
    term = repl.term
    body = "\n".join(f"line {i:03d} of a tall paste" for i in range(1, 201))
    if not during_a_turn:
        repl.open("answer")
    term.send("hello" + ENTER)
    term.wait_for("Working on it.")
    if not during_a_turn:
        term.wait_for("Done.")
        term.wait_prompt()
    term.send(PASTE.format(body))
    term.wait_for("line 200 of a tall paste")
    term.send(ENTER)
    if during_a_turn:  # queued: the line being typed is gone from under the answer
        term.wait_until(lambda: "›" not in term.display, what="the paste queued")
        repl.open("answer")
    term.wait_for("Got it.")
    term.wait_prompt()
    term.send(CTRL_D)
    assert term.finish() == 0

    lines = term.lines()
    markers = [f"line {i:03d} of a tall paste" for i in range(1, 201)]
    assert [count(lines, marker) for marker in markers] == [1] * 200, lines
    places = [next(n for n, line in enumerate(lines) if marker in line) for marker in markers]
    assert places == sorted(places)
    assert lines[places[0]].endswith("line 001 of a tall paste")
    assert lines[places[0]].startswith(("nav> ", "  ↳ queued for the model: "))
    assert next(n for n, line in enumerate(lines) if "Got it." in line) > places[-1]
    assert repl.user_messages() == ["hello", body]


LONG_SANDBOX = "py-worker-provisioning-nightly-east"
LONG_HINT = "nvidia-nemotron-3-super-120b-reasoning-east-1"


# Issue 41: a sandbox name in a tool line and a routing hint in /model are what a
# user types back: at any width never folded by us (a row of their own, whole;
# only a terminal narrower than the word itself wraps it).
@pytest.mark.parametrize("columns", WIDTHS)
def test_tool_lines_and_model_hints_keep_names_whole(gated, tmp_path: Path, columns: int) -> None:
    term = PtySession([NAV, "agent", "--demo"], env=colour_env(tmp_path), columns=columns)
    try:
        term.wait_prompt()
        term.send(f"show me {LONG_SANDBOX}" + ENTER)
        term.wait_for("NotFound")
        term.wait_prompt()
        term.send(CTRL_D)
        assert term.finish() == 0
    finally:
        term.close()
    logical = term.screen.logical_lines
    assert any(f"name={LONG_SANDBOX}" in line for line in logical), logical

    repl = gated({"completions": [], "hints": ["agent", LONG_HINT]}, columns)
    repl.term.send("/model" + ENTER)
    repl.term.wait_for("/model HINT switches")
    repl.term.wait_prompt()
    repl.term.send(f"/model {LONG_HINT}x" + ENTER)
    repl.term.wait_for("the next turns still")
    repl.term.wait_prompt()
    repl.term.send(f"/model {LONG_HINT}" + ENTER)
    repl.term.wait_for("The next turns use")
    repl.term.wait_prompt()
    repl.term.send(CTRL_D)
    assert repl.term.finish() == 0
    text = " ".join(line.strip() for line in repl.term.screen.logical_lines)
    assert f"the gateway has: agent, {LONG_HINT} · /model HINT switches" in text, text
    assert f"no routing hint '{LONG_HINT}x'" in text, text
    assert f"The next turns use the routing hint '{LONG_HINT}'." in text, text
