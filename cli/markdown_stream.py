"""Streaming an answer as rendered markdown without redrawing the scrollback.

The answer arrives in small deltas. Re-rendering the whole text on every delta
(rich's `Live(Markdown(text))`) costs O(n) per delta and, once the answer is
taller than the screen, leaves redrawn copies in the scrollback. Instead, the
text is cut into top-level markdown blocks (markdown-it, the parser rich uses):
every block but the last is *settled* - no later text can change how it
renders - and is printed once, for good; only the last, still growing block is
drawn in a live region, redrawn at a frame rate (a timer keeps drawing while
the deltas pause), re-flowed to the terminal's current width on each redraw.

A settled block is one followed by the start of another top-level block, so
a table or a fenced code block stays live until the text after it begins, and
an unclosed fence is one block until it closes.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from markdown_it import MarkdownIt
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.markdown import Markdown
from rich.segment import Segment
from rich.text import Text

from navagent.cli.live_region import Lines, LiveRegion, rstrip_line
from navagent.core.visible import visible

__all__ = [
    "CODE_THEME",
    "AnswerMarkdown",
    "MarkdownStream",
    "Timer",
    "block_lines",
    "loop_timer",
    "split_blocks",
    "split_settled",
    "table_preview",
]

CODE_THEME = "monokai"
_CPU_SHARE = 0.2
"""Drawing the live block may take this share of the time (a costly block gets longer frames)."""
_MAX_FRAME_S = 0.1
"""However costly the block, the screen is redrawn at least this often while text comes."""
_PARSER = MarkdownIt().enable("strikethrough").enable("table")
"""The same parser configuration as `rich.markdown.Markdown`."""
_TABLE_RULE = re.compile(r"\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?")


def _block_starts(text: str) -> list[int]:
    """The line numbers where `text`'s top-level markdown blocks start."""
    return [
        token.map[0]
        for token in _PARSER.parse(text)
        if token.level == 0 and token.map is not None and token.nesting >= 0
    ]


def split_settled(text: str) -> tuple[str, str]:
    """Split `text` into (settled blocks, the growing last block).

    The settled part is whole lines ending before the last top-level block
    starts; it is empty while `text` holds one block or none.
    """
    starts = _block_starts(text)
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


def _trimmed(lines: Lines) -> Lines:
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


class AnswerMarkdown:
    """A whole answer rendered as `MarkdownStream` leaves it on screen once it has streamed.

    Each top-level block is rendered on its own, trimmed, and separated from
    the previous one by one blank line: the same lines, whatever the deltas
    were. Replaying a session and `/history` print answers with this.
    """

    def __init__(self, text: str, *, code_theme: str = CODE_THEME) -> None:
        """Render `text` (markdown)."""
        self.text = text
        self.code_theme = code_theme

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Yield the blocks' lines."""
        for number, block in enumerate(split_blocks(self.text)):
            lines = block_lines(console, options, block, code_theme=self.code_theme)
            if number and lines:
                yield Segment.line()
            for line in lines:
                yield from line
                yield Segment.line()


def split_blocks(text: str) -> list[str]:
    """`text` cut into its top-level markdown blocks (whole lines, blanks with the block above)."""
    starts = _block_starts(text)
    if len(starts) < 2:
        return [text] if text.strip() else []
    lines = text.splitlines(keepends=True)
    cuts = [0, *starts[1:], len(lines)]
    return ["".join(lines[a:b]) for a, b in zip(cuts, cuts[1:], strict=False)]


def _split_at_blank_line(text: str) -> tuple[str, str]:
    """Plain text's `split_settled`: everything up to the last blank line is settled."""
    cut = text.rfind("\n\n")
    return (text[: cut + 2], text[cut + 2 :]) if cut >= 0 else ("", text)


def block_lines(
    console: Console,
    options: ConsoleOptions,
    block: str,
    *,
    code_theme: str = CODE_THEME,
    preview: bool = False,
    plain_style: str | None = None,
) -> Lines:
    """One block's rendered lines, trimmed; `preview`: a growing table is drawn cheaply.

    With `plain_style` the block is words in that style, wrapped, not markdown.
    Control characters are made visible first (`visible`): code spans, code
    blocks and link targets never carry an escape sequence to the terminal.
    """
    block = visible(block)
    renderable: RenderableType = _Markdown(block, code_theme=code_theme)
    if plain_style is not None:
        renderable = Text(block.strip("\n"), style=plain_style)
    elif preview and block.lstrip().startswith("|"):
        renderable = table_preview(block)
    lines = _trimmed(console.render_lines(renderable, options, pad=False))
    return [rstrip_line(line) for line in lines]


class _Cancellable(Protocol):
    def cancel(self) -> object: ...


Timer = Callable[[float, Callable[[], None]], "_Cancellable | None"]
"""`timer(delay_s, callback)` calls `callback` once after `delay_s`; None when it cannot."""


def loop_timer(delay: float, callback: Callable[[], None]) -> _Cancellable | None:
    """The default `Timer`: the running asyncio loop's `call_later`, or None outside a loop."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop.call_later(delay, callback)


class MarkdownStream:
    """Renders one streamed answer on `console`: settled blocks once, the last live.

    rich pads tables and code with blank lines and separates blocks with one
    more, so blocks printed one at a time would get uneven gaps: each block is
    trimmed here and, after the first, printed after one blank line
    (`AnswerMarkdown` renders a whole answer the same way). The live block is
    drawn as plain lines after the settled text and erased before the next
    draw (`LiveRegion`: what `rich.live` does, minus its extra final render
    on stop, and counting the rows a resized terminal re-wrapped it into).

    The live block is redrawn at a frame rate, never on every delta and never
    waiting for anything else: a timer redraws it while deltas pause, so the
    screen is at most one frame (plus one draw) behind the stream. A costly
    block (a long paragraph is re-rendered whole, to wrap it at words)
    stretches the frame so drawing takes at most `_CPU_SHARE` of the time,
    up to `_MAX_FRAME_S`. The live block is cut to its last lines so that it
    fits in half the screen: a region taller than the screen cannot be erased,
    and one a narrowing terminal re-wraps into twice as many rows must still fit.
    """

    def __init__(
        self,
        console: Console,
        *,
        max_fps: float = 20.0,
        clock: Callable[[], float] = time.monotonic,
        timer: Timer | None = loop_timer,
        footer: Callable[[], str] = lambda: "",
        code_theme: str = CODE_THEME,
        plain_style: str | None = None,
    ) -> None:
        """Draw on `console` (a terminal that can move the cursor).

        Args:
            console: Where the answer goes.
            max_fps: Redraws of the live block per second, at most.
            clock: Seconds, monotonic; injected so tests and benchmarks can pace time.
            timer: Schedules the next frame while no delta arrives (None: redraw
                only when fed); injected with `clock`.
            footer: What to show under the growing block (what the user types,
                a note); asked on every frame, never printed for good.
            code_theme: Pygments theme for fenced code.
            plain_style: Not markdown: words in this style (thinking, a
                refusal), wrapped the same way, settled at blank lines.
        """
        self._console = console
        self._min_frame = 1.0 / max_fps
        self._frame = self._min_frame
        self._clock = clock
        self._timer = timer
        self._footer = footer
        self._code_theme = code_theme
        self._plain_style = plain_style
        self._pending = ""
        self._region = LiveRegion(console, clock=clock)
        self._can_erase = console.is_terminal and not console.is_dumb_terminal
        self._drawn_at = float("-inf")
        self._drawn: tuple[str, int, str] | None = None
        """(block text, width, footer) of the last draw: nothing to redraw while it holds."""
        self._printed = 0
        """Characters of the answer printed for good."""
        self._shown = 0
        """Characters of the growing block on screen."""
        self._tick: _Cancellable | None = None
        self._may_settle = False
        """A line ended since the last look for settled blocks (put off during a resize)."""

    @property
    def pending(self) -> str:
        """The text of the block still growing (not printed for good yet)."""
        return self._pending

    @property
    def shown(self) -> int:
        """How many characters of the answer fed so far are on screen."""
        return self._printed + self._shown

    def feed(self, text: str) -> None:
        """Add a delta: print what it settles; redraw the growing block when a frame is due."""
        if not text:
            return
        self._pending += text
        if "\n" in text:
            self._may_settle = True
        if self._may_settle and self._settle():
            # One render per delta: the block just printed is enough work;
            # the rest is drawn on the next frame.
            self._schedule()
            return
        now = self._clock()
        if now - self._drawn_at >= self._frame:
            self._draw(now)
        self._schedule()

    def refresh(self) -> None:
        """Redraw now if anything changed (e.g. a key was typed: the footer)."""
        if self._stale():
            self._draw(self._clock())

    def erase(self) -> None:
        """Take the live block off the screen (the process stops); the next frame redraws it."""
        self._region.clear()
        self._drawn = None

    def finish(self) -> None:
        """Print the last block for good and end the live region."""
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None
        rest, self._pending = self._pending, ""
        if rest.strip():
            self._print(rest)
        else:
            self._region.clear()
        self._printed = self._shown = 0
        self._may_settle = False
        self._drawn = None
        self._drawn_at = float("-inf")
        self._frame = self._min_frame

    def _schedule(self) -> None:
        """Make sure a frame comes while the block is live, even if no delta does."""
        if self._tick is not None or self._timer is None or not self._can_erase:
            return
        # The frame after the last draw, or a whole frame from now if that has passed.
        now = self._clock()
        next_frame = self._drawn_at + self._frame
        delay = next_frame - now if next_frame > now else self._frame
        self._tick = self._timer(delay, self._on_tick)

    def _on_tick(self) -> None:
        self._tick = None
        # Blocks that settled while the window was being resized are printed now.
        settled = self._may_settle and self._settle()
        if not settled and self._stale():
            self._draw(self._clock())
        self._schedule()

    def _settle(self) -> bool:
        """Print the settled blocks of `pending` for good; False when there are none yet.

        Not while the window is being resized: printing erases the live block.
        """
        if self._can_erase and not self._region.steady():
            return False
        self._may_settle = False
        settled, self._pending = (
            split_settled(self._pending)
            if self._plain_style is None
            else _split_at_blank_line(self._pending)
        )
        if not settled:
            return False
        self._print(settled)
        return True

    def _stale(self) -> bool:
        """Something on screen is out of date: text came, the width or the footer changed."""
        drawn = self._drawn
        if drawn is None:
            return bool(self._pending.strip() or self._footer())
        return drawn != (self._pending, self._console.width, self._footer())

    def _blocks_lines(self, text: str) -> Lines:
        lines: Lines = []
        blocks = split_blocks(text) if self._plain_style is None else [text]
        for block in blocks:
            rendered = block_lines(
                self._console,
                self._console.options,
                block,
                code_theme=self._code_theme,
                plain_style=self._plain_style,
            )
            if rendered and (lines or self._printed):
                lines.append([])
            lines += rendered
        return lines

    def _print(self, text: str) -> None:
        self._region.replace(self._blocks_lines(text), final=True)
        self._printed += len(text)
        self._shown = 0
        self._drawn = None

    def _draw(self, now: float) -> None:
        if not self._can_erase:
            self._drawn_at = now
            return
        if not self._region.steady():
            return  # still stale: a later frame draws, once the width holds
        self._drawn_at = now
        started = time.thread_time()
        pending, width, footer_text = self._pending, self._console.width, self._footer()
        footer = self._footer_lines(footer_text)
        # Half the screen: re-wrapped by a terminal narrowed to half its width,
        # the region still fits on screen, where it can be erased.
        room = max(self._console.height // 2 - 1 - len(footer), 1)
        lines: Lines = []
        if pending.strip():
            lines = block_lines(
                self._console,
                self._console.options,
                pending,
                code_theme=self._code_theme,
                preview=True,
                plain_style=self._plain_style,
            )[-room:]
            if self._printed:
                lines.insert(0, [])
        if lines or footer or self._region.lines:
            self._region.replace(lines + footer)
        self._drawn = (pending, width, footer_text)
        self._shown = len(pending)
        cost = time.thread_time() - started
        self._frame = min(max(self._min_frame, cost / _CPU_SHARE), _MAX_FRAME_S)

    def _footer_lines(self, footer: str) -> Lines:
        if not footer:
            return []
        text = Text(footer, style="cyan")
        return self._console.render_lines(text, self._console.options, pad=False)


def render_plain(console: Console, deltas: Iterable[str]) -> None:
    """The baseline the benchmark compares against: raw deltas, as piped output gets them."""
    for delta in deltas:
        console.out(delta, end="", highlight=False)
