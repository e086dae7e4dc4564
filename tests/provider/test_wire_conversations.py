"""Multi-turn conversations over every wire format, and a scripted model behind them.

The conversations of conversations.py go through the running simulator with
each format's official SDK, streamed, as its test kit drives it, tool
results coming from a fresh nav-sim cluster; every turn must lead to the same
calls and answer as in process (test_conversations.py), so the model reads
each format's history alike. `SimulatedProvider(model=...)` is then checked
to serve any `Conversation -> Plan` function over every format, and a
function that raises to become a clear 500, not a dropped connection.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from navagent.core.messages import ToolCall
from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.provider import (
    TOOL_NAMES,
    Conversation,
    Plan,
    PlannedCall,
    SimulatedProvider,
)
from navagent.fixtures.provider.wire._kit import SdkChat, kit_for
from tests.provider import _helpers as h
from tests.provider.conversations import CONVERSATIONS
from tests.provider.talk import Cluster, Turn
from tests.provider.test_conversations import problems

Format = str
FORMATS = FORMAT_IDS
WIRE_CONVERSATIONS = (
    "negated delete, then reads carry on",
    "this conversation's creations",
    "a delete is never carried into a read",
    "the previous action carries",
    "providers by description",
    "memory of the conversation",
    "a create whose command fails",
)
_MAX_ROUNDS = 8
Send = Callable[[str], tuple[str, list[tuple[str, str, str]]]]
"""One request with the history so far: (text, [(call id, tool, arguments)])."""


TOOLS = {name: h.schema(name) for name in TOOL_NAMES}


def _chat(fmt: Format, base_url: str) -> SdkChat:
    """A conversation through the format's official SDK, as its test kit drives it."""
    kit = kit_for(fmt)
    if kit.sdk is None:
        pytest.skip(f"{fmt} has no official SDK")
    pytest.importorskip(kit.sdk_package.replace("-", "."))
    return kit.sdk(base_url, TOOLS)


def _talk_over_the_wire(users: list[str], chat: SdkChat) -> list[Turn]:
    turns: list[Turn] = []
    with closing(chat), tempfile.TemporaryDirectory(prefix="nav-wire-talk-") as scratch:
        cluster = Cluster(Path(scratch))
        for user in users:
            turn = Turn(user)
            chat.user(user)
            for _ in range(_MAX_ROUNDS):
                text, calls = chat.ask()
                if not calls:
                    turn.answer = text
                    break
                turn.rounds.append([(name, args) for _, name, args in calls])
                chat.results(
                    [
                        (i, cluster.run(ToolCall(id=i, name=name, arguments=args or "{}")))
                        for i, name, args in calls
                    ]
                )
            turns.append(turn)
    return turns


def _normalised(turns: list[Turn]) -> list[Any]:
    return [[[(n, json.loads(a or "{}")) for n, a in r] for r in t.rounds] for t in turns]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("title", WIRE_CONVERSATIONS)
def test_conversation_over_the_wire(
    title: str, fmt: Format, sim: SimulatedProvider, running_sim: SimulatedProvider
) -> None:
    steps = list(CONVERSATIONS[title])
    turns = _talk_over_the_wire([step.user for step in steps], _chat(fmt, running_sim.base_url))
    for step, turn in zip(steps, turns, strict=True):
        assert problems(step, turn) == [], (step.user, turn.answer)


def _scripted(conversation: Conversation) -> Plan:
    """A team's own model: call sandbox_list once, then say how many messages it saw."""
    if conversation.messages[-1].role != "tool":
        return Plan(text="Listing.", tool_calls=(PlannedCall("sandbox_list"),))
    return Plan(text=f"Scripted answer after {len(conversation.messages)} messages.")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_scripted_model_is_served_over_every_format(fmt: Format) -> None:
    with SimulatedProvider(model=_scripted) as sim:
        turns = _talk_over_the_wire(["anything at all"], _chat(fmt, sim.base_url))
        assert _normalised(turns) == [[[("sandbox_list", {})]]]
        assert turns[0].answer == "Scripted answer after 3 messages."
        assert [record.provider for record in sim.requests] == [fmt, fmt]


def _broken(conversation: Conversation) -> Plan:
    raise ValueError("script ran out of answers")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_model_that_raises_becomes_a_clear_500(fmt: Format) -> None:
    with SimulatedProvider(model=_broken) as sim:
        chat = _chat(fmt, sim.base_url)
        # Each SDK raises its own server error, quoting the body's message.
        with pytest.raises(Exception, match="ValueError: script ran out of answers") as caught:
            _talk_over_the_wire(["hello"], chat)
        assert "500" in str(caught.value) or "Internal" in type(caught.value).__name__
