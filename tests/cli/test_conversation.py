"""The REPL's conversation: lazy session creation, resume, /clear, and the full log."""

from __future__ import annotations

from collections.abc import Sequence

from navagent.cli.conversation import AgentSession
from navagent.core.agent import Agent, ConversationRecorder
from navagent.core.compaction import summary_message
from navagent.core.messages import AssistantMessage, Message, UserMessage
from navagent.core.sessions import SessionInfo, SessionStore
from tests.core.fakes import (
    SYSTEM_PROMPT,
    TOOLS,
    FakeToolRunner,
    ScriptedChatClient,
    text_completion,
)


def factory(client: ScriptedChatClient):
    def make_agent(history: Sequence[Message], recorder: ConversationRecorder | None) -> Agent:
        return Agent(
            client,
            FakeToolRunner(),
            system_prompt=SYSTEM_PROMPT,
            tools=TOOLS,
            history=history,
            recorder=recorder,
        )

    return make_agent


def current(conversation: AgentSession) -> SessionInfo | None:
    """The session now (a call, so type narrowing does not outlive a send)."""
    return conversation.session


def pending(conversation: AgentSession) -> str | None:
    """The name waiting for the first message (a call, as `current`)."""
    return conversation.pending_name


async def test_conversation_creates_its_session_on_the_first_message(tmp_path) -> None:
    store = SessionStore(tmp_path / "s.db")
    conversation = AgentSession(
        factory(ScriptedChatClient([text_completion("hi")])), store=store, cluster="demo"
    )
    assert current(conversation) is None and conversation.label == "new"
    assert store.list_sessions() == []  # starting and leaving leaves nothing behind
    await conversation.send("hello")
    session = current(conversation)
    assert session is not None and session.cluster == "demo"
    assert conversation.label == session.id[:8]
    assert [m.content for m in store.full_log(session.id)] == ["hello", "hi"]


async def test_a_named_conversation_is_created_with_its_name_on_the_first_message(
    tmp_path,
) -> None:
    store = SessionStore(tmp_path / "s.db")
    client = ScriptedChatClient([text_completion("hi"), text_completion("again")])
    conversation = AgentSession(factory(client), store=store, cluster="demo", name="ops-7")
    assert current(conversation) is None and pending(conversation) == "ops-7"
    assert store.list_sessions() == []  # leaving now keeps no empty session
    await conversation.send("hello")
    session = current(conversation)
    assert session is not None and session.name == "ops-7" and conversation.label == "ops-7"
    assert pending(conversation) is None
    await conversation.clear()  # the name went to the first session: the next has none
    assert pending(conversation) is None
    await conversation.send("more")
    assert [summary.name for summary in store.list_sessions()] == [None, "ops-7"]


async def test_two_agents_on_one_new_name_join_one_session_on_their_first_messages(
    tmp_path,
) -> None:
    store = SessionStore(tmp_path / "s.db")
    first, second = (
        AgentSession(
            factory(ScriptedChatClient([text_completion(f"hi {n}")])),
            store=store,
            cluster="demo",
            name="shared",
        )
        for n in (1, 2)
    )
    await first.send("from one")
    await second.send("from two")
    [session] = store.list_sessions()
    assert session.name == "shared" and session.message_count == 4


async def test_a_pending_name_survives_clear_until_a_message_uses_it(tmp_path) -> None:
    store = SessionStore(tmp_path / "s.db")
    client = ScriptedChatClient([text_completion("hi")])
    conversation = AgentSession(factory(client), store=store, cluster="demo", name="later")
    await conversation.clear()
    assert pending(conversation) == "later" and store.list_sessions() == []
    await conversation.send("hello")
    assert [summary.name for summary in store.list_sessions()] == ["later"]


async def test_conversation_resume_continues_from_the_compacted_context(tmp_path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = store.create(name="long", cluster="demo")
    recorder = store.recorder(session.id)
    old: list[Message] = [UserMessage(content="first"), AssistantMessage(content="first answer")]
    kept: tuple[Message, ...] = (
        UserMessage(content="second"),
        AssistantMessage(content="second answer"),
    )
    for message in (*old, *kept):
        recorder.record_message(message)
    recorder.record_compaction("the user asked twice", kept)
    client = ScriptedChatClient([text_completion("third answer")])
    conversation = AgentSession(factory(client), store=store, cluster="demo", session=session)
    assert conversation.resumed == (summary_message("the user asked twice"), *kept)
    assert conversation.label == "long"
    await conversation.send("third")
    # The model sees the compacted context; /history sees everything.
    assert client.requests[0].messages[1:] == (*conversation.resumed, UserMessage(content="third"))
    assert [m.content for m in conversation.full_log()] == [
        "first",
        "first answer",
        "second",
        "second answer",
        "third",
        "third answer",
    ]


async def test_conversation_clear_starts_fresh_and_keeps_the_old_session(tmp_path) -> None:
    store = SessionStore(tmp_path / "s.db")
    client = ScriptedChatClient([text_completion("a"), text_completion("b")])
    conversation = AgentSession(factory(client), store=store, cluster="demo")
    await conversation.send("one")
    first = conversation.session
    assert await conversation.clear() is None  # nothing was being recorded
    assert current(conversation) is None and conversation.full_log() == ()
    await conversation.send("two")
    second = current(conversation)
    assert second is not None and first is not None and second.id != first.id
    assert [m.content for m in store.full_log(first.id)] == ["one", "a"]


async def test_conversation_without_a_store_still_answers(tmp_path) -> None:
    client = ScriptedChatClient([text_completion("unsaved")])
    conversation = AgentSession(factory(client), store=None, cluster="demo")
    await conversation.send("hello")
    assert conversation.session is None
    assert [m.content for m in conversation.full_log()] == ["hello", "unsaved"]
