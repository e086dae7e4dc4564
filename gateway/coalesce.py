"""Merge adjacent deltas that arrived in the same network read.

When a provider's tokens arrive faster than we forward them, one read holds
many SSE events. Forwarding each as its own gRPC message costs far more than
the translation itself, so the gateway sends adjacent text (and thinking, and
refusal) deltas of one read as a single delta. Nothing waits: a read's events go out as
soon as it is translated, and with a provider pacing its tokens every read
holds one delta and nothing changes. Concatenated, the text is identical.
"""

from __future__ import annotations

from navagent.core.events import RefusalDelta, StreamEvent, TextDelta, ThinkingDelta

__all__ = ["coalesce_deltas"]

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
