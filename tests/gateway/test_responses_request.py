"""Neutral request -> OpenAI Responses request, and reasoning sent back in place."""

from __future__ import annotations

from typing import Any

import pytest

from navagent.core.events import MessageComplete
from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    SystemMessage,
    ThinkingPart,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.gateway._origin import route_origin
from navagent.gateway.anthropic import build_request as anthropic_request
from navagent.gateway.openai import build_request as chat_request
from navagent.gateway.openai_responses import build_request, is_reasoning_model
from navagent.gateway.protocols import PROTOCOLS
from navagent.gateway.sse import SSEDecoder
from tests.gateway.streams import FAKE_KEY, transcript
from tests.gateway.thinking_parts import anthropic_part, responses_part

ENDPOINT, MODEL = "https://api.openai.com/v1", "gpt-5-mini"
OTHER_KEY = "org-b-test-key"
"""Another organisation's key, same endpoint and model: its encrypted reasoning is not ours."""
ORIGIN = route_origin("openai_responses", ENDPOINT, MODEL, FAKE_KEY)


def body(request: ChatRequest, *, model: str = MODEL, endpoint: str = ENDPOINT) -> dict[str, Any]:
    upstream = build_request(request, endpoint=endpoint, model=model, api_key=FAKE_KEY)
    assert upstream.url == f"{endpoint.removesuffix('/v1')}/v1/responses"
    assert upstream.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert FAKE_KEY not in str(upstream.body)
    return upstream.body


def reasoning(
    item_id: str, after: int, *, origin: str = ORIGIN, encrypted: str = ""
) -> ThinkingPart:
    return responses_part(
        "a\n\nb",
        summary=("a", "b"),
        item_id=item_id,
        encrypted=encrypted or f"enc-{item_id}",
        origin=origin,
        after=after,
    )


def item(item_id: str) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": item_id,
        "summary": [{"type": "summary_text", "text": "a"}, {"type": "summary_text", "text": "b"}],
        "encrypted_content": f"enc-{item_id}",
    }


def call(call_id: str, name: str = "sandbox_list") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}


def test_history_maps_to_input_items_with_calls_keyed_by_call_id() -> None:
    request = ChatRequest(
        messages=(
            SystemMessage(content="Be brief."),
            UserMessage(content="list"),
            AssistantMessage(content="Checking.", tool_calls=(ToolCall(id="call_1", name="x"),)),
            ToolResultMessage(tool_call_id="call_1", content="none"),
            AssistantMessage(refusal="I can't help with that."),
        ),
        tools=(Tool(name="x", description="does x", parameters={"type": "object"}),),
        max_tokens=300,
    )
    sent = body(request, model="gpt-4o")
    assert sent["input"] == [
        {"type": "message", "role": "developer", "content": "Be brief."},
        {"type": "message", "role": "user", "content": "list"},
        {"type": "message", "role": "assistant", "content": "Checking."},
        call("call_1", "x"),
        {"type": "function_call_output", "call_id": "call_1", "output": "none"},
        {"type": "message", "role": "assistant", "content": "I can't help with that."},
    ]
    assert sent["tools"] == [
        {
            "type": "function",
            "name": "x",
            "parameters": {"type": "object"},
            "strict": False,
            "description": "does x",
        }
    ]
    assert (sent["stream"], sent["store"], sent["max_output_tokens"]) == (True, False, 300)


@pytest.mark.parametrize(
    ("model", "reasons"),
    [
        ("gpt-5-mini", True),
        ("o4-mini", True),
        ("gpt-5-chat-latest", False),
        ("gpt-4o", False),
        ("gpt-4.1-nano", False),
    ],
)
def test_reasoning_options_and_temperature_depend_on_the_model(model: str, reasons: bool) -> None:
    sent = body(ChatRequest(messages=(UserMessage(content="hi"),), temperature=0.2), model=model)
    assert is_reasoning_model(model) is reasons
    assert ("include" in sent) is reasons and ("reasoning" in sent) is reasons
    assert ("temperature" in sent) is not reasons
    if reasons:
        assert sent["include"] == ["reasoning.encrypted_content"]


def test_reasoning_items_go_back_in_place_before_the_calls_that_followed_them() -> None:
    message = AssistantMessage(
        content="Let me look.",
        tool_calls=(ToolCall(id="call_1", name="sandbox_list"), ToolCall(id="call_2", name="y")),
        thinking=(reasoning("rs_1", 0), reasoning("rs_2", 1), reasoning("rs_trailing", 2)),
    )
    sent = body(ChatRequest(messages=(UserMessage(content="go"), message)))
    assert sent["input"][1:] == [
        item("rs_1"),
        {"type": "message", "role": "assistant", "content": "Let me look."},
        call("call_1"),
        item("rs_2"),
        call("call_2", "y"),
        # rs_trailing had nothing after it in its turn: the API would refuse it.
    ]


@pytest.mark.parametrize(
    "part",
    [
        reasoning(
            "rs_other_route",
            0,
            origin=route_origin("openai_responses", "https://az", MODEL, FAKE_KEY),
        ),
        reasoning(
            "rs_other_model", 0, origin=route_origin("openai_responses", ENDPOINT, "o3", FAKE_KEY)
        ),
        reasoning(
            "rs_other_key", 0, origin=route_origin("openai_responses", ENDPOINT, MODEL, OTHER_KEY)
        ),
        responses_part("a", item_id="rs_x", encrypted="", origin=ORIGIN),
        anthropic_part("Anthropic thinking", signature="sig"),
        anthropic_part(redacted="opaque"),
        anthropic_part("signed, claiming this origin", signature="sig", origin=ORIGIN),
        ThinkingPart(text="garbage payload", origin=ORIGIN, payload="{"),
        ThinkingPart(text="payload not an object", origin=ORIGIN, payload='"rs_x"'),
    ],
    ids=[
        "other-endpoint",
        "other-model",
        "other-key",
        "no-encrypted-content",
        "signed",
        "redacted",
        "anthropic-shape-same-origin",
        "invalid-json",
        "not-an-object",
    ],
)
def test_reasoning_from_elsewhere_is_never_sent(part: ThinkingPart) -> None:
    message = AssistantMessage(
        tool_calls=(ToolCall(id="call_1", name="sandbox_list"),), thinking=(part,)
    )
    sent = body(ChatRequest(messages=(UserMessage(content="go"), message)))
    assert [entry["type"] for entry in sent["input"]] == ["message", "function_call"]


def test_other_protocols_never_send_responses_reasoning() -> None:
    message = AssistantMessage(
        content="ok", tool_calls=(ToolCall(id="c", name="n"),), thinking=(reasoning("rs_1", 0),)
    )
    request = ChatRequest(messages=(UserMessage(content="go"), message))
    anthropic = anthropic_request(request, endpoint="http://a", model="claude", api_key="k").body
    assert [block["type"] for block in anthropic["messages"][1]["content"]] == ["text", "tool_use"]
    chat = chat_request(request, endpoint="http://a", model="gpt-4o", api_key="k").body
    assert "enc-rs_1" not in str(chat) and "rs_1" not in str(chat)


def test_a_translated_turn_replays_its_reasoning_to_the_same_route_only() -> None:
    translator = PROTOCOLS["openai_responses"].translator_for(
        endpoint=ENDPOINT, model=MODEL, api_key=FAKE_KEY
    )
    decoder = SSEDecoder()
    events = [
        event
        for sse in decoder.feed(transcript("openai-responses", "reasoning_then_two_calls"))
        for event in translator.handle(sse)
    ]
    final = events[-1]
    assert isinstance(final, MessageComplete)
    message = final.message
    assert {part.origin for part in message.thinking} == {ORIGIN}
    history = (
        UserMessage(content="status?"),
        message,
        ToolResultMessage(tool_call_id="call_A", content="up"),
        ToolResultMessage(tool_call_id="call_B", content="none"),
    )
    sent = body(ChatRequest(messages=history))
    assert [(e["type"], e.get("id") or e.get("call_id")) for e in sent["input"][1:5]] == [
        ("reasoning", "rs_1"),
        ("function_call", "call_A"),
        ("reasoning", "rs_2"),
        ("function_call", "call_B"),
    ]
    assert sent["input"][1]["encrypted_content"] == "gAAA-final-1"
    assert sent["input"][1]["summary"][1] == {"type": "summary_text", "text": "Then the sandboxes."}
    failover = body(ChatRequest(messages=history), endpoint="https://backup.example.com")
    assert "reasoning" not in [entry["type"] for entry in failover["input"]]
