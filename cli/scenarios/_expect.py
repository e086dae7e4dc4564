"""Checking a scenario's expectations against a replayed transcript.

Each check returns sentences, one per unmet expectation, that start with the
turn number and say what was expected and what happened, so the first one
alone is a usable one-line failure reason.
"""

from __future__ import annotations

from typing import Any

from navagent.cli.scenarios._model import Provider, Scenario, ToolExpect, Turn, TurnExpect
from navagent.cli.scenarios._transcript import (
    ToolStep,
    Transcript,
    TranscriptTurn,
    render_arguments,
)

__all__ = ["check_transcript", "check_turn"]

_SHOWN = 100


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= _SHOWN else flat[: _SHOWN - 3] + "...")


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def _call(name: str, arguments: dict[str, Any] | str | None) -> str:
    return name if arguments is None else f"{name} {render_arguments(arguments)}"


def _argument_problem(expected: ToolExpect, actual: ToolStep) -> str | None:
    if expected.arguments is None:
        return None
    if not isinstance(actual.arguments, dict):
        return f"arguments are not a JSON object: {actual.arguments!r}"
    if expected.match == "exact":
        if actual.arguments != expected.arguments:
            return (
                f"arguments {render_arguments(actual.arguments)},"
                f" expected exactly {render_arguments(expected.arguments)}"
            )
        return None
    for key, value in expected.arguments.items():
        if key not in actual.arguments:
            return f"argument {key!r} is missing (got {render_arguments(actual.arguments)})"
        if actual.arguments[key] != value:
            return f"argument {key!r} is {actual.arguments[key]!r}, expected {value!r}"
    return None


def _tool_problems(expected: tuple[ToolExpect, ...], actual: tuple[ToolStep, ...]) -> list[str]:
    wanted = ", ".join(_call(tool.name, tool.arguments) for tool in expected) or "none"
    made = ", ".join(_call(tool.name, tool.arguments) for tool in actual) or "none"
    if [tool.name for tool in expected] != [tool.name for tool in actual]:
        return [f"expected tool calls [{wanted}], got [{made}]"]
    problems = []
    for index, (want, got) in enumerate(zip(expected, actual, strict=True), start=1):
        problem = _argument_problem(want, got)
        if problem is not None:
            problems.append(f"tool call {index} ({got.name}): {problem}")
        if want.status is not None and got.status != want.status:
            problems.append(
                f"tool call {index} ({got.name}) ended {got.status!r}, expected {want.status!r}"
            )
    return problems


def _outcome_problems(expect: TurnExpect, turn: TranscriptTurn) -> list[str]:
    problems = []
    if expect.error is None and turn.error is not None:
        problems.append(
            f"failed unexpectedly ({turn.error.code}): {_first_line(turn.error.message)}"
        )
    elif expect.error is not None:
        codes = " or ".join(expect.error)
        if turn.error is None:
            problems.append(f"expected the turn to fail with {codes}, but it ended {turn.finish!r}")
        elif turn.error.code not in expect.error:
            reason = _first_line(turn.error.message)
            problems.append(f"failed with {turn.error.code} ({reason}), expected {codes}")
    if expect.finish is not None and turn.finish != expect.finish:
        problems.append(f"ended {turn.finish!r}, expected {expect.finish!r}")
    return problems


def check_turn(spec: Turn, turn: TranscriptTurn, *, provider: Provider, number: int) -> list[str]:
    """Every unmet expectation of one turn, as `turn N: ...` sentences."""
    expect = spec.expect
    problems = _outcome_problems(expect, turn)
    if expect.tools is not None:
        problems += _tool_problems(expect.tools, turn.tools)
    if expect.answer is not None:
        problems += [
            f"the answer does not contain {text!r}: {_clip(turn.answer)}"
            for text in expect.answer.contains
            if text not in turn.answer
        ]
        problems += [
            f"the answer contains {text!r}: {_clip(turn.answer)}"
            for text in expect.answer.not_contains
            if text in turn.answer
        ]
    if expect.compacted is not None and turn.compacted != expect.compacted:
        problems.append(
            "expected the context to be compacted" if expect.compacted else "compacted unexpectedly"
        )
    if expect.thinking is not None:
        wanted = provider in expect.thinking
        if turn.thinking != wanted:
            problems.append(
                f"expected reasoning from {provider}"
                if wanted
                else f"unexpected reasoning from {provider}"
            )
    if expect.cached is not None:
        wanted = provider in expect.cached
        read = turn.usage.cache_read_tokens
        if wanted and not (read and "cached" in turn.usage_line):
            problems.append(f"expected {provider} to report tokens read from the prompt cache")
        elif not wanted and read:
            problems.append(f"unexpected prompt-cache reads ({read:,} tokens) from {provider}")
    if turn.confirmations_asked != len(spec.confirm):
        problems.append(
            f"`confirm` gives {len(spec.confirm)} answer(s), but the agent asked"
            f" {turn.confirmations_asked} time(s)"
        )
    return [f"turn {number}: {problem}" for problem in problems]


def check_transcript(scenario: Scenario, transcript: Transcript, provider: Provider) -> list[str]:
    """Every unmet expectation of the whole conversation, in turn order."""
    problems: list[str] = []
    for number, spec in enumerate(scenario.turns, start=1):
        if number > len(transcript.turns):
            problems.append(f"turn {number}: never ran")
            continue
        problems += check_turn(spec, transcript.turns[number - 1], provider=provider, number=number)
    return problems
