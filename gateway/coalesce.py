"""Merge adjacent deltas that arrived together, within a size cap.

When a provider's tokens arrive faster than we forward them, one read (or one
backlog hand-over) holds many SSE events. Forwarding each as its own gRPC
message costs far more than the translation itself, so the gateway sends
adjacent text (and thinking) deltas as a single delta. Nothing waits: events
go out as soon as they are translated, and with a provider pacing its tokens
every read holds one delta and nothing changes. Concatenated, the text is
identical.

No merged delta is longer than `max_chars`, and a single giant delta is split
to fit: a client's gRPC message limit (4 MiB by default) is never at risk from
a delta, however the provider chunks its answer.
"""

from __future__ import annotations

from navagent.core.events import StreamEvent, TextDelta, ThinkingDelta

__all__ = ["coalesce_deltas"]

_Delta = type[TextDelta] | type[ThinkingDelta]


def coalesce_deltas(events: list[StreamEvent], *, max_chars: int = 0) -> list[StreamEvent]:
    """Return `events` with runs of adjacent same-kind deltas merged.

    With `max_chars`, every delta in the result is at most that long (runs
    are cut, and a longer delta is split); 0 means no cap.
    """
    if len(events) < 2 and (not max_chars or not _oversized(events, max_chars)):
        return events
    merged: list[StreamEvent] = []
    run: list[str] = []
    run_chars = 0
    run_kind: _Delta | None = None
    for event in events:
        if isinstance(event, TextDelta | ThinkingDelta):
            kind = type(event)
            if kind is not run_kind or (max_chars and run_chars + len(event.text) > max_chars):
                _flush(merged, run, run_kind, max_chars)
                run_kind, run_chars = kind, 0
            run.append(event.text)
            run_chars += len(event.text)
            continue
        _flush(merged, run, run_kind, max_chars)
        run_kind, run_chars = None, 0
        merged.append(event)
    _flush(merged, run, run_kind, max_chars)
    return merged


def _oversized(events: list[StreamEvent], max_chars: int) -> bool:
    return any(isinstance(e, TextDelta | ThinkingDelta) and len(e.text) > max_chars for e in events)


def _flush(merged: list[StreamEvent], run: list[str], kind: _Delta | None, max_chars: int) -> None:
    if kind is None or not run:
        return
    text = run[0] if len(run) == 1 else "".join(run)
    run.clear()
    if not max_chars or len(text) <= max_chars:
        merged.append(kind(text=text))
        return
    merged.extend(kind(text=text[i : i + max_chars]) for i in range(0, len(text), max_chars))
