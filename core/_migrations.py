"""Schema migrations of the session database.

The idiom is simonw/llm's `migrations.py`: an ordered list of named functions,
each applied once and recorded by name in a table, so an old database is
brought up to date on open and a new one is built by the same path. Append new
migrations at the end; never edit or reorder one that has shipped.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

__all__ = ["MIGRATIONS", "MIGRATIONS_TABLE", "migrate"]

MIGRATIONS_TABLE = "_nav_agent_migrations"

Migration = Callable[[sqlite3.Connection], None]


def m001_sessions(db: sqlite3.Connection) -> None:
    """One row per conversation; `name` is optional and unique."""
    db.execute(
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            name TEXT UNIQUE,
            cluster TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX sessions_by_activity ON sessions (updated_at)")


def m002_entries(db: sqlite3.Connection) -> None:
    """The append-only log: messages as they happened, and compaction points."""
    db.execute(
        """
        CREATE TABLE entries (
            session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('message', 'compaction')),
            role TEXT NOT NULL DEFAULT '',
            body TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        )
        """
    )
    db.execute("CREATE INDEX entries_by_kind ON entries (session_id, kind, seq)")


def m003_entry_usage(db: sqlite3.Connection) -> None:
    """What each completion cost: a `Usage` as JSON on assistant message entries.

    NULL for every other entry and for entries written before this migration.
    """
    db.execute("ALTER TABLE entries ADD COLUMN usage TEXT")


_LEGACY_THINKING_FIELDS = (
    "signature",
    "redacted_data",
    "item_id",
    "encrypted_content",
    "summary",
    "after_tool_calls",
)
"""`ThinkingPart` fields of releases before the opaque payload (issue 22 part 4)."""


def m004_thinking_payload(db: sqlite3.Connection) -> None:
    """Saved thinking parts: provider fields move into the opaque `payload`.

    Each protocol's payload keeps the old field names (Anthropic `signature`
    or `redacted_data`; Responses `item_id`, `encrypted_content`, `summary`,
    `after_tool_calls`), so the move needs no knowledge of providers: every
    old field that is set goes into the payload under its own name. Anthropic
    parts were saved without an origin, so no route sends them back (every
    provider accepts a history without them); Responses parts keep theirs.
    """
    rows = db.execute(
        "SELECT session_id, seq, kind, body FROM entries"
        " WHERE (kind = 'message' AND role = 'assistant') OR kind = 'compaction'"
    ).fetchall()
    for session_id, seq, kind, body in rows:
        try:
            data = json.loads(body)
        except ValueError:
            continue  # unreadable before too: loading reports it, as it did
        messages = data.get("kept") if kind == "compaction" else [data]
        changed = False
        for message in messages if isinstance(messages, list) else []:
            parts = message.get("thinking") if isinstance(message, dict) else None
            if isinstance(parts, list):
                for index, part in enumerate(parts):
                    if isinstance(part, dict) and "payload" not in part:
                        parts[index] = _payload_part(part)
                        changed = True
        if changed:
            db.execute(
                "UPDATE entries SET body = ? WHERE session_id = ? AND seq = ?",
                (json.dumps(data, ensure_ascii=False), session_id, seq),
            )


def _payload_part(part: dict[str, Any]) -> dict[str, Any]:
    legacy = {name: part[name] for name in _LEGACY_THINKING_FIELDS if part.get(name)}
    payload = json.dumps(legacy, separators=(",", ":"), ensure_ascii=False) if legacy else ""
    return {"text": part.get("text", ""), "origin": part.get("origin", ""), "payload": payload}


def m005_rewind_entries(db: sqlite3.Connection) -> None:
    """A third kind of entry: `rewind`, `/retry` taking the last exchange back (issue 20).

    Its body is `{"from_seq": N}`: the entries from `seq` N up to the rewind
    are no longer part of the conversation (their usage still counts: it was
    spent). SQLite cannot widen a CHECK constraint in place, so the table is
    rebuilt with its rows, in this migration's transaction.
    """
    _rebuild_entries(db, ("message", "compaction", "rewind"))


def _rebuild_entries(db: sqlite3.Connection, kinds: tuple[str, ...]) -> None:
    """`entries` rebuilt with its rows, its `kind` CHECK allowing `kinds`.

    The only way SQLite widens a CHECK constraint. Each migration names its own
    list, so it stays what it was when it shipped.
    """
    allowed = ", ".join(f"'{kind}'" for kind in kinds)  # literals of the migration itself
    db.execute(
        f"""
        CREATE TABLE entries_new (
            session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ({allowed})),
            role TEXT NOT NULL DEFAULT '',
            body TEXT NOT NULL,
            created_at TEXT NOT NULL,
            usage TEXT,
            PRIMARY KEY (session_id, seq)
        )
        """
    )
    db.execute(
        "INSERT INTO entries_new (session_id, seq, kind, role, body, created_at, usage)"
        " SELECT session_id, seq, kind, role, body, created_at, usage FROM entries"
    )
    db.execute("DROP TABLE entries")
    db.execute("ALTER TABLE entries_new RENAME TO entries")
    db.execute("CREATE INDEX entries_by_kind ON entries (session_id, kind, seq)")


def m006_demo_sessions(db: sqlite3.Connection) -> None:
    """Sessions started by `nav agent --demo` say so: they resume only with `--demo`."""
    db.execute("ALTER TABLE sessions ADD COLUMN demo INTEGER NOT NULL DEFAULT 0")


def m007_usage_entries(db: sqlite3.Connection) -> None:
    """A fourth kind of entry: `usage`, what a completion that added no message cost.

    A completion with no text, refusal or tool call (an Anthropic refusal
    without words, an empty answer) adds nothing to the conversation, yet it
    was billed; its entry has an empty body and the usage. Rebuilt as in
    `m005_rewind_entries`, the only way SQLite widens a CHECK constraint.
    """
    _rebuild_entries(db, ("message", "compaction", "rewind", "usage"))


MIGRATIONS: tuple[Migration, ...] = (
    m001_sessions,
    m002_entries,
    m003_entry_usage,
    m004_thinking_payload,
    m005_rewind_entries,
    m006_demo_sessions,
    m007_usage_entries,
)


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply the migrations `db` has not seen yet; return their names.

    Each runs in its own `BEGIN IMMEDIATE` transaction and is re-checked inside
    it, so two processes opening a new database at once apply each only once.
    `db` must be in autocommit mode (`isolation_level=None`).
    """
    db.execute(
        f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (name TEXT PRIMARY KEY, applied_at TEXT)"
    )
    applied: list[str] = []
    for migration in MIGRATIONS:
        name = migration.__name__
        db.execute("BEGIN IMMEDIATE")
        try:
            done = db.execute(f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE name = ?", (name,))
            if done.fetchone() is None:
                migration(db)
                db.execute(
                    f"INSERT INTO {MIGRATIONS_TABLE} (name, applied_at) VALUES (?, ?)",
                    (name, datetime.now(UTC).isoformat()),
                )
                applied.append(name)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    return applied
