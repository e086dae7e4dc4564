"""Fixtures for the nav-sim tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sim.runner import NavSim


@pytest.fixture
def sim(tmp_path: Path) -> NavSim:
    """`nav-sim` with a fresh state file in `tmp_path` and the fixed clock."""
    return NavSim(tmp_path / "state.json")
