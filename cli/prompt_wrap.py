"""A prompt whose long lines wrap at words, with no markers that look like line breaks.

prompt_toolkit wraps a line that is wider than the window at the character
that does not fit, mid-word, and asks `prompt_continuation` for the prefix of
every row after the first, soft-wrapped or not. `WordWrap` is an input
processor that pads the end of a row with spaces when the next word would
not fit, so the word starts the next row whole (a word longer than a row is
still cut); `continuation` indents a wrapped row under the text and marks
only a real new line of the message.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import (
    StyleAndTextTuples,
    fragment_list_width,
    to_formatted_text,
)
from prompt_toolkit.layout.processors import Processor, Transformation, TransformationInput
from prompt_toolkit.layout.utils import explode_text_fragments
from prompt_toolkit.utils import get_cwidth

__all__ = ["WordWrap", "continuation", "wrap_prompt_at_words"]


def wrap_prompt_at_words(session: PromptSession[str]) -> PromptSession[str]:
    """Make `session` wrap long lines at words (`WordWrap`, `continuation`); returns it."""
    session.prompt_continuation = continuation
    prompt_width = lambda: fragment_list_width(to_formatted_text(session.message))  # noqa: E731
    session.input_processors = [*(session.input_processors or []), WordWrap(prompt_width)]
    return session


def continuation(width: int, _line_number: int, wrap_count: int) -> str:
    """The prefix of every row after the prompt's first, `width` (the prompt's width) wide.

    A soft-wrapped row is indented under the text; the first row of a new
    line of the message (Esc-Enter, a trailing backslash, a paste) says so.
    """
    if wrap_count:
        return " " * width
    return "." * max(width - 1, 0) + " "


class WordWrap(Processor):
    """Moves a word that would be cut at the end of a row to the next row.

    Every row of the input has a prefix `prefix_width()` cells wide (the
    prompt, then `continuation`), so each row holds the window's width minus
    that.
    """

    def __init__(self, prefix_width: Callable[[], int]) -> None:
        """Wrap rows of the window's width minus `prefix_width()`."""
        self._prefix_width = prefix_width

    def apply_transformation(self, transformation_input: TransformationInput) -> Transformation:
        """Pad the line's fragments so that no word straddles two rows."""
        fragments = transformation_input.fragments
        room = transformation_input.width - self._prefix_width()
        if room <= 0 or any("[ZeroWidthEscape]" in fragment[0] for fragment in fragments):
            return Transformation(fragments)
        chars = explode_text_fragments(fragments)
        widths = [get_cwidth(fragment[1]) for fragment in chars]
        result: StyleAndTextTuples = []
        to_display: list[int] = []
        """Where each character (and the end of the line) lands in `result`."""
        position = column = 0
        for index, fragment in enumerate(chars):
            starts_word = not fragment[1].isspace() and (
                index == 0 or chars[index - 1][1].isspace()
            )
            if starts_word and column:
                word = _word_width(chars, widths, index)
                if column + word > room >= word:
                    result.append((fragment[0], " " * (room - column)))
                    position += room - column
                    column = room
            to_display.append(position)
            width = widths[index]
            if fragment[1] == " " and column + width > room:
                # A space the row has no room for would open the next row: hide it.
                result.append((fragment[0], ""))
                continue
            result.append(fragment)
            position += len(fragment[1])
            column = width if column + width > room else column + width
        to_display.append(position)

        def source_to_display(index: int) -> int:
            return to_display[index] if index < len(to_display) else position + index - len(chars)

        def display_to_source(display: int) -> int:
            return max(bisect_right(to_display, display) - 1, 0)

        return Transformation(result, source_to_display, display_to_source)


def _word_width(chars: StyleAndTextTuples, widths: list[int], start: int) -> int:
    width = 0
    for index in range(start, len(chars)):
        if chars[index][1].isspace():
            break
        width += widths[index]
    return width
