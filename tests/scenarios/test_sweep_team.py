"""A team's own invariants (found beside pyproject.toml, checked in replays too) and sharding."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.fixtures.harness import load_scenario, plan_replays
from navagent.fixtures.harness.sweep._run import parse_shard, shard_jobs

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = "create-confirmed-delete-declined"

TEAM_MODULE = """\
def bounded_commands(run):
    commands = len(run.tool_runs)
    return [f"{commands} tool commands in one run, more than 1"] if commands > 1 else []
"""
PYPROJECT = """\
[tool.pytest.ini_options]
asyncio_default_fixture_loop_scope = "function"
nav_formats = ["anthropic"]
nav_snapshots = true
nav_sweep_invariants = ["team_invariants:bounded_commands"]
"""


def _project(folder: Path, scenarios: tuple[str, ...] = (SCENARIO,)) -> None:
    """A team's project: pyproject.toml, its invariant module beside it, scenarios, cassettes."""
    (folder / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (folder / "team_invariants.py").write_text(TEAM_MODULE, encoding="utf-8")
    (folder / "scenarios").mkdir()
    for name in scenarios:
        source = ROOT / "scenarios" / f"{name}.yaml"
        (folder / "scenarios" / source.name).write_bytes(source.read_bytes())
        for cassette in (ROOT / "cassettes").glob(f"*/{name}.yaml"):
            target = folder / "cassettes" / cassette.parent.name / cassette.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(cassette.read_bytes())


@pytest.fixture
def clean_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the test puts on sys.path or imports as `team_invariants` goes with it."""
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".")])
    monkeypatch.delitem(sys.modules, "team_invariants", raising=False)


def test_nav_scenario_sweep_and_replay_find_the_team_module_beside_pyproject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_imports: None
) -> None:
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    swept = runner.invoke(
        app, ["scenario", "sweep", SCENARIO, "--provider", "anthropic", "--point", "empty@tool1"]
    )
    assert "No module named" not in swept.output
    assert swept.exit_code == 1, swept.output
    assert "[bounded-commands] 2 tool commands in one run, more than 1" in swept.output
    assert f"nav scenario record {SCENARIO} --sim && nav scenario replay {SCENARIO}" in swept.output
    assert "--snapshot-update" in swept.output  # nav_snapshots is on

    replayed = runner.invoke(app, ["scenario", "replay", SCENARIO, "--provider", "anthropic"])
    assert replayed.exit_code == 1, replayed.output
    assert "[bounded-commands] 2 tool commands in one run" in replayed.output


def test_a_team_module_that_is_missing_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_imports: None
) -> None:
    _project(tmp_path)
    (tmp_path / "team_invariants.py").unlink()
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["scenario", "replay", SCENARIO, "--provider", "anthropic"])
    assert result.exit_code == 2
    assert "cannot load 'team_invariants:bounded_commands'" in result.output
    assert "Traceback" not in result.output


@pytest.mark.slow
def test_plain_pytest_finds_the_team_module_for_the_sweep_and_for_replay_items(
    pytester: pytest.Pytester, clean_imports: None
) -> None:
    _project(pytester.path)  # no syspathinsert: plain `pytest`, the project root not on sys.path
    swept = pytester.runpytest(
        "--nav-sweep", "--nav-sweep-budget", "2", "-p", "no:xdist", "-o", "addopts="
    )
    swept.assert_outcomes(failed=1)
    swept.stdout.fnmatch_lines(["*[[]bounded-commands[]] 2 tool commands in one run*"])
    assert "No module named" not in swept.stdout.str()
    replayed = pytester.runpytest("-p", "no:xdist", "-o", "addopts=", "--snapshot-update")
    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(["*[[]bounded-commands[]] 2 tool commands in one run*"])


def test_shards_deal_every_grid_once_the_same_way_everywhere() -> None:
    scenarios = [load_scenario(path) for path in sorted((ROOT / "scenarios").glob("*.yaml"))]
    jobs = plan_replays(scenarios, ["openai", "anthropic"])
    shares = [shard_jobs(jobs, index, 3) for index in (1, 2, 3)]
    labels = [job.label for share in shares for job in share]
    assert sorted(labels) == sorted(job.label for job in jobs)  # each once
    assert shard_jobs(list(reversed(jobs)), 2, 3) == shares[1]  # not the order they came in
    assert max(map(len, shares)) - min(map(len, shares)) <= 1
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "x/3", "3"):
        with pytest.raises(ValueError, match="expected I/N"):
            parse_shard(bad)


def _grid_lines(output: str) -> tuple[list[str], tuple[int, int]]:
    """Every line of a sweep's report but its summary, sorted; and (points, violations)."""
    lines = output.splitlines()
    (summary,) = [line for line in lines if line.startswith("sweep: ")]
    found = re.search(r"(\d+) points, (\d+) violations", summary)
    assert found is not None, summary
    rest = sorted(line for line in lines if not line.startswith("sweep: "))
    return rest, (int(found[1]), int(found[2]))


@pytest.mark.slow
def test_the_union_of_the_shards_reports_is_one_unsharded_run() -> None:
    runner = CliRunner()
    names = ["unknown-sandbox", "providers", "delete-beside-read"]
    command = ["scenario", "sweep", *names, "--budget", "3", "--seed", "7"]
    command += ["--provider", "anthropic"]
    whole = runner.invoke(app, command)
    shards = [runner.invoke(app, [*command, "--shard", f"{index}/2"]) for index in (1, 2)]
    assert whole.exit_code == 0, whole.output
    assert all(shard.exit_code == 0 for shard in shards), [shard.output for shard in shards]
    lines, totals = _grid_lines(whole.output)
    parts = [_grid_lines(shard.output) for shard in shards]
    assert sorted(line for part, _ in parts for line in part) == lines
    assert tuple(map(sum, zip(*(counts for _, counts in parts), strict=True))) == totals
    assert all(part for part, _ in parts)  # both shards swept something


def test_without_a_team_invariant_the_project_stays_off_the_import_path(tmp_path: Path) -> None:
    # A replay of a pull request's files imports nothing from its folder unless
    # the project names an invariant module there.
    from navagent.fixtures.harness.faults._team import team_invariants

    before = list(sys.path)
    assert team_invariants([], [tmp_path]) == {}
    assert sys.path == before
