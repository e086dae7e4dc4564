"""Streaming an answer as rendered markdown without redrawing the scrollback.

The answer arrives in small deltas. Re-rendering the whole text on every delta
(rich's `Live(Markdown(text))`) costs O(n) per delta and, once the answer is
taller than the screen, leaves redrawn copies in the scrollback. Instead, the
text is cut into top-level markdown blocks (markdown-it, the parser rich uses):
every block but the last is *settled* - no later text can change how it
renders - and is printed once, for good; only the last, still growing block is
drawn in a transient `Live` region that is redrawn (at most `max_fps` times a
second) and re-flows to the terminal's current width on each redraw.

A settled block is one followed by the start of another top-level block, so
a table or a fenced code block stays live until the text after it begins, and
an unclosed fence is one block until it closes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.text import Text

__all__ = ["CODE_THEME", "MarkdownStream", "split_settled"]

CODE_THEME = "monokai"
_PARSER = MarkdownIt().enable("strikethrough").enable("table")
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


class _Tail:
    """Renders only the last `max_lines` lines of a renderable.

    Keeps the live region shorter than the screen: a region taller than the
    screen cannot be erased, and its redraws would pile up in the scrollback.
    """

    def __init__(self, renderable: RenderableType, max_lines: int) -> None:
        self.renderable = renderable
        self.max_lines = max_lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.renderable, options, pad=False)
        for line in lines[-self.max_lines :]:
            yield from line
            yield Segment.line()


class MarkdownStream:
    """Renders one streamed answer on `console`: settled blocks once, the last live."""

    def __init__(
        self,
        console: Console,
        *,
        max_fps: float = 20.0,
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
        self._live: Live | None = None
        self._drawn_at = float("-inf")
        self._printed = False

    @property
    def pending(self) -> str:
        """The text of the block still growing (not printed for good yet)."""
        return self._pending

    def feed(self, text: str) -> None:
        """Add a delta: print what it settles, redraw the growing block when due."""
        if not text:
            return
        self._pending += text
        if "\n" in text:
            settled, self._pending = split_settled(self._pending)
            if settled:
                self._print(settled)
        now = self._clock()
        if now - self._drawn_at >= self._interval:
            self._draw(now)

    def finish(self) -> None:
        """Print the last block for good and end the live region."""
        rest, self._pending = self._pending, ""
        self._stop_live()
        if rest.strip():
            self._print(rest)

    def _markdown(self, text: str) -> RenderableType:
        markdown = Markdown(text, code_theme=self._code_theme)
        # rich puts a blank line between top-level blocks; keep it across
        # prints (a table draws its own).
        if not self._printed or text.lstrip().startswith("|"):
            return markdown
        return Group(Text(), markdown)

    def _print(self, text: str) -> None:
        self._stop_live()
        self._console.print(self._markdown(text), soft_wrap=False)
        self._printed = True

    def _draw(self, now: float) -> None:
        self._drawn_at = now
        if not self._pending.strip():
            return
        view = _Tail(self._markdown(self._pending), max(self._console.height - 2, 1))
        if self._live is None:
            self._live = Live(
                view,
                console=self._console,
                auto_refresh=False,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
                vertical_overflow="visible",
            )
            self._live.start()
        self._live.update(view, refresh=True)

    def _stop_live(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.stop()


def render_plain(console: Console, deltas: Iterable[str]) -> None:
    """The baseline the benchmark compares against: raw deltas, as piped output gets them."""
    for delta in deltas:
        console.out(delta, end="", highlight=False)
