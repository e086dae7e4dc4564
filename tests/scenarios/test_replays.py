"""Every committed scenario replays against both providers' cassettes.

Each case goes through `replay_scenario`, the entry point `nav scenario replay`
uses, and snapshots the transcript (tool-call ids masked: they differ per
provider and per recording).
"""

from __future__ import annotations

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.matchers import path_type

from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness import (
    SimulatedCluster,
    discover_scenarios,
    replay_scenario,
)
from tests.scenarios.conftest import SCENARIOS

ALL = discover_scenarios([SCENARIOS])
CASES = [
    pytest.param(scenario, provider, id=f"{scenario.id}[{provider}]")
    for scenario in ALL
    for provider in FORMAT_IDS
]
MASK_IDS = path_type(
    {r"turns\.\d+\.steps\.\d+\.id": (str,)},
    regex=True,
    replacer=lambda data, match: "<tool-call-id>",
)


@pytest.mark.parametrize(("scenario", "provider"), CASES)
async def test_scenario_replays(
    scenario, provider, cluster: SimulatedCluster, snapshot: SnapshotAssertion
) -> None:
    result = await replay_scenario(scenario, provider, cluster=cluster)
    assert result.passed, "\n".join([*result.problems, result.details])
    assert result.transcript is not None
    assert len(result.transcript.turns) == len(scenario.turns)
    assert result.transcript.to_data() == snapshot(matcher=MASK_IDS)
