"""Merge adjacent deltas that arrived in the same network read, and split giant ones.

When a provider's tokens arrive faster than we forward them, one read holds
many SSE events. Forwarding each as its own gRPC message costs far more than
the translation itself, so the gateway sends adjacent text (and thinking, and
refusal) deltas of one read as a single delta. Nothing waits: a read's events go out as
soon as it is translated, and with a provider pacing its tokens every read
holds one delta and nothing changes. Concatenated, the text is identical.
"""

from __future__ import annotations

from navagent.core.events import RefusalDelta, StreamEvent, TextDelta, ThinkingDelta

__all__ = ["coalesce_deltas", "split_long_deltas"]

_Delta = TextDelta | ThinkingDelta | RefusalDelta


def coalesce_deltas(events: list[StreamEvent]) -> list[StreamEvent]:
    """Return `events` with each run of adjacent same-kind deltas merged into one."""
    if len(events) < 2:
        return events
    merged: list[StreamEvent] = []
    run: list[str] = []
    run_kind: type[_Delta] | None = None
    for event in events:
        if isinstance(event, _Delta):
            kind = type(event)
            if kind is not run_kind:
                _flush(merged, run, run_kind)
                run_kind = kind
            run.append(event.text)
            continue
        _flush(merged, run, run_kind)
        run_kind = None
        merged.append(event)
    _flush(merged, run, run_kind)
    return merged


def _flush(
    merged: list[StreamEvent],
    run: list[str],
    kind: type[_Delta] | None,
) -> None:
    if kind is None or not run:
        return
    merged.append(kind(text=run[0] if len(run) == 1 else "".join(run)))
    run.clear()


def split_long_deltas(events: list[StreamEvent], max_chars: int) -> list[StreamEvent]:
    """Return `events` with every delta longer than `max_chars` cut into pieces that fit.

    One SSE event may carry megabytes of text (and one read many merged
    events); a client's gRPC message limit must never be at risk from a delta.
    """
    if all(not isinstance(e, _Delta) or len(e.text) <= max_chars for e in events):
        return events
    fitted: list[StreamEvent] = []
    for event in events:
        if isinstance(event, _Delta) and len(event.text) > max_chars:
            text, kind = event.text, type(event)
            fitted.extend(
                kind(text=text[i : i + max_chars]) for i in range(0, len(text), max_chars)
            )
        else:
            fitted.append(event)
    return fitted
