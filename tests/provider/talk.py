"""Talk to the simulated model the way `nav agent --demo` does, in process and fast.

Each conversation gets a fresh `nav-sim` cluster (seeded, fixed clock). Every
round, the model's calls run through the agent's own pieces: `prepare_call`
for the argv, nav-sim's `run` for the command, `format_tool_result` for the
text the model reads, and `NavToolRunner` for a create or delete that is
declined (with no one to ask, as piped and `-p` runs without `--yes` are, or
answered N in the REPL).
"""

from __future__ import annotations

import asyncio
import io
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from navagent.core._process import CapturedOutput, ProcessResult
from navagent.core.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.core.nav_cli import NavToolRunner, format_tool_result
from navagent.core.tools import prepare_call
from navagent.core.wire_formats import WireFormatId
from navagent.fixtures.nav_sim._io import Streams
from navagent.fixtures.nav_sim._main import run
from navagent.fixtures.provider import TOOL_NAMES, Conversation, plan_reply

Declining = Literal["no", "no-one-to-ask", "answered-no"]
CLOCK = "2026-03-04T17:02:11Z"
_MAX_ROUNDS = 8


@dataclass(slots=True)
class Turn:
    """What one user message led to."""

    user: str
    rounds: list[list[tuple[str, str]]] = field(default_factory=list)
    """Each response's calls: (tool, JSON arguments)."""
    answer: str = ""


async def _refusal(call: ToolCall, declining: Declining) -> str:
    async def say_no(_call: ToolCall, _argv: tuple[str, ...]) -> bool:
        return False

    confirm = say_no if declining == "answered-no" else None
    runner = NavToolRunner("nav-sim", cluster="demo", confirm=confirm)
    return (await runner.run(call)).content


class Cluster:
    """A private nav-sim cluster the model's calls run against."""

    def __init__(self, state_dir: Path) -> None:
        self.env = {"NAV_SIM_STATE": str(state_dir / "cluster.json"), "NAV_SIM_CLOCK": CLOCK}

    def run(self, call: ToolCall, declining: Declining = "no") -> str:
        """The tool result text the agent would send back for `call`."""
        if declining != "no" and call.name in ("sandbox_create", "sandbox_delete"):
            return asyncio.run(_refusal(call, declining))
        prepared = prepare_call(call, cluster="demo")
        out, err = io.BytesIO(), io.BytesIO()
        code = run(list(prepared.args), self.env, Streams(out, err))
        result = ProcessResult(
            argv=("nav", *prepared.args),
            returncode=code,
            stdout=CapturedOutput(head=out.getvalue()),
            stderr=CapturedOutput(head=err.getvalue()),
            timed_out=False,
            duration_s=0.0,
        )
        return format_tool_result(result, timeout_s=60.0)


def talk(
    users: list[str] | tuple[str, ...],
    *,
    provider: WireFormatId = "openai",
    declining: Declining = "no",
) -> list[Turn]:
    """Run a whole conversation; returns what each user message led to."""
    with tempfile.TemporaryDirectory(prefix="nav-talk-") as scratch:
        cluster = Cluster(Path(scratch))
        messages: list[Message] = []
        turns: list[Turn] = []
        counter = 0
        for user in users:
            turn = Turn(user)
            messages.append(UserMessage(content=user))
            for _ in range(_MAX_ROUNDS):
                plan = plan_reply(
                    Conversation(messages=tuple(messages), tools=TOOL_NAMES, provider=provider)
                )
                if not plan.tool_calls:
                    messages.append(AssistantMessage(content=plan.text))
                    turn.answer = plan.text
                    break
                calls = []
                for planned in plan.tool_calls:
                    counter += 1
                    calls.append(
                        ToolCall(
                            id=f"call_{counter}",
                            name=planned.name,
                            arguments=planned.arguments_json(),
                        )
                    )
                messages.append(AssistantMessage(content=plan.text, tool_calls=tuple(calls)))
                turn.rounds.append([(c.name, c.arguments) for c in calls])
                for call in calls:
                    content = cluster.run(call, declining)
                    messages.append(ToolResultMessage(tool_call_id=call.id, content=content))
            turns.append(turn)
        return turns
