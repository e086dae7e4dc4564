"""What a scenario replay costs through the pytest plugin, beside a plain vcrpy test (issue 28).

Builds a throwaway project in a temporary folder, as a team would have it:
scenario files (copies of the committed ones that finish at once, under new
ids, with their cassettes) collected by the plugin, and a plain vcrpy test
(`vcr.use_cassette`, one httpx request) parametrized as many times. Then, each
as a fresh `python -m pytest` in that folder:

1. ITEMS replay items and ITEMS vcrpy tests in one run (`-n 0`): each item's
   run (setup, call, teardown) in wall time and in CPU time of the pytest
   process; median, p95 and the ratio of the medians (same run, same machine
   load; CPU time is what a busy machine changes least);
2. MANY replay items with `-n 2`: wall time of the whole command (start-up,
   collection, workers), and the same for MANY vcrpy tests.

Goal (issue 28): median <= 30 ms per replay item, MANY=1000 in under 60 s.
`--repo` also times the repository's own `nav scenario replay` and `pytest
scenarios` (issues 6 and 18: under 30 s). Timings on a shared machine are
noisy: compare the ratio, and repeat (`--runs`).

Usage: `.venv/bin/python bench/scenario_replay.py [--items 150] [--many 1000] [--runs 1] [--repo]`
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml

from navagent.core.wire_formats import FORMAT_IDS, wire_format

ROOT = Path(__file__).resolve().parents[1]
GOAL_MEDIAN_MS = 30.0
GOAL_MANY_S = 60.0
REPO_BUDGET_S = 30.0
QUICK_SCENARIOS = (
    "cluster-overview",
    "diagnose-failing",
    "empty-cluster",
    "sandbox-follow-up",
    "pronoun-follow-up",
    "providers",
    "unknown-sandbox",
    "create-then-logs",
    "tool-failure",
    "non-ascii",
)
"""Committed scenarios of the everyday kind: a few turns and tool calls, nothing
that waits on a timeout by design (provider-stall, cluster-tool-timeout do)."""

_TIMING_CONFTEST = """
import json, os, time

import pytest

_ITEMS = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        return (yield)
    finally:
        _ITEMS.append((item.nodeid, time.perf_counter() - wall, time.process_time() - cpu))


def pytest_sessionfinish(session):
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: its figures are not read
    with open(os.environ["BENCH_TIMINGS"], "w", encoding="utf-8") as out:
        json.dump(_ITEMS, out)
"""

_VCR_TEST = """
from pathlib import Path

import httpx
import pytest
import vcr

RECORDER = vcr.VCR(cassette_library_dir=str(Path(__file__).parent / "vcr"), record_mode="none")
CLIENT = httpx.Client()  # one client, as a test suite keeps it (a new one loads the CA bundle)


@pytest.mark.parametrize("n", range({count}))
def test_plain_vcr(n):
    with RECORDER.use_cassette("chat.yaml"):
        response = CLIENT.post("http://api.example.invalid/v1/chat/completions", json={{"n": 1}})
    assert response.json()["choices"][0]["message"]["content"] == "Connected."
"""


def _vcr_cassette() -> dict[str, object]:
    """A vcrpy cassette (vcrpy's own format) with one chat completion."""
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Connected."}}]}
    return {
        "version": 1,
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": "http://api.example.invalid/v1/chat/completions",
                    "body": '{"n": 1}',
                    "headers": {"content-type": ["application/json"]},
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"content-type": ["application/json"]},
                    "body": {"string": json.dumps(body)},
                },
            }
        ],
    }


def make_project(folder: Path, *, replay_items: int, vcr_tests: int) -> None:
    """A project with about `replay_items` scenario items and `vcr_tests` vcrpy tests."""
    (folder / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nnav_scenarios = ["scenarios"]\n', encoding="utf-8"
    )
    (folder / "conftest.py").write_text(_TIMING_CONFTEST, encoding="utf-8")
    (folder / "vcr").mkdir()
    (folder / "vcr" / "chat.yaml").write_text(yaml.safe_dump(_vcr_cassette()), encoding="utf-8")
    if vcr_tests:
        (folder / "test_plain_vcr.py").write_text(
            _VCR_TEST.format(count=vcr_tests), encoding="utf-8"
        )
    scenarios = folder / "scenarios"
    scenarios.mkdir()
    files = -(-replay_items // len(FORMAT_IDS))
    for index in range(files):
        base = QUICK_SCENARIOS[index % len(QUICK_SCENARIOS)]
        new_id = f"{base}-{index:04d}"
        text = (ROOT / "scenarios" / f"{base}.yaml").read_text(encoding="utf-8")
        (scenarios / f"{new_id}.yaml").write_text(
            text.replace(f"id: {base}\n", f"id: {new_id}\n", 1), encoding="utf-8"
        )
        for provider in FORMAT_IDS:
            folder_name = wire_format(provider).cassette_folder
            target = folder / "cassettes" / folder_name / f"{new_id}.yaml"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / "cassettes" / folder_name / f"{base}.yaml", target)


Timing = tuple[str, float, float]
"""(node id, wall s, CPU s of the pytest process) of one item: setup, call, teardown."""


def run_pytest(folder: Path, *args: str) -> tuple[float, int, list[Timing]]:
    """Wall time of `python -m pytest ARGS` in `folder`, tests passed, each item's timing.

    Items are timed in the process that runs them, so only without xdist.
    Exits with pytest's output when anything failed.
    """
    timings = folder / "timings.json"
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
        cwd=folder,
        capture_output=True,
        check=False,
        env={**_environ(), "BENCH_TIMINGS": str(timings)},
    )
    wall = time.perf_counter() - started
    output = done.stdout.decode()
    if done.returncode != 0:
        sys.exit(output[-5000:] + done.stderr.decode()[-3000:])
    passed = re.search(r"(\d+) passed", output)
    items = [tuple(row) for row in json.loads(timings.read_text(encoding="utf-8"))]
    return wall, int(passed.group(1)) if passed else 0, items


def _environ() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in ("CI", "NO_COLOR")}


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def _row(label: str, values: list[float], cpu: list[float]) -> str:
    return (
        f"{label:<40} {len(values):>5} {statistics.median(values):7.1f}ms {p95(values):7.1f}ms"
        f" {statistics.median(cpu):7.1f}ms"
    )


def one_run(items: int, many: int) -> None:
    with tempfile.TemporaryDirectory(prefix="nav-bench-") as name:
        folder = Path(name) / "mixed"
        folder.mkdir()
        make_project(folder, replay_items=items, vcr_tests=items)
        _, _, timed = run_pytest(folder, "-q", "-n", "0")
        replays = [row for row in timed if row[0].startswith("scenarios/")]
        plain = [row for row in timed if not row[0].startswith("scenarios/")]
        print(
            f"{'per item, one run (-n 0)':<40} {'items':>5} {'median':>9} {'p95':>9} {'CPU med':>9}"
        )
        for label, rows in (
            ("scenario replay items (the plugin)", replays),
            ("plain vcrpy tests (same run)", plain),
        ):
            wall = [row[1] * 1000 for row in rows]
            print(_row(label, wall, [row[2] * 1000 for row in rows]))
        median = statistics.median(row[1] for row in replays) * 1000
        ratio = median / (statistics.median(row[1] for row in plain) * 1000)
        cpu_ratio = statistics.median(row[2] for row in replays) / statistics.median(
            row[2] for row in plain
        )
        label = "ratio of the medians (wall, CPU)"
        print(f"{label:<40} {'':>5} {ratio:8.1f}x {'':>9} {cpu_ratio:8.1f}x")
        verdict = "ok" if median <= GOAL_MEDIAN_MS else "OVER"
        print(f"{'goal: replay median <= 30 ms':<40} {'':>5} {verdict:>9}")
        if many:
            print()
            print(f"{f'{many} items, -n 2 (fresh pytest, wall)':<40} {'tests':>5} {'time':>9}")
            for label, replay, vcr_tests in (
                ("scenario replay items", many, 0),
                ("plain vcrpy tests", 0, many),
            ):
                project = Path(name) / label.split()[0]
                project.mkdir()
                make_project(project, replay_items=replay, vcr_tests=vcr_tests)
                wall_s, passed, _ = run_pytest(project, "-q", "-n", "2")
                print(f"{label:<40} {passed:>5} {wall_s:8.1f}s")
                if replay:
                    verdict = "ok" if wall_s < GOAL_MANY_S else "OVER"
                    print(f"{f'goal: {many} replay items < 60 s':<40} {'':>5} {verdict:>9}")


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


def repo_commands(runs: int) -> None:
    print(f"{'this repository, fresh process':<46} {'min':>8} {'median':>8} {'budget':>8}")
    for label, timings in (
        ("nav scenario replay (all x three formats)", whole_command(runs)),
        ("pytest scenarios (the plugin, snapshots)", whole_pytest(runs)),
    ):
        print(
            f"{label:<46} {min(timings):7.2f}s {statistics.median(timings):7.2f}s"
            f" {REPO_BUDGET_S:7.1f}s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=150, help="replay items for the -n 0 run")
    parser.add_argument("--many", type=int, default=1000, help="replay items for -n 2 (0: skip)")
    parser.add_argument("--runs", type=int, default=1, help="repeat everything this many times")
    parser.add_argument("--repo", action="store_true", help="also time this repository's own")
    options = parser.parse_args()
    for run in range(options.runs):
        if options.runs > 1:
            print(f"--- run {run + 1} of {options.runs}")
        one_run(options.items, options.many)
        print()
    if options.repo:
        repo_commands(options.runs)
    print(textwrap.fill("(a shared machine is noisy: compare the same-run ratio)", 80))


if __name__ == "__main__":
    main()
