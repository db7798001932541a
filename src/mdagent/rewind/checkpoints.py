"""Checkpoints: a workspace's files before and after each model turn, kept in the state dir.

A model's commands may write only inside the workspace (and a private temp
dir), so a snapshot of the workspace before a turn's first call that can
write, and another at the end of the turn, cover what the model's tools and
commands changed there. The snapshots live in a private git object store per
workspace (:mod:`mdagent.rewind.checkpointstore`); this module turns them into
checkpoints, turns and housekeeping. :mod:`mdagent.rewind.rewind` takes them back.

How the agent uses it (nothing here prints; errors are one line)::

    cps = Checkpoints(workspace, settings)           # settings: the merged agent.yaml
    cps.record(session_id, turn, prompt, "before")   # before the turn's first write-capable call
    ...                                              # the turn runs
    cps.record(session_id, turn, prompt, "after")    # at the end of every turn (also on Ctrl-C)
    cps.turns()                                      # what each turn changed: agent rewind --list
    cps.default_target()                             # before the latest turn that changed files

:class:`CheckpointsUnavailable` (git missing, too many files) is one line to
show once; the turn goes on without a checkpoint. Every other failure is a
:class:`CheckpointError`.

Who changed what is told apart by the order of the checkpoints: a change
between a turn's "before" and its "after" was made during the turn (by the
model's calls); a change between one turn's "after" and the next checkpoint
was made by someone else (the person, their editor). A turn whose "after" is
missing (mdagent was killed during it) is unfinished: its changes cannot be
told apart, and a rewind asks before overwriting them.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from mdagent.core.defaults import DEFAULT_SETTINGS
from mdagent.core.errors import UsageError
from mdagent.core.records import Record
from mdagent.rewind.checkpointstore import (
    REF_PREFIX,
    STATE_PREFIX,
    CheckpointError,
    CheckpointsUnavailable,
    GitStore,
    RawChange,
    remove_folder,
    store_root,
    workspace_key,
    write_json,
)
from mdagent.rewind.projectrefs import ProjectRefs, read_project_refs
from mdagent.rewind.snapshot import Modes, NotCovered, Snapshot, take_snapshot

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Change",
    "Checkpoint",
    "CheckpointError",
    "CheckpointSettings",
    "Checkpoints",
    "CheckpointsUnavailable",
    "NotCovered",
    "Point",
    "PruneReport",
    "StoreInfo",
    "Turn",
    "prune",
    "remove_session",
    "stores",
]

PHASES = ("before", "after")
KINDS = ("turn", "rewind")
FORMAT = 1
# How far back record() looks for the "before" an "after" belongs to.
RECENT = 64
MAX_PROMPT = 1000


_DEFAULTS = DEFAULT_SETTINGS["checkpoints"]


class CheckpointSettings(Record):
    """The ``checkpoints:`` settings (defaults in :data:`mdagent.core.defaults.DEFAULT_SETTINGS`)."""

    enabled: bool = _DEFAULTS["enabled"]
    max_file_bytes: int = _DEFAULTS["max_file_bytes"]
    max_files: int = _DEFAULTS["max_files"]
    keep_days: float = _DEFAULTS["keep_days"]
    keep_mib: float = _DEFAULTS["keep_mib"]

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None) -> CheckpointSettings:
        """The settings' ``checkpoints`` block over the defaults (None: the defaults)."""
        block = dict(_DEFAULTS)
        given = settings.get("checkpoints") if isinstance(settings, Mapping) else None
        if isinstance(given, Mapping):
            block.update({k: v for k, v in given.items() if v is not None and k in block})
        return cls(**block)


class Checkpoint(Record):
    """One recorded state of the workspace.

    ``seq`` numbers the workspace's checkpoints in order (1, 2, ...); ``phase``
    is "before" or "after" a turn; ``kind`` is "turn" (a model's turn) or
    "rewind" (a rewind is recorded like a turn, so it can be rewound too).
    ``pair`` is an "after"'s "before"; ``target`` a rewind's target.
    """

    seq: int
    commit: str
    tree: str
    phase: str
    kind: str
    session_id: str
    turn: int
    prompt: str
    time: float
    files: int
    not_covered: tuple
    pair: int | None = None
    target: int | None = None
    state: str | None = None  # the blob holding exact modes and the project's refs

    @classmethod
    def from_commit(cls, ref: str, commit: str, tree: str, message: str) -> Checkpoint:
        try:
            meta = json.loads(message)
            return cls(
                seq=int(ref.rsplit("/", 1)[1]),
                commit=commit,
                tree=tree,
                phase=meta["phase"],
                kind=meta["kind"],
                session_id=meta.get("session") or "",
                turn=int(meta.get("turn") or 0),
                prompt=meta.get("prompt") or "",
                time=float(meta["time"]),
                files=int(meta.get("files") or 0),
                not_covered=tuple(NotCovered(p, r) for p, r in meta.get("not_covered") or ()),
                pair=meta.get("pair"),
                target=meta.get("target"),
                state=meta.get("state"),
            )
        except (ValueError, KeyError, TypeError, IndexError):
            raise CheckpointError(f"checkpoint store: {ref} cannot be read") from None


class State(Record):
    """What a checkpoint keeps beside its tree: exact modes, the project's refs."""

    modes: Modes
    project: ProjectRefs | None


class Point(Record):
    """A state of the workspace in time: a checkpoint, or the files now (``checkpoint`` None)."""

    seq: float
    tree: str
    modes: Modes
    project: ProjectRefs | None
    checkpoint: Checkpoint | None
    not_covered: tuple = ()


class Change(Record):
    """A path that differs between two states, from the first one's point of view.

    ``status`` is "created", "deleted", "modified" or "mode" (only the
    permission bits); ``added``/``deleted`` count lines (None: binary or not counted).
    """

    path: str
    status: str
    added: int | None = None
    deleted: int | None = None


class Turn(Record):
    """A turn's checkpoints and what it changed.

    ``after`` is None when the turn's end was not recorded (mdagent stopped
    during it): ``changes`` then run to the next checkpoint or to the files
    now. ``rewound``: a later rewind took it back (and no rewind since
    brought it back).
    """

    before: Checkpoint
    after: Checkpoint | None
    changes: tuple
    rewound: bool = False

    @property
    def kind(self) -> str:
        return self.before.kind

    @property
    def session_id(self) -> str:
        return self.before.session_id

    @property
    def turn(self) -> int:
        return self.before.turn

    @property
    def prompt(self) -> str:
        return self.before.prompt

    @property
    def finished(self) -> bool:
        return self.after is not None


class Checkpoints:
    """One workspace's checkpoints: record, list, and the turns they make."""

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        settings: Mapping[str, Any] | CheckpointSettings | None = None,
        *,
        state_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        real = Path(workspace).expanduser().resolve()
        if not real.is_dir():
            raise CheckpointError(f"checkpoints: {workspace} is not a folder")
        self.workspace = real
        self.settings = (
            settings
            if isinstance(settings, CheckpointSettings)
            else CheckpointSettings.from_settings(settings)
        )
        root = store_root(Path(state_dir) if state_dir is not None else None)
        self.store = GitStore(real, root / workspace_key(real))
        # The state dir inside the workspace (AGENT_STATE_DIR=./state) is never recorded:
        # neither the stores nor the sessions and audit log beside them.
        try:
            inside = root.parent.resolve().relative_to(real).as_posix()
        except ValueError:
            inside = None
        self._exclude = (inside,) if inside and inside != "." else ()
        self._unavailable: CheckpointsUnavailable | None = None

    @classmethod
    def in_store(cls, store: GitStore) -> Checkpoints:
        """The checkpoints of an existing store, for housekeeping (its workspace may be gone)."""
        self = cls.__new__(cls)
        self.workspace = store.workspace
        self.settings = CheckpointSettings()
        self.store = store
        self._exclude = ()
        self._unavailable = None
        return self

    # -- recording ---------------------------------------------------------

    def record(
        self, session_id: str, turn: int, prompt: str = "", phase: str = "before"
    ) -> Checkpoint | None:
        """Record the workspace before (or after) a model turn; the checkpoint, or None.

        "before": once per turn, before its first call that can write; a
        second call for the same turn returns the first checkpoint. "after":
        at the end of every turn; None when the turn has no "before" (it
        wrote nothing). None too when ``checkpoints.enabled`` is false.
        Raises :class:`CheckpointsUnavailable` (no git, more than
        ``max_files`` files: said once, then the same error without looking
        again) or :class:`CheckpointError`.
        """
        if phase not in PHASES:
            raise UsageError(f"checkpoint phase: expected before or after, got {phase!r}")
        if not self.settings.enabled:
            return None
        if self._unavailable is not None:
            raise self._unavailable
        with self.store.locked():
            self.store.ensure()
            recent = self._checkpoints(RECENT)
            mine = [
                c
                for c in recent
                if c.kind == "turn" and c.session_id == session_id and c.turn == turn
            ]
            befores = [c for c in mine if c.phase == "before"]
            pair = None
            if phase == "before":
                if befores:
                    return befores[-1]
            else:
                if not befores:
                    return None
                pair = befores[-1].seq
                done = [c for c in mine if c.phase == "after" and c.pair == pair]
                if done:
                    return done[-1]
            snapshot = self.snapshot()
            return self.save(
                snapshot,
                phase=phase,
                kind="turn",
                session_id=session_id,
                turn=turn,
                prompt=prompt,
                pair=pair,
                recent=recent,
            )

    def snapshot(self) -> Snapshot:
        """The workspace's files now, in the store (the caller holds :meth:`GitStore.locked`)."""
        self.store.ensure()
        try:
            return take_snapshot(
                self.store, self.settings.max_file_bytes, self.settings.max_files, self._exclude
            )
        except CheckpointsUnavailable as exc:
            self._unavailable = exc
            raise

    def save(
        self,
        snapshot: Snapshot,
        *,
        phase: str,
        kind: str,
        session_id: str = "",
        turn: int = 0,
        prompt: str = "",
        pair: int | None = None,
        target: int | None = None,
        recent: list[Checkpoint] | None = None,
    ) -> Checkpoint:
        """Keep ``snapshot`` as the next checkpoint (the caller holds the lock).

        ``recent``: the newest checkpoints, oldest first, when the caller has
        read them already (the default reads the newest one).
        """
        if recent is None:
            recent = self._checkpoints(1)
        seq = recent[-1].seq + 1 if recent else 1
        project = read_project_refs(self.workspace)
        state = self.store.hash_blob(
            write_json(
                {"modes": snapshot.modes.to_json(), "project": _project_json(project)}
            ).encode(),
            stored={c.state for c in recent if c.state},
        )
        meta = {
            "v": FORMAT,
            "phase": phase,
            "kind": kind,
            "session": session_id,
            "turn": turn,
            "prompt": prompt[:MAX_PROMPT],
            "time": round(time.time(), 3),
            "files": snapshot.files,
            "not_covered": [list(n) for n in snapshot.not_covered],
            "pair": pair,
            "target": target,
            "state": state,
            "workspace": str(self.workspace),
        }
        message = write_json(meta)
        commit = self.store.commit(snapshot.tree, message)
        name = f"{seq:010d}"
        self.store.create_refs({REF_PREFIX + name: commit, STATE_PREFIX + name: state})
        return Checkpoint.from_commit(REF_PREFIX + name, commit, snapshot.tree, message)

    # -- reading -----------------------------------------------------------

    def list(self, session_id: str | None = None) -> list[Checkpoint]:
        """Every checkpoint of the workspace (of one session, when given), oldest first."""
        found = self._checkpoints()
        if session_id is not None:
            found = [c for c in found if c.session_id == session_id]
        return found

    def get(self, seq: int) -> Checkpoint:
        """Checkpoint number ``seq``, or a :class:`UsageError` saying there is none."""
        for checkpoint in self._checkpoints():
            if checkpoint.seq == seq:
                return checkpoint
        raise UsageError(f"no checkpoint {seq} in {self.workspace}")

    def _checkpoints(self, count: int | None = None) -> list[Checkpoint]:
        return [Checkpoint.from_commit(*row) for row in self.store.commits(count)]

    def states(self, checkpoints: Iterable[Checkpoint]) -> dict[int, State]:
        """Each checkpoint's :class:`State` by ``seq``, read in one git run."""
        checkpoints = list(checkpoints)
        blobs = self.store.read_blobs(c.state for c in checkpoints if c.state)
        found = {}
        for checkpoint in checkpoints:
            raw = blobs.get(checkpoint.state or "")
            data = json.loads(raw) if raw else {}
            found[checkpoint.seq] = State(
                Modes.from_json(data.get("modes")), _project_from_json(data.get("project"))
            )
        return found

    def points(self, checkpoints: Iterable[Checkpoint]) -> list[Point]:
        """The checkpoints as :class:`Point` s (their modes and refs read)."""
        checkpoints = list(checkpoints)
        states = self.states(checkpoints)
        return [
            Point(
                c.seq,
                c.tree,
                states[c.seq].modes,
                states[c.seq].project,
                c,
                c.not_covered,
            )
            for c in checkpoints
        ]

    def now(self) -> Point:
        """The files now as a :class:`Point` (takes the store's lock for the snapshot)."""
        with self.store.locked():
            return self.point_of(self.snapshot())

    def point_of(self, snapshot: Snapshot) -> Point:
        return Point(
            math.inf,
            snapshot.tree,
            snapshot.modes,
            read_project_refs(self.workspace),
            None,
            snapshot.not_covered,
        )

    def changes(
        self, pairs: Iterable[tuple[Point, Point]], numstat: bool = False
    ) -> list[list[Change]]:
        """What changed from the first point to the second, for each pair (one git run)."""
        pairs = list(pairs)
        raw = self.store.diffs(((a.tree, b.tree) for a, b in pairs), numstat=numstat)
        return [self._changes(a, b, raw[(a.tree, b.tree)]) for a, b in pairs]

    def _changes(self, a: Point, b: Point, raw: list[RawChange]) -> list[Change]:
        found: dict[str, Change] = {}
        for item in raw:
            if item.old is None:
                status = "created"
            elif item.new is None:
                status = "deleted"
            elif (
                item.old.oid == item.new.oid
                and item.old.mode != item.new.mode
                and ("120000" not in (item.old.mode, item.new.mode))
            ):
                status = "mode"
            else:
                status = "modified"
            found[item.path] = Change(item.path, status, item.added, item.deleted)
        # git keeps 644 or 755: permission bits beyond those are compared here.
        if a.modes == b.modes:
            pass
        elif a.modes.defaults == b.modes.defaults:
            paths = set(a.modes.other) | set(b.modes.other)
            self._mode_changes(a, b, paths, found)
        else:
            self._mode_changes(a, b, None, found)
        return sorted(found.values(), key=lambda c: c.path)

    def _mode_changes(
        self, a: Point, b: Point, paths: set[str] | None, found: dict[str, Change]
    ) -> None:
        if paths is not None:
            paths = {p for p in paths if p not in found}
            if not paths:
                return
        entries = self.store.entries(b.tree, None if paths is None else sorted(paths))
        for path, entry in entries.items():
            if path in found or paths is not None and path not in paths:
                continue
            if a.modes.of(path, entry.mode) != b.modes.of(path, entry.mode):
                found[path] = Change(path, "mode")

    def turns(self, session_id: str | None = None) -> list[Turn]:
        """Every turn (and rewind) with what it changed, oldest first.

        An unfinished last turn is measured against the files now (a snapshot).
        """
        checkpoints = self._checkpoints()
        befores = [c for c in checkpoints if c.phase == "before"]
        if not befores:
            return []
        ends = _ends(checkpoints)
        needs_now = any(ends[b.seq] is None for b in befores)
        points = {p.seq: p for p in self.points(checkpoints)}
        now = self.now() if needs_now else None
        pairs = []
        for before in befores:
            end = ends[before.seq]
            pairs.append((points[before.seq], points[end.seq] if end is not None else now))
        changes = self.changes(pairs, numstat=True)
        active = _active(checkpoints)
        turns = []
        for before, found in zip(befores, changes, strict=True):
            after = _after_of(checkpoints, before)
            turns.append(Turn(before, after, tuple(found), before.seq not in active))
        if session_id is not None:
            turns = [t for t in turns if t.session_id == session_id]
        return turns

    def default_target(self) -> Checkpoint | None:
        """Before the latest model turn that changed files and is not rewound yet (None: none)."""
        for turn in reversed(self.turns()):
            if turn.kind == "turn" and turn.changes and not turn.rewound:
                return turn.before
        return None

    def remove(self, checkpoints: Iterable[Checkpoint]) -> int:
        """Delete checkpoints (the caller holds the lock); how many. Objects go at the next gc."""
        names = []
        for checkpoint in checkpoints:
            name = f"{checkpoint.seq:010d}"
            names += [REF_PREFIX + name, STATE_PREFIX + name]
        self.store.delete_refs(names)
        return len(names) // 2


def _after_of(checkpoints: list[Checkpoint], before: Checkpoint) -> Checkpoint | None:
    for checkpoint in checkpoints:
        if checkpoint.phase == "after" and checkpoint.pair == before.seq:
            return checkpoint
    return None


def _ends(checkpoints: list[Checkpoint]) -> dict[int, Checkpoint | None]:
    """Each "before"'s end: its "after", else the next checkpoint, else None (the files now)."""
    ends: dict[int, Checkpoint | None] = {}
    for i, checkpoint in enumerate(checkpoints):
        if checkpoint.phase != "before":
            continue
        after = _after_of(checkpoints, checkpoint)
        if after is None and i + 1 < len(checkpoints):
            after = checkpoints[i + 1]
        ends[checkpoint.seq] = after
    return ends


def _active(checkpoints: list[Checkpoint]) -> frozenset[int]:
    """The turns and rewinds (by their "before") whose changes are in the files now.

    Each becomes active when it starts; a finished rewind makes the set what
    it was at its target (plus itself), so rewinding a rewind brings back the
    turns it took back.
    """
    active: frozenset[int] = frozenset()
    history: list[tuple[int, frozenset[int]]] = []  # (seq, active just before it)
    for checkpoint in checkpoints:
        history.append((checkpoint.seq, active))
        if checkpoint.phase == "before":
            active = active | {checkpoint.seq}
        elif checkpoint.kind == "rewind" and checkpoint.target is not None:
            active = _active_at(history, checkpoint.target) | {checkpoint.pair or checkpoint.seq}
    return active


def _active_at(history: list[tuple[int, frozenset[int]]], seq: int) -> frozenset[int]:
    for at, active in history:
        if at >= seq:
            return active
    return history[-1][1] if history else frozenset()


def _project_json(project: ProjectRefs | None) -> Any:
    if project is None:
        return None
    return {"git_dir": project.git_dir, "refs": project.refs, "error": project.error}


def _project_from_json(data: Any) -> ProjectRefs | None:
    if not isinstance(data, Mapping):
        return None
    return ProjectRefs(
        str(data.get("git_dir") or ""), dict(data.get("refs") or {}), data.get("error") or ""
    )


# -- every workspace's store: listing and housekeeping -----------------------


class StoreInfo(Record):
    """One workspace's store: where, how big, how many checkpoints, the newest one's time."""

    workspace: str
    folder: Path
    size: int
    checkpoints: int
    last: float | None


class PruneReport(Record):
    """What :func:`prune` removed."""

    removed: int
    stores_removed: int
    size_before: int
    size_after: int


def _stores(state_dir: Path | None) -> list[tuple[GitStore, Checkpoints | None]]:
    root = store_root(state_dir)
    found = []
    if not root.is_dir():
        return found
    for folder in sorted(root.iterdir()):
        if not folder.is_dir():
            continue
        if folder.name.startswith("."):  # a store being removed when its process died
            remove_folder(folder)
            continue
        try:
            workspace = Path((folder / "workspace").read_text().strip())
        except OSError:
            workspace = Path("?")
        store = GitStore(workspace, folder)
        found.append((store, Checkpoints.in_store(store) if store.exists() else None))
    return found


def stores(state_dir: str | os.PathLike[str] | None = None) -> list[StoreInfo]:
    """Every workspace's store, the least recently used first."""
    infos = []
    for store, checkpoints in _stores(Path(state_dir) if state_dir else None):
        listed = checkpoints.list() if checkpoints is not None else []
        infos.append(
            StoreInfo(
                str(store.workspace),
                store.folder,
                store.size(),
                len(listed),
                listed[-1].time if listed else None,
            )
        )
    return sorted(infos, key=lambda i: (i.last is not None, i.last or 0))


def prune(
    *,
    keep_days: float | None = None,
    keep_mib: float | None = None,
    settings: Mapping[str, Any] | CheckpointSettings | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    now: float | None = None,
) -> PruneReport:
    """Remove checkpoints older than ``keep_days``, then keep every store within ``keep_mib``.

    Missing limits come from ``settings`` (``checkpoints.keep_days`` and
    ``keep_mib``). Over the size limit, whole workspaces go first, least
    recently used first, then the oldest checkpoints of the last one. A
    store that cannot be read is removed; the others are packed when they
    hold many loose objects.
    """
    limits = (
        settings
        if isinstance(settings, CheckpointSettings)
        else CheckpointSettings.from_settings(settings)
    )
    keep_days = limits.keep_days if keep_days is None else keep_days
    keep_mib = limits.keep_mib if keep_mib is None else keep_mib
    now = time.time() if now is None else now
    cutoff = now - keep_days * 86400
    root = Path(state_dir) if state_dir else None
    found = _stores(root)
    size_before = sum(store.size() for store, _ in found)
    removed = stores_removed = 0
    kept: list[tuple[GitStore, Checkpoints, float]] = []
    for store, checkpoints in found:
        with store.locked():
            listed = _readable(checkpoints)
            if listed is None:
                remove_folder(store.folder)
                stores_removed += 1
                continue
            old = [c for c in listed if c.time < cutoff]
            if old:
                removed += checkpoints.remove(old)
            if len(old) == len(listed):
                remove_folder(store.folder)
                stores_removed += 1
                continue
            store.gc(auto=not old)
            kept.append((store, checkpoints, listed[-1].time))
    cap = keep_mib * 1024 * 1024
    total = sum(store.size() for store, _, _ in kept)
    if total > cap:
        for store, _, _ in kept:  # loose objects count for more than they will once packed
            with store.locked():
                store.gc()
        kept.sort(key=lambda item: item[2])
        total = sum(store.size() for store, _, _ in kept)
        while kept and total > cap:
            store, checkpoints, _ = kept[0]
            with store.locked():
                listed = checkpoints.list()
                if len(kept) > 1 or len(listed) <= 1:
                    removed += len(listed)
                    remove_folder(store.folder)
                    stores_removed += 1
                    kept.pop(0)
                else:
                    removed += checkpoints.remove(listed[: max(1, len(listed) // 2)])
                    store.gc()
            total = sum(store.size() for store, _, _ in kept)
    return PruneReport(removed, stores_removed, size_before, total)


def remove_session(session_id: str, *, state_dir: str | os.PathLike[str] | None = None) -> int:
    """Remove a session's checkpoints from every workspace's store; how many were removed."""
    removed = 0
    for store, checkpoints in _stores(Path(state_dir) if state_dir else None):
        if checkpoints is None:
            continue
        with store.locked():
            listed = checkpoints.list()
            mine = [c for c in listed if c.session_id == session_id]
            if not mine:
                continue
            removed += checkpoints.remove(mine)
            if len(mine) == len(listed):
                remove_folder(store.folder)
            else:
                store.gc()
    return removed


def _readable(checkpoints: Checkpoints | None) -> list[Checkpoint] | None:
    if checkpoints is None:
        return None
    try:
        return checkpoints.list()
    except CheckpointError:
        return None
