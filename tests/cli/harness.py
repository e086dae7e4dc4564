"""Drive `run_repl` without a terminal: prompt_toolkit pipe input, rich capture consoles.

`ReplDriver` starts the REPL as a task, types keys into the pipe when the
test says so, and waits for text to show up in the transcript, so each test
reads like a session: type, wait for output, type again.
"""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyte
from prompt_toolkit import PromptSession
from prompt_toolkit.input import PipeInput
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from navagent.cli.consoles import wrap_at_words
from navagent.cli.conversation import AgentSession
from navagent.cli.prompt import make_prompt_session
from navagent.cli.render import TerminalRenderer
from navagent.cli.repl import HintLister, PromptConfirm, run_repl
from navagent.cli.slash import SlashState
from navagent.core.agent import Agent, ConversationRecorder
from navagent.core.messages import Message
from navagent.core.sessions import SessionInfo, SessionStore
from navagent.core.tools import TOOLS, ToolRunner

NAV = str(Path(sys.executable).with_name("nav"))
NAV_SIM = str(Path(sys.executable).with_name("nav-sim"))
ENTER = "\r"
CTRL_C = "\x03"
CTRL_D = "\x04"


def capture_console(file: io.StringIO, *, terminal: bool = False, width: int = 120) -> Console:
    """A console writing to `file`; `terminal=True` makes rich draw as on a TTY.

    Its lines wrap as `nav agent`'s do (`wrap_at_words`): at words on a terminal.
    """
    return wrap_at_words(
        Console(
            file=file,
            force_terminal=terminal,
            color_system="standard" if terminal else None,
            width=width,
            highlight=False,
        )
    )


class RecordingRenderer(TerminalRenderer):
    """The REPL's renderer, noting each line the type-ahead queued (tests wait on it)."""

    def __init__(self, out: Console, err: Console) -> None:
        super().__init__(out, err)
        self.queued_lines: list[str] = []

    def queued(self, line: str) -> None:
        self.queued_lines.append(line)
        super().queued(line)


class ReplDriver:
    """One REPL run against a conversation built from a chat client and a tool runner."""

    def __init__(
        self,
        pipe: PipeInput,
        *,
        client: Any,
        runner_factory: Callable[[PromptConfirm], ToolRunner],
        store: SessionStore | None = None,
        session: SessionInfo | None = None,
        terminal: bool = False,
        assume_yes: bool = False,
        routing_hints: HintLister | None = None,
        width: int = 120,
    ) -> None:
        self.pipe = pipe
        self.transcript = io.StringIO()
        """stdout and stderr together, in the order they were written."""
        console = capture_console(self.transcript, terminal=terminal, width=width)
        self.routing_hints = routing_hints
        self.renderer = RecordingRenderer(console, console)
        self.confirm = PromptConfirm(
            PromptSession(input=pipe, output=DummyOutput()), err=console, renderer=self.renderer
        )
        runner = runner_factory(self.confirm)

        def make_agent(history: Sequence[Message], recorder: ConversationRecorder | None) -> Agent:
            return Agent(
                client,
                runner,
                system_prompt="You operate a Navigator cluster.",
                tools=TOOLS,
                sink=self.renderer,
                history=history,
                recorder=recorder,
            )

        self.conversation = AgentSession(make_agent, store=store, cluster="demo", session=session)
        self.session = make_prompt_session(
            input=pipe, output=DummyOutput(), tool_names=[tool.name for tool in TOOLS]
        )
        self.console = console
        self.slash_state = SlashState(tools=TOOLS, assume_yes=assume_yes)
        self.task: asyncio.Task[int] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(
            run_repl(
                self.conversation,
                session=self.session,
                console=self.console,
                renderer=self.renderer,
                slash_state=self.slash_state,
                confirm=self.confirm,
                routing_hints=self.routing_hints,
            )
        )

    def type(self, keys: str) -> None:
        self.pipe.send_text(keys)

    @property
    def text(self) -> str:
        return self.transcript.getvalue()

    async def wait_for(self, needle: str, *, timeout: float = 10.0, after: int = 0) -> int:
        """Wait until `needle` appears at or after offset `after`; return where it ends."""
        async with asyncio.timeout(timeout):
            while (found := self.text.find(needle, after)) < 0:
                assert self.task is not None
                if self.task.done():
                    raise AssertionError(
                        f"REPL ended (result {self.task.result()}) before {needle!r}:\n{self.text}"
                    )
                await asyncio.sleep(0.01)
        return found + len(needle)

    async def until(self, predicate: Callable[[], bool], *, timeout: float = 10.0) -> None:
        """Wait until `predicate()` holds (the REPL runs meanwhile)."""
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.01)

    async def at_prompt(self) -> None:
        """Wait until the prompt reads the keys again (no turn's type-ahead has them)."""
        await self.until(lambda: self.session.app.is_running)

    async def exit_code(self, *, timeout: float = 10.0) -> int:
        assert self.task is not None
        async with asyncio.timeout(timeout):
            return await self.task


def nav_sim_state(tmp_path: Path) -> dict[str, str]:
    """The environment for nav-sim with a private state file."""
    return {**os.environ, "NAV_SIM_STATE": str(tmp_path / "cluster.json")}


def run_nav(
    *args: str,
    env: dict[str, str],
    stdin: str | None = None,
    timeout: float = 30,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the installed `nav` console script as a user would."""
    return subprocess.run(
        [NAV, *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd,
    )


def scrollback(raw: bytes, columns: int, rows: int) -> list[str]:
    """Every line a terminal shows or scrolled off, after replaying `raw`."""
    screen = pyte.HistoryScreen(columns, rows, history=10_000)
    screen.set_mode(pyte.modes.LNM)
    pyte.ByteStream(screen).feed(raw)
    history = [
        "".join(line[x].data for x in range(columns)).rstrip() for line in screen.history.top
    ]
    return history + [line.rstrip() for line in screen.display]
