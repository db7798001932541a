"""Sessions, the audit log and rate-limit windows: one SQLite file in the state dir.

``$AGENT_STATE_DIR/mdagent.db`` (default ``~/.local/state/mdagent/mdagent.db``)
is shared by every mdagent process of the user, so it runs in WAL mode (readers
never wait for a writer), each connection waits up to :data:`BUSY_TIMEOUT_S`
for a lock instead of failing, and every write is one short transaction
committed at once: a crash loses at most the write in flight.

Nothing touches the disk until the first query: building a :class:`Store` is
free, so the ``agent /name`` fast path pays only when it records something.

Schema changes go in :data:`mdagent.store.schema.MIGRATIONS` (append a
function; never edit one that shipped); ``PRAGMA user_version`` counts the
ones applied.

What it promises about the data at rest:

* The file and its WAL/SHM companions are private (0600) and so is the
  state folder (0700); looser modes found on an existing file are tightened,
  or reported once when they cannot be.
* Secrets are redacted before anything is written (messages, titles, audit
  arguments and errors): keys named like a secret variable and the values of
  secret environment variables (:func:`mdagent.store.redact.redact`). Provider-signed blocks
  (Anthropic ``thinking`` with a ``signature``, ``redacted_thinking``) and a
  tool call's opaque provider fields (Gemini's thought signature) are stored
  as they came: the provider checks them byte for byte.
* A damaged file (garbage, truncated, "file is not a database") is moved
  aside as ``mdagent.db.corrupt-<UTC time>``, kept, and a new one started,
  said once on stderr. Every other failure to read or write is a
  :class:`~mdagent.core.errors.StateError` naming the file and what to do, never
  skipped quietly: a tool call whose audit row cannot be written does not run
  (:class:`mdagent.store.audit.AuditLog`, ``Toolbox.run``).

Sessions, for the agent loop::

    store = Store()
    sid = store.new_session(cwd="/work/project", model="gpt-4o-mini")
    store.add_message(sid, {"role": "user", "content": "hello"})
    store.messages(sid)          # -> [{"role": "user", "content": "hello"}]
    store.latest_session("/work/project")   # -> sid, to resume
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from mdagent.core.errors import StateError, UsageError
from mdagent.store import schema
from mdagent.store.redact import redact, secret_values

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

DB_NAME = "mdagent.db"
BUSY_TIMEOUT_S = 10.0


def default_path() -> Path:
    """``mdagent.db`` in the state dir (``$AGENT_STATE_DIR``, default ``~/.local/state/mdagent``)."""
    from mdagent.core.layers import state_dir

    return state_dir() / DB_NAME


def _now_iso() -> str:
    # Microseconds: "most recently updated" must tell apart writes in the same ms.
    # time.strftime, not datetime: the same ISO UTC text, without another
    # import on every start-up.
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"


_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def new_id() -> str:
    """A short random id: 12 base-36 characters, distinct from the first one.

    Not from the clock: ids made a minute apart would share their first
    eight characters, and a person tells sessions apart (and types a prefix,
    ``/resume k3``) by how they start. Order comes from the ``created`` and
    ``updated`` columns instead.
    """
    # os.urandom rather than secrets: secrets drags hashlib and random into
    # every `agent /name` start-up, for twelve characters of an id. 252 of
    # 256 byte values map evenly onto 36 digits (7 * 36); the rest are redrawn.
    chars: list[str] = []
    while len(chars) < 12:
        chars += [_BASE36[b % 36] for b in os.urandom(16) if b < 252]
    return "".join(chars[:12])


class Store:
    """The SQLite database of sessions, tool calls and rate-limit windows.

    Safe to share between threads (one connection behind a lock) and between
    processes (SQLite's locking, WAL mode, a busy timeout). ``settings`` (the
    merged agent.yaml, or a function returning it, read on the first write)
    says which names are secret (``policy.env``); ``notice`` receives the
    one-line messages a person should see (default: stderr).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        settings: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else default_path()
        self._settings = settings
        self._notice = notice or _say
        self._db: Any = None
        self._inode: int | None = None
        self._lock = threading.RLock()

    @property
    def settings(self) -> Mapping[str, Any] | None:
        """The settings that decide which names are secret."""
        if callable(self._settings):
            self._settings = self._settings()
        return self._settings

    def redacted(self, value: Any) -> Any:
        """``value`` as it may be stored: secrets replaced (see :func:`redact`)."""
        settings = self.settings
        return redact(value, settings, secret_values(settings))

    # -- plumbing ------------------------------------------------------------------

    def _connection(self) -> Any:
        if self._db is None:
            self._db = self._open()
        return self._db

    def _open(self) -> Any:
        sqlite3 = _sqlite()

        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            if not _is_damaged(exc):
                raise
            damage = str(exc)
        aside = self._move_aside()
        self._notice(
            f"the state database {self.path} was damaged ({damage}); moved it to {aside} "
            "and started a new one"
        )
        return self._connect()

    def _connect(self) -> Any:
        sqlite3 = _sqlite()

        self._create_private()
        self._inode = os.stat(self.path).st_ino
        db = sqlite3.connect(
            str(self.path),
            timeout=BUSY_TIMEOUT_S,
            isolation_level=None,  # autocommit; transactions are explicit and short
            check_same_thread=False,  # guarded by self._lock
        )
        try:
            db.row_factory = sqlite3.Row
            db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            _retry_busy(lambda: db.execute("PRAGMA journal_mode = WAL").fetchone())
            # In WAL mode NORMAL survives a crash of the process; only a power
            # cut may lose the last commits.
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("PRAGMA foreign_keys = ON")
            self._migrate(db)
        except BaseException:
            db.close()
            raise
        for suffix in ("-wal", "-shm"):  # SQLite gives them the file's mode; older ones may differ
            self._make_private(Path(f"{self.path}{suffix}"), 0o600)
        return db

    def _create_private(self) -> None:
        """The folder (0700) and an empty database file (0600), or existing ones tightened."""
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._make_private(folder, 0o700)
        # Created here rather than by SQLite, which would use 0644; the WAL
        # and SHM files SQLite creates later copy this file's mode.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self._make_private(self.path, 0o600)

    def _make_private(self, path: Path, mode: int) -> None:
        try:
            found = os.stat(path)
        except FileNotFoundError:
            return
        if not found.st_mode & 0o077:
            return
        import stat

        shared = found.st_mode & stat.S_ISVTX or found.st_uid != os.geteuid()
        try:
            if shared:  # /tmp or another user's folder: not ours to change
                raise PermissionError("it is shared or not yours")
            os.chmod(path, mode)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            self._notice(
                f"warning: {path} is open to other users (mode {found.st_mode & 0o777:o}) "
                f"and could not be made private ({reason}); set AGENT_STATE_DIR to a private folder"
            )

    def _move_aside(self) -> Path:
        """Rename the damaged file (and its WAL/SHM) out of the way; the new name."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        count = 1
        while aside.exists():
            count += 1
            aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{count}")
        with contextlib.suppress(FileNotFoundError):
            if os.stat(self.path).st_ino != self._inode:
                return aside  # another process moved it aside already and started anew
            os.replace(self.path, aside)
        for suffix in ("-wal", "-shm"):  # they belong to the damaged file, not the new one
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
        return aside

    def _migrate(self, db: Any) -> None:
        migrations = schema.MIGRATIONS
        if db.execute("PRAGMA user_version").fetchone()[0] >= len(migrations):
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while this one waited for the lock.
            version = db.execute("PRAGMA user_version").fetchone()[0]
            for step in migrations[version:]:
                step(db)
            db.execute(f"PRAGMA user_version = {max(version, len(migrations))}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite and file-system errors as one :class:`StateError` naming the file."""
        sqlite3 = _sqlite()

        try:
            yield
        except (sqlite3.Error, OSError) as exc:
            if isinstance(exc, sqlite3.DatabaseError) and _is_damaged(exc):
                self.close()
                aside = self._move_aside()
                raise StateError(
                    f"the state database {self.path} is damaged ({exc}); moved it to {aside}: "
                    "run the command again to start a new one"
                ) from exc
            raise StateError(_describe_failure(self.path, exc)) from exc

    @contextlib.contextmanager
    def _write(self) -> Iterator[Any]:
        """One short write transaction; BEGIN IMMEDIATE takes the write lock up front."""
        sqlite3 = _sqlite()

        with self._lock, self._errors():
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                if db.in_transaction:  # SQLite may have rolled back already (disk full)
                    with contextlib.suppress(sqlite3.Error):  # the first error is the one to tell
                        db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock, self._errors():
            return self._connection().execute(sql, params).fetchall()

    def close(self) -> None:
        """Close the connection (the next query reopens it)."""
        with self._lock:
            if self._db is not None:
                sqlite3 = _sqlite()

                with contextlib.suppress(sqlite3.Error):  # closing a damaged file may complain
                    self._db.close()
                self._db = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions ------------------------------------------------------------------

    def new_session(
        self, cwd: str | os.PathLike[str], model: str, title: str = "", parent: str | None = None
    ) -> str:
        """Start a session in workspace ``cwd`` and return its id (short, random).

        ``parent`` links a forked skill run's session to the session that started it.
        """
        now = _now_iso()
        title = self.redacted(title)
        with self._write() as db:
            while True:
                sid = new_id()
                # 36**12 ids: a clash is next to impossible, and never a silent merge.
                if not db.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone():
                    break
            db.execute(
                "INSERT INTO sessions (id, created, updated, title, cwd, model, parent)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (sid, now, now, title, os.fspath(cwd), model or "", parent),
            )
        return sid

    def add_message(self, session_id: str, message: Mapping[str, Any]) -> int:
        """Append ``message`` (a neutral message dict) to a session; returns its seq.

        Committed before returning. Secrets are redacted in what is stored,
        not in ``message`` (the conversation in memory goes on as it was);
        a resumed session sends the model the redacted text. The session's
        first user message with text content becomes its title when it has
        none. Raises ``KeyError`` for an unknown session.
        """
        message = self.redacted(dict(message))
        content = json.dumps(message, ensure_ascii=False, default=str)
        role = str(message.get("role", ""))
        now = _now_iso()
        title = ""
        if role == "user" and isinstance(message.get("content"), str):
            first = message["content"].strip().splitlines()
            title = first[0][:80] if first else ""
        with self._write() as db:
            updated = db.execute(
                "UPDATE sessions SET updated = ?,"
                " title = CASE WHEN title = '' THEN ? ELSE title END WHERE id = ?",
                (now, title, session_id),
            )
            if updated.rowcount == 0:
                raise KeyError(f"no session {session_id!r}")
            seq = db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?",
                (session_id,),
            ).fetchone()[0]
            db.execute(
                "INSERT INTO messages (session_id, seq, role, content, created)"
                " VALUES (?, ?, ?, ?, ?)",
                (session_id, seq, role, content, now),
            )
        return seq

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        """A session's messages, oldest first, as the dicts that were added."""
        rows = self._read(
            "SELECT content FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
        )
        return [json.loads(row["content"]) for row in rows]

    # Newest first; rowid breaks a tie of timestamps (it grows with each insert).
    _NEWEST_FIRST = " ORDER BY s.updated DESC, s.created DESC, s.rowid DESC"

    def latest_session(self, cwd: str | os.PathLike[str] | None = None) -> str | None:
        """The id of the most recently updated session (in workspace ``cwd`` when given)."""
        rows = self.sessions(limit=1, cwd=cwd)
        return rows[0]["id"] if rows else None

    _SESSION_COLUMNS = (
        "s.id, s.created, s.updated, s.title, s.cwd, s.model, s.parent,"
        " (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS messages"
    )

    def sessions(
        self, limit: int = 20, cwd: str | os.PathLike[str] | None = None
    ) -> list[dict[str, Any]]:
        """Recent sessions (of workspace ``cwd`` when given), most recently updated first.

        Each: ``id``, ``created``, ``updated``, ``title``, ``cwd``, ``model``,
        ``parent`` (the session a forked skill run came from, or None),
        ``messages`` (how many).
        """
        where, params = "", [int(limit)]
        if cwd is not None:
            where, params = " WHERE s.cwd = ?", [os.fspath(cwd), int(limit)]
        rows = self._read(
            f"SELECT {self._SESSION_COLUMNS} FROM sessions s{where}{self._NEWEST_FIRST} LIMIT ?",
            tuple(params),
        )
        return [dict(row) for row in rows]

    def delete_session(self, session_id: str) -> bool:
        """Delete a session and its messages (the audit log keeps its calls); whether it was there."""
        with self._write() as db:
            db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            return db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

    def session(self, id_or_prefix: str) -> dict[str, Any] | None:
        """The session with this id or unique id prefix (as in :meth:`sessions`), or None.

        Raises :class:`UsageError` when the prefix matches several sessions.
        """
        rows = self._read(
            f"SELECT {self._SESSION_COLUMNS} FROM sessions s WHERE s.id = ?", (id_or_prefix,)
        )
        if not rows and id_or_prefix:
            escaped = id_or_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            rows = self._read(
                f"SELECT {self._SESSION_COLUMNS} FROM sessions s"
                " WHERE s.id LIKE ? ESCAPE '\\' ORDER BY s.id LIMIT 6",
                (escaped + "%",),
            )
        if len(rows) > 1:
            shown = ", ".join(row["id"] for row in rows[:5])
            raise UsageError(f"session prefix {id_or_prefix!r} is ambiguous: {shown}")
        return dict(rows[0]) if rows else None

    # -- the audit log ---------------------------------------------------------------

    def record_call(
        self,
        caller: str | None,
        tool: str,
        args: Mapping[str, Any] | None,
        ok: bool,
        error: str | None,
        code: str | None,
        duration_ms: int | None,
        approved_by: str | None,
        session_id: str | None = None,
        workspace: str | None = None,
        wait_ms: int | None = None,
    ) -> int:
        """Add one finished tool call (or one that never ran) to the audit log; its id.

        Secrets in ``args`` and ``error`` are redacted. ``workspace``: the
        workspace root the call ran for; ``wait_ms``: how long it waited for
        a person's answer (``duration_ms`` is its run time alone).
        """
        with self._write() as db:
            cursor = db.execute(
                "INSERT INTO audit (time, caller, tool, args, ok, error, code, duration_ms,"
                " approved_by, session_id, workspace, wait_ms)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    _now_iso(),
                    caller,
                    tool,
                    self._args_json(args),
                    1 if ok else 0,
                    self.redacted(error),
                    code,
                    duration_ms,
                    approved_by,
                    session_id,
                    workspace,
                    wait_ms,
                ),
            )
            return int(cursor.lastrowid)

    def start_call(
        self,
        caller: str | None,
        tool: str,
        args: Mapping[str, Any] | None,
        approved_by: str | None,
        session_id: str | None = None,
        workspace: str | None = None,
        wait_ms: int | None = None,
    ) -> int:
        """Put a call on the record before it runs (status ``started``); the row's id.

        ``wait_ms``: how long it waited for a person's answer. Raises
        :class:`StateError` when the row cannot be written: the caller must
        not run the call then.
        """
        with self._write() as db:
            cursor = db.execute(
                "INSERT INTO audit (time, caller, tool, args, ok, approved_by, session_id,"
                " workspace, wait_ms, status) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, 'started')",
                (
                    _now_iso(),
                    caller,
                    tool,
                    self._args_json(args),
                    approved_by,
                    session_id,
                    workspace,
                    wait_ms,
                ),
            )
            return int(cursor.lastrowid)

    def finish_call(
        self,
        row: int,
        ok: bool,
        error: str | None,
        code: str | None,
        duration_ms: int | None,
        interrupted: bool = False,
    ) -> None:
        """Complete the row :meth:`start_call` wrote with the call's outcome."""
        with self._write() as db:
            db.execute(
                "UPDATE audit SET ok = ?, error = ?, code = ?, duration_ms = ?, status = ?"
                " WHERE id = ?",
                (
                    1 if ok else 0,
                    self.redacted(error),
                    code,
                    duration_ms,
                    "interrupted" if interrupted else "done",
                    row,
                ),
            )

    def _args_json(self, args: Mapping[str, Any] | None) -> str:
        return json.dumps(self.redacted(dict(args or {})), ensure_ascii=False, default=str)

    def calls(
        self,
        tool: str | None = None,
        limit: int = 20,
        session_id: str | None = None,
        workspace: str | os.PathLike[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Audit rows (of workspace ``workspace`` when given), newest first.

        ``args`` decoded, ``ok`` a bool. ``status`` is ``done``,
        ``interrupted``, or ``started`` for a call still running or whose
        process ended before its outcome was written.
        """
        where, params = [], []
        if workspace is not None:
            where.append("workspace = ?")
            params.append(os.fspath(workspace))
        if tool is not None:
            where.append("tool = ?")
            params.append(tool)
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._read(
            f"SELECT * FROM audit{clause} ORDER BY id DESC LIMIT ?", (*params, int(limit))
        )
        out = []
        for row in rows:
            item = dict(row)
            item["ok"] = bool(item["ok"])
            with contextlib.suppress(ValueError):  # keep undecodable args as text
                item["args"] = json.loads(item["args"] or "{}")
            out.append(item)
        return out

    # -- rate limits -------------------------------------------------------------------

    def rate_limit(self, tool: str, max_calls: int, window_ms: int) -> int | None:
        """Count one call of ``tool`` against a sliding window shared by all processes.

        Returns ``None`` (and records the call) when fewer than ``max_calls``
        calls happened in the last ``window_ms``; otherwise records nothing
        and returns how many ms until the oldest of them leaves the window.
        """
        now = time.time_ns() // 1_000_000
        start = now - int(window_ms)
        with self._write() as db:
            db.execute("DELETE FROM rate_calls WHERE tool = ? AND ts_ms <= ?", (tool, start))
            count, oldest = db.execute(
                "SELECT COUNT(*), MIN(ts_ms) FROM rate_calls WHERE tool = ?", (tool,)
            ).fetchone()
            if count < max_calls:
                db.execute("INSERT INTO rate_calls (tool, ts_ms) VALUES (?, ?)", (tool, now))
                return None
        return max(1, int(oldest) + int(window_ms) - now)


def _sqlite() -> Any:
    """The sqlite3 module's C core, which holds all the store uses.

    ``import sqlite3`` adds a Python layer that imports :mod:`datetime` to
    register date adapters the store never needs (its times are text): about
    3 % of every ``agent /name``. ``connect``, ``Row`` and the exceptions are
    the C module's own; the public module stands in where it is absent.
    """
    try:
        import _sqlite3
    except ImportError:  # pragma: no cover - an interpreter that names it otherwise
        import sqlite3

        return sqlite3
    return _sqlite3


def _retry_busy(action: Callable[[], Any], attempts: int = 100) -> Any:
    """Run ``action``, retrying while another process holds the lock it needs.

    Switching to WAL needs an exclusive lock and SQLite may report busy at
    once rather than call the busy handler when many processes open a new
    file together.
    """
    sqlite3 = _sqlite()

    for attempt in range(attempts):
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.02 + 0.001 * attempt)
    return None


# -- failures ------------------------------------------------------------------------------


def _say(message: str) -> None:
    from mdagent.core import notices

    notices.warn(message.removeprefix("warning: "))


# SQLite's primary result codes (the low byte of an extended code).
_CORRUPT, _NOTADB = 11, 26
_ADVICE = {
    5: "another process holds it locked: try again",  # SQLITE_BUSY
    6: "another process holds it locked: try again",  # SQLITE_LOCKED
    8: "make it writable, or set AGENT_STATE_DIR to a writable folder",  # SQLITE_READONLY
    10: "check the disk, or set AGENT_STATE_DIR to another folder",  # SQLITE_IOERR
    13: "free some disk space",  # SQLITE_FULL
    14: "check that its folder is writable, or set AGENT_STATE_DIR",  # SQLITE_CANTOPEN
}


def _is_damaged(exc: BaseException) -> bool:
    """Whether SQLite says the file itself is broken (not busy, read-only or full)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (_CORRUPT, _NOTADB)
    return "malformed" in str(exc) or "not a database" in str(exc)


def _describe_failure(path: Path, exc: BaseException) -> str:
    """One line: which file, what went wrong, what to do."""
    if isinstance(exc, OSError):
        where = exc.filename or path
        return (
            f"cannot use the state folder {where}: {exc.strerror or exc}; "
            "set AGENT_STATE_DIR to a writable folder"
        )
    code = getattr(exc, "sqlite_errorcode", None)
    advice = _ADVICE.get(code & 0xFF if isinstance(code, int) else -1)
    advice = advice or "set AGENT_STATE_DIR to another folder if it persists"
    return f"state database {path}: {exc}; {advice}"
