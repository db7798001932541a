"""Snapshots: the workspace's files brought into the store's index and written as one tree.

What :func:`take_snapshot` promises:

- **What is covered.** Files and symlinks, except what the workspace's
  ``.gitignore`` files ignore (the person's global ignore file and
  ``.git/info/exclude`` are git configuration, so not read). Files over the
  size cap, folders that are git repositories of their own and anything
  that is neither a file nor a symlink are named as not covered, never
  skipped silently. Exact permission bits are kept beside the tree (git keeps
  only 644 or 755).
- **Unchanged files cost nothing.** git's index keeps their stat data, so a
  snapshot hashes only what changed, and an object is stored once, by content.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable, Mapping

from mdagent.core.records import Record
from mdagent.rewind.checkpointstore import (
    GIT_TIMEOUT,
    CheckpointError,
    CheckpointsUnavailable,
    first_line,
)

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

    from mdagent.rewind.checkpointstore import GitStore


class NotCovered(Record):
    """A path a checkpoint does not hold, and why (``larger than 10000000 bytes``...)."""

    path: str
    reason: str


class Modes(Record):
    """Exact permission bits of a snapshot's files: the usual mode per git mode, and the others.

    git records a file as 100644 or 100755 only; ``defaults`` maps each to the
    permission bits most files of that kind have, ``other`` the files that
    differ (a 0600 file among 0644 ones).
    """

    defaults: dict
    other: dict

    def of(self, path: str, git_mode: str) -> int | None:
        """The permission bits of ``path`` (None for a symlink)."""
        if git_mode not in ("100644", "100755"):
            return None
        if path in self.other:
            return self.other[path]
        return self.defaults.get(git_mode, 0o755 if git_mode == "100755" else 0o644)

    def to_json(self) -> dict:
        return {"defaults": dict(self.defaults), "other": dict(self.other)}

    @classmethod
    def from_json(cls, data: Any) -> Modes:
        data = data if isinstance(data, Mapping) else {}
        return cls(dict(data.get("defaults") or {}), dict(data.get("other") or {}))


class Snapshot(Record):
    """The workspace as the store saw it: a tree, exact modes, what it left out."""

    tree: str
    modes: Modes
    not_covered: tuple
    files: int


def take_snapshot(
    store: GitStore, max_file_bytes: int, max_files: int, exclude: Iterable[str] = ()
) -> Snapshot:
    """Bring the index up to the workspace's files and write their tree.

    ``exclude`` names workspace-relative paths never to record (the state
    dir, when it lies inside the workspace). Raises
    :class:`CheckpointsUnavailable` when there are more than ``max_files``.
    """
    exclude = tuple(exclude)
    try:
        return _snapshot(store, max_file_bytes, max_files, exclude)
    except CheckpointsUnavailable:
        raise
    except OSError as exc:  # the workspace itself gone or unreadable
        where = exc.filename if isinstance(exc.filename, str) else store.workspace
        raise CheckpointError(
            f"checkpoint store: cannot read {where}: {exc.strerror or exc}"
        ) from None
    except CheckpointError as exc:
        # The index is a cache: a stale lock (a run killed mid-write) or a
        # damaged index only costs hashing the files again.
        message = str(exc)
        if "index.lock" in message:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(store.index) + ".lock")
        elif any(s in message for s in ("index file", "invalid object", "bad signature")):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(store.index)
        else:
            raise
        return _snapshot(store, max_file_bytes, max_files, exclude)


def _snapshot(  # noqa: C901
    store: GitStore, max_file_bytes: int, max_files: int, exclude: tuple[str, ...]
) -> Snapshot:
    # This loop runs once per file of the workspace on every checkpoint, so
    # it is written for speed: paths stay bytes as git wrote them (decoding
    # 10,000 of them costs more than the loop), file types are tested with
    # plain bit masks, and only what is reported is decoded.
    indexed, changed, others, not_covered = _listing(store, max_files, exclude)
    update: list[bytes] = []
    drop: list[bytes] = []
    exact: dict[bytes, int] = {}  # regular file -> permission bits (with the type's bit)
    covered = 0
    root = os.open(store.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    folders = {b"": True}  # folder -> whether it is a real folder all the way up

    def real_folder(folder: bytes) -> bool:
        if folder not in folders:
            above = folder.rpartition(b"/")[0]
            try:
                mode = os.lstat(folder, dir_fd=root).st_mode
                folders[folder] = real_folder(above) and stat.S_ISDIR(mode)
            except OSError:
                folders[folder] = False
        return folders[folder]

    lstat, folder_known = os.lstat, folders.get
    try:
        for known, paths in ((True, indexed), (False, others)):
            for path in paths:
                if path[-1:] == b"/":
                    reason = "a git repository of its own"
                    not_covered.append(NotCovered(_text(path[:-1]), reason))
                    continue
                above = path.rpartition(b"/")[0]
                if not (folder_known(above) or real_folder(above)):
                    # Its folder is gone, or is now a file or a symlink: never
                    # looked at through it (git would not add it there either).
                    if known:
                        drop.append(path)
                    continue
                try:
                    st = lstat(path, dir_fd=root)
                except (FileNotFoundError, NotADirectoryError):
                    if known:
                        update.append(path)  # deleted: --remove takes it out
                    continue
                except OSError:  # a folder on the way that cannot be searched
                    not_covered.append(NotCovered(_text(path), "cannot be read"))
                    if known:
                        drop.append(path)
                    continue
                kind = st.st_mode & 0o170000
                if kind == 0o100000:  # a regular file
                    if st.st_size > max_file_bytes:
                        reason = f"larger than {max_file_bytes} bytes"
                        not_covered.append(NotCovered(_text(path), reason))
                        if known:
                            drop.append(path)
                        continue
                    exact[path] = st.st_mode & 0o7777
                elif kind != 0o120000:  # neither a file nor a symlink
                    if known:
                        drop.append(path)
                    if kind != 0o040000:  # a folder now: its files are listed themselves
                        not_covered.append(NotCovered(_text(path), "not a file or a symlink"))
                    continue
                if not known or path in changed:
                    # git would stop at a file it cannot read (a root-owned 0600
                    # file a container left): named instead, the rest recorded.
                    if kind == 0o100000 and not os.access(path, os.R_OK, dir_fd=root):
                        not_covered.append(NotCovered(_text(path), "cannot be read"))
                        del exact[path]
                        if known:
                            drop.append(path)
                        continue
                    update.append(path)
                covered += 1
    finally:
        os.close(root)
    if drop:
        store.git("update-index", "-z", "--force-remove", "--stdin", input=_nul(drop))
    if update:
        done = store.run(
            "update-index",
            "-z",
            "--add",
            "--remove",
            "--replace",
            "--stdin",
            input=_nul(update),
        )
        # Names git never records (.GIT, "git~1", ".git " on any system, as
        # core.protectNTFS/HFS have it) are skipped with this line: named, not lost.
        for line in done.stderr.split(b"\n"):
            if line.startswith(b"Ignoring path "):
                path = line[len(b"Ignoring path ") :]
                reason = "a name git does not record (like .git)"
                not_covered.append(NotCovered(_text(path), reason))
                exact.pop(path, None)
                covered -= 1
    tree = store.git("write-tree").decode().strip()
    return Snapshot(tree, modes_of(exact), tuple(sorted(not_covered)), covered)


def _listing(
    store: GitStore, max_files: int, exclude: tuple[str, ...]
) -> tuple[set[bytes], set[bytes], list[bytes], list[NotCovered]]:
    """Paths in the index, those that changed, new ones, and folders git could not read."""
    args = ["ls-files", "-z", "-c", "-o", "-m", "-t", "--exclude-standard", "--", "."]
    args += [f":(exclude,literal){path}" for path in exclude]
    indexed: set[bytes] = set()
    changed: set[bytes] = set()
    others: list[bytes] = []
    with tempfile.TemporaryFile() as errors:
        proc = store.start(*args, cwd=store.workspace, stderr=errors)
        # The read below has no time limit of its own: a git stuck on a dead
        # network mount is stopped as any other git run would be.
        stopped = threading.Event()
        watchdog = threading.Timer(GIT_TIMEOUT, lambda: (stopped.set(), proc.kill()))
        watchdog.start()
        try:
            pending = b""
            while chunk := proc.stdout.read(1 << 18):
                records = (pending + chunk).split(b"\0")
                pending = records.pop()
                # "H path": in the index; "C path": changed (or deleted) too; "? path": new.
                indexed.update([r[2:] for r in records if r[:1] not in b"?C"])
                changed.update([r[2:] for r in records if r[:1] == b"C"])
                others += [r[2:] for r in records if r[:1] == b"?"]
                if len(indexed) + len(others) > max_files:
                    raise CheckpointsUnavailable(
                        f"no checkpoint: the workspace has more than {max_files} files "
                        "(checkpoints.max_files)"
                    )
            status = proc.wait()  # stdout is closed: git is exiting (no polling sleeps)
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        errors.seek(0)
        said = errors.read()
        if stopped.is_set():
            raise CheckpointError(
                f"checkpoint store: git ls-files gave no answer in {GIT_TIMEOUT:.0f} s"
            )
        if status != 0:
            reason = first_line(said) or f"exit status {status}"
            raise CheckpointError(f"checkpoint store: git ls-files failed: {reason}")
    # git skips a folder it cannot open with a warning: named, never a silent gap.
    unreadable = [
        NotCovered(_text(m[1]).rstrip("/"), "a folder that cannot be read")
        for m in re.finditer(rb"could not open directory '(.*?)': ", said)
    ]
    return indexed, changed, others, unreadable


def modes_of(exact: Mapping[bytes, int]) -> Modes:
    """:class:`Modes` from each regular file's permission bits."""
    defaults = {"100644": 0o644, "100755": 0o755}
    seen = {"100644": 0, "100755": 0}
    for perm, count in Counter(exact.values()).items():
        git_mode = "100755" if perm & 0o100 else "100644"
        if (count, perm) > (seen[git_mode], defaults[git_mode]):
            seen[git_mode], defaults[git_mode] = count, perm
    other = {
        _text(p): perm
        for p, perm in exact.items()
        if perm != defaults["100755" if perm & 0o100 else "100644"]
    }
    return Modes(defaults, other)


def _nul(paths: Iterable[bytes]) -> bytes:
    return b"".join(p + b"\0" for p in paths)


def _text(path: bytes) -> str:
    return os.fsdecode(path)
