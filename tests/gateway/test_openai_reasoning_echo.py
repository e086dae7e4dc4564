"""Reasoning goes back to an OpenAI-compatible server in the shape it expects (issue 23).

Request-shape tests, one per flavour: a turn is translated from a transcript
of that server's stream by the route's own translator, the tool results are
appended, and the next request the same route builds is inspected.

- DeepSeek thinking mode (`reasoning_echo: reasoning_content`): every
  assistant message that made tool calls carries `reasoning_content`, or the
  API answers 400 "Missing `reasoning_content` field in the assistant message".
- `deepseek-reasoner` (`none`): it answers 400 when `reasoning_content` is sent.
- OpenRouter (the default, `reasoning_details`): the items come back unchanged.
- Opaque reasoning never goes to another route.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.gateway._origin import route_origin
from navagent.gateway._types import ReasoningEcho, RouteOptions
from navagent.gateway.protocols import PROTOCOLS
from tests.gateway.streams import FAKE_KEY, final_message, transcript, translate
from tests.gateway.thinking_parts import anthropic_part

CHAT = PROTOCOLS["openai_chat_completions"]
DEEPSEEK = ("https://api.deepseek.com", "deepseek-v4-pro")
REASONER = ("https://api.deepseek.com", "deepseek-reasoner")
OPENROUTER = ("https://openrouter.ai/api/v1", "google/gemini-3-pro-preview")
DEEPSEEK_THOUGHT = "The user wants the sandboxes on dev. I will call sandbox_list."


def turn(name: str, route: tuple[str, str], options: RouteOptions) -> AssistantMessage:
    """One streamed turn from `route`, as its translator leaves it."""
    origin = route_origin(CHAT.name, *route, FAKE_KEY)
    events = translate("openai", transcript("openai", name), origin=origin, options=options)
    return final_message(events).message


def request_body(
    history: tuple[Message, ...], route: tuple[str, str], options: RouteOptions
) -> dict[str, Any]:
    endpoint, model = route
    upstream = CHAT.build_request(
        ChatRequest(messages=history),
        endpoint=endpoint,
        model=model,
        api_key=FAKE_KEY,
        options=options,
    )
    return upstream.body


def rounds(name: str, route: tuple[str, str], options: RouteOptions, count: int) -> list[Any]:
    """`count` tool rounds on one route; the assistant messages of the last request."""
    history: tuple[Message, ...] = (UserMessage(content="list the sandboxes on dev"),)
    for _ in range(count):
        message = turn(name, route, options)
        results = tuple(
            ToolResultMessage(tool_call_id=call.id, content="web\napi")
            for call in message.tool_calls
        )
        history = (*history, message, *results)
    body = request_body(history, route, options)
    return [m for m in body["messages"] if m["role"] == "assistant"]


def test_deepseek_thinking_mode_gets_reasoning_content_back_on_every_tool_call_turn() -> None:
    options = RouteOptions(reasoning_echo="reasoning_content")
    assistants = rounds("reasoning_content_then_tool_call", DEEPSEEK, options, count=3)
    assert len(assistants) == 3
    for message in assistants:
        assert message["reasoning_content"] == DEEPSEEK_THOUGHT
        assert message["tool_calls"][0]["function"]["name"] == "sandbox_list"
        assert "reasoning_details" not in message


def test_deepseek_reasoner_gets_no_reasoning_back() -> None:
    options = RouteOptions(reasoning_echo="none")
    for name in ("reasoning_content_then_tool_call", "reasoning_details_encrypted_then_tool_call"):
        for message in rounds(name, REASONER, options, count=2):
            assert "reasoning_content" not in message and "reasoning_details" not in message
            assert "The user wants" not in json.dumps(message)


def test_reasoning_content_is_never_sent_by_default() -> None:
    # Plain reasoning text is not something a stream says must go back.
    for message in rounds("reasoning_content_then_tool_call", DEEPSEEK, RouteOptions(), count=2):
        assert set(message) == {"role", "content", "tool_calls"}


def test_reasoning_content_on_tool_calls_whose_reasoning_came_from_elsewhere_is_empty() -> None:
    options = RouteOptions(reasoning_echo="reasoning_content")
    call = ToolCall(id="call_1", name="sandbox_list")
    history: tuple[Message, ...] = (
        UserMessage(content="list"),
        # After a failover from an Anthropic route: its thinking is not ours.
        AssistantMessage(tool_calls=(call,), thinking=(anthropic_part("mine", signature="s"),)),
        ToolResultMessage(tool_call_id="call_1", content="web"),
        AssistantMessage(content="web runs."),
    )
    with_calls, answer = (
        m for m in request_body(history, DEEPSEEK, options)["messages"] if m["role"] == "assistant"
    )
    assert with_calls["reasoning_content"] == ""  # the field DeepSeek insists on, empty
    assert "reasoning_content" not in answer  # no calls, no reasoning of ours: nothing to send


def _streamed_details() -> list[dict[str, Any]]:
    return [
        {
            "type": "reasoning.text",
            "text": "Listing the sandboxes first.",
            "format": "google-gemini-v1",
            "index": 0,
        },
        {
            "type": "reasoning.encrypted",
            "data": "CiQBjz1rX3m0ZfQ2sY8v7wTq0pLkNjHgFdSaQwErTyUiOpAsDfGhJkLzXcVbNm==",
            "format": "google-gemini-v1",
            "id": "tool_sandbox_list_Zk3pQ9",
            "index": 1,
        },
    ]


@pytest.mark.parametrize("echo", ["reasoning_details", "reasoning_content"])
def test_openrouter_gets_reasoning_details_back_unchanged(echo: ReasoningEcho) -> None:
    options = RouteOptions(reasoning_echo=echo)
    name = "reasoning_details_encrypted_then_tool_call"
    message = turn(name, OPENROUTER, options)
    assert message.thinking[0].text == "Listing the sandboxes first."
    for sent in rounds(name, OPENROUTER, options, count=3):
        assert sent["reasoning_details"] == _streamed_details()
        assert ("reasoning_content" in sent) == (echo == "reasoning_content")


@pytest.mark.parametrize(
    "other",
    [
        ("https://openrouter.ai/api/v1", "anthropic/claude-sonnet-4.5"),
        ("https://backup.example.com/v1", "google/gemini-3-pro-preview"),
    ],
    ids=["other-model", "other-endpoint"],
)
@pytest.mark.parametrize("echo", ["reasoning_details", "reasoning_content"])
def test_reasoning_never_goes_to_another_route(other: tuple[str, str], echo: ReasoningEcho) -> None:
    options = RouteOptions(reasoning_echo=echo)
    message = turn("reasoning_details_encrypted_then_tool_call", OPENROUTER, options)
    history = (
        UserMessage(content="list"),
        message,
        ToolResultMessage(tool_call_id=message.tool_calls[0].id, content="web"),
    )
    sent = json.dumps(request_body(history, other, options))
    assert "reasoning_details" not in sent and "CiQBjz1r" not in sent
    assert "Listing the sandboxes" not in sent
