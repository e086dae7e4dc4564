"""Wall time of the fault sweep over the committed scenarios x 3 formats (issue 29: under 5 min).

Sweeps every scenario x format in this process with `--budget` points each
(default 8; hypothesis samples larger grids, pairs of faults included) and
prints, per grid, its time and points, then the totals: points run, points
per second, the grid sizes (the whole fault space) and the waits the virtual
clock skipped. Usage: `.venv/bin/python bench/sweep.py [BUDGET] [SEED]`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness import discover_scenarios, plan_replays
from navagent.fixtures.harness.sweep._invariants import INVARIANTS
from navagent.fixtures.harness.sweep._report import summary_line
from navagent.fixtures.harness.sweep._run import GridResult, SweepOptions, run_sweep

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 300.0


def main() -> None:
    budget = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    jobs = plan_replays(discover_scenarios([ROOT / "scenarios"]), FORMAT_IDS)
    options = SweepOptions(budget=budget, seed=seed, invariants=dict(INVARIANTS))
    last = time.perf_counter()

    def show(grid: GridResult) -> None:
        nonlocal last
        now = time.perf_counter()
        size = len(grid.space.points()) if grid.space is not None else 0
        print(
            f"{grid.job.label:<52} {now - last:6.1f}s {len(grid.results) - 1:3} of {size:5} points"
        )
        last = now

    started = time.perf_counter()
    grids = run_sweep(jobs, options, on_grid=show)
    elapsed = time.perf_counter() - started
    points = sum(len(grid.results) for grid in grids)  # with each baseline
    space = sum(len(grid.space.points()) for grid in grids if grid.space is not None)
    print(summary_line(grids))
    print(
        f"{len(grids)} grids, {points} replays (baselines included) in {elapsed:.1f}s:"
        f" {points / elapsed:.1f} replays/s; the whole fault space is {space} points;"
        f" budget {budget}, seed {seed}; limit {BUDGET_S:.0f}s:"
        f" {'within' if elapsed < BUDGET_S else 'OVER'}"
    )


if __name__ == "__main__":
    main()
