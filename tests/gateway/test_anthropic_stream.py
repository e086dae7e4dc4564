"""Anthropic Messages stream translation, one hand-made transcript per wire quirk."""

from __future__ import annotations

import json
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from navagent.core.events import TextDelta, ThinkingDelta, ToolCallStart, Usage
from navagent.gateway.anthropic import AnthropicStreamTranslator
from navagent.gateway.sse import SSEEvent
from tests.gateway.streams import (
    TRANSCRIPTS,
    final_message,
    random_chunks,
    stream_error,
    transcript,
    translate,
    turn_end,
)
from tests.gateway.thinking_parts import anthropic_part

ORIGIN = "anthropic_messages:test"


def run(name: str):
    return translate("anthropic", transcript("anthropic", name), origin=ORIGIN)


# Two text blocks (and a ping, and JSON padded with spaces) become one content.
def test_anthropic_stream_text_two_blocks(snapshot: SnapshotAssertion) -> None:
    events = run("text_two_blocks")
    assert final_message(events).message.content == "The sandbox is ready. Logs are clean 🦅."
    end = turn_end(events)
    assert (end.finish_reason, end.provider_finish_reason) == ("stop", "end_turn")
    assert (end.usage.input_tokens, end.usage.output_tokens) == (23, 17)
    assert [e.model_dump() for e in events] == snapshot


# A tool_use block that streams no input_json_delta at all has arguments {}.
def test_anthropic_stream_tool_use_no_input_fragments() -> None:
    events = run("tool_use_no_input_fragments")
    (call,) = final_message(events).message.tool_calls
    assert (call.id, call.name, call.arguments) == (
        "toolu_01A09q90qw90lq917835lq9", "cluster_status", "{}",
    )  # fmt: skip
    assert turn_end(events).finish_reason == "tool_calls"


# The real-API shape for no arguments: one input_json_delta with partial_json "".
def test_anthropic_stream_tool_use_empty_input_fragment() -> None:
    (call,) = final_message(run("tool_use_empty_input_fragment")).message.tool_calls
    assert call.arguments == "{}"


# An `error` event (overloaded_error) mid-stream: StreamError, never a truncated success.
def test_anthropic_stream_error_event_mid_stream() -> None:
    events = run("error_event_mid_stream")
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Checking the", " cluster"]
    error = stream_error(events).error
    assert (error.message, error.code, error.retryable) == ("Overloaded", "overloaded", True)


# The body ends after message_delta without message_stop.
def test_anthropic_stream_missing_message_stop() -> None:
    error = stream_error(run("missing_message_stop")).error
    assert error.message == "Anthropic stream ended before message_stop"
    assert (error.code, error.retryable) == ("upstream_unavailable", True)


# Thinking deltas, then signature_delta on the same block, then a tool_use with fragments.
def test_anthropic_stream_thinking_signature_then_tool_use(snapshot: SnapshotAssertion) -> None:
    events = run("thinking_signature_then_tool_use")
    message = final_message(events).message
    assert message.thinking == (
        anthropic_part(
            "The user wants the sandboxes on dev; call sandbox_list.",
            signature="EqQBCkgIARABGAIiQL7Zf3v0sIg==",
            origin=ORIGIN,
        ),
    )
    (call,) = message.tool_calls
    assert call.parsed_arguments() == {"cluster": "dev"}
    assert [e.kind for e in events] == [
        "thinking_delta", "thinking_delta", "tool_call_start", "turn_end", "message",
    ]  # fmt: skip
    # The vendor's block index is 1; ours is the position in tool_calls.
    assert [e.index for e in events if isinstance(e, ToolCallStart)] == [0]
    assert [e.model_dump() for e in events] == snapshot


# redacted_thinking arrives whole in content_block_start, with no deltas.
def test_anthropic_stream_redacted_thinking() -> None:
    events = run("redacted_thinking")
    message = final_message(events).message
    assert message.thinking == (
        anthropic_part(
            redacted="EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
            origin=ORIGIN,
        ),
    )
    assert message.content == "Done."
    assert not any(isinstance(e, ThinkingDelta) for e in events)


# Consecutive tool_use blocks at vendor indexes 1 and 2 become our calls 0 and 1.
def test_anthropic_stream_consecutive_tool_use_blocks(snapshot: SnapshotAssertion) -> None:
    events = run("consecutive_tool_use_blocks")
    message = final_message(events).message
    assert message.content == "I'll look at both."
    assert [(c.name, c.parsed_arguments()) for c in message.tool_calls] == [
        ("sandbox_get", {"name": "web"}),
        ("sandbox_logs", {"name": "web", "tail": 20}),
    ]
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [(s.index, s.name) for s in starts] == [(0, "sandbox_get"), (1, "sandbox_logs")]
    assert [e.model_dump() for e in events] == snapshot


# Server tool blocks, their input_json_delta and citations_delta are skipped, not fatal.
def test_anthropic_stream_server_tool_blocks_ignored() -> None:
    events = run("server_tool_blocks_ignored")
    message = final_message(events).message
    assert message.content == "Version 2 shipped."
    (call,) = message.tool_calls  # the server tool's own input is not a client call
    assert (call.name, call.parsed_arguments()) == ("sandbox_create", {"name": "v2"})
    assert [e.index for e in events if isinstance(e, ToolCallStart)] == [0]


# Concatenated input fragments that are not valid JSON fail the stream (the SDK raises too).
def test_anthropic_stream_invalid_tool_input_json() -> None:
    error = stream_error(run("invalid_tool_input_json")).error
    assert error.message.startswith("Anthropic stream: tool_use block 0 input is not valid JSON")
    assert '"tail": }' in error.message


# Event data that is not JSON fails the stream and names the event type.
def test_anthropic_stream_invalid_json_event() -> None:
    error = stream_error(run("invalid_json_event")).error
    assert error.message.startswith(
        "Anthropic stream: content_block_delta event data is not valid JSON ("
    )


# Event and delta types this version does not know are ignored; stop_reason kept raw.
def test_anthropic_stream_unknown_event_and_delta_types() -> None:
    events = run("unknown_event_and_delta_types")
    assert final_message(events).message.content == "Still fine."
    end = turn_end(events)
    assert (end.finish_reason, end.provider_finish_reason) == ("pause_turn", "pause_turn")


# message_delta may repeat input_tokens (cumulative): it overwrites message_start's.
# Anthropic's input_tokens exclude cache reads: the neutral total adds them.
def test_anthropic_stream_usage_input_tokens_in_message_delta() -> None:
    usage = turn_end(run("usage_input_tokens_in_message_delta")).usage
    assert usage == Usage(input_tokens=2058 + 2048, cache_read_tokens=2048, output_tokens=5)


# stop_reason refusal: the text so far is kept as text, the finish says refusal.
def test_anthropic_stream_refusal_stop_reason() -> None:
    events = run("refusal_stop_reason")
    message = final_message(events).message
    assert (message.content, message.refusal) == ("I can help with the first part, but", "")
    end = turn_end(events)
    assert (end.finish_reason, end.provider_finish_reason) == ("refusal", "refusal")


def test_anthropic_stream_usage_cache_writes_and_thinking_tokens() -> None:
    translator = AnthropicStreamTranslator()
    start_usage = {"input_tokens": 2, "cache_creation_input_tokens": 3068, "output_tokens": 1}
    final_usage = {
        "cache_read_input_tokens": 100,
        "output_tokens": 198,
        "output_tokens_details": {"thinking_tokens": 40},
    }
    for payload in [
        {"type": "message_start", "message": {"content": [], "usage": start_usage}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": final_usage},
    ]:
        assert translator.handle(_event(payload)) == []
    usage = turn_end(translator.handle(_event({"type": "message_stop"}))).usage
    assert usage == Usage(
        input_tokens=2 + 3068 + 100,
        cache_read_tokens=100,
        cache_write_tokens=3068,
        output_tokens=198,
        reasoning_tokens=40,
    )


# message_start can already hold whole blocks and a stop reason (programmatic
# tool calling), followed directly by message_stop; the SDK seeds from it.
def test_anthropic_stream_message_start_content_seeds_the_message() -> None:
    translator = AnthropicStreamTranslator()
    message = {
        "content": [
            {"type": "text", "text": "Calling."},
            {"type": "tool_use", "id": "toolu_1", "name": "sandbox_get", "input": {"name": "w"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    events = translator.handle(_event({"type": "message_start", "message": message}))
    assert events == [
        TextDelta(text="Calling."),
        ToolCallStart(index=0, id="toolu_1", name="sandbox_get"),
    ]
    events = translator.handle(_event({"type": "message_stop"}))
    final = final_message(events).message
    assert final.content == "Calling."
    assert [(c.id, c.parsed_arguments()) for c in final.tool_calls] == [("toolu_1", {"name": "w"})]
    assert turn_end(events).finish_reason == "tool_calls"


@pytest.mark.parametrize(
    "path", sorted((TRANSCRIPTS / "anthropic").glob("*.sse")), ids=lambda p: p.stem
)
def test_anthropic_stream_same_events_for_any_chunking(path) -> None:
    body = path.read_bytes()
    whole = translate("anthropic", body)
    for seed in range(5):
        assert translate("anthropic", random_chunks(body, seed=seed)) == whole


# --- malformed shapes: each names what was wrong --------------------------------


def _event(payload: Any) -> SSEEvent:
    kind = payload.get("type", "message") if isinstance(payload, dict) else "message"
    return SSEEvent(event=kind, data=json.dumps(payload))


START_TEXT = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}


@pytest.mark.parametrize(
    ("payloads", "problem"),
    [
        ([[1]], "message event data is not a JSON object"),
        ([{"type": "content_block_delta", "index": "0", "delta": {}}],
         "content_block_delta needs an integer index and a delta object"),
        ([{"type": "content_block_delta", "index": 4, "delta": {"type": "text_delta"}}],
         "content_block_delta for block 4, which never started"),
        ([START_TEXT, {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}],
         "text_delta in block 0 has no text string"),
        ([START_TEXT, {"type": "content_block_delta", "index": 0,
                       "delta": {"type": "input_json_delta", "partial_json": 1}}],
         "input_json_delta in block 0 has no partial_json"),
        ([{"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
          {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta"}}],
         "thinking_delta in block 0 has no thinking string"),
        ([{"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
          {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta"}}],
         "signature_delta in block 0 has no signature"),
        ([{"type": "content_block_start", "index": 0, "content_block": "text"}],
         "content_block_start needs an integer index and a content_block object"),
        ([{"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use"}}],
         "tool_use block 2 has no id or no name"),
        ([{"type": "content_block_start", "index": 0,
           "content_block": {"type": "redacted_thinking"}}],
         "redacted_thinking block 0 has no data string"),
        ([{"type": "content_block_start", "index": 0,
           "content_block": {"type": "tool_use", "id": "t", "name": "n"}},
          {"type": "content_block_delta", "index": 0,
           "delta": {"type": "input_json_delta", "partial_json": "[1]"}},
          {"type": "content_block_stop", "index": 0}],
         "tool_use block 0 input is not a JSON object"),
        ([{"type": "message_start", "message": {"usage": [1]}}],
         "message_start.message.usage is not an object"),
        ([{"type": "message_delta", "delta": {}, "usage": {"output_tokens": "9"}}],
         "message_delta.usage.output_tokens is not an integer"),
    ],
)  # fmt: skip
def test_anthropic_stream_malformed_event_is_a_named_error(
    payloads: list[Any], problem: str
) -> None:
    translator = AnthropicStreamTranslator()
    events = [event for payload in payloads for event in translator.handle(_event(payload))]
    assert [e.kind for e in events if e.kind != "tool_call_start"] == ["error"]
    assert problem in events[-1].error.message  # type: ignore[union-attr]
    assert translator.done and translator.handle(_event({"type": "message_stop"})) == []


def test_anthropic_stream_tool_use_input_given_in_block_start_is_kept() -> None:
    # Non-streamed shape: the input object is already in content_block_start.
    translator = AnthropicStreamTranslator()
    block = {"type": "tool_use", "id": "toolu_1", "name": "sandbox_get", "input": {"name": "w"}}
    for payload in [
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_stop", "index": 0},
    ]:
        translator.handle(_event(payload))
    events = translator.handle(_event({"type": "message_stop"}))
    assert final_message(events).message.tool_calls[0].parsed_arguments() == {"name": "w"}


def test_anthropic_stream_error_event_without_details_still_fails_clearly() -> None:
    translator = AnthropicStreamTranslator()
    (event,) = translator.handle(SSEEvent(event="error", data='{"type": "error"}'))
    assert event.kind == "error"
    assert event.error.message == "Anthropic reported an error"
    assert (event.error.code, event.error.retryable) == ("upstream_unavailable", False)


def test_anthropic_stream_ping_without_data_is_ignored() -> None:
    translator = AnthropicStreamTranslator()
    assert translator.handle(SSEEvent(event="ping", data="")) == []
    assert not translator.done
