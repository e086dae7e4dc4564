"""The per-stream log line is redacted field by field, each field before it is cut.

`RedactingFormatter` searches a line whole unless it is made only of
redacted text (`Redacted` arguments and a clean template): the per-stream
line is, so each of its fields must be masked on its own, and a field cut to
its 80 characters must not keep the first part of a secret the cut split.
"""

from __future__ import annotations

import io
import logging
import random
from collections.abc import Iterator

import pytest

from navagent.core.redaction import (
    REDACTED,
    Redacted,
    RedactingFormatter,
    redacted,
    register_secret,
)
from navagent.gateway.service import _StreamLog
from tests.core.test_redaction_cut import NO_START_OF_ITS_OWN
from tests.scenarios.secret_kinds import Planted, planted_secrets

PLANTED = [p for p in planted_secrets(random.Random(44)) if not p.multiline]
SHOWN = 8


@pytest.fixture
def written() -> Iterator[io.StringIO]:
    """What the gateway's logger writes through the redacting formatter."""
    sink = io.StringIO()
    handler = logging.StreamHandler(sink)
    handler.setFormatter(RedactingFormatter("%(message)s"))
    logger = logging.getLogger("navagent.gateway")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield sink
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _line(sink: io.StringIO, *, hint: str = "agent", route: str = "r", model: str = "m") -> str:
    """The line one stream with these fields logs (the sink holds only it)."""
    sink.seek(0)
    sink.truncate()
    stream_log = _StreamLog(hint=hint)
    stream_log.record.route, stream_log.record.model = route, model
    stream_log.settle("ok")
    stream_log.emit()
    return sink.getvalue()


@pytest.mark.parametrize("field", ["hint", "route", "model"])
def test_a_secret_in_any_text_field_is_masked(field: str, written: io.StringIO) -> None:
    shown = []
    for planted in PLANTED:
        line = _line(written, **{field: planted.text})
        assert line.startswith("stream id=")
        shown += [planted.kind for part in planted.parts if part[:SHOWN] in line]
    assert shown == []


def _split_by_the_cut() -> list[tuple[Planted, str, str]]:
    """(kind, a hint the 80-character cut would split inside a part, its characters before it)."""
    cases = []
    for planted in PLANTED:
        if planted.kind in NO_START_OF_ITS_OWN:
            continue
        for part in planted.parts:
            where = planted.text.find(part)
            escaped = planted.text[:where].encode("unicode_escape").decode("ascii")
            size = len(part) // 2
            pad = 80 - size - len(escaped.replace('"', '\\"')) - len("h  ")
            if len(part) < 24 or where < 0 or pad < 1 or not part.isascii() or '"' in part:
                continue
            hint = "h " + "h" * pad + " " + planted.text
            cases.append((planted, hint, part[size - SHOWN : size]))
    return cases


CUT = _split_by_the_cut()


def test_a_secret_the_field_cut_splits_is_masked_from_its_start(written: io.StringIO) -> None:
    left = []
    for planted, hint, before_cut in CUT:
        if before_cut in _line(written, hint=hint):
            left.append(planted.kind)
    assert left == []


def test_most_kinds_are_cut_somewhere() -> None:
    """The cases above are made, not listed: most kinds have a part long enough to split."""
    assert len({planted.kind for planted, _, _ in CUT}) > len({p.kind for p in PLANTED}) * 3 // 4


def _format(message: str, *args: object) -> str:
    record = logging.LogRecord("t", logging.INFO, __file__, 1, message, args, None)
    return RedactingFormatter("%(message)s").format(record)


def test_a_line_with_any_text_not_marked_redacted_is_searched_whole() -> None:
    secret = next(p for p in PLANTED if p.kind == "an OpenAI-style secret key (sk-...)").parts[0]
    assert secret not in _format("key=%s n=%d", secret, 1)  # a plain str argument
    assert secret not in _format(f"key={secret} %s", Redacted("x"))  # in the template
    assert secret not in _format(f"key={secret}")  # no arguments at all
    assert secret not in _format("%s", _Text(secret))  # a str subclass of its own


class _Text(str):
    """A str subclass that is not `Redacted`."""


def test_a_secret_registered_later_is_masked_in_a_field_redacted_before() -> None:
    secret = "zq" + "".join(random.Random(7).choices("abcdefghjkmnpqrstuvwxyz", k=22))
    model = f"model-{secret}"
    assert redacted(model) == model  # not a secret yet: remembered as it is
    register_secret(secret)
    assert redacted(model) == f"model-{REDACTED}"
