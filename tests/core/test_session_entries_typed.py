"""What the session store keeps and refuses: an empty completion's cost, wrong-typed entries."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from navagent.core.agent import Agent
from navagent.core.events import MessageComplete, TurnEnd, Usage
from navagent.core.messages import AssistantMessage, UserMessage
from navagent.core.sessions import SessionError, SessionStore
from tests.core.fakes import (
    SYSTEM_PROMPT,
    TOOLS,
    FakeToolRunner,
    ScriptedChatClient,
    ScriptItem,
    text_completion,
)

REFUSAL_COST = Usage(input_tokens=900, output_tokens=3)
ANSWER_COST = Usage(input_tokens=950, output_tokens=12)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "state" / "sessions.db") as opened:
        yield opened


def wordless_refusal() -> list[ScriptItem]:
    """Anthropic's `stop_reason: refusal` with no text: an empty message, but billed."""
    return [
        TurnEnd(finish_reason="refusal", usage=REFUSAL_COST),
        MessageComplete(message=AssistantMessage()),
    ]


def costed_answer(text: str) -> list[ScriptItem]:
    *deltas, _end, complete = text_completion(text)
    return [*deltas, TurnEnd(finish_reason="stop", usage=ANSWER_COST), complete]


async def test_a_wordless_refusal_is_not_in_the_history_but_its_cost_is_saved(
    store: SessionStore,
) -> None:
    session = store.create(name="refused")
    client = ScriptedChatClient([wordless_refusal(), costed_answer("Here you are.")])
    agent = Agent(
        client,
        FakeToolRunner(),
        system_prompt=SYSTEM_PROMPT,
        tools=TOOLS,
        recorder=store.recorder(session.id),
    )

    refused = await agent.run_turn("do something I will refuse")
    assert refused.reason == "refused"
    assert store.usage(session.id) == REFUSAL_COST, "the refusal was billed"
    assert (
        store.load_history(session.id)
        == agent.history
        == (UserMessage(content="do something I will refuse"),)
    )
    await agent.run_turn("then list my sandboxes")
    assert store.usage(session.id) == REFUSAL_COST + ANSWER_COST
    (summary,) = store.list_sessions()
    assert summary.usage == REFUSAL_COST + ANSWER_COST
    assert summary.message_count == 3, "the cost entry is not a message"

    agent.undo_last_turn()
    agent.undo_last_turn()  # both turns taken back: what they cost still counts
    assert store.load_history(session.id) == ()
    assert list(agent.history) == []
    assert store.usage(session.id) == REFUSAL_COST + ANSWER_COST


def test_a_database_before_usage_entries_is_upgraded_and_takes_them(tmp_path: Path) -> None:
    from navagent.core._migrations import MIGRATIONS, MIGRATIONS_TABLE

    path = tmp_path / "old.db"
    old = sqlite3.connect(path, isolation_level=None)
    old.execute(f"CREATE TABLE {MIGRATIONS_TABLE} (name TEXT PRIMARY KEY, applied_at TEXT)")
    for migration in MIGRATIONS[:6]:  # the release before `usage` entries
        migration(old)
        old.execute(f"INSERT INTO {MIGRATIONS_TABLE} VALUES (?, 'then')", (migration.__name__,))
    now = "2024-01-01T00:00:00.000000Z"
    old.execute(
        "INSERT INTO sessions VALUES ('0123456789abcdef', 'old', 'dev', ?, ?, 0)", (now, now)
    )
    old.execute(
        "INSERT INTO entries VALUES ('0123456789abcdef', 1, 'message', 'user', ?, ?, NULL)",
        (UserMessage(content="q").model_dump_json(), now),
    )
    with pytest.raises(sqlite3.IntegrityError):  # what the old schema did to a usage entry
        old.execute(
            "INSERT INTO entries VALUES ('0123456789abcdef', 2, 'usage', '', '', ?, '{}')", (now,)
        )
    old.close()

    with SessionStore(path) as store:
        store.recorder("0123456789abcdef").record_usage(REFUSAL_COST)
        assert store.load_history("0123456789abcdef") == (UserMessage(content="q"),)
        assert store.usage("0123456789abcdef") == REFUSAL_COST


def compaction_body(**fields: object) -> str:
    kept = [UserMessage(content="kept turn").model_dump(mode="json")]
    return json.dumps({"summary": "what happened", "kept": kept} | fields)


@pytest.mark.parametrize(
    ("kind", "body", "problem"),
    [
        ("compaction", compaction_body(kept={}), "kept: Input should be a valid array"),
        ("compaction", compaction_body(kept=""), "kept: Input should be a valid array"),
        ("compaction", compaction_body(kept={"role": "user"}), "kept: Input should be a valid"),
        ("compaction", compaction_body(kept=[7]), "kept.0: Input should be an object"),
        ("compaction", compaction_body(summary=["a"]), "summary: Input should be a valid string"),
        ("compaction", compaction_body(summary=3), "summary: Input should be a valid string"),
        ("compaction", json.dumps({"summary": "s"}), "kept: Field required"),
        ("compaction", "[]", "Input should be an object"),
        ("rewind", json.dumps({"from_seq": True}), "from_seq: Input should be a valid integer"),
        ("rewind", json.dumps({"from_seq": "1"}), "from_seq: Input should be a valid integer"),
        ("rewind", json.dumps({"from_seq": 1.0}), "from_seq: Input should be a valid integer"),
        ("rewind", "{}", "from_seq: Field required"),
        ("rewind", "{not json", "Invalid JSON: key must be a string at line 1 column 2)"),
    ],
)
def test_a_wrong_typed_entry_is_refused_naming_it_and_the_store_stays_usable(
    store: SessionStore, kind: str, body: str, problem: str
) -> None:
    damaged = store.create(name="damaged")
    recorder = store.recorder(damaged.id)
    recorder.record_message(UserMessage(content="first turn"))
    recorder.record_message(AssistantMessage(content="an answer"))
    store._append(damaged.id, kind, "", body)  # type: ignore[arg-type]

    with pytest.raises(SessionError) as refused:
        store.load_history(damaged.id)
    assert str(refused.value).startswith(
        f"session {damaged.id[:8]}: entry 3 cannot be read ({problem}"
    )
    assert "what happened" not in str(refused.value), "an entry's values are never quoted"

    fresh = store.create(name="fresh")  # as `nav agent` starts over after the refusal
    store.recorder(fresh.id).record_message(UserMessage(content="again"))
    assert store.load_history(fresh.id) == (UserMessage(content="again"),)
    listed = store.list_sessions()  # `nav agent sessions` lists the damaged one too
    assert [(s.name, s.message_count) for s in listed] == [("fresh", 1), ("damaged", 2)]


def test_a_well_typed_compaction_still_loads_its_summary_and_kept_turns(
    store: SessionStore,
) -> None:
    session = store.create()
    store.recorder(session.id).record_compaction("what happened", (UserMessage(content="k"),))
    loaded = store.load_history(session.id)
    assert loaded[1:] == (UserMessage(content="k"),)
    assert "what happened" in loaded[0].content


def test_a_torn_usage_column_is_left_out_of_the_totals_not_an_error(store: SessionStore) -> None:
    session = store.create(name="torn")
    recorder = store.recorder(session.id)
    recorder.record_message(AssistantMessage(content="a"), ANSWER_COST)
    recorder.record_usage(REFUSAL_COST)
    store._db.execute("UPDATE entries SET usage = '{\"input_tok' WHERE seq = 2")
    (listed,) = store.list_sessions()
    assert listed.usage == ANSWER_COST


def test_the_store_is_resolved_in_the_environment_given_not_this_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from navagent.core.sessions import STATE_DIR_ENV, default_db_path

    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "process"))
    given = {STATE_DIR_ENV: str(tmp_path / "given")}
    assert default_db_path(environ=given) == tmp_path / "given" / "sessions.db"
    assert default_db_path(tmp_path / "arg", environ=given) == tmp_path / "arg" / "sessions.db"
    assert default_db_path() == tmp_path / "process" / "sessions.db"
    with SessionStore(environ=given) as store:
        assert store.path == tmp_path / "given" / "sessions.db"
    assert not (tmp_path / "process").exists()
