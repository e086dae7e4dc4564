"""`nav agent sessions`: list, delete, rename and export saved conversations."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rich.console import Group
from rich.table import Table
from rich.text import Text

from navagent.cli.consoles import make_console
from navagent.cli.new_file import NewFileError, write_new_file
from navagent.cli.recording import record_target, recording_report
from navagent.cli.render import plural
from navagent.core.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)
from navagent.core.redaction import redact, redact_json
from navagent.core.sessions import (
    InvalidSessionNameError,
    SessionError,
    SessionInfo,
    SessionStore,
    SessionSummary,
)
from navagent.core.visible import visible
from navagent.fixtures.harness import (
    RECORDINGS_FOLDER,
    ExportResult,
    FilterError,
    find_capture,
    read_capture,
    remove_captures,
)

__all__ = [
    "DEMO_MARK",
    "export_scenario",
    "export_session",
    "remove_session",
    "rename_session",
    "resume_hint",
    "sessions_table",
    "show_sessions",
    "transcript_json",
    "transcript_markdown",
]


DEMO_MARK = " *"
"""After the name of a `--demo` session, which resumes only with `--demo`."""
_GAP = 2
_PREVIEW_MIN = 16
"""Narrower than this, the first message is left out rather than cut to nothing."""


@dataclass(frozen=True)
class _Column:
    header: str
    cells: list[str]
    justify: Literal["left", "right"] = "left"

    @property
    def width(self) -> int:
        return max([len(self.header), *(len(cell) for cell in self.cells)])


def sessions_table(
    sessions: Sequence[SessionSummary], *, width: int | None = None
) -> Table | Group:
    """One row per session: name or id, cluster, last activity, size, cost, first message.

    Tokens are the input tokens of every completion, with the share read from
    the provider's prompt cache in brackets (the same meaning on every
    provider). A `--demo` session's name ends with `DEMO_MARK`. A name is what
    `/resume NAME` takes, so within `width` columns it is never cut or folded:
    the first message is shortened, then left out, then the token and cluster
    columns; then the date loses its year (and seconds it never had), then the
    message count goes; if a name is still too wide beside the date, every
    row is stacked: the name on a line of its own (printed whole, `crop=False`:
    one longer than the window is wrapped by the terminal, not cut), its date
    and count under it.
    """
    fixed = [
        _Column("session", [visible(s.label) + (DEMO_MARK if s.demo else "") for s in sessions]),
        _Column("cluster", [visible(s.cluster) for s in sessions]),
        _Column("last active (UTC)", [f"{s.updated_at:%Y-%m-%d %H:%M}" for s in sessions]),
        _Column("msgs", [str(s.message_count) for s in sessions], "right"),
        _Column("tokens in", [_tokens(s) for s in sessions], "right"),
    ]
    preview: _Column | None = _Column("first message", [visible(s.preview) for s in sessions])

    def needed() -> int:
        widths = [column.width for column in fixed]
        if preview is not None:
            widths.append(_PREVIEW_MIN)
        return sum(widths) + _GAP * (len(widths) - 1)

    if width is not None:
        for name in ("first message", "tokens in", "cluster", "last active (UTC)", "msgs"):
            if needed() <= width:
                break
            if preview is not None and preview.header == name:
                preview = None
            elif name == "last active (UTC)":
                short = _Column(_SHORT_DATE, [f"{s.updated_at:%m-%d %H:%M}" for s in sessions])
                fixed = [short if column.header == name else column for column in fixed]
            else:
                fixed = [column for column in fixed if column.header != name]
        if needed() > width:
            return _stacked(sessions, fixed[0].cells)
    table = Table(box=None, header_style="bold", padding=(0, 0, 0, _GAP), pad_edge=False)
    for column in fixed:
        table.add_column(
            column.header,
            justify=column.justify,
            no_wrap=True,
            overflow="ignore" if column is fixed[0] else "ellipsis",
            min_width=column.width,
            max_width=column.width,
        )
    if preview is not None:
        room = None if width is None else width - needed() + _PREVIEW_MIN
        table.add_column(preview.header, overflow="ellipsis", no_wrap=True, max_width=room)
    columns = [*fixed, *([preview] if preview is not None else [])]
    for row in zip(*(column.cells for column in columns), strict=True):
        table.add_row(*row)
    return table


_SHORT_DATE = "active (UTC)"
"""The date column's header once the year is left out (`11-26 01:02`)."""


def _stacked(sessions: Sequence[SessionSummary], names: Sequence[str]) -> Group:
    """Each session as its whole name on a line, then its date and message count under it."""
    lines = [Text("session · last active · msgs", style="bold")]
    for session, name in zip(sessions, names, strict=True):
        lines.append(Text(name, no_wrap=True, overflow="ignore"))
        messages = plural(session.message_count, "msg")
        lines.append(Text(f"  {session.updated_at:%Y-%m-%d %H:%M} UTC · {messages}"))
    return Group(*lines)


def resume_hint(sessions: Sequence[SessionSummary]) -> str:
    """The footer of `nav agent sessions`: how to resume, `--demo` sessions included."""
    hint = (
        "Tokens in: (N%) read from the provider's cache."
        " Resume one with `nav agent --session NAME` (or an id)"
    )
    if any(summary.demo for summary in sessions):
        hint += f"; {DEMO_MARK.strip()} marks a --demo session: `nav agent --demo --session NAME`"
    return hint + "."


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
    err = make_console(stderr=True)
    try:
        with SessionStore() as store:
            summaries = store.list_sessions(limit=limit)
    except SessionError as exc:
        err.print(Text(f"nav agent sessions: {visible(str(exc))}", style="red"))
        return 2
    if json_output:
        sys.stdout.write(
            json.dumps([summary.model_dump(mode="json") for summary in summaries], indent=2) + "\n"
        )
        return 0
    if not summaries:
        err.print(Text("No saved sessions yet; `nav agent` saves every conversation.", "dim"))
        return 0
    out = make_console(file=sys.stdout)
    out.print(sessions_table(summaries, width=out.width), crop=False)
    err.print(Text(resume_hint(summaries), style="dim"))
    return 0


def transcript_markdown(info: SessionInfo, log: Sequence[Message]) -> str:
    """A session as a readable markdown transcript: messages, tool calls and their output.

    Every message is redacted on its own (the one redaction path), before it
    is put in the transcript.
    """
    results = {m.tool_call_id: redact(m.content) for m in log if isinstance(m, ToolResultMessage)}
    parts = [
        f"# nav agent session {info.label}\n",
        f"id `{info.id}` · cluster `{info.cluster or '-'}` · started"
        f" {info.created_at:%Y-%m-%d %H:%M} UTC · {plural(len(log), 'message')}\n",
    ]
    for message in log:
        match message:
            case UserMessage():
                parts.append(f"## You\n\n{redact(message.content)}\n")
            case SystemMessage():
                parts.append(f"## Summary of earlier turns\n\n{redact(message.content)}\n")
            case AssistantMessage():
                if message.content:
                    parts.append(f"## Agent\n\n{redact(message.content)}\n")
                for call in message.tool_calls:
                    output = results.get(call.id, "(no result recorded)")
                    parts.append(
                        f"**Tool** `{call.name}` `{redact(str(call.arguments))}`"
                        f"\n\n{_fenced(output)}\n"
                    )
            case ToolResultMessage():
                pass  # shown with its call
    return "\n".join(parts)


def transcript_json(info: SessionInfo, log: Sequence[Message]) -> str:
    """A session as JSON: its metadata and every message, compacted ones included, redacted."""
    return json.dumps(
        redact_json(
            {
                "session": info.model_dump(mode="json"),
                "messages": [message.model_dump(mode="json") for message in log],
            }
        ),
        indent=2,
        ensure_ascii=False,
    )


def _fenced(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def _with_store(command: str, work: Callable[[SessionStore], int]) -> int:
    err = make_console(stderr=True)
    try:
        with SessionStore() as store:
            return work(store)
    except SessionError as exc:
        err.print(Text(f"nav agent sessions {command}: {visible(str(exc))}", style="red"))
        return 2 if isinstance(exc, InvalidSessionNameError) else 1


def remove_session(name_or_id: str) -> int:
    """`nav agent sessions rm`: delete one saved conversation."""

    def work(store: SessionStore) -> int:
        info = store.delete(name_or_id)
        remove_captures(store.path.parent / RECORDINGS_FOLDER, info.id)
        make_console(stderr=True).print(Text(f"deleted session {info.label}", "dim"))
        return 0

    return _with_store("rm", work)


def export_scenario(name_or_id: str, name: str, *, scenario_dir: Path | None) -> int:
    """`nav agent sessions export SESSION --scenario NAME`: a saved session as a scenario."""
    err = make_console(stderr=True)
    try:
        store = SessionStore()
    except SessionError as exc:
        err.print(Text(f"nav agent sessions export: {visible(str(exc))}", style="red"))
        return 1
    try:
        info = store.open(name_or_id)
        recordings = store.path.parent / RECORDINGS_FOLDER
        messages = len(store.full_log(info.id))
    except SessionError as exc:
        err.print(Text(f"nav agent sessions export: {visible(str(exc))}", style="red"))
        return 1
    finally:
        store.close()
    folder = find_capture(recordings, info.id)
    if folder is None:
        err.print(
            Text(
                f"session {info.label} cannot become a scenario: what its provider sent was not"
                " recorded (it talked to a gateway running elsewhere). Next time run the gateway"
                " in nav agent: `nav agent --routes routes.yaml --record NAME`, or type"
                " `/record NAME` in such a session.",
                style="red",
            )
        )
        return 1
    try:
        meta, _ = read_capture(folder)
        target = record_target(scenario_dir, info.cluster, simulated=meta.kind == "simulated")
    except (OSError, ValueError, FilterError) as exc:
        err.print(Text(f"nav agent sessions export: {visible(str(exc))}", style="red"))
        return 1
    if meta.messages < messages:
        err.print(
            Text(
                f"session {info.label} cannot become a scenario: it went on after its recording"
                f" ({plural(messages - meta.messages, 'later message')}"
                f" {'was' if messages - meta.messages == 1 else 'were'} said through a gateway"
                " running elsewhere). Record a whole conversation with"
                " `nav agent --routes routes.yaml --record NAME`.",
                style="red",
            )
        )
        return 1
    result = asyncio.run(target.write(folder, name))
    for line, style in recording_report(result):
        err.print(Text(visible(line), style=style))
    return 0 if isinstance(result, ExportResult) else 1


def rename_session(name_or_id: str, new_name: str) -> int:
    """`nav agent sessions rename`: give a saved conversation a (new) name."""

    def work(store: SessionStore) -> int:
        info = store.rename(name_or_id, new_name)
        err = make_console(stderr=True)
        err.print(Text(f"session {info.id[:8]} is now named {visible(info.label)}", "dim"))
        return 0

    return _with_store("rename", work)


def export_session(name_or_id: str, *, as_json: bool, output: Path | None) -> int:
    """`nav agent sessions export`: a markdown transcript (or JSON) to stdout or a file."""

    def work(store: SessionStore) -> int:
        info = store.open(name_or_id)
        log = store.full_log(info.id)
        text = transcript_json(info, log) if as_json else transcript_markdown(info, log)
        if output is None:
            shown = visible(text) if sys.stdout.isatty() else text  # piped: the data as is
            sys.stdout.write(shown if shown.endswith("\n") else shown + "\n")
            return 0
        try:
            write_new_file(output, text if text.endswith("\n") else text + "\n")
        except NewFileError as exc:
            raise SessionError(str(exc)) from None
        make_console(stderr=True).print(Text(f"wrote {output}", "dim"))
        return 0

    return _with_store("export", work)
