"""What a person does mid-conversation, replayed, each step failing on a planted defect (issue 42).

`/retry` (`retry: true`), a cancel mid-answer (`cancel:`), a session a crash
or an older version left damaged (`damage:` before `resume:`), and a model
that sends malformed or wrong tool arguments (scripted `raw_arguments`).
Each defect is planted as a patched copy of the function it lives in (the
sampled mutants of issue 42 among them) and the committed scenario's replay
must fail on it, naming the turn and what differs; the steps themselves are
checked when the scenario loads.
"""

from __future__ import annotations
import __future__

import inspect
import shutil
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import ValidationError

from navagent.core import _tool_args, agent, history, private_files, sessions, tools
from navagent.fixtures.harness import SimulatedCluster, load_scenario, plan_replays, replay_scenario
from navagent.fixtures.harness.faults._invariants import INVARIANTS
from navagent.fixtures.harness.faults._space import parse_point
from navagent.fixtures.harness.scenarios._model import Scenario
from navagent.fixtures.harness.sweep._run import SweepOptions, sweep_grid

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"


def plant(
    monkeypatch: pytest.MonkeyPatch,
    owner: type | ModuleType,
    name: str,
    old: str,
    new: str,
    *,
    into: ModuleType | None = None,
) -> None:
    """Plant a defect: `owner.name` recompiled from its source with `old` made `new`.

    `into`: the module that imported the function by name (it is replaced there).
    """
    function = inspect.unwrap(getattr(owner, name))
    source = textwrap.dedent(inspect.getsource(function))
    assert source.count(old) == 1, f"{old!r} is not once in {name}"
    code = compile(
        source.replace(old, new),
        f"<planted {name}>",
        "exec",
        flags=__future__.annotations.compiler_flag,
        dont_inherit=True,
    )
    scope: dict[str, Any] = {}
    exec(code, function.__globals__, scope)  # the module's own globals, as the original's
    monkeypatch.setattr(into or owner, name, scope[name])


async def _replay(name: str, provider: str, cluster: SimulatedCluster) -> list[str]:
    result = await replay_scenario(
        load_scenario(SCENARIOS / f"{name}.yaml"), provider, cluster=cluster
    )
    return list(result.problems)


def _found(problems: list[str], wanted: str) -> bool:
    return any(wanted in problem for problem in problems)


# --- the steps, checked at load ----------------------------------------------------------


def _scenario(**turns: Any) -> dict[str, Any]:
    return {"id": "x", "description": "x", **turns}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            _scenario(turns=[{"user": "Hi."}, {"user": "Hello.", "retry": True}]),
            "turns[1].retry: /retry sends the previous turn's message again, so `user` must"
            " repeat it: 'Hi.'",
        ),
        (
            _scenario(turns=[{"user": "Hi.", "retry": True}]),
            "turns[0].retry: there is no earlier turn to take back",
        ),
        (
            _scenario(turns=[{"user": "Hi."}, {"user": "Hi.", "damage": {"lose": 1}}]),
            "`damage` acts on the saved session before a `resume` that quits the agent",
        ),
        (
            _scenario(turns=[{"user": "Hi.", "resume": True, "damage": {}}]),
            "`damage` needs `lose: N` (N >= 1), `tear: true`, `loose: true` or `edit:`",
        ),
        (
            _scenario(turns=[{"user": "Hi.", "cancel": {"after_chars": 0}}]),
            "greater than or equal to 1",
        ),
        (
            _scenario(
                turns=[
                    {
                        "user": "Hi.",
                        "script": [{"calls": [{"name": "sandbox_get", "raw_arguments": "{"}]}],
                    }
                ]
            ),
            "turns[0].script: `raw_arguments` cannot be sent on anthropic, gemini",
        ),
        (
            _scenario(
                turns=[
                    {
                        "user": "Hi.",
                        "script": [
                            {
                                "calls": [
                                    {
                                        "name": "sandbox_get",
                                        "arguments": {"a": 1},
                                        "raw_arguments": "{",
                                    }
                                ]
                            }
                        ],
                    }
                ]
            ),
            "give `arguments` (and `pasted`) or `raw_arguments`, not both",
        ),
    ],
)
def test_a_misused_step_is_refused_at_load(document: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as error:
        Scenario.model_validate(document)
    assert message in str(error.value)


def test_malformed_arguments_load_where_the_api_passes_them_on() -> None:
    document = _scenario(
        formats=["openai", "openai-responses"],
        turns=[
            {"user": "Hi.", "script": [{"calls": [{"name": "sandbox_get", "raw_arguments": "{"}]}]}
        ],
    )
    assert Scenario.model_validate(document).turns[0].script[0].calls[0].raw_arguments == "{"


# --- /retry: the rewind the saved session takes ------------------------------------------

REWINDS = {
    # issue 42's sampled survivor (core/agent.py:365): how many messages /retry takes back
    # after a resume, `-` made `<<`; then the same count off by one
    "shifted count": (
        agent.Agent,
        "_last_user_turn",
        "len(self._history) - index",
        "len(self._history) << index",
        5,
    ),
    "one too many": (
        agent.Agent,
        "_last_user_turn",
        "len(self._history) - index",
        "len(self._history) - index + 1",
        5,
    ),
    "recorder not told": (
        agent.Agent,
        "undo_last_turn",
        "if self._recorder is not None and recorded:",
        "if False:",
        2,
    ),
    "store rewinds one fewer": (
        sessions.SessionStore,
        "_rewind",
        "first = seqs[-min(messages, len(seqs))]",
        "first = seqs[-min(messages - 1, len(seqs))]",
        2,
    ),
}


@pytest.mark.parametrize("defect", REWINDS)
async def test_a_rewind_of_the_wrong_size_fails_the_replay(
    defect: str, monkeypatch: pytest.MonkeyPatch, cluster: SimulatedCluster
) -> None:
    owner, name, old, new, turn = REWINDS[defect]
    assert not await _replay("retry-and-cancel", "openai", cluster)  # clean, it passes
    plant(monkeypatch, owner, name, old, new)
    problems = await _replay("retry-and-cancel", "openai", cluster)
    assert _found(problems, f"[session-in-sync] after turn {turn} the saved session reloads to"), (
        problems
    )


# --- a cancel mid-answer -----------------------------------------------------------------


async def test_a_cancel_keeps_exactly_the_shown_text_marked(cluster: SimulatedCluster) -> None:
    result = await replay_scenario(
        load_scenario(SCENARIOS / "retry-and-cancel.yaml"), "anthropic", cluster=cluster
    )
    assert result.passed, result.report
    assert result.transcript is not None
    cancelled = result.transcript.turns[2]
    assert (cancelled.finish, cancelled.answer) == ("cancelled", "")
    assert [step.model_dump()["text"] for step in cancelled.steps] == [
        "I am the sim"
    ]  # 12 characters


CANCELS: dict[str, tuple[Any, ...]] = {
    "partial text not marked": (
        "content=partial + INTERRUPTED_MARK",
        "content=partial",
        'messages[6].content: "I am the sim\\n\\n[interrupted by the user]" -> "I am the sim"',
    ),
    "partial text dropped": (
        "if partial.strip():",
        "if False:",
        'messages[6].role: "assistant" -> "user"',
    ),
}


@pytest.mark.parametrize("defect", CANCELS)
async def test_a_cancel_that_loses_the_shown_text_fails_the_next_request(
    defect: str, monkeypatch: pytest.MonkeyPatch, cluster: SimulatedCluster
) -> None:
    old, new, wanted = CANCELS[defect]
    plant(monkeypatch, agent.Agent, "_complete", old, new)
    problems = await _replay("retry-and-cancel", "openai", cluster)
    assert _found(
        problems, f"request 6 (POST /v1/chat/completions) differs from the cassette: {wanted}"
    ), problems


async def test_a_cancel_reported_as_an_error_fails_the_turn(
    monkeypatch: pytest.MonkeyPatch, cluster: SimulatedCluster
) -> None:
    plant(monkeypatch, agent.Agent, "run_turn", 'reason="cancelled",', 'reason="error",')
    problems = await _replay("retry-and-cancel", "openai", cluster)
    assert _found(problems, "turn 3: ended 'error', expected 'cancelled'"), problems


# --- a damaged session, resumed ----------------------------------------------------------


async def test_a_session_without_repair_on_load_fails_the_resume(
    monkeypatch: pytest.MonkeyPatch, cluster: SimulatedCluster
) -> None:
    plant(
        monkeypatch,
        sessions.SessionStore,
        "load_history",
        "return repair_history(history)",
        "return tuple(history)",
    )
    problems = await _replay("damaged-session", "gemini", cluster)
    # refused (the call left without its result), so the turn starts over without dev-box
    assert _found(
        problems, 'differs from the cassette: contents[0].parts[0].text: "Show me dev-box." ->'
    ), problems


async def test_a_repair_that_drops_the_unanswered_call_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, cluster: SimulatedCluster
) -> None:
    plant(
        monkeypatch,
        history,
        "repair_history",
        "answer or ToolResultMessage(tool_call_id=call.id, content=missing_result)",
        "answer or ToolResultMessage(tool_call_id=call.id, content='')",
        into=sessions,
    )
    problems = await _replay("damaged-session", "openai", cluster)
    assert _found(problems, "differs from the cassette"), problems


async def test_an_unreadable_entry_told_without_its_number_fails_the_turn(
    monkeypatch: pytest.MonkeyPatch, cluster: SimulatedCluster
) -> None:
    plant(monkeypatch, sessions, "_unreadable", ": entry {seq} cannot be read", ": cannot be read")
    problems = await _replay("damaged-session", "anthropic", cluster)
    assert _found(problems, "turn 3: the resume error does not contain 'entry 6 cannot be read'"), (
        problems
    )


def test_what_the_user_is_told_is_in_the_snapshot(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sampled survivor (core/sessions.py:537): what the user is told changed (then the
    error's second line instead of its first; now its type instead of its message)."""
    for sub in ("scenarios", "scenarios/__snapshots__", "cassettes/openai"):
        (pytester.path / sub).mkdir(parents=True, exist_ok=True)
    for part in (
        "scenarios/damaged-session.yaml",
        "scenarios/__snapshots__/damaged-session.ambr",
        "cassettes/openai/damaged-session.yaml",
    ):
        shutil.copyfile(ROOT / part, pytester.path / part)
    pytester.makepyprojecttoml(
        "[tool.pytest.ini_options]\n"
        'asyncio_mode = "auto"\nasyncio_default_fixture_loop_scope = "function"\n'
        'nav_formats = ["openai"]\nnav_snapshots = true\n'
    )
    monkeypatch.delenv("CI", raising=False)
    pytester.runpytest("-p", "no:randomly", "scenarios").assert_outcomes(passed=1)
    plant(monkeypatch, sessions, "_unreadable", 'else first["msg"]', 'else first["type"]')
    result = pytester.runpytest("-p", "no:randomly", "scenarios")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*resume_error*Invalid JSON*"])


PRIVACY = {
    # issue 42's sampled survivor (core/sessions.py:136): the sidecars an older version left
    # open are no longer tightened
    "sidecars left loose": (
        sessions,
        "_make_private",
        'for suffix in ("-wal", "-shm", "-journal"):',
        "for suffix in ():",
        None,
        "sessions.db-journal is 0644, not 0600",
    ),
    "database left loose": (
        sessions,
        "_make_private",
        "    private_file(database)\n",
        "    pass\n",
        None,
        "sessions.db is 0644, not 0600",
    ),
    "folder left loose": (
        private_files,
        "private_dir",
        "os.fchmod(fd, PRIVATE_DIR_MODE)",
        "pass",
        sessions,
        "state is 0755, not 0700",
    ),
}


@pytest.mark.parametrize("defect", PRIVACY)
async def test_a_state_file_left_open_to_others_fails_the_replay(
    defect: str, monkeypatch: pytest.MonkeyPatch, cluster: SimulatedCluster
) -> None:
    owner, name, old, new, into, wanted = PRIVACY[defect]
    plant(monkeypatch, owner, name, old, new, into=into)
    problems = await _replay("damaged-session", "openai", cluster)
    assert _found(problems, f"[private-state] after turn 2 {wanted}"), problems


# --- malformed and wrong tool arguments -------------------------------------------------

ARGUMENTS: dict[str, tuple[Any, ...]] = {
    # issue 42's sampled survivor (core/tools.py:273): the quote of malformed arguments
    # cut though it is short
    "short quote cut": (
        "malformed-tool-arguments",
        tools,
        "_parse_arguments",
        "len(text) <= 200",
        "len(text) == 200",
    ),
    "quote left out": (
        "malformed-tool-arguments",
        tools,
        "_parse_arguments",
        "valid JSON ({error}); given: {shown}",
        "valid JSON ({error})",
    ),
    "a list read as no arguments": (
        "malformed-tool-arguments",
        tools,
        "_parse_arguments",
        "if not isinstance(value, dict):",
        "if not isinstance(value, dict | list):",
    ),
    "accepted fields left out": (
        "invalid-tool-arguments",
        _tool_args,
        "describe_validation_error",
        "; accepted fields: {accepted}",
        "",
        tools,
    ),
}


@pytest.mark.parametrize("defect", ARGUMENTS)
async def test_an_arguments_defect_fails_the_replay(
    defect: str, monkeypatch: pytest.MonkeyPatch, cluster: SimulatedCluster
) -> None:
    scenario, owner, name, old, new, *into = ARGUMENTS[defect]
    plant(monkeypatch, owner, name, old, new, into=into[0] if into else None)
    problems = await _replay(scenario, "openai", cluster)
    assert _found(problems, "differs from the cassette"), problems


# --- the sweep, on a cancelled turn ------------------------------------------------------


@pytest.mark.parametrize("point", ["reset@request5+4", "http-429@request1"])
def test_a_cancelled_completion_breaks_no_invariant_under_a_fault(point: str) -> None:
    """A completion the user cancelled ends without a terminal event, and a cut after the
    cancel never reaches the client: neither is a breach (the sweep found both)."""
    (job,) = plan_replays([load_scenario(SCENARIOS / "retry-and-cancel.yaml")], ["openai"])
    options = SweepOptions(points=(parse_point(point),), budget=100, invariants=dict(INVARIANTS))
    grid = sweep_grid(job, options)
    assert not grid.error and not grid.violations, [r.breaches for r in grid.violations]
