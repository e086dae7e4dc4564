"""`nav agent sessions`: the saved conversations as a table or JSON."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from navagent.core.sessions import SessionError, SessionStore, SessionSummary

__all__ = ["sessions_table", "show_sessions"]


def sessions_table(sessions: Sequence[SessionSummary]) -> Table:
    """One row per session: name or id, cluster, last activity, size, cost, first message.

    Tokens in include the cached ones (read from the provider's prompt cache),
    on every provider.
    """
    table = Table(box=None, header_style="bold", padding=(0, 2))
    table.add_column("session")
    table.add_column("cluster")
    table.add_column("last active (UTC)")
    table.add_column("messages", justify="right")
    table.add_column("tokens in", justify="right")
    table.add_column("cached", justify="right")
    table.add_column("out", justify="right")
    table.add_column("first message", overflow="ellipsis", no_wrap=True)
    for summary in sessions:
        table.add_row(
            summary.label,
            summary.cluster,
            summary.updated_at.strftime("%Y-%m-%d %H:%M"),
            str(summary.message_count),
            f"{summary.usage.input_tokens:,}",
            f"{summary.usage.cache_read_tokens:,}",
            f"{summary.usage.output_tokens:,}",
            summary.preview,
        )
    return table


def show_sessions(*, json_output: bool, limit: int) -> int:
    """Print the sessions in the default store; returns the exit status."""
    err = Console(stderr=True, highlight=False)
    try:
        with SessionStore() as store:
            summaries = store.list_sessions(limit=limit)
    except SessionError as exc:
        err.print(Text(f"nav agent sessions: {exc}", style="red"))
        return 2
    if json_output:
        sys.stdout.write(
            json.dumps([summary.model_dump(mode="json") for summary in summaries], indent=2) + "\n"
        )
        return 0
    if not summaries:
        err.print(Text("No saved sessions yet; `nav agent` saves every conversation.", "dim"))
        return 0
    Console(highlight=False).print(sessions_table(summaries))
    err.print(Text("Resume one with `nav agent --session NAME` (or an id).", style="dim"))
    return 0
