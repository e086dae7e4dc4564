from __future__ import annotations

from collections.abc import Iterator

import pytest

from navagent.fixtures.provider import SimulatedProvider


@pytest.fixture(scope="module")
def running_sim() -> Iterator[SimulatedProvider]:
    with SimulatedProvider(clock=lambda: 1_772_643_600) as sim:
        yield sim


@pytest.fixture
def sim(running_sim: SimulatedProvider) -> SimulatedProvider:
    """A started simulator, shared per module, with faults, log and id counters reset."""
    running_sim.reset()
    running_sim.pacing_ms = 0
    return running_sim
