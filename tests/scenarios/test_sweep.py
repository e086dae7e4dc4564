"""The fault sweep: its fault space, its invariants, and that it catches a planted defect."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.core.agent import Agent
from navagent.core.agent_events import TurnFinished, TurnStarted
from navagent.core.events import (
    ChatError,
    MessageComplete,
    StreamError,
    TextDelta,
    TurnEnd,
    Usage,
)
from navagent.core.messages import AssistantMessage, ToolCall
from navagent.fixtures.harness import load_scenario, plan_replays, replay_scenario
from navagent.fixtures.harness.faults._invariants import (
    INVARIANTS,
    PointRun,
    StreamLog,
    load_invariants,
    side_effects_once,
    usage_and_secrets,
    valid_history,
)
from navagent.fixtures.harness.faults._space import (
    REPEATED_FAULTS,
    REQUEST_FAULTS,
    STREAM_FAULTS,
    TOOL_FAULTS,
    FaultPoint,
    FaultSpace,
    cover_kinds,
    parse_point,
)
from navagent.fixtures.harness.record._recorder import record_scenario, simulated_target
from navagent.fixtures.harness.scenarios._transcript import ToolStep, Transcript, TranscriptTurn
from navagent.fixtures.harness.sweep._report import (
    grid_text,
    pinned_scenario,
    reproducer,
    summary_line,
)
from navagent.fixtures.harness.sweep._run import SweepOptions, sweep_grid

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "create-confirmed-delete-declined.yaml"


@st.composite
def _points(draw: st.DrawFn) -> FaultPoint:
    where = draw(st.sampled_from(["request", "stream", "tool"]))
    kinds = {"request": REQUEST_FAULTS, "stream": STREAM_FAULTS, "tool": TOOL_FAULTS}[where]
    after = draw(st.integers(1, 50)) if where == "stream" else 0
    return FaultPoint(where, draw(st.integers(1, 40)), draw(st.sampled_from(kinds)), after)  # type: ignore[arg-type]


@given(_points())
def test_a_point_reads_back_from_its_text(point: FaultPoint) -> None:
    assert parse_point(str(point)) == point


@pytest.mark.parametrize(
    "text", ["reset", "reset@request0+1", "reset@request2", "http-429@request1+2", "hang@request1"]
)
def test_a_malformed_point_says_which_forms_work(text: str) -> None:
    with pytest.raises(ValueError, match="expected KIND@requestN"):
        parse_point(text)


def test_the_space_has_every_fault_at_every_position() -> None:
    space = FaultSpace(deltas=(2, 0), tool_calls=1)
    points = space.points()
    requests = len(REQUEST_FAULTS) - 3 + len(REPEATED_FAULTS)  # the secret ones: not here
    tools = len(TOOL_FAULTS) - 1
    opening = 2  # an error event that opens each response (`+0`)
    assert len(points) == 2 * requests + 2 * len(STREAM_FAULTS) + opening + tools
    assert len(set(points)) == len(points)
    assert all(space.contains(point) for point in points)
    assert not space.contains(FaultPoint("stream", 2, "reset", 1))  # request 2 has no delta
    assert space.contains(FaultPoint("stream", 2, "error-event", 0))
    assert not space.contains(FaultPoint("stream", 1, "reset", 0))  # only an error opens one
    assert not space.contains(FaultPoint("tool", 2, "hang"))


def _kind(point: FaultPoint) -> tuple[str, int, bool]:
    """What `cover_kinds` counts as one kind: `http-529*6` and an opening error are their own."""
    return (point.kind, point.times, point.where == "stream" and point.after == 0)


def test_a_small_budget_tries_each_fault_kind_before_sampling() -> None:
    points = FaultSpace(deltas=(9, 12, 7), tool_calls=2).points()
    kinds = {_kind(point) for point in points}
    assert ("http-529", 6, False) in kinds and ("http-529", 1, False) in kinds
    assert ("error-event", 1, True) in kinds and ("error-event", 1, False) in kinds
    # Every kind, once, when the budget allows; hypothesis gets what is left.
    covered = cover_kinds(points, 100, seed=0, label="s[openai]")
    assert sorted(map(_kind, covered)) == sorted(kinds)
    assert all(point in points for point in covered)
    assert cover_kinds(points, 100, seed=0, label="s[openai]") == covered  # seeded
    # A budget smaller than the kinds: each grid starts elsewhere, so a sweep's grids
    # share every kind out between them (a 401 is drawn, not only stream faults).
    drawn = {
        _kind(point)
        for label in (f"scenario-{n}[openai]" for n in range(80))
        for point in cover_kinds(points, 5, seed=0, label=label)
    }
    assert drawn == kinds
    assert cover_kinds(points, 0, seed=0, label="s") == []
    assert cover_kinds([], 5, seed=0, label="s") == []


def _run(transcript: Transcript | None = None, **fields: object) -> PointRun:
    return PointRun(scenario="s", provider="anthropic", point=None, transcript=transcript, **fields)  # type: ignore[arg-type]


def test_a_side_effect_repeated_by_a_fault_is_a_violation() -> None:
    delete = ("nav", "--cluster", "demo", "sandbox", "delete", "dev-box")
    baseline = _run(runs=[delete])
    assert side_effects_once(_run(runs=[delete], baseline=baseline)) == []
    found = side_effects_once(_run(runs=[delete, delete], baseline=baseline))
    assert found and "ran 2 times" in found[0]
    reads = ("nav", "--cluster", "demo", "sandbox", "list")
    assert side_effects_once(_run(runs=[reads, reads], baseline=_run(runs=[reads]))) == []


def test_a_side_effect_without_its_confirmation_is_a_violation() -> None:
    step = ToolStep(id="c", name="sandbox_delete", arguments={}, status="ok", confirmed=None)
    transcript = Transcript(
        scenario="s", provider="anthropic", turns=(TranscriptTurn(user="u", steps=(step,)),)
    )
    assert "without its confirmation" in side_effects_once(_run(transcript))[0]
    confirmed = transcript.model_copy(
        update={
            "turns": (
                TranscriptTurn(user="u", steps=(step.model_copy(update={"confirmed": True}),)),
            )
        }
    )
    assert side_effects_once(_run(confirmed)) == []


def test_a_dangling_tool_call_is_refused_by_every_format() -> None:
    dangling = AssistantMessage(
        content="", tool_calls=(ToolCall(id="call_1", name="sandbox_list", arguments="{}"),)
    )
    found = valid_history(_run(history=(dangling,)))
    assert any("tool-call rule" in problem for problem in found)
    refused = {problem.split()[0] for problem in found if "refuses the next turn" in problem}
    assert refused == {"openai", "openai-responses", "anthropic"}


def _job() -> object:
    (job,) = plan_replays([load_scenario(SCENARIO)], ["anthropic"])
    return job


def test_a_small_sweep_of_todays_agent_is_clean() -> None:
    job = _job()
    grid = sweep_grid(job, SweepOptions(budget=4, seed=1, invariants=dict(INVARIANTS)))  # type: ignore[arg-type]
    assert grid.error == ""
    assert grid.space is not None and grid.space.tool_calls == 3
    assert len(grid.results) == 9  # the baseline, four sampled points, the four secret ones
    assert grid.violations == []
    text = grid_text(grid)
    assert "a point of each fault kind, then sampled by hypothesis, seed 1" in text
    assert summary_line([grid]).startswith("sweep: 1 scenario x format, 8 points, 0 violations")


def _leaky_complete(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plants a defect: a failed completion leaves the tool call it had started, unanswered."""
    original = Agent._complete

    async def leaky(self: Agent) -> object:
        result = await original(self)
        if isinstance(result, ChatError):
            call = ToolCall(id="toolu_lost", name="sandbox_list", arguments="{}")
            self._append(AssistantMessage(content="", tool_calls=(call,)))
        return result

    monkeypatch.setattr(Agent, "_complete", leaky)


@pytest.mark.slow
def test_the_sweep_catches_a_planted_unanswered_call_and_its_reproducer_fails_a_replay(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _leaky_complete(monkeypatch)
    point = parse_point("reset@request2+1")  # turn 1's answer breaks after one delta
    job = _job()
    grid = sweep_grid(job, SweepOptions(points=(point,), invariants=dict(INVARIANTS)))  # type: ignore[arg-type]
    (violation,) = grid.violations
    assert "valid-history" in dict(violation.breaches)
    printed = reproducer(grid, violation)
    assert "[sim-fault: reset after=1 step=2]" in printed
    assert "--point reset@request2+1" in printed
    assert "[valid-history]" in printed

    folder = tmp_path / "scenarios"
    folder.mkdir()
    pinned = folder / SCENARIO.name
    pinned.write_text(pinned_scenario(grid, violation), encoding="utf-8")
    scenario = load_scenario(pinned)
    cassettes = tmp_path / "cassettes"

    async def record_and_replay() -> tuple[tuple[str, ...], bool]:
        recorded = await record_scenario(
            scenario, "anthropic", cassette_dir=cassettes, target=simulated_target(), force=True
        )
        replayed = await replay_scenario(scenario, "anthropic", cassette_dir=cassettes)
        return recorded.problems, replayed.passed

    problems, passed = asyncio.run(record_and_replay())
    assert problems and not passed  # with the defect, the pinned scenario fails
    monkeypatch.undo()
    problems, passed = asyncio.run(record_and_replay())
    assert problems == () and passed  # without it, the same file records and replays


def test_nav_scenario_sweep_runs_one_point_and_refuses_a_bad_one() -> None:
    runner = CliRunner()
    result = runner.invoke(
        app,
        ["scenario", "sweep", str(SCENARIO), "--provider", "anthropic", "--point", "hang@tool1"],
    )
    assert result.exit_code == 0, result.output
    assert "1 of" in result.output and "0 violations" in result.output
    bad = runner.invoke(
        app, ["scenario", "sweep", str(SCENARIO), "--provider", "anthropic", "--point", "x@y"]
    )
    assert bad.exit_code == 2
    assert "bad fault point 'x@y'" in bad.output
    outside = runner.invoke(
        app,
        ["scenario", "sweep", str(SCENARIO), "--provider", "anthropic", "--point", "hang@tool9"],
    )
    assert outside.exit_code == 1
    assert "not a position of this replay: hang@tool9" in outside.output
    assert "3 tool calls" in outside.output


def test_text_shown_before_a_failure_must_be_marked_partial() -> None:
    failed = [
        TurnStarted(text="hi"),
        TextDelta(text="You have 3 sand"),
        StreamError(error=ChatError(message="broke", code="upstream_unavailable")),
    ]
    unmarked = TurnFinished(reason="error", message="broke")
    found = usage_and_secrets(_run(events=[*failed, unmarked]))
    assert found and "not mark that text as partial" in found[0]
    marked = unmarked.model_copy(update={"partial": True})
    assert usage_and_secrets(_run(events=[*failed, marked])) == []


def test_usage_twice_and_a_leaked_key_are_violations() -> None:
    end = TurnEnd(finish_reason="stop", usage=Usage(input_tokens=3, output_tokens=2))
    done = MessageComplete(message=AssistantMessage(content="ok"))
    found = usage_and_secrets(
        _run(streams=[StreamLog(events=[end, end, done])], secret="sk-x", outputs=["a sk-x b"])
    )
    assert any("usage 2 times" in problem for problem in found)
    assert any("API key appears" in problem for problem in found)
    assert usage_and_secrets(_run(streams=[StreamLog(events=[end, done])], secret="sk-x")) == []


def test_a_team_invariant_loads_from_its_name_and_a_bad_name_is_refused() -> None:
    found = load_invariants(["navagent.fixtures.harness.faults._invariants:one_outcome"])
    assert found["one-outcome"] is INVARIANTS["one-outcome"]
    with pytest.raises(ValueError, match="not `module:function`"):
        load_invariants(["no_colon"])
    with pytest.raises(ValueError, match="cannot load"):
        load_invariants(["navagent.nowhere:thing"])


@pytest.mark.slow
def test_pytest_nav_sweep_makes_one_item_per_format_and_fails_with_the_reproducer(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml(
        "[tool.pytest.ini_options]\n"
        'asyncio_default_fixture_loop_scope = "function"\n'
        'nav_formats = ["anthropic"]\n'
        'nav_sweep_invariants = ["tests_team_invariant:never_error"]\n'
    )
    pytester.makepyfile(
        tests_team_invariant=(
            "def never_error(run):\n"
            "    turns = run.transcript.turns if run.transcript else ()\n"
            "    return ['a turn failed'] if any(t.finish == 'error' for t in turns) else []\n"
        )
    )
    pytester.syspathinsert()
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / SCENARIO.name).write_bytes(SCENARIO.read_bytes())
    cassette = pytester.path / "cassettes" / "anthropic" / SCENARIO.name
    cassette.parent.mkdir(parents=True)
    cassette.write_bytes((ROOT / "cassettes" / "anthropic" / SCENARIO.name).read_bytes())
    collected = pytester.runpytest("--nav-sweep", "--collect-only", "-q", "-p", "no:xdist")
    collected.stdout.fnmatch_lines(["*create-confirmed-delete-declined.yaml::anthropic-sweep"])
    result = pytester.runpytest(
        "--nav-sweep",
        "--nav-sweep-budget",
        "50",
        "-p",
        "no:xdist",
        "-k",
        "anthropic",
        "-o",
        "addopts=",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*[[]never-error[]] a turn failed*", "*replay this point*"])


EVERY_KIND = (
    *(f"{kind}@request2" for kind in REQUEST_FAULTS),
    *(f"{kind}@request2+1" for kind in STREAM_FAULTS),
    *(f"{kind}@tool1" for kind in TOOL_FAULTS),
)
"""Every fault class at every kind of position (a request, a response's delta, a tool call)."""


TIMING_KINDS = ("order=2,1@tool1", "overtime@tool1", "overtime@tool2", "slow-change@tool1")
"""Every timing fault, where a delete and a read share a response."""


def test_no_point_waits_in_real_time_yet_every_deadline_fires() -> None:
    points = tuple(parse_point(text) for text in EVERY_KIND)
    options = SweepOptions(points=points, budget=len(points), invariants=dict(INVARIANTS))
    grid = sweep_grid(_job(), options)  # type: ignore[arg-type]
    (timing_job,) = plan_replays(
        [load_scenario(ROOT / "scenarios" / "delete-beside-read.yaml")], ["openai"]
    )
    timing = sweep_grid(
        timing_job,
        SweepOptions(points=tuple(map(parse_point, TIMING_KINDS)), invariants=dict(INVARIANTS)),
    )
    assert grid.error == "" and timing.error == ""
    results = {str(result.points[0]): result for result in grid.results[1:] + timing.results[1:]}
    assert set(results) == {*EVERY_KIND, *TIMING_KINDS}
    for text, result in results.items():
        # Generous (a busy machine stretches wall time), yet a real 5 s wait breaks it.
        assert result.wall_s < 10 * result.cpu_s + 0.5, (
            f"{text} waited: {result.wall_s:.2f}s wall for {result.cpu_s:.2f}s CPU"
        )
    # The deadlines still ended the waits, on the clock: the gateway's first-token and
    # idle timeouts (5 s each) and the tool's own timeout (30 s) all passed, skipped.
    assert "timeout" in results["no-first-byte@request2"].outcome
    assert "timeout" in results["stall@request2+1"].outcome
    assert results["hang@tool1"].outcome == "ok"  # the model is told, and answers
    assert grid.skipped_s > 5 + 5 + 30 - 1
    assert results["overtime@tool1"].outcome == "ok"  # killed at its own 30 s, skipped
    assert timing.skipped_s > 30
    assert grid.violations == [] and timing.violations == []


@pytest.mark.parametrize(
    ("provider", "point"),
    [("openai", "unknown-event@request2+6"), ("gemini", "unknown-event@request2+4")],
)
def test_a_fault_that_lets_a_stalled_recording_go_on_still_stalls(
    provider: str, point: str
) -> None:
    """A recording that stalled (`end: silent`) keeps its stall after a fault that lets the
    body go on: ended early instead, the turn broke as upstream_unavailable, which the fault
    contract rightly refused (a skipped unknown event must change nothing)."""
    scenario = load_scenario(ROOT / "scenarios" / "provider-stall.yaml")
    (job,) = plan_replays([scenario], [provider])
    options = SweepOptions(points=(parse_point(point),), invariants=dict(INVARIANTS))
    grid = sweep_grid(job, options)
    assert grid.violations == []
    assert [result.outcome for result in grid.results] == ["baseline", "ok"]
