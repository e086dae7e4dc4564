"""Merging adjacent deltas: the text is unchanged, the message count drops."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from navagent.core.events import (
    ChatError,
    RefusalDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallStart,
    TurnEnd,
)
from navagent.gateway.coalesce import coalesce_deltas, split_long_deltas

events = st.lists(
    st.one_of(
        st.builds(TextDelta, text=st.text(max_size=5)),
        st.builds(ThinkingDelta, text=st.text(max_size=5)),
        st.builds(RefusalDelta, text=st.text(max_size=5)),
        st.builds(ToolCallStart, index=st.integers(0, 3), id=st.just("c"), name=st.just("t")),
        st.just(TurnEnd(finish_reason="stop")),
    ),
    max_size=30,
)


Delta = TextDelta | ThinkingDelta | RefusalDelta


def text_of(items: list[StreamEvent], kind: type[Delta]) -> str:
    return "".join(e.text for e in items if isinstance(e, Delta) and type(e) is kind)


def others(items: list[StreamEvent]) -> list[StreamEvent]:
    return [e for e in items if not isinstance(e, Delta)]


@settings(max_examples=500)
@given(events)
def test_coalescing_keeps_text_and_order_and_merges_every_run(items: list[StreamEvent]) -> None:
    merged = coalesce_deltas(list(items))
    assert text_of(merged, TextDelta) == text_of(items, TextDelta)
    assert text_of(merged, ThinkingDelta) == text_of(items, ThinkingDelta)
    assert text_of(merged, RefusalDelta) == text_of(items, RefusalDelta)
    assert others(merged) == others(items)
    assert all(
        type(a) is not type(b) or not isinstance(a, Delta)
        for a, b in zip(merged, merged[1:], strict=False)
    )


def test_runs_split_by_another_event_stay_apart() -> None:
    error = StreamError(error=ChatError(message="x"))
    items: list[StreamEvent] = [
        TextDelta(text="a"),
        TextDelta(text="b"),
        ThinkingDelta(text="t"),
        TextDelta(text="c"),
        error,
    ]
    assert coalesce_deltas(items) == [
        TextDelta(text="ab"),
        ThinkingDelta(text="t"),
        TextDelta(text="c"),
        error,
    ]


def _text(events: list[StreamEvent], kind: type) -> str:
    deltas = (TextDelta, ThinkingDelta, RefusalDelta)
    return "".join(e.text for e in events if isinstance(e, deltas) and type(e) is kind)


@given(batch=events, limit=st.integers(1, 6))
@settings(max_examples=300)
def test_split_long_deltas_fits_every_delta_and_keeps_the_text(
    batch: list[StreamEvent], limit: int
) -> None:
    merged = coalesce_deltas(batch)
    fitted = split_long_deltas(merged, limit)
    deltas = (TextDelta, ThinkingDelta, RefusalDelta)
    assert all(len(e.text) <= limit for e in fitted if isinstance(e, deltas))
    for kind in deltas:
        assert _text(fitted, kind) == _text(merged, kind)
    # Everything else is untouched and in order.
    assert [e for e in fitted if not isinstance(e, deltas)] == [
        e for e in merged if not isinstance(e, deltas)
    ]


def test_split_long_deltas_returns_a_batch_that_fits_as_it_is() -> None:
    batch: list[StreamEvent] = [TextDelta(text="abc"), TurnEnd(finish_reason="stop")]
    assert split_long_deltas(batch, 3) is batch
    assert split_long_deltas(batch, 2)[:2] == [TextDelta(text="ab"), TextDelta(text="c")]
