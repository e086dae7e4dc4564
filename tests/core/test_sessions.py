"""The SQLite session store, resuming, crash recovery and compaction."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import platformdirs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from navagent.core._migrations import (
    MIGRATIONS,
    MIGRATIONS_TABLE,
    m001_sessions,
    m002_entries,
    m003_entry_usage,
    migrate,
)
from navagent.core.agent import Agent
from navagent.core.agent_events import AgentNotice, ContextCompacted
from navagent.core.compaction import CompactionPolicy, summary_message
from navagent.core.events import Usage
from navagent.core.history import INTERRUPTED_RESULT, validate_history
from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.core.sessions import (
    STATE_DIR_ENV,
    InvalidSessionNameError,
    SessionError,
    SessionNotFoundError,
    SessionStore,
    check_session_name,
    default_db_path,
)
from navagent.core.tools import ToolOutcome
from navagent.gateway._origin import route_origin
from navagent.gateway.openai_responses import build_request as responses_request
from tests.core.fakes import (
    SYSTEM_PROMPT,
    TOOLS,
    EventLog,
    FakeToolRunner,
    ScriptedChatClient,
    ScriptItem,
    call,
    error_completion,
    text_completion,
    tool_completion,
)

ROOT = Path(__file__).resolve().parents[2]
START = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


class Ticker:
    """A clock that moves one second per reading."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "sessions.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[SessionStore]:
    with SessionStore(db_path, clock=Ticker()) as opened:
        yield opened


def conversation() -> list[Message]:
    listing = call("c1")
    return [
        UserMessage(content="list sandboxes"),
        AssistantMessage(content="Looking.", tool_calls=(listing,)),
        ToolResultMessage(tool_call_id="c1", content="web running"),
        AssistantMessage(content="One sandbox: web."),
    ]


def test_session_store_round_trip(store: SessionStore, db_path: Path) -> None:
    session = store.create(name="demo", cluster="dev")
    recorder = store.recorder(session.id)
    for message in conversation():
        recorder.record_message(message)

    with SessionStore(db_path) as reopened:
        assert reopened.load_history(session.id) == tuple(conversation())
        assert reopened.full_log(session.id) == tuple(conversation())
        info = reopened.open("demo")
    assert (info.id, info.name, info.cluster) == (session.id, "demo", "dev")
    assert info.created_at == START + timedelta(seconds=1)
    assert info.updated_at == START + timedelta(seconds=5), "one tick per recorded message"


def test_default_db_path_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(STATE_DIR_ENV, raising=False)
    assert default_db_path() == Path(platformdirs.user_state_dir("nav-agent")) / "sessions.db"
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "env"))
    assert default_db_path() == tmp_path / "env" / "sessions.db"
    assert default_db_path(tmp_path / "arg") == tmp_path / "arg" / "sessions.db"
    with SessionStore() as store:
        assert store.path == tmp_path / "env" / "sessions.db"
    assert (tmp_path / "env" / "sessions.db").is_file()


def test_session_store_is_in_wal_mode(store: SessionStore, db_path: Path) -> None:
    with sqlite3.connect(db_path) as other:
        assert other.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_session_names_are_unique_and_well_formed(store: SessionStore) -> None:
    store.create(name="ops-1")
    with pytest.raises(InvalidSessionNameError, match="a session named 'ops-1' already exists"):
        store.create(name="ops-1")
    with pytest.raises(InvalidSessionNameError, match="invalid session name 'two words'"):
        store.create(name="two words")
    assert store.create().name is None, "unnamed sessions do not collide"
    assert store.create().name is None


_ASCII_WORD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _follows_the_stated_rule(name: str) -> bool:
    """The rule as the error message states it, written independently of the regex."""
    return (
        1 <= len(name) <= 64
        and name[0] in _ASCII_WORD
        and all(char in _ASCII_WORD + "._-" for char in name)
    )


@given(
    st.text(alphabet=st.sampled_from([*_ASCII_WORD[::7], ".", "_", "-", " ", "é", "Ж", "١", "\n"]))
    | st.text(max_size=70)
)
def test_a_session_name_is_refused_exactly_when_the_message_says(name: str) -> None:
    """The message names the rule that is applied: ASCII letters, not any letters."""
    if _follows_the_stated_rule(name):
        check_session_name(name)
        return
    with pytest.raises(InvalidSessionNameError) as raised:
        check_session_name(name)
    message = str(raised.value)
    assert "ASCII letters" in message and "starting with a letter or digit" in message


@pytest.mark.parametrize("name", ["café", "Ωmega", "名前", "x" * 65])
def test_a_non_ascii_or_long_session_name_is_refused_with_the_rule(name: str) -> None:
    with pytest.raises(InvalidSessionNameError, match="1 to 64 ASCII letters"):
        check_session_name(name)


def test_session_open_by_name_id_and_prefix(store: SessionStore) -> None:
    named = store.create(name="alpha")
    other = store.create()
    assert store.open("alpha") == named
    assert store.open(other.id) == other
    assert store.open(other.id[:6]) == other
    with pytest.raises(
        SessionNotFoundError, match="no saved session is named or has the id 'zeta'"
    ):
        store.open("zeta")
    with pytest.raises(SessionNotFoundError):
        store.open("abc")  # too short to be a prefix


def test_session_open_last_follows_activity(store: SessionStore) -> None:
    with pytest.raises(SessionNotFoundError, match="there is no saved session to continue"):
        store.open_last()
    first = store.create(cluster="dev")
    second = store.create(cluster="prod")
    assert store.open_last().id == second.id
    store.recorder(first.id).record_message(UserMessage(content="back to dev"))
    assert store.open_last().id == first.id
    assert store.open_last(cluster="prod").id == second.id
    with pytest.raises(SessionNotFoundError, match="for cluster 'qa'"):
        store.open_last(cluster="qa")


def test_session_list(store: SessionStore) -> None:
    quiet = store.create(name="quiet", cluster="dev")
    busy = store.create(cluster="prod")
    recorder = store.recorder(busy.id)
    long_question = "why   does the\nweb sandbox keep restarting every few minutes since yesterday?"
    for message in [UserMessage(content=long_question), *conversation()]:
        recorder.record_message(message)

    rows = store.list_sessions()

    assert [row.id for row in rows] == [busy.id, quiet.id]
    assert [(row.label, row.cluster, row.message_count) for row in rows] == [
        (busy.id[:8], "prod", 5),
        ("quiet", "dev", 0),
    ]
    # Whitespace collapsed, cut at 60 characters including the ellipsis.
    assert rows[0].preview == "why does the web sandbox keep restarting every few minutes…"
    assert rows[1].preview == ""
    assert rows[0].updated_at > rows[1].updated_at
    assert store.list_sessions(limit=1)[0].id == busy.id


def test_migrations_apply_once_and_upgrade_an_old_database(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    old = sqlite3.connect(db_path, isolation_level=None)
    # A database from a release that only knew the first migration.
    old.execute(f"CREATE TABLE {MIGRATIONS_TABLE} (name TEXT PRIMARY KEY, applied_at TEXT)")
    m001_sessions(old)
    old.execute(f"INSERT INTO {MIGRATIONS_TABLE} VALUES ('m001_sessions', 'then')")
    old.execute(
        "INSERT INTO sessions VALUES ('0123456789abcdef', 'kept', 'dev',"
        " '2024-01-01T00:00:00.000000Z', '2024-01-01T00:00:00.000000Z')"
    )
    old.close()

    with SessionStore(db_path) as store:
        assert store.open("kept").cluster == "dev"
        store.recorder("0123456789abcdef").record_message(UserMessage(content="still works"))
    with sqlite3.connect(db_path, isolation_level=None) as db:
        names = [row[0] for row in db.execute(f"SELECT name FROM {MIGRATIONS_TABLE}")]
        assert names == [m.__name__ for m in MIGRATIONS]
        assert migrate(db) == [], "a second run applies nothing"
    with SessionStore(db_path) as store:
        assert store.load_history("0123456789abcdef") == (UserMessage(content="still works"),)


def test_session_unreadable_entry_is_a_clear_error(store: SessionStore, db_path: Path) -> None:
    session = store.create()
    store.recorder(session.id).record_message(UserMessage(content="fine"))
    with sqlite3.connect(db_path) as db:
        db.execute(
            "INSERT INTO entries VALUES"
            " (?, 2, 'message', 'user', '{\"role\": \"robot\"}', 'x', NULL)",
            (session.id,),
        )
    with pytest.raises(SessionError, match=rf"session {session.id[:8]}: entry 2 cannot be read"):
        store.load_history(session.id)
    with pytest.raises(SessionNotFoundError):
        store.load_history("f" * 32)


async def test_session_records_an_agent_and_resumes_it(store: SessionStore, db_path: Path) -> None:
    session = store.create(name="work")
    slow, fast = call("slow"), call("fast")
    client = ScriptedChatClient([tool_completion(slow, fast), text_completion("both done")])
    agent = Agent(
        client,
        FakeToolRunner(delays={"slow": 0.03}),
        system_prompt=SYSTEM_PROMPT,
        tools=TOOLS,
        recorder=store.recorder(session.id),
    )
    await agent.run_turn("run both")

    with SessionStore(db_path) as reopened:
        resumed_history = reopened.load_history(reopened.open("work").id)
    # Results were logged as the tools ended (fast first) but load in call order.
    assert resumed_history == agent.history

    resumed_client = ScriptedChatClient([text_completion("welcome back")])
    resumed = Agent(
        resumed_client,
        FakeToolRunner(),
        system_prompt=SYSTEM_PROMPT,
        tools=TOOLS,
        history=resumed_history,
        recorder=store.recorder(session.id),
    )
    await resumed.run_turn("and now?")
    assert resumed_client.requests[0].messages[1:-1] == agent.history
    assert store.load_history(session.id) == resumed.history


async def test_session_survives_kill_9_mid_turn(store: SessionStore, db_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "tests.core.crash_session", str(db_path)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    ) as child:
        try:
            deadline = time.monotonic() + 20
            while not _tool_result_recorded(db_path, "quick"):
                assert child.poll() is None, child.communicate()[1].decode()
                assert time.monotonic() < deadline, "the child never recorded its tool result"
                time.sleep(0.02)
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.kill()
            child.communicate(timeout=10)
    assert child.returncode == -signal.SIGKILL

    session = store.open("crashy")
    history = store.load_history(session.id)
    validate_history(history)
    assert history[0] == UserMessage(content="why is web failing?")
    assert history[2:] == (
        ToolResultMessage(tool_call_id="stuck", content=INTERRUPTED_RESULT),
        ToolResultMessage(tool_call_id="quick", content="sandbox_list {} -> ok (quick)"),
    )

    client = ScriptedChatClient([text_completion("The logs tool was interrupted.")])
    agent = Agent(
        client,
        FakeToolRunner(),
        system_prompt=SYSTEM_PROMPT,
        tools=TOOLS,
        history=history,
        recorder=store.recorder(session.id),
    )
    await agent.run_turn("what happened?")
    request = client.requests[0]
    validate_history(request.messages)
    assert request.messages[1:] == (*history, UserMessage(content="what happened?"))
    assert store.load_history(session.id) == agent.history


def _tool_result_recorded(db_path: Path, call_id: str) -> bool:
    if not db_path.exists():
        return False
    try:
        with sqlite3.connect(db_path, timeout=1) as db:
            rows = db.execute("SELECT body FROM entries WHERE role = 'tool'").fetchall()
    except sqlite3.OperationalError:  # tables not created yet
        return False
    return any(f'"tool_call_id":"{call_id}"' in body for (body,) in rows)


# --- compaction --------------------------------------------------------------


def big_turn(n: int) -> list[list[ScriptItem]]:
    """Scripts for one turn: a tool call with a large result, then an answer."""
    return [tool_completion(call(f"call_{n}")), text_completion(f"answer {n}")]


class BigRunner(FakeToolRunner):
    async def run(self, call: ToolCall) -> ToolOutcome:
        outcome = await super().run(call)
        return outcome.model_copy(update={"content": "x" * 800})


def compacting_agent(
    store: SessionStore, session_id: str, client: ScriptedChatClient, sink: EventLog
) -> Agent:
    return Agent(
        client,
        BigRunner(),
        system_prompt=SYSTEM_PROMPT,
        tools=TOOLS,
        sink=sink,
        recorder=store.recorder(session_id),
        compaction=CompactionPolicy(threshold_tokens=700, keep_recent_tokens=300),
    )


async def test_compaction_keeps_pairs_intact_and_persists(store: SessionStore) -> None:
    session = store.create(name="long")
    client = ScriptedChatClient(
        [script for n in range(3) for script in big_turn(n)],
        summaries=[text_completion("Listed sandboxes three times; all fine.")],
    )
    sink = EventLog()
    agent = compacting_agent(store, session.id, client, sink)

    for n in range(3):
        await agent.run_turn(f"question {n}")

    (summary_request,) = client.summary_requests
    (compacted,) = [e for e in sink if isinstance(e, ContextCompacted)]
    older = summary_request.messages[1:-1]
    assert summary_request.messages[0] == SystemMessage(content=SYSTEM_PROMPT)
    assert summary_request.messages[-1].content.startswith("Summarize the conversation so far")
    assert len(older) == compacted.summarized_messages
    validate_history(older)
    # The request right after compaction: prompt, summary, then whole turns.
    after = next(r for r in client.requests if r.messages[1].role == "system")
    summary = summary_message("Listed sandboxes three times; all fine.")
    assert after.messages[1] == summary
    assert isinstance(after.messages[2], UserMessage)
    validate_history(after.messages)
    assert compacted.tokens_after < compacted.tokens_before

    assert agent.history[0] == summary
    validate_history(agent.history)
    assert store.load_history(session.id) == agent.history
    full = store.full_log(session.id)
    assert len(full) == 3 * 4, "the full log keeps every message of the three turns"
    assert full[: len(older)] == older


async def test_compacted_session_resumes_from_the_summary(store: SessionStore) -> None:
    session = store.create()
    client = ScriptedChatClient(
        [script for n in range(3) for script in big_turn(n)],
        summaries=[text_completion("summary one")],
    )
    agent = compacting_agent(store, session.id, client, EventLog())
    for n in range(3):
        await agent.run_turn(f"question {n}")

    loaded = store.load_history(session.id)
    resumed_client = ScriptedChatClient([text_completion("hi again")])
    resumed = Agent(
        resumed_client, FakeToolRunner(), system_prompt=SYSTEM_PROMPT, tools=TOOLS, history=loaded
    )
    await resumed.run_turn("continue")
    assert resumed_client.requests[0].messages[1] == summary_message("summary one")


async def test_compaction_failure_leaves_history_unchanged(store: SessionStore) -> None:
    session = store.create()
    client = ScriptedChatClient(
        [script for n in range(4) for script in big_turn(n)],
        summaries=[error_completion("summary route is down")] * 2,
    )
    sink = EventLog()
    agent = compacting_agent(store, session.id, client, sink)

    for n in range(4):
        await agent.run_turn(f"question {n}")

    # Over the threshold from turn 2's second completion on: turn 2 tries once,
    # turn 3 tries once (not before each of its two completions).
    assert len(client.summary_requests) == 2
    notices = [e for e in sink if isinstance(e, AgentNotice)]
    assert notices and all("summary route is down" in n.text for n in notices)
    assert not [e for e in sink if isinstance(e, ContextCompacted)]
    assert agent.history[0] == UserMessage(content="question 0")
    assert len(agent.history) == 4 * 4
    validate_history(agent.history)
    assert store.load_history(session.id) == agent.history


async def test_agent_compact_on_demand(store: SessionStore) -> None:
    session = store.create()
    client = ScriptedChatClient(
        [script for n in range(2) for script in big_turn(n)],
        summaries=[text_completion("short")],
    )
    agent = Agent(
        client,
        FakeToolRunner(),
        system_prompt=SYSTEM_PROMPT,
        tools=TOOLS,
        recorder=store.recorder(session.id),
    )
    assert not await agent.compact(), "an empty conversation has nothing to compact"
    for n in range(2):
        await agent.run_turn(f"question {n}")
    assert await agent.compact()
    assert agent.history[0] == summary_message("short")
    assert agent.history[1] == UserMessage(content="question 1")
    assert store.load_history(session.id) == agent.history


def test_session_usage_is_recorded_per_completion_and_summed(
    store: SessionStore, db_path: Path
) -> None:
    session = store.create(name="costly")
    recorder = store.recorder(session.id)
    first = Usage(input_tokens=1500, cache_write_tokens=1400, output_tokens=20)
    second = Usage(input_tokens=1600, cache_read_tokens=1400, output_tokens=30, reasoning_tokens=5)
    recorder.record_message(UserMessage(content="one"))
    recorder.record_message(AssistantMessage(content="a"), first)
    recorder.record_message(UserMessage(content="two"))
    recorder.record_message(AssistantMessage(refusal="no"), second)

    assert store.usage(session.id) == first + second
    (summary,) = store.list_sessions()
    assert summary.usage == Usage(
        input_tokens=3100,
        cache_read_tokens=1400,
        cache_write_tokens=1400,
        output_tokens=50,
        reasoning_tokens=5,
    )
    assert store.load_history(session.id)[-1] == AssistantMessage(refusal="no")
    empty = store.create()
    assert store.usage(empty.id) == Usage()


def test_migration_m003_adds_usage_to_an_existing_log(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    old = sqlite3.connect(db_path, isolation_level=None)
    old.execute(f"CREATE TABLE {MIGRATIONS_TABLE} (name TEXT PRIMARY KEY, applied_at TEXT)")
    for migration in (m001_sessions, m002_entries):
        migration(old)
        old.execute(f"INSERT INTO {MIGRATIONS_TABLE} VALUES (?, 'then')", (migration.__name__,))
    now = "2024-01-01T00:00:00.000000Z"
    old.execute("INSERT INTO sessions VALUES ('0123456789abcdef', 'old', '', ?, ?)", (now, now))
    old.execute(
        "INSERT INTO entries VALUES ('0123456789abcdef', 1, 'message', 'assistant', ?, ?)",
        (AssistantMessage(content="before usage").model_dump_json(), now),
    )
    old.close()

    with SessionStore(db_path) as store:
        assert store.usage("0123456789abcdef") == Usage()
        store.recorder("0123456789abcdef").record_message(
            AssistantMessage(content="after"), Usage(input_tokens=7, output_tokens=2)
        )
        assert store.usage("0123456789abcdef") == Usage(input_tokens=7, output_tokens=2)
        assert len(store.load_history("0123456789abcdef")) == 2


def test_migration_m004_moves_old_thinking_fields_into_the_payload(db_path: Path) -> None:
    # Issue 22 part 4: sessions saved before the opaque payload still load, and
    # their Responses reasoning still goes back to the route that wrote it.
    db_path.parent.mkdir(parents=True)
    old = sqlite3.connect(db_path, isolation_level=None)
    old.execute(f"CREATE TABLE {MIGRATIONS_TABLE} (name TEXT PRIMARY KEY, applied_at TEXT)")
    for migration in (m001_sessions, m002_entries, m003_entry_usage):
        migration(old)
        old.execute(f"INSERT INTO {MIGRATIONS_TABLE} VALUES (?, 'then')", (migration.__name__,))
    now = "2024-01-01T00:00:00.000000Z"
    old.execute("INSERT INTO sessions VALUES ('0123456789abcdef', 'old', '', ?, ?)", (now, now))
    origin = route_origin("openai_responses", "https://api.openai.com", "gpt-5", "k")
    legacy = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_1", "name": "sandbox_list", "arguments": "{}"}],
        "thinking": [
            {"text": "signed", "signature": "sig-1", "redacted_data": "", "item_id": "",
             "encrypted_content": "", "summary": [], "origin": "", "after_tool_calls": 0},
            {"text": "a", "signature": "", "redacted_data": "", "item_id": "rs_1",
             "encrypted_content": "gAAA-1", "summary": ["a"], "origin": origin,
             "after_tool_calls": 0},
        ],
        "refusal": "",
    }  # fmt: skip
    old.execute(
        "INSERT INTO entries VALUES ('0123456789abcdef', 1, 'message', 'user', ?, ?, NULL)",
        (UserMessage(content="list").model_dump_json(), now),
    )
    old.execute(
        "INSERT INTO entries VALUES ('0123456789abcdef', 2, 'message', 'assistant', ?, ?, NULL)",
        (json.dumps(legacy), now),
    )
    old.execute(
        "INSERT INTO entries VALUES ('0123456789abcdef', 3, 'compaction', '', ?, ?, NULL)",
        (json.dumps({"summary": "so far", "kept": [legacy]}), now),
    )
    old.close()

    with SessionStore(db_path) as store:
        history = store.load_history("0123456789abcdef")
    assistants = [m for m in history if isinstance(m, AssistantMessage)]
    assert assistants, history  # the compacted copy, or the original
    message = assistants[-1]
    assert all(m == message for m in assistants)
    signed, reasoning = message.thinking
    assert (signed.text, signed.origin, json.loads(signed.payload)) == (
        "signed",
        "",
        {"signature": "sig-1"},
    )
    assert (reasoning.origin, json.loads(reasoning.payload)) == (
        origin,
        {"item_id": "rs_1", "encrypted_content": "gAAA-1", "summary": ["a"]},
    )
    sent = responses_request(
        ChatRequest(messages=(UserMessage(content="list"), message)),
        endpoint="https://api.openai.com",
        model="gpt-5",
        api_key="k",
    ).body["input"]
    assert sent[1] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "a"}],
        "encrypted_content": "gAAA-1",
    }
    assert "sig-1" not in json.dumps(sent)


def test_store_delete_removes_the_session_and_its_log(store: SessionStore) -> None:
    keep = store.create(name="keep")
    gone = store.create(name="gone")
    store.recorder(gone.id).record_message(UserMessage(content="bye"))
    assert store.delete("gone").id == gone.id
    assert [s.id for s in store.list_sessions()] == [keep.id]
    left = store._db.execute("SELECT count(*) FROM entries WHERE session_id = ?", (gone.id,))
    assert left.fetchone() == (0,)
    with pytest.raises(SessionNotFoundError):
        store.delete("gone")


def test_store_rename_checks_the_name_and_keeps_it_unique(store: SessionStore) -> None:
    first = store.create()
    store.create(name="taken")
    renamed = store.rename(first.id[:8], "work")
    assert (renamed.id, renamed.name) == (first.id, "work")
    assert store.open("work").id == first.id
    with pytest.raises(InvalidSessionNameError, match="already exists"):
        store.rename("work", "taken")
    with pytest.raises(InvalidSessionNameError, match="invalid session name"):
        store.rename("work", "-bad")
