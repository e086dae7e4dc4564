"""The real `nav agent` REPL on this process's terminal, answered by a script.

Run as a program by the pseudo-terminal tests: `python -m tests.cli.scripted_repl
ANSWER_FILE` answers every message by streaming the file's text (markdown) in
word pieces, `PACING_S` apart, through the same prompt session, renderer
and consoles `nav agent` uses. Where the text has a `PAUSE` mark the stream
stops until the test creates `go.N` beside the file (it announces the pause
with `paused.N`), so a test can look at the screen, type or resize mid-answer.
The simulated provider's rules cannot be asked for a table and a code block;
this can.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from navagent.cli.consoles import make_console
from navagent.cli.conversation import AgentSession
from navagent.cli.prompt import make_prompt_session
from navagent.cli.render import TerminalRenderer
from navagent.cli.repl import run_repl
from navagent.core.agent import Agent, ConversationRecorder
from navagent.core.events import MessageComplete, StreamEvent, TextDelta, TurnEnd, Usage
from navagent.core.messages import AssistantMessage, ChatRequest, Message
from navagent.core.tools import TOOLS, ToolOutcome

PACING_S = 0.005
PAUSE = "⏸"
"""In an answer file: the stream stops here until the test says go (`ScriptedAnswer`)."""
_PIECE = re.compile(r"\s*\S{1,8}|\s+")


class ScriptedAnswer:
    """Streams `text`; at each `PAUSE` it writes `paused.N` in `control` and waits for `go.N`."""

    def __init__(self, text: str, control: Path) -> None:
        self.text = text
        self.control = control
        self._pauses = 0

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        for number, part in enumerate(self.text.split(PAUSE)):
            if number:
                await self._pause()
            for piece in _PIECE.findall(part):
                await asyncio.sleep(PACING_S)
                yield TextDelta(text=piece)
        yield TurnEnd(finish_reason="stop", usage=Usage(input_tokens=100, output_tokens=50))
        yield MessageComplete(message=AssistantMessage(content=self.text.replace(PAUSE, "")))

    async def _pause(self) -> None:
        self._pauses += 1
        (self.control / f"paused.{self._pauses}").touch()
        go = self.control / f"go.{self._pauses}"
        while not go.exists():
            await asyncio.sleep(0.01)


class NoTools:
    async def run(self, call: object) -> ToolOutcome:
        raise AssertionError("the scripted answer calls no tools")


async def main(answer_file: Path) -> int:
    out = make_console(file=sys.stdout)
    err = make_console(stderr=True)
    renderer = TerminalRenderer(out, err)
    client = ScriptedAnswer(answer_file.read_text(encoding="utf-8"), answer_file.parent)

    def make_agent(history: Sequence[Message], recorder: ConversationRecorder | None) -> Agent:
        return Agent(client, NoTools(), system_prompt="", tools=TOOLS, sink=renderer)

    conversation = AgentSession(make_agent, store=None, cluster="demo")
    return await run_repl(
        conversation, session=make_prompt_session(), console=out, renderer=renderer
    )


if __name__ == "__main__":
    sys.exit(asyncio.run(main(Path(sys.argv[1]))))
