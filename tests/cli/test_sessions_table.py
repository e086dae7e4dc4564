"""The sessions table at any width: names, dates and counts are never cut (issue 32)."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from navagent.cli.sessions_view import sessions_table
from navagent.core.events import Usage
from navagent.core.sessions import SessionSummary

NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-._"
DATE = re.compile(r"20\d\d-\d\d-\d\d \d\d:\d\d")


def summary(number: int, name: str | None, messages: int) -> SessionSummary:
    when = datetime(2026, 11, 26, 1, 2, tzinfo=UTC) - timedelta(hours=number)
    return SessionSummary(
        id=f"{number:032x}",
        name=name,
        cluster="cluster-with-a-long-name",
        demo=number % 2 == 1,
        created_at=when,
        updated_at=when,
        message_count=messages,
        preview="why is gpu-trainer failing? show its logs please",
        usage=Usage(input_tokens=2800 * messages, cache_read_tokens=1000),
    )


@settings(max_examples=40, deadline=None)
@given(
    names=st.lists(
        st.text(alphabet=NAME_CHARS, min_size=1, max_size=64).map(lambda n: "a" + n[:63]),
        min_size=1,
        max_size=4,
        unique=True,
    ),
    counts=st.lists(st.integers(0, 99_999), min_size=4, max_size=4),
    width=st.integers(40, 160),
)
def test_names_dates_and_counts_stay_whole_at_any_width(
    names: list[str], counts: list[int], width: int
) -> None:
    sessions = [summary(n, name, counts[n]) for n, name in enumerate(names)]
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(sessions_table(sessions, width=width))
    rows = out.getvalue().splitlines()
    assert all(len(row) <= width for row in rows), rows
    header = rows[0]
    assert "session" in header and "last active (UTC)" in header and "msgs" in header
    name_end = header.index("cluster") if "cluster" in header else header.index("last active")
    starts = [i for i, row in enumerate(rows) if DATE.search(row)]
    assert len(starts) == len(sessions), rows
    for session, start, end in zip(sessions, starts, [*starts[1:], len(rows)], strict=True):
        first = rows[start]
        date = DATE.search(first)
        assert date is not None and date.group() == f"{session.updated_at:%Y-%m-%d %H:%M}"
        assert first[date.end() :].split()[0] == str(session.message_count)
        shown = "".join(row[:name_end].strip() for row in rows[start:end])
        assert shown.replace(" ", "").removesuffix("*") == session.label, rows
