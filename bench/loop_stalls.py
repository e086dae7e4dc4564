"""The gateway's event-loop stalls under 100 paced streams, and the garbage collections behind them.

Issue 44: the p99 time to first delta at 100 paced streams was 3-4x the
grpc.aio floor's. This runs `nav gateway serve --workers 1` (one loop, so
every stall is the one the streams wait behind) with two probes installed
before the CLI starts: a task that sleeps 1 ms and records how late it woke
(the loop's stalls), and a `gc.callbacks` hook timing each collection by
generation. After 30 one-token calls (every import and first-call path
warmed), the probes are reset and `--paced` streams at 50 tokens/s run as in
bench/outside_overhead.py; then the gateway reports its longest stall, its
99th percentile stall and its collections, beside the streams' p99 time to
first delta. Trees alternate, `--rounds` times each.

A stall is either the loop's own work or the process waiting for a core
(the machine is shared): `longest_stall_cpu_ms` is the process's CPU time
during the longest stall, and `busiest_stall_cpu_ms` the most CPU time any
one probe interval took: the longest stretch of the loop's own work.

    .venv/bin/python bench/loop_stalls.py [--tree after=.venv/bin/python]
        [--tree before=../wt-overhead2-base/.venv/bin/python] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gateway_scale import one_stream
from bench.outside_overhead import paced, start_gateway, start_upstream
from navagent.core._proto import chat_pb2_grpc

PROBE = textwrap.dedent(
    """
    import asyncio, gc, json, os, signal, sys, time

    lags, collections, started = [], [], [0.0]

    def on_gc(phase, info):
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            collections.append((info["generation"], time.perf_counter() - started[0]))

    gc.callbacks.append(on_gc)

    async def probe():
        while True:
            before, cpu = time.perf_counter(), time.process_time()
            await asyncio.sleep(0.001)
            lags.append((time.perf_counter() - before - 0.001, time.process_time() - cpu))

    import navagent.gateway._loop as loop_module

    run = loop_module.run

    def run_probed(main):
        async def both():
            task = asyncio.get_running_loop().create_task(probe())
            try:
                return await main
            finally:
                task.cancel()
        return run(both())

    loop_module.run = run_probed

    def reset(*_):
        lags.clear()
        collections.clear()

    def report(*_):
        ordered = sorted(lags) or [(0.0, 0.0)]
        busiest = max(cpu for _, cpu in ordered)
        by_gen = {}
        for generation, seconds in collections:
            by_gen.setdefault(generation, []).append(seconds * 1000)
        with open(os.environ["NAV_BENCH_STALLS"], "w") as out:
            json.dump({
                "longest_stall_ms": round(ordered[-1][0] * 1000, 1),
                "longest_stall_cpu_ms": round(ordered[-1][1] * 1000, 1),
                "busiest_stall_cpu_ms": round(busiest * 1000, 1),
                "p99_stall_ms": round(ordered[int(len(ordered) * 0.99)][0] * 1000, 1),
                "gc": {f"gen{g}": {"count": len(ms), "total_ms": round(sum(ms), 1),
                                   "longest_ms": round(max(ms), 1)}
                       for g, ms in sorted(by_gen.items())},
            }, out)

    signal.signal(signal.SIGUSR1, reset)
    signal.signal(signal.SIGUSR2, report)
    sys.argv = ["nav", *sys.argv[1:], "--workers", "1"]
    from navagent.cli.app import main
    main()
    """
)


async def warm(address: str, calls: int) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = chat_pb2_grpc.ChatStub(channel)
        await asyncio.gather(*(one_stream(stub, "one") for _ in range(calls)))


def one_round(name: str, python: str, endpoint: str, folder: Path, streams: int) -> dict[str, Any]:
    stalls = folder / f"stalls-{name}.json"
    os.environ["NAV_BENCH_STALLS"] = str(stalls)
    server = start_gateway(name, [python, "-c", PROBE], endpoint, folder, metrics=True)
    try:
        (pid,) = (process.pid for process in server.processes)
        asyncio.run(warm(server.address, 30))
        time.sleep(0.5)
        os.kill(pid, signal.SIGUSR1)
        streamed = paced(server, streams, 200, 2)
        os.kill(pid, signal.SIGUSR2)
        deadline = time.monotonic() + 10
        while not stalls.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)
        row: dict[str, Any] = json.loads(stalls.read_text(encoding="utf-8"))
    finally:
        server.stop()
        stalls.unlink(missing_ok=True)
    return row | {
        "ttfd_p99_ms": round(streamed["ttfd_p99_ms"], 1),
        "cpu_us_per_delta": round(streamed["cpu_us_per_delta"], 1),
        "errors": streamed["errors"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        help="NAME=PYTHON, the interpreter of a tree's venv (repeat to compare trees)",
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--paced", type=int, default=100)
    args = parser.parse_args()
    trees = [entry.partition("=")[::2] for entry in args.tree] or [("gateway", sys.executable)]
    load_before = os.getloadavg()
    upstream, endpoint = start_upstream(20, 200)
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in trees}
    try:
        with tempfile.TemporaryDirectory(prefix="nav-bench-stalls-") as folder:
            for round_ in range(args.rounds):
                order = trees if round_ % 2 == 0 else trees[::-1]
                for name, python in order:
                    rows[name].append(one_round(name, python, endpoint, Path(folder), args.paced))
    finally:
        upstream.terminate()
        upstream.wait(10)
    print(
        json.dumps(
            {
                "load_average_before": [round(x, 2) for x in load_before],
                "load_average_after": [round(x, 2) for x in os.getloadavg()],
                "rounds": rows,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
