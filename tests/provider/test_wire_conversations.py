"""Multi-turn conversations over the three wire formats, and a scripted model behind them.

The conversations of conversations.py go through the running simulator with
the official SDKs (Chat Completions, Responses, Messages, streamed), tool
results coming from a fresh nav-sim cluster; every turn must lead to the same
calls and answer as in process (test_conversations.py), so the model reads
each format's history alike. `SimulatedProvider(model=...)` is then checked
to serve any `Conversation -> Plan` function over all three formats, and a
function that raises to become a clear 500, not a dropped connection.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
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


@pytest.fixture(scope="module")
def clients(running_sim: SimulatedProvider) -> Iterator[tuple[openai.OpenAI, anthropic.Anthropic]]:
    with (
        openai.OpenAI(base_url=running_sim.openai_base_url, api_key="sk-t", max_retries=0) as oai,
        anthropic.Anthropic(base_url=running_sim.base_url, api_key="sk-a", max_retries=0) as ant,
    ):
        yield oai, ant


class _Chat:
    """A conversation over one wire format: the history in that format's own shape."""

    def __init__(self, fmt: Format, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
        self.fmt, self.oai, self.ant = fmt, oai, ant
        self.history: list[Any] = []

    def user(self, text: str) -> None:
        self.history.append({"role": "user", "content": text})

    def ask(self) -> tuple[str, list[tuple[str, str, str]]]:
        if self.fmt == "openai":
            body = h.openai_body(self.history)
            body.pop("stream")
            with self.oai.chat.completions.stream(**body) as stream:
                for _ in stream:
                    pass
                message = stream.get_final_completion().choices[0].message
            calls = [
                (c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
            if calls:
                entry["tool_calls"] = [
                    {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                    for i, n, a in calls
                ]
            self.history.append(entry)
            return message.content or "", calls
        if self.fmt == "anthropic":
            body = h.anthropic_body(self.history)
            body.pop("stream")
            with self.ant.messages.stream(**body) as stream:
                for _ in stream:
                    pass
                final = stream.get_final_message()
            blocks = [block.model_dump(exclude_none=True) for block in final.content]
            self.history.append({"role": "assistant", "content": blocks})
            text = "".join(b.text for b in final.content if b.type == "text")
            calls = [
                (b.id, b.name, json.dumps(b.input)) for b in final.content if b.type == "tool_use"
            ]
            return text, calls
        if self.fmt != "openai-responses":
            raise NotImplementedError(f"no SDK conversation for wire format {self.fmt!r}")
        tools: list[Any] = [
            {"type": "function", "name": n, "parameters": h.schema(n), "strict": False}
            for n in TOOL_NAMES
        ]
        with self.oai.responses.stream(
            model="gpt-4.1-mini", input=self.history, tools=tools, store=False
        ) as stream:
            for _ in stream:
                pass
            response = stream.get_final_response()
        items = [item.model_dump(exclude_none=True) for item in response.output]
        self.history.extend(items)
        calls = [
            (i.call_id, i.name, i.arguments) for i in response.output if i.type == "function_call"
        ]
        return response.output_text, calls

    def results(self, results: list[tuple[str, str]]) -> None:
        if self.fmt == "openai":
            self.history += [{"role": "tool", "tool_call_id": i, "content": c} for i, c in results]
        elif self.fmt == "anthropic":
            self.history.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": i, "content": c} for i, c in results
                    ],
                }
            )
        else:
            self.history += [
                {"type": "function_call_output", "call_id": i, "output": c} for i, c in results
            ]


def _talk_over_the_wire(users: list[str], chat: _Chat) -> list[Turn]:
    turns: list[Turn] = []
    with tempfile.TemporaryDirectory(prefix="nav-wire-talk-") as scratch:
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
    title: str, fmt: Format, sim: SimulatedProvider, clients: Any
) -> None:
    steps = list(CONVERSATIONS[title])
    turns = _talk_over_the_wire([step.user for step in steps], _Chat(fmt, *clients))
    for step, turn in zip(steps, turns, strict=True):
        assert problems(step, turn) == [], (step.user, turn.answer)


def _scripted(conversation: Conversation) -> Plan:
    """A team's own model: call sandbox_list once, then say how many messages it saw."""
    if conversation.messages[-1].role != "tool":
        return Plan(text="Listing.", tool_calls=(PlannedCall("sandbox_list"),))
    return Plan(text=f"Scripted answer after {len(conversation.messages)} messages.")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_scripted_model_is_served_over_every_format(fmt: Format, clients: Any) -> None:
    with SimulatedProvider(model=_scripted) as sim:
        oai = openai.OpenAI(base_url=sim.openai_base_url, api_key="sk-t", max_retries=0)
        ant = anthropic.Anthropic(base_url=sim.base_url, api_key="sk-a", max_retries=0)
        turns = _talk_over_the_wire(["anything at all"], _Chat(fmt, oai, ant))
        assert _normalised(turns) == [[[("sandbox_list", {})]]]
        assert turns[0].answer == "Scripted answer after 3 messages."
        assert [record.provider for record in sim.requests] == [fmt, fmt]


def _broken(conversation: Conversation) -> Plan:
    raise ValueError("script ran out of answers")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_model_that_raises_becomes_a_clear_500(fmt: Format) -> None:
    with SimulatedProvider(model=_broken) as sim:
        oai = openai.OpenAI(base_url=sim.openai_base_url, api_key="sk-t", max_retries=0)
        ant = anthropic.Anthropic(base_url=sim.base_url, api_key="sk-a", max_retries=0)
        error = anthropic.InternalServerError if fmt == "anthropic" else openai.InternalServerError
        with pytest.raises(error, match="ValueError: script ran out of answers"):
            _talk_over_the_wire(["hello"], _Chat(fmt, oai, ant))
