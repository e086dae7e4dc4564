"""Whole-process start-up time of the installed `nav-sim` console script.

Runs each command 30 times (after one warm-up run that also seeds the state
file) and prints median and p95 wall time per call. The interpreter's bare
start-up is shown for comparison. Usage: `.venv/bin/python bench/nav_sim_startup.py [RUNS]`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET_MS = 150.0


def measure(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    subprocess.run(argv, env=env, capture_output=True, check=True)  # warm-up, seeds the state
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True, check=True)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    binary = str(Path(sys.executable).parent / "nav-sim")
    with tempfile.TemporaryDirectory() as directory:
        env = {
            **os.environ,
            "NAV_SIM_STATE": os.path.join(directory, "state.json"),
            "NAV_SIM_CLOCK": "2026-03-04T17:02:11Z",
        }
        commands = [
            ["--version"],
            ["--cluster", "demo", "sandbox", "list"],
            ["--cluster", "demo", "sandbox", "get", "dev-box"],
            ["--cluster", "demo", "sandbox", "create", "--keep"],
        ]
        cases = [("python -c pass (baseline)", [sys.executable, "-c", "pass"])]
        cases += [("nav-sim " + " ".join(args), [binary, *args]) for args in commands]
        print(f"{'command':<46} {'runs':>4} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}")
        for label, argv in cases:
            timings = sorted(measure(argv, env, runs))
            p95 = timings[max(0, round(0.95 * len(timings)) - 1)]
            print(
                f"{label:<46} {runs:>4} {statistics.median(timings):>10.1f} {p95:>8.1f} "
                f"{timings[-1]:>8.1f}"
            )
    print(f"budget per call: {BUDGET_MS:.0f} ms")


if __name__ == "__main__":
    main()
