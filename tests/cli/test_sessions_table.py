"""The sessions table at any width: a name is never cut or folded (issues 32 and 41)."""

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


@settings(max_examples=60, deadline=None)
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
def test_names_are_never_cut_or_folded_at_any_width(
    names: list[str], counts: list[int], width: int
) -> None:
    """Issue 41: a name is what `/resume NAME` takes: whole on one line, whatever the width.

    The other columns give way first (the date shortened, then the count
    left out), and only then is the row stacked under the name. Only a name
    longer than the window makes a line longer than the window.
    """
    sessions = [summary(n, name, counts[n]) for n, name in enumerate(names)]
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None)
    console.print(sessions_table(sessions, width=width), crop=False)
    rows = out.getvalue().splitlines()
    for session in sessions:
        label = session.label + (" *" if session.demo else "")
        [at] = [i for i, row in enumerate(rows) if re.match(rf"{re.escape(label)}(  |$)", row)]
        dates = (f"{session.updated_at:%Y-%m-%d %H:%M}", f"{session.updated_at:%m-%d %H:%M}")
        assert any(date in "\n".join(rows[at : at + 2]) for date in dates), rows
    for row in rows:
        assert len(row.rstrip()) <= width or row.rstrip().removesuffix(" *") in names, rows


def test_the_date_then_the_count_give_way_before_a_name_is_stacked() -> None:
    sessions = [summary(0, "py-worker-provisioning", 4), summary(1, "quick", 12)]

    def shown(width: int) -> list[str]:
        out = io.StringIO()
        console = Console(file=out, width=width, color_system=None)
        console.print(sessions_table(sessions, width=width), crop=False)
        return [row.rstrip() for row in out.getvalue().splitlines()]

    assert shown(50)[1].split() == ["py-worker-provisioning", "2026-11-26", "01:02", "4"]
    assert shown(44)[1].split() == ["py-worker-provisioning", "11-26", "01:02", "4"]
    assert shown(40)[0].split() == ["session", "active", "(UTC)"]
    assert shown(40)[1].split() == ["py-worker-provisioning", "11-26", "01:02"]
    stacked = shown(34)
    assert stacked[1:3] == ["py-worker-provisioning", "  2026-11-26 01:02 UTC · 4 msgs"]
