"""What rendering a streamed answer as markdown costs over printing it raw.

A 2,000-token markdown answer (headings, paragraphs, lists, tables, fenced
code) is fed delta by delta, as `nav agent` receives it at 100 tokens/s, to
`MarkdownStream` on a terminal console (rich draws as on a TTY, into a
discarding file) and, as the baseline, to `Console.out` as piped output
gets it. The stream's clock is simulated (10 ms per token), so the live
block's redraw throttle behaves as in real time while the benchmark runs as
fast as the CPU allows; every figure is CPU time of this thread
(`time.thread_time`), not wall time.

Targets (issue 10): under 5 % CPU over the plain output across the 20 s the
answer takes to arrive, and under 2 ms per delta at the 99th percentile.

    .venv/bin/python bench/markdown_render.py
"""

from __future__ import annotations

import io
import re
import statistics
import time
from collections.abc import Callable

from rich.console import Console

from navagent.cli.markdown_stream import MarkdownStream

TOKENS = 2_000
TOKENS_PER_S = 100.0
_PIECE = re.compile(r"\s*\S{1,8}|\s+")

SECTION = """## Sandbox {n}: gpu-trainer-{n}

The sandbox **gpu-trainer-{n}** failed to start because its image could not be pulled.
The registry answered `403 Forbidden`, which usually means the credential provider
is missing or has expired. Here is what the cluster reports:

| name | phase | restarts | age |
|---|---|---|---|
| gpu-trainer-{n} | Error | 4 | 2h |
| dev-box-{n} | Ready | 0 | 3d |
| py-worker-{n} | Provisioning | 0 | 5m |

To fix it:

1. Check the provider with `nav provider get nvidia`.
2. Refresh the key and run the create again.
3. Watch the logs until the phase is *Ready*.

```bash
nav sandbox delete gpu-trainer-{n}
nav sandbox create --name gpu-trainer-{n} --image nvcr.io/nvidia/pytorch:24.05-py3
nav sandbox logs gpu-trainer-{n} -n 50
```

"""


def answer_deltas() -> list[str]:
    pieces: list[str] = []
    n = 0
    while len(pieces) < TOKENS:
        pieces += _PIECE.findall(SECTION.format(n=n))
        n += 1
    return pieces[:TOKENS]


def terminal() -> Console:
    return Console(
        file=io.StringIO(), force_terminal=True, width=100, height=40, color_system="truecolor"
    )


def measure(
    feed: Callable[[str], None], finish: Callable[[], None], deltas: list[str]
) -> tuple[float, list[float]]:
    per_delta: list[float] = []
    started = time.thread_time()
    for delta in deltas:
        before = time.thread_time()
        feed(delta)
        per_delta.append(time.thread_time() - before)
    finish()
    return time.thread_time() - started, per_delta


def main() -> None:
    deltas = answer_deltas()
    plain_console = terminal()
    plain_cpu, plain_each = measure(
        lambda d: plain_console.out(d, end="", highlight=False), lambda: None, deltas
    )
    now = 0.0
    # No pauses here, so no frame timer: every frame is drawn by a delta.
    stream = MarkdownStream(terminal(), clock=lambda: now, timer=None)

    def feed(delta: str) -> None:
        nonlocal now
        stream.feed(delta)
        now += 1 / TOKENS_PER_S

    markdown_cpu, markdown_each = measure(feed, stream.finish, deltas)

    streamed_s = TOKENS / TOKENS_PER_S
    extra = (markdown_cpu - plain_cpu) / streamed_s * 100
    p99 = statistics.quantiles(markdown_each, n=100)[98] * 1000
    print(
        f"answer: {TOKENS} deltas, {len(''.join(deltas)):,} chars, streamed over {streamed_s:g} s"
    )
    plain_p99 = statistics.quantiles(plain_each, n=100)[98] * 1000
    worst = max(markdown_each) * 1000
    print(f"plain    CPU {plain_cpu * 1000:8.1f} ms   p99/delta {plain_p99:.3f} ms")
    print(
        f"markdown CPU {markdown_cpu * 1000:8.1f} ms   p99/delta {p99:.3f} ms   max {worst:.2f} ms"
    )
    print(f"extra CPU over the stream: {extra:.2f} % of one core (target < 5 %)")
    print(f"p99 per delta: {p99:.2f} ms (target < 2 ms)")


if __name__ == "__main__":
    main()
