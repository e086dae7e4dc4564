"""The incremental SSE decoder: WHATWG field rules, framing at every chunk boundary, cost."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navagent.gateway.sse import SSEDecoder, SSEEvent


def decode(chunks: Iterable[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.finish()


def fragments(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


# --- WHATWG field rules ------------------------------------------------------


def test_sse_decoder_reads_every_field() -> None:
    body = b"event: update\nid: 7\nretry: 1500\ndata: hello\n\n"
    assert decode([body]) == [SSEEvent(event="update", data="hello", id="7", retry=1500)]


def test_sse_decoder_defaults_event_type_to_message() -> None:
    assert decode([b"data: x\n\n", b"event:\ndata: y\n\n"]) == [
        SSEEvent(event="message", data="x"),
        SSEEvent(event="message", data="y"),
    ]


def test_sse_decoder_strips_exactly_one_leading_space() -> None:
    events = decode([b"data:nospace\n\ndata: one\n\ndata:  two\n\n"])
    assert [event.data for event in events] == ["nospace", "one", " two"]


def test_sse_decoder_joins_data_lines_with_lf() -> None:
    events = decode([b"data: a\ndata:\ndata: c\n\n"])
    assert [event.data for event in events] == ["a\n\nc"]


def test_sse_decoder_ignores_comments_and_unknown_fields() -> None:
    events = decode([b": keep-alive\n:\nfoo: bar\ndata: x\n: between\n\n"])
    assert events == [SSEEvent(data="x")]


def test_sse_decoder_line_without_colon_is_a_field_with_empty_value() -> None:
    # "data" alone appends an empty line; "event" alone resets the type.
    events = decode([b"event: a\nevent\ndata\n\n"])
    assert events == [SSEEvent(event="message", data="")]


def test_sse_decoder_event_without_data_lines_is_not_dispatched() -> None:
    events = decode([b"event: lonely\nid: 1\n\n", b"data: next\n\n"])
    # The type is reset by the blank line; the id persists.
    assert events == [SSEEvent(event="message", data="next", id="1")]


def test_sse_decoder_last_event_id_persists_and_nul_ids_are_ignored() -> None:
    body = b"id: a\ndata: 1\n\ndata: 2\n\nid: b\x00c\ndata: 3\n\nid\ndata: 4\n\n"
    assert [(event.data, event.id) for event in decode([body])] == [
        ("1", "a"),
        ("2", "a"),
        ("3", "a"),
        ("4", ""),
    ]


@pytest.mark.parametrize("value", [b"10a", b"-1", b"+5", b"  5", b"1.5", b"\xd9\xa3", b""])
def test_sse_decoder_ignores_non_integer_retry(value: bytes) -> None:
    events = decode([b"retry: 100\ndata: a\n\nretry:" + value + b"\ndata: b\n\n"])
    assert [event.retry for event in events] == [100, 100]


def test_sse_decoder_retry_persists_when_sent_alone() -> None:
    assert decode([b"retry: 3000\n\ndata: x\n\n"]) == [SSEEvent(data="x", retry=3000)]


def test_sse_decoder_huge_retry_does_not_raise() -> None:
    assert decode([b"retry: " + b"9" * 5000 + b"\ndata: x\n\n"]) == [SSEEvent(data="x")]


@pytest.mark.parametrize("ending", [b"\n", b"\r", b"\r\n"])
def test_sse_decoder_accepts_each_line_ending(ending: bytes) -> None:
    body = b"event: e" + ending + b"data: a" + ending + b"data: b" + ending + ending
    assert decode([body]) == [SSEEvent(event="e", data="a\nb")]


def test_sse_decoder_mixed_line_endings() -> None:
    body = b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r"
    assert [event.data for event in decode([body])] == ["a\nb\nc", "d"]


def test_sse_decoder_does_not_split_on_unicode_line_separators() -> None:
    value = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg"
    assert [event.data for event in decode([f"data: {value}\n\n".encode()])] == [value]


def test_sse_decoder_strips_one_leading_bom_only() -> None:
    body = b"\xef\xbb\xbfdata: first\n\n\xef\xbb\xbfdata: second\n\n"
    for size in (1, 2, 100):
        events = decode(fragments(body, size))
        # The second BOM is not at the start of the stream: it is part of a field name.
        assert [event.data for event in events] == ["first"]


def test_sse_decoder_discards_an_unterminated_event_at_finish() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: complete\n\ndata: partial\ndata: cut") == [
        SSEEvent(data="complete")
    ]
    assert decoder.finish() == []
    # finish() reset the pending event: nothing of it leaks into later input.
    assert decoder.feed(b"data: fresh\n\n") == [SSEEvent(data="fresh")]


def test_sse_decoder_replaces_invalid_utf8() -> None:
    events = decode([b"data: a\xffb\xc3\n\n"])
    assert [event.data for event in events] == ["a\ufffdb\ufffd"]


def test_sse_decoder_has_no_event_size_cap() -> None:
    size = 16 * 1024 * 1024
    chunk = b"x" * (1024 * 1024)
    events = decode([b"data: ", *([chunk] * (size // len(chunk))), b"\n\n"])
    assert len(events) == 1 and len(events[0].data) == size


# --- framing at chunk boundaries ---------------------------------------------


@pytest.mark.parametrize("ending", [b"\n", b"\r", b"\r\n"])
def test_sse_decoder_every_chunk_boundary(ending: bytes) -> None:
    body = b"event: e" + ending + b"data: ok" + ending + ending + b"data: two" + ending + ending
    for first in range(len(body) + 1):
        for second in range(first, len(body) + 1):
            chunks = [body[:first], b"", body[first:second], body[second:]]
            assert decode(chunks) == [SSEEvent(event="e", data="ok"), SSEEvent(data="two")], chunks


def test_sse_decoder_crlf_split_across_chunks_is_one_line_ending() -> None:
    # Read as CR then LF, the LF would be a blank line and dispatch "a" alone.
    assert decode([b"data: a\r", b"\ndata: b\r\n\r\n"]) == [SSEEvent(data="a\nb")]


def test_sse_decoder_cr_at_chunk_end_then_other_byte() -> None:
    assert decode([b"data: a\r", b"data: b\r", b"\r"]) == [SSEEvent(data="a\nb")]


def test_sse_decoder_multibyte_character_split_at_every_byte() -> None:
    text = "héllo 🦅 ’ известни"
    body = f"data: {text}\n\n".encode()
    for split in range(len(body) + 1):
        assert decode([body[:split], body[split:]]) == [SSEEvent(data=text)]


@pytest.mark.parametrize("size", [1, 97, 100_000])
def test_sse_decoder_fragment_sizes(size: int) -> None:
    body = ("id: 1\r\ndata: известни\r\n\r\n" * 300 + "data: last\n\n").encode()
    events = decode(fragments(body, size))
    assert [event.data for event in events] == ["известни"] * 300 + ["last"]


# --- cost is linear ----------------------------------------------------------


class CountingBuffer(bytearray):
    """A bytearray that tallies the bytes each O(n) operation on it touches."""

    work = 0


def _count_len(name: str) -> Callable[..., Any]:
    method = getattr(bytearray, name)

    def counted(self: CountingBuffer, *args: Any, **kwargs: Any) -> Any:
        CountingBuffer.work += len(self)
        return method(self, *args, **kwargs)

    return counted


for _name in (
    "decode", "find", "rfind", "index", "rindex", "count", "split", "rsplit", "splitlines",
    "partition", "rpartition", "startswith", "endswith", "replace", "strip", "copy",
    "__contains__", "__add__", "__getitem__",
):  # fmt: skip
    setattr(CountingBuffer, _name, _count_len(_name))


def _iadd(self: CountingBuffer, other: Any) -> CountingBuffer:
    CountingBuffer.work += len(other)
    return bytearray.__iadd__(self, other)


CountingBuffer.__iadd__ = _iadd  # type: ignore[assignment,method-assign]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"data: " + b"x" * 1_000_000 + b"\n\n", id="one-1MB-line"),
        pytest.param(b"data: 0123456789abcdef\n\n" * 11_000, id="many-short-events"),
    ],
)
def test_sse_decoder_one_byte_chunks_cost_is_linear(body: bytes) -> None:
    # Re-scanning or re-copying the pending buffer on every feed would make
    # this N**2 / 2 (5 * 10**11 byte operations for 1 MB): count the work
    # done on the buffer instead of timing it.
    decoder = SSEDecoder()
    decoder._framer._buffer = CountingBuffer()
    CountingBuffer.work = 0
    events = 0
    for i in range(len(body)):
        events += len(decoder.feed(body[i : i + 1]))
    assert events == body.count(b"\n\n")
    assert CountingBuffer.work <= 3 * len(body)


# --- properties --------------------------------------------------------------

_values = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\r\n"), max_size=12
) | st.sampled_from(["é", "🦅", "\u2028", "\x85", " lead", "a:b", "\x00"])
_field_lines = st.one_of(
    st.tuples(st.sampled_from(["data", "event", "id", "retry", "", "other", "dat"]), _values).map(
        lambda pair: f"{pair[0]}:{pair[1]}"
    ),
    st.sampled_from(["data", "", "", "retry: 42", "retry:7x", ": comment", "\ufeffdata: bom"]),
)
_endings = st.sampled_from(["\n", "\r", "\r\n"])
streams = st.lists(st.tuples(_field_lines, _endings), max_size=25).map(
    lambda lines: "".join(line + ending for line, ending in lines).encode()
)


@st.composite
def split_stream(draw: st.DrawFn, source: st.SearchStrategy[bytes] = streams) -> list[bytes]:
    body = draw(source)
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=12)))
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


def reference_decode(body: bytes) -> list[SSEEvent]:
    """The WHATWG algorithm applied to a whole body, as plainly as possible."""
    text = body.decode("utf-8", "replace").removeprefix("\ufeff")
    lines = re.split(r"\r\n|\r|\n", text)[:-1]  # the last piece is unterminated
    events: list[SSEEvent] = []
    data: list[str] = []
    kind, last_id, retry = "", None, None
    for line in lines:
        if line == "":
            if data:
                events.append(SSEEvent(kind or "message", "\n".join(data), last_id, retry))
            data, kind = [], ""
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = value
        elif name == "id" and "\x00" not in value:
            last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            retry = int(value)
    return events


@settings(max_examples=500)
@given(chunks=split_stream())
def test_sse_decoder_any_split_matches_whole_stream(chunks: list[bytes]) -> None:
    whole = b"".join(chunks)
    assert decode(chunks) == decode([whole]) == reference_decode(whole)


@settings(max_examples=500)
@given(chunks=split_stream(st.binary(max_size=200)))
def test_sse_decoder_arbitrary_bytes_never_raise(chunks: list[bytes]) -> None:
    assert decode(chunks) == decode([b"".join(chunks)])


@pytest.mark.parametrize("line", [b"data:\n", b": keep-alive\n", b"event: x\n"])
def test_sse_decoder_pending_size_counts_every_line_of_the_event(line: bytes) -> None:
    # A MiB of lines that hold no data value (or none at all) is still a MiB of
    # an event that never ends: a caller's cap must see it (issue 39; the
    # gateway's 8 MiB cap on 16 MiB of them is in test_fault_matrix).
    decoder = SSEDecoder()
    block = line * (2**20 // len(line) + 1)
    assert decoder.feed(block) == []
    assert decoder.pending_bytes >= 2**20
    # A blank line ends the event (none is dispatched without data) and the count restarts.
    decoder.feed(b"\n")
    assert decoder.pending_bytes == 0
    assert decoder.feed(b"data: ab\n") == []
    assert decoder.pending_bytes == len("data: ab\n")
    decoder.finish()
    assert decoder.pending_bytes == 0
