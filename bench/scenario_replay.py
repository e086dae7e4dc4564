"""Wall time of `nav scenario replay` over the committed scenarios (issues 6 and 18: under 30 s).

Runs the whole command as a fresh process RUNS times (default 3) and prints
min and median wall time, the same for the pytest plugin's run of the same
replays (`pytest scenarios`, snapshots included), then, from one in-process run, the time of each
replay and how many tool calls (nav-sim processes) and provider requests it
made. Usage: `.venv/bin/python bench/scenario_replay.py [RUNS]`.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness import discover_scenarios, plan_replays, replay_all

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 30.0


def whole_command(runs: int) -> list[float]:
    nav = str(Path(sys.executable).parent / "nav")
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [nav, "scenario", "replay"], cwd=ROOT, capture_output=True, check=False
        )
        timings.append(time.perf_counter() - started)
        if done.returncode != 0:
            sys.exit(done.stdout.decode() + done.stderr.decode())
    return timings


def whole_pytest(runs: int) -> list[float]:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "scenarios"],
            cwd=ROOT,
            capture_output=True,
            check=False,
        )
        timings.append(time.perf_counter() - started)
        if done.returncode != 0:
            sys.exit(done.stdout.decode() + done.stderr.decode())
    return timings


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(f"{'fresh process':<44} {'min':>8} {'median':>8} {'budget':>8}")
    for label, timings in (
        ("nav scenario replay (all x three formats)", whole_command(runs)),
        ("pytest scenarios (the plugin, snapshots)", whole_pytest(runs)),
    ):
        print(
            f"{label:<44} {min(timings):7.2f}s {statistics.median(timings):7.2f}s {BUDGET_S:7.1f}s"
        )
    print()
    jobs = plan_replays(discover_scenarios([ROOT / "scenarios"]), FORMAT_IDS)
    results = asyncio.run(replay_all(jobs))
    print(f"{'replay (in process)':<44} {'time':>8} {'tools':>6} {'requests':>9}")
    for result in results:
        transcript = result.transcript
        tools = sum(len(turn.tools) for turn in transcript.turns) if transcript else 0
        requests = len(result.job.cassette.read_text(encoding="utf-8").split("- request:")) - 1
        print(f"{result.job.label:<44} {result.duration_s:7.2f}s {tools:>6} {requests:>9}")
    total = sum(result.duration_s for result in results)
    print(f"{f'{len(results)} replays':<44} {total:7.2f}s")


if __name__ == "__main__":
    main()
