"""Timing faults for tools: the space, the three invariants, and three planted ordering defects."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import navagent.core.agent as agent_module
from navagent.core.agent import Agent
from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.core.nav_cli import NavToolRunner
from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness import load_scenario, plan_replays, replay_scenario
from navagent.fixtures.harness.faults._invariants import INVARIANTS, PointRun
from navagent.fixtures.harness.faults._space import FaultPoint, FaultSpace, parse_point
from navagent.fixtures.harness.faults._tool_timing import (
    ToolRun,
    killed_at_own_timeout,
    reads_wait_for_changes,
    results_in_call_order,
)
from navagent.fixtures.harness.record._recorder import record_scenario, simulated_target
from navagent.fixtures.harness.sweep._report import grid_text, pinned_scenario, reproducer
from navagent.fixtures.harness.sweep._run import SweepOptions, sweep_grid

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text", ["order=2,1@tool3", "order=3,1,2@tool1", "overtime@tool2"])
def test_a_timing_point_reads_back_from_its_text(text: str) -> None:
    assert str(parse_point(text)) == text
    assert parse_point(text).where == "timing"


@pytest.mark.parametrize(
    "text", ["order=1,1@tool1", "order=2@tool1", "order@tool1", "overtime=2@tool1", "order=2,1@x"]
)
def test_a_malformed_timing_point_says_which_forms_work(text: str) -> None:
    with pytest.raises(ValueError, match="order=2,1@tool3"):
        parse_point(text)


def test_each_completion_with_several_calls_gets_orders_overtime_and_slow_changes() -> None:
    space = FaultSpace(deltas=(1,), tool_calls=6, groups=((1, 2, ()), (3, 4, (3,))))
    timing = [str(p) for p in space.points() if p.where == "timing"]
    assert timing[:1] == ["order=2,1@tool1"]  # two calls: the one other order
    orders = [t for t in timing if t.startswith("order=") and t.endswith("@tool3")]
    assert orders[0] == "order=4,3,2,1@tool3" and len(orders) == 6  # the budget, reverse first
    assert {t for t in timing if t.startswith("overtime")} == {
        f"overtime@tool{n}" for n in range(1, 7)
    }
    assert [t for t in timing if t.startswith("slow-change")] == ["slow-change@tool3"]
    assert space.contains(parse_point("order=2,4,1,3@tool3"))  # any order of that completion
    assert not space.contains(parse_point("order=2,1@tool3"))  # it has four calls
    assert not space.contains(parse_point("slow-change@tool1"))  # no create or delete there


def _run(**fields: object) -> PointRun:
    return PointRun(scenario="s", provider="anthropic", point=None, transcript=None, **fields)  # type: ignore[arg-type]


def _tool(tool: str, call: int, started: float, ended: float, **fields: object) -> ToolRun:
    values: dict[str, object] = {"timeout_s": 30.0, "own_timeout_s": 30.0, "killed": False}
    values.update(fields)
    return ToolRun(("nav",), tool, 1, 1, call, "", started=started, ended=ended, **values)  # type: ignore[arg-type]


def test_results_out_of_call_order_break_the_first_invariant() -> None:
    calls = (ToolCall(id="a", name="sandbox_list"), ToolCall(id="b", name="provider_list"))
    asked = AssistantMessage(content="", tool_calls=calls)

    def request(*ids: str) -> ChatRequest:
        results = [ToolResultMessage(tool_call_id=i, content="x") for i in ids]
        return ChatRequest(messages=(UserMessage(content="hi"), asked, *results))

    assert results_in_call_order(_run(requests=[request("a", "b")])) == []
    (found,) = results_in_call_order(_run(requests=[request("b", "a")]))
    assert "come back as b, a, not in call order" in found


def test_a_call_started_before_the_change_ahead_of_it_ended_breaks_the_second() -> None:
    delete = _tool("sandbox_delete", 0, started=0.0, ended=15.0)
    assert (
        reads_wait_for_changes(_run(tool_runs=[delete, _tool("provider_list", 1, 15.0, 15.0)]))
        == []
    )
    (found,) = reads_wait_for_changes(_run(tool_runs=[delete, _tool("provider_list", 1, 0.0, 0.0)]))
    assert "provider_list (call 2) started 15.00s before sandbox_delete (call 1)" in found


def test_a_kill_not_at_the_tools_own_timeout_breaks_the_third() -> None:
    at_own = _tool("sandbox_list", 0, 0.0, 30.0, killed=True)
    assert killed_at_own_timeout(_run(tool_runs=[at_own])) == []
    late = _tool("sandbox_list", 0, 0.0, 60.0, killed=True, timeout_s=60.0)
    assert (
        "killed after 60.00s, not at its own timeout of 30s"
        in killed_at_own_timeout(_run(tool_runs=[late]))[0]
    )
    unkilled = _tool("sandbox_list", 0, 0.0, 45.0, timeout_s=60.0)
    assert (
        "past its own timeout of 30s, and was not killed (it was given 60s)"
        in (killed_at_own_timeout(_run(tool_runs=[unkilled]))[0])
    )


# --- three planted defects --------------------------------------------------------------------

DELETE_BESIDE_READ = """\
id: delete-beside-read
description: >
  One response asks for a delete and a read: the delete runs alone, the read after it.
turns:
  - user: Delete the sandbox py-worker and list the providers.
    confirm: [yes]
    expect:
      finish: answered
"""


@contextmanager
def _results_in_finish_order() -> Iterator[None]:
    """Planted: the results go back in the order the calls finished."""
    original_tool, original_tools = Agent._run_tool, Agent._run_tools
    finished: list[int] = []

    async def run_tool(self: Agent, index: int, call: ToolCall, outcomes: dict) -> None:  # type: ignore[type-arg]
        await original_tool(self, index, call, outcomes)
        finished.append(index)

    async def run_tools(self: Agent, calls: tuple[ToolCall, ...]) -> None:
        finished.clear()
        await original_tools(self, calls)
        results = self._history[-len(calls) :]
        self._history[-len(calls) :] = [results[index] for index in finished]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Agent, "_run_tool", run_tool)
        patch.setattr(Agent, "_run_tools", run_tools)
        yield


@contextmanager
def _read_joined_to_the_change() -> Iterator[None]:
    """Planted: every call of a response runs in one batch, the delete's too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            agent_module, "call_batches", lambda calls, _b=None: [list(range(len(calls)))]
        )
        yield


@contextmanager
def _timeout_of_the_wrong_tool() -> Iterator[None]:
    """Planted: every call gets `sandbox_create`'s timeout."""
    original = NavToolRunner.__init__

    def init(self: NavToolRunner, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        self._timeout_s = self._create_timeout_s

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(NavToolRunner, "__init__", init)
        yield


async def _record_every_format(path: Path, cassettes: Path) -> None:
    scenario = load_scenario(path)
    for provider in FORMAT_IDS:
        recorded = await record_scenario(
            scenario, provider, cassette_dir=cassettes, target=simulated_target()
        )
        assert recorded.written and recorded.problems == (), recorded.problems


async def _replay_every_format(path: Path, cassettes: Path) -> list[tuple[bool, str]]:
    scenario = load_scenario(path)
    results = [
        await replay_scenario(scenario, provider, cassette_dir=cassettes) for provider in FORMAT_IDS
    ]
    return [(result.passed, "\n".join(result.problems)) for result in results]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("plant", "source", "point", "invariant"),
    [
        (_results_in_finish_order, "parallel-logs", "order=2,1@tool1", "results-in-call-order"),
        (
            _read_joined_to_the_change,
            DELETE_BESIDE_READ,
            "slow-change@tool1",
            "reads-wait-for-changes",
        ),
        (_timeout_of_the_wrong_tool, "parallel-logs", "overtime@tool1", "killed-at-own-timeout"),
    ],
    ids=["results-in-finish-order", "read-joined-to-the-delete", "timeout-of-the-wrong-tool"],
)
def test_a_planted_ordering_defect_is_named_and_its_pinned_reproducer_fails_every_format(
    plant: object, source: str, point: str, invariant: str, tmp_path: Path
) -> None:
    folder, cassettes = tmp_path / "scenarios", tmp_path / "cassettes"
    folder.mkdir()
    text = (ROOT / "scenarios" / f"{source}.yaml").read_text() if "\n" not in source else source
    path = folder / f"{load_scenario_id(text)}.yaml"
    path.write_text(text, encoding="utf-8")
    asyncio.run(_record_every_format(path, cassettes))
    (job,) = plan_replays([load_scenario(path)], ["anthropic"], cassette_dir=cassettes)
    options = SweepOptions(points=(parse_point(point),), invariants=dict(INVARIANTS))

    assert sweep_grid(job, options).violations == []  # today's agent keeps them
    with plant():  # type: ignore[operator]
        grid = sweep_grid(job, options)
    (violation,) = grid.violations
    assert violation.points == (parse_point(point),)
    assert invariant in dict(violation.breaches)
    assert "X" in grid_text(grid)
    printed = reproducer(grid, violation, snapshots=True)
    assert f"[{invariant}]" in printed
    assert f"faults: [{point}]" in printed
    assert f"nav scenario record {path} --sim && nav scenario replay {path}" in printed
    assert "--provider" not in printed.split("as a regression scenario")[1]
    assert f"pytest {path} --snapshot-update" in printed

    path.write_text(pinned_scenario(grid, violation), encoding="utf-8")
    assert load_scenario(path).faults == (point,)
    asyncio.run(_record_every_format(path, cassettes))  # pinned, recorded as printed
    assert asyncio.run(_replay_every_format(path, cassettes)) == [(True, "")] * len(FORMAT_IDS)
    with plant():  # type: ignore[operator]
        replays = asyncio.run(_replay_every_format(path, cassettes))
    for passed, problems in replays:
        assert not passed and f"[{invariant}]" in problems


def load_scenario_id(text: str) -> str:
    return text.split("id:", 1)[1].split()[0]


def test_pinned_faults_are_tool_faults_only() -> None:
    from navagent.fixtures.harness.scenarios._model import Scenario

    with pytest.raises(ValueError, match="provider fault: pin it as a"):
        Scenario(id="a", description="d", turns=({"user": "hi"},), faults=("reset@request1+1",))
    assert FaultPoint("timing", 1, "overtime") == parse_point("overtime@tool1")
