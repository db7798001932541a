"""The state database's tables: the migrations that build and upgrade them.

Schema changes go in :data:`MIGRATIONS` (append a function; never edit one
that shipped); ``PRAGMA user_version`` counts the ones applied
(:class:`~mdagent.store.store.Store` runs the missing ones on opening).
"""

from __future__ import annotations

from collections.abc import Callable

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

MIGRATIONS: list[Callable[[Any], None]] = []
migration = MIGRATIONS.append


@migration
def _initial_schema(db: Any) -> None:
    db.execute(
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            created TEXT NOT NULL,
            updated TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            cwd TEXT NOT NULL DEFAULT '',
            model TEXT NOT NULL DEFAULT ''
        )"""
    )
    db.execute("CREATE INDEX sessions_updated ON sessions (updated)")
    db.execute(
        """CREATE TABLE messages (
            session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            created TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        )"""
    )
    db.execute(
        """CREATE TABLE audit (
            id INTEGER PRIMARY KEY,
            time TEXT NOT NULL,
            caller TEXT,
            tool TEXT NOT NULL,
            args TEXT,
            ok INTEGER NOT NULL,
            error TEXT,
            code TEXT,
            duration_ms INTEGER,
            approved_by TEXT,
            session_id TEXT
        )"""
    )
    db.execute("CREATE INDEX audit_tool ON audit (tool, id)")
    db.execute("CREATE TABLE rate_calls (tool TEXT NOT NULL, ts_ms INTEGER NOT NULL)")
    db.execute("CREATE INDEX rate_calls_tool ON rate_calls (tool, ts_ms)")


@migration
def _audit_status(db: Any) -> None:
    # A call's row is written before it runs ("started") and completed after
    # ("done", or "interrupted"); a row left "started" is a call whose process
    # ended before its outcome could be written.
    db.execute("ALTER TABLE audit ADD COLUMN status TEXT NOT NULL DEFAULT 'done'")


@migration
def _session_parent(db: Any) -> None:
    # A forked skill run (`context: fork`) is a session of its own, linked to
    # the session whose turn started it.
    db.execute("ALTER TABLE sessions ADD COLUMN parent TEXT")


@migration
def _audit_workspace(db: Any) -> None:
    # The workspace a call ran for: `agent logs` shows this workspace's calls
    # (rows from before this column have none: only `agent logs --all` shows them).
    db.execute("ALTER TABLE audit ADD COLUMN workspace TEXT")


@migration
def _audit_wait(db: Any) -> None:
    # How long a call waited for a person's answer, apart from its run time
    # (duration_ms): the time spent reading a question is not the command's.
    db.execute("ALTER TABLE audit ADD COLUMN wait_ms INTEGER")
