from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness import SimulatedCluster

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
CASSETTES = ROOT / "cassettes"

CopyCase = Callable[..., Path]


@pytest.fixture(scope="session")
def cluster() -> Iterator[SimulatedCluster]:
    """nav-sim seeds once for the whole session; every replay copies its state."""
    yield SimulatedCluster()


@pytest.fixture
def copy_case(tmp_path: Path) -> CopyCase:
    """Copy scenarios and their cassettes into `tmp_path/{scenarios,cassettes}`.

    Returns the copied scenarios folder; the cassettes sit beside it, where
    `default_cassette_dir` looks for them.
    """

    def copy(*scenario_ids: str, providers: tuple[str, ...] = FORMAT_IDS) -> Path:
        for scenario_id in scenario_ids:
            target = tmp_path / "scenarios" / f"{scenario_id}.yaml"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(SCENARIOS / f"{scenario_id}.yaml", target)
            for provider in providers:
                cassette = tmp_path / "cassettes" / provider / f"{scenario_id}.yaml"
                cassette.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(CASSETTES / provider / f"{scenario_id}.yaml", cassette)
        return tmp_path / "scenarios"

    return copy


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """Inner sessions keep their order: pytest-randomly is installed, and on only where asked.

    A test that runs with it passes `-p randomly` (which undoes this `-p no:randomly`).
    """
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:randomly")
    return pytester


def without_recorder(text: str | bytes) -> str:
    """A cassette without its `metadata.recorded_by` line, the one line that names the build.

    Committed cassettes may predate it or come from another build; everything
    else a re-record writes must be the same bytes.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return re.sub(r"(?m)^  recorded_by: .*\n", "", text, count=1)
