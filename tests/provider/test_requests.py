"""Request validation: the simulator refuses what the real APIs refuse, in their words."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest

from navagent.fixtures.provider import SimHTTPError, simulate
from navagent.fixtures.provider.wire._ids import sign_thinking
from tests.provider import _helpers as h

ASSISTANT_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "sandbox_list", "arguments": "{}"},
        }
    ],
}
TOOL_ANSWER = {"role": "tool", "tool_call_id": "call_1", "content": "No sandboxes found."}


def openai_refusal(body: dict[str, Any], headers: dict[str, str] | None = None) -> SimHTTPError:
    with pytest.raises(SimHTTPError) as caught:
        simulate("openai", body, headers=headers)
    return caught.value


@pytest.mark.parametrize(
    ("mutate", "message", "param"),
    [
        (
            lambda b: b.update(stream_optionz=1),
            "Unrecognized request argument supplied: stream_optionz",
            None,
        ),
        (lambda b: b.pop("model"), "you must provide a model parameter", None),
        (lambda b: b.pop("messages"), "Missing required parameter: 'messages'.", "messages"),
        (lambda b: b.update(messages=[]), "Invalid 'messages': empty array.", "messages"),
        (
            lambda b: b["messages"].append({"role": "robot", "content": "x"}),
            "Invalid value: 'robot'.",
            "messages[1].role",
        ),
        (
            lambda b: b["messages"].append(dict(TOOL_ANSWER)),
            "messages with role 'tool' must be a response to a preceeding message with "
            "'tool_calls'",
            "messages.[1].role",
        ),
        (
            lambda b: b["messages"].extend(
                [copy.deepcopy(ASSISTANT_CALL), {**TOOL_ANSWER, "tool_call_id": "call_2"}]
            ),
            "messages with role 'tool' must be a response",
            "messages.[2].role",
        ),
        (
            lambda b: b["messages"].extend([copy.deepcopy(ASSISTANT_CALL), h.user("and?")]),
            "The following tool_call_ids did not have response messages: call_1",
            "messages.[1].role",
        ),
        (
            lambda b: b["messages"].extend(
                [copy.deepcopy(ASSISTANT_CALL), TOOL_ANSWER, TOOL_ANSWER]
            ),
            "messages with role 'tool' must be a response",
            "messages.[3].role",
        ),
        (
            lambda b: b["messages"].extend(
                [
                    {
                        **ASSISTANT_CALL,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "sandbox_list", "arguments": {}},
                            }
                        ],
                    },
                    TOOL_ANSWER,
                ]
            ),
            "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, "
            "but got an object instead.",
            "messages[1].tool_calls[0].function.arguments",
        ),
        (
            lambda b: b["messages"].append({"role": "assistant", "content": None}),
            "Invalid value for 'content': expected a string, got null.",
            "messages.[1].content",
        ),
        (
            lambda b: b.update(stream=False),
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
        ),
        (
            lambda b: b.update(max_tokens=0),
            "Invalid 'max_tokens': integer below minimum value.",
            "max_tokens",
        ),
        (
            lambda b: b["tools"][0]["function"].pop("name"),
            "Missing required parameter: 'tools[0].function.name'.",
            "tools[0].function.name",
        ),
    ],
)
def test_openai_refuses_like_the_real_api(mutate, message, param) -> None:
    body = h.openai_body([h.user("list my sandboxes")])
    mutate(body)
    error = openai_refusal(body)
    assert error.status == 400 and message in error.message
    assert error.param == param


def test_openai_accepts_a_complete_tool_round_and_text_parts() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "list my"}, {"type": "text", "text": "sandboxes"}],
        },
        ASSISTANT_CALL,
        TOOL_ANSWER,
    ]
    assert simulate("openai", h.openai_body(messages)).plan.text == "You have no sandboxes."


def test_openai_requires_a_bearer_key_and_valid_json() -> None:
    error = openai_refusal(h.openai_body([h.user("hi")]), headers={"authorization": "Basic abc"})
    assert error.status == 401 and error.message.startswith("You didn't provide an API key.")
    with pytest.raises(SimHTTPError, match="We could not parse the JSON body"):
        simulate("openai", b"{not json", headers={"authorization": "Bearer k"})


def anthropic_refusal(body: dict[str, Any], headers: dict[str, str] | None = None) -> SimHTTPError:
    with pytest.raises(SimHTTPError) as caught:
        simulate("anthropic", body, headers=headers)
    return caught.value


USE = {"type": "tool_use", "id": "toolu_1", "name": "sandbox_list", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "No sandboxes found."}


@pytest.mark.parametrize(
    ("messages", "extra", "message"),
    [
        ([h.user("hi")], {"max_tokens": None}, "max_tokens: Field required"),
        ([h.user("hi")], {"model": None}, "model: Field required"),
        (
            [h.user("hi")],
            {"stream_options": {"include_usage": True}},
            "stream_options: Extra inputs are not permitted",
        ),
        (
            [h.user("hi")],
            {"max_tokens": 0},
            "max_tokens: Input should be greater than or equal to 1",
        ),
        ([], {}, "messages: at least one message is required"),
        (
            [{"role": "system", "content": "be nice"}, h.user("hi")],
            {},
            'messages.0.role: Unexpected role "system". The Messages API accepts a top-level '
            "`system` parameter",
        ),
        (
            [h.user("hi"), h.user("again")],
            {},
            'roles must alternate between "user" and "assistant", but found multiple "user" '
            "roles in a row",
        ),
        (
            [{"role": "assistant", "content": "hi"}, h.user("x")],
            {},
            'messages: first message must use the "user" role',
        ),
        (
            [{"role": "user", "content": [{"type": "text", "text": ""}]}],
            {},
            "messages: text content blocks must be non-empty",
        ),
        (
            [h.user("")],
            {},
            "messages.0: all messages must have non-empty content except for the optional final "
            "assistant message",
        ),
        (
            [
                h.user("list"),
                {"role": "assistant", "content": [USE]},
                {"role": "user", "content": [{**RESULT, "tool_use_id": "toolu_2"}]},
            ],
            {},
            "messages.2: `tool_use` ids were found without `tool_result` blocks immediately "
            "after: toolu_1.",
        ),
        (
            [
                h.user("list"),
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": [RESULT]},
            ],
            {},
            "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
            "toolu_1.",
        ),
        (
            [
                h.user("list"),
                {"role": "assistant", "content": [USE]},
                {"role": "user", "content": [RESULT]},
            ],
            {"tools": None},
            "Requests which include `tool_use` or `tool_result` blocks must define tools.",
        ),
        (
            [
                h.user("list"),
                {"role": "assistant", "content": [{**USE, "input": "{}"}]},
                {"role": "user", "content": [RESULT]},
            ],
            {},
            "messages.1.content.0.tool_use.input: Input should be a valid dictionary",
        ),
        (
            [h.user("hi")],
            {"tools": [{"name": "sandbox_list"}]},
            "tools.0.custom.input_schema: Field required",
        ),
        (
            [h.user("hi")],
            {"thinking": {"type": "enabled", "budget_tokens": 4096}, "max_tokens": 1024},
            "`max_tokens` must be greater than `thinking.budget_tokens`",
        ),
    ],
)
def test_anthropic_refuses_like_the_real_api(messages, extra, message) -> None:
    body = h.anthropic_body(messages, **extra)
    for key, value in extra.items():
        if value is None:
            body.pop(key, None)
    error = anthropic_refusal(body)
    assert error.status == 400 and message in error.message


def test_anthropic_accepts_whitespace_text_like_the_real_api_did() -> None:
    # conformance/real/anthropic/haiku45-text-after-tool-results.json sent a " " text block.
    messages = [
        h.user("list my sandboxes"),
        {"role": "assistant", "content": [{"type": "text", "text": " "}, USE]},
        {"role": "user", "content": [RESULT]},
    ]
    assert simulate("anthropic", h.anthropic_body(messages)).plan.text == "You have no sandboxes."


def test_anthropic_checks_the_thinking_block_of_the_last_turn() -> None:
    thought = "The user wants a list."
    thinking = {
        "type": "thinking",
        "thinking": thought,
        "signature": sign_thinking(thought, bytes(16)),
    }
    good = [
        h.user("list my sandboxes"),
        {"role": "assistant", "content": [thinking, USE]},
        {"role": "user", "content": [RESULT]},
    ]
    model = {"model": "claude-opus-4-6-thinking"}
    assert simulate("anthropic", h.anthropic_body(good, **model)).script.signature
    forged = copy.deepcopy(good)
    forged[1]["content"][0]["signature"] = "SimAAAA"
    assert (
        "messages.1.content.0: Invalid `signature` in `thinking` block"
        in anthropic_refusal(h.anthropic_body(forged, **model)).message
    )
    dropped = copy.deepcopy(good)
    dropped[1]["content"] = [USE]
    message = anthropic_refusal(h.anthropic_body(dropped, **model)).message
    assert message.startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, "
        "but found `tool_use`."
    )
    # Without thinking the same history is fine: the requirement comes with thinking.
    assert simulate("anthropic", h.anthropic_body(dropped)).plan.text == "You have no sandboxes."


def test_anthropic_auth_accepts_x_api_key_or_bearer_and_needs_a_version() -> None:
    body = h.anthropic_body([h.user("hi")])
    for headers in (
        {"x-api-key": "k", "anthropic-version": "2023-06-01"},
        {"authorization": "Bearer k", "anthropic-version": "x"},
    ):
        assert simulate("anthropic", body, headers=headers).script.stop == "end"
    missing = anthropic_refusal(body, headers={"anthropic-version": "2023-06-01"})
    assert (missing.status, missing.message) == (401, "x-api-key header is required")
    version = anthropic_refusal(body, headers={"x-api-key": "k"})
    assert (version.status, version.message) == (400, "anthropic-version: header is required")


def test_error_bodies_over_http_have_each_providers_shape(sim) -> None:
    with httpx.Client(base_url=sim.base_url) as client:
        bad = h.openai_body([h.user("hi")], max_tokens=0)
        response = client.post(
            "/v1/chat/completions", json=bad, headers={"authorization": "Bearer secret-key"}
        )
        assert response.status_code == 400
        assert response.json() == {
            "error": {
                "message": "Invalid 'max_tokens': integer below minimum value. "
                "Expected a value >= 1, but got 0 instead.",
                "type": "invalid_request_error",
                "param": "max_tokens",
                "code": "integer_below_min_value",
            }
        }
        assert response.headers["x-request-id"].startswith("req_")
        response = client.post(
            "/v1/messages",
            json=h.anthropic_body([h.user("hi")]),
            headers={"anthropic-version": "2023-06-01"},
        )
        assert response.status_code == 401
        body = response.json()
        assert body == {
            "type": "error",
            "error": {"type": "authentication_error", "message": "x-api-key header is required"},
            "request_id": response.headers["request-id"],
        }
        assert client.post("/v1/nope", json={}).status_code == 404
    assert "secret-key" not in json.dumps([r.body for r in sim.requests])


def test_anthropic_user_turn_with_several_texts_answers_the_newest() -> None:
    # After a failed turn the agent's next message is merged into the same
    # Anthropic user turn; the old text (and its fault marker) is history.
    from navagent.fixtures.provider import simulate

    body = {
        "model": "claude-sim",
        "max_tokens": 1024,
        "stream": True,
        "tools": [
            {"name": name, "input_schema": {"type": "object"}}
            for name in ("sandbox_list", "provider_list")
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "list my sandboxes [sim-fault: http-500]"},
                    {"type": "text", "text": "list providers"},
                ],
            },
        ],
    }
    reply = simulate("anthropic", body)
    assert reply.request.marker is None
    assert [call.name for call in reply.plan.tool_calls] == ["provider_list"]
