"""The real `nav agent` REPL on this process's terminal, answered by a script.

Run as a program by the pseudo-terminal tests: `python -m tests.cli.scripted_repl
ANSWER_FILE` answers every message by streaming the file's text (markdown) in
word pieces, `PACING_S` apart, through the same prompt session, renderer
and consoles `nav agent` uses. The simulated provider's rules cannot be asked
for a table and a code block; this can.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from prompt_toolkit import PromptSession
from rich.console import Console

from navagent.cli.conversation import AgentSession
from navagent.cli.render import TerminalRenderer
from navagent.cli.repl import run_repl
from navagent.core.agent import Agent, ConversationRecorder
from navagent.core.events import MessageComplete, StreamEvent, TextDelta, TurnEnd, Usage
from navagent.core.messages import AssistantMessage, ChatRequest, Message
from navagent.core.tools import TOOLS, ToolOutcome

PACING_S = 0.005
_PIECE = re.compile(r"\s*\S{1,8}|\s+")


class ScriptedAnswer:
    def __init__(self, text: str) -> None:
        self.text = text

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        for piece in _PIECE.findall(self.text):
            await asyncio.sleep(PACING_S)
            yield TextDelta(text=piece)
        yield TurnEnd(finish_reason="stop", usage=Usage(input_tokens=100, output_tokens=50))
        yield MessageComplete(message=AssistantMessage(content=self.text))


class NoTools:
    async def run(self, call: object) -> ToolOutcome:
        raise AssertionError("the scripted answer calls no tools")


async def main(answer: str) -> int:
    out = Console(file=sys.stdout, highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    renderer = TerminalRenderer(out, err)
    client = ScriptedAnswer(answer)

    def make_agent(history: Sequence[Message], recorder: ConversationRecorder | None) -> Agent:
        return Agent(client, NoTools(), system_prompt="", tools=TOOLS, sink=renderer)

    conversation = AgentSession(make_agent, store=None, cluster="demo")
    return await run_repl(conversation, session=PromptSession(), console=out, renderer=renderer)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(Path(sys.argv[1]).read_text(encoding="utf-8"))))
