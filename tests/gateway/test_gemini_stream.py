"""Gemini stream translation, one hand-made transcript per wire quirk (fixtures/sse/gemini)."""

from __future__ import annotations

import json

import pytest

from navagent.core.events import ThinkingDelta, ToolCallStart, Usage
from navagent.gateway._parts import derived_call_id
from navagent.gateway.gemini import error_from_response
from tests.gateway.streams import (
    TRANSCRIPTS,
    final_message,
    random_chunks,
    stream_error,
    transcript,
    translate,
    turn_end,
)

ORIGIN = "google_gemini:test"


def run(name: str, chunks: int | None = None):
    body = transcript("gemini", name)
    return translate(
        "gemini", random_chunks(body, seed=chunks) if chunks is not None else body, origin=ORIGIN
    )


# CRLF-ended events, no terminator: the event with finishReason ends the message.
def test_gemini_stream_text_with_usage() -> None:
    events = run("text_with_usage")
    assert final_message(events).message.content == "Hello, world!"
    end = turn_end(events)
    assert (end.finish_reason, end.provider_finish_reason) == ("stop", "STOP")
    assert end.usage == Usage(input_tokens=12, output_tokens=4)


# `thought: true` parts are thinking; a signature on an empty text part is kept
# as the thinking part's payload, on "text"; cached and thought tokens counted.
def test_gemini_stream_thinking_then_signed_text() -> None:
    events = run("thinking_then_text_signed")
    message = final_message(events).message
    assert message.content == "Hi there."
    (part,) = message.thinking
    assert part.text == "**Planning** I should greet."
    assert part.origin == ORIGIN
    assert json.loads(part.payload) == {"signatures": [{"on": "text", "signature": "c2lnLXRleHQ="}]}
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == [part.text]
    assert turn_end(events).usage == Usage(
        input_tokens=20, cache_read_tokens=8, output_tokens=10, reasoning_tokens=7
    )


# Calls arrive whole (args an object, no id): ids derive from responseId and
# position; STOP with calls is `tool_calls`; the signature stays with its call.
def test_gemini_stream_two_whole_calls() -> None:
    events = run("thinking_then_two_calls")
    message = final_message(events).message
    first, second = message.tool_calls
    assert first.id == derived_call_id("resp-gem-1", 0)
    assert second.id == derived_call_id("resp-gem-1", 1)
    assert (first.name, json.loads(first.arguments)) == ("sandbox_get", {"name": "dev-box"})
    assert json.loads(second.arguments) == {"name": "dev-box", "tail": 20}
    assert [e.name for e in events if isinstance(e, ToolCallStart)] == [
        "sandbox_get",
        "sandbox_logs",
    ]
    assert json.loads(message.thinking[0].payload)["signatures"] == [
        {"on": "call", "call_id": first.id, "signature": "c2lnLWNhbGw="}
    ]
    assert turn_end(events).finish_reason == "tool_calls"


# A call with its own id keeps it; a call without args has `{}`.
def test_gemini_stream_call_with_id_and_no_args() -> None:
    (call,) = final_message(run("call_with_id_and_no_args")).message.tool_calls
    assert (call.id, call.name, call.arguments) == ("fc-1", "cluster_status", "{}")


@pytest.mark.parametrize(
    ("name", "reason", "raw"),
    [
        ("safety_block", "content_filter", "SAFETY"),
        ("prompt_blocked", "content_filter", "PROHIBITED_CONTENT"),
        ("max_tokens", "length", "MAX_TOKENS"),
    ],
)
def test_gemini_stream_finish_reasons(name: str, reason: str, raw: str) -> None:
    end = turn_end(run(name))
    assert (end.finish_reason, end.provider_finish_reason) == (reason, raw)


# An error object mid-stream is a StreamError named by Google's `status`.
def test_gemini_stream_error_event_mid_stream() -> None:
    error = stream_error(run("error_event_mid_stream")).error
    assert (error.code, error.retryable) == ("overloaded", True)
    assert "overloaded" in error.message


# No finishReason before the body ended: truncated, retryable, never a success.
def test_gemini_stream_missing_finish_reason_is_truncated() -> None:
    error = stream_error(run("missing_finish_reason")).error
    assert (error.code, error.retryable) == ("upstream_unavailable", True)


def test_gemini_stream_invalid_json_is_malformed() -> None:
    error = stream_error(run("invalid_json_event")).error
    assert error.code == "upstream_unavailable" and not error.retryable
    assert "not valid JSON" in error.message


# Any chunking of any transcript translates the same (CRLF split across chunks).
@pytest.mark.parametrize("name", sorted(p.stem for p in (TRANSCRIPTS / "gemini").glob("*.sse")))
def test_gemini_stream_chunking_does_not_matter(name: str) -> None:
    whole = run(name)
    for seed in range(5):
        assert run(name, chunks=seed) == whole


@pytest.mark.parametrize(
    ("status", "body", "code", "retryable"),
    [
        (429, {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}},
         "rate_limited", True),
        (503, {"error": {"code": 503, "message": "busy", "status": "UNAVAILABLE"}},
         "upstream_unavailable", True),
        (400, {"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}},
         "invalid_request", False),
        (403, {"error": {"code": 403, "message": "no", "status": "PERMISSION_DENIED"}},
         "auth", False),
        # streamGenerateContent without alt=sse fails with a JSON array holding the error.
        (500, [{"error": {"code": 500, "message": "oops", "status": "INTERNAL"}}],
         "upstream_unavailable", True),
    ],
)  # fmt: skip
def test_gemini_error_from_response(status, body, code, retryable) -> None:
    error = error_from_response(status, json.dumps(body).encode())
    assert (error.code, error.retryable, error.status_code) == (code, retryable, status)
    assert error.message == (body[0] if isinstance(body, list) else body)["error"]["message"]
