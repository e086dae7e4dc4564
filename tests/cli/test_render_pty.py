"""What a person sees in a real terminal: issue 20's rendering items, in a pty.

Each test runs the REPL in a pseudo-terminal with TERM=xterm-256color (colours,
cursor movement, the spinner) and replays everything it writes through
`ReflowScreen`, a terminal emulator with scrollback that also re-wraps lines
when the window is resized and knows which rows it had to wrap itself. The
answers come from `tests.cli.scripted_repl`, whose stream stops at a pause
mark until the test says go, or from `nav agent --demo`. Conditions are
polled (`wait_until`); a timeout only bounds a failure.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from navagent.core.messages import AssistantMessage, UserMessage
from navagent.core.sessions import SessionStore
from tests.cli.harness import NAV
from tests.cli.scripted_repl import PAUSE
from tests.cli.terminal import PtySession, color_env

pytestmark = pytest.mark.slow  # each test starts the REPL as a process

ROOT = Path(__file__).resolve().parents[2]
ROWS = 40
WIDTHS = [60, 80, 120]
CTRL_D = "\x04"
_WORD = re.compile(r"w\d{4}")


def words(first: int, count: int) -> str:
    """Words that never repeat (`w0001 w0002 ...`): each must be seen exactly once."""
    return " ".join(f"w{n:04d}" for n in range(first, first + count))


def scripted(tmp_path: Path, answer: str, *, columns: int) -> PtySession:
    answer_file = tmp_path / "answer.md"
    answer_file.write_text(answer, encoding="utf-8")
    session = PtySession(
        [sys.executable, "-m", "tests.cli.scripted_repl", str(answer_file)],
        env=color_env(PYTHONPATH=str(ROOT)),
        columns=columns,
        lines=ROWS,
        cwd=ROOT,
    )
    session.wait_for_text("nav>")
    return session


def go(tmp_path: Path, pause: int) -> None:
    (tmp_path / f"go.{pause}").touch()


def word_counts(lines: list[str]) -> Counter[str]:
    return Counter(word for line in lines for word in _WORD.findall(line))


# --- item 1: the answer never freezes -----------------------------------------


@pytest.mark.parametrize("columns", WIDTHS)
def test_a_long_paragraph_is_on_screen_while_the_model_pauses(tmp_path: Path, columns: int) -> None:
    # Issue 20: a paragraph whose draw took over 1 ms was redrawn only at a
    # newline, and nothing redrew it during a pause: the screen froze.
    answer = words(0, 500) + PAUSE + " " + words(500, 100) + "\n"
    session = scripted(tmp_path, answer, columns=columns)
    try:
        session.send("tell me\r")
        session.wait_for_file(tmp_path / "paused.1")
        session.wait_until(
            lambda: session.screen_text().endswith("w0497 w0498 w0499"),
            what="the words before the pause",
        )
        go(tmp_path, 1)
        session.wait_for_text("tokens in")
        session.send(CTRL_D)
        assert session.finish() == 0
    finally:
        session.close()
    counts = word_counts(session.screen.all_lines)
    assert sorted(counts) == [f"w{n:04d}" for n in range(600)]
    assert set(counts.values()) == {1}, "only the final render reached the scrollback"


# --- item 7: resizing leaves no trace ------------------------------------------


@pytest.mark.parametrize(("before", "after"), [(120, 80), (120, 60), (80, 60)])
def test_narrowing_the_window_mid_answer_leaves_one_copy(
    tmp_path: Path, before: int, after: int
) -> None:
    # Issue 20: the stale, terminal-re-wrapped copy of the growing block stayed
    # in the scrollback above the final answer; its first line showed twice.
    # Taller than the screen before the pause: the live block shows its end.
    answer = (
        "## Heading\n\n"
        + words(0, 700)
        + PAUSE
        + " "
        + words(700, 60)
        + "\n\nSecond paragraph "
        + words(760, 40)
        + "\n"
    )
    session = scripted(tmp_path, answer, columns=before)
    try:
        session.send("tell me\r")
        session.wait_for_file(tmp_path / "paused.1")
        session.wait_until(lambda: session.screen_text().endswith("w0699"), what="the live block")
        session.resize(after, ROWS)
        # The live block is drawn again at the new width, within a frame or so.
        session.wait_until(
            lambda: (
                not session.screen.rows_autowrapped() and session.screen_text().endswith("w0699")
            ),
            what="a redraw at the new width",
        )
        go(tmp_path, 1)
        session.wait_for_text("tokens in")
        session.send(CTRL_D)
        assert session.finish() == 0
    finally:
        session.close()
    lines = session.screen.all_lines
    counts = word_counts(lines)
    assert sorted(counts) == [f"w{n:04d}" for n in range(800)]
    assert set(counts.values()) == {1}, [w for w, n in counts.items() if n > 1][:10]
    assert sum("Heading" in line for line in lines) == 1
    assert max(len(line) for line in lines) <= after


# --- item 6: every line wraps at words -----------------------------------------


@pytest.fixture
def demo_env(tmp_path: Path) -> dict[str, str]:
    env = color_env(NAV_AGENT_STATE_DIR=str(tmp_path / "state"))
    env.pop("NAV_SIM_FAULT", None)
    return env


LONG_MESSAGE = (
    "list my sandboxes please, and afterwards explain in considerable detail which"
    " configuration parameters influence provisioning behaviour"
)


@pytest.mark.parametrize("columns", WIDTHS)
def test_nothing_is_cut_mid_word_by_the_terminal(demo_env: dict[str, str], columns: int) -> None:
    # Issue 20: banner, usage line, Run it? command, /tools, /history and errors
    # were printed with soft wrap (the terminal cut words); a long prompt
    # wrapped mid-word behind '....' markers that looked like new lines.
    # This provider streams reasoning before answering: thinking lines too.
    argv = [NAV, "agent", "--demo", "--demo-provider", "openai-responses"]
    session = PtySession(argv, env=demo_env, columns=columns, lines=ROWS)
    try:
        session.wait_for_text("nav>")
        session.send(LONG_MESSAGE)
        session.wait_for_text("provisioning behaviour")
        prompt_rows = [
            row for row in session.screen.screen_lines if row.strip() and "Try:" not in row
        ][-4:]
        assert not any(row.lstrip().startswith("..") for row in prompt_rows), prompt_rows
        for word in LONG_MESSAGE.split():
            assert any(word in row for row in prompt_rows), (word, prompt_rows)
        session.send("\r")
        session.wait_for_text("tokens in context")
        at_prompt = lambda: session.screen.screen_lines[session.screen.cursor.y].startswith("nav>")  # noqa: E731
        session.wait_until(at_prompt, what="the prompt")  # typed before it, a line is queued
        for command, shown in [
            ("/tools", "inference_route_list"),
            ("/history", "messages (the full log"),
            ("/no-such-command-with-a-long-name", "Unknown command"),
            ("hello [sim-fault: http-401]", "error:"),
        ]:
            session.send(command + "\r")
            session.wait_for_text(shown)
            session.wait_until(at_prompt, what="the prompt")
        session.send("create a sandbox named scratch running echo hello\r")
        session.wait_for_text("Run it? [y/N]")
        session.send("n\r")
        session.wait_for_text("declined")
        session.send(CTRL_D)
        assert session.finish() == 0
    finally:
        session.close()
    assert session.screen.autowraps == 0, session.screen.rows_autowrapped()
    text = " ".join(" ".join(session.screen.all_lines).split())
    for phrase in [
        "(openai-responses wire format)",
        "The user asked:",
        "tokens in context",
        "sandbox create --name scratch",
    ]:
        assert phrase in text


# --- item 13: replay and /history render markdown ---------------------------------

MARKDOWN_ANSWER = """## Sandboxes

You have **three** sandboxes; `gpu-trainer` is failing:

| name | phase |
|---|---|
| dev-box | Ready |
| gpu-trainer | Error |

```bash
nav sandbox logs gpu-trainer -n 20
```
"""


@pytest.mark.parametrize("columns", WIDTHS)
def test_a_resumed_session_and_history_show_rendered_markdown(
    demo_env: dict[str, str], tmp_path: Path, columns: int
) -> None:
    # Issue 20: the replay of a resumed session and /history printed raw markdown.
    with SessionStore(tmp_path / "state" / "sessions.db") as store:
        info = store.create(name="md", cluster="demo")
        recorder = store.recorder(info.id)
        recorder.record_message(UserMessage(content="how are my sandboxes?"))
        recorder.record_message(AssistantMessage(content=MARKDOWN_ANSWER))
    session = PtySession(
        [NAV, "agent", "--demo", "--session", "md"], env=demo_env, columns=columns, lines=ROWS
    )
    code = "nav sandbox logs gpu-trainer -n 20"
    try:
        session.wait_for_text("nav>")
        session.send("/history\r")
        session.wait_until(
            lambda: sum(code in line for line in session.screen.all_lines) == 2,
            what="the answer in /history",
        )
        session.send(CTRL_D)
        assert session.finish() == 0
    finally:
        session.close()
    lines = session.screen.all_lines
    start = next(i for i, line in enumerate(lines) if line.startswith("Resuming session md"))
    end = next(i for i, line in enumerate(lines) if line.startswith("────"))
    replay = lines[start + 1 : end]
    history = lines[next(i for i, line in enumerate(lines) if "(the full log" in line) + 1 :]
    for shown in (replay, history):
        text = "\n".join(shown)
        assert "**" not in text and "|---" not in text and "```" not in text and "## " not in text
        assert any("gpu-trainer" in line and "Error" in line and "|" not in line for line in shown)
        assert any(code in line for line in shown)
        assert any(line.startswith("agent: Sandboxes") for line in shown)
    answer = [line for line in replay if line.strip()]
    assert answer == [line for line in history if line.strip()][: len(answer)]


# --- item 14: a spinner that informs ----------------------------------------------


@pytest.mark.parametrize("columns", WIDTHS)
def test_the_spinner_shows_time_keys_and_that_ctrl_d_will_leave(
    tmp_path: Path, columns: int
) -> None:
    answer = PAUSE + "Here is the first part." + PAUSE + " And the rest.\n"
    session = scripted(tmp_path, answer, columns=columns)
    elapsed = re.compile(r"thinking… \((\d+)s · esc to interrupt")
    try:
        session.send("tell me\r")
        session.wait_for_file(tmp_path / "paused.1")
        session.wait_for_text("esc to interrupt")
        # The time moves while the model is silent.
        session.wait_until(
            lambda: any(int(n) >= 1 for n in elapsed.findall(session.screen_text())),
            what="the elapsed time to tick",
        )
        session.send(CTRL_D)
        session.wait_for_text("leaving after this turn")
        go(tmp_path, 1)
        session.wait_for_file(tmp_path / "paused.2")
        # Under the streaming answer the note stays.
        session.wait_for_text("Here is the first part. leaving after this turn")
        go(tmp_path, 2)
        assert session.finish() == 0, "the REPL left after the turn"
    finally:
        session.close()
    text = " ".join(" ".join(session.screen.all_lines).split())
    assert "Here is the first part. And the rest." in text
    assert "leaving after this turn" not in text and "esc to interrupt" not in text
