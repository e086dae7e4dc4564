"""Neutral model <-> protobuf conversion."""

from __future__ import annotations

import re
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navagent.core._proto import chat_pb2 as pb
from navagent.core.convert import (
    event_from_proto,
    event_to_fixed_proto,
    event_to_proto,
    request_from_proto,
    request_to_proto,
)
from navagent.core.errors import InvalidMessageError
from navagent.core.events import (
    ChatError,
    FinishReason,
    MessageComplete,
    RefusalDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallStart,
    TurnEnd,
    Usage,
)
from navagent.core.messages import AssistantMessage, ChatRequest
from tests.fixed_schema import fixed_schema
from tests.strategies import assistant_messages, ids, messages, texts, tools

requests = st.builds(
    ChatRequest,
    messages=st.lists(messages, min_size=1, max_size=6).map(tuple),
    tools=st.lists(tools, max_size=3).map(tuple),
    routing_hint=ids,
    max_tokens=st.none() | st.integers(1, 2**32 - 1),
    temperature=st.none() | st.floats(0, 2, allow_nan=False),
)
token_counts = st.integers(0, 2**40)
usages = st.builds(
    Usage,
    input_tokens=token_counts,
    cache_read_tokens=token_counts,
    cache_write_tokens=token_counts,
    output_tokens=token_counts,
    reasoning_tokens=token_counts,
)
errors = st.builds(
    ChatError,
    message=texts,
    status_code=st.none() | st.integers(100, 599),
    code=st.sampled_from(
        [
            "rate_limited",
            "overloaded",
            "auth",
            "invalid_request",
            "upstream_unavailable",
            "timeout",
            "cancelled",
            "internal",
        ]
    ),
    retryable=st.booleans(),
)
events: st.SearchStrategy[StreamEvent] = st.one_of(
    st.builds(TextDelta, text=texts),
    st.builds(ThinkingDelta, text=texts),
    st.builds(RefusalDelta, text=texts),
    st.builds(ToolCallStart, index=st.integers(0, 64), id=ids, name=ids),
    st.builds(
        TurnEnd,
        finish_reason=st.sampled_from(get_args(FinishReason)),
        provider_finish_reason=texts,
        usage=usages,
    ),
    st.builds(MessageComplete, message=assistant_messages),
    st.builds(StreamError, error=errors),
)


@pytest.mark.slow
@settings(max_examples=500)
@given(requests)
def test_request_round_trips_through_protobuf(request: ChatRequest) -> None:
    wire = request_to_proto(request).SerializeToString()
    assert request_from_proto(pb.ChatStreamRequest.FromString(wire)) == request


@settings(max_examples=500)
@given(events)
def test_event_round_trips_through_protobuf(event: StreamEvent) -> None:
    wire = event_to_proto(event).SerializeToString()
    assert event_from_proto(pb.ChatStreamEvent.FromString(wire)) == event


def test_empty_routing_hint_means_agent() -> None:
    request = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="hi")])
    assert request_from_proto(request).routing_hint == "agent"


def test_empty_tool_call_arguments_mean_empty_object() -> None:
    request = pb.ChatStreamRequest(
        messages=[
            pb.ChatMessage(role="assistant", tool_calls=[pb.ToolCall(id="c1", name="t")]),
        ]
    )
    (message,) = request_from_proto(request).messages
    assert isinstance(message, AssistantMessage)
    assert message.tool_calls[0].arguments == "{}"


def _request(*messages: pb.ChatMessage, **fields: Any) -> pb.ChatStreamRequest:
    return pb.ChatStreamRequest(messages=list(messages), **fields)


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (_request(), "messages: a request needs at least one message"),
        (_request(pb.ChatMessage(role="robot")), "messages[0]: unknown role 'robot'"),
        (_request(pb.ChatMessage(role="tool", content="x")), "messages[0]: a tool message needs"),
        (
            _request(
                pb.ChatMessage(role="user"),
                pb.ChatMessage(role="user", tool_calls=[pb.ToolCall(id="a", name="b")]),
            ),
            "messages[1]: only assistant messages may carry tool_calls",
        ),
        (
            _request(pb.ChatMessage(role="user", refusal="no")),
            "messages[0]: only assistant messages may carry a refusal",
        ),
        (
            _request(pb.ChatMessage(role="assistant", tool_calls=[pb.ToolCall(name="b")])),
            "messages[0].tool_calls[0]: a tool call needs an id and a name",
        ),
        (
            _request(
                pb.ChatMessage(role="user"),
                tools=[pb.Tool(name="t", parameters_schema="{not json")],
            ),
            "tools[0] (t): parameters_schema is not valid JSON",
        ),
        (
            _request(
                pb.ChatMessage(role="user"), tools=[pb.Tool(name="t", parameters_schema="[]")]
            ),
            "tools[0] (t): parameters_schema must be a JSON object",
        ),
        (_request(pb.ChatMessage(role="user"), max_tokens=0), "max_tokens: must be at least 1"),
    ],
    ids=[
        "no-messages",
        "bad-role",
        "tool-without-id",
        "user-with-calls",
        "user-with-refusal",
        "call-without-id",
        "schema-not-json",
        "schema-not-object",
        "zero-max-tokens",
    ],
)
def test_invalid_request_names_the_field(request_: pb.ChatStreamRequest, expected: str) -> None:
    with pytest.raises(InvalidMessageError, match=re.escape(expected)):
        request_from_proto(request_)


def test_unknown_event_kind_is_skipped() -> None:
    assert event_from_proto(pb.ChatStreamEvent()) is None


def test_error_without_code_from_old_gateway_is_internal() -> None:
    event = event_from_proto(pb.ChatStreamEvent(error=pb.ChatError(message="boom")))
    assert event == StreamError(error=ChatError(message="boom", code="internal"))


def _as_fixed_client(event: StreamEvent) -> Any:
    """What a client built from the fixed schema reads from our encoding of `event`."""
    encoded = event_to_fixed_proto(event)
    if encoded is None:
        return None
    return fixed_schema().ChatStreamEvent.FromString(encoded.SerializeToString())


def test_fixed_schema_client_reads_a_refusal_as_plain_text() -> None:
    delta = _as_fixed_client(RefusalDelta(text="I can't help with that."))
    assert delta.WhichOneof("event") == "content_delta"
    assert delta.content_delta.text == "I can't help with that."
    final = _as_fixed_client(
        MessageComplete(message=AssistantMessage(content="Sure: ", refusal="no."))
    )
    assert final.message.role == "assistant"
    assert final.message.content == "Sure: no."


def test_fixed_schema_encoding_keeps_the_refusal_out_of_extended_clients_content() -> None:
    message = AssistantMessage(refusal="no.")
    extended = event_from_proto(event_to_proto(MessageComplete(message=message)))
    assert extended == MessageComplete(message=message)
    assert isinstance(extended, MessageComplete)
    assert extended.message.content == ""


@pytest.mark.parametrize(
    "event",
    [
        ThinkingDelta(text="hmm"),
        ToolCallStart(index=0, id="c", name="t"),
        TurnEnd(finish_reason="refusal", usage=Usage(input_tokens=3)),
    ],
    ids=["thinking", "tool-call-start", "turn-end"],
)
def test_fixed_schema_client_gets_no_extension_events(event: StreamEvent) -> None:
    assert event_to_fixed_proto(event) is None


@given(events)
def test_fixed_schema_encoding_of_base_events_is_unchanged(event: StreamEvent) -> None:
    if isinstance(event, TextDelta | StreamError) or (
        isinstance(event, MessageComplete) and not event.message.refusal
    ):
        assert event_to_fixed_proto(event) == event_to_proto(event)
