"""Keys typed while a turn runs, through the whole REPL (issue 20, items 2-5).

prompt_toolkit's pipe input plays the terminal: each `repl.type(...)` is one
write, so a Meta key (Esc + key) arrives in one read as a terminal sends it.
Tools and answers wait on events the test sets, so every key is typed while
the turn is certainly running, whatever the machine's load.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from prompt_toolkit.input import PipeInput, create_pipe_input

from navagent.cli.render import CANCELLED_NOTE, INTERRUPTED_NOTE
from navagent.core.events import TextDelta
from navagent.core.messages import ToolCall, UserMessage
from navagent.core.tools import ToolOutcome
from tests.cli.harness import CTRL_D, ENTER, ReplDriver
from tests.core.fakes import ScriptedChatClient, Stall, call, text_completion, tool_completion

ESC = "\x1b"
ALT_B, ALT_F, ALT_BACKSPACE = ESC + "b", ESC + "f", ESC + "\x7f"
OPTION_LEFT, OPTION_RIGHT = ESC + "[1;3D", ESC + "[1;3C"
CTRL_A, CTRL_E, CTRL_U, CTRL_W = "\x01", "\x05", "\x15", "\x17"
UP = ESC + "[A"
PASTE = "\x1b[200~{}\x1b[201~"


@pytest.fixture
def pipe() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe_input:
        yield pipe_input


class GatedRunner:
    """Each tool call runs until the test opens its gate."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started = 0

    async def run(self, call: ToolCall) -> ToolOutcome:
        self.started += 1
        await self.gate.wait()
        self.gate.clear()
        return ToolOutcome(call=call, status="ok", content="ok")


def users(request) -> list[str]:
    return [m.content for m in request.messages if isinstance(m, UserMessage)]


def driver(pipe, client, runner=None, **options) -> ReplDriver:
    runner = runner or GatedRunner()
    return ReplDriver(pipe, client=client, runner_factory=lambda _c: runner, **options)


async def running_tool(repl: ReplDriver, runner: GatedRunner, count: int = 1) -> None:
    await repl.wait_for("→ sandbox_list")
    async with asyncio.timeout(10):
        while runner.started < count:
            await asyncio.sleep(0.01)


# Item 2: Meta keys arrive as Esc + key; they edit the queued line and never cancel.
async def test_meta_keys_during_a_turn_edit_the_line_and_the_turn_goes_on(pipe) -> None:
    client = ScriptedChatClient([tool_completion(call("c1")), text_completion("all done")])
    runner = GatedRunner()
    repl = driver(pipe, client, runner)
    repl.start()
    repl.type("list" + ENTER)
    await running_tool(repl, runner)
    repl.type("world")
    for key in (ALT_B, OPTION_LEFT, OPTION_RIGHT, ALT_B):  # each one write, as a terminal sends it
        repl.type(key)
    repl.type("hello ")
    repl.type(ALT_F)
    repl.type(" and more junk")
    repl.type(ALT_BACKSPACE)
    repl.type(ALT_BACKSPACE)
    repl.type("now" + ESC + ENTER + "second line" + ENTER)  # Esc-Enter: a newline
    end = await repl.wait_for("queued for the model: hello world and now")
    runner.gate.set()
    await repl.wait_for("all done", after=end)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert CANCELLED_NOTE not in repl.text and INTERRUPTED_NOTE not in repl.text
    assert users(client.requests[1]) == ["list", "hello world and now\nsecond line"]


# Item 3: the prompt's editing keys, and queued lines in the Up-arrow history.
async def test_editing_keys_during_a_turn_and_up_recalls_a_queued_line(pipe) -> None:
    client = ScriptedChatClient(
        [tool_completion(call("c1")), text_completion("first done"), text_completion("again")]
    )
    runner = GatedRunner()
    repl = driver(pipe, client, runner)
    repl.start()
    repl.type("list" + ENTER)
    await running_tool(repl, runner)
    repl.type("logs of dev" + CTRL_W + "gpu" + CTRL_A + "show " + CTRL_E + "!" + ENTER)
    end = await repl.wait_for("queued for the model: show logs of gpu!")
    repl.type("throw away" + CTRL_U)
    runner.gate.set()
    end = await repl.wait_for("first done", after=end)
    await repl.at_prompt()
    repl.type(UP + ENTER)  # the queued line, from the history
    await repl.wait_for("again", after=end)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert users(client.requests[1]) == ["list", "show logs of gpu!"]
    assert users(client.requests[2])[-1] == "show logs of gpu!"


# Item 4: text typed in one turn, then taken back to the prompt and cleared,
# showed beside the spinner in later turns.
async def test_a_cleared_unfinished_line_never_shows_in_a_later_turn(pipe) -> None:
    client = ScriptedChatClient(
        [
            tool_completion(call("c1")),
            text_completion("first done"),
            tool_completion(call("c2")),
            text_completion("second done"),
        ]
    )
    runner = GatedRunner()
    repl = driver(pipe, client, runner, terminal=True)
    repl.start()
    repl.type("list" + ENTER)
    await running_tool(repl, runner)
    repl.type("half typed")
    end = await repl.wait_for("› half typed")
    runner.gate.set()
    end = await repl.wait_for("first done", after=end)
    await repl.at_prompt()
    await repl.until(lambda: repl.session.default_buffer.text == "half typed")
    repl.type(CTRL_U + "list again" + ENTER)  # the prompt holds "half typed": cleared
    second = await repl.wait_for("running sandbox_list", after=end)
    await running_tool(repl, runner, count=2)
    await asyncio.sleep(0.2)  # a few spinner frames
    runner.gate.set()
    await repl.wait_for("second done", after=second)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert "half typed" not in repl.text[end:]
    assert users(client.requests[2])[-1] == "list again"


# Item 5: a queued line that becomes the next message shows as typed at the prompt.
async def test_a_queued_line_sent_as_the_next_message_shows_as_a_prompt_line(pipe) -> None:
    release = asyncio.Event()
    client = ScriptedChatClient(
        [
            [TextDelta(text="Streaming "), Stall(release), *text_completion("answer one")],
            text_completion("answer two"),
        ]
    )
    repl = driver(pipe, client)
    repl.start()
    repl.type("first" + ENTER)
    await repl.wait_for("Streaming ")
    repl.type("a follow-up" + ENTER)
    await repl.until(lambda: repl.renderer.queued_lines == ["a follow-up"])
    release.set()
    end = await repl.wait_for("answer one")
    echo = await repl.wait_for("nav> a follow-up\n", after=end)
    await repl.wait_for("answer two", after=echo)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert users(client.requests[1]) == ["first", "a follow-up"]


# Item 5: after a cancel the queued line is back in the prompt, not "queued for the model".
async def test_a_line_queued_while_streaming_is_not_announced_after_a_cancel(pipe) -> None:
    client = ScriptedChatClient(
        [[TextDelta(text="Streaming "), Stall()], text_completion("as you wish")]
    )
    repl = driver(pipe, client)
    repl.start()
    repl.type("first" + ENTER)
    await repl.wait_for("Streaming ")
    repl.type("do this instead" + ENTER)
    await repl.until(lambda: repl.renderer.queued_lines == ["do this instead"])
    repl.type(ESC)  # a lone Esc, after the escape timeout
    end = await repl.wait_for(INTERRUPTED_NOTE)
    await repl.at_prompt()
    await repl.until(lambda: repl.session.default_buffer.text == "do this instead")
    repl.type(ENTER)  # the prompt holds the line
    await repl.wait_for("as you wish", after=end)
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert "queued for the model" not in repl.text
    assert users(client.requests[1])[-1] == "do this instead"


# Item 5: every line of a queued multi-line paste is indented under the first.
@pytest.mark.parametrize("width", [60, 80, 120])
async def test_a_queued_multi_line_paste_is_indented(pipe, width: int) -> None:
    client = ScriptedChatClient([tool_completion(call("c1")), text_completion("done")])
    runner = GatedRunner()
    repl = driver(pipe, client, runner, width=width)
    repl.start()
    repl.type("list" + ENTER)
    await running_tool(repl, runner)
    repl.type(PASTE.format("first pasted line\nsecond pasted line") + ENTER)
    await repl.wait_for("second pasted line")
    runner.gate.set()
    await repl.wait_for("done")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    note = "  ↳ queued for the model: "
    assert f"{note}first pasted line\n{' ' * len(note)}second pasted line\n" in repl.text


# Issue 41: a queued paste taller than the window is not drawn live (every redraw
# would push a screenful into the scrollback); it is shown whole once, when the
# model takes it.
async def test_a_queued_paste_taller_than_the_window_is_shown_once_when_taken(pipe) -> None:
    client = ScriptedChatClient([tool_completion(call("c1")), text_completion("done")])
    runner = GatedRunner()
    repl = driver(pipe, client, runner)
    repl.start()
    repl.type("list" + ENTER)
    await running_tool(repl, runner)
    body = "\n".join(f"pasted row {i:02d}" for i in range(1, 61))
    repl.type(PASTE.format(body) + ENTER)
    await repl.until(lambda: repl.renderer.queued_lines == [body])
    assert "pasted row" not in repl.text  # not drawn under the tool line yet
    runner.gate.set()
    await repl.wait_for("done")
    repl.type(CTRL_D)
    assert await repl.exit_code() == 0
    assert users(client.requests[1]) == ["list", body]
    shown = repl.text
    assert [shown.count(f"pasted row {i:02d}") for i in range(1, 61)] == [1] * 60
    assert shown.index("queued for the model: pasted row 01") < shown.index("done")
