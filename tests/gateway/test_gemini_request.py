"""Gemini request building: URL from the registry row, contents, and signatures sent back."""

from __future__ import annotations

import json
from typing import Any

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
from navagent.gateway._types import UpstreamRequest
from navagent.gateway.gemini import build_request
from tests.gateway.streams import final_message, transcript, translate

ENDPOINT = "https://generativelanguage.googleapis.com/v1beta/"
MODEL = "gemini-2.5-flash"
KEY = "K-1"
ORIGIN = route_origin("google_gemini", ENDPOINT, MODEL, KEY)


def build(*messages: Any, **kwargs: Any) -> UpstreamRequest:
    return build_request(
        ChatRequest(messages=messages, **kwargs), endpoint=ENDPOINT, model=MODEL, api_key=KEY
    )


# The model is in the path, streaming is `?alt=sse`, the key only in its header.
def test_gemini_request_url_and_headers() -> None:
    upstream = build(UserMessage(content="hi"))
    assert upstream.url == (
        "https://generativelanguage.googleapis.com/v1beta/models/"
        "gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert upstream.headers["x-goog-api-key"] == "K-1"
    assert "K-1" not in upstream.url and "K-1" not in json.dumps(upstream.body)
    assert "model" not in upstream.body and "stream" not in upstream.body


def test_gemini_request_system_tools_and_options() -> None:
    tool = Tool(name="sandbox_list", description="List.", parameters={"type": "object"})
    body = build(
        SystemMessage(content="Be brief."),
        SystemMessage(content="Use tools."),
        UserMessage(content="hi"),
        tools=(tool,),
        max_tokens=64,
        temperature=0.5,
    ).body
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief.\n\nUse tools."}]}
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "sandbox_list",
                    "description": "List.",
                    "parametersJsonSchema": {"type": "object"},
                }
            ]
        }
    ]
    assert body["generationConfig"] == {
        "thinkingConfig": {"includeThoughts": True},
        "maxOutputTokens": 64,
        "temperature": 0.5,
    }


# Calls go back whole without ids; consecutive results share one user turn,
# named after the call they answer; a user message after them joins it.
def test_gemini_request_tool_round_trip_contents() -> None:
    calls = (
        ToolCall(id="c1", name="sandbox_get", arguments='{"name": "a"}'),
        ToolCall(id="c2", name="sandbox_logs", arguments=""),
    )
    body = build(
        UserMessage(content="look"),
        AssistantMessage(content="Checking.", tool_calls=calls),
        ToolResultMessage(tool_call_id="c1", content="ok"),
        ToolResultMessage(tool_call_id="c2", content="logs"),
        UserMessage(content="and?"),
    ).body
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "look"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Checking."},
                {"functionCall": {"name": "sandbox_get", "args": {"name": "a"}}},
                {"functionCall": {"name": "sandbox_logs", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "sandbox_get", "response": {"result": "ok"}}},
                {"functionResponse": {"name": "sandbox_logs", "response": {"result": "logs"}}},
                {"text": "and?"},
            ],
        },
    ]


# What the translator kept comes back on the same parts: the call's signature
# on that call, the text's on the text; another route's parts are dropped.
def test_gemini_request_signatures_go_back_where_they_came() -> None:
    streamed = final_message(
        translate("gemini", transcript("gemini", "thinking_then_two_calls"), origin=ORIGIN)
    ).message
    results = [ToolResultMessage(tool_call_id=c.id, content="x") for c in streamed.tool_calls]
    model_turn = build(UserMessage(content="q"), streamed, *results).body["contents"][1]
    assert model_turn["parts"][0] == {
        "functionCall": {"name": "sandbox_get", "args": {"name": "dev-box"}},
        "thoughtSignature": "c2lnLWNhbGw=",
    }
    assert "thoughtSignature" not in model_turn["parts"][1]
    assert not any(part.get("thought") for part in model_turn["parts"])

    signed_text = final_message(
        translate("gemini", transcript("gemini", "thinking_then_text_signed"), origin=ORIGIN)
    ).message
    parts = build(UserMessage(content="q"), signed_text).body["contents"][1]["parts"]
    assert parts == [{"text": "Hi there.", "thoughtSignature": "c2lnLXRleHQ="}]

    foreign = signed_text.model_copy(
        update={"thinking": (ThinkingPart(text="t", origin="other:1", payload="{}"),)}
    )
    assert build(UserMessage(content="q"), foreign).body["contents"][1]["parts"] == [
        {"text": "Hi there."}
    ]
