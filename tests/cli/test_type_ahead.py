"""Keys typed while a turn runs, as the type-ahead sees them (no terminal needed).

`typed()` turns the bytes a terminal sends for one write into key presses with
prompt_toolkit's own VT100 parser, the way the type-ahead reads them: what the
parser holds back (a trailing Esc) comes out only when the escape timeout
flushes it, and only then is an Esc a lone Esc.
"""

from __future__ import annotations

import asyncio

import pytest
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.input.vt100_parser import Vt100Parser
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys

from navagent.cli.type_ahead import CURSOR_MARK, TypeAhead, show_cursor

ESC = "\x1b"
ENTER = "\r"
ALT_B, ALT_F, ALT_D = ESC + "b", ESC + "f", ESC + "d"
ALT_BACKSPACE = ESC + "\x7f"
OPTION_LEFT_XTERM, OPTION_RIGHT_XTERM = ESC + "[1;3D", ESC + "[1;3C"  # iTerm2, xterm, tmux
OPTION_LEFT_MAC = ESC + ESC + "[D"  # Terminal.app
LEFT, RIGHT, UP = ESC + "[D", ESC + "[C", ESC + "[A"
CTRL_A, CTRL_E, CTRL_U, CTRL_W, CTRL_K, CTRL_Y = "\x01", "\x05", "\x15", "\x17", "\x0b", "\x19"


def typed(raw: str) -> tuple[list[KeyPress], list[KeyPress]]:
    """The keys one write of `raw` gives at once, and those the escape timeout flushes."""
    presses: list[KeyPress] = []
    parser = Vt100Parser(presses.append)
    parser.feed(raw)
    at_once = list(presses)
    parser.flush()
    return at_once, presses[len(at_once) :]


class Recorder:
    def __init__(self, history: InMemoryHistory | None = None) -> None:
        self.cancels = 0
        self.queued: list[str] = []
        self.shown: list[str] = []
        with create_pipe_input() as keys:
            self.ahead = TypeAhead(
                keys,
                history=history,
                on_cancel=self.cancel,
                on_queued=self.queued.append,
                on_typing=self.shown.append,
            )

    def cancel(self) -> None:
        self.cancels += 1

    def write(self, raw: str) -> None:
        """One write from the terminal, then the escape timeout."""
        at_once, flushed = typed(raw)
        self.ahead.handle(at_once)
        self.ahead.handle(flushed, flushed=True)


async def test_lines_queue_on_enter_with_backspace_editing() -> None:
    r = Recorder()
    r.write("only webx\x7f" + ENTER)
    r.write("  " + ENTER)  # a blank line queues nothing
    r.write("unfinished")
    assert r.queued == ["only web"] and r.cancels == 0
    assert r.shown[-1] == "unfinished"
    assert r.ahead.take() == ["only web"] and r.ahead.take() == []
    assert r.ahead.take_unfinished() == "unfinished" and r.ahead.line == ""


async def test_a_paste_stays_one_line_of_the_queue() -> None:
    r = Recorder()
    r.ahead.handle(
        [KeyPress(Keys.BracketedPaste, "first\r\nsecond"), KeyPress(Keys.ControlM, "\r")]
    )
    assert r.queued == ["first\nsecond"]


async def test_ctrl_c_and_a_lone_esc_cancel_and_ctrl_d_asks_to_leave() -> None:
    r = Recorder()
    r.write("\x03")
    r.write(ESC)
    assert r.cancels == 2 and r.queued == []
    r.write("x\x04")
    assert not r.ahead.leave_requested, "Ctrl-D on a non-empty line does nothing"
    r.ahead.take_unfinished()
    r.write("\x04")
    assert r.ahead.leave_requested


# Issue 20, item 2: Meta keys arrive as Esc + a key and cancelled the turn.
# Each list item is one write from the terminal.
@pytest.mark.parametrize(
    ("writes", "line", "cursor"),
    [
        (["hello world", ALT_B], "hello world", 6),
        (["hello world", ALT_B, ALT_B, ALT_F], "hello world", 5),
        (["hello world", ALT_BACKSPACE], "hello ", 6),
        (["hello world", ALT_B, ALT_D], "hello ", 6),
        (["hello world", OPTION_LEFT_XTERM], "hello world", 6),
        (
            ["hello world", OPTION_LEFT_XTERM, OPTION_LEFT_XTERM, OPTION_RIGHT_XTERM],
            "hello world",
            6,
        ),
        (["hello world", OPTION_LEFT_MAC], "hello world", 6),
        (["alpha", ESC + ENTER, "beta"], "alpha\nbeta", 10),  # Esc-Enter: the documented newline
        (["hello", ESC + "z"], "helloz", 6),  # an unbound Meta key types the key, as at the prompt
    ],
)
async def test_meta_keys_edit_the_line_and_never_cancel(
    writes: list[str], line: str, cursor: int
) -> None:
    r = Recorder()
    for write in writes:
        r.write(write)
    assert r.cancels == 0
    assert (r.ahead.line, r.ahead.cursor) == (line, cursor)


# Issue 20, item 3: the prompt's editing keys.
@pytest.mark.parametrize(
    ("keys", "queued"),
    [
        ("world" + CTRL_A + "hello " + ENTER, "hello world"),
        ("helo" + LEFT + "l" + CTRL_E + "!" + ENTER, "hello!"),
        ("scrap this" + CTRL_U + "keep" + ENTER, "keep"),
        ("show logs dev" + CTRL_W + "gpu" + ENTER, "show logs gpu"),
        ("abc" + LEFT + LEFT + CTRL_K + "z" + ENTER, "az"),
        ("one two" + CTRL_W + CTRL_Y + CTRL_Y + ENTER, "one twotwo"),
        ("ab" + LEFT + LEFT + RIGHT + "-" + ENTER, "a-b"),
    ],
)
async def test_the_prompts_editing_keys_work_while_typing_ahead(keys: str, queued: str) -> None:
    r = Recorder()
    r.write(keys)
    assert r.queued == [queued] and r.cancels == 0


async def test_the_cursor_is_shown_where_it_is() -> None:
    r = Recorder()
    r.write("hello world")
    assert r.shown[-1] == "hello world"
    r.write(ALT_B)
    assert r.shown[-1] == "hello " + CURSOR_MARK + "world"
    assert show_cursor("abc", 3) == "abc" and show_cursor("abc", 0) == CURSOR_MARK + "abc"


async def test_queued_lines_go_to_the_history_and_up_recalls_them() -> None:
    history = InMemoryHistory()
    history.append_string("an older prompt line")
    r = Recorder(history)
    r.write("first queued" + ENTER)
    r.write("  second  " + ENTER)
    assert list(history.get_strings())[-2:] == ["first queued", "second"]
    await asyncio.sleep(0.05)  # the buffer loads the history in a task
    r.write(UP)
    assert r.ahead.line == "second"
    r.write(UP + UP)
    assert r.ahead.line == "an older prompt line"


# Issue 20, item 4: a line taken back (it fills the next prompt) must stop showing.
async def test_taking_the_unfinished_line_clears_what_is_shown() -> None:
    r = Recorder()
    r.write("half typed")
    assert r.shown[-1] == "half typed"
    assert r.ahead.take_unfinished() == "half typed"
    assert r.shown[-1] == ""


async def test_through_a_pipe_meta_keys_edit_and_a_lone_esc_cancels_later() -> None:
    cancels: list[str] = []
    queued: list[str] = []
    with create_pipe_input() as pipe:
        ahead = TypeAhead(pipe, on_cancel=lambda: cancels.append("x"), on_queued=queued.append)
        with ahead.active():
            pipe.send_text("world" + ALT_B + "hello " + ALT_F + "!" + ENTER)
            async with asyncio.timeout(10):
                while not queued:
                    await asyncio.sleep(0.01)
            assert queued == ["hello world!"] and cancels == []
            pipe.send_text(ESC)
            async with asyncio.timeout(10):
                while not cancels:
                    await asyncio.sleep(0.01)
    assert cancels == ["x"]
