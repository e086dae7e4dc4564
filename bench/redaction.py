"""Throughput of the one redaction path on what passes it most: log lines and tool output.

Prints the median time per short text (a JSON log line) and the megabytes per
second over one large log-like text (1.4 MB of words a cluster's logs hold,
none of them a secret), each the median of several runs. Run it on two
commits to compare. Usage: `.venv/bin/python bench/redaction.py [RUNS]`.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time

from navagent.core.redaction import redact

WORDS = (
    "sandbox", "ready", "error", "pod", "log", "2026-11-26T06:00:00Z", "INFO", "done",
    "docker", "the", "a", "http://x/y", "key=value", "document", "shipping", "token",
    "pulled", "image",
)  # fmt: skip


def log_text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) + ("\n" if rng.random() < 0.1 else "") for _ in range(words))


def main(runs: int) -> None:
    rng = random.Random(1)
    large = log_text(rng, 200_000)
    lines = [json.dumps({"i": i, "text": "sandbox dev-box is Ready, 3 pods"}) for i in range(5_000)]
    per_line: list[float] = []
    rates: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        for line in lines:
            redact(line)
        per_line.append((time.perf_counter() - started) / len(lines) * 1e6)
        started = time.perf_counter()
        redact(large)
        rates.append(len(large) / (time.perf_counter() - started) / 1e6)
    print(f"short text: {statistics.median(per_line):.1f} us each (median of {runs})")
    print(f"{len(large) / 1e6:.1f} MB log text: {statistics.median(rates):.1f} MB/s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
