"""Matching requests on their JSON body, and saying exactly what changed.

A replay is only worth something if a change in request translation makes
it fail, and the failure is only useful if it shows the change. Two forms:

- `json_changes`: one line per changed leaf, `messages[3].content: "...
  sandboxes ..." -> "... sandboxen ..."`, with long strings cut to a window
  around their first difference so the changed word is always visible;
- `unified_json_diff`: a unified diff of the two bodies as sorted, indented
  JSON, for the full picture.

Written here rather than with a JSON-diff library (deepdiff and the like)
because the whole need is two small recursive functions, and the path syntax
must be the one the scenario errors use.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "RequestMismatch",
    "RequestShape",
    "compare_requests",
    "json_body_matcher",
    "json_changes",
    "parse_body",
    "unified_json_diff",
]

_WINDOW = 28
_MAX_SHOWN = 80


class _HasBody(Protocol):
    """What vcrpy's `Request` offers the matcher."""

    @property
    def body(self) -> bytes | str | None: ...


def parse_body(body: bytes | str | None) -> Any:
    """The JSON value of a body; the raw text when it is not JSON."""
    if body is None:
        return None
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        return json.loads(text)
    except ValueError:
        return text


def _render(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _strings(before: str, after: str) -> str:
    """Both strings, cut to a window around their first difference."""
    if len(before) <= _MAX_SHOWN and len(after) <= _MAX_SHOWN:
        return f"{_render(before)} -> {_render(after)}"
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    left = max(0, start - _WINDOW)

    def window(text: str) -> str:
        cut = text[left : start + _WINDOW]
        shown = json.dumps(cut, ensure_ascii=False)[1:-1]
        return f'"{"..." if left else ""}{shown}{"..." if start + _WINDOW < len(text) else ""}"'

    return f"{window(before)} -> {window(after)}"


def _path(prefix: str, part: int | str) -> str:
    if isinstance(part, int):
        return f"{prefix}[{part}]"
    return f"{prefix}.{part}" if prefix else part


def json_changes(before: Any, after: Any, path: str = "") -> list[str]:
    """Every difference between two JSON values, one line each, in document order.

    `before` is what the cassette holds, `after` what the replay sent.
    """
    where = path or "(body)"
    if isinstance(before, dict) and isinstance(after, dict):
        changes: list[str] = []
        for key in before:
            if key not in after:
                shown = _render(before[key])
                changes.append(f"{_path(path, key)}: missing in the replay (cassette has {shown})")
            else:
                changes += json_changes(before[key], after[key], _path(path, key))
        changes += [
            f"{_path(path, key)}: added in the replay ({_render(after[key])})"
            for key in after
            if key not in before
        ]
        return changes
    if isinstance(before, list) and isinstance(after, list):
        changes = []
        for index, (old, new) in enumerate(zip(before, after, strict=False)):
            changes += json_changes(old, new, _path(path, index))
        if len(before) != len(after):
            changes.append(
                f"{where}: the cassette has {len(before)} items, the replay {len(after)}"
            )
        return changes
    if before == after and type(before) is type(after):
        return []
    if isinstance(before, str) and isinstance(after, str):
        return [f"{where}: {_strings(before, after)}"]
    return [f"{where}: {_render(before)} -> {_render(after)}"]


def unified_json_diff(before: Any, after: Any) -> str:
    """A unified diff of the two values as sorted, indented JSON (cassette -> replay)."""

    def lines(value: Any) -> list[str]:
        return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True).splitlines()

    return "\n".join(
        difflib.unified_diff(lines(before), lines(after), "cassette", "replay", n=3, lineterm="")
    )


def json_body_matcher(r1: _HasBody, r2: _HasBody) -> None:
    """The vcrpy matcher: the two requests' bodies are the same JSON value.

    Raises:
        AssertionError: they differ; the message lists what changed (vcrpy
            shows it for the closest recorded request).
    """
    sent, recorded = parse_body(r1.body), parse_body(r2.body)
    if sent != recorded:
        changes = json_changes(recorded, sent)
        raise AssertionError("the JSON body differs:\n  " + "\n  ".join(changes))


@dataclass(frozen=True)
class RequestShape:
    """What identifies a request for matching: method, path and parsed body."""

    method: str
    path: str
    body: Any


@dataclass(frozen=True)
class RequestMismatch:
    """The first request of a replay that is not the cassette's request at that position."""

    index: int
    """0-based position in the conversation's sequence of provider requests."""
    expected: RequestShape | None
    """The cassette's request there; None when the replay sent more requests."""
    sent: RequestShape | None
    """What the replay sent; None when it stopped before this request."""

    @property
    def changes(self) -> list[str]:
        """What differs, one line per change."""
        if self.expected is None or self.sent is None:
            return []
        changes = []
        if (self.expected.method, self.expected.path) != (self.sent.method, self.sent.path):
            before = f"{self.expected.method} {self.expected.path}"
            changes.append(f"{before} -> {self.sent.method} {self.sent.path}")
        return changes + json_changes(self.expected.body, self.sent.body)

    @property
    def summary(self) -> str:
        """One line: which request, and the first change."""
        number = self.index + 1
        if self.sent is None:
            return f"request {number} in the cassette was never sent by the replay"
        if self.expected is None:
            return (
                f"request {number} ({self.sent.method} {self.sent.path}) is not in the cassette"
                " (the replay sent more requests than were recorded)"
            )
        changes = self.changes
        more = f" (+{len(changes) - 1} more)" if len(changes) > 1 else ""
        return (
            f"request {number} ({self.sent.method} {self.sent.path}) differs from the cassette:"
            f" {changes[0]}{more}"
        )

    @property
    def details(self) -> str:
        """Every change, then the unified diff of the bodies."""
        if self.expected is None or self.sent is None:
            return self.summary
        return "\n".join(
            [
                self.summary,
                *(f"  {change}" for change in self.changes),
                unified_json_diff(self.expected.body, self.sent.body),
            ]
        )


def compare_requests(
    recorded: Sequence[RequestShape], sent: Sequence[RequestShape]
) -> RequestMismatch | None:
    """The first position where the replay's requests leave the cassette's, if any.

    A conversation sends its completions one after another, so the n-th
    request sent must be the n-th recorded; comparing by position shows the
    request that actually broke, not merely the most similar one.
    """
    for index in range(max(len(recorded), len(sent))):
        expected = recorded[index] if index < len(recorded) else None
        actual = sent[index] if index < len(sent) else None
        if expected is None or actual is None or expected != actual:
            return RequestMismatch(index=index, expected=expected, sent=actual)
    return None
