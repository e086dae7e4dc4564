"""OpenAI Chat Completions stream translation, one hand-made transcript per wire quirk."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from syrupy.assertion import SnapshotAssertion

from navagent.core.events import MessageComplete, RefusalDelta, TextDelta, ToolCallStart, Usage
from navagent.gateway.openai import OpenAIStreamTranslator
from navagent.gateway.openai.stream import _parse_json
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


def run(name: str):
    return translate("openai", transcript("openai", name))


# Plain text deltas, a finish chunk, then the usage chunk with `choices: []`.
def test_openai_stream_text_with_usage(snapshot: SnapshotAssertion) -> None:
    events = run("text_with_usage")
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        "The cluster", " has", " 3 sandboxes", " running", ".",
    ]  # fmt: skip
    end = turn_end(events)
    assert (end.finish_reason, end.provider_finish_reason) == ("stop", "stop")
    assert (end.usage.input_tokens, end.usage.output_tokens) == (41, 7)
    assert [e.model_dump() for e in events] == snapshot


# llm variant (a): arguments "" on the first fragment, then the object in pieces.
def test_openai_stream_tool_args_empty_then_object() -> None:
    events = run("tool_args_empty_then_object")
    (call,) = final_message(events).message.tool_calls
    assert (call.id, call.name, call.arguments) == (
        "call_Q1w2E3r4T5y6U7i8", "sandbox_list", '{"cluster":"dev"}',
    )  # fmt: skip
    assert turn_end(events).finish_reason == "tool_calls"


# llm variant (b): the whole arguments object in the fragment that names the call.
def test_openai_stream_tool_args_object_in_first_fragment() -> None:
    (call,) = final_message(run("tool_args_object_in_first_fragment")).message.tool_calls
    assert (call.name, call.arguments) == ("cluster_status", "{}")


# llm variants (c)/(d): arguments null, then "", and nothing after: the call has `{}`.
def test_openai_stream_tool_args_null_then_empty() -> None:
    events = run("tool_args_null_then_empty")
    (call,) = final_message(events).message.tool_calls
    assert call.arguments == "{}"
    assert call.parsed_arguments() == {}
    # No usage chunk in this stream: usage stays zero rather than failing.
    assert turn_end(events).usage.input_tokens == 0


# Fragments of two calls interleave; each is keyed by its `index`.
def test_openai_stream_parallel_tool_calls_interleaved(snapshot: SnapshotAssertion) -> None:
    events = run("parallel_tool_calls_interleaved")
    calls = final_message(events).message.tool_calls
    assert [(c.name, c.parsed_arguments()) for c in calls] == [
        ("sandbox_get", {"name": "web"}),
        ("sandbox_logs", {"name": "api", "tail": 50}),
    ]
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [(s.index, s.id) for s in starts] == [(0, calls[0].id), (1, calls[1].id)]
    assert [e.model_dump() for e in events] == snapshot


# Text first, then a tool call in the same turn: both survive in the final message.
def test_openai_stream_text_then_tool_call() -> None:
    message = final_message(run("text_then_tool_call")).message
    assert message.content == "Let me check."
    assert [c.parsed_arguments() for c in message.tool_calls] == [{"verbose": True}]


# The body ends without `data: [DONE]`: a truncated stream, never a short success.
def test_openai_stream_missing_done() -> None:
    events = run("missing_done")
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Partial", " answer"]
    error = stream_error(events).error
    assert error.message == "OpenAI stream ended before [DONE]"
    assert (error.code, error.retryable) == ("upstream_unavailable", True)


# A data line that is not JSON (cut mid-string) fails the stream and says why.
def test_openai_stream_invalid_json_event() -> None:
    events = run("invalid_json_event")
    error = stream_error(events).error
    assert error.message.startswith(
        "OpenAI stream: event data is not valid JSON (Unterminated string starting at: line 1"
    )
    # The text around the failure is quoted, so the log shows where the data broke.
    assert '"delta":{"content":"the' in error.message
    assert not any(isinstance(e, MessageComplete) for e in events)


# CRLF line endings, `:` keep-alive comments, `data:` without a space and a retry field.
def test_openai_stream_crlf_and_comments() -> None:
    body = transcript("openai", "crlf_and_comments")
    assert b"\r\n" in body and b"\n\n" not in body
    assert final_message(translate("openai", body)).message.content == "Hello world"


# A chunk with `usage: null` after the usage chunk must not erase the usage.
def test_openai_stream_usage_null_after_usage() -> None:
    usage = turn_end(run("usage_null_after_usage")).usage
    assert (usage.input_tokens, usage.output_tokens) == (13, 11)


# An `{"error": {...}}` data line mid-stream is a classified StreamError.
def test_openai_stream_error_payload() -> None:
    events = run("error_payload")
    error = stream_error(events).error
    assert error.message.startswith("The server had an error while processing your request.")
    assert (error.code, error.retryable, error.status_code) == ("upstream_unavailable", True, None)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Working on"]


# n=2: choices interleave by index; only choice 0 is translated.
def test_openai_stream_n2_choices_interleaved() -> None:
    events = run("n2_choices_interleaved")
    assert final_message(events).message.content == "Zero wins"
    assert turn_end(events).provider_finish_reason == "stop"


# `refusal` deltas are a refusal, never text; the turn's finish says so.
def test_openai_stream_refusal_deltas() -> None:
    events = run("refusal_deltas")
    message = final_message(events).message
    assert (message.content, message.refusal) == ("", "I’m sorry, I can’t help with that.")
    assert [e for e in events if isinstance(e, RefusalDelta | TextDelta)] == [
        RefusalDelta(text="I’m sorry,"),
        RefusalDelta(text=" I can’t help with that."),
    ]
    end = turn_end(events)
    assert (end.finish_reason, end.provider_finish_reason) == ("refusal", "stop")


def _chunk(delta: dict[str, object], finish: str | None = None, **fields: object) -> SSEEvent:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return SSEEvent(data=json.dumps({"id": "chatcmpl-legacy1", "choices": [choice], **fields}))


# The legacy `functions` API: one call streamed as delta.function_call, carried
# as a tool call whose id derives from the response id (same in any chunking).
def test_openai_stream_legacy_function_call_is_a_tool_call_with_a_stable_id() -> None:
    translator = OpenAIStreamTranslator()
    events = [
        *translator.handle(_chunk({"role": "assistant", "function_call": {"name": "repl"}})),
        *translator.handle(_chunk({"function_call": {"arguments": '{"code": '}})),
        *translator.handle(_chunk({"function_call": {"arguments": '"1"}'}})),
        *translator.handle(_chunk({}, "function_call")),
        *translator.handle(SSEEvent(data="[DONE]")),
    ]
    (start,) = [e for e in events if isinstance(e, ToolCallStart)]
    (call,) = final_message(events).message.tool_calls
    assert (call.id, call.name, call.parsed_arguments()) == (start.id, "repl", {"code": "1"})
    assert re.fullmatch(r"call_[0-9a-f]{24}", call.id)
    again = OpenAIStreamTranslator()
    assert again.handle(_chunk({"function_call": {"name": "repl"}}))[0] == start
    assert turn_end(events).finish_reason == "tool_calls"


def test_openai_stream_usage_cached_and_reasoning_tokens_are_parts_of_the_totals() -> None:
    translator = OpenAIStreamTranslator()
    usage = {
        "prompt_tokens": 1144,
        "completion_tokens": 78,
        "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 64},
    }
    translator.handle(_chunk({"content": "hi"}, "stop"))
    translator.handle(SSEEvent(data=json.dumps({"choices": [], "usage": usage})))
    end = turn_end(translator.handle(SSEEvent(data="[DONE]")))
    assert end.usage == Usage(
        input_tokens=1144, cache_read_tokens=1024, output_tokens=78, reasoning_tokens=64
    )


# A compatible server that never sends a tool call id: one is derived from the stream.
def test_openai_stream_tool_call_without_id() -> None:
    events = run("tool_call_without_id")
    (call,) = final_message(events).message.tool_calls
    assert re.fullmatch(r"call_[0-9a-f]{24}", call.id)
    (start,) = [e for e in events if isinstance(e, ToolCallStart)]
    assert start.id == call.id
    assert run("tool_call_without_id") == events  # the same stream, the same id


def test_openai_stream_derived_ids_differ_between_responses_and_calls() -> None:
    def ids(response_id: str) -> list[str]:
        translator = OpenAIStreamTranslator()
        fragments = [{"index": i, "function": {"name": "sandbox_get"}} for i in (0, 1)]
        chunk = {"id": response_id, "choices": [{"index": 0, "delta": {"tool_calls": fragments}}]}
        events = translator.handle(SSEEvent(data=json.dumps(chunk)))
        return [event.id for event in events if isinstance(event, ToolCallStart)]

    first, second = ids("chatcmpl-a"), ids("chatcmpl-b")
    assert len({*first, *second}) == 4


@pytest.mark.parametrize(
    "path", sorted((TRANSCRIPTS / "openai").glob("*.sse")), ids=lambda p: p.stem
)
def test_openai_stream_same_events_for_any_chunking(path) -> None:
    body = path.read_bytes()
    whole = translate("openai", body)
    for seed in range(5):
        chunked = translate("openai", random_chunks(body, seed=seed))
        # Derived ids too (issue 22: they were random, so this transcript was skipped).
        assert chunked == whole


# --- malformed shapes: each names what was wrong --------------------------------


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ("[1, 2]", "event data is not a JSON object"),
        ('{"choices": {"index": 0}}', "chunk.choices is not a list"),
        ('{"choices": [3]}', "chunk.choices[] entry is not an object"),
        ('{"choices": [{"index": 0, "delta": "hi"}]}', "choices[0].delta is not an object"),
        ('{"choices": [{"index": 0, "delta": {"content": 5}}]}', "delta.content is not a string"),
        ('{"choices": [{"index": 0, "delta": {"refusal": [1]}}]}', "delta.refusal is not a string"),
        ('{"choices": [{"index": 0, "delta": {}, "finish_reason": 1}]}', "finish_reason is not"),
        ('{"choices": [{"delta": {"tool_calls": {"index": 0}}}]}', "tool_calls is not a list"),
        ('{"choices": [{"delta": {"tool_calls": [1]}}]}', "tool_calls[] entry is not an object"),
        ('{"choices": [{"delta": {"tool_calls": [{"index": "0"}]}}]}', "not an integer"),
        ('{"choices": [{"delta": {"content": 3}}]}', "content is not a string or a list"),
        ('{"choices": [{"delta": {"content": [3]}}]}', "content[] entry is not an object"),
        ('{"choices": [{"delta": {"content": [{"type": "text"}]}}]}', "has no text string"),
        ('{"choices": [{"delta": {"content": [{"type": "thinking", "thinking": 3}]}}]}',
         "thinking block has no thinking list"),
        ('{"choices": [{"delta": {"reasoning_content": 3}}]}', "reasoning_content is not a str"),
        ('{"choices": [{"delta": {"reasoning": ["x"]}}]}', "delta.reasoning is not a string"),
        ('{"choices": [{"delta": {"reasoning_details": {"a": 1}}}]}',
         "reasoning_details is not a list"),
        ('{"choices": [{"delta": {"reasoning_details": [1]}}]}',
         "reasoning_details[] entry is not an object"),
        ('{"choices": [{"delta": {"reasoning_details": [{"type": "reasoning.text", "text": 4}]}}]}',
         "reasoning_details[] reasoning.text text is not a string"),
        ('{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": 3}]}}]}',
         "tool call 0: function is not an object"),
        ('{"choices": [{"delta": {"tool_calls": [{"index": 0, "id": 7}]}}]}',
         "tool call 0: id is not a string"),
        ('{"choices": [], "usage": [1]}', "chunk.usage is not an object"),
        ('{"choices": [], "usage": {"prompt_tokens": "3"}}', "token counts are not integers"),
        ('{"choices": [], "usage": {"prompt_tokens_details": {"cached_tokens": "3"}}}',
         "token counts are not integers"),
        ('{"choices": [{"delta": {"function_call": [1]}}]}',
         "delta.function_call is not an object"),
        ('{"choices": [{"delta": {"function_call": {"name": 4}}}]}',
         "function_call: name is not a string"),
    ],
)  # fmt: skip
def test_openai_stream_malformed_chunk_is_a_named_error(payload: str, problem: str) -> None:
    translator = OpenAIStreamTranslator()
    (event,) = translator.handle(SSEEvent(data=payload))
    assert event.kind == "error"
    assert problem in event.error.message
    assert translator.done and translator.handle(SSEEvent(data="[DONE]")) == []


def test_openai_stream_tool_call_never_named_is_an_error() -> None:
    translator = OpenAIStreamTranslator()
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1"}]}}]}
    assert translator.handle(SSEEvent(data=json.dumps(chunk))) == []
    (event,) = translator.handle(SSEEvent(data="[DONE]"))
    assert event.kind == "error"
    assert "tool call 0 (id 'call_1') ended without a name" in event.error.message


def test_openai_stream_deltas_before_a_malformed_part_are_kept() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "ok", "refusal": 3}}]}
    events = OpenAIStreamTranslator().handle(SSEEvent(data=json.dumps(chunk)))
    assert [e.kind for e in events] == ["text_delta", "error"]


def test_openai_stream_nothing_after_the_terminal_event() -> None:
    translator = OpenAIStreamTranslator()
    assert [e.kind for e in translator.handle(SSEEvent(data="[DONE]"))] == ["turn_end", "message"]
    assert translator.handle(SSEEvent(data='{"choices": []}')) == []
    assert translator.finish() == []


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
        ),
        max_leaves=8,
    ).map(json.dumps)
    | st.text(max_size=12),
    st.sampled_from(["", " ", "\n", " x", "}"]),
    st.sampled_from(["", " ", "\t"]),
)
def test_openai_stream_json_parse_agrees_with_json_loads(
    text: str, after: str, before: str
) -> None:
    # The fast path (the C scanner alone) must accept and refuse exactly what json.loads does.
    data = before + text + after
    try:
        expected: Any = ("ok", json.loads(data))
    except ValueError:
        expected = ("error",)
    try:
        got: Any = ("ok", _parse_json(data))
    except ValueError:
        got = ("error",)
    assert repr(got) == repr(expected)


def _calls_of(*deltas: dict[str, Any]) -> list[tuple[str, str, str]]:
    translator = OpenAIStreamTranslator()
    for delta in deltas:
        translator.handle(SSEEvent(data=json.dumps({"choices": [{"index": 0, "delta": delta}]})))
    final = translator.handle(SSEEvent(data="[DONE]"))[-1]
    assert isinstance(final, MessageComplete), final
    return [(c.id, c.name, c.arguments) for c in final.message.tool_calls]


def test_openai_stream_tool_calls_without_index() -> None:
    # Issue 23: Mistral sends each call whole, with no index and no type.
    whole = {"id": "a1", "function": {"name": "f", "arguments": '{"x": 1}'}}
    other = {"id": "b2", "function": {"name": "g", "arguments": "{}"}}
    assert _calls_of({"tool_calls": [whole, other]}) == [("a1", "f", '{"x": 1}'), ("b2", "g", "{}")]
    # A fragment with the same id continues its call; one with neither id nor name the last.
    assert _calls_of(
        {"tool_calls": [{"id": "a1", "function": {"name": "f", "arguments": '{"x"'}}]},
        {"tool_calls": [{"id": "a1", "function": {"arguments": ": 1"}}]},
        {"tool_calls": [{"function": {"arguments": "}"}}]},
    ) == [("a1", "f", '{"x": 1}')]
    # Named calls without ids are separate calls, each given an id.
    unnamed = _calls_of(
        {"tool_calls": [{"function": {"name": "f"}}, {"function": {"name": "g"}}]},
    )
    assert [name for _, name, _ in unnamed] == ["f", "g"]
    assert all(call_id.startswith("call_") for call_id, _, _ in unnamed)


def test_openai_stream_reasoning_fields_and_content_blocks_are_thinking() -> None:
    translator = OpenAIStreamTranslator(origin="o")
    deltas = [
        {"reasoning_content": "a"},
        {"reasoning": "b"},
        {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "c"}]}]},
        {"content": [{"type": "text", "text": "Hi"}, {"type": "image_url", "image_url": {}}]},
        {"reasoning_details": [{"type": "reasoning.summary", "summary": "d", "index": 0}]},
        {
            "reasoning": "e",
            "reasoning_details": [{"type": "reasoning.text", "text": "e", "index": 1}],
        },
    ]
    for delta in deltas:
        translator.handle(SSEEvent(data=json.dumps({"choices": [{"index": 0, "delta": delta}]})))
    *_, end, final = translator.handle(SSEEvent(data="[DONE]"))
    assert isinstance(final, MessageComplete)
    (part,) = final.message.thinking
    assert (part.text, part.origin, final.message.content) == ("abcde", "o", "Hi")
    assert json.loads(part.payload) == {
        "reasoning_details": [
            {"type": "reasoning.summary", "summary": "d", "index": 0},
            {"type": "reasoning.text", "text": "e", "index": 1},
        ]
    }
