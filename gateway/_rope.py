"""Text that arrives in many small pieces, held compactly.

Streams deliver text a token at a time. A million three-character pieces
kept as separate `str` objects cost ~60 MB; joined a block of `_BLOCK` pieces
at a time they cost about their characters, and the joining stays linear.
"""

from __future__ import annotations

__all__ = ["Rope"]

_BLOCK = 512


class Rope:
    """Append pieces; `str()` joins them (and keeps the joined text as one block)."""

    __slots__ = ("_blocks", "_chars", "_pieces")

    def __init__(self) -> None:
        self._blocks: list[str] = []
        self._pieces: list[str] = []
        self._chars = 0

    def __len__(self) -> int:
        return self._chars

    def append(self, piece: str) -> None:
        """Add `piece` at the end."""
        self._chars += len(piece)
        pieces = self._pieces
        pieces.append(piece)
        if len(pieces) >= _BLOCK:
            self._blocks.append("".join(pieces))
            pieces.clear()

    def __str__(self) -> str:
        joined = "".join([*self._blocks, *self._pieces])
        self._blocks, self._pieces = ([joined], []) if joined else ([], [])
        return joined
