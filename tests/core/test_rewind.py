"""Taking the last exchange back (`/retry`, issue 20 item 8): in memory and in SQLite.

A retried exchange must end up in the conversation once: in the agent's
history (what the next request sends), in the saved log (`/history`, resume,
`nav agent sessions` counts), while what it cost stays counted.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from navagent.core._migrations import MIGRATIONS, MIGRATIONS_TABLE
from navagent.core.agent import Agent, AgentBusyError, NothingToUndoError
from navagent.core.compaction import CompactionPolicy, summary_message
from navagent.core.events import MessageComplete, TextDelta, TurnEnd, Usage
from navagent.core.messages import (
    AssistantMessage,
    Message,
    ToolResultMessage,
    UserMessage,
)
from navagent.core.sessions import SessionError, SessionStore
from tests.core.fakes import (
    SYSTEM_PROMPT,
    TOOLS,
    FakeToolRunner,
    ScriptedChatClient,
    ScriptItem,
    Stall,
    call,
    text_completion,
    tool_completion,
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "sessions.db") as opened:
        yield opened


def costly(text: str, tokens: int) -> list[ScriptItem]:
    return [
        TextDelta(text=text),
        TurnEnd(finish_reason="stop", usage=Usage(input_tokens=tokens, output_tokens=1)),
        MessageComplete(message=AssistantMessage(content=text)),
    ]


def saved_agent(
    client: ScriptedChatClient,
    store: SessionStore,
    *,
    history: Sequence[Message] = (),
    session_id: str | None = None,
    **options: object,
) -> tuple[Agent, str]:
    session_id = session_id or store.create(cluster="demo").id
    agent = Agent(
        client,
        FakeToolRunner(),
        system_prompt=SYSTEM_PROMPT,
        tools=TOOLS,
        history=history,
        recorder=store.recorder(session_id),
        **options,  # type: ignore[arg-type]
    )
    return agent, session_id


def contents(messages: Sequence[Message]) -> list[str]:
    return [getattr(m, "tool_call_id", "") or m.content for m in messages]


async def test_undo_then_send_again_leaves_the_exchange_once_everywhere(store) -> None:
    client = ScriptedChatClient(
        [
            costly("first answer", 10),
            tool_completion(call("c1")),
            costly("an answer to replace", 20),
            costly("the new answer", 40),
        ]
    )
    agent, sid = saved_agent(client, store)
    await agent.run_turn("hi")
    await agent.run_turn("list them")

    assert agent.undo_last_turn() == "list them"
    assert contents(agent.history) == ["hi", "first answer"]
    await agent.run_turn("list them")

    expected = ["hi", "first answer", "list them", "the new answer"]
    assert contents(agent.history) == expected
    assert contents(client.requests[-1].messages[1:]) == ["hi", "first answer", "list them"]
    assert contents(store.full_log(sid)) == expected
    assert contents(store.load_history(sid)) == expected
    [summary] = store.list_sessions()
    assert summary.message_count == 4 and summary.preview == "hi"
    # What the taken-back exchange cost was spent all the same.
    assert summary.usage.input_tokens == 10 + 0 + 20 + 40


async def test_undo_of_a_resumed_conversation_starts_at_its_last_message(store) -> None:
    sid = store.create(cluster="demo").id
    recorder = store.recorder(sid)
    old: list[Message] = [
        UserMessage(content="one"),
        AssistantMessage(content="answer one"),
        UserMessage(content="two"),
        AssistantMessage(tool_calls=(call("c1"),)),
        ToolResultMessage(tool_call_id="c1", content="rows"),
        AssistantMessage(content="answer two"),
    ]
    for message in old:
        recorder.record_message(message)
    agent, _ = saved_agent(ScriptedChatClient(), store, history=old, session_id=sid)

    assert agent.undo_last_turn() == "two"
    assert agent.history == tuple(old[:2])
    assert store.full_log(sid) == tuple(old[:2]) == store.load_history(sid)
    assert agent.undo_last_turn() == "one"
    assert agent.history == () == store.full_log(sid)
    with pytest.raises(NothingToUndoError):
        agent.undo_last_turn()


async def test_undo_takes_a_compaction_of_that_turn_back_too(store) -> None:
    client = ScriptedChatClient(
        [text_completion("a" * 400), text_completion("b" * 400), text_completion("c")],
        summaries=[text_completion("the user asked twice")],
    )
    policy = CompactionPolicy(threshold_tokens=150, keep_recent_tokens=20)
    agent, sid = saved_agent(client, store, compaction=policy)
    await agent.run_turn("first")
    before = agent.history
    await agent.run_turn("second")  # compacts once the second message is in
    assert agent.history[0] == summary_message("the user asked twice")

    assert agent.undo_last_turn() == "second"
    assert agent.history == before
    assert store.load_history(sid) == before == store.full_log(sid)


async def test_undo_while_a_turn_runs_is_refused(store) -> None:
    client = ScriptedChatClient([[TextDelta(text="partial"), Stall()]])
    agent, _ = saved_agent(client, store)
    turn = asyncio.create_task(agent.run_turn("go"))
    await asyncio.sleep(0.05)
    with pytest.raises(AgentBusyError):
        agent.undo_last_turn()
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn


def test_an_unreadable_rewind_entry_is_a_clear_error(store) -> None:
    sid = store.create().id
    store.recorder(sid).record_message(UserMessage(content="x"))
    store._append(sid, "rewind", "", "{not json")
    with pytest.raises(SessionError, match="entry 2 cannot be read"):
        store.full_log(sid)


def test_migration_keeps_every_row_and_accepts_rewinds(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path, isolation_level=None)
    old.execute(f"CREATE TABLE {MIGRATIONS_TABLE} (name TEXT PRIMARY KEY, applied_at TEXT)")
    for migration in MIGRATIONS[:4]:  # a database from before rewinds and demo sessions
        migration(old)
        old.execute(f"INSERT INTO {MIGRATIONS_TABLE} VALUES (?, 'then')", (migration.__name__,))
    now = "2024-01-01T00:00:00.000000Z"
    old.execute("INSERT INTO sessions VALUES ('0123456789abcdef', 'old', 'dev', ?, ?)", (now, now))
    saved: list[Message] = [UserMessage(content="q"), AssistantMessage(content="a")]
    for seq, message in enumerate(saved, 1):
        old.execute(
            "INSERT INTO entries VALUES ('0123456789abcdef', ?, 'message', ?, ?, ?, ?)",
            (
                seq,
                message.role,
                message.model_dump_json(),
                now,
                '{"input_tokens": 5}' if seq == 2 else None,
            ),
        )
    old.close()

    with SessionStore(path) as store:
        info = store.open("old")
        assert not info.demo
        assert contents(store.full_log(info.id)) == ["q", "a"]
        assert store.usage(info.id).input_tokens == 5
        store.recorder(info.id).record_rewind(2)
        assert store.full_log(info.id) == ()
        assert store.list_sessions()[0].message_count == 0


def test_demo_sessions_are_marked_and_continued_apart(store) -> None:
    real = store.create(cluster="prod")
    demo = store.create(cluster="demo", demo=True)
    assert store.open(demo.id).demo and not store.open(real.id).demo
    assert [s.demo for s in store.list_sessions()] == [True, False]
    assert store.open_last(demo=True).id == demo.id
    assert store.open_last(demo=False).id == real.id
    assert store.open_last().id == demo.id
