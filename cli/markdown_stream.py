"""Streaming an answer as rendered markdown without redrawing the scrollback.

The answer arrives in small deltas. Re-rendering the whole text on every delta
(rich's `Live(Markdown(text))`) costs O(n) per delta and, once the answer is
taller than the screen, leaves redrawn copies in the scrollback. Instead, the
text is cut into top-level markdown blocks (markdown-it, the parser rich uses):
every block but the last is *settled* - no later text can change how it
renders - and is printed once, for good; only the last, still growing block is
drawn in a live region that is redrawn (at most `max_fps` times a second,
and only when a line completes if its last draw was costly) and re-flows to
the terminal's current width on each redraw.

A settled block is one followed by the start of another top-level block, so
a table or a fenced code block stays live until the text after it begins, and
an unclosed fence is one block until it closes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable

from markdown_it import MarkdownIt
from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.control import Control
from rich.markdown import Markdown
from rich.segment import ControlCode, ControlType, Segment, Segments
from rich.text import Text

__all__ = ["CODE_THEME", "MarkdownStream", "split_settled"]

CODE_THEME = "monokai"
_COSTLY_DRAW_S = 0.001
"""A growing block whose last draw took longer (a big table) is redrawn only
when a line completes, not on every delta the frame rate allows."""
_PARSER = MarkdownIt().enable("strikethrough").enable("table")
_TABLE_RULE = re.compile(r"\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?")
"""The same parser configuration as `rich.markdown.Markdown`."""


def split_settled(text: str) -> tuple[str, str]:
    """Split `text` into (settled blocks, the growing last block).

    The settled part is whole lines ending before the last top-level block
    starts; it is empty while `text` holds one block or none.
    """
    starts = [
        token.map[0]
        for token in _PARSER.parse(text)
        if token.level == 0 and token.map is not None and token.nesting >= 0
    ]
    if len(starts) < 2:
        return "", text
    lines = text.splitlines(keepends=True)
    cut = starts[-1]
    return "".join(lines[:cut]), "".join(lines[cut:])


class _Markdown(Markdown):
    """rich's Markdown, parsed with one shared parser instead of a new one per render."""

    def __init__(self, markup: str, code_theme: str) -> None:
        # Markdown.__init__ builds a MarkdownIt per call, most of a small render's cost.
        self.markup = markup
        self.parsed = _PARSER.parse(markup)
        self.code_theme = code_theme
        self.justify = None
        self.style = "none"
        self.hyperlinks = True
        self.inline_code_lexer = None
        self.inline_code_theme = code_theme


_Lines = list[list[Segment]]


def _trimmed(lines: _Lines) -> _Lines:
    """Drop the blank lines rich pads tables, code and block ends with."""
    filled = [i for i, line in enumerate(lines) if "".join(s.text for s in line).strip()]
    return lines[filled[0] : filled[-1] + 1] if filled else []


def table_preview(text: str) -> Text:
    """A growing markdown table laid out as aligned columns, cheaply.

    rich's table costs a millisecond or more per render; redrawn on every row
    that is too much, so the live view uses this look-alike (header, rule,
    rows, two spaces between columns) and rich renders the real table once,
    when the block is complete.
    """
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.strip().startswith("|") and not _TABLE_RULE.fullmatch(line.strip())
    ]
    widths = [0] * max((len(row) for row in rows), default=0)
    for row in rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], cell_len(cell))
    preview = Text()
    for number, row in enumerate(rows):
        cells = [cell + " " * (widths[i] - cell_len(cell)) for i, cell in enumerate(row)]
        preview.append(" " + "  ".join(cells).rstrip() + "\n", "bold" if number == 0 else "")
        if number == 0:
            preview.append(" " + "─" * (sum(widths) + 2 * (len(widths) - 1)) + "\n")
    preview.rstrip()
    return preview


class MarkdownStream:
    """Renders one streamed answer on `console`: settled blocks once, the last live.

    rich pads tables and code with blank lines and separates blocks with one
    more, so blocks printed one at a time would get uneven gaps: each block is
    trimmed here and, after the first, printed after one blank line. The live
    block is drawn as plain lines after the settled text and erased line by
    line before the next draw (what `rich.live` does, minus its extra final
    render on stop), cut to its last lines so it stays shorter than the
    screen: a region taller than the screen cannot be erased, and its
    redraws would pile up in the scrollback.
    """

    def __init__(
        self,
        console: Console,
        *,
        max_fps: float = 12.0,
        clock: Callable[[], float] = time.monotonic,
        code_theme: str = CODE_THEME,
    ) -> None:
        """Draw on `console` (a terminal that can move the cursor).

        Args:
            console: Where the answer goes.
            max_fps: Redraws of the live block per second, at most.
            clock: Seconds, monotonic; injected so benchmarks can simulate pacing.
            code_theme: Pygments theme for fenced code.
        """
        self._console = console
        self._interval = 1.0 / max_fps
        self._clock = clock
        self._code_theme = code_theme
        self._pending = ""
        self._live_lines = 0
        """Lines of the live block on screen now, above the cursor."""
        self._drawn_at = float("-inf")
        self._printed = False
        self._can_erase = console.is_terminal and not console.is_dumb_terminal
        self._footer = ""
        self._draw_cost = 0.0
        """CPU seconds the last draw took; costly blocks are redrawn once per line."""

    @property
    def pending(self) -> str:
        """The text of the block still growing (not printed for good yet)."""
        return self._pending

    def set_footer(self, footer: str) -> None:
        """Show `footer` (what the user is typing) under the growing block; "" hides it.

        It is part of the live region only, so it never reaches the scrollback.
        """
        if footer != self._footer:
            self._footer = footer
            self._draw(self._clock())

    def feed(self, text: str) -> None:
        """Add a delta: print what it settles, redraw the growing block when due."""
        if not text:
            return
        self._pending += text
        settled = ""
        if "\n" in text:
            settled, self._pending = split_settled(self._pending)
            if settled:
                self._print(settled)
        now = self._clock()
        if settled:
            # One render per delta: the block just printed is enough work.
            if self._footer:
                self._draw(now)
            return
        due = now - self._drawn_at >= self._interval
        if due and (self._draw_cost < _COSTLY_DRAW_S or "\n" in text):
            self._draw(now)

    def finish(self) -> None:
        """Print the last block for good and end the live region."""
        rest, self._pending = self._pending, ""
        if rest.strip():
            self._print(rest)
        else:
            self._replace_live([])

    def _lines(self, text: str, max_lines: int | None = None, *, live: bool = False) -> _Lines:
        renderable: RenderableType = _Markdown(text, code_theme=self._code_theme)
        if live and text.lstrip().startswith("|"):
            renderable = table_preview(text)
        lines = _trimmed(self._console.render_lines(renderable, self._console.options, pad=False))
        if self._printed:
            lines.insert(0, [])
        return lines[-max_lines:] if max_lines is not None else lines

    def _print(self, text: str) -> None:
        self._replace_live(self._lines(text))
        self._live_lines = 0
        self._printed = True

    def _draw(self, now: float) -> None:
        self._drawn_at = now
        if not self._can_erase:
            return
        started = time.thread_time()
        footer = self._footer_lines()
        room = max(self._console.height - 2 - len(footer), 1)
        lines = self._lines(self._pending, room, live=True) if self._pending.strip() else []
        if lines or footer or self._live_lines:
            self._replace_live(lines + footer)
        self._draw_cost = time.thread_time() - started

    def _footer_lines(self) -> _Lines:
        if not self._footer:
            return []
        text = Text(self._footer, style="cyan")
        return self._console.render_lines(text, self._console.options, pad=False)

    def _replace_live(self, lines: _Lines) -> None:
        """Erase the live block and write `lines` in its place (it becomes the live block)."""
        erase: list[ControlCode] = [(ControlType.CARRIAGE_RETURN,)]
        for _ in range(self._live_lines):
            erase += [(ControlType.CURSOR_UP, 1), (ControlType.ERASE_IN_LINE, 2)]
        segments = [segment for line in lines for segment in (*line, Segment.line())]
        with self._console:  # one write to the terminal
            if self._live_lines:
                self._console.control(Control(*erase))
            self._console.print(Segments(segments), end="", soft_wrap=True)
        self._live_lines = len(lines)


def render_plain(console: Console, deltas: Iterable[str]) -> None:
    """The baseline the benchmark compares against: raw deltas, as piped output gets them."""
    for delta in deltas:
        console.out(delta, end="", highlight=False)
