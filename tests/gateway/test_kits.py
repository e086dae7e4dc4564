"""Every format's test kit, read by the same tests: a new registry row adds cases here.

A kit's samples are byte-exact transcripts of its wire (fixtures/sse/<id>/);
each must translate to what its kind promises, in any chunking, and the
kit's built text stream must translate to its text, whole, and be truncated
without its closing events.
"""

from __future__ import annotations

import pytest

from navagent.core.events import StreamError, ThinkingDelta
from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.provider.wire._kit import SAMPLE_KINDS, SampleKind, kit_for
from tests.gateway.streams import final_message, random_chunks, stream_error, translate


@pytest.mark.parametrize("kind", SAMPLE_KINDS)
@pytest.mark.parametrize("format_id", FORMAT_IDS)
def test_kit_sample_translates_to_what_its_kind_says(format_id: str, kind: SampleKind) -> None:
    body = kit_for(format_id).sample(kind)
    events = translate(format_id, body)
    assert translate(format_id, random_chunks(body, seed=7)) == events
    if kind == "error":
        assert stream_error(events).error.message
        return
    message = final_message(events).message
    if kind == "text":
        assert message.content and not message.tool_calls
    elif kind == "tool_calls":
        assert message.tool_calls and all(call.id and call.name for call in message.tool_calls)
    else:
        assert message.thinking and any(isinstance(e, ThinkingDelta) for e in events)


@pytest.mark.parametrize("format_id", FORMAT_IDS)
def test_kit_text_stream_is_the_text_and_truncated_without_its_closing(format_id: str) -> None:
    kit = kit_for(format_id)
    stream = kit.text(("Hel", "lo ", "🦅"))
    assert final_message(translate(format_id, b"".join(stream.events))).message.content == (
        "Hello 🦅"
    )
    cut = translate(format_id, b"".join(stream.unfinished))
    assert stream_error(cut).error.retryable
    # A keep-alive is never content, anywhere in the stream.
    with_keepalives = [kit.keepalive, *(event + kit.keepalive for event in stream.events)]
    assert translate(format_id, b"".join(with_keepalives)) == translate(
        format_id, b"".join(stream.events)
    )


@pytest.mark.parametrize("format_id", FORMAT_IDS)
def test_kit_error_event_is_the_code_it_names(format_id: str) -> None:
    kit = kit_for(format_id)
    stream = kit.text(("partial",))
    events = translate(format_id, b"".join([*stream.unfinished, kit.error_event]))
    error = stream_error(events).error
    assert isinstance(events[-1], StreamError)
    assert error.code == kit.error_event_code
