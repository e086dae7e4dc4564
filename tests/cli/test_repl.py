"""The REPL through prompt_toolkit's pipe input and a rich capture console.

A scripted chat client plays the model, so each test decides exactly what
streams and when; confirmations run the real `NavToolRunner` against
`nav-sim`, because what matters there is what actually runs.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.input import PipeInput, create_pipe_input

from navagent.cli.render import CANCELLED_NOTE, INTERRUPTED_NOTE
from navagent.core.agent import CANCELLED_RESULT, INTERRUPTED_MARK
from navagent.core.events import TextDelta
from navagent.core.messages import AssistantMessage, ToolResultMessage, UserMessage
from navagent.core.nav_cli import NavToolRunner
from navagent.core.sessions import SessionStore
from tests.cli.harness import CTRL_C, CTRL_D, ENTER, NAV_SIM, ReplDriver, nav_sim_state
from tests.core.fakes import (
    FakeToolRunner,
    ScriptedChatClient,
    Stall,
    call,
    error_completion,
    text_completion,
    tool_completion,
)


@pytest.fixture
def pipe() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe_input:
        yield pipe_input


def fake_runner(runner: FakeToolRunner | None = None):
    return lambda _confirm: runner or FakeToolRunner()


async def test_repl_streams_text_in_order_then_exits_on_ctrl_d(pipe) -> None:
    client = ScriptedChatClient([text_completion("Hello there, operator.", pieces=4)])
    repl = ReplDriver(pipe, client=client, runner_factory=fake_runner())
    repl.start()
    repl.type("hi" + ENTER)
    await repl.wait_for("operator.")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert "Hello there, operator.\n" in repl.text
    assert [m.content for m in client.requests[0].messages if isinstance(m, UserMessage)] == ["hi"]


async def test_repl_shows_tool_lines_between_the_calls_and_the_answer(pipe) -> None:
    client = ScriptedChatClient(
        [
            tool_completion(call("c1", "sandbox_logs", name="dev-box")),
            text_completion("dev-box looks healthy."),
        ]
    )
    repl = ReplDriver(pipe, client=client, runner_factory=fake_runner())
    repl.start()
    repl.type("logs of dev-box" + ENTER)
    await repl.wait_for("healthy.")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    text = repl.text
    started = text.index("→ sandbox_logs name=dev-box")
    finished = text.index("✓ sandbox_logs")
    assert started < finished < text.index("dev-box looks healthy.")


@pytest.mark.parametrize(("answer", "deleted"), [("y", True), ("n", False), ("", False)])
async def test_repl_confirms_a_delete_before_running_it(pipe, tmp_path, answer, deleted) -> None:
    client = ScriptedChatClient(
        [tool_completion(call("c1", "sandbox_delete", name="py-worker")), text_completion("ok")]
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
    await repl.wait_for("wants to run:")
    # The exact argv is shown before anything runs.
    assert f"{NAV_SIM} --cluster demo sandbox delete py-worker" in repl.text
    repl.type(answer + ENTER)
    await repl.wait_for("ok\n")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    result = client.requests[1].messages[-1]
    assert isinstance(result, ToolResultMessage)
    if deleted:
        assert "Deleted sandbox py-worker" in result.content
        assert "✓ sandbox_delete" in repl.text
    else:
        assert "declined" in result.content
        assert "declined, not run" in repl.text


async def test_repl_ctrl_c_cancels_the_turn_and_keeps_the_partial_answer(pipe) -> None:
    client = ScriptedChatClient(
        [
            [TextDelta(text="Partial "), TextDelta(text="answer"), Stall()],
            text_completion("Second answer."),
        ]
    )
    repl = ReplDriver(pipe, client=client, runner_factory=fake_runner())
    repl.start()
    repl.type("tell me a long story" + ENTER)
    await repl.wait_for("Partial answer")
    os.kill(os.getpid(), signal.SIGINT)  # what the terminal sends on Ctrl-C during a turn
    await repl.wait_for(INTERRUPTED_NOTE)
    assert client.interrupted == 1
    kept = repl.conversation.agent.history[-1]
    assert isinstance(kept, AssistantMessage)
    assert kept.content == "Partial answer" + INTERRUPTED_MARK
    # Back at the prompt: the next message works and carries the marked partial answer.
    repl.type("go on" + ENTER)
    await repl.wait_for("Second answer.")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert client.requests[1].messages[-2] == kept


async def test_repl_ctrl_c_during_a_tool_cancels_it_and_answers_the_call(pipe) -> None:
    client = ScriptedChatClient([tool_completion(call("c1"))])
    runner = FakeToolRunner(hang={"c1"})
    repl = ReplDriver(pipe, client=client, runner_factory=fake_runner(runner))
    repl.start()
    repl.type("list" + ENTER)
    await repl.wait_for("→ sandbox_list")
    while not runner.started:
        await asyncio.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)
    await repl.wait_for("cancelled")
    await repl.wait_for(CANCELLED_NOTE)
    assert INTERRUPTED_NOTE not in repl.text, "no answer text was cut"
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert runner.cancelled == ["c1"]
    last = repl.conversation.agent.history[-1]
    assert isinstance(last, ToolResultMessage) and last.content == CANCELLED_RESULT


async def test_repl_sigint_at_the_prompt_does_not_end_the_session(pipe) -> None:
    repl = ReplDriver(pipe, client=ScriptedChatClient(), runner_factory=fake_runner())
    repl.start()
    await asyncio.sleep(0.05)
    os.kill(os.getpid(), signal.SIGINT)  # e.g. `kill -INT`: nothing to cancel
    await asyncio.sleep(0.05)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0


async def test_repl_ctrl_c_at_the_prompt_clears_the_line(pipe) -> None:
    client = ScriptedChatClient([text_completion("fresh")])
    repl = ReplDriver(pipe, client=client, runner_factory=fake_runner())
    repl.start()
    repl.type("half-typed thought" + CTRL_C)
    repl.type(CTRL_C)  # on an empty line: a hint, not an exit
    await repl.wait_for("Ctrl-D or `exit` leaves")
    repl.type("new line" + ENTER)
    await repl.wait_for("fresh")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    sent = [m.content for m in client.requests[0].messages if isinstance(m, UserMessage)]
    assert sent == ["new line"]


async def test_repl_sends_a_multi_line_paste_as_one_message(pipe) -> None:
    client = ScriptedChatClient([text_completion("got both")])
    repl = ReplDriver(pipe, client=client, runner_factory=fake_runner())
    repl.start()
    repl.type("\x1b[200~first line\nsecond line\x1b[201~" + ENTER)
    await repl.wait_for("got both")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    last = client.requests[0].messages[-1]
    assert isinstance(last, UserMessage) and last.content == "first line\nsecond line"


@pytest.mark.parametrize("word", ["exit", "quit", "/exit", "  EXIT  "])
async def test_repl_exit_words_leave_with_status_0(pipe, word) -> None:
    repl = ReplDriver(pipe, client=ScriptedChatClient(), runner_factory=fake_runner())
    repl.start()
    repl.type(word + ENTER)
    assert await repl.exit_code() == 0


async def test_repl_prints_a_failed_turn_in_one_line_and_goes_on(pipe) -> None:
    client = ScriptedChatClient(
        [error_completion("the upstream provider is overloaded"), text_completion("recovered")]
    )
    repl = ReplDriver(pipe, client=client, runner_factory=fake_runner())
    repl.start()
    repl.type("first" + ENTER)
    await repl.wait_for("error: the upstream provider is overloaded\n")
    repl.type("second" + ENTER)
    await repl.wait_for("recovered")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert repl.text.count("overloaded") == 1
    assert "Traceback" not in repl.text


async def test_repl_reports_an_unexpected_exception_and_goes_on(pipe) -> None:
    class Broken:
        calls = 0

        async def stream(self, request):
            Broken.calls += 1
            if Broken.calls == 1:
                raise RuntimeError("wire melted\nsecond line of detail")
            for event in text_completion("fine again"):
                yield event

    repl = ReplDriver(pipe, client=Broken(), runner_factory=fake_runner())
    repl.start()
    repl.type("one" + ENTER)
    await repl.wait_for("error: RuntimeError: wire melted\n")
    repl.type("two" + ENTER)
    await repl.wait_for("fine again")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert "second line of detail" not in repl.text


async def test_repl_slash_commands_help_tools_history_and_unknown(pipe, tmp_path) -> None:
    client = ScriptedChatClient([tool_completion(call("c1")), text_completion("three sandboxes")])
    store = SessionStore(tmp_path / "sessions.db")
    repl = ReplDriver(pipe, client=client, runner_factory=fake_runner(), store=store)
    repl.start()
    repl.type("/help" + ENTER)
    end = await repl.wait_for("/history")
    repl.type("/tools" + ENTER)
    end = await repl.wait_for("inference_route_list", after=end)
    repl.type("list my sandboxes" + ENTER)
    end = await repl.wait_for("three sandboxes", after=end)
    session = repl.conversation.session
    assert session is not None
    end = await repl.wait_for(f"saved as session {session.label}", after=end)
    repl.type("/history" + ENTER)
    end = await repl.wait_for("agent: three sandboxes", after=end)
    repl.type("/frobnicate" + ENTER)
    await repl.wait_for("Unknown command /frobnicate; try /help", after=end)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert "you: list my sandboxes" in repl.text
    assert "→ sandbox_list" in repl.text
    store.close()


async def test_repl_clear_starts_a_new_session_and_keeps_the_old(pipe, tmp_path) -> None:
    client = ScriptedChatClient([text_completion("first answer"), text_completion("second")])
    store = SessionStore(tmp_path / "sessions.db")
    repl = ReplDriver(pipe, client=client, runner_factory=fake_runner(), store=store)
    repl.start()
    repl.type("one" + ENTER)
    end = await repl.wait_for("first answer")
    first = repl.conversation.session
    repl.type("/clear" + ENTER)
    end = await repl.wait_for("new conversation", after=end)
    repl.type("two" + ENTER)
    await repl.wait_for("second", after=end)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    second = repl.conversation.session
    assert first is not None and second is not None and first.id != second.id
    # The new conversation did not send the old one's messages.
    assert [type(m).__name__ for m in client.requests[1].messages] == [
        "SystemMessage",
        "UserMessage",
    ]
    assert [s.message_count for s in store.list_sessions()] == [2, 2]
    store.close()


async def test_repl_resumed_session_is_replayed_then_continues(pipe, tmp_path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    session = store.create(name="work", cluster="demo")
    recorder = store.recorder(session.id)
    recorder.record_message(UserMessage(content="what runs on dev-box?"))
    recorder.record_message(AssistantMessage(content="dev-box runs the web app."))
    client = ScriptedChatClient([text_completion("still running")])
    repl = ReplDriver(
        pipe, client=client, runner_factory=fake_runner(), store=store, session=session
    )
    repl.start()
    await repl.wait_for("Resuming session work (2 messages)")
    await repl.wait_for("agent: dev-box runs the web app.")
    repl.type("and now?" + ENTER)
    await repl.wait_for("still running")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    sent = [m.content for m in client.requests[0].messages[1:]]
    assert sent == ["what runs on dev-box?", "dev-box runs the web app.", "and now?"]
    assert len(store.full_log(session.id)) == 4
    store.close()


async def test_repl_spinner_shows_until_the_first_token_then_goes(pipe) -> None:
    release = asyncio.Event()
    client = ScriptedChatClient([[Stall(release), *text_completion("token!")]])
    repl = ReplDriver(pipe, client=client, runner_factory=fake_runner(), terminal=True)
    repl.start()
    repl.type("hi" + ENTER)
    spinner_at = await repl.wait_for("thinking…")
    spinning_before_the_first_token = repl.renderer.spinning
    release.set()
    answer_at = await repl.wait_for("token!")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert spinning_before_the_first_token and not repl.renderer.spinning
    # The spinner line was erased (rich's transient Live) before the answer was written.
    erase = repl.text.rfind("\x1b[2K", 0, answer_at)
    assert spinner_at < erase
    assert "thinking" not in repl.text[erase:]


async def test_repl_shows_no_spinner_on_a_plain_console(pipe) -> None:
    client = ScriptedChatClient([text_completion("plain")])
    repl = ReplDriver(pipe, client=client, runner_factory=fake_runner())
    repl.start()
    repl.type("hi" + ENTER)
    await repl.wait_for("plain")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert "thinking" not in repl.text
    assert "\x1b[" not in repl.text


def test_harness_uses_the_installed_nav_sim() -> None:
    assert Path(NAV_SIM).is_file(), "install the project: pip install -e ."
