"""Time of the one redaction path on what passes it most, and on what an attacker sends.

Prints, each the median of several runs:

- the time per short text (a JSON log line);
- 1 MB made of one short prefix repeated, for every shape's own prefix
  (`shape_prefixes()`) and the issue's probes (`eyJ`, `sk-`, `//`,
  `xoxb-1-`, `://a:`): on a backtracking engine these took seconds and grew
  with the square of the size;
- 1 MB of random base64 and 1.5 MB of log text (words a cluster's logs hold,
  none of them a secret).

Each large case must stay under the budget (100 ms); a line ends in `SLOW`
when it does not. Run it on two commits to compare (an older commit without
`shape_prefixes` gets the issue's probes only). Usage:
`.venv/bin/python bench/redaction.py [RUNS] [--max-seconds S] [--scale F]`: a
case whose first run takes longer than S seconds is reported after that one
run; `--scale` multiplies every large size (a backtracking engine takes
minutes a megabyte on a busy machine: measure its growth on smaller texts).
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import statistics
import time
from collections.abc import Callable

from navagent.core import redaction

WORDS = (
    "sandbox", "ready", "error", "pod", "log", "2026-11-26T06:00:00Z", "INFO", "done",
    "docker", "the", "a", "http://x/y", "key=value", "document", "shipping", "token",
    "pulled", "image",
)  # fmt: skip
PROBES = ("eyJ", "sk-", "//", "xoxb-1-", "://a:")
"""The issue's probes: each took more than 8 s a megabyte on a backtracking engine."""
BUDGET_S = 0.1
MEGABYTE = 1_000_000


def log_text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS) + ("\n" if rng.random() < 0.1 else " ")
        words.append(word)
        length += len(word)
    return "".join(words)[:size]


def repeated(prefix: str, size: int = MEGABYTE) -> str:
    return (prefix * (size // len(prefix) + 1))[:size]


def prefixes() -> list[str]:
    found: Callable[[], tuple[str, ...]] | None = getattr(redaction, "shape_prefixes", None)
    return list(dict.fromkeys([*PROBES, *(found() if found else ())]))


def timed(text: str, runs: int, max_seconds: float) -> float:
    times: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        redaction.redact(text)
        times.append(time.perf_counter() - started)
        if times[-1] > max_seconds:
            break
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="?", type=int, default=5)
    parser.add_argument("--max-seconds", type=float, default=30.0)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    rng = random.Random(1)
    lines = [json.dumps({"i": i, "text": "sandbox dev-box is Ready, 3 pods"}) for i in range(5_000)]
    per_line: list[float] = []
    for _ in range(args.runs):
        started = time.perf_counter()
        for line in lines:
            redaction.redact(line)
        per_line.append((time.perf_counter() - started) / len(lines) * 1e6)
    print(f"short JSON line: {statistics.median(per_line):.1f} us each (median of {args.runs})")
    size = round(MEGABYTE * args.scale)
    mb = f"{size / MEGABYTE:g} MB"
    budget = BUDGET_S * args.scale
    cases = [(f"{mb} of {prefix!r} repeated", repeated(prefix, size)) for prefix in prefixes()]
    raw = rng.randbytes(size * 3 // 4)
    cases.append((f"{mb} of random base64", base64.b64encode(raw).decode()))
    cases.append((f"{1.5 * size / MEGABYTE:g} MB of log text", log_text(rng, size * 3 // 2)))
    slow = 0
    for name, text in cases:
        seconds = timed(text, args.runs, args.max_seconds)
        verdict = "ok" if seconds < budget else "SLOW"
        slow += verdict == "SLOW"
        print(f"{name}: {seconds * 1000:.1f} ms {verdict}", flush=True)
    print(f"{len(cases) - slow} of {len(cases)} large cases under {budget * 1000:g} ms")


if __name__ == "__main__":
    main()
