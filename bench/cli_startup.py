"""Whole-process time of `nav --help` and of a one-shot demo turn.

`nav --help` must stay under 300 ms (every command group imports its heavy
dependencies lazily), and `nav agent --demo -p "list my sandboxes"` - start
the simulated provider, an in-process gateway and nav-sim, run two model
calls and one tool, shut everything down - under 2 s. Each case runs once to
warm the page cache, then RUNS times; the table shows median, min and max
wall time, with the bare interpreter as a baseline. Then the slowest imports
of `nav --help` (`python -X importtime`), to see where the time goes.

Usage: `.venv/bin/python bench/cli_startup.py [RUNS]` (default 9).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HELP_BUDGET_MS = 300.0
DEMO_BUDGET_MS = 2000.0
TOP_IMPORTS = 8


def measure(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    subprocess.run(argv, env=env, capture_output=True, check=True)  # warm-up
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True, check=True)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def slowest_imports(env: dict[str, str]) -> list[tuple[int, str]]:
    """Cumulative microseconds per top-level import while `nav --help` runs."""
    code = "import sys; sys.argv = ['nav', '--help']; from navagent.cli.app import main; main()"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], env=env, capture_output=True, text=True
    )
    rows = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self, cumulative, name = line.removeprefix("import time:").split("|")
        if not name.startswith("  "):  # top level only: nested imports are inside these
            rows.append((int(cumulative), name.strip()))
    return sorted(rows, reverse=True)[:TOP_IMPORTS]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    nav = str(Path(sys.executable).with_name("nav"))
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "NAV_AGENT_STATE_DIR": state}
        cases = [
            ("python -c pass (baseline)", [sys.executable, "-c", "pass"], None),
            ("nav --help", [nav, "--help"], HELP_BUDGET_MS),
            ("nav agent --help", [nav, "agent", "--help"], None),
            (
                'nav agent --demo -p "list my sandboxes"',
                [nav, "agent", "--demo", "-p", "list my sandboxes"],
                DEMO_BUDGET_MS,
            ),
        ]
        print(f"{'command':<42} {'runs':>4} {'median ms':>10} {'min':>7} {'max':>7}  budget")
        for label, argv, budget in cases:
            timings = measure(argv, env, runs)
            median = statistics.median(timings)
            verdict = (
                ""
                if budget is None
                else f"{budget:.0f} ms " + ("ok" if median < budget else "OVER")
            )
            print(
                f"{label:<42} {runs:>4} {median:>10.1f} {min(timings):>7.1f} "
                f"{max(timings):>7.1f}  {verdict}"
            )
        print("\nslowest top-level imports of `nav --help` (cumulative ms):")
        for micros, name in slowest_imports(env):
            print(f"  {micros / 1000:>7.1f}  {name}")


if __name__ == "__main__":
    main()
