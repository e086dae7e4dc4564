"""The consoles `nav agent` writes on: how their lines wrap, and that they obey no text.

Everything but the streamed answer - banner, notices, tool lines, the usage
line, the `Run it?` command, slash-command output, errors - is printed with
`Console.print`, and how that wraps is decided here, once: on a terminal, at
word boundaries to the terminal's current width (rich re-reads it on every
print, so a resized window gets lines that fit); piped or redirected, never,
so a log line stays one line. A line with a leading marker or indent (a tool
line, a banner example) wraps under its text (`Hanging`), not at the margin.
The answer is not wrapped by this rule: rendered
as markdown it is laid out by `MarkdownStream`, raw it goes out unchanged
(`Console.out`).

The consoles are `SafeConsole`s: whatever renderable is printed, every
character of its text that a terminal would obey (escape sequences, C1
controls, bidi overrides) is shown visibly (`visible`); only the console's own
control codes (cursor moves of a live region, styles) reach the terminal as
such. This is the net under the call sites that make untrusted text visible
before rich sees it (rich drops CR, BS, BEL, VT and FF from `Text` silently;
`visible` shows them). The one exception is stdout when it is not a terminal:
piped, the answer is written exactly as the model sent it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import IO, Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.segment import Segment
from rich.text import Text

from navagent.core.visible import visible

__all__ = ["Hanging", "SafeConsole", "make_console", "whole_word_rows", "wrap_at_words"]


def wrap_at_words(console: Console) -> Console:
    """Apply the wrapping rule to `console` (word-wrapped on a terminal, whole lines piped)."""
    console.soft_wrap = not console.is_terminal
    return console


class SafeConsole(Console):
    """A rich `Console` whose text segments never carry a control character to the terminal."""

    def __init__(self, *args: Any, raw_when_piped: bool = False, **kwargs: Any) -> None:
        """As `Console`; `raw_when_piped`: write text unchanged while not on a terminal."""
        super().__init__(*args, **kwargs)
        self.raw_when_piped = raw_when_piped

    @property
    def neutralising(self) -> bool:
        """Text is made visible on this console now (always, unless raw and piped)."""
        return not (self.raw_when_piped and not self.is_terminal)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        """Render as rich does, every text segment made visible (an unsafe link dropped)."""
        segments = super().render(renderable, options)
        return _visible_segments(segments) if self.neutralising else segments


_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _visible_segments(segments: Iterable[Segment]) -> Iterable[Segment]:
    for segment in segments:
        text, style, control = segment
        if control or (
            text.isascii()
            and _ASCII_CONTROL.search(text) is None
            and (style is None or style.link is None)
        ):
            yield segment  # the common case, checked without building anything
            continue
        if style is not None and style.link and visible(style.link) != style.link:
            style = style.update_link(None)
        yield Segment(visible(text), style)


def make_console(*, stderr: bool = False, file: IO[str] | None = None) -> SafeConsole:
    """A console for `nav agent`'s output: stdout, `stderr=True`, or `file`.

    stdout (or `file`) passes text unchanged while it is not a terminal;
    stderr is made visible always (its lines end up on a terminal, or in a
    log a terminal shows later).
    """
    console = SafeConsole(file=file, stderr=stderr, highlight=False, raw_when_piped=not stderr)
    wrap_at_words(console)
    return console


def whole_word_rows(text: Text, width: int) -> list[Text]:
    """`text` wrapped at spaces into rows of at most `width` cells, no word ever folded.

    rich folds a word wider than its row (`overflow="fold"`), cutting a name
    in two where the user cannot copy it whole; here such a word gets a row
    of its own and stays whole, wider than `width`.
    """
    plain = text.plain
    rows: list[Text] = []
    start = end = -1
    for word in re.finditer(r"\S+", plain):
        if start < 0:
            start, end = word.start(), word.end()
        elif cell_len(plain[start : word.end()]) <= width:
            end = word.end()
        else:
            rows.append(text[start:end])
            start, end = word.start(), word.end()
    if start >= 0:
        rows.append(text[start:end])
    return rows


class Hanging:
    """`text` whose wrapped rows start `indent` (+ `deeper`) cells in.

    `indent` cells of the first row (spaces, a marker such as `  → `) stay
    as they are; the rest wraps at words in the width left, every wrapped row
    `deeper` cells further in when it must not look like a line of its own
    (a list of examples). Where lines are not wrapped (piped output) the text
    is written as is.
    """

    def __init__(
        self, text: Text, indent: int, *, deeper: int = 0, whole_words: bool = False
    ) -> None:
        """Wrap `text` under its first `indent` cells, `deeper` more for wrapped rows.

        `whole_words`: a word wider than its row is never folded (it holds
        something the user types back: a sandbox name, a routing hint); it
        gets a row of its own, whole, and the terminal wraps it if it must.
        Print such text with `crop=False`.
        """
        self._text = text
        self._indent = indent
        self._deeper = deeper
        self._whole_words = whole_words

    @classmethod
    def list_item(cls, text: Text) -> Hanging:
        """A line of a list indented by its leading spaces: wrapped rows go 2 cells deeper."""
        indent = len(text.plain) - len(text.plain.lstrip(" "))
        return cls(text, indent, deeper=2 if indent else 0)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The first row as is, every wrapped row indented."""
        indent = self._indent + self._deeper
        room = options.max_width - indent
        if options.no_wrap or (not indent and not self._whole_words) or room < 10:
            yield self._text
            return
        head, body = self._text.divide([self._indent])
        wrap = (
            whole_word_rows
            if self._whole_words
            else lambda text, width: list(text.wrap(console, width, overflow="fold"))
        )
        first, *others = wrap(body, options.max_width - self._indent) or [Text()]
        rest = wrap(Text(" ").join(others), room) if others else []
        for number, line in enumerate([first, *rest]):
            line.rstrip()
            yield from (head if number == 0 else Text(" " * indent)).render(console)
            yield from line.render(console)
            yield Segment.line()
