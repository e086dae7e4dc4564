"""The consoles `nav agent` writes on: how their lines wrap, and that they obey no text.

Everything but the streamed answer - banner, notices, tool lines, the usage
line, the `Run it?` command, slash-command output, errors - is printed with
`Console.print`, and how that wraps is decided here, once: on a terminal, at
word boundaries to the terminal's current width (rich re-reads it on every
print, so a resized window gets lines that fit); piped or redirected, never,
so a log line stays one line. The answer is not wrapped by this rule: rendered
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

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from navagent.core.visible import visible

__all__ = ["SafeConsole", "make_console", "wrap_at_words"]


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
