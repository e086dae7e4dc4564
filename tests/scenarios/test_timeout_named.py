"""A timed-out call's result names its own timeout (issue 42).

`r3-timeout-note-wrong-limit` (bench/planted_defects.toml) killed a create at its
own timeout and told the model it timed out after the read timeout. Every
replay passed: no scenario let a create time out, and `killed-at-own-timeout`
looked at when the call was killed, not at what its result said. Now
`scenarios/create-timeout.yaml` takes the path, and the invariant reads the
result of every killed call, so the sweep's `overtime` points check it on any
tool of any scenario.
"""

from __future__ import annotations

import pytest

from navagent.core.agent_events import ToolFinished
from navagent.core.messages import ToolCall
from navagent.core.nav_cli import NavToolRunner
from navagent.core.tools import ToolOutcome
from navagent.fixtures.harness import SimulatedCluster, load_scenario, plan_replays, replay_scenario
from navagent.fixtures.harness.faults._invariants import INVARIANTS, PointRun
from navagent.fixtures.harness.faults._space import parse_point
from navagent.fixtures.harness.faults._tool_timing import ToolRun, killed_at_own_timeout
from navagent.fixtures.harness.sweep._run import SweepOptions, sweep_grid
from tests.scenarios.conftest import CopyCase
from tests.scenarios.test_planted_paths import plant


def _killed(content: str) -> PointRun:
    call = ToolCall(id="c1", name="sandbox_create", arguments="{}")
    outcome = ToolOutcome(call=call, status="timeout", content=content)
    ran = ToolRun(("nav",), "sandbox_create", 1, 1, 0, "", 300.0, 300.0, 0.0, 300.0, killed=True)
    return PointRun(
        scenario="s",
        provider="anthropic",
        point=None,
        transcript=None,
        tool_runs=[ran],
        events=[ToolFinished(index=0, outcome=outcome)],
    )


def test_a_result_that_names_another_timeout_breaks_the_invariant() -> None:
    assert killed_at_own_timeout(_killed("\nCommand timed out after 300 s and was killed.")) == []
    (found,) = killed_at_own_timeout(_killed("\nCommand timed out after 60 s and was killed."))
    assert "sandbox_create timed out after its own timeout of 300s" in found
    assert "timed out after 60 s" in found


async def test_a_create_reported_at_the_read_timeout_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("create-timeout", providers=("gemini",))
    scenario = load_scenario(folder / "create-timeout.yaml")
    assert (await replay_scenario(scenario, "gemini", cluster=cluster)).passed

    plant(monkeypatch, "r3-timeout-note-wrong-limit", NavToolRunner, "_run")
    result = await replay_scenario(scenario, "gemini", cluster=cluster)

    assert not result.passed
    assert any(
        "[killed-at-own-timeout] sandbox_create timed out after its own timeout of 0.4s" in p
        and "timed out after 0.1 s" in p
        for p in result.problems
    ), result.problems


def test_the_sweep_pushes_a_create_past_its_timeout_and_reads_its_result(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase
) -> None:
    """Another scenario, another path: `overtime` on the create of `create-and-logs-together`."""
    folder = copy_case("create-and-logs-together", providers=("openai",))
    (job,) = plan_replays([load_scenario(folder / "create-and-logs-together.yaml")], ["openai"])
    options = SweepOptions(points=(parse_point("overtime@tool1"),), invariants=dict(INVARIANTS))
    assert sweep_grid(job, options).violations == []

    plant(monkeypatch, "r3-timeout-note-wrong-limit", NavToolRunner, "_run")
    (violation,) = sweep_grid(job, options).violations

    breaches = dict(violation.breaches)
    assert (
        "sandbox_create timed out after its own timeout of 60s, but its result says"
        in (breaches["killed-at-own-timeout"])
    )
    assert "timed out after 30 s" in breaches["killed-at-own-timeout"]
