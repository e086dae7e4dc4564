"""Redrawing lines in place on a terminal that may be resized meanwhile.

A live region (the growing block of an answer, the spinner line) is erased
before each redraw by moving the cursor up over it. Counting the lines drawn
is not enough: when the window narrows, the terminal re-wraps every line
longer than the new width into several rows (tmux, iTerm2, VTE, kitty, Windows
Terminal all do), and an erase that counts lines leaves the top rows behind -
a stale partial copy that ends up in the scrollback. So the region remembers
the width of each line it drew and, when it erases, counts the rows those
lines take at the terminal's width *now* (`rows_at`).

That count is right only if the terminal has the width read when it gets the
erase: a window edge being dragged changes the width several times within a
frame, and a frame computed for one width but read by the terminal after the
next change leaves rows behind (or takes rows above). So a region is redrawn
only once the width has held for `STEADY_S` (`steady`): by then the terminal
has re-wrapped for the last change, and the erase counts what it shows.

`LiveRegion` is the region `MarkdownStream` draws in; `ReflowingLiveRender`
gives rich's `Live` (the spinner) the same erase.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.control import Control
from rich.live import Live
from rich.live_render import LiveRender
from rich.segment import ControlCode, ControlType, Segment, Segments

__all__ = [
    "STEADY_S",
    "LiveRegion",
    "Lines",
    "ReflowingLiveRender",
    "reflowing",
    "rows_at",
    "rstrip_line",
]

Lines = list[list[Segment]]
STEADY_S = 0.25
"""A width that has held this long is the one the terminal shows (no resize is under way)."""


def rows_at(widths: Iterable[int], width: int) -> int:
    """Rows that lines of these cell widths take on a terminal `width` columns wide.

    A line that fits takes one row (an empty line too); a longer one is
    wrapped by the terminal into as many rows as it needs.
    """
    columns = max(width, 1)
    return sum(max(1, -(-cells // columns)) for cells in widths)


def rstrip_line(line: Sequence[Segment]) -> list[Segment]:
    """`line` without the invisible spaces rich pads it to the full width with.

    Padding written to the terminal is content to it: a narrowing terminal
    re-wraps a padded short line into two rows. Spaces with a background
    (a code block) are visible and stay.
    """
    kept = list(line)
    while kept:
        last = kept[-1]
        style = last.style
        if last.control or (style is not None and (style.bgcolor or style.reverse)):
            break
        text = last.text.rstrip(" ")
        if text:
            kept[-1] = Segment(text, style)
            break
        kept.pop()
    return kept


def _erase_rows(rows: int, *, cursor_on_last: bool) -> Control:
    """Erase `rows` rows ending at the cursor's row (or the row above it) and stay at the top.

    `cursor_on_last`: the cursor sits at the end of the region's last row
    (rich's Live); otherwise it is at the start of the row after the region.
    """
    codes: list[ControlCode] = [(ControlType.CARRIAGE_RETURN,)]
    if cursor_on_last and rows:
        codes.append((ControlType.ERASE_IN_LINE, 2))
        rows -= 1
    for _ in range(rows):
        codes += [(ControlType.CURSOR_UP, 1), (ControlType.ERASE_IN_LINE, 2)]
    return Control(*codes)


class LiveRegion:
    """Lines drawn under the cursor and replaced as a whole on each draw.

    The cursor stays at the start of the row after the region, so what is
    printed next (or `replace(..., final=True)`) goes where the region was.
    """

    def __init__(self, console: Console, *, clock: Callable[[], float] = time.monotonic) -> None:
        """Draw on `console` (a terminal that can move the cursor); `clock` times `steady`."""
        self._console = console
        self._clock = clock
        self._widths: list[int] = []
        self._width = console.width
        self._width_since = float("-inf")

    @property
    def lines(self) -> int:
        """How many lines the region holds (0: nothing drawn)."""
        return len(self._widths)

    def steady(self) -> bool:
        """The terminal's width has held for `STEADY_S`: an erase now counts the right rows.

        Redraws wait while it is False (a window is being resized); call it
        at least once a frame, it notes each change of width.
        """
        width, now = self._console.width, self._clock()
        if width != self._width:
            self._width, self._width_since = width, now
        return now - self._width_since >= STEADY_S

    def replace(self, lines: Sequence[list[Segment]], *, final: bool = False) -> None:
        """Erase the region and write `lines` in its place, in one write.

        `final=True` leaves the lines for good: they are no longer part of the
        region, and the next draw starts below them.
        """
        lines = [rstrip_line(line) for line in lines]
        segments = [segment for line in lines for segment in (*line, Segment.line())]
        with self._console:  # one write to the terminal
            if self._widths:
                rows = rows_at(self._widths, self._console.width)
                self._console.control(_erase_rows(rows, cursor_on_last=False))
            self._console.print(Segments(segments), end="", soft_wrap=True)
        self._widths = [] if final else [Segment.get_line_length(line) for line in lines]

    def clear(self) -> None:
        """Erase the region."""
        if self._widths:
            self.replace([])


class ReflowingLiveRender(LiveRender):
    """rich's `LiveRender` whose erase counts rows at the terminal's current width."""

    def __init__(self, console: Console, live: LiveRender) -> None:
        """Take over from `live` (the render rich's `Live` made), drawing on `console`."""
        super().__init__(live.renderable, live.style, live.vertical_overflow)
        self._console = console
        self._widths: list[int] = []

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Render as rich does, remembering each line's width."""
        segments = [
            segment
            for segment in super().__rich_console__(console, options)
            if isinstance(segment, Segment)  # LiveRender yields only segments
        ]
        self._widths = [Segment.get_line_length(line) for line in Segment.split_lines(segments)]
        yield from segments

    def position_cursor(self) -> Control:
        """Move to the start of the region, erasing it (the cursor is at its end)."""
        if self._shape is None:
            return Control()
        rows = rows_at(self._widths, self._console.width)
        return _erase_rows(rows, cursor_on_last=True)

    def restore_cursor(self) -> Control:
        """Erase the region after rich's Live has moved below it (on stop)."""
        if self._shape is None:
            return Control()
        rows = rows_at(self._widths, self._console.width)
        return _erase_rows(rows, cursor_on_last=False)


def reflowing(live: Live) -> Live:
    """Give `live` an erase that survives the terminal re-wrapping it; returns `live`.

    Call before `live.start()`.
    """
    # rich builds its LiveRender in Live.__init__ and offers no way to pass one.
    live._live_render = ReflowingLiveRender(live.console, live._live_render)
    return live
