"""What the sweep's secret points cost (issue 42): per point, and their share of a sweep.

Every grid runs its secret points (`secret@tool1`, `secret@requestR`, `secret-cut@requestR`,
`secret-error@request1`) on every budget, each recording what `nav agent`
writes (the capture, sessions.db, log lines) and scanning it. This sweeps
every scenario x format at `--budget` in one process and prints, for the
secret points and for the others, how many ran, their CPU time (this
process, every thread) and wall time at the median and in total, and the
secret points' share of the sweep's CPU time.

Usage: `nice -n 10 .venv/bin/python bench/sweep_secrets.py [--budget 5] [--seed 0]`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness import discover_scenarios, plan_replays
from navagent.fixtures.harness.faults._invariants import INVARIANTS
from navagent.fixtures.harness.faults._space import SECRET_FAULTS
from navagent.fixtures.harness.sweep._run import PointResult, SweepOptions, run_sweep

ROOT = Path(__file__).resolve().parents[1]


def _line(name: str, results: list[PointResult]) -> str:
    if not results:
        return f"{name}: none"
    cpu = [result.cpu_s for result in results]
    wall = [result.wall_s for result in results]
    return (
        f"{name}: {len(results)} points, CPU {statistics.median(cpu) * 1000:.0f} ms median"
        f" ({sum(cpu):.1f} s in all), wall {statistics.median(wall) * 1000:.0f} ms median"
        f" ({sum(wall):.1f} s in all)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    jobs = plan_replays(discover_scenarios([ROOT / "scenarios"]), FORMAT_IDS)
    started = time.perf_counter()
    grids = run_sweep(
        jobs, SweepOptions(budget=args.budget, seed=args.seed, invariants=dict(INVARIANTS))
    )
    took = time.perf_counter() - started
    points = [result for grid in grids for result in grid.results if result.points]
    secret = [r for r in points if any(p.kind in SECRET_FAULTS for p in r.points)]
    other = [r for r in points if r not in secret]
    violations = sum(len(grid.violations) for grid in grids)
    print(f"{len(grids)} grids at budget {args.budget}: {took:.1f} s, {violations} violations")
    print(_line("secret points", secret))
    print(_line("other points", other))
    total = sum(r.cpu_s for r in points)
    if total:
        share = sum(r.cpu_s for r in secret) / total
        print(f"secret points' share of the points' CPU: {share:.0%}")


if __name__ == "__main__":
    main()
