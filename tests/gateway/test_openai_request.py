"""Neutral request -> OpenAI Chat Completions request body."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from syrupy.assertion import SnapshotAssertion

from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.gateway.openai import build_request
from tests.gateway.conversations import REPRESENTATIVE, SANDBOX_LIST, conversations, dumps
from tests.gateway.streams import FAKE_KEY
from tests.gateway.thinking_parts import anthropic_part

ENDPOINT = "https://api.openai.com"


def body_of(request: ChatRequest, **kwargs):
    return build_request(
        request, endpoint=ENDPOINT, model="gpt-4o-mini", api_key=FAKE_KEY, **kwargs
    ).body


def test_openai_request_representative_body(snapshot: SnapshotAssertion) -> None:
    upstream = build_request(REPRESENTATIVE, endpoint=ENDPOINT, model="gpt-4o", api_key=FAKE_KEY)
    assert upstream.url == "https://api.openai.com/v1/chat/completions"
    assert upstream.body == snapshot


@pytest.mark.parametrize(
    "endpoint",
    [
        "https://api.openai.com",
        "https://api.openai.com/",
        "https://api.openai.com/v1",
        "https://api.openai.com/v1/",
        " https://api.openai.com/v1 ",
    ],
)
def test_openai_request_endpoint_with_or_without_v1(endpoint: str) -> None:
    upstream = build_request(REPRESENTATIVE, endpoint=endpoint, model="m", api_key=FAKE_KEY)
    assert upstream.url == "https://api.openai.com/v1/chat/completions"


def test_openai_request_proxy_path_is_kept() -> None:
    upstream = build_request(
        REPRESENTATIVE, endpoint="http://localhost:8080/openai/v1", model="m", api_key=FAKE_KEY
    )
    assert upstream.url == "http://localhost:8080/openai/v1/chat/completions"


def test_openai_request_messages_map_one_to_one() -> None:
    body = body_of(REPRESENTATIVE)
    assert [m["role"] for m in body["messages"]] == [
        "system", "system", "user", "assistant", "tool", "tool", "user", "assistant", "tool",
    ]  # fmt: skip
    assert body["messages"][4] == {"role": "tool", "tool_call_id": "call_1", "content": "web\napi"}


def test_openai_request_assistant_tool_calls_shape_and_null_content() -> None:
    body = body_of(REPRESENTATIVE)
    with_text, without_text = body["messages"][3], body["messages"][7]
    assert with_text["content"] == "Let me look."
    assert with_text["tool_calls"][0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "sandbox_list", "arguments": '{"cluster": "dev"}'},
    }
    assert without_text["content"] is None
    # Empty arguments are the empty object, never "".
    assert without_text["tool_calls"][0]["function"]["arguments"] == "{}"


def test_openai_request_plain_assistant_message_keeps_string_content() -> None:
    request = ChatRequest(messages=(UserMessage(content="hi"), AssistantMessage(content="")))
    assert body_of(request)["messages"][1] == {"role": "assistant", "content": ""}


def test_openai_request_other_protocols_thinking_is_not_sent() -> None:
    thinking = anthropic_part("secret reasoning", signature="sig")
    request = ChatRequest(
        messages=(UserMessage(content="hi"), AssistantMessage(content="ok", thinking=(thinking,)))
    )
    assert "secret reasoning" not in dumps(body_of(request))
    assert "sig" not in dumps(body_of(request))


def test_openai_request_tools_and_stream_options() -> None:
    body = body_of(REPRESENTATIVE)
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "sandbox_list",
            "description": "List the sandboxes of a cluster.",
            "parameters": SANDBOX_LIST.parameters,
        },
    }
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_openai_request_options_only_when_set() -> None:
    plain = body_of(ChatRequest(messages=(UserMessage(content="hi"),)))
    assert "max_tokens" not in plain and "temperature" not in plain and "tools" not in plain
    set_ = body_of(ChatRequest(messages=(UserMessage(content="hi"),), max_tokens=5, temperature=0))
    assert (set_["max_tokens"], set_["temperature"]) == (5, 0)


def test_openai_request_model_comes_from_the_route() -> None:
    assert body_of(REPRESENTATIVE)["model"] == "gpt-4o-mini"


def test_openai_request_key_only_in_the_authorization_header() -> None:
    upstream = build_request(REPRESENTATIVE, endpoint=ENDPOINT, model="m", api_key=FAKE_KEY)
    assert upstream.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert [k for k, v in upstream.headers.items() if FAKE_KEY in v] == ["authorization"]
    assert FAKE_KEY not in dumps(upstream.body)
    assert FAKE_KEY not in repr(upstream) and FAKE_KEY not in str(upstream)


@settings(max_examples=500)
@given(request=conversations)
def test_openai_request_property_one_to_one_no_empty_text_parts(request: ChatRequest) -> None:
    messages = body_of(request)["messages"]
    assert [m["role"] for m in messages] == [m.role for m in request.messages]
    for sent, neutral in zip(messages, request.messages, strict=True):
        # Plain string content: never a list holding an empty text part.
        assert sent["content"] is None or isinstance(sent["content"], str)
        if sent["content"] is None:
            assert isinstance(neutral, AssistantMessage) and neutral.tool_calls
            assert not neutral.content
        if isinstance(neutral, SystemMessage | UserMessage | ToolResultMessage):
            assert sent["content"] == neutral.content
        for call in sent.get("tool_calls", []):
            assert call["function"]["arguments"]
    assert FAKE_KEY not in dumps(body_of(request))


def test_openai_request_tool_call_ids_survive() -> None:
    call = ToolCall(id="call_xyz", name="n", arguments="{}")
    request = ChatRequest(
        messages=(
            UserMessage(content="u"),
            AssistantMessage(tool_calls=(call,)),
            ToolResultMessage(tool_call_id="call_xyz", content="r"),
        )
    )
    messages = body_of(request)["messages"]
    assert messages[1]["tool_calls"][0]["id"] == messages[2]["tool_call_id"] == "call_xyz"
