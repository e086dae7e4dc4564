"""The capture a `secret` run writes holds the whole conversation (issue 42).

`r3-capture-loses-interaction` (bench/planted_defects.toml) appended each
turn's provider interactions but the first, and `r3-capture-cancel-point-last-step`
kept a cancelled turn's cancel point at its last text's length, so a captured
session could no longer become the scenario it was. The sweep wrote that capture
and scanned it for credentials, never for what it should hold: the
`capture-complete` invariant counts its interactions, tool-log lines and turn
lines against the run's, and holds each cancel point to the characters the run
showed (`text-beside-calls` now cancels in its second completion's answer).
"""

from __future__ import annotations

import pytest

from navagent.fixtures.harness import load_scenario, plan_replays
from navagent.fixtures.harness.faults._invariants import INVARIANTS, PointRun, capture_complete
from navagent.fixtures.harness.faults._space import parse_point
from navagent.fixtures.harness.record import _capture
from navagent.fixtures.harness.sweep._run import SweepOptions, sweep_grid
from tests.scenarios.test_planted_paths import plant
from tests.scenarios.test_sweep_secrets import ROOT, TOOL, _breaches, _sweep


def test_todays_capture_holds_every_attempt_command_and_turn() -> None:
    grid = _sweep(str(TOOL), provider="openai")
    assert grid.violations == []
    assert capture_complete(PointRun("s", "openai", None, None, artifacts={"x": ""})) == []


def test_a_capture_that_loses_an_interaction_fails_the_sweep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plant(monkeypatch, "r3-capture-loses-interaction", _capture.SessionCapture, "_save")

    breaches = _breaches(_sweep(str(TOOL)))

    # Each of the scenario's three turns lost its first interaction: three of six kept.
    assert "the capture holds 3 provider interactions, the run had 6" in breaches


def test_a_capture_that_drops_a_turn_line_fails_the_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another defect of the class: the first turn's line is never written."""
    end_turn = _capture.SessionCapture.end_turn
    ended: list[int] = []

    async def skips_the_first(self: _capture.SessionCapture, **options: object) -> None:
        ended.append(1)
        if len(ended) > 1:
            await end_turn(self, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(_capture.SessionCapture, "end_turn", skips_the_first)
    breaches = _breaches(_sweep(str(TOOL)))

    assert "the capture holds 2 turn lines, the run had 3" in breaches


def _sweep_text_beside_calls() -> list[str]:
    scenario = load_scenario(ROOT / "scenarios" / "text-beside-calls.yaml")
    (job,) = plan_replays([scenario], ["anthropic"])
    options = SweepOptions(points=(parse_point("secret@tool1"),), invariants=dict(INVARIANTS))
    return _breaches(sweep_grid(job, options))


def test_a_capture_that_keeps_the_wrong_cancel_point_fails_the_sweep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`r3-capture-cancel-point-last-step`: the cancel point counted only the last text."""
    assert _sweep_text_beside_calls() == []

    plant(
        monkeypatch, "r3-capture-cancel-point-last-step", _capture.SessionCapture, "_cancel_point"
    )
    breaches = _sweep_text_beside_calls()

    assert any(
        text.startswith("the capture keeps turn 2's cancel at ")
        and text.endswith("the run cancelled it after 50 characters of answer text")
        for text in breaches
    ), breaches
