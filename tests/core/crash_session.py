"""A process that gets killed mid-turn: run by test_sessions with `python -m`.

It records a session named "crashy" in the database given as argv[1]; the
model asks for two tools, the first hangs forever, the second finishes (its
result is recorded). The parent waits for that result to reach the database
and then sends SIGKILL, so nothing gets a chance to clean up.
"""

from __future__ import annotations

import asyncio
import sys

from navagent.core.agent import Agent
from navagent.core.sessions import SessionStore
from tests.core.fakes import (
    SYSTEM_PROMPT,
    TOOLS,
    FakeToolRunner,
    ScriptedChatClient,
    call,
    tool_completion,
)


async def main(db_path: str) -> None:
    with SessionStore(db_path) as store:
        session = store.create(name="crashy", cluster="dev")
        client = ScriptedChatClient(
            [tool_completion(call("stuck", "sandbox_logs", name="web"), call("quick"))]
        )
        agent = Agent(
            client,
            FakeToolRunner(hang={"stuck"}),
            system_prompt=SYSTEM_PROMPT,
            tools=TOOLS,
            recorder=store.recorder(session.id),
        )
        await agent.run_turn("why is web failing?")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
