"""The consoles `nav agent` writes on, and the one rule for how its own lines wrap.

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
"""

from __future__ import annotations

from typing import IO

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.text import Text

__all__ = ["Hanging", "make_console", "wrap_at_words"]


def wrap_at_words(console: Console) -> Console:
    """Apply the wrapping rule to `console` (word-wrapped on a terminal, whole lines piped)."""
    console.soft_wrap = not console.is_terminal
    return console


def make_console(*, stderr: bool = False, file: IO[str] | None = None) -> Console:
    """A console for `nav agent`'s output: stdout, `stderr=True`, or `file`."""
    return wrap_at_words(Console(file=file, stderr=stderr, highlight=False))


class Hanging:
    """`text` whose wrapped rows start `indent` (+ `deeper`) cells in.

    `indent` cells of the first row (spaces, a marker such as `  → `) stay
    as they are; the rest wraps at words in the width left, every wrapped row
    `deeper` cells further in when it must not look like a line of its own
    (a list of examples). Where lines are not wrapped (piped output) the text
    is written as is.
    """

    def __init__(self, text: Text, indent: int, *, deeper: int = 0) -> None:
        """Wrap `text` under its first `indent` cells, `deeper` more for wrapped rows."""
        self._text = text
        self._indent = indent
        self._deeper = deeper

    @classmethod
    def list_item(cls, text: Text) -> Hanging:
        """A line of a list indented by its leading spaces: wrapped rows go 2 cells deeper."""
        indent = len(text.plain) - len(text.plain.lstrip(" "))
        return cls(text, indent, deeper=2 if indent else 0)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The first row as is, every wrapped row indented."""
        indent = self._indent + self._deeper
        room = options.max_width - indent
        if options.no_wrap or not indent or room < 10:
            yield self._text
            return
        head, body = self._text.divide([self._indent])
        first, *others = body.wrap(console, options.max_width - self._indent, overflow="fold")
        rest = list(Text(" ").join(others).wrap(console, room, overflow="fold")) if others else []
        for number, line in enumerate([first, *rest]):
            line.rstrip()
            yield from (head if number == 0 else Text(" " * indent)).render(console)
            yield from line.render(console)
            yield Segment.line()
