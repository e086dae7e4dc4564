"""Persisted conversations: a SQLite log that survives Ctrl-C, crashes and kill -9.

Every message is written the moment it becomes part of the conversation (the
user's message before the completion is requested, each completion and each
tool result as it ends), one short transaction each, into an append-only
`entries` log. A compaction is one more entry holding the summary and the
turns it kept, so a resumed session continues from the compacted context while
the full log stays available for display.

A completion that added no message (an Anthropic refusal without words, an
empty answer) is a `usage` entry: nothing to load, but its cost counts.

`/retry` takes the last exchange back with a `rewind` entry naming the first
entry it takes back; loading skips what a rewind took back, while the usage of
every completion, taken back or not, still counts (it was spent).

Because a process can die between any two writes, loading never trusts the
log to be complete: `load_history` runs `repair_history`, which answers tool
calls that never got a result and restores call order, so the resumed history
always passes `validate_history`.

The database lives in the user state dir (`platformdirs.user_state_dir`), in
WAL mode so a reader (`nav agent sessions`) never blocks a running agent.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import platformdirs
from pydantic import BaseModel, StrictInt, StrictStr, TypeAdapter, ValidationError

from navagent.core._migrations import migrate
from navagent.core.compaction import summary_message
from navagent.core.errors import NavAgentError
from navagent.core.events import Usage
from navagent.core.history import repair_history
from navagent.core.messages import FrozenModel, Message, UserMessage
from navagent.core.private_files import private_dir, private_file, tighten_if_present
from navagent.core.redaction import redact_json_text

__all__ = [
    "DB_FILENAME",
    "STATE_DIR_ENV",
    "InvalidSessionNameError",
    "SessionError",
    "SessionInfo",
    "SessionNotFoundError",
    "SessionRecorder",
    "SessionStore",
    "SessionSummary",
    "check_session_name",
    "default_db_path",
]

STATE_DIR_ENV = "NAV_AGENT_STATE_DIR"
"""Overrides the state directory (tests, sandboxes, several profiles)."""
DB_FILENAME = "sessions.db"
PREVIEW_CHARS = 60

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"  # fixed width, so text order is time order
_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)


class SessionError(NavAgentError):
    """A session cannot be created, found or read."""


class SessionNotFoundError(SessionError, LookupError):
    """No session matches the name or id (or there is none to continue)."""


class InvalidSessionNameError(SessionError, ValueError):
    """A session name is malformed or already taken."""


class SessionInfo(FrozenModel):
    """A session's metadata."""

    id: str
    name: str | None = None
    """Optional, unique; what `--session NAME` looks for."""
    cluster: str = ""
    """The cluster the agent operated on."""
    demo: bool = False
    """Started by `nav agent --demo` (simulated model and cluster): resumes only with `--demo`."""
    created_at: datetime
    updated_at: datetime
    """Time of the last recorded entry: the session's last activity."""

    @property
    def label(self) -> str:
        """The name, or a short id for unnamed sessions."""
        return self.name or self.id[:8]


class SessionSummary(SessionInfo):
    """One row of `nav agent sessions`."""

    message_count: int
    """Messages in the full log (before any compaction)."""
    preview: str
    """The first user message, on one line and cut to a few words."""
    usage: Usage = Usage()
    """What every completion of the session cost together (same meaning on every provider)."""


def default_db_path(
    state_dir: Path | str | None = None, *, environ: Mapping[str, str] | None = None
) -> Path:
    """Where the session database lives.

    `state_dir` wins, then `$NAV_AGENT_STATE_DIR` (read from `environ`, this
    process's environment by default: the replay harness resolves a team's
    store without changing the team's process), then the platform's user
    state dir for "nav-agent" (e.g. `~/.local/state/nav-agent`).
    """
    env = os.environ if environ is None else environ
    folder = state_dir or env.get(STATE_DIR_ENV) or platformdirs.user_state_dir("nav-agent")
    return Path(folder) / DB_FILENAME


def _make_private(database: Path) -> None:
    """The state folder 0700 and the database 0600, before SQLite opens it.

    SQLite gives its `-wal`, `-shm` and `-journal` files the database's mode;
    ones left looser by an older version are tightened here.

    Raises:
        OSError: a file or folder cannot be made, or is a link or someone else's.
    """
    private_dir(database.parent)
    private_file(database)
    for suffix in ("-wal", "-shm", "-journal"):
        tighten_if_present(database.with_name(database.name + suffix))


class SessionStore:
    """The session database: create, find, list, load and record sessions.

    One store holds one SQLite connection; use it from one thread (the event
    loop's). Writes are single short transactions, fast enough to run inline.
    """

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        environ: Mapping[str, str] | None = None,
    ) -> None:
        """Open (and create or migrate) the database.

        Args:
            path: The database file; None means `default_db_path(environ=environ)`.
            clock: Source of timestamps (aware UTC datetimes); tests pin it.
            environ: The environment a None `path` is resolved in (default: this
                process's); the replay harness finds a run's store as `nav agent` does.

        Raises:
            SessionError: the file cannot be opened or is not a database.
        """
        self.path = Path(path) if path is not None else default_db_path(environ=environ)
        self._clock = clock
        try:
            _make_private(self.path)
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode = WAL")
            # WAL + NORMAL keeps every committed entry across a process crash;
            # only an OS crash may lose the last few.
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            self._db.execute("PRAGMA busy_timeout = 5000")
            migrate(self._db)
        except (OSError, sqlite3.Error) as exc:
            raise SessionError(f"cannot open the session database {self.path}: {exc}") from None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; the store is unusable afterwards."""
        self._db.close()

    # --- sessions -----------------------------------------------------------

    def create(
        self, *, name: str | None = None, cluster: str = "", demo: bool = False
    ) -> SessionInfo:
        """Start a new, empty session (`demo`: by `nav agent --demo`).

        Raises:
            InvalidSessionNameError: `name` is malformed or already used.
        """
        if name is not None:
            check_session_name(name)
        now = self._now()
        session_id = uuid.uuid4().hex
        try:
            self._db.execute(
                "INSERT INTO sessions (id, name, cluster, demo, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, name, cluster, int(demo), now, now),
            )
        except sqlite3.IntegrityError:
            raise InvalidSessionNameError(f"a session named {name!r} already exists") from None
        return self._info(session_id)

    def open_or_create(self, name: str, *, cluster: str = "", demo: bool = False) -> SessionInfo:
        """The session named `name`, created now when there is none (`--session NAME`).

        One statement decides, so agents started at the same moment on a new
        name all end up in one session: the insert that loses the race to
        another process's does nothing, and the winner's row is read instead.

        Raises:
            InvalidSessionNameError: `name` is malformed.
        """
        check_session_name(name)
        now = self._now()
        self._db.execute(
            "INSERT INTO sessions (id, name, cluster, demo, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (uuid.uuid4().hex, name, cluster, int(demo), now, now),
        )
        row = self._db.execute("SELECT id FROM sessions WHERE name = ?", (name,)).fetchone()
        if row is None:  # renamed or deleted by another process in between: try again
            return self.open_or_create(name, cluster=cluster, demo=demo)
        return self._info(row[0])

    def delete(self, name_or_id: str) -> SessionInfo:
        """Delete a session and its log; returns what was deleted.

        Raises:
            SessionNotFoundError: nothing matches (see `open`).
        """
        info = self.open(name_or_id)
        self._db.execute("DELETE FROM sessions WHERE id = ?", (info.id,))
        return info

    def rename(self, name_or_id: str, new_name: str) -> SessionInfo:
        """Give a session a (new) name.

        Raises:
            SessionNotFoundError: nothing matches (see `open`).
            InvalidSessionNameError: `new_name` is malformed or taken.
        """
        info = self.open(name_or_id)
        check_session_name(new_name)
        try:
            self._db.execute("UPDATE sessions SET name = ? WHERE id = ?", (new_name, info.id))
        except sqlite3.IntegrityError:
            raise InvalidSessionNameError(f"a session named {new_name!r} already exists") from None
        return self._info(info.id)

    def open(self, name_or_id: str) -> SessionInfo:
        """Find a session by name, by id, or by a unique id prefix (4+ chars).

        Raises:
            SessionNotFoundError: nothing (or more than one id) matches.
        """
        row = self._db.execute(
            "SELECT id FROM sessions WHERE name = ? OR id = ? ORDER BY name = ? DESC LIMIT 1",
            (name_or_id, name_or_id, name_or_id),
        ).fetchone()
        if row is None and len(name_or_id) >= 4 and re.fullmatch(r"[0-9a-f]+", name_or_id):
            rows = self._db.execute(
                "SELECT id FROM sessions WHERE id LIKE ? || '%' LIMIT 2", (name_or_id,)
            ).fetchall()
            if len(rows) == 1:
                row = rows[0]
        if row is None:
            raise SessionNotFoundError(f"no saved session is named or has the id {name_or_id!r}")
        return self._info(row[0])

    def open_last(self, *, cluster: str | None = None, demo: bool | None = None) -> SessionInfo:
        """The session with the most recent activity (for `--continue`).

        Args:
            cluster: Only sessions recorded on this cluster.
            demo: Only `--demo` sessions (True) or only the others (False).

        Raises:
            SessionNotFoundError: there is no such session.
        """
        conditions: list[str] = []
        params: list[str | int] = []
        if cluster is not None:
            conditions.append("cluster = ?")
            params.append(cluster)
        if demo is not None:
            conditions.append("demo = ?")
            params.append(int(demo))
        where_sql = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        row = self._db.execute(
            f"SELECT id FROM sessions{where_sql} ORDER BY updated_at DESC, rowid DESC LIMIT 1",
            params,
        ).fetchone()
        if row is None:
            where = f" for cluster {cluster!r}" if cluster is not None else ""
            among = " among the --demo sessions" if demo else ""
            raise SessionNotFoundError(f"there is no saved session{where}{among} to continue")
        return self._info(row[0])

    def list_sessions(self, *, limit: int | None = None) -> list[SessionSummary]:
        """Sessions, most recently active first, with counts and a preview."""
        rows = self._db.execute(
            f"""
            SELECT s.id, s.name, s.cluster, s.demo, s.created_at, s.updated_at,
                (SELECT COUNT(*) FROM entries e
                    WHERE e.session_id = s.id AND e.kind = 'message' AND {_NOT_REWOUND}),
                (SELECT e.body FROM entries e
                    WHERE e.session_id = s.id AND e.kind = 'message' AND e.role = 'user'
                    AND {_NOT_REWOUND} ORDER BY e.seq LIMIT 1),
                {_USAGE_SUMS}
            FROM sessions s ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ?
            """,
            (-1 if limit is None else limit,),
        ).fetchall()
        return [
            SessionSummary(
                **self._info_fields(row[:6]),
                message_count=row[6],
                preview=_preview(row[7]),
                usage=Usage(**dict(zip(_USAGE_FIELDS, row[8:], strict=True))),
            )
            for row in rows
        ]

    def usage(self, session_id: str) -> Usage:
        """What the session's completions cost together (`Usage()` before any)."""
        self._info(session_id)
        row = self._db.execute(
            f"SELECT {_USAGE_SUMS} FROM sessions s WHERE s.id = ?", (session_id,)
        ).fetchone()
        return Usage(**dict(zip(_USAGE_FIELDS, row, strict=True)))

    # --- history ------------------------------------------------------------

    def recorder(self, session_id: str) -> SessionRecorder:
        """A `ConversationRecorder` that appends to this session."""
        self._info(session_id)
        return SessionRecorder(self, session_id)

    def load_history(self, session_id: str) -> tuple[Message, ...]:
        """The active context to resume: compacted state plus later messages, repaired.

        Raises:
            SessionNotFoundError: no such session.
            SessionError: an entry cannot be decoded (the database is left as is).
        """
        entries = self._entries(session_id)
        start = 0
        history: list[Message] = []
        for index, (_seq, kind, body) in enumerate(entries):
            if kind == "compaction":
                start = index + 1
                history = list(_compaction_from_body(body, session_id=session_id, seq=_seq))
        history.extend(
            _message_from_body(body, session_id=session_id, seq=seq)
            for seq, kind, body in entries[start:]
            if kind == "message"
        )
        return repair_history(history)

    def full_log(self, session_id: str) -> tuple[Message, ...]:
        """Every message recorded and not taken back, compaction ignored (for `/history`)."""
        return repair_history(
            [
                _message_from_body(body, session_id=session_id, seq=seq)
                for seq, kind, body in self._entries(session_id)
                if kind == "message"
            ]
        )

    def _rewind(self, session_id: str, messages: int) -> None:
        """Take back the last `messages` messages and every entry after the first of them."""
        seqs = [seq for seq, kind, _body in self._entries(session_id) if kind == "message"]
        if messages <= 0 or not seqs:
            return
        first = seqs[-min(messages, len(seqs))]
        self._append(session_id, "rewind", "", json.dumps({"from_seq": first}))

    def _append(
        self,
        session_id: str,
        kind: Literal["message", "compaction", "rewind", "usage"],
        role: str,
        body: str,
        usage: str | None = None,
    ) -> None:
        now = self._now()
        body = redact_json_text(body)  # what the database keeps is what a recording may
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute(
                "INSERT INTO entries (session_id, seq, kind, role, body, created_at, usage)"
                " SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ?, ? FROM entries"
                " WHERE session_id = ?",
                (session_id, kind, role, body, now, usage, session_id),
            )
            self._db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _entries(self, session_id: str) -> list[tuple[int, str, str]]:
        """The session's message and compaction entries in order, those taken back left out."""
        self._info(session_id)
        rows: list[tuple[int, str, str]] = self._db.execute(
            "SELECT seq, kind, body FROM entries WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
        kept: list[tuple[int, str, str]] = []
        for seq, kind, body in rows:
            if kind == "rewind":
                start = _rewind_start(body, session_id=session_id, seq=seq)
                kept = [entry for entry in kept if entry[0] < start]
            else:
                kept.append((seq, kind, body))
        return kept

    def _info(self, session_id: str) -> SessionInfo:
        row = self._db.execute(
            "SELECT id, name, cluster, demo, created_at, updated_at FROM sessions WHERE id = ?",
            (session_id,),
        ).fetchone()
        if row is None:
            raise SessionNotFoundError(f"no saved session has the id {session_id!r}")
        return SessionInfo(**self._info_fields(row))

    @staticmethod
    def _info_fields(row: Sequence[Any]) -> dict[str, Any]:
        return {
            "id": row[0],
            "name": row[1],
            "cluster": row[2],
            "demo": bool(row[3]),
            "created_at": datetime.strptime(row[4], _TIME_FORMAT).replace(tzinfo=UTC),
            "updated_at": datetime.strptime(row[5], _TIME_FORMAT).replace(tzinfo=UTC),
        }

    def _now(self) -> str:
        return self._clock().astimezone(UTC).strftime(_TIME_FORMAT)


class SessionRecorder:
    """Writes one session's messages and compactions as they happen.

    Implements `navagent.core.agent.ConversationRecorder`.
    """

    def __init__(self, store: SessionStore, session_id: str) -> None:
        """Bind to `session_id` in `store`; use `SessionStore.recorder` instead."""
        self._store = store
        self.session_id = session_id

    def record_message(self, message: Message, usage: Usage | None = None) -> None:
        """Append one message, and what its completion cost, to the log (one transaction)."""
        self._store._append(
            self.session_id,
            "message",
            message.role,
            message.model_dump_json(),
            usage.model_dump_json() if usage is not None else None,
        )

    def record_usage(self, usage: Usage) -> None:
        """Record what a completion that added no message cost (it counts in the totals)."""
        self._store._append(self.session_id, "usage", "", "", usage.model_dump_json())

    def record_compaction(self, summary: str, kept: tuple[Message, ...]) -> None:
        """Record that the active context is now the summary plus `kept`."""
        body = json.dumps(
            {"summary": summary, "kept": [message.model_dump(mode="json") for message in kept]}
        )
        self._store._append(self.session_id, "compaction", "", body)

    def record_rewind(self, messages: int) -> None:
        """Record that the last `messages` messages are taken back (`/retry`)."""
        self._store._rewind(self.session_id, messages)


_USAGE_FIELDS = tuple(Usage.model_fields)
_USAGE_SUMS = ", ".join(
    f"(SELECT COALESCE(SUM(CASE WHEN json_valid(e.usage) THEN json_extract(e.usage, '$.{field}')"
    " END), 0) FROM entries e WHERE e.session_id = s.id)"
    for field in _USAGE_FIELDS
)
"""SQL columns: each `Usage` field summed over a session's entries (`s` is the session)."""
_NOT_REWOUND = (
    "NOT EXISTS (SELECT 1 FROM entries r WHERE r.session_id = e.session_id"
    " AND r.kind = 'rewind' AND r.seq > e.seq AND CASE WHEN json_valid(r.body) THEN"
    " json_type(r.body, '$.from_seq') = 'integer' AND e.seq >= json_extract(r.body, '$.from_seq')"
    " END)"
)
"""SQL condition: entry `e` was not taken back by a later rewind entry (a torn or wrong-typed
one takes nothing back here, never an error: the listing shows the session, and resuming it
names the entry)."""


def check_session_name(name: str) -> None:
    """Raise `InvalidSessionNameError` unless `name` is a well-formed session name."""
    if not _NAME.fullmatch(name):
        raise InvalidSessionNameError(
            f"invalid session name {name!r}: use 1 to 64 ASCII letters (A-Z, a-z), digits,"
            " '.', '_' or '-', starting with a letter or digit"
        )


class _CompactionBody(BaseModel):
    """A compaction entry's body, typed: a `kept` of another type is refused, not read as empty."""

    summary: StrictStr
    kept: list[Message]


class _RewindBody(BaseModel):
    """A rewind entry's body: `from_seq` a whole number (not a bool, a text or a float)."""

    from_seq: StrictInt


def _message_from_body(body: str, *, session_id: str, seq: int) -> Message:
    try:
        return _MESSAGE.validate_json(body)
    except ValidationError as exc:
        raise _unreadable(session_id, seq, exc) from None


def _compaction_from_body(body: str, *, session_id: str, seq: int) -> tuple[Message, ...]:
    try:
        data = _CompactionBody.model_validate_json(body)
    except ValidationError as exc:
        raise _unreadable(session_id, seq, exc) from None
    return (summary_message(data.summary), *data.kept)


def _rewind_start(body: str, *, session_id: str, seq: int) -> int:
    try:
        return _RewindBody.model_validate_json(body).from_seq
    except ValidationError as exc:
        raise _unreadable(session_id, seq, exc) from None


def _unreadable(session_id: str, seq: int, exc: ValidationError) -> SessionError:
    """The refusal naming the entry and its first problem (the field and why, never its value)."""
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"])
    problem = f"{where}: {first['msg']}" if where else first["msg"]
    return SessionError(f"session {session_id[:8]}: entry {seq} cannot be read ({problem})")


def _preview(body: str | None) -> str:
    if body is None:
        return ""
    try:
        message = _MESSAGE.validate_json(body)
    except ValidationError:
        return ""
    text = " ".join(message.content.split()) if isinstance(message, UserMessage) else ""
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1].rstrip() + "…"
