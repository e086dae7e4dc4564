"""Memory of `nav agent --demo` over many turns in a terminal: bounded, or growing?

Runs the REPL in a pseudo-terminal (the tests' `PtySession`, a pyte screen),
sends demo prompts one turn after another, and reads the process's resident
memory (VmRSS) after each answer. Prints RSS at checkpoints and the growth per
turn over the first and the second half: memory that is bounded levels off
(the second half grows much less than the first), one that leaks keeps its slope.

Run: .venv/bin/python bench/repl_memory.py [--turns 200] [--columns 100]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cli.harness import NAV  # noqa: E402
from tests.cli.terminal import PtySession  # noqa: E402

PROMPTS = (
    "list my sandboxes",
    "why is gpu-trainer failing? show its logs",
    "list the providers and inference routes",
)
"""Demo prompts that ask no `Run it?` question."""


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text("ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--columns", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "TERM": "xterm-256color", "NAV_AGENT_STATE_DIR": state}
        for name in ("NO_COLOR", "COLUMNS", "LINES", "NAV_SIM_FAULT"):
            env.pop(name, None)
        term = PtySession([NAV, "agent", "--demo"], env=env, columns=args.columns, timeout=60)
        try:
            term.wait_prompt()
            pid = term.child.pid
            samples = [rss_kib(pid)]
            started = time.monotonic()
            for turn in range(1, args.turns + 1):
                term.send(PROMPTS[turn % len(PROMPTS)] + "\r")
                term.wait_until(lambda: "tokens in context" in term.display, what="the usage line")
                term.wait_prompt()
                # The next turn's usage line must be a new one: clear the screen's copy.
                term.screen.reset()
                samples.append(rss_kib(pid))
                if turn % 20 == 0:  # a long run shows how it goes
                    print(f"turn {turn}: {samples[-1] / 1024:.1f} MiB", flush=True)
            took = time.monotonic() - started
            term.send("\x04")
            term.finish()
        finally:
            term.close()
    report(samples, took)


def report(samples: list[int], took: float) -> None:
    turns = len(samples) - 1
    print(f"{turns} turns in {took:.0f} s; resident memory (VmRSS) after each turn:")
    print(f"{'turn':>6} {'RSS MiB':>8}")
    for turn in sorted({0, 1, 10, turns // 4, turns // 2, 3 * turns // 4, turns}):
        print(f"{turn:>6} {samples[turn] / 1024:>8.1f}")
    half = turns // 2
    first = (samples[half] - samples[1]) / max(half - 1, 1)
    second = (samples[turns] - samples[half]) / max(turns - half, 1)
    print(
        f"growth: turns 1-{half}: {first:.1f} KiB/turn; turns {half}-{turns}: {second:.1f} KiB/turn"
    )


if __name__ == "__main__":
    main()
