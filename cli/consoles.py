"""The consoles `nav agent` writes on, and the one rule for how its own lines wrap.

Everything but the streamed answer - banner, notices, tool lines, the usage
line, the `Run it?` command, slash-command output, errors - is printed with
`Console.print`, and how that wraps is decided here, once: on a terminal, at
word boundaries to the terminal's current width (rich re-reads it on every
print, so a resized window gets lines that fit); piped or redirected, never,
so a log line stays one line. The answer is not wrapped by this rule: rendered
as markdown it is laid out by `MarkdownStream`, raw it goes out unchanged
(`Console.out`).
"""

from __future__ import annotations

from typing import IO

from rich.console import Console

__all__ = ["make_console", "wrap_at_words"]


def wrap_at_words(console: Console) -> Console:
    """Apply the wrapping rule to `console` (word-wrapped on a terminal, whole lines piped)."""
    console.soft_wrap = not console.is_terminal
    return console


def make_console(*, stderr: bool = False, file: IO[str] | None = None) -> Console:
    """A console for `nav agent`'s output: stdout, `stderr=True`, or `file`."""
    return wrap_at_words(Console(file=file, stderr=stderr, highlight=False))
