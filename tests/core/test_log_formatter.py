"""The redacting log formatter searches a line once unless escaping changed it (issue 44).

Every gateway stream logs one line; searching it for secrets costs about
12 us each time, and the line has no control characters to escape, so a
second search finds nothing the first did not.
"""

from __future__ import annotations

import logging

import pytest

from navagent.core import redaction
from navagent.core.redaction import REDACTED, RedactingFormatter

KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"


def _searches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    searched: list[str] = []
    real = redaction.find_secrets

    def counting(text: str, **kwargs: object) -> list[redaction.SecretMatch]:
        searched.append(text)
        return real(text, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(redaction, "find_secrets", counting)
    return searched


def _format(message: str, *, max_chars: int = 4096) -> str:
    record = logging.LogRecord("navagent.gateway", logging.INFO, __file__, 1, message, None, None)
    return RedactingFormatter("%(message)s", max_chars=max_chars).format(record)


def test_a_line_without_control_characters_is_searched_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    searched = _searches(monkeypatch)

    line = _format(f"stream id=1 hint={KEY} outcome=ok")

    assert line == f"stream id=1 hint={REDACTED} outcome=ok"
    assert len(searched) == 1


def test_an_escaped_line_is_searched_again_after_escaping(monkeypatch: pytest.MonkeyPatch) -> None:
    searched = _searches(monkeypatch)

    line = _format(f"upstream said:\n{KEY}\tdone")

    assert line == f"upstream said:\\n{REDACTED}\\tdone"
    assert len(searched) == 2 and "\\n" in searched[1]


def test_a_long_line_is_redacted_before_it_is_cut() -> None:
    line = _format("x " * 20 + KEY, max_chars=48)

    assert len(line) <= 48 and "sk-proj" not in line and line.endswith("…")
