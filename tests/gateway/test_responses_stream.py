"""OpenAI Responses stream translator: the failure paths and the neutral shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from navagent.core.events import (
    MessageComplete,
    RefusalDelta,
    StreamError,
    ThinkingDelta,
    ToolCallStart,
)
from tests.gateway.streams import transcript
from tests.gateway.test_responses_conformance import run
from tests.gateway.thinking_parts import payload_of


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
    )


def completed(**response: Any) -> dict[str, Any]:
    return {"type": "response.completed", "response": {"status": "completed", **response}}


def test_reasoning_then_two_calls_gives_thinking_calls_and_positions() -> None:
    events, unmodelled = run([transcript("openai-responses", "reasoning_then_two_calls")])
    final = events[-1]
    assert isinstance(final, MessageComplete) and unmodelled == []
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == [
        "Checking ",
        "the cluster.",
        "\n\nThen ",
        "the sandboxes.",
    ]
    assert [(e.index, e.id, e.name) for e in events if isinstance(e, ToolCallStart)] == [
        (0, "call_A", "cluster_status"),
        (1, "call_B", "sandbox_list"),
    ]
    first, second = (payload_of(part) for part in final.message.thinking)
    assert (first["item_id"], first["encrypted_content"], first["after_tool_calls"]) == (
        "rs_1",
        "gAAA-final-1",
        0,
    )
    assert (second["item_id"], second["summary"], second["after_tool_calls"]) == ("rs_2", [], 1)


def test_refusal_is_kept_apart_from_text() -> None:
    body = sse(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": "m", "type": "message"},
        },
        {"type": "response.refusal.delta", "item_id": "m", "delta": "I can't "},
        {"type": "response.refusal.delta", "item_id": "m", "delta": "help."},
        completed(usage={"input_tokens": 5, "output_tokens": 3}),
    )
    events, _ = run([body])
    final = events[-1]
    assert isinstance(final, MessageComplete)
    assert [e.text for e in events if isinstance(e, RefusalDelta)] == ["I can't ", "help."]
    assert (final.message.content, final.message.refusal) == ("", "I can't help.")
    assert events[-2].finish_reason == "refusal"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("events", "message", "code", "retryable"),
    [
        (
            [
                {
                    "type": "response.failed",
                    "response": {"error": {"code": "server_error", "message": "boom"}},
                }
            ],
            "boom",
            "upstream_unavailable",
            True,
        ),
        (
            [
                {
                    "type": "error",
                    "code": "rate_limit_exceeded",
                    "message": "slow down",
                    "param": None,
                }
            ],
            "slow down",
            "rate_limited",
            True,
        ),
        (
            [{"type": "response.created", "response": {}}],
            "OpenAI stream ended before response.completed",
            "upstream_unavailable",
            True,
        ),
        (
            [{"type": "response.function_call_arguments.delta", "item_id": "fc_9", "delta": "{"}],
            "OpenAI stream: arguments for function_call 'fc_9', which never started",
            "upstream_unavailable",
            False,
        ),
        (
            [{"type": "response.output_item.added", "item": {"id": "fc", "type": "function_call"}}],
            "OpenAI stream: function_call item 'fc' has no call_id or no name",
            "upstream_unavailable",
            False,
        ),
        (
            [
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {"id": "rs_1", "type": "reasoning", "summary": []},
                },
                {
                    "type": "response.output_text.delta",
                    "item_id": "rs_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": "not an answer",
                },
            ],
            # The SDK's stream state asserts the item is a message; text shown would be wrong.
            "OpenAI stream: response.output_text.delta for a reasoning item",
            "upstream_unavailable",
            False,
        ),
        (
            [
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {"id": "m", "type": "message", "content": []},
                },
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": "m",
                    "output_index": 0,
                    "delta": "{",
                },
            ],
            "OpenAI stream: arguments for function_call 'm', which never started",
            "upstream_unavailable",
            False,
        ),
    ],
    ids=[
        "failed",
        "error-event",
        "truncated",
        "unknown-item-arguments",
        "call-without-name",
        "text-of-a-reasoning-item",
        "arguments-of-a-message",
    ],
)
def test_failures_end_in_one_classified_error(
    events: list[dict[str, Any]], message: str, code: str, retryable: bool
) -> None:
    translated, _ = run([sse(*events)])
    final = translated[-1]
    assert isinstance(final, StreamError)
    assert (final.error.message, final.error.code, final.error.retryable) == (
        message,
        code,
        retryable,
    )


def test_invalid_json_is_a_clear_error() -> None:
    events, _ = run([b"event: response.created\ndata: {nope\n\n"])
    final = events[-1]
    assert isinstance(final, StreamError)
    assert final.error.message.startswith("OpenAI stream: response.created data is not valid JSON")


def test_unknown_items_and_events_are_ignored_and_listed() -> None:
    body = sse(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": "ws", "type": "web_search_call"},
        },
        {"type": "response.web_search_call.searching", "item_id": "ws", "output_index": 0},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {"id": "ws", "type": "web_search_call"},
        },
        {"type": "response.output_text.delta", "item_id": "m", "delta": "Found it."},
        completed(),
    )
    events, unmodelled = run([body])
    final = events[-1]
    assert isinstance(final, MessageComplete) and final.message.content == "Found it."
    assert unmodelled == ["web_search_call"]


def test_incomplete_keeps_the_cut_call_and_finishes_with_length() -> None:
    body = sse(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": "fc", "type": "function_call", "call_id": "call_1", "name": "x"},
        },
        {"type": "response.function_call_arguments.delta", "item_id": "fc", "delta": '{"a": "b'},
        {
            "type": "response.incomplete",
            "response": {
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
            },
        },
    )
    events, _ = run([body])
    final = events[-1]
    assert isinstance(final, MessageComplete)
    assert final.message.tool_calls[0].arguments == '{"a": "b'
    assert (events[-2].finish_reason, events[-2].provider_finish_reason) == (  # type: ignore[union-attr]
        "length",
        "max_output_tokens",
    )


def test_a_final_item_without_arguments_keeps_the_streamed_ones() -> None:
    call = {"id": "fc", "type": "function_call", "call_id": "call_1", "name": "x"}
    body = sse(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**call, "arguments": ""},
        },
        {"type": "response.function_call_arguments.delta", "item_id": "fc", "delta": '{"a": 1}'},
        {"type": "response.output_item.done", "output_index": 0, "item": {**call, "arguments": ""}},
        completed(),
    )
    events, _ = run([body])
    final = events[-1]
    assert isinstance(final, MessageComplete)
    assert final.message.tool_calls[0].arguments == '{"a": 1}'
