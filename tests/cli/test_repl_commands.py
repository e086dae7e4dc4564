"""Slash commands that do what they say, and sessions inside the REPL (issue 20, items 8-11).

Driven through prompt_toolkit's pipe input, with a real session store.
Completion is checked on the prompt's own buffer: the test waits until Tab
has filled it in before pressing Enter, as a person looks before sending.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.input import PipeInput, create_pipe_input

from navagent.core.chat_client import RoutingHintsUnavailableError
from navagent.core.messages import AssistantMessage, UserMessage
from navagent.core.nav_cli import NavToolRunner
from navagent.core.sessions import SessionStore
from tests.cli.harness import CTRL_D, ENTER, NAV_SIM, ReplDriver, nav_sim_state
from tests.core.fakes import (
    FakeToolRunner,
    ScriptedChatClient,
    call,
    text_completion,
    tool_completion,
)

ESC = "\x1b"
TAB = "\t"


@pytest.fixture
def pipe() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe_input:
        yield pipe_input


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "sessions.db") as opened:
        yield opened


def users(request) -> list[str]:
    return [m.content for m in request.messages if isinstance(m, UserMessage)]


def driver(pipe, client, **options) -> ReplDriver:
    return ReplDriver(pipe, client=client, runner_factory=lambda _c: FakeToolRunner(), **options)


async def prompt_shows(repl: ReplDriver, text: str) -> None:
    async with asyncio.timeout(10):
        while repl.session.default_buffer.text != text:
            await asyncio.sleep(0.01)


# Item 8: /retry replaces the last exchange; it is in the conversation once.
async def test_retry_replaces_the_last_exchange_everywhere(pipe, store) -> None:
    client = ScriptedChatClient(
        [
            text_completion("hello"),
            tool_completion(call("c1")),
            text_completion("an answer to replace"),
            text_completion("a better answer"),
        ]
    )
    repl = driver(pipe, client, store=store)
    repl.start()
    repl.type("hi" + ENTER)
    end = await repl.wait_for("hello")
    await repl.at_prompt()
    repl.type("list my sandboxes" + ENTER)
    end = await repl.wait_for("an answer to replace", after=end)
    await repl.at_prompt()
    repl.type("/retry" + ENTER)
    end = await repl.wait_for("nav> list my sandboxes", after=end)
    end = await repl.wait_for("a better answer", after=end)
    await repl.at_prompt()
    repl.type("/history" + ENTER)
    history_at = await repl.wait_for("messages (the full log", after=end)
    await repl.wait_for("agent: a better answer", after=history_at)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0

    expected = ["hi", "hello", "list my sandboxes", "a better answer"]
    # What the model was sent, what the agent holds, what was saved, what /history shows.
    assert [m.content for m in client.requests[-1].messages[1:]] == expected[:3]
    assert [m.content for m in repl.conversation.agent.history] == expected
    session = repl.conversation.session
    assert session is not None
    assert [m.content for m in store.full_log(session.id)] == expected
    assert [m.content for m in store.load_history(session.id)] == expected
    shown = repl.text[history_at:]
    assert shown.count("you: list my sandboxes") == 1 and "an answer to replace" not in shown
    assert "4 messages" in repl.text[history_at - 60 : history_at]
    assert store.list_sessions()[0].message_count == 4


async def test_retry_with_nothing_said_says_so(pipe) -> None:
    repl = driver(pipe, ScriptedChatClient())
    repl.start()
    repl.type("/retry" + ENTER)
    await repl.wait_for("Nothing to retry yet.")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0


# Item 9: /model lists the gateway's hints and refuses an unknown one at once.
async def test_model_lists_the_gateways_hints_and_refuses_an_unknown_one(pipe) -> None:
    asked: list[int] = []

    async def hints() -> list[str]:
        asked.append(1)
        return ["agent", "deep"]

    client = ScriptedChatClient([text_completion("from agent"), text_completion("from deep")])
    repl = driver(pipe, client, routing_hints=hints)
    repl.start()
    repl.type("/model" + ENTER)
    end = await repl.wait_for("Routing hint: agent · the gateway has: agent, deep")
    repl.type("/model fast" + ENTER)
    end = await repl.wait_for("The gateway has no routing hint 'fast'", after=end)
    repl.type("hi" + ENTER)
    end = await repl.wait_for("from agent", after=end)
    await repl.at_prompt()
    repl.type("/model de" + TAB)  # Tab completes the hints the gateway listed
    await prompt_shows(repl, "/model deep")
    repl.type(ENTER)
    end = await repl.wait_for("The next turns use the routing hint 'deep'.", after=end)
    repl.type("again" + ENTER)
    await repl.wait_for("from deep", after=end)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert [r.routing_hint for r in client.requests] == ["agent", "deep"]
    assert len(asked) == 3


async def test_model_with_a_gateway_that_cannot_list_takes_the_hint_unchecked(pipe) -> None:
    async def unsupported() -> list[str]:
        raise RoutingHintsUnavailableError(
            "the gateway at x:1 cannot list its routing hints", unsupported=True
        )

    client = ScriptedChatClient([text_completion("ok")])
    repl = driver(pipe, client, routing_hints=unsupported)
    repl.start()
    repl.type("/model fast" + ENTER)
    end = await repl.wait_for(
        "routing hint 'fast'. (not checked: the gateway at x:1 cannot list its routing hints)"
    )
    repl.type("hi" + ENTER)
    await repl.wait_for("ok", after=end)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert client.requests[0].routing_hint == "fast"


# Item 10: completion ignores case.
@pytest.mark.parametrize(("typed", "completed"), [("/TO", "/tools"), ("/Hi", "/history")])
async def test_tab_completes_commands_whatever_the_case(pipe, typed: str, completed: str) -> None:
    repl = driver(pipe, ScriptedChatClient())
    repl.start()
    repl.type(typed + TAB)
    await prompt_shows(repl, completed)
    repl.type(ENTER)
    await repl.wait_for("sandbox_list" if completed == "/tools" else "Nothing has been said")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0


# Item 10: a lone Esc at `Run it? [y/N]` answers No; the turn goes on.
async def test_esc_at_the_question_declines(pipe, tmp_path: Path) -> None:
    client = ScriptedChatClient(
        [tool_completion(call("d", "sandbox_delete", name="py-worker")), text_completion("kept")]
    )
    repl = ReplDriver(
        pipe,
        client=client,
        runner_factory=lambda confirm: NavToolRunner(
            NAV_SIM, cluster="demo", confirm=confirm, env=nav_sim_state(tmp_path)
        ),
    )
    repl.start()
    repl.type("delete py-worker" + ENTER)
    end = await repl.wait_for("wants to run:")
    repl.type(ESC)
    end = await repl.wait_for("declined, not run", after=end)
    await repl.wait_for("kept", after=end)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert "[turn cancelled]" not in repl.text
    assert "declined" in client.requests[1].messages[-1].content


# Item 11: /sessions, /resume NAME (Tab completes it), /export [FILE].
async def test_sessions_resume_and_export_inside_the_repl(
    pipe, store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    work = store.create(name="work-incident", cluster="demo")
    recorder = store.recorder(work.id)
    recorder.record_message(UserMessage(content="what runs on dev-box?"))
    recorder.record_message(AssistantMessage(content="dev-box runs the web app."))
    client = ScriptedChatClient([text_completion("fresh answer"), text_completion("resumed")])
    repl = driver(pipe, client, store=store, width=80)
    repl.start()
    repl.type("a new question" + ENTER)
    end = await repl.wait_for("fresh answer")
    new = repl.conversation.session
    assert new is not None
    await repl.at_prompt()
    repl.type("/sessions" + ENTER)
    end = await repl.wait_for("/resume NAME continues one", after=end)
    listing = repl.text[:end]
    assert "work-incident" in listing and new.label in listing
    assert f"this conversation is session {new.label}" in listing

    repl.type("/resume work-in" + TAB)
    await prompt_shows(repl, "/resume work-incident")
    repl.type(ENTER)
    end = await repl.wait_for("Resuming session work-incident (2 messages)", after=end)
    end = await repl.wait_for("agent: dev-box runs the web app.", after=end)
    repl.type("and now?" + ENTER)
    end = await repl.wait_for("resumed", after=end)
    await repl.at_prompt()
    repl.type("/export" + ENTER)
    end = await repl.wait_for("wrote nav-agent-work-incident.md", after=end)
    repl.type("/export out/run.json" + ENTER)
    end = await repl.wait_for("cannot write out/run.json", after=end)
    repl.type("/export run.json" + ENTER)
    end = await repl.wait_for("wrote run.json: JSON of 4 messages", after=end)
    repl.type("/resume nope" + ENTER)
    await repl.wait_for("cannot resume nope: no saved session", after=end)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0

    assert users(client.requests[1]) == ["what runs on dev-box?", "and now?"]
    assert [m.content for m in store.full_log(work.id)][-2:] == ["and now?", "resumed"]
    assert [m.content for m in store.full_log(new.id)] == ["a new question", "fresh answer"]
    markdown = (tmp_path / "nav-agent-work-incident.md").read_text(encoding="utf-8")
    assert "# nav agent session work-incident" in markdown and "## You\n\nand now?" in markdown
    exported = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert exported["session"]["name"] == "work-incident" and len(exported["messages"]) == 4


async def test_resume_refuses_a_demo_session_outside_the_demo(pipe, store) -> None:
    demo = store.create(name="tried-it", cluster="demo", demo=True)
    store.recorder(demo.id).record_message(UserMessage(content="list my sandboxes"))
    repl = driver(pipe, ScriptedChatClient(), store=store)
    repl.start()
    repl.type("/resume tried-it" + ENTER)
    await repl.wait_for("resume it with `nav agent --demo --session tried-it`")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert repl.conversation.session is None


async def test_export_of_an_empty_conversation_says_so(pipe, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    repl = driver(pipe, ScriptedChatClient())
    repl.start()
    repl.type("/export" + ENTER)
    await repl.wait_for("Nothing to export yet")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert list(tmp_path.iterdir()) == []


# Issue 27, section 4: /export never replaces a file or writes through a link, and a
# pasted NUL in the name is one error line; the REPL and the conversation go on.
async def test_export_refuses_what_is_there_and_a_bad_name_without_losing_anything(
    pipe, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.md").write_text("my notes", encoding="utf-8")
    (tmp_path / "link.md").symlink_to(tmp_path / "notes.md")
    client = ScriptedChatClient([text_completion("first answer"), text_completion("second")])
    repl = driver(pipe, client, width=100)
    repl.start()
    repl.type("hello" + ENTER)
    end = await repl.wait_for("first answer")
    await repl.at_prompt()
    repl.type("/export notes.md" + ENTER)
    end = await repl.wait_for("notes.md already exists (a file)", after=end)
    end = await repl.wait_for("e.g. notes-2.md", after=end)
    repl.type("/export link.md" + ENTER)
    end = await repl.wait_for("link.md already exists (a symbolic link)", after=end)
    repl.type("/export " + ESC + "[200~bad\x00name.md" + ESC + "[201~" + ENTER)
    end = await repl.wait_for("is not a usable file name", after=end)
    repl.type("go on" + ENTER)
    end = await repl.wait_for("second", after=end)
    await repl.at_prompt()
    repl.type("/export kept.json" + ENTER)
    await repl.wait_for("wrote kept.json: JSON of 4 messages", after=end)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert (tmp_path / "notes.md").read_text(encoding="utf-8") == "my notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.json", "link.md", "notes.md"]
    assert users(client.requests[1]) == ["hello", "go on"]
