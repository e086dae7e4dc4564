"""The fault sweep at replay speed (issue 43): this repository's default sweep, timed.

1. The default sweep: every scenario x every registered format at the default
   budget (`DEFAULT_BUDGET` points per grid; hypothesis samples larger grids,
   pairs of faults included), dealt into `--processes` shards (`shard_jobs`,
   what `nav scenario sweep --shard I/N` runs) that run at once, one process
   each. Prints each shard's time, then the wall time of the whole, the
   points run, points per second, and the waits the virtual clock skipped.
   Goal: under 3 minutes on 2 cores.
2. A sweep point against a replay item of the same scenario x format (skip
   with `--no-compare`): per grid, the median of `--replays` replay items on a
   warm gateway (as the pytest plugin runs them) and the mean of the points of
   a `--compare-budget`-point sweep, alternated grid by grid so both see the
   same machine load, in CPU time of this process (every thread; what a busy
   machine changes least) and in wall time. Goal: a point costs at most 2x an
   item.

Usage: `.venv/bin/python bench/sweep.py [--budget 30] [--seed 0] [--processes 2]
[--replays 5] [--compare-budget 8] [--no-compare]`. On a shared machine, run it
with `nice` and compare figures from the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness import discover_scenarios, plan_replays
from navagent.fixtures.harness.faults._invariants import INVARIANTS
from navagent.fixtures.harness.replay._cluster import SimulatedCluster
from navagent.fixtures.harness.replay._runner import ReplayJob, StackPool, replay_all
from navagent.fixtures.harness.sweep._report import summary_line
from navagent.fixtures.harness.sweep._run import (
    DEFAULT_BUDGET,
    SweepOptions,
    run_sweep,
    shard_jobs,
    sweep_grid,
)

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 180.0
GOAL_RATIO = 2.0


def _jobs() -> list[ReplayJob]:
    return plan_replays(discover_scenarios([ROOT / "scenarios"]), FORMAT_IDS)


def shard_main(index: int, count: int, budget: int, seed: int) -> None:
    """One shard of the default sweep; prints its figures as one JSON line."""
    jobs = shard_jobs(_jobs(), index, count)
    started = time.perf_counter()
    cpu = time.process_time()
    grids = run_sweep(jobs, SweepOptions(budget=budget, seed=seed, invariants=dict(INVARIANTS)))
    figures = {
        "shard": f"{index}/{count}",
        "grids": len(grids),
        "points": sum(max(len(grid.results) - 1, 0) for grid in grids),
        "replays": sum(len(grid.results) for grid in grids),
        "space": sum(len(grid.space.points()) for grid in grids if grid.space is not None),
        "skipped_s": sum(grid.skipped_s for grid in grids),
        "wall_s": time.perf_counter() - started,
        "cpu_s": time.process_time() - cpu,
        "summary": summary_line(grids),
    }
    print(json.dumps(figures))


def default_sweep(args: argparse.Namespace) -> None:
    count = args.processes
    command = [sys.executable, __file__, "--budget", str(args.budget), "--seed", str(args.seed)]
    started = time.perf_counter()
    shards = [
        subprocess.Popen([*command, "--shard", f"{index}/{count}"], stdout=subprocess.PIPE)
        for index in range(1, count + 1)
    ]
    outputs = [shard.communicate()[0] for shard in shards]
    elapsed = time.perf_counter() - started
    figures = [json.loads(output.decode().strip().splitlines()[-1]) for output in outputs]
    for shard in figures:
        print(
            f"shard {shard['shard']}: {shard['grids']} grids, {shard['points']} points in"
            f" {shard['wall_s']:.1f}s ({shard['cpu_s']:.1f}s CPU), {shard['summary']}"
        )
    points = sum(shard["points"] for shard in figures)
    replays = sum(shard["replays"] for shard in figures)
    print(
        f"default sweep: {sum(s['grids'] for s in figures)} grids x budget {args.budget}"
        f" (seed {args.seed}), {points} points ({replays} replays with the baselines) in"
        f" {elapsed:.1f}s on {count} processes: {points / elapsed:.1f} points/s;"
        f" the whole fault space is {sum(s['space'] for s in figures)} points;"
        f" {sum(s['skipped_s'] for s in figures):.0f}s of waiting skipped on the clock;"
        f" goal {GOAL_S:.0f}s: {'met' if elapsed < GOAL_S else 'MISSED'}"
    )


async def _replay_items(
    job: ReplayJob, count: int, pool: StackPool, cluster: SimulatedCluster
) -> list[tuple[float, float]]:
    times = []
    for _ in range(count):
        started, cpu = time.perf_counter(), time.process_time()
        (result,) = await replay_all([job], stacks=pool, cluster=cluster)
        times.append((time.process_time() - cpu, time.perf_counter() - started))
        if not result.passed:
            raise SystemExit(f"{job.label} does not replay: {result.reason}")
    return times


def compare(args: argparse.Namespace) -> None:
    jobs = _jobs()
    pool = StackPool()
    cluster = SimulatedCluster()
    runner = asyncio.Runner()
    options = SweepOptions(budget=args.compare_budget, seed=args.seed, invariants=dict(INVARIANTS))
    ratios: list[tuple[float, str]] = []
    walls: list[float] = []
    print(
        f"{'scenario x format':<52} {'CPU ms: item':>12} {'point':>6} {'ratio':>6}"
        f"   {'wall ms: item':>13} {'point':>6}"
    )
    try:
        runner.run(_replay_items(jobs[0], 1, pool, cluster))  # warm: gateway, nav-sim process
        for job in jobs:
            items = runner.run(_replay_items(job, args.replays, pool, cluster))
            grid = sweep_grid(job, options)
            points = grid.results[1:]
            if not points:
                continue
            item = statistics.median(cpu for cpu, _ in items)
            point = statistics.mean(result.cpu_s for result in points)
            item_wall = statistics.median(wall for _, wall in items)
            point_wall = statistics.mean(result.wall_s for result in points)
            ratios.append((point / item, job.label))
            walls.append(point_wall / item_wall)
            print(
                f"{job.label:<52} {item * 1000:12.1f} {point * 1000:6.1f} {point / item:6.2f}"
                f"   {item_wall * 1000:13.1f} {point_wall * 1000:6.1f}"
            )
    finally:
        runner.run(pool.aclose())
        runner.close()
    values = [ratio for ratio, _ in ratios]
    worst, label = max(ratios)
    print(
        f"a sweep point / a replay item, CPU: median {statistics.median(values):.2f}x,"
        f" worst {worst:.2f}x ({label}), {sum(v > GOAL_RATIO for v in values)} of"
        f" {len(values)} over the goal of {GOAL_RATIO:g}x; wall: median"
        f" {statistics.median(walls):.2f}x, worst {max(walls):.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--replays", type=int, default=5)
    parser.add_argument("--compare-budget", type=int, default=8)
    parser.add_argument("--no-compare", action="store_true")
    parser.add_argument("--shard", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.shard:
        index, _, count = args.shard.partition("/")
        shard_main(int(index), int(count), args.budget, args.seed)
        return
    default_sweep(args)
    if not args.no_compare:
        compare(args)


if __name__ == "__main__":
    main()
