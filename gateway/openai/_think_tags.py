"""`<think>...</think>` at the start of streamed content, split out as thinking (pure).

DeepSeek-R1 and its distills, served by Groq, Fireworks, Together and most
self-hosted servers without a reasoning parser, write their reasoning into the
content between `<think>` and `</think>`. With the route option
`think_tags: split` that block is thinking and the rest is text. Only a block
that opens the content (after optional whitespace) counts: a tag later in an
answer is the model talking about tags. The whitespace right after the block
is dropped (the models put a blank line there).

The tags may be cut anywhere by the chunking, so a piece that could be the
start of a tag is held back until the next piece (or `flush`) decides it.
"""

from __future__ import annotations

__all__ = ["ThinkTagSplitter"]

_OPEN, _CLOSE = "<think>", "</think>"
_START, _THINK, _AFTER, _TEXT = 0, 1, 2, 3


class ThinkTagSplitter:
    """Feed content pieces; get back `(is_thinking, text)` pieces in order."""

    __slots__ = ("_held", "_state")

    def __init__(self) -> None:
        self._state = _START
        self._held = ""
        """Text not yet decided: a possible opening tag, or a possible start of `</think>`."""

    def feed(self, text: str) -> list[tuple[bool, str]]:
        """Split one content piece; may return nothing while a tag is undecided."""
        if self._state == _TEXT:
            return [(False, text)] if text else []
        text, self._held = self._held + text, ""
        if self._state == _START:
            stripped = text.lstrip()
            if stripped.startswith(_OPEN):
                self._state = _THINK
                text = stripped[len(_OPEN) :]
            elif _OPEN.startswith(stripped):
                self._held = text  # "", whitespace or "<thi": not decided yet
                return []
            else:
                self._state = _TEXT
                return [(False, text)]
        if self._state == _THINK:
            return self._inside(text)
        return self._after(text)

    def flush(self) -> list[tuple[bool, str]]:
        """The held-back text at the end of the content (an unclosed block is thinking)."""
        held, self._held = self._held, ""
        if not held:
            return []
        return [(self._state == _THINK, held)]

    def _inside(self, text: str) -> list[tuple[bool, str]]:
        end = text.find(_CLOSE)
        if end < 0:
            keep = _partial_tag_length(text)
            if keep:
                text, self._held = text[:-keep], text[-keep:]
            return [(True, text)] if text else []
        self._state = _AFTER
        pieces = [(True, text[:end])] if end else []
        return pieces + self._after(text[end + len(_CLOSE) :])

    def _after(self, text: str) -> list[tuple[bool, str]]:
        text = text.lstrip()
        if not text:
            return []
        self._state = _TEXT
        return [(False, text)]


def _partial_tag_length(text: str) -> int:
    """Length of the longest end of `text` that begins `</think>` (0 if none)."""
    for size in range(min(len(text), len(_CLOSE) - 1), 0, -1):
        if text.endswith(_CLOSE[:size]):
            return size
    return 0
