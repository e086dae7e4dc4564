"""A team's pytest run shows no warning the harness brought (issue 40, section 4).

A team installs nav-agent as scenarios/README.md says (`nav-agent`, `pytest`,
`syrupy`). Whatever pytest plugins that brings along (anyio's, through httpx;
hypothesis'; syrupy; the plugin itself) run here, and no other installed one:
not pytest-asyncio, whose unset `asyncio_default_fixture_loop_scope` warns
on every run. The team's async test is written as the README shows, with
anyio's marker, which needs no plugin the harness does not bring.
"""

from __future__ import annotations

import shutil
from importlib.metadata import PackageNotFoundError, distribution, entry_points

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.scenarios.conftest import CASSETTES, SCENARIOS

TEAM_INSTALLS = ("nav-agent", "pytest", "syrupy")
"""scenarios/README.md, "In another project": `test = ["nav-agent", "pytest", "syrupy"]`."""

TEAM_TEST = """
import pytest


@pytest.mark.nav_scenario("providers")
def test_sync(nav_scenario):
    assert nav_scenario.replay("openai").transcript.turns[0].tools[0].name == "provider_list"


@pytest.mark.anyio
async def test_async(nav_scenario):
    result = await nav_scenario.areplay("openai", "providers")
    assert result.passed
"""


def brought(names: tuple[str, ...]) -> set[str]:
    """The installed distributions `names` require, transitively (no extras)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        seen.add(name)
        for text in requires:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return seen


def test_the_harness_brings_no_pytest_asyncio() -> None:
    assert "pytest-asyncio" not in brought(TEAM_INSTALLS)


def test_a_teams_run_with_what_the_harness_brings_shows_no_warning(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(pytester.path)
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nnav_scenarios = ["scenarios"]\nnav_cassettes = "cassettes"\n'
        'nav_formats = ["openai"]\n'
    )
    (pytester.path / "scenarios").mkdir()
    shutil.copyfile(SCENARIOS / "providers.yaml", pytester.path / "scenarios" / "providers.yaml")
    (pytester.path / "cassettes" / "openai").mkdir(parents=True)
    shutil.copyfile(
        CASSETTES / "openai" / "providers.yaml",
        pytester.path / "cassettes" / "openai" / "providers.yaml",
    )
    pytester.makepyfile(test_team=TEAM_TEST)
    team = brought(TEAM_INSTALLS)
    others = [
        f"no:{entry.name}"
        for entry in entry_points(group="pytest11")
        if entry.dist is None or canonicalize_name(entry.dist.name) not in team
    ]
    assert "no:asyncio" in others  # installed here, for this repository's own tests only
    disabled = [word for name in others for word in ("-p", name)]

    result = pytester.runpytest_subprocess(*disabled, "-p", "no:cacheprovider", "scenarios", ".")

    result.assert_outcomes(passed=3)
    assert "warnings" not in result.parseoutcomes()
    assert "warnings summary" not in str(result.stdout), str(result.stdout)

    # What the check would see with pytest-asyncio there (a plugin the harness does not bring).
    with_asyncio = [word for name in others if name != "no:asyncio" for word in ("-p", name)]
    seen = pytester.runpytest_subprocess(*with_asyncio, "-p", "no:cacheprovider", "scenarios", ".")
    assert "asyncio_default_fixture_loop_scope" in str(seen.stdout)
