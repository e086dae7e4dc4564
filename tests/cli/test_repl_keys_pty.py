"""Issue 20 in a real pseudo-terminal: keys during a turn, queued lines, the commands.

The REPL runs as a program (`tests.cli.gated_repl`: wired as `nav agent` is,
its model and tools held by gate files) or as `nav agent --demo` itself, in a
colour terminal (TERM=xterm-256color), and its output is replayed through a
terminal emulator (pyte) as it arrives. Each test waits for what a person
would see before the next key, and opens a gate to let the turn go on:
nothing depends on how fast the machine is.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.terminal import PtySession

pytestmark = pytest.mark.slow  # each test starts a program in a terminal

ROOT = Path(__file__).resolve().parents[2]
ESC = "\x1b"
ENTER = "\r"
CTRL_C, CTRL_D, CTRL_U = "\x03", "\x04", "\x15"
ALT_B, ALT_F, ALT_BACKSPACE = ESC + "b", ESC + "f", ESC + "\x7f"
OPTION_LEFT, OPTION_RIGHT = ESC + "[1;3D", ESC + "[1;3C"
OPTION_LEFT_MAC = ESC + ESC + "[D"
UP = ESC + "[A"
PASTE = "\x1b[200~{}\x1b[201~"
INTERRUPTED = "[interrupted"
WIDTHS = [60, 80, 120]


def colour_env(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "PYTHONPATH": str(ROOT),
        "NAV_AGENT_STATE_DIR": str(tmp_path / "state"),
    }
    for name in ("NO_COLOR", "COLUMNS", "LINES", "NAV_SIM_FAULT"):
        env.pop(name, None)
    return env


class Gated:
    """`tests.cli.gated_repl` in a terminal, and its gates."""

    def __init__(self, tmp_path: Path, script: dict[str, Any], columns: int) -> None:
        self.gates = tmp_path / "gates"
        self.gates.mkdir()
        path = tmp_path / "script.json"
        script = {"gates": str(self.gates), "state": str(tmp_path / "state"), **script}
        path.write_text(json.dumps(script), encoding="utf-8")
        self.term = PtySession(
            [sys.executable, "-m", "tests.cli.gated_repl", str(path)],
            env=colour_env(tmp_path),
            columns=columns,
            cwd=ROOT,
        )

    def open(self, name: str) -> None:
        (self.gates / name).touch()


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[Any]:
    started: list[Gated] = []

    def start(script: dict[str, Any], columns: int = 80) -> Gated:
        started.append(Gated(tmp_path, script, columns))
        started[-1].term.wait_prompt()
        return started[-1]

    yield start
    for each in started:
        each.term.close()


def leave(term: PtySession) -> None:
    term.wait_prompt()
    term.send(CTRL_D)
    assert term.finish() == 0, term.display


# Items 2, 3 and 5: Meta keys edit the line typed during a turn and never cancel;
# Enter queues it; unused, it becomes the next message, shown as typed at the
# prompt; Up at the next prompt brings it back.
@pytest.mark.parametrize("columns", WIDTHS)
def test_meta_keys_mid_turn_edit_and_the_queued_line_is_the_next_prompt_line(
    gated, columns: int
) -> None:
    repl = gated(
        {
            "completions": [
                {"before": "Thinking about it.\n\nStill", "gate": "answer", "text": " done one."},
                {"text": "Done two."},
            ]
        },
        columns,
    )
    term = repl.term
    term.send("first" + ENTER)
    term.wait_for("Thinking about it.")
    term.send("world")
    for key in (ALT_B, OPTION_LEFT, OPTION_RIGHT, OPTION_LEFT_MAC, ALT_B):
        term.send(key)
    term.send("hello ")
    term.send(ALT_F)
    term.send(" junk")
    term.send(ALT_BACKSPACE)
    term.send("!")
    term.wait_for("› hello world !")  # Alt-Backspace took " junk" back to the space
    assert INTERRUPTED not in term.display
    term.send(ESC + ENTER + "more" + ENTER)  # Esc-Enter: a second line, then queue it
    term.wait_until(lambda: "›" not in term.display, what="the typed line gone once queued")
    repl.open("answer")
    term.wait_for("Done two.")
    term.wait_prompt()
    leave_at = len(term.lines())
    term.send(UP)
    term.wait_for("nav> hello world !")
    term.send(CTRL_C)  # clears the recalled message at the prompt
    term.send(CTRL_D)
    assert term.finish() == 0

    lines = term.lines()
    assert not any(INTERRUPTED in line for line in lines)
    # The queued message shows as a prompt line, its second line under its first.
    at = lines.index("nav> hello world !")
    assert lines[at + 1] == "     more"
    assert any("Still done one." in line for line in lines[:at])
    assert any("Done two." in line for line in lines[at:leave_at])


# Item 4: text typed in one turn, taken back to the prompt and cleared there,
# never shows beside a later turn's spinner.
def test_a_cleared_line_is_not_shown_beside_the_next_spinner(gated) -> None:
    repl = gated(
        {
            "completions": [
                {"tools": ["sandbox_list"]},
                {"text": "Listed."},
                {"tools": ["sandbox_list"]},
                {"text": "Listed again."},
            ]
        }
    )
    term = repl.term
    term.send("list" + ENTER)
    term.wait_for("running sandbox_list")
    term.send("half typed")
    term.wait_for("› half typed")
    repl.open("tool1")
    term.wait_for("Listed.")
    term.wait_for("nav> half typed")  # it waits in the prompt
    term.send(CTRL_U + "list again" + ENTER)
    term.wait_until(
        lambda: "running sandbox_list" in term.display and "list again" in term.display,
        what="the second turn's spinner",
    )
    for _ in range(5):  # several frames of the spinner
        term.pump(0.1)
        assert "half typed" not in term.display
    repl.open("tool2")
    term.wait_for("Listed again.")
    leave(term)


# Item 5: after a cancel the queued line is back in the prompt, and nothing
# says it was queued for the model.
def test_a_line_queued_while_streaming_goes_back_to_the_prompt_on_cancel(gated) -> None:
    repl = gated({"completions": [{"before": "Streaming an answer.\n\nMore", "gate": "never"}]})
    term = repl.term
    term.send("first" + ENTER)
    term.wait_for("Streaming an answer.")
    term.send("do this instead" + ENTER)
    term.wait_until(lambda: "›" not in term.display, what="the line queued")
    term.send(ESC)  # a lone Esc
    term.wait_for(INTERRUPTED)
    term.wait_for("nav> do this instead")
    term.send(CTRL_U + CTRL_D)
    assert term.finish() == 0
    assert not any("queued for the model" in line for line in term.lines())


# Item 5: each line of a queued multi-line paste is indented under the first.
@pytest.mark.parametrize("columns", WIDTHS)
def test_a_queued_paste_is_indented_under_its_first_line(gated, columns: int) -> None:
    repl = gated({"completions": [{"tools": ["sandbox_list"]}, {"text": "Noted."}]}, columns)
    term = repl.term
    term.send("list" + ENTER)
    term.wait_for("running sandbox_list")
    term.send(PASTE.format("only the web ones\nand their logs"))
    term.send(ENTER)
    term.wait_for("queued for the model: only the web ones")
    repl.open("tool1")
    term.wait_for("Noted.")
    leave(term)
    lines = term.lines()
    at = next(i for i, line in enumerate(lines) if "queued for the model: only" in line)
    first = lines[at]
    assert lines[at + 1] == " " * first.index("only") + "and their logs"


# Item 8: /retry replaces the last exchange: /history shows it once.
def test_retry_replaces_the_answer_and_history_shows_the_exchange_once(gated) -> None:
    repl = gated({"completions": [{"text": "First answer."}, {"text": "Second answer."}]})
    term = repl.term
    term.send("hi there" + ENTER)
    term.wait_for("First answer.")
    term.wait_prompt()
    term.send("/retry" + ENTER)
    term.wait_for("Second answer.")
    term.wait_prompt()
    term.send("/history" + ENTER)
    term.wait_for("agent: Second answer.")
    leave(term)
    lines = term.lines()
    shown = lines[next(i for i, line in enumerate(lines) if "messages (the full log" in line) :]
    assert sum("you: hi there" in line for line in shown) == 1
    assert not any("First answer." in line for line in shown)
    assert any(line.startswith("2 messages") for line in lines)


# Item 10: Tab completes a command typed in capitals.
def test_tab_completes_a_command_in_capitals(gated) -> None:
    term = gated({"completions": []}).term
    term.send("/TO")
    term.send("\t")
    term.wait_for("nav> /tools")
    term.send(ENTER)
    term.wait_for("inference_route_list")
    leave(term)


# Item 10: a lone Esc at the y/N question answers No; an Alt key there does not.
def test_esc_at_the_question_declines(gated) -> None:
    repl = gated({"completions": [{"tools": ["sandbox_delete"]}, {"text": "Left it alone."}]})
    term = repl.term
    term.send("delete py-worker" + ENTER)
    term.wait_for("Run it? [y/N]")
    term.send(ALT_B)
    term.send(ESC)
    term.wait_for("declined, not run")
    term.wait_for("Left it alone.")
    leave(term)
    assert not any(INTERRUPTED in line or "[turn cancelled]" in line for line in term.lines())
