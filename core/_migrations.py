"""Schema migrations of the session database.

The idiom is simonw/llm's `migrations.py`: an ordered list of named functions,
each applied once and recorded by name in a table, so an old database is
brought up to date on open and a new one is built by the same path. Append new
migrations at the end; never edit or reorder one that has shipped.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime

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


MIGRATIONS: tuple[Migration, ...] = (m001_sessions, m002_entries, m003_entry_usage)


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
