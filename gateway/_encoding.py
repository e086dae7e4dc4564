"""A provider's compressed body, decoded a bounded piece at a time.

httpx decodes `content-encoding` whole chunk by whole chunk: 64 KiB of gzip
holding zeros comes out as 64 MiB in one call, and `gzip, gzip` stacks two
such ratios (980 bytes become 512 MiB). A cap checked on what comes out (the
gateway's 8 MiB event cap) then holds only after the memory is spent. Here
the body is read raw and inflated with zlib's own output bound
(`decompressobj().decompress(data, max_length)`), so no call produces more
than `PIECE_BYTES`, and the reader charges each piece against its cap before
asking for the next: decoding stops where the cap does.

Only what zlib decodes with a bound is accepted, in one layer: `gzip`
(`x-gzip`), `deflate` (zlib-wrapped, or raw as some servers send it) and
`identity`. A stacked or unknown encoding is refused (`EncodingRefused`)
before a byte is decoded; the gateway advertises only these
(`ACCEPT_ENCODING`). zlib is the standard library's, the same one httpx
and vcrpy use; only the output bound is ours.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator

import httpx

__all__ = [
    "ACCEPT_ENCODING",
    "PIECE_BYTES",
    "BoundedDecoder",
    "EncodingRefused",
    "decoded_pieces",
    "decoder_for",
    "inflate_bounded",
]

ACCEPT_ENCODING = "gzip, deflate"
"""What the gateway asks providers for: the encodings `BoundedDecoder` decodes."""
PIECE_BYTES = 64 * 1024
"""The most one decoding step produces before its reader sees it."""

_GZIP = ("gzip", "x-gzip")


class EncodingRefused(ValueError):
    """A `content-encoding` the gateway does not decode: stacked, or unknown."""


class BoundedDecoder:
    """One layer of gzip or deflate (or none), decoded `PIECE_BYTES` at a time."""

    __slots__ = ("_deflate_probe", "_zlib")

    def __init__(self, encoding: str) -> None:
        self._deflate_probe = encoding == "deflate"
        if encoding in _GZIP:
            self._zlib: zlib._Decompress | None = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif encoding == "deflate":
            self._zlib = zlib.decompressobj()
        else:
            self._zlib = None

    @property
    def identity(self) -> bool:
        """True when the body is not encoded: its bytes are the pieces."""
        return self._zlib is None

    def decode(self, data: bytes) -> Iterator[bytes]:
        """The decoded bytes of `data`, in pieces of at most `PIECE_BYTES`, made lazily.

        Raises:
            httpx.DecodingError: `data` is not the encoding it claims.
        """
        if self._zlib is None:
            yield data
            return
        while True:
            try:
                piece = self._zlib.decompress(data, PIECE_BYTES)
            except zlib.error as exc:
                if not self._deflate_probe:
                    raise httpx.DecodingError(
                        f"the body is not valid compressed data: {exc}"
                    ) from None
                # `deflate` without its zlib header, as some servers send it (httpx does the same).
                self._deflate_probe = False
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            self._deflate_probe = False
            data = self._zlib.unconsumed_tail
            if piece:
                yield piece
            # A piece shorter than the bound means zlib holds nothing more for this input.
            if self._zlib.eof or (len(piece) < PIECE_BYTES and not data):
                return


def decoder_for(content_encoding: str) -> BoundedDecoder:
    """The decoder for a `content-encoding` header value.

    Raises:
        EncodingRefused: more than one encoding, or one `BoundedDecoder` does not know.
    """
    if not content_encoding:  # the usual answer: not encoded
        return BoundedDecoder("identity")
    layers = [
        layer.strip().lower()
        for layer in content_encoding.split(",")
        if layer.strip().lower() not in ("", "identity")
    ]
    if len(layers) > 1:
        raise EncodingRefused(
            f"the body is encoded {len(layers)} times over ({_shown(content_encoding)});"
            " the gateway decodes one layer of gzip or deflate"
        )
    if layers and layers[0] not in (*_GZIP, "deflate"):
        raise EncodingRefused(
            f"the body's encoding {_shown(content_encoding)} is not one the gateway decodes"
            " (gzip, deflate)"
        )
    return BoundedDecoder(layers[0] if layers else "identity")


def _shown(value: str) -> str:
    """A header value quoted and cut, for a message."""
    cut = value if len(value) <= 60 else value[:57] + "..."
    return repr(cut)


async def decoded_pieces(
    raw: AsyncIterator[bytes], decoder: BoundedDecoder
) -> AsyncGenerator[bytes, None]:
    """`raw`'s chunks decoded, each piece handed on before the next is made.

    A piece is made only when the reader asks for it, so a reader that stops
    (its cap is reached) stops the decoding too.
    """
    async for chunk in raw:
        for piece in decoder.decode(chunk):
            yield piece


def inflate_bounded(data: bytes, encoding: str, limit: int) -> bytes:
    """`data` decoded, or a `ValueError` once it would exceed `limit` bytes.

    Raises:
        EncodingRefused: a stacked or unknown encoding.
        ValueError: more than `limit` decoded bytes, or data that is not the encoding
            (`httpx.DecodingError` is not a `ValueError`; it is turned into one).
    """
    decoder = decoder_for(encoding)
    out = bytearray()
    try:
        for piece in decoder.decode(data):
            out += piece
            if len(out) > limit:
                raise ValueError(f"it decodes to more than {limit:,} bytes")
    except httpx.DecodingError as exc:
        raise ValueError(str(exc)) from None
    return bytes(out)
