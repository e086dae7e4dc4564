"""Replays that share a stack and an in-process nav-sim leave nothing behind for the next one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from navagent.core.wire_formats import WireFormatId
from navagent.fixtures.harness import ReplayResult, SimulatedCluster, load_scenario, replay_scenario
from navagent.fixtures.harness.replay._runner import StackPool
from tests.scenarios.conftest import CopyCase

# create-then-logs creates web-2; create-confirmed-delete-declined creates one
# and keeps another it was asked to delete; the others list, read and fail.
WRITERS = ("create-then-logs", "create-confirmed-delete-declined")
READERS = ("diagnose-failing", "sandbox-follow-up", "tool-failure")


@pytest.fixture
async def pool() -> AsyncIterator[StackPool]:
    stacks = StackPool()
    yield stacks
    await stacks.aclose()


async def _replay(
    folder: Path, scenario_id: str, provider: WireFormatId, **shared: object
) -> ReplayResult:
    scenario = load_scenario(folder / f"{scenario_id}.yaml")
    result = await replay_scenario(scenario, provider, **shared)  # type: ignore[arg-type]
    assert result.passed, result.report
    return result


async def test_a_replay_after_others_sees_what_it_sees_alone(
    copy_case: CopyCase, pool: StackPool
) -> None:
    folder = copy_case(*WRITERS, *READERS, providers=("openai", "anthropic"))
    alone = {
        (scenario_id, provider): (await _replay(folder, scenario_id, provider)).transcript
        for scenario_id in READERS
        for provider in ("openai", "anthropic")
    }
    shared = SimulatedCluster()
    for provider in ("anthropic", "openai"):  # another order, another format first
        for scenario_id in (*WRITERS, *reversed(READERS), *READERS):
            result = await _replay(folder, scenario_id, provider, cluster=shared, stacks=pool)
            if scenario_id in READERS:
                assert result.transcript == alone[(scenario_id, provider)]
    # Nearly all of it ran in this process; the first command started nav-sim.
    assert shared.executor.processes == 1
    assert shared.executor.in_process > 20


async def test_a_broken_replay_leaves_the_shared_stack_as_it_found_it(
    copy_case: CopyCase, pool: StackPool
) -> None:
    folder = copy_case("diagnose-failing", "sandbox-follow-up", providers=("openai",))
    cassette = folder.parent / "cassettes" / "openai" / "diagnose-failing.yaml"
    text = cassette.read_text(encoding="utf-8")
    cassette.write_text(text.replace("stream: true", "stream: false", 2), encoding="utf-8")
    shared = SimulatedCluster()
    broken = await replay_scenario(
        load_scenario(folder / "diagnose-failing.yaml"), "openai", cluster=shared, stacks=pool
    )
    assert not broken.passed
    first = await _replay(folder, "sandbox-follow-up", "openai", cluster=shared, stacks=pool)
    cassette.write_text(text, encoding="utf-8")
    await _replay(folder, "diagnose-failing", "openai", cluster=shared, stacks=pool)
    again = await _replay(folder, "sandbox-follow-up", "openai", cluster=shared, stacks=pool)
    assert again.transcript == first.transcript
