"""Driving one scenario's conversation through the real agent loop.

This is what a user does in `nav agent`, scripted: type each turn's message,
answer each confirmation question from the turn's `confirm` list, and, at a
turn marked `resume`, quit and come back with `--resume`: the session store
is closed and reopened from its file, and a new agent starts from
`load_history`. Everything in between is the production code: `Agent`,
`NavToolRunner` running nav-sim, `SessionStore` recording every message.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from navagent.cli.scenarios._cluster import ClusterRun
from navagent.cli.scenarios._model import Provider, Scenario
from navagent.cli.scenarios._transcript import Transcript, TranscriptBuilder
from navagent.core.agent import Agent
from navagent.core.chat_client import ChatClient
from navagent.core.compaction import CompactionPolicy
from navagent.core.errors import ChatFailedError
from navagent.core.messages import Message, ToolCall
from navagent.core.nav_cli import NavToolRunner
from navagent.core.prompts import default_system_prompt
from navagent.core.sessions import SessionStore
from navagent.core.tools import TOOLS

__all__ = ["TOOL_TIMEOUT_S", "run_conversation"]

TOOL_TIMEOUT_S = 30.0
"""nav-sim answers in well under a second; a tool this slow is a harness fault."""


async def run_conversation(
    scenario: Scenario,
    provider: Provider,
    *,
    client: ChatClient,
    routing_hint: str,
    cluster: ClusterRun,
    workdir: Path,
) -> Transcript:
    """Play every turn of `scenario` and return what happened.

    A turn that fails (a provider error, a broken replay) is recorded with
    its error and the conversation goes on, as it does in the REPL.

    Args:
        scenario: The conversation.
        provider: Recorded in the transcript.
        client: The chat client (the in-process gateway's).
        routing_hint: Selects the provider's route on the gateway.
        cluster: The nav-sim cluster the tools run against.
        workdir: A private folder: the session database and the tools' cwd.
    """
    builder = TranscriptBuilder(scenario=scenario.id, provider=provider)
    answers: list[bool] = []

    async def confirm(call: ToolCall, _argv: tuple[str, ...]) -> bool:
        answer = answers.pop(0) if answers else False
        builder.note_confirmation(call, answer)
        return answer

    runner = NavToolRunner(
        cluster.binary,
        cluster=cluster.name,
        confirm=confirm,
        timeout_s=TOOL_TIMEOUT_S,
        create_timeout_s=TOOL_TIMEOUT_S,
        env=cluster.env,
        cwd=workdir,
    )
    options = scenario.options
    compaction = (
        CompactionPolicy(
            threshold_tokens=options.compaction.threshold_tokens,
            keep_recent_tokens=options.compaction.keep_recent_tokens,
        )
        if options.compaction is not None
        else None
    )
    database = workdir / "sessions.db"
    store = SessionStore(database)
    session = store.create(name=scenario.id, cluster=cluster.name)

    def new_agent(store: SessionStore, history: Sequence[Message]) -> Agent:
        return Agent(
            client,
            runner,
            system_prompt=default_system_prompt(cluster.name),
            tools=TOOLS,
            sink=builder.sink,
            routing_hint=routing_hint,
            max_tokens=options.max_tokens,
            max_iterations=options.max_iterations,
            history=history,
            recorder=store.recorder(session.id),
            compaction=compaction,
        )

    agent = new_agent(store, ())
    try:
        for turn in scenario.turns:
            if turn.resume:
                store.close()
                store = SessionStore(database)
                agent = new_agent(store, store.load_history(store.open(scenario.id).id))
            answers[:] = turn.confirm
            builder.start_turn(turn.user, resumed=turn.resume)
            try:
                await agent.run_turn(turn.user)
            except ChatFailedError:
                pass  # the transcript has the error from the TurnFinished event
    finally:
        store.close()
    return builder.transcript()
