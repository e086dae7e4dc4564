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

    Tokens are the input tokens of every completion, with the share read from
    the provider's prompt cache (the same meaning on every provider).
    """
    table = Table(box=None, header_style="bold", padding=(0, 2))
    table.add_column("session")
    table.add_column("cluster")
    table.add_column("last active (UTC)")
    table.add_column("messages", justify="right")
    table.add_column("tokens in (% cached)", justify="right")
    table.add_column("first message", overflow="ellipsis", no_wrap=True)
    for summary in sessions:
        table.add_row(
            summary.label,
            summary.cluster,
            summary.updated_at.strftime("%Y-%m-%d %H:%M"),
            str(summary.message_count),
            _tokens(summary),
            summary.preview,
        )
    return table


def _tokens(summary: SessionSummary) -> str:
    """Input tokens with the share read from the cache, compact: `2.8k (46%)`."""
    usage = summary.usage
    if not usage.input_tokens:
        return "-"
    count = usage.input_tokens
    shown = f"{count / 1000:.1f}k" if count >= 1000 else str(count)
    share = usage.cache_read_tokens * 100 // count
    return f"{shown} ({share}%)" if share else shown


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
