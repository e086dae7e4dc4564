"""Several formats of one scenario failing: one command records them all (issue 40, section 3).

Each failure block names the command for its own format; after the blocks,
`nav scenario replay` and the pytest plugin print one command per scenario
that records every format it failed on (and the snapshot update, when
snapshots are on), and that command runs as printed.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness import load_scenario
from navagent.fixtures.harness.replay._report import RecordCommand, record_commands
from tests.scenarios.conftest import CASSETTES, ROOT, SCENARIOS, CopyCase

FIRST, LAST = FORMAT_IDS[0], FORMAT_IDS[-1]


def commands(*providers: str, model: str | None = None) -> list[RecordCommand]:
    scenario = load_scenario(SCENARIOS / "providers.yaml")
    return [
        RecordCommand.of(scenario, provider, real_model=model, cwd=ROOT) for provider in providers
    ]


def test_the_formats_of_one_scenario_merge_into_one_command_in_registry_order() -> None:
    assert record_commands(commands(LAST, FIRST)) == [
        f"nav scenario record providers --provider {FIRST} --provider {LAST} --sim"
    ]
    assert record_commands(commands(*reversed(FORMAT_IDS))) == [
        "nav scenario record providers --provider all --sim"
    ]
    # One format: its block already says it all.
    assert record_commands(commands(FIRST)) == []
    # A real recording is not recorded again from the simulator.
    assert record_commands([*commands(FIRST), *commands(LAST, model="m")]) == []
    # Snapshots on: the update follows, one format failing too.
    assert record_commands(commands(FIRST), snapshots=True, cwd=ROOT) == [
        f"nav scenario record providers --provider {FIRST} --sim",
        "pytest --snapshot-update scenarios/providers.yaml",
    ]
    (command,) = commands(FIRST)
    assert RecordCommand.from_json(command.to_json()) == command


def test_replay_prints_one_command_for_every_failed_format_and_it_records_them(
    copy_case: CopyCase, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_case("providers")
    monkeypatch.chdir(folder.parent)
    monkeypatch.delenv("CI", raising=False)
    for provider in (FIRST, LAST):
        (folder.parent / "cassettes" / provider / "providers.yaml").unlink()
    (folder.parent / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\nnav_snapshots = true\n", encoding="utf-8"
    )
    runner = CliRunner()

    replayed = runner.invoke(app, ["scenario", "replay", "providers"])

    assert replayed.exit_code == 1
    lines = replayed.output.splitlines()
    start = lines.index("to record again what failed (review the diff before you commit it):")
    merged = f"nav scenario record providers --provider {FIRST} --provider {LAST} --sim"
    assert lines[start + 1 : start + 3] == [
        f"  {merged}",
        "  pytest --snapshot-update scenarios/providers.yaml",
    ]
    recorded = runner.invoke(app, shlex.split(merged)[1:])  # as printed, less the `nav`
    assert recorded.exit_code == 0, recorded.output
    assert [line.split()[0] for line in recorded.output.splitlines()] == ["wrote", "wrote"]
    for provider in (FIRST, LAST):
        assert (folder.parent / "cassettes" / provider / "providers.yaml").is_file()
    again = runner.invoke(app, ["scenario", "replay", "providers"])
    assert again.exit_code == 0, again.output
    assert "to record again" not in again.output


@pytest.mark.slow
def test_pytest_prints_one_command_after_the_blocks_under_xdist(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(pytester.path)
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nasyncio_default_fixture_loop_scope = "function"\n'
        "nav_snapshots = true\n"
    )
    (pytester.path / "scenarios").mkdir()
    shutil.copyfile(SCENARIOS / "providers.yaml", pytester.path / "scenarios" / "providers.yaml")
    (pytester.path / "scenarios" / "__snapshots__").mkdir()
    snapshot = Path("__snapshots__") / "providers.ambr"
    shutil.copyfile(SCENARIOS / snapshot, pytester.path / "scenarios" / snapshot)
    for provider in FORMAT_IDS[1:-1]:
        cassette = pytester.path / "cassettes" / provider / "providers.yaml"
        cassette.parent.mkdir(parents=True)
        shutil.copyfile(CASSETTES / provider / "providers.yaml", cassette)

    result = pytester.runpytest("-p", "xdist", "-n", "2", "scenarios")

    result.assert_outcomes(failed=2, passed=len(FORMAT_IDS) - 2)
    result.stdout.fnmatch_lines(
        [
            "*- nav scenarios: to record again what failed -*",
            "(review the diff before you commit it)",
            f"  nav scenario record providers --provider {FIRST} --provider {LAST} --sim",
            "  pytest --snapshot-update scenarios/providers.yaml",
        ]
    )
