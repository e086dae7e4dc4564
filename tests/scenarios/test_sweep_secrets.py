"""The sweep's `secret` fault: credentials in tool output and model text, none in what was written.

Each test plants a defect of the class (one write path that skips the
redaction) and shows the sweep's `secrets-never-written` invariant fails on
it, naming the point, the artifact and the kind, never the value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from navagent.core import redaction
from navagent.fixtures.harness import load_scenario, plan_replays
from navagent.fixtures.harness.cassettes._body_redaction import redact_body_bytes
from navagent.fixtures.harness.cassettes._cassette import load_cassette
from navagent.fixtures.harness.faults import _invariants
from navagent.fixtures.harness.faults._invariants import INVARIANTS
from navagent.fixtures.harness.faults._secrets import PlantedSecret, plant, written_leaks
from navagent.fixtures.harness.faults._space import FaultSpace, parse_point
from navagent.fixtures.harness.sweep._run import GridResult, SweepOptions, sweep_grid

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "create-confirmed-delete-declined.yaml"
TOOL = parse_point("secret@tool1")
"""Credentials in the first tool call's stdout and stderr."""
ERROR = parse_point("secret-error@request1")
"""The first request refused (400, every attempt) with a message quoting credentials."""


def _sweep(*texts: str, provider: str = "anthropic") -> GridResult:
    (job,) = plan_replays([load_scenario(SCENARIO)], [provider])
    points = tuple(parse_point(text) for text in texts)
    return sweep_grid(job, SweepOptions(points=points, invariants=dict(INVARIANTS)))


def _answer_point(provider: str = "anthropic", kind: str = "secret") -> str:
    """`secret@requestN` for the scenario's last request (its last turn's answer)."""
    (job,) = plan_replays([load_scenario(SCENARIO)], [provider])
    return f"{kind}@request{len(load_cassette(job.cassette).requests)}"


def _breaches(grid: GridResult) -> list[str]:
    return [text for result in grid.violations for name, text in result.breaches]


def _scanned(monkeypatch: pytest.MonkeyPatch) -> list[Mapping[str, str]]:
    """Every artifact set the invariant scanned (a spy on the scan)."""
    seen: list[Mapping[str, str]] = []

    def spy(
        artifacts: Mapping[str, str], planted: Sequence[PlantedSecret], **options: bool
    ) -> list[str]:
        seen.append(dict(artifacts))
        return written_leaks(artifacts, planted, **options)

    monkeypatch.setattr(_invariants, "written_leaks", spy)
    return seen


def test_the_secret_points_run_on_every_budget_and_are_not_sampled() -> None:
    space = FaultSpace(deltas=(3, 5), tool_calls=2)
    assert [str(p) for p in space.secret_points()] == [
        "secret@tool1",
        "secret@request2",
        "secret-cut@request2",
        "secret-error@request1",
    ]
    assert all(not point.kind.startswith("secret") for point in space.points())
    assert FaultSpace(deltas=(4,), tool_calls=0).secret_points() == [
        parse_point("secret@request1"),
        parse_point("secret-cut@request1"),
        parse_point("secret-error@request1"),
    ]


def test_planted_credentials_are_ones_the_redaction_masks_and_the_scan_finds() -> None:
    planted = plant(7)
    assert len({secret.kind for secret in planted}) == len(planted) >= 5
    text = "\n".join(secret.text for secret in planted)
    assert written_leaks({"x": redaction.redact(text)}, planted) == []
    (leaks,) = written_leaks({"a log": text}, planted)  # one line an artifact
    assert leaks.startswith("a log line 1 holds a planted credential (")
    assert leaks.endswith(f"; and {len(planted) - 3} more")
    for secret in planted:  # a finding never shows the value
        assert not any(part in leaks for part in secret.parts)


def test_a_fragment_counts_only_in_text_the_stack_alone_handled() -> None:
    planted = plant(7)
    keyword = next(s for s in planted if s.kind == "a secret assigned to a keyword")
    # The simulated model quoting a tool's line cut at a table column: not a credential
    # any more (the keyword is gone), and the redaction promises nothing for it.
    mangled = f"py-worker (Provisioning), [1772644940.1 (ASSWORD={keyword.parts[0]})"
    assert written_leaks({"turns": mangled}, planted, fragments=False) == []
    # The same in the model's planted answer or an error: only the stack handled that text.
    (leak,) = written_leaks({"turns": mangled}, planted)
    assert "a planted credential (a secret assigned to a keyword)" in leak
    whole = f"[env] {keyword.text}"  # as the tool printed it: found either way
    assert written_leaks({"turns": whole}, planted, fragments=False)


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_todays_stack_writes_no_planted_credential_anywhere(
    monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    seen = _scanned(monkeypatch)
    grid = _sweep(str(TOOL), provider=provider)
    grid.results += _sweep(_answer_point(provider), provider=provider).results
    cut = _sweep(_answer_point(provider, "secret-cut"), provider=provider).results
    grid.results += cut + _sweep(str(ERROR), provider=provider).results
    assert _breaches(grid) == []
    assert cut[-1].outcome.endswith(": timeout/timeout")  # stalled inside the first key
    assert grid.results[-1].outcome == "turn 1: error/invalid_request"  # the error reached it
    tool_run, answer_run, cut_run, error_run = seen
    assert "[redacted]" in cut_run["capture provider.yaml"]
    for artifacts in seen:  # the run recorded what `nav agent` writes
        names = set(artifacts)
        assert {"capture provider.yaml", "capture turns.jsonl", "capture meta.json"} <= names
        assert {"sessions.db", "log lines", "error texts"} <= names
    assert "capture tools.jsonl" in tool_run and "[redacted]" in tool_run["capture tools.jsonl"]
    assert "[redacted]" in answer_run["capture provider.yaml"]
    assert "[redacted]" in answer_run["sessions.db"]
    assert "quotes credentials" in error_run["error texts"]


def _identity(text: Any, *args: Any, **kwargs: Any) -> Any:
    return text


def _cut_only(text: str, limit: int) -> str:
    """An error text shortened but not redacted."""
    return text[:limit]


def _body_never_cut(body: Any, **kwargs: Any) -> Any:
    """A recorded body redacted as if it had ended, whatever stopped it."""
    return redact_body_bytes(body)


def _pieces_one_by_one(pieces: list[str], **kwargs: Any) -> list[str]:
    """A streamed answer redacted piece by piece: a credential cut across deltas survives."""
    return [redaction.redact(piece) for piece in pieces]


DEFECTS: dict[str, tuple[str, Callable[..., Any], str, str]] = {
    # name: (what to patch, the defect, the point, the artifact the breach names)
    "tool log unredacted": (
        "navagent.fixtures.harness.cassettes._tool_cassette.redact_json",
        _identity,
        "tool",
        "capture tools.jsonl",
    ),
    "sessions.db unredacted": (
        "navagent.core.sessions.redact_json_text",
        _identity,
        "tool",
        "sessions.db",
    ),
    "captured turns unredacted": (
        "navagent.fixtures.harness.record._capture.redact_json",
        _identity,
        "answer",
        "capture turns.jsonl",
    ),
    "split credential in a stream": (
        "navagent.fixtures.harness.cassettes._body_redaction.redact_pieces",
        _pieces_one_by_one,
        "answer",
        "capture provider.yaml",
    ),
    "recorded request bodies unredacted": (
        "navagent.fixtures.harness.cassettes._cassette.redact_body_bytes",
        _identity,
        "tool",
        "capture provider.yaml",
    ),
    "a body cut inside a credential redacted as whole": (
        "navagent.fixtures.harness.cassettes._cassette.redact_body_bytes",
        _body_never_cut,
        "cut",
        "capture provider.yaml",
    ),
    "clipped error text unredacted": (
        "navagent.gateway.errors.clip",
        _cut_only,
        "error",
        "error texts",
    ),
}


@pytest.mark.parametrize("defect", DEFECTS, ids=list(DEFECTS))
def test_a_write_path_that_skips_redaction_fails_the_sweep_naming_the_artifact(
    monkeypatch: pytest.MonkeyPatch, defect: str
) -> None:
    target, replacement, where, artifact = DEFECTS[defect]
    point = {"tool": str(TOOL), "error": str(ERROR), "cut": _answer_point(kind="secret-cut")}.get(
        where
    ) or _answer_point()
    monkeypatch.setattr(target, replacement)
    breaches = _breaches(_sweep(point))
    leaks = [text for text in breaches if text.startswith(f"{point}: {artifact} line ")]
    assert leaks, breaches
    assert "planted credential" in leaks[0]
    assert "characters, sha256 " in leaks[0]
    for secret in plant(0):  # never the value
        assert not any(part in text for text in breaches for part in secret.parts)
