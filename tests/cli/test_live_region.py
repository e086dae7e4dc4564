"""Live regions on a terminal that re-wraps lines when the window narrows (issue 20, item 7)."""

from __future__ import annotations

import io

import pyte
import pytest
from rich.console import Console
from rich.live import Live
from rich.segment import Segment
from rich.text import Text

from navagent.cli.live_region import STEADY_S, LiveRegion, reflowing, rows_at
from navagent.cli.markdown_stream import MarkdownStream
from tests.cli.terminal import ReflowScreen

SIZES = [(120, 80), (120, 60), (80, 60)]
"""(width before, width after) a narrowing."""


class Terminal:
    """A rich console drawing on a `ReflowScreen` of the same size."""

    def __init__(self, columns: int, lines: int = 30) -> None:
        self.file = io.StringIO()
        self.console = Console(
            file=self.file, force_terminal=True, width=columns, height=lines, color_system=None
        )
        self.screen = ReflowScreen(columns, lines)
        self._stream = pyte.Stream(self.screen)
        self._read = 0

    def pump(self) -> None:
        text = self.file.getvalue()
        self._stream.feed(text[self._read :])
        self._read = len(text)

    def resize(self, columns: int, lines: int = 30) -> None:
        self.pump()
        self.screen.reflow(columns, lines)
        self.console.size = (columns, lines)

    def lines_of(self, text: str) -> list[list[Segment]]:
        return self.console.render_lines(Text(text), self.console.options, pad=False)


def paragraph(words: int, start: int = 0) -> str:
    return " ".join(f"word{n:03d}" for n in range(start, start + words))


def test_rows_at_counts_the_rows_a_terminal_wraps_lines_into() -> None:
    assert rows_at([120, 0, 60, 61], 120) == 4
    assert rows_at([120, 0, 60, 61], 60) == 2 + 1 + 1 + 2
    assert rows_at([], 80) == 0


def test_reflow_screen_rewraps_long_lines_and_keeps_short_ones() -> None:
    screen = ReflowScreen(20, 5)
    stream = pyte.Stream(screen)
    stream.feed("a" * 30 + "\n" + "short\n")  # the first line is too long: autowrapped
    assert screen.rows_autowrapped() == ["a" * 10]
    screen.reflow(10, 5)
    assert screen.all_lines[:5] == ["a" * 10, "a" * 10, "a" * 10, "short", ""]
    screen.reflow(40, 5)
    assert screen.all_lines[:2] == ["a" * 30, "short"]
    stream.feed("next")
    assert screen.all_lines[2] == "next", "the cursor kept its place"


@pytest.mark.parametrize(("before", "after"), SIZES)
def test_live_region_redrawn_after_narrowing_leaves_no_stale_rows(before: int, after: int) -> None:
    # Issue 20: the erase counted lines, the terminal had re-wrapped them into more rows.
    term = Terminal(before)
    region = LiveRegion(term.console)
    term.console.print("above")
    region.replace(term.lines_of(paragraph(40)))
    term.resize(after)
    region.replace(term.lines_of(paragraph(60)))
    region.replace(term.lines_of(paragraph(60)), final=True)
    term.console.print("below")
    term.pump()
    text = " ".join(line for line in term.screen.all_lines if line)
    assert text == "above " + paragraph(60) + " below"


@pytest.mark.parametrize(("before", "after"), SIZES)
def test_spinner_live_erases_its_rewrapped_rows(before: int, after: int) -> None:
    term = Terminal(before)
    status = Text("thinking… " + "x" * (before - 20))
    live = reflowing(Live(status, console=term.console, transient=True, auto_refresh=False))
    live.start(refresh=True)
    term.resize(after)
    live.refresh()
    live.stop()
    term.console.print("answer")
    term.pump()
    assert [line for line in term.screen.all_lines if line] == ["answer"]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("first", "second"), [(119, 40), (80, 60), (41, 120)])
def test_a_stream_waits_for_the_width_to_hold_before_it_redraws(first: int, second: int) -> None:
    # Issue 32: two width changes within a frame. A frame drawn for the first
    # width and read by the terminal after the second counts the wrong rows.
    term = Terminal(120)
    clock = Clock()
    stream = MarkdownStream(term.console, clock=clock, timer=None)
    term.console.print("above")
    stream.feed(paragraph(30))
    stream.refresh()
    term.pump()
    term.console.size = (first, 30)  # the terminal is at `first` when the program looks
    clock.now += 0.05
    stream.feed(" more")
    stream.refresh()
    written = term.file.getvalue()[term._read :]
    assert written == "", "no frame while the width is changing"
    term.resize(first)
    term.resize(second)  # within the same frame
    clock.now += STEADY_S / 2
    stream.refresh()
    assert term.file.getvalue()[term._read :] == ""
    clock.now += STEADY_S
    stream.refresh()  # the width held: drawn, and erased by what the terminal shows
    stream.feed("\n\nnext block")  # settling a block erases the region too
    stream.finish()
    term.console.print("below")
    term.pump()
    text = " ".join(line for line in term.screen.all_lines if line)
    assert text == "above " + paragraph(30) + " more next block below"
