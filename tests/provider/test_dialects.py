"""The simulator's server dialects: each streams what the gateway's own path reads, and
reasoning sent back altered is refused, as the real servers refuse it.

A dialect is chosen by the model a request names (`models:` in a scenario) or,
for Anthropic's redacted thinking, by Anthropic's test string in the
conversation; `fixtures/provider/formats/*` document the recordings each copies.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from navagent.core.messages import ChatRequest, ToolResultMessage, UserMessage
from navagent.core.tools import TOOLS
from navagent.fixtures.provider import SimHTTPError, simulate
from navagent.fixtures.provider.formats.anthropic.wire import REDACTED_THINKING_TRIGGER
from navagent.fixtures.provider.wire._ids import open_reasoning
from navagent.gateway.protocols import PROTOCOLS
from tests.gateway.thinking_parts import payload_of
from tests.provider.test_translators_agree import KEY, SANDBOXES, round_trip

LIST = "list my sandboxes"


def _events(frames: tuple[bytes, ...]) -> list[dict[str, Any]]:
    found = []
    for frame in frames:
        for line in frame.decode().splitlines():
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                found.append(json.loads(line[5:]))
    return found


@pytest.mark.parametrize(
    ("provider", "model", "user", "marker"),
    [
        ("openai", "deepseek-reasoner", LIST, '"reasoning_content":"'),
        ("openai", "anthropic/claude-sonnet-4.5", LIST, '"reasoning_details":[{'),
        ("openai", "qwen/qwen3-32b", LIST, '"delta":{"reasoning":"'),
        ("openai", "magistral-medium-latest", LIST, '"content":[{"type":"thinking"'),
        ("openai-responses", "gpt-oss-120b", LIST, "response.reasoning_text.delta"),
        (
            "anthropic",
            "claude-sonnet-4-5-thinking",
            f"{LIST} {REDACTED_THINKING_TRIGGER}",
            '"type":"redacted_thinking"',
        ),
    ],
)
def test_a_dialect_streams_reasoning_the_gateway_keeps(
    provider: str, model: str, user: str, marker: str
) -> None:
    request = ChatRequest(messages=(UserMessage(content=user),), tools=TOOLS)
    reply, _, message = round_trip(provider, request, model=model)

    assert marker in b"".join(reply.frames).decode()
    assert reply.script.thinking_text and message.tool_calls  # the model thought, then called
    (part,) = message.thinking
    if provider == "anthropic":  # redacted: no text, the sealed data kept to go back
        assert part.text == ""
        data = payload_of(part)["redacted_data"]
        assert open_reasoning("redacted_thinking", data) == reply.script.thinking_text
    else:
        assert part.text == reply.script.thinking_text


def test_deepseek_sends_usage_on_its_finish_chunk() -> None:
    body = {
        "model": "deepseek-reasoner",
        "messages": [{"role": "user", "content": LIST}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    events = _events(simulate("openai", body).frames)
    assert events[0]["choices"][0]["delta"] == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "",
    }
    assert all("usage" in event for event in events)
    assert [e["choices"][0]["finish_reason"] is not None for e in events].count(True) == 1
    assert events[-1]["choices"][0]["finish_reason"] and events[-1]["usage"]["total_tokens"]


def test_openrouter_streams_one_detail_item_by_index_with_its_signature_last() -> None:
    request = ChatRequest(messages=(UserMessage(content=LIST),), tools=TOOLS)
    reply, _, message = round_trip("openai", request, model="anthropic/claude-sonnet-4.5")
    fragments = [
        detail
        for event in _events(reply.frames)
        for choice in event["choices"]
        for detail in choice["delta"].get("reasoning_details") or ()
    ]
    assert {fragment["index"] for fragment in fragments} == {0}
    assert fragments[-1]["signature"] and "text" not in fragments[-1]
    (item,) = payload_of(message.thinking[0])["reasoning_details"]
    assert item["text"] == reply.script.thinking_text
    assert item["signature"] == fragments[-1]["signature"]


def _follow_up(provider: str, model: str, user: str) -> tuple[dict[str, Any], str]:
    """The gateway's next request after a round trip that called a tool."""
    first = ChatRequest(messages=(UserMessage(content=user),), tools=TOOLS)
    _, _, message = round_trip(provider, first, model=model)
    follow_up = ChatRequest(
        messages=(
            *first.messages,
            message,
            ToolResultMessage(tool_call_id=message.tool_calls[0].id, content=SANDBOXES),
        ),
        tools=TOOLS,
    )
    protocol = PROTOCOLS[
        "openai_chat_completions" if provider == "openai" else "anthropic_messages"
    ]
    body = protocol.build_request(follow_up, endpoint="http://sim.test", model=model, api_key=KEY)
    return body.body, model


def test_an_altered_reasoning_details_signature_is_refused() -> None:
    body, model = _follow_up("openai", "anthropic/claude-sonnet-4.5", LIST)
    simulate("openai", body)  # sent back as streamed: accepted
    (detail,) = body["messages"][1]["reasoning_details"]
    detail["text"] += " (edited)"
    with pytest.raises(SimHTTPError, match="Invalid `signature`") as info:
        simulate("openai", body)
    assert info.value.status == 400


def test_altered_redacted_thinking_is_refused() -> None:
    model = "claude-sonnet-4-5-thinking"
    body, _ = _follow_up("anthropic", model, f"{LIST} {REDACTED_THINKING_TRIGGER}")
    simulate("anthropic", body)
    block = body["messages"][1]["content"][0]
    assert block["type"] == "redacted_thinking"
    block["data"] = block["data"][:-4] + "AAAA"
    with pytest.raises(SimHTTPError, match="Invalid `data`") as info:
        simulate("anthropic", body)
    assert info.value.status == 400


def test_gpt5_re_encrypts_reasoning_in_its_final_response_and_the_gateway_keeps_that() -> None:
    request = ChatRequest(messages=(UserMessage(content=LIST),), tools=TOOLS)
    reply, _, message = round_trip("openai-responses", request, model="gpt-5")
    events = _events(reply.frames)
    (done,) = [
        e["item"]
        for e in events
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "reasoning"
    ]
    (final,) = [i for i in events[-1]["response"]["output"] if i["type"] == "reasoning"]
    assert final["encrypted_content"] != done["encrypted_content"]
    for sealed in (done["encrypted_content"], final["encrypted_content"]):
        assert open_reasoning(done["id"], sealed) == reply.script.thinking_text
    assert payload_of(message.thinking[0])["encrypted_content"] == final["encrypted_content"]


TWO_CALLS = "Show the last 3 lines of the logs of dev-box and py-worker."
FOLLOWING = "of type 'reasoning' was provided without its required following item."


def _interleaved_follow_up() -> dict[str, Any]:
    """The next Responses request after o4-mini reasoned, called, reasoned and called."""
    first = ChatRequest(messages=(UserMessage(content=TWO_CALLS),), tools=TOOLS)
    reply, _, message = round_trip("openai-responses", first, model="o4-mini")
    kinds = [e["item"]["type"] for e in _events(reply.frames) if e["type"].endswith("item.added")]
    assert kinds == ["reasoning", "function_call", "reasoning", "function_call"]
    follow_up = ChatRequest(
        messages=(
            *first.messages,
            message,
            *(ToolResultMessage(tool_call_id=call.id, content="ok") for call in message.tool_calls),
        ),
        tools=TOOLS,
    )
    protocol = PROTOCOLS["openai_responses"]
    built = protocol.build_request(
        follow_up, endpoint="http://sim.test", model="o4-mini", api_key=KEY
    )
    return built.body


@pytest.mark.parametrize(
    ("order", "moved"),
    [
        ((0, 2, 1, 3), 0),  # both reasoning items first: the first is not before its call
        ((0, 1, 3, 2), 2),  # the second after its call: nothing of its own follows it
        ((2, 1, 0, 3), 2),  # swapped: each before the other's call (the first met is named)
    ],
)
def test_a_reasoning_item_moved_away_from_its_call_is_refused(
    order: tuple[int, int, int, int], moved: int
) -> None:
    body = _interleaved_follow_up()
    start = next(i for i, item in enumerate(body["input"]) if item.get("type") == "reasoning")
    items = body["input"][start : start + 4]
    assert [item["type"] for item in items] == [
        "reasoning",
        "function_call",
        "reasoning",
        "function_call",
    ]
    simulate("openai-responses", body)  # sent back in place: accepted

    body["input"][start : start + 4] = [items[i] for i in order]
    with pytest.raises(SimHTTPError) as info:
        simulate("openai-responses", body)
    assert info.value.status == 400
    assert str(info.value.message) == f"Item '{items[moved]['id']}' {FOLLOWING}"
