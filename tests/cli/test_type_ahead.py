"""Keys typed while a turn runs, as the type-ahead sees them (no terminal needed)."""

from __future__ import annotations

from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys

from navagent.cli.type_ahead import TypeAhead


def typed(text: str) -> list[KeyPress]:
    return [KeyPress(char, char) for char in text]


def make() -> tuple[TypeAhead, list[str], list[str], list[str]]:
    cancels: list[str] = []
    queued: list[str] = []
    shown: list[str] = []
    with create_pipe_input() as keys:
        ahead = TypeAhead(
            keys,
            on_cancel=lambda: cancels.append("cancel"),
            on_queued=queued.append,
            on_typing=shown.append,
        )
    return ahead, cancels, queued, shown


def test_lines_queue_on_enter_with_backspace_editing() -> None:
    ahead, cancels, queued, shown = make()
    ahead.handle([*typed("only webx"), KeyPress(Keys.Backspace), KeyPress(Keys.ControlM, "\r")])
    ahead.handle([*typed("  "), KeyPress(Keys.ControlM, "\r")])  # a blank line queues nothing
    ahead.handle(typed("unfinished"))
    assert queued == ["only web"] and cancels == []
    assert shown[-1] == "unfinished"
    assert ahead.take() == ["only web"] and ahead.take() == []
    assert ahead.take_unfinished() == "unfinished" and ahead.line == ""


def test_a_paste_stays_one_line_of_the_queue() -> None:
    ahead, _, queued, _ = make()
    ahead.handle([KeyPress(Keys.BracketedPaste, "first\r\nsecond"), KeyPress(Keys.ControlM, "\r")])
    assert queued == ["first\nsecond"]


def test_ctrl_c_and_esc_cancel_and_ctrl_d_asks_to_leave() -> None:
    ahead, cancels, queued, _ = make()
    ahead.handle([KeyPress(Keys.ControlC, "\x03"), KeyPress(Keys.Escape, "\x1b")])
    assert cancels == ["cancel", "cancel"] and queued == []
    ahead.handle(typed("x") + [KeyPress(Keys.ControlD, "\x04")])
    assert not ahead.leave_requested, "Ctrl-D on a non-empty line does nothing"
    ahead.take_unfinished()
    ahead.handle([KeyPress(Keys.ControlD, "\x04")])
    assert ahead.leave_requested
