"""Our request builders and stream translators agree with the simulated provider.

For each kind of stream the simulator emits, the request our gateway would
send is accepted by the simulator, and the simulator's SSE bytes translate to
exactly the message its model planned (the script it streamed): the same
text, thinking, tool call ids, names and arguments, stop reason and usage.
The SDK tests in test_provider_sdk.py prove the official clients agree too.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from navagent.core.events import MessageComplete, TurnEnd
from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.core.tools import TOOLS
from navagent.core.wire_formats import FORMAT_IDS, wire_format
from navagent.fixtures.provider import SimHTTPError, simulate
from navagent.gateway._origin import route_origin
from navagent.gateway.protocols import PROTOCOLS
from tests.gateway.sdk_oracle import responses_expected
from tests.gateway.streams import translate
from tests.gateway.test_responses_conformance import assert_matches
from tests.gateway.thinking_parts import payload_of

KEY = "sk-sim-agree"
"""Every route here has this key: the key is part of the origin reasoning goes back to."""
SANDBOXES = (
    "NAME         NAMESPACE  CREATED              PHASE\n"
    "dev-box      navigator  2026-03-04 17:02:11  Ready\n"
    "gpu-trainer  navigator  2026-03-04 17:09:45  Error\n"
)
CONVERSATIONS: dict[str, tuple[Message, ...]] = {
    "text": (SystemMessage(content="be brief"), UserMessage(content="hello there")),
    "one-tool": (UserMessage(content="list my sandboxes"),),
    "parallel-tools": (UserMessage(content="list my sandboxes and list providers"),),
    "tool-arguments": (UserMessage(content="show me the logs of dev-box"),),
    "after-tool-result": (
        UserMessage(content="list my sandboxes"),
        AssistantMessage(tool_calls=(ToolCall(id="call_a1", name="sandbox_list"),)),
        ToolResultMessage(tool_call_id="call_a1", content=SANDBOXES),
    ),
    "non-ascii": (UserMessage(content="describe the sandbox named café-box ✓"),),
}


def round_trip(
    provider: str,
    request: ChatRequest,
    model: str = "sim-1",
):
    protocol = PROTOCOLS[wire_format(provider).protocol]
    outgoing = protocol.build_request(request, endpoint="http://sim.test", model=model, api_key=KEY)
    reply = simulate(provider, outgoing.body)  # raises if the simulator rejects the request
    origin = route_origin(protocol.name, "http://sim.test", model, KEY)
    events = translate(provider, list(reply.frames), origin=origin)  # checks the contract too
    assert isinstance(events[-1], MessageComplete), events[-1]
    turn_end = events[-2]
    assert isinstance(turn_end, TurnEnd)
    return reply, turn_end, events[-1].message


def assert_same(message: AssistantMessage, script, provider: str = "") -> None:
    assert message.content == script.text_content
    # Where the API sends no call ids (the row says), the gateway derives its own.
    ids = not provider or wire_format(provider).names_calls
    assert [(ids and c.id, c.name, json.loads(c.arguments)) for c in message.tool_calls] == [
        (ids and c.id, c.name, json.loads(c.arguments or "{}")) for c in script.calls
    ]


@pytest.mark.parametrize("provider", FORMAT_IDS)
@pytest.mark.parametrize("kind", list(CONVERSATIONS))
def test_translation_matches_what_the_simulator_streamed(provider: Any, kind: str) -> None:
    request = ChatRequest(messages=CONVERSATIONS[kind], tools=TOOLS)
    reply, turn_end, message = round_trip(provider, request)
    assert_same(message, reply.script, provider)
    assert (turn_end.usage.input_tokens, turn_end.usage.output_tokens) == (
        reply.script.input_tokens,
        reply.script.output_tokens,
    )
    expected_reason = "tool_calls" if reply.script.calls else "stop"
    assert turn_end.finish_reason == expected_reason
    if kind != "text":
        assert message.tool_calls or kind == "after-tool-result"


@pytest.mark.parametrize("provider", FORMAT_IDS)
def test_max_tokens_truncation_agrees(provider: Any) -> None:
    limit = 16 if provider == "openai-responses" else 3  # Responses refuses less than 16
    request = ChatRequest(messages=CONVERSATIONS["text"], tools=TOOLS, max_tokens=limit)
    reply, turn_end, message = round_trip(provider, request)
    assert turn_end.finish_reason == "length"
    # A reasoning format spends the budget on thinking first.
    script = reply.script
    assert message.content == script.text_content
    assert len(script.thinking) + len(script.text) == limit


def test_anthropic_thinking_survives_a_tool_round_trip() -> None:
    first = ChatRequest(messages=(UserMessage(content="list my sandboxes"),), tools=TOOLS)
    reply, _, message = round_trip("anthropic", first, model="sim-thinking")
    assert message.thinking and message.thinking[0].text == reply.script.thinking_text
    assert payload_of(message.thinking[0]) == {"signature": reply.script.signature}
    # The follow-up replays the signed block; the simulator rejects it otherwise.
    follow_up = ChatRequest(
        messages=(
            *first.messages,
            message,
            ToolResultMessage(tool_call_id=message.tool_calls[0].id, content=SANDBOXES),
        ),
        tools=TOOLS,
    )
    reply, _, answer = round_trip("anthropic", follow_up, model="sim-thinking")
    assert_same(answer, reply.script)
    assert "dev-box" in answer.content
    unsigned = follow_up.model_copy(
        update={
            "messages": (
                *first.messages,
                message.model_copy(update={"thinking": ()}),
                *follow_up.messages[2:],
            )
        }
    )
    with pytest.raises(SimHTTPError, match="thinking"):
        round_trip("anthropic", unsigned, model="sim-thinking")


def test_responses_reasoning_survives_two_tool_rounds() -> None:
    model = "gpt-5-mini"
    history: tuple[Message, ...] = (
        UserMessage(content="list my sandboxes, then show the logs of the second one"),
    )
    names = []
    for _ in range(3):
        reply, _, message = round_trip(
            "openai-responses", ChatRequest(messages=history, tools=TOOLS), model
        )
        (part,) = message.thinking
        payload = payload_of(part)
        assert part.text == reply.script.thinking_text and payload["summary"] == [part.text]
        assert payload["item_id"].startswith("rs_")
        assert payload["encrypted_content"].startswith("gAAAA")
        names += [call.name for call in message.tool_calls]
        results = tuple(
            ToolResultMessage(tool_call_id=call.id, content=SANDBOXES)
            for call in message.tool_calls
        )
        history = (*history, message, *results)
    assert names == ["sandbox_list", "sandbox_logs"] and not message.tool_calls
    assert "gpu-trainer" in message.content


@pytest.mark.parametrize(
    ("tamper", "error"),
    [
        ("alter", "could not be verified"),
        ("strip", "Items are not persisted when `store` is set to false"),
        ("orphan", "was provided without its required following item"),
    ],
)
def test_responses_simulator_refuses_reasoning_replayed_wrongly(tamper: str, error: str) -> None:
    first = ChatRequest(messages=(UserMessage(content="list my sandboxes"),), tools=TOOLS)
    _, _, message = round_trip("openai-responses", first, "gpt-5-mini")
    follow_up = ChatRequest(
        messages=(
            *first.messages,
            message,
            ToolResultMessage(tool_call_id=message.tool_calls[0].id, content=SANDBOXES),
        ),
        tools=TOOLS,
    )
    body = (
        PROTOCOLS["openai_responses"]
        .build_request(follow_up, endpoint="http://sim.test", model="gpt-5-mini", api_key=KEY)
        .body
    )
    items = body["input"]
    position = next(i for i, item in enumerate(items) if item["type"] == "reasoning")
    if tamper == "alter":
        items[position]["encrypted_content"] = items[position]["encrypted_content"][:-3] + "AAA"
    elif tamper == "strip":
        del items[position]["encrypted_content"]
    else:
        del items[position + 1]  # its function_call (and so the output's call is unknown)
    with pytest.raises(SimHTTPError, match=re.escape(error)) as info:
        simulate("openai-responses", body)
    assert info.value.status == 400


def test_responses_wire_numbers_events_and_items() -> None:
    request = ChatRequest(messages=CONVERSATIONS["parallel-tools"], tools=TOOLS)
    outgoing = PROTOCOLS["openai_responses"].build_request(
        request, endpoint="http://sim.test", model="gpt-5-mini", api_key=KEY
    )
    reply = simulate("openai-responses", outgoing.body)
    events = [json.loads(frame.split(b"data: ", 1)[1]) for frame in reply.frames]
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    assert all(
        frame.startswith(f"event: {e['type']}\n".encode())
        for frame, e in zip(reply.frames, events, strict=True)
    )
    added = [e for e in events if e["type"] == "response.output_item.added"]
    assert [e["output_index"] for e in added] == list(range(len(added)))
    assert [e["item"]["type"] for e in added] == ["reasoning", "function_call", "function_call"]
    assert [e["item"]["id"][:3] for e in added] == ["rs_", "fc_", "fc_"]
    assert events[-1]["type"] == "response.completed"
    assert [item["id"] for item in events[-1]["response"]["output"]] == [
        e["item"]["id"] for e in added
    ]
    # The official SDK reads the simulated stream as we do.
    assert_matches(
        responses_expected(b"".join(reply.frames)),
        translate("openai-responses", list(reply.frames)),
    )
