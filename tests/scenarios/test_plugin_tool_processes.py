"""The plugin runs a session's first nav-sim command as a process, the rest in process (or each)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from navagent.core.wire_formats import FORMAT_IDS
from tests.scenarios.conftest import CASSETTES, SCENARIOS

PYPROJECT = """
[tool.pytest.ini_options]
asyncio_default_fixture_loop_scope = "function"
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two scenarios (an item per format each), each with tool calls, and their cassettes."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyprojecttoml(PYPROJECT)
    (pytester.path / "scenarios").mkdir()
    for scenario_id in ("providers", "diagnose-failing"):
        shutil.copyfile(
            SCENARIOS / f"{scenario_id}.yaml", pytester.path / "scenarios" / f"{scenario_id}.yaml"
        )
        for provider in FORMAT_IDS:
            target = pytester.path / "cassettes" / provider / f"{scenario_id}.yaml"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(CASSETTES / provider / f"{scenario_id}.yaml", target)
    return pytester.path


def _counts(result: pytest.RunResult) -> tuple[int, int, int]:
    line = re.search(
        r"nav scenarios: (\d+) nav-sim commands, (\d+) run as a process, (\d+) in process",
        result.stdout.str(),
    )
    assert line is not None, result.stdout.str()
    total, processes, here = (int(group) for group in line.groups())
    assert total == processes + here
    return total, processes, here


def test_the_first_command_of_a_session_is_a_process_the_rest_run_in_process(
    pytester: pytest.Pytester, project: Path
) -> None:
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2 * len(FORMAT_IDS))
    total, processes, _ = _counts(result)
    assert processes == 1 and total >= 2 * len(FORMAT_IDS)
    assert "(nav_tool_processes = first)" in result.stdout.str()


def test_nav_tool_processes_every_runs_each_command_as_a_process(
    pytester: pytest.Pytester, project: Path
) -> None:
    pytester.makepyprojecttoml(PYPROJECT + 'nav_tool_processes = "every"\n')
    result = pytester.runpytest("-p", "no:randomly", "scenarios/providers.yaml")
    result.assert_outcomes(passed=len(FORMAT_IDS))
    total, processes, here = _counts(result)
    assert processes == total and here == 0


def test_an_unknown_nav_tool_processes_is_a_usage_error(
    pytester: pytest.Pytester, project: Path
) -> None:
    pytester.makepyprojecttoml(PYPROJECT + 'nav_tool_processes = "some"\n')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*nav_tool_processes: 'some' is not one of first, every*"])
