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
from navagent.gateway.coalesce import coalesce_deltas

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
