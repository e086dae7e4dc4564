"""Resuming the ways a person does, and every kind of saved entry damaged (issue 42).

`resume-ways.yaml` comes back by full id, by a `/resume` prefix two sessions
share (refused), by the shortest unique id prefix and by `--continue` among
decoys; `damaged-entries.yaml` resumes a compaction entry whose `kept` is an object and
a rewind entry without `from_seq` (refused, naming the entry);
`damaged-provider-state.yaml` resumes provider state out of range, twice
(accepted, each item in its place or left out). Each defect is planted as a patched copy
of the function it lives in (issue 42's sampled survivors among them) and the
committed scenario's replay must fail on it, naming the turn and what differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from navagent.core import sessions
from navagent.core.messages import UserMessage
from navagent.fixtures.harness import SimulatedCluster, load_scenario, replay_scenario
from navagent.fixtures.harness.replay._person import damage_session, resume_key
from navagent.fixtures.harness.scenarios._model import Damage, Scenario
from navagent.gateway.anthropic import request as anthropic_request
from navagent.gateway.gemini import request as gemini_request
from navagent.gateway.openai_responses import request as responses_request
from tests.scenarios.test_person_steps import plant

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"


async def _replay(name: str, provider: str, cluster: SimulatedCluster) -> str:
    """The failure block ("" when the replay passed): the turn, the request, both values."""
    result = await replay_scenario(
        load_scenario(SCENARIOS / f"{name}.yaml"), provider, cluster=cluster
    )
    return "" if result.passed else result.report


def _found(report: str, wanted: str) -> bool:
    return wanted in " ".join(report.split())


# --- the ways a person resumes ------------------------------------------------------------

RESUMES: dict[str, tuple[Any, ...]] = {
    # issue 42's sampled survivor (core/sessions.py:277): a unique prefix no longer resumes,
    # an ambiguous one resumes one of the two
    "prefix taken when ambiguous": (
        "open",
        "if len(rows) == 1:",
        "if len(rows) > 1:",
        "turn 2, request 3 (",
        'cassette: "Show me dev-box." replay: "Show its logs."',
    ),
    "prefix of 4 refused": (
        "open",
        "len(name_or_id) >= 4",
        "len(name_or_id) > 4",
        "turn 2, request 3 (",
        'cassette: "Show me dev-box." replay: "Show its logs."',
    ),
    "ambiguity not checked": (
        "open",
        "LIMIT 2",
        "LIMIT 1",
        # the twin or this session, whichever SQLite finds first: either fails turn 3
        "format openai, turn 3",
    ),
    "--continue takes the oldest": (
        "open_last",
        "ORDER BY updated_at DESC",
        "ORDER BY updated_at ASC",
        "turn 5, request 9 (",
        'cassette: "Show me dev-box." replay: "an older conversation"',
    ),
    "--continue ignores the cluster": (
        "open_last",
        'conditions.append("cluster = ?")',
        'conditions.append("? IS NOT NULL")',
        "turn 5, request 9 (",
        'cassette: "Show me dev-box." replay: "a newer conversation"',
    ),
    "--continue takes a --demo session": (
        "open_last",
        'conditions.append("demo = ?")',
        'conditions.append("? IS NOT NULL")',
        "turn 5, request 9 (",
        'cassette: "Show me dev-box." replay: "a newer conversation"',
    ),
}


@pytest.mark.parametrize("defect", RESUMES)
async def test_a_resume_that_finds_the_wrong_session_fails_the_replay(
    defect: str, monkeypatch: pytest.MonkeyPatch, cluster: SimulatedCluster
) -> None:
    name, old, new, *wanted = RESUMES[defect]
    assert not await _replay("resume-ways", "openai", cluster)  # clean, it passes
    plant(monkeypatch, sessions.SessionStore, name, old, new)
    report = await _replay("resume-ways", "openai", cluster)
    assert all(_found(report, text) for text in wanted), report


# --- damaged entries: refused, naming the entry --------------------------------------------

REFUSALS: dict[str, tuple[Any, ...]] = {
    # issue 42's sampled survivor (core/sessions.py:529, the same in both readers): a
    # damaged entry ends in a traceback, not the sentence
    "compaction with kept an object: traceback": (
        "_compaction_from_body",
        "except ValidationError as exc:",
        "except TypeError as exc:",
        "turn 5: resuming the saved session raised ValidationError",
    ),
    "rewind without from_seq: traceback": (
        "_rewind_start",
        "except ValidationError as exc:",
        "except TypeError as exc:",
        "turn 7: resuming the saved session raised ValidationError",
    ),
    # the defect of the third round: `kept` an object iterated as its (no) keys
    "compaction with kept an object: read as nothing kept": (
        "_compaction_from_body",
        "_CompactionBody.model_validate_json(body)",
        "_CompactionBody.model_validate("
        '{**json.loads(body), "kept": list(json.loads(body)["kept"])})',
        "turn 5, request 10 (",
        'cassette: "List my sandboxes." replay: "What providers do I have?"',
    ),
    "rewind without from_seq: nothing taken back": (
        "_rewind_start",
        "_RewindBody.model_validate_json(body).from_seq",
        'json.loads(body).get("from_seq", 1 << 62)',
        "turn 7, request 14 (",
        'cassette: "Is my cluster up?" replay: "List my sandboxes."',
    ),
}


COMPACTED: dict[str, tuple[Any, ...]] = {
    "the context before the compaction resumed too": (
        sessions.SessionStore,
        "load_history",
        "start = index + 1",
        "start = 0",
        "turn 4, request 8 (",
        'at contents[4].parts[0].text cassette: "What providers do I have?"'
        ' replay: "Show me dev-box."',
    ),
    "the summary lost on resume": (
        sessions,
        "_compaction_from_body",
        "summary_message(data.summary)",
        'summary_message("")',
        "turn 4, request 8 (",
        "at systemInstruction.parts[0].text",
    ),
    "the kept turn lost on resume": (
        sessions,
        "_compaction_from_body",
        "*data.kept)",
        "*data.kept[1:])",
        "turn 4, request 8 (",
        'at contents[0].role cassette: "user" replay: "model"',
    ),
}


@pytest.mark.parametrize("defect", COMPACTED)
async def test_a_compacted_session_resumed_wrong_fails_the_replay(
    defect: str, monkeypatch: pytest.MonkeyPatch, cluster: SimulatedCluster
) -> None:
    owner, name, old, new, *wanted = COMPACTED[defect]
    plant(monkeypatch, owner, name, old, new)
    report = await _replay("damaged-entries", "gemini", cluster)
    assert all(_found(report, text) for text in wanted), report


@pytest.mark.parametrize("defect", REFUSALS)
async def test_a_damaged_entry_not_refused_fails_the_replay(
    defect: str, monkeypatch: pytest.MonkeyPatch, cluster: SimulatedCluster
) -> None:
    name, old, new, *wanted = REFUSALS[defect]
    assert not await _replay("damaged-entries", "anthropic", cluster)  # clean, it passes
    plant(monkeypatch, sessions, name, old, new)
    report = await _replay("damaged-entries", "anthropic", cluster)
    assert all(_found(report, text) for text in wanted), report


# --- damaged provider state: resumed, each item in its place -------------------------------

STATES: dict[str, tuple[Any, ...]] = {
    # issue 42's sampled survivor (gateway/openai_responses/request.py:164): a negative
    # after_tool_calls used as an index, so the reasoning item is lost
    "negative after_tool_calls as an index": (
        "openai-responses",
        responses_request,
        "_reasoning",
        "after >= 0 else 0",
        "after != 0 else 0",
        "turn 3, request 4 (",
        'at input[2].type cassette: "reasoning" replay: "function_call"',
    ),
    "after_tool_calls not checked for range": (
        "openai-responses",
        responses_request,
        "_reasoning",
        "type(after) is int and after >= 0",
        "type(after) is int",
        "turn 3, request 4 (",
        'at input[2].type cassette: "reasoning" replay: "function_call"',
    ),
    "after_tool_calls not clamped to the calls": (
        "openai-responses",
        responses_request,
        "_assistant_items",
        "reasoning[min(after_tool_calls, len(calls))]",
        "reasoning[after_tool_calls]",
        "turn 4, request 5 (",
        "the cassette has requests the replay never sent",
    ),
    "a signature of another type sent": (
        "anthropic",
        anthropic_request,
        "_thinking",
        "if type(signature) is str and signature:",
        "if signature:",
        "turn 4, request 5 (",
        'at messages[1].content[0].type cassette: "text" replay: "thinking"',
    ),
    "a null signature sent": (
        "anthropic",
        anthropic_request,
        "_thinking",
        "if type(signature) is str and signature:",
        "if redacted is None:",
        "turn 3, request 4 (",
        'at messages[1].content[0].type cassette: "text" replay: "thinking"',
    ),
    "signatures trusted to be a list": (
        "gemini",
        gemini_request,
        "_model_parts",
        "for entry in entries if isinstance(entries, list) else []:",
        "for entry in entries or []:",
        "turn 3: failed unexpectedly (internal)",
    ),
}


@pytest.mark.parametrize("defect", STATES)
async def test_damaged_provider_state_sent_wrong_fails_the_replay(
    defect: str, monkeypatch: pytest.MonkeyPatch, cluster: SimulatedCluster
) -> None:
    provider, module, name, old, new, *wanted = STATES[defect]
    assert not await _replay("damaged-provider-state", provider, cluster)  # clean, it passes
    plant(monkeypatch, module, name, old, new)
    report = await _replay("damaged-provider-state", provider, cluster)
    assert all(_found(report, text) for text in wanted), report


# --- the steps, checked at load and at the run ---------------------------------------------


def _scenario(*turns: dict[str, Any]) -> dict[str, Any]:
    return {"id": "x", "description": "x", "turns": [{"user": "Hi."}, *turns]}


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        ({"user": "Hi.", "resume": "by-name"}, "resume"),
        (
            {"user": "Hi.", "resume": "ambiguous-prefix", "damage": {"lose": 1}},
            "`damage` acts on the saved session before a `resume` that quits the agent",
        ),
        (
            {"user": "Hi.", "resume": True, "damage": {"edit": {"entry": "rewind"}}},
            "an `edit` needs `drop: [KEY, ...]` or `set: {KEY: VALUE}`",
        ),
        (
            {"user": "Hi.", "resume": True, "damage": {"edit": {"entry": "tool", "drop": ["x"]}}},
            "'compaction', 'rewind' or 'provider_state'",
        ),
    ],
)
def test_a_misused_resume_or_edit_is_refused_at_load(turn: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match="turns.1") as refused:
        Scenario.model_validate(_scenario(turn))
    assert message in str(refused.value)


def test_an_edit_of_an_entry_the_session_lacks_leaves_it_as_it_is(tmp_path: Path) -> None:
    """Under a sweep fault the `/compact` that writes the entry may have failed: no crash."""
    database = tmp_path / "sessions.db"
    with sessions.SessionStore(database) as store:
        session = store.create(name="x")
        store.recorder(session.id).record_message(UserMessage(content="hi"))
    damage = Damage.model_validate({"edit": {"entry": "compaction", "drop": ["kept"]}})
    damage_session(database, session.id, damage)
    with sessions.SessionStore(database) as store:
        assert store.load_history(session.id) == (UserMessage(content="hi"),)


def test_the_typed_prefixes_are_what_the_store_resolves(tmp_path: Path) -> None:
    """`prefix` is the shortest unique one (4+), `unknown-prefix` matches no id, and
    `ambiguous-prefix` plants a second session whose id starts with the same 4 digits."""
    with sessions.SessionStore(tmp_path / "sessions.db") as store:
        session = store.create(name="x")
        assert resume_key(store, session, "prefix") == session.id[:4]
        assert store.open(session.id[:4]).id == session.id
        unknown = resume_key(store, session, "unknown-prefix")
        assert len(unknown) == 4
        with pytest.raises(sessions.SessionNotFoundError):
            store.open(unknown)
        shared = resume_key(store, session, "ambiguous-prefix")
        assert shared == session.id[:4]
        with pytest.raises(sessions.SessionNotFoundError):
            store.open(shared)
        longer = resume_key(store, session, "prefix")
        assert len(longer) > 4
        assert store.open(longer).id == session.id
