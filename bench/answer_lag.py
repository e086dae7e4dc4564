"""How far the answer on screen lags behind the stream, in real time (issue 20, item 1).

A 2,000-token answer of one long paragraph (the costliest block to redraw:
it is re-wrapped whole on every frame) is fed delta by delta to
`MarkdownStream` inside a real asyncio loop, at `--tps` tokens per second,
with the model stalling for `--stall` seconds every `--stall-every` tokens.
The console draws as on a 120x40 terminal into a recorder that timestamps
every write. Every word of the answer is unique (`w0001`...), so the last
word of a write says how much of the answer is on screen from then on; a
delta's lag is the time from its arrival to the first write that shows it.

    .venv/bin/python bench/answer_lag.py [--tokens 2000] [--tps 100]

Target: at most ~100 ms behind, whatever the block (the issue's bound).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import re
import statistics
import time

from rich.console import Console

from navagent.cli.markdown_stream import MarkdownStream

_WORD = re.compile(r"w(\d{4,})")


class Recorder(io.StringIO):
    """A terminal stand-in: keeps every write with the time it was made."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        self.writes.append((time.perf_counter(), text))
        return len(text)


def deltas(tokens: int) -> list[str]:
    return [f" w{n:04d}" if n else f"w{n:04d}" for n in range(tokens)]


async def stream_answer(
    stream: MarkdownStream, pieces: list[str], *, tps: float, stall: float, stall_every: int
) -> list[float]:
    arrivals: list[float] = []
    for number, piece in enumerate(pieces):
        pause = stall if stall_every and number % stall_every == stall_every - 1 else 1 / tps
        await asyncio.sleep(pause)
        arrivals.append(time.perf_counter())
        stream.feed(piece)
    await asyncio.sleep(0.5)  # the last frame
    stream.finish()
    return arrivals


def lags(arrivals: list[float], writes: list[tuple[float, str]]) -> list[float]:
    """Per delta: seconds from its arrival to the first write showing it."""
    shown_at: list[tuple[float, int]] = []
    for when, text in writes:
        found = _WORD.findall(text)
        if found:
            shown_at.append((when, int(found[-1])))
    result: list[float] = []
    cursor = 0
    for index, arrived in enumerate(arrivals):
        while cursor < len(shown_at) and shown_at[cursor][1] < index:
            cursor += 1
        if cursor == len(shown_at):
            result.append(float("inf"))
            continue
        result.append(max(shown_at[cursor][0] - arrived, 0.0))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--tps", type=float, default=100.0, help="tokens per second")
    parser.add_argument("--stall", type=float, default=1.5, help="seconds the model stalls")
    parser.add_argument("--stall-every", type=int, default=500, help="tokens between stalls")
    args = parser.parse_args()

    recorder = Recorder()
    console = Console(
        file=recorder, force_terminal=True, width=120, height=40, color_system="truecolor"
    )
    stream = MarkdownStream(console)
    pieces = deltas(args.tokens)
    cpu = time.thread_time()
    wall = time.perf_counter()
    arrivals = asyncio.run(
        stream_answer(stream, pieces, tps=args.tps, stall=args.stall, stall_every=args.stall_every)
    )
    cpu = time.thread_time() - cpu
    wall = time.perf_counter() - wall
    each = lags(arrivals, recorder.writes)
    ms = sorted(lag * 1000 for lag in each)
    p95 = statistics.quantiles(ms, n=100)[94]
    print(
        f"answer: one paragraph, {args.tokens} deltas, {len(''.join(pieces)):,} chars,"
        f" {args.tps:g} tokens/s, a {args.stall:g} s stall every {args.stall_every} tokens"
    )
    print(f"writes to the terminal: {len(recorder.writes)} in {wall:.1f} s")
    median = ms[len(ms) // 2]
    print(f"lag per delta: max {ms[-1]:.1f} ms · p95 {p95:.1f} ms · median {median:.1f} ms")
    print(f"CPU (drawing, the loop, this script): {cpu / wall * 100:.1f} % of one core")


if __name__ == "__main__":
    main()
