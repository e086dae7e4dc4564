"""The `nav agent` REPL on this process's terminal, its model and tools held by gate files.

Run as a program by the pseudo-terminal tests: `python -m tests.cli.gated_repl
SCRIPT.json`. It wires the REPL as `nav agent` does (`make_prompt_session`,
`TerminalRenderer` on stdout and stderr, `PromptConfirm`, a session store,
`run_repl`); only the model and the tools are scripted. Each model request
takes the next completion of the script: it streams `before`, then waits
until the file named `gate` exists in the gates folder, then streams `text`
and ends, calling `tools`. The n-th tool call waits for the file `tool<n>`.
So a test types while a turn certainly runs, and lets it go on when it has
seen what it waited for: no sleeps, whatever the machine's load.

Script keys: `gates` (folder), `state` (folder of the session database),
`completions` (list of {before, gate, text, tools}), `hints` (the gateway's
routing hints; absent: the gateway cannot list them).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.history import InMemoryHistory
from rich.console import Console

from navagent.cli.conversation import AgentSession
from navagent.cli.prompt import make_prompt_session
from navagent.cli.render import TerminalRenderer
from navagent.cli.repl import PromptConfirm, run_repl
from navagent.cli.slash import SlashState
from navagent.core.agent import Agent, ConversationRecorder
from navagent.core.chat_client import RoutingHintsUnavailableError
from navagent.core.events import (
    MessageComplete,
    StreamEvent,
    TextDelta,
    ToolCallStart,
    TurnEnd,
    Usage,
)
from navagent.core.messages import AssistantMessage, ChatRequest, Message, ToolCall
from navagent.core.sessions import SessionStore
from navagent.core.tools import TOOLS, ToolOutcome

PACING_S = 0.005
POLL_S = 0.02
_PIECE = re.compile(r"\s*\S{1,8}|\s+")


async def gate(folder: Path, name: str) -> None:
    while not (folder / name).exists():
        await asyncio.sleep(POLL_S)


class GatedModel:
    def __init__(self, completions: list[dict[str, Any]], gates: Path) -> None:
        self.completions = completions
        self.gates = gates
        self.calls = 0

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        step = self.completions.pop(0) if self.completions else {"text": "(end of script)"}
        before, text = step.get("before", ""), step.get("text", "")
        for piece in _PIECE.findall(before):
            await asyncio.sleep(PACING_S)
            yield TextDelta(text=piece)
        if step.get("gate"):
            await gate(self.gates, step["gate"])
        for piece in _PIECE.findall(text):
            await asyncio.sleep(PACING_S)
            yield TextDelta(text=piece)
        calls = []
        for name in step.get("tools", []):
            self.calls += 1
            calls.append(ToolCall(id=f"c{self.calls}", name=name, arguments="{}"))
            yield ToolCallStart(index=len(calls) - 1, id=calls[-1].id, name=name)
        yield TurnEnd(
            finish_reason="tool_calls" if calls else "stop",
            usage=Usage(input_tokens=100, output_tokens=20),
        )
        yield MessageComplete(
            message=AssistantMessage(content=before + text, tool_calls=tuple(calls))
        )


class GatedTools:
    def __init__(self, gates: Path, confirm: PromptConfirm) -> None:
        self.gates = gates
        self.confirm = confirm
        self.runs = 0

    async def run(self, call: ToolCall) -> ToolOutcome:
        self.runs += 1
        if call.name in ("sandbox_create", "sandbox_delete"):
            if not await self.confirm(call, ("nav", "sandbox", call.name.split("_")[1])):
                return ToolOutcome(call=call, status="declined", content="the user declined")
        await gate(self.gates, f"tool{self.runs}")
        return ToolOutcome(call=call, status="ok", content="NAME  PHASE\ndev-box  Ready")


async def main(script: dict[str, Any]) -> int:
    gates = Path(script["gates"])
    out = Console(file=sys.stdout, highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    renderer = TerminalRenderer(out, err)
    confirm = PromptConfirm(PromptSession(), err=err, renderer=renderer)
    model, tools = GatedModel(script["completions"], gates), GatedTools(gates, confirm)

    def make_agent(history: Sequence[Message], recorder: ConversationRecorder | None) -> Agent:
        return Agent(
            model, tools, system_prompt="", tools=TOOLS, sink=renderer,
            history=history, recorder=recorder,
        )  # fmt: skip

    async def hints() -> list[str]:
        if "hints" not in script:
            raise RoutingHintsUnavailableError("this gateway cannot list them", unsupported=True)
        return list(script["hints"])

    with SessionStore(Path(script["state"]) / "sessions.db") as store:
        conversation = AgentSession(make_agent, store=store, cluster="demo")
        session = make_prompt_session(
            history=InMemoryHistory(), tool_names=[tool.name for tool in TOOLS]
        )
        return await run_repl(
            conversation,
            session=session,
            console=out,
            renderer=renderer,
            slash_state=SlashState(tools=TOOLS),
            confirm=confirm,
            routing_hints=hints,
        )


if __name__ == "__main__":
    sys.exit(asyncio.run(main(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")))))
