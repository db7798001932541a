"""Rewind: put back the files that model turns changed, as they were at a checkpoint.

:func:`plan` works out what a rewind would do and what stops it (``agent
rewind --diff`` shows it, with :func:`diff_text`); :func:`apply` does it.
Nothing here prints. What a rewind promises:

- **Only what the turns changed.** A path is rewound only if a model's turn
  (or an earlier rewind) changed it after the target checkpoint. Files
  created since are removed, with the folders they leave empty; deleted files
  come back; modified files get their old bytes; exact permission bits and
  symlinks are restored. A path only the person changed is left as it is
  (``kept``).
- **Never the person's work.** A path the person changed after a turn ended
  (not through a model's call), or that changed during a turn whose end was
  not recorded, stops the rewind, named, and nothing is changed. ``force``
  overwrites such a path, and only such a path: what it overwrites is in the
  rewind's own "before" checkpoint, so the rewind can be rewound. A file on
  disk that is not covered now (ignored, over the size cap), or a folder
  holding such files, in the way is never overwritten, even with force.
- **Never .git.** The store never records a ``.git``, so a rewind never
  writes one: a commit or a checkout a model's command made stays, and
  :attr:`RewindPlan.refs_moved` says which refs of the project moved during
  the turns being rewound.
- **Never outside the workspace.** Every write walks from the workspace
  root one folder at a time without following a symlink
  (:func:`mdagent.safety.workspace.open_parent`), and a file is written under a
  temporary name and renamed into place.
- **Recorded.** A rewind is a "before"/"after" pair of kind "rewind", so it
  is listed with the turns and can itself be rewound.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from mdagent.core.errors import MdagentError, UsageError
from mdagent.core.records import Record
from mdagent.rewind.checkpoints import Change, Checkpoint, Checkpoints, Point
from mdagent.rewind.checkpointstore import CheckpointError, Entry
from mdagent.rewind.snapshot import NotCovered
from mdagent.safety.workspace import open_entry, open_parent

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


class Conflict(Record):
    """A path a rewind would overwrite although someone else changed it, and why.

    ``forceable``: ``force`` may overwrite it (its present content is kept
    by the rewind's checkpoint); otherwise it is kept even with force.
    """

    path: str
    reason: str
    forceable: bool = True


class RefMove(Record):
    """A ref of the project's own repository that moved during a rewound turn (not moved back).

    ``before``/``after`` are object ids, ``ref: <name>`` for a symbolic ref
    (HEAD on a branch), or None where the ref did not exist.
    """

    name: str
    before: str | None
    after: str | None
    turn: Checkpoint


class RewindPlan(Record):
    """What rewinding to ``target`` would do.

    ``remove``, ``restore``, ``revert`` and ``chmod`` are workspace-relative
    paths: created since (removed), deleted since (brought back), modified
    (old bytes back) and permission bits only. ``kept`` changed since the
    target, not by a model: left alone. ``turns`` are the "before"
    checkpoints of the turns (and rewinds) being rewound.
    """

    workspace: str
    target: Checkpoint
    turns: tuple
    remove: tuple
    restore: tuple
    revert: tuple
    chmod: tuple
    kept: tuple
    conflicts: tuple
    not_covered: tuple
    refs_moved: tuple
    force: bool
    now: Point
    at_target: Point
    entries: dict  # path -> Entry at the target, for restore, revert and chmod

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the rewind changes."""
        return tuple(sorted((*self.remove, *self.restore, *self.revert, *self.chmod)))

    @property
    def empty(self) -> bool:
        """Nothing to do: the files are as they were at the target."""
        return not self.paths

    @property
    def blocked(self) -> bool:
        """A conflict stops it (without ``force``)."""
        return bool(self.conflicts) and not self.force


class RewindResult(Record):
    """What :func:`apply` did: its checkpoints, the folders it removed, what it could not do.

    ``failed`` holds ``(path, reason)`` for writes that failed; ``mismatched``
    the paths that, read back afterwards, are not as at the target (both
    empty after a sound rewind).
    """

    plan: RewindPlan
    before: Checkpoint | None
    after: Checkpoint | None
    removed_folders: tuple
    failed: tuple
    mismatched: tuple


class RewindConflict(CheckpointError):
    """A rewind would overwrite what someone else changed: nothing was changed."""

    code = "REWIND_CONFLICT"

    def __init__(self, conflicts: tuple[Conflict, ...]) -> None:
        first = conflicts[0]
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        hint = (
            "; --force overwrites it (the rewind can be rewound)"
            if all(c.forceable for c in conflicts)
            else ""
        )
        super().__init__(
            f"rewind stopped, nothing was changed: {first.path} {first.reason}{more}{hint}"
        )
        self.conflicts = conflicts


class _Span(Record):
    """A turn's time: from its "before" to its "after" (closed) or to the next checkpoint."""

    begin: float
    end: float
    closed: bool
    before: Checkpoint


def plan(checkpoints: Checkpoints, target: Checkpoint | int, *, force: bool = False) -> RewindPlan:
    """What rewinding the workspace to ``target`` (a checkpoint or its number) would do.

    Takes a snapshot of the files now (into the store, no checkpoint made).
    """
    listed = checkpoints.list()
    seq = target if isinstance(target, int) else target.seq
    later = [c for c in listed if c.seq >= seq]
    if not later or later[0].seq != seq:
        raise UsageError(f"no checkpoint {seq} in {checkpoints.workspace}")
    target = later[0]
    timeline = [*checkpoints.points(later), checkpoints.now()]
    at_target, now = timeline[0], timeline[-1]
    spans = _spans(listed)
    segments = list(zip(timeline, timeline[1:], strict=False))
    *each, since = checkpoints.changes([*segments, (at_target, now)])

    touched: set[str] = set()
    others: dict[str, str] = {}  # path -> why it is not only a model's change
    for (a, b), changed in zip(segments, each, strict=True):
        who, span = _attribute(a, b, spans)
        for change in changed:
            if who == "model":
                touched.add(change.path)
            elif who == "unfinished":
                touched.add(change.path)
                others[change.path] = (
                    f"changed during {_label(span.before)}, whose end was not recorded "
                    "(mdagent stopped during it)"
                )
            else:
                others[change.path] = _changed_after(a)

    acted = [c for c in since if c.path in touched and not _in_git(c.path)]
    kept = tuple(c.path for c in since if c.path not in touched)
    entries = checkpoints.store.entries(
        at_target.tree, [c.path for c in acted if c.status != "created"]
    )
    conflicts = [Conflict(c.path, others[c.path]) for c in acted if c.path in others]
    removing = {c.path for c in acted if c.status == "created"}
    blocked = _in_the_way(Path(checkpoints.workspace), acted, removing)
    conflicts += blocked
    stopped = {c.path for c in blocked}
    acted = [c for c in acted if c.path not in stopped]

    def paths(status: str) -> tuple[str, ...]:
        return tuple(c.path for c in acted if c.status == status)

    return RewindPlan(
        workspace=str(checkpoints.workspace),
        target=target,
        turns=tuple(s.before for s in spans if s.before.seq >= target.seq),
        remove=paths("created"),
        restore=paths("deleted"),
        revert=paths("modified"),
        chmod=paths("mode"),
        kept=kept,
        conflicts=tuple(sorted(conflicts, key=lambda c: c.path)),
        not_covered=_not_covered(timeline),
        refs_moved=_refs_moved(spans, timeline, target),
        force=force,
        now=now,
        at_target=at_target,
        entries={p: e for p, e in entries.items() if p not in removing},
    )


def apply(
    checkpoints: Checkpoints,
    plan: RewindPlan,
    *,
    session_id: str = "",
    turn: int = 0,
    prompt: str = "",
) -> RewindResult:
    """Carry out ``plan``, recorded as a rewind (``session_id``/``turn`` name who asked).

    Raises :class:`RewindConflict` when the plan is blocked, and
    :class:`CheckpointError` when the files changed since the plan was made;
    in both cases nothing is changed.
    """
    if plan.blocked:
        raise RewindConflict(plan.conflicts)
    if plan.empty:
        return RewindResult(plan, None, None, (), (), ())
    store = checkpoints.store
    label = prompt or f"rewind to checkpoint {plan.target.seq}"
    with store.locked():
        snapshot = checkpoints.snapshot()
        if snapshot.tree != plan.now.tree or snapshot.modes != plan.now.modes:
            raise CheckpointError(
                "the workspace changed since the rewind was planned; nothing was changed "
                "(plan it again)"
            )
        before = checkpoints.save(
            snapshot,
            phase="before",
            kind="rewind",
            session_id=session_id,
            turn=turn,
            prompt=label,
            target=plan.target.seq,
        )
        folders, failed = _carry_out(checkpoints, plan)
        done = checkpoints.snapshot()
        after = checkpoints.save(
            done,
            phase="after",
            kind="rewind",
            session_id=session_id,
            turn=turn,
            prompt=label,
            pair=before.seq,
            target=plan.target.seq,
            recent=[before],
        )
    failed_paths = {path for path, _ in failed}
    [found] = checkpoints.changes([(plan.at_target, checkpoints.point_of(done))])
    wanted = set(plan.paths) - failed_paths
    mismatched = tuple(c.path for c in found if c.path in wanted)
    return RewindResult(plan, before, after, tuple(folders), tuple(failed), mismatched)


def diff_text(checkpoints: Checkpoints, plan: RewindPlan) -> str:
    """What the rewind would change, as a unified diff from the files now to the target."""
    text = checkpoints.store.diff_text(plan.now.tree, plan.at_target.tree, plan.paths)
    # git shows 644 and 755 only; other permission bits are shown the same way.
    extra = []
    for path in plan.chmod:
        entry = plan.entries[path]
        old = plan.now.modes.of(path, entry.mode)
        new = plan.at_target.modes.of(path, entry.mode)
        if f"diff --git a/{path} b/{path}\n" not in text and old != new:
            extra.append(
                f"diff --git a/{path} b/{path}\nold mode {0o100000 | (old or 0):o}\n"
                f"new mode {0o100000 | (new or 0):o}\n"
            )
    return text + "".join(extra)


# -- who changed what ---------------------------------------------------------


def _spans(checkpoints: list[Checkpoint]) -> list[_Span]:
    spans = []
    for i, checkpoint in enumerate(checkpoints):
        if checkpoint.phase != "before":
            continue
        after = next(
            (c for c in checkpoints if c.phase == "after" and c.pair == checkpoint.seq), None
        )
        if after is not None:
            spans.append(_Span(checkpoint.seq, after.seq, True, checkpoint))
        else:
            end = checkpoints[i + 1].seq if i + 1 < len(checkpoints) else float("inf")
            spans.append(_Span(checkpoint.seq, end, False, checkpoint))
    return spans


def _attribute(a: Point, b: Point, spans: list[_Span]) -> tuple[str, _Span | None]:
    """Who made the changes from ``a`` to ``b``: "model", "unfinished" or "person"."""
    inside = [s for s in spans if s.begin <= a.seq and b.seq <= s.end]
    for span in inside:
        if span.closed:
            return "model", span
    if inside:
        return "unfinished", inside[0]
    return "person", None


def _label(before: Checkpoint) -> str:
    if before.kind == "rewind":
        return f"the rewind to checkpoint {before.target}"
    return f"turn {before.turn}"


def _changed_after(point: Point) -> str:
    checkpoint = point.checkpoint
    if checkpoint is not None and checkpoint.phase == "after":
        what = "a rewind" if checkpoint.kind == "rewind" else f"turn {checkpoint.turn}"
        return f"changed after {what} ended (not by a model)"
    return "changed outside a model's turn"


def _in_git(path: str) -> bool:
    return any(part.lower() == ".git" for part in path.split("/"))


def _in_the_way(root: Path, acted: list[Change], removing: set[str]) -> list[Conflict]:
    """Paths to write where something the store does not hold is in the way."""
    found = []
    for change in acted:
        if change.status != "deleted":
            continue
        parts = change.path.split("/")
        reason = None
        for i in range(1, len(parts)):
            above = "/".join(parts[:i])
            try:
                st = os.lstat(root / above)
            except (FileNotFoundError, NotADirectoryError):
                break
            except OSError as exc:
                reason = f"cannot come back: {above} cannot be checked ({exc.strerror})"
                break
            if stat.S_ISDIR(st.st_mode):
                continue
            if above not in removing:
                reason = f"cannot come back: {above} is in the way and is not covered"
            break
        if reason is None:
            try:
                st = os.lstat(root / change.path)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                found.append(Conflict(change.path, f"cannot be checked ({exc.strerror})", False))
                continue
            if not stat.S_ISDIR(st.st_mode):
                reason = (
                    "is on disk but not covered now (ignored, over the size cap, "
                    "or not a file): not overwritten"
                )
            elif not _only(root / change.path, change.path, removing):
                reason = (
                    "cannot come back: a folder holding files that are not covered is in the way"
                )
        if reason:
            found.append(Conflict(change.path, reason, forceable=False))
    return found


def _only(folder: Path, relative: str, removing: set[str]) -> bool:
    """Whether every file under ``folder`` is one the rewind removes."""
    for dirpath, dirs, files in os.walk(folder):
        base = relative + dirpath[len(str(folder)) :].replace(os.sep, "/")
        for name in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            if f"{base}/{name}" not in removing:
                return False
    return True


def _not_covered(timeline: list[Point]) -> tuple[NotCovered, ...]:
    found: dict[str, NotCovered] = {}
    for point in timeline:
        for item in point.not_covered:
            found[item.path] = item
    return tuple(sorted(found.values()))


def _refs_moved(spans: list[_Span], timeline: list[Point], target: Checkpoint) -> tuple:
    by_seq = {p.seq: p for p in timeline}
    moves = []
    for span in spans:
        if span.before.seq < target.seq:
            continue
        start = by_seq.get(span.begin)
        end = by_seq.get(span.end) if span.end in by_seq else timeline[-1]
        if start is None or end is None:
            continue
        if any(p is not None and p.error for p in (start.project, end.project)):
            continue  # refs that could not be read are not reported as moved
        # No repository on one side: a model's `git init` (or `rm -rf .git`) moved them all.
        old = start.project.refs if start.project is not None else {}
        new = end.project.refs if end.project is not None else {}
        for name in sorted(set(old) | set(new)):
            if old.get(name) != new.get(name):
                moves.append(RefMove(name, old.get(name), new.get(name), span.before))
    return tuple(moves)


# -- writing ------------------------------------------------------------------


def _carry_out(checkpoints: Checkpoints, plan: RewindPlan) -> tuple[list[str], list[tuple]]:
    root = Path(plan.workspace)
    failed: list[tuple[str, str]] = []
    for path in sorted(plan.remove, key=lambda p: (-p.count("/"), p)):
        try:
            with open_parent(root / path, root) as (folder, name):
                os.unlink(name, dir_fd=folder)
        except FileNotFoundError:
            pass
        except (OSError, MdagentError) as exc:
            failed.append((path, _why(exc)))
    folders = _remove_folders(checkpoints, plan, root)
    with checkpoints.store.blob_reader() as read:
        for path in sorted((*plan.restore, *plan.revert)):
            entry = plan.entries[path]
            try:
                _write(root, path, entry, plan.at_target.modes.of(path, entry.mode), read)
            except (OSError, MdagentError) as exc:
                failed.append((path, _why(exc)))
    for path in plan.chmod:
        entry = plan.entries[path]
        perm = plan.at_target.modes.of(path, entry.mode)
        try:
            with open_parent(root / path, root) as (folder, name):
                if stat.S_ISREG(os.lstat(name, dir_fd=folder).st_mode) and perm is not None:
                    os.chmod(name, perm, dir_fd=folder)
        except (OSError, MdagentError) as exc:
            failed.append((path, _why(exc)))
    return folders, failed


def _remove_folders(checkpoints: Checkpoints, plan: RewindPlan, root: Path) -> list[str]:
    """Remove the folders the removed files leave empty, unless the target has files in them."""
    candidates = set()
    for path in plan.remove:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            candidates.add("/".join(parts[:i]))
    if not candidates:
        return []
    needed = checkpoints.store.entries(plan.at_target.tree, sorted(candidates))
    keep = set()
    for path in needed:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            keep.add("/".join(parts[:i]))
    removed = []
    for folder in sorted(candidates - keep, key=lambda p: (-p.count("/"), p)):
        try:
            with open_parent(root / folder, root) as (parent, name):
                os.rmdir(name, dir_fd=parent)
            removed.append(folder)
        except (OSError, MdagentError):
            pass  # not empty (files the store does not hold), or gone already: left as it is
    return removed


_serial = iter(range(1 << 62))


def _write(
    root: Path,
    path: str,
    entry: Entry,
    perm: int | None,
    read: Callable[[str], Iterator[bytes]],
) -> None:
    """Put ``entry``'s content at ``path``: a temporary name, then renamed over what is there."""
    chunks = read(entry.oid)
    try:
        with open_parent(root / path, root, create=True) as (folder, name):
            temporary = f".mdagent-rewind-{os.getpid()}-{next(_serial)}"
            if entry.mode == "120000":
                os.symlink(os.fsdecode(b"".join(chunks)), temporary, dir_fd=folder)
            else:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
                fd = open_entry(folder, temporary, flags, root / path, 0o600)
                try:
                    for chunk in chunks:
                        view = memoryview(chunk)
                        while view:
                            view = view[os.write(fd, view) :]
                    os.fchmod(fd, perm if perm is not None else 0o644)
                finally:
                    os.close(fd)
            try:
                os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
            except OSError:
                os.unlink(temporary, dir_fd=folder)
                raise
    finally:
        for _ in chunks:  # the reader answers in order: read what is left of this one
            pass


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)
