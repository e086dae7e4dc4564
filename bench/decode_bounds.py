"""Peak memory of decoding a compression bomb: httpx's and vcrpy's whole-chunk way vs ours.

Issue 39 named the figures: a 980-byte gzip-of-gzip provider stream that
inflates to 512 MiB grew the gateway by about 1 GiB before the 8 MiB event
cap applied; a cassette's `!!binary` gzip body cost 400 MiB at load. Each
case runs in its own process and reports its peak RSS growth (ru_maxrss
before and after), so one case's peak cannot hide another's.

    .venv/bin/python bench/decode_bounds.py
"""

from __future__ import annotations

import asyncio
import resource
import subprocess
import sys
import zlib
from collections.abc import AsyncIterator

CAP = 8 * 2**20  # the gateway's MAX_EVENT_BYTES


def gzip_layers(data_blocks: int, layers: int) -> bytes:
    """gzip (`layers` times) of `data_blocks` MiB of zeros, made without holding them."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(2**20)
    body = b"".join([packer.compress(block) for _ in range(data_blocks)] + [packer.flush()])
    for _ in range(layers - 1):
        body = zlib.compress(body, 9, wbits=zlib.MAX_WBITS | 16)
    return body


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _one(body: bytes) -> AsyncIterator[bytes]:
    yield body


async def stream(way: str, body: bytes, encoding: str) -> str:
    import httpx

    from navagent.gateway._encoding import EncodingRefused, decoded_pieces, decoder_for
    from navagent.gateway.sse import SSEDecoder

    decoder = SSEDecoder()
    if way == "httpx":  # what the gateway did: Response.aiter_bytes decodes each chunk whole
        response = httpx.Response(
            200, headers={"content-encoding": encoding}, stream=httpx.ByteStream(body)
        )
        pieces: AsyncIterator[bytes] = response.aiter_bytes()
    else:
        try:
            pieces = decoded_pieces(_one(body), decoder_for(encoding))
        except EncodingRefused as exc:
            return f"refused: {exc}"
    decoded = 0
    async for piece in pieces:
        decoded += len(piece)
        decoder.feed(piece)
        if decoder.pending_bytes > CAP:
            return f"event cap after {decoded / 2**20:.1f} MiB decoded"
    return f"ended after {decoded / 2**20:.1f} MiB decoded"


def cassette(way: str, body: bytes) -> str:
    response = {"status": {"code": 200}, "headers": {"content-encoding": ["gzip"]}}
    response["body"] = {"string": body}
    if way == "vcrpy":
        from vcr.filters import decode_response

        decoded = decode_response(response)
        return f"decoded {len(decoded['body']['string']) / 2**20:.0f} MiB"
    from navagent.fixtures.harness.cassettes._cassette import CassetteError, decoded_response

    try:
        decoded_response(response)
    except CassetteError as exc:
        return f"refused: {str(exc).split(': ')[-1]}"
    return "decoded"


def child(case: str, way: str) -> None:
    if case == "stream-stacked":
        body, encoding = gzip_layers(512, 2), "gzip, gzip"
    elif case == "stream-single":
        body, encoding = gzip_layers(512, 1), "gzip"
    else:
        body, encoding = gzip_layers(400, 1), "gzip"
    # Imports first: their memory is not the decoding's.
    import httpx  # noqa: F401
    import vcr.filters  # noqa: F401

    import navagent.fixtures.harness.cassettes._cassette  # noqa: F401
    import navagent.gateway._encoding  # noqa: F401
    import navagent.gateway.sse  # noqa: F401

    before = peak_mib()
    if case.startswith("stream"):
        outcome = asyncio.run(stream(way, body, encoding))
    else:
        outcome = cassette(way, body)
    print(f"{len(body):>9,} B | +{peak_mib() - before:7.0f} MiB | {outcome}")


def main() -> None:
    rows = [
        ("stream-stacked", "httpx", "provider stream, gzip, gzip (512 MiB)"),
        ("stream-stacked", "bounded", "provider stream, gzip, gzip (512 MiB)"),
        ("stream-single", "httpx", "provider stream, gzip (512 MiB)"),
        ("stream-single", "bounded", "provider stream, gzip (512 MiB)"),
        ("cassette", "vcrpy", "cassette !!binary gzip (400 MiB)"),
        ("cassette", "bounded", "cassette !!binary gzip (400 MiB)"),
    ]
    print(f"{'case':<38} | {'way':<7} | {'body':>11} | peak RSS growth | outcome")
    for case, way, label in rows:
        done = subprocess.run(
            [sys.executable, __file__, case, way], capture_output=True, text=True, check=False
        )
        line = done.stdout.strip() or done.stderr.strip().splitlines()[-1]
        print(f"{label:<38} | {way:<7} | {line}")


if __name__ == "__main__":
    if len(sys.argv) == 3:
        child(sys.argv[1], sys.argv[2])
    else:
        main()
