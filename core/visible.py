r"""Untrusted text made safe to show on a terminal: every control character visible.

Model answers, thinking, tool arguments and output, provider errors and
cassette text can hold escape sequences that a terminal would obey: clear the
screen (`ESC[2J`), set the window title (OSC 0), write the clipboard (OSC 52),
hide text (`ESC[8m`), move the cursor or return to the line start (`\r`) to
overdraw what is shown, or reorder it (bidi overrides). `visible` turns each
such character into a visible token instead, the way `cat -v` does, so what a
person reads is what the text holds:

- C0 controls other than newline and tab in caret notation: ESC is `^[`,
  CR `^M`, NUL `^@`; DEL is `^?`;
- C1 controls (U+0080-U+009F) as `\x9b`;
- invisible format characters (bidi embeddings, overrides and isolates, zero
  width spaces, the BOM, soft hyphen, tag characters), line and paragraph
  separators and lone surrogates as `\u202e` (`\U000e0041` above U+FFFF).
  The zero width joiner and non-joiner stay: emoji and several scripts need them.

Everything else passes unchanged. The mapping is per character, so the
visible form keeps which control stood where (`visible(a + b) == visible(a) +
visible(b)`); it is idempotent, since its output holds no control character.
"""

from __future__ import annotations

import shlex
import unicodedata
from collections.abc import Iterable

__all__ = ["command_line", "is_unsafe", "one_line", "shell_line", "visible", "visible_char"]

_KEPT = frozenset("\n\t\u200c\u200d")
"""Controls and format characters a terminal shows as intended: line feed, tab, ZWNJ, ZWJ."""


def visible_char(char: str) -> str:
    """The visible token for one unsafe character (see the module docstring)."""
    code = ord(char)
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    if code <= 0x9F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def is_unsafe(char: str) -> bool:
    """True for a character `visible` replaces: a control or an invisible format character."""
    if char in _KEPT:
        return False
    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return True
    return unicodedata.category(char) in ("Cf", "Zl", "Zp", "Cs")


class _Table(dict[int, str]):
    """`str.translate`'s table, filled on first sight of each character (a full one costs ~1 s)."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        shown = visible_char(char) if is_unsafe(char) else char
        self[code] = shown
        return shown


_TABLE = _Table()


def visible(text: str) -> str:
    """`text` with every control and invisible format character shown as a visible token."""
    return text.translate(_TABLE)


def shell_line(argv: Iterable[str]) -> str:
    """A command line as a shell would read it, each argument quoted, nothing invisible.

    The confirmation shows this, so the person approves exactly the argv that
    runs: an argument with spaces stays one quoted argument, and a control
    character inside one shows as its token instead of hiding or overdrawing
    the rest.
    """
    return shlex.join(visible(argument) for argument in argv)


def one_line(text: str) -> str:
    """`visible(text)` with newlines and tabs shown too (`^J`, `^I`): it cannot add a line."""
    return visible(text).replace("\n", "^J").replace("\t", "^I")


def command_line(argv: Iterable[str]) -> str:
    """A command to copy and run, printed from values a file may hold: quoted, one line.

    As `shell_line`, but a newline inside an argument shows as `^J`, so no
    value can forge a line after the command (a report's next line).
    """
    return shlex.join(one_line(argument) for argument in argv)
