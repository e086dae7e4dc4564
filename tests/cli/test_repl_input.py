"""REPL input beyond one line: continuation, typing mid-turn, commands that act.

Driven through prompt_toolkit's pipe input like tests/cli/test_repl.py; the
keys typed while a turn runs go to the REPL's type-ahead, as on a terminal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import PipeInput, create_pipe_input

from navagent.cli.prompt import slash_completer
from navagent.core.agent import CANCELLED_RESULT
from navagent.core.compaction import SUMMARY_INSTRUCTION_PREFIX
from navagent.core.messages import ToolResultMessage, UserMessage
from navagent.core.nav_cli import NavToolRunner
from tests.cli.harness import CTRL_C, CTRL_D, ENTER, NAV_SIM, ReplDriver, nav_sim_state
from tests.core.fakes import (
    FakeToolRunner,
    ScriptedChatClient,
    call,
    text_completion,
    tool_completion,
)

ESC = "\x1b"


@pytest.fixture
def pipe() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe_input:
        yield pipe_input


def users(request) -> list[str]:
    return [m.content for m in request.messages if isinstance(m, UserMessage)]


async def test_trailing_backslash_and_esc_enter_continue_the_message(pipe) -> None:
    client = ScriptedChatClient([text_completion("one"), text_completion("two")])
    repl = ReplDriver(pipe, client=client, runner_factory=lambda _c: FakeToolRunner())
    repl.start()
    repl.type("first line\\" + ENTER + "second line" + ENTER)
    await repl.wait_for("one")
    repl.type("alpha" + ESC + ENTER + "beta" + ENTER)
    await repl.wait_for("two")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert users(client.requests[0]) == ["first line\nsecond line"]
    assert users(client.requests[1])[-1] == "alpha\nbeta"


async def test_a_line_typed_during_a_tool_reaches_the_model_in_the_same_turn(pipe) -> None:
    client = ScriptedChatClient([tool_completion(call("c1")), text_completion("only web.")])
    runner = FakeToolRunner(delays={"c1": 0.5})
    repl = ReplDriver(pipe, client=client, runner_factory=lambda _c: runner)
    repl.start()
    repl.type("list" + ENTER)
    await repl.wait_for("→ sandbox_list")
    repl.type("only the web ones" + ENTER)
    await repl.wait_for("queued for the model: only the web ones")
    await repl.wait_for("only web.")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert len(client.requests) == 2, "one turn, two model calls"
    assert users(client.requests[1]) == ["list", "only the web ones"]
    answer = repl.text[repl.text.index("✓ sandbox_list") :]
    assert "only the web ones" not in answer.replace("queued for the model: only the web ones", "")


async def test_queued_lines_survive_a_cancel_as_the_next_prompt(pipe) -> None:
    client = ScriptedChatClient([tool_completion(call("c1")), text_completion("as you wish")])
    runner = FakeToolRunner(hang={"c1"})
    repl = ReplDriver(pipe, client=client, runner_factory=lambda _c: runner)
    repl.start()
    repl.type("list" + ENTER)
    await repl.wait_for("→ sandbox_list")
    repl.type("actually stop" + ENTER)
    await repl.wait_for("queued for the model")
    repl.type(ESC)
    await repl.wait_for("[turn cancelled]")
    await asyncio.sleep(0.2)
    repl.type(ENTER)  # the prompt holds the queued line: Enter sends it
    await repl.wait_for("as you wish")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert users(client.requests[1])[-1] == "actually stop"
    assert runner.cancelled == ["c1"]


async def test_ctrl_c_at_the_question_cancels_the_whole_turn(pipe, tmp_path: Path) -> None:
    delete, logs = call("d", "sandbox_delete", name="py-worker"), call("l", "sandbox_logs")
    client = ScriptedChatClient([tool_completion(delete, logs)])
    repl = ReplDriver(
        pipe,
        client=client,
        runner_factory=lambda confirm: NavToolRunner(
            NAV_SIM, cluster="demo", confirm=confirm, env=nav_sim_state(tmp_path)
        ),
    )
    repl.start()
    repl.type("delete py-worker and show logs" + ENTER)
    await repl.wait_for("wants to run:")
    await asyncio.sleep(0.2)  # the question is up
    repl.type(CTRL_C)
    await repl.wait_for("[turn cancelled]")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert len(client.requests) == 1, "no further model call in that turn"
    results = [m for m in repl.conversation.agent.history if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["d", "l"]
    assert results[1].content == CANCELLED_RESULT, "the logs call never ran"


async def test_model_and_compact_commands(pipe) -> None:
    client = ScriptedChatClient(
        [text_completion("first"), text_completion("second"), text_completion("after")],
        summaries=[text_completion("the user said hi twice")],
    )

    async def hints() -> list[str]:
        return ["agent", "fast"]

    repl = ReplDriver(
        pipe, client=client, runner_factory=lambda _c: FakeToolRunner(), routing_hints=hints
    )
    repl.start()
    repl.type("hi" + ENTER)
    await repl.wait_for("first")
    repl.type("hi again" + ENTER)
    await repl.wait_for("second")
    repl.type("/model fast" + ENTER)
    await repl.wait_for("routing hint 'fast'")
    repl.type("/compact" + ENTER)
    await repl.wait_for("compacted")
    await repl.wait_for("saved ~")
    repl.type("go on" + ENTER)
    await repl.wait_for("after")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert client.requests[2].routing_hint == "fast"
    assert client.summary_requests[0].messages[-1].content.startswith(SUMMARY_INSTRUCTION_PREFIX)


def test_tab_completes_commands_and_tool_names() -> None:
    completer = slash_completer(["sandbox_list", "sandbox_logs"])

    def complete(text: str) -> list[str]:
        document = Document(text, len(text))
        return [c.text for c in completer.get_completions(document, CompleteEvent())]

    assert complete("/to") == ["/tools"]
    assert "/retry" in complete("/re")
    assert complete("/tools sandbox_lo") == ["sandbox_logs"]
    assert complete("hello") == []


def test_completion_never_offers_a_choice_with_a_control_or_bidi_character() -> None:
    # Routing hints come from the gateway: one that reorders or hides text
    # would reach the menu and the input line as it is.
    hints = ["agent", "fast\u202etxt.exe", "evil\x1b]0;title\x07", "fas\u200bt", "faster"]
    completer = slash_completer([], {"/model": lambda: hints})
    document = Document("/model ", len("/model "))
    offered = [c.text for c in completer.get_completions(document, CompleteEvent())]
    assert offered == ["agent", "faster"]
