"""The private git object store behind checkpoints: one per workspace, in the state dir.

A snapshot is the workspace's files as a git tree in a repository of
mdagent's own, ``$AGENT_STATE_DIR/checkpoints/<key>/git``, with its own index
beside it; ``<key>`` comes from the workspace's real path. What it promises:

- **Never the project's repository.** Every git run has ``GIT_DIR``,
  ``GIT_INDEX_FILE`` and ``GIT_WORK_TREE`` set to the store, its index and the
  workspace, and no other ``GIT_*`` variable of the environment (a hook's
  ``GIT_DIR``, ``GIT_EXTERNAL_DIFF``, ``GIT_CONFIG_PARAMETERS``...) reaches
  it. git never enters a ``.git``, so the project's own ``.git``, index, refs
  and stash are never written. Its refs are only read, as files
  (:func:`read_project_refs`).
- **Never the person's configuration or filters.** Global and system
  configuration and attributes are off (``GIT_CONFIG_GLOBAL=/dev/null``,
  ``GIT_CONFIG_NOSYSTEM``, ``GIT_ATTR_NOSYSTEM``), and so are the default
  global attributes and ignore files, hooks and fsmonitor (``-c`` options on
  every run, over the store's own config). The store's ``info/attributes``,
  which outranks a project's ``.gitattributes``, unsets every attribute that
  changes bytes on the way in or out (text, eol, ident, filter,
  working-tree-encoding) and every diff driver: a project's filter or
  textconv never runs, and a file is stored byte for byte.
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
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from mdagent.core.errors import MdagentError
from mdagent.core.records import Record

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

STORE_FOLDER = "checkpoints"
# A first snapshot of a large workspace hashes every file; later ones take milliseconds.
GIT_TIMEOUT = 600.0
LOCK_TIMEOUT = 60.0
REF_PREFIX = "refs/mdagent/checkpoints/"
STATE_PREFIX = "refs/mdagent/state/"

# Given on every run, over anything in the store's own config: no hook, no
# fsmonitor daemon, no global attributes or ignore file (their default
# places are under $XDG_CONFIG_HOME, which GIT_CONFIG_GLOBAL does not cover),
# no line-ending conversion, no background maintenance.
_ISOLATION = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.symlinks=true",
    "core.fileMode=true",
    "core.ignoreCase=false",
    "core.precomposeUnicode=false",
    "core.quotePath=false",
    "core.logAllRefUpdates=false",
    "core.untrackedCache=false",
    "core.splitIndex=false",
    "core.sparseCheckout=false",
    "gc.auto=0",
    "gc.writeCommitGraph=false",
    "maintenance.auto=false",
    "commit.gpgSign=false",
    "protocol.allow=never",
)

# Outranks every .gitattributes in the workspace: bytes go in and come out
# unchanged, and no diff driver (textconv, external) is ever looked up.
ATTRIBUTES = (
    "# mdagent checkpoints: files are stored byte for byte; no filter or diff driver runs\n"
    "* -text !eol -crlf -ident -filter -working-tree-encoding !diff -merge\n"
)

_OBJECT_ID = rb"[0-9a-f]{40}(?:[0-9a-f]{24})?"
_DIFF_HEADER = re.compile(rb"(" + _OBJECT_ID + rb") (" + _OBJECT_ID + rb")\n")
_NUMSTAT = re.compile(rb"(\d+|-)\t(\d+|-)\t")


class CheckpointError(MdagentError):
    """The checkpoint store cannot do what was asked (git failed, the store is damaged)."""

    code = "CHECKPOINT"


class CheckpointsUnavailable(CheckpointError):
    """No checkpoint can be made here (no git, too many files): one line, and the turn goes on."""

    code = "CHECKPOINTS_UNAVAILABLE"


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


class Entry(Record):
    """One file of a tree: git mode (100644, 100755, 120000) and object id."""

    mode: str
    oid: str


class RawChange(Record):
    """One path that differs between two trees (``git diff-tree --raw``, ``--numstat``)."""

    path: str
    status: str  # A (added), D (deleted), M (modified), T (type changed)
    old: Entry | None
    new: Entry | None
    added: int | None = None  # lines; None for a binary file or without numstat
    deleted: int | None = None


class ProjectRefs(Record):
    """The project's own HEAD and refs, read without writing anything."""

    git_dir: str
    refs: dict  # "HEAD" -> "ref: refs/heads/main" or an id; "refs/..." -> id
    error: str = ""


def git_executable() -> str:
    """The git program, or :class:`CheckpointsUnavailable` naming what is missing."""
    found = shutil.which("git")
    if not found:
        raise CheckpointsUnavailable("checkpoints are unavailable: git is not installed")
    return found


def store_root(state_dir: Path | None = None) -> Path:
    """The folder holding every workspace's store."""
    from mdagent.core.layers import state_dir as default_state_dir

    return Path(state_dir if state_dir is not None else default_state_dir()) / STORE_FOLDER


def workspace_key(workspace: Path) -> str:
    """The store's folder name for a workspace: a digest of its real path."""
    return hashlib.sha256(os.fsencode(str(workspace))).hexdigest()[:24]


class GitStore:
    """One workspace's private repository: snapshots, commits, refs, diffs, blobs.

    Every method but :meth:`locked` expects the caller to hold the lock.
    """

    def __init__(self, workspace: Path, folder: Path) -> None:
        self.workspace = workspace
        self.folder = folder
        self.git_dir = folder / "git"
        self.index = folder / "index"
        self.lock_path = folder.with_name(folder.name + ".lock")
        self._git: str | None = None
        self._env: dict[str, str] | None = None

    # -- running git -------------------------------------------------------

    def environment(self) -> dict[str, str]:
        """The environment of every git run: the person's, without GIT_*, plus the store's."""
        if self._env is None:
            env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
            env.update(
                GIT_DIR=str(self.git_dir),
                GIT_INDEX_FILE=str(self.index),
                GIT_CONFIG_GLOBAL=os.devnull,
                GIT_CONFIG_SYSTEM=os.devnull,
                GIT_CONFIG_NOSYSTEM="1",
                GIT_ATTR_NOSYSTEM="1",
                GIT_TERMINAL_PROMPT="0",
                GIT_NO_REPLACE_OBJECTS="1",
                GIT_AUTHOR_NAME="mdagent",
                GIT_AUTHOR_EMAIL="mdagent@localhost",
                GIT_COMMITTER_NAME="mdagent",
                GIT_COMMITTER_EMAIL="mdagent@localhost",
                LC_ALL="C",
            )
            env.pop("LANGUAGE", None)
            # A store whose workspace is gone can still be listed and pruned.
            if self.workspace.is_dir():
                env["GIT_WORK_TREE"] = str(self.workspace)
            self._env = env
        return self._env

    def command(self, *args: str) -> list[str]:
        if self._git is None:
            self._git = git_executable()
        options = [part for item in _ISOLATION for part in ("-c", item)]
        return [self._git, "--no-pager", *options, *args]

    @property
    def cwd(self) -> Path:
        """Where git runs: the workspace (pathspecs are relative to it), else the store."""
        return self.workspace if "GIT_WORK_TREE" in self.environment() else self.folder

    def git(self, *args: str, input: bytes | None = None) -> bytes:
        """Run git in the store; its output, or :class:`CheckpointError` with git's reason."""
        return self.run(*args, input=input).stdout

    def run(self, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess:
        """Run git in the store: the finished process (stderr too), or :class:`CheckpointError`."""
        try:
            done = subprocess.run(
                self.command(*args),
                cwd=self.cwd,
                env=self.environment(),
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
                capture_output=True,
                timeout=GIT_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            raise CheckpointError(
                f"checkpoint store: git {args[0]} gave no answer in {GIT_TIMEOUT:.0f} s"
            ) from None
        except OSError as exc:
            raise CheckpointError(f"checkpoint store: cannot run git: {exc.strerror}") from None
        if done.returncode != 0:
            raise CheckpointError(f"checkpoint store: git {args[0]} failed: {_reason(done)}")
        return done

    # -- the store itself --------------------------------------------------

    def exists(self) -> bool:
        return (self.git_dir / "HEAD").is_file()

    def ensure(self) -> None:
        """Create the store (private, 0700) unless it exists; idempotent."""
        if self.exists():
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise CheckpointError(
                f"checkpoint store: cannot create {self.folder}: {exc.strerror or exc}"
            ) from None
        with contextlib.suppress(OSError):
            os.chmod(self.folder, 0o700)
        env = {k: v for k, v in self.environment().items()}
        for name in ("GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_DIR"):
            env.pop(name, None)
        # A bare repository: its work tree is given on every run, never recorded.
        done = subprocess.run(
            [*self.command("init", "--quiet", "--bare"), str(self.git_dir)],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT,
        )
        if done.returncode != 0:
            raise CheckpointError(
                f"checkpoint store: cannot create {self.git_dir}: {_reason(done)}"
            )
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "attributes").write_text(ATTRIBUTES)
        (info / "exclude").write_text("")
        # Sample hooks are never run (core.hooksPath); they need not sit there either.
        shutil.rmtree(self.git_dir / "hooks", ignore_errors=True)
        (self.folder / "workspace").write_text(str(self.workspace) + "\n")

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's lock: one mdagent at a time records, rewinds or prunes here.

        The lock file sits beside the store, so removing a store never pulls a
        lock from under a process waiting for it.
        """
        import fcntl

        try:
            self.lock_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise CheckpointError(
                f"checkpoint store: cannot open {self.lock_path}: {exc.strerror or exc}"
            ) from None
        try:
            deadline = time.monotonic() + LOCK_TIMEOUT
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise CheckpointError(
                            f"checkpoint store busy: another mdagent holds {self.lock_path}"
                        ) from None
                    time.sleep(0.05)
            yield
        finally:
            os.close(fd)

    def size(self) -> int:
        """Bytes the store takes on disk."""
        return folder_size(self.folder)

    def gc(self, auto: bool = False) -> None:
        """Drop objects no checkpoint needs any more (the index's are kept) and pack the rest.

        ``auto``: only when git finds many loose objects (each small file is a
        4 KiB block on disk until it is packed), in this process, never in the
        background.
        """
        if not self.exists():
            return
        if auto:
            self.git("-c", "gc.auto=6700", "-c", "gc.autoDetach=false", "gc", "--auto", "--quiet")
        else:
            self.git("gc", "--quiet", "--prune=now")

    # -- snapshots ---------------------------------------------------------

    def snapshot(
        self, max_file_bytes: int, max_files: int, exclude: Iterable[str] = ()
    ) -> Snapshot:
        """Bring the index up to the workspace's files and write their tree.

        ``exclude`` names workspace-relative paths never to record (the state
        dir, when it lies inside the workspace). Raises
        :class:`CheckpointsUnavailable` when there are more than ``max_files``.
        """
        exclude = tuple(exclude)
        try:
            return self._snapshot(max_file_bytes, max_files, exclude)
        except CheckpointsUnavailable:
            raise
        except OSError as exc:  # the workspace itself gone or unreadable
            where = exc.filename if isinstance(exc.filename, str) else self.workspace
            raise CheckpointError(
                f"checkpoint store: cannot read {where}: {exc.strerror or exc}"
            ) from None
        except CheckpointError as exc:
            # The index is a cache: a stale lock (a run killed mid-write) or a
            # damaged index only costs hashing the files again.
            message = str(exc)
            if "index.lock" in message:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(str(self.index) + ".lock")
            elif any(s in message for s in ("index file", "invalid object", "bad signature")):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.index)
            else:
                raise
            return self._snapshot(max_file_bytes, max_files, exclude)

    def _snapshot(self, max_file_bytes: int, max_files: int, exclude: tuple[str, ...]) -> Snapshot:  # noqa: C901
        # This loop runs once per file of the workspace on every checkpoint, so
        # it is written for speed: paths stay bytes as git wrote them (decoding
        # 10,000 of them costs more than the loop), file types are tested with
        # plain bit masks, and only what is reported is decoded.
        indexed, changed, others, not_covered = self._listing(max_files, exclude)
        update: list[bytes] = []
        drop: list[bytes] = []
        exact: dict[bytes, int] = {}  # regular file -> permission bits (with the type's bit)
        covered = 0
        root = os.open(self.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
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
            self.git("update-index", "-z", "--force-remove", "--stdin", input=_nul(drop))
        if update:
            done = self.run(
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
        tree = self.git("write-tree").decode().strip()
        return Snapshot(tree, modes_of(exact), tuple(sorted(not_covered)), covered)

    def _listing(
        self, max_files: int, exclude: tuple[str, ...]
    ) -> tuple[set[bytes], set[bytes], list[bytes], list[NotCovered]]:
        """Paths in the index, those that changed, new ones, and folders git could not read."""
        args = ["ls-files", "-z", "-c", "-o", "-m", "-t", "--exclude-standard", "--", "."]
        args += [f":(exclude,literal){path}" for path in exclude]
        indexed: set[bytes] = set()
        changed: set[bytes] = set()
        others: list[bytes] = []
        with tempfile.TemporaryFile() as errors:
            proc = subprocess.Popen(
                self.command(*args),
                cwd=self.workspace,
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,
            )
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
                reason = _first_line(said) or f"exit status {status}"
                raise CheckpointError(f"checkpoint store: git ls-files failed: {reason}")
        # git skips a folder it cannot open with a warning: named, never a silent gap.
        unreadable = [
            NotCovered(_text(m[1]).rstrip("/"), "a folder that cannot be read")
            for m in re.finditer(rb"could not open directory '(.*?)': ", said)
        ]
        return indexed, changed, others, unreadable

    # -- commits and refs --------------------------------------------------

    def hash_blob(self, data: bytes, stored: Iterable[str] = ()) -> str:
        """Store ``data`` as a blob; its id. ``stored``: ids known to be in the store already.

        The store uses SHA-1 ids (made by ``git init`` with no configuration),
        so the id is computed here first, and a blob a kept checkpoint already
        holds is not written again (one git run less per checkpoint).
        """
        oid = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        if oid in stored:
            return oid
        return self.git("hash-object", "-w", "--stdin", input=data).decode().strip()

    def commit(self, tree: str, message: str) -> str:
        return self.git("commit-tree", tree, "-F", "-", input=message.encode()).decode().strip()

    def create_refs(self, refs: Mapping[str, str]) -> None:
        """Create refs that must not exist yet, all or none."""
        lines = "".join(f"create {name} {oid}\n" for name, oid in refs.items())
        self.git("update-ref", "--stdin", input=lines.encode())

    def delete_refs(self, names: Iterable[str]) -> None:
        lines = "".join(f"delete {name}\n" for name in names)
        if lines:
            self.git("update-ref", "--stdin", input=lines.encode())

    def commits(self, count: int | None = None) -> list[tuple[str, str, str, str]]:
        """``(ref, commit, tree, message)`` of the checkpoint refs, oldest first.

        ``count`` keeps only the newest ones (the names sort by number).
        """
        if not self.exists():
            return []
        args = ["for-each-ref", "--format=%(refname)%00%(objectname)%00%(tree)%00%(contents)%01"]
        if count is not None:
            args += ["--sort=-refname", f"--count={count}"]
        out = self.git(*args, REF_PREFIX)
        rows = []
        for record in out.split(b"\x01\n"):
            if not record:
                continue
            ref, commit, tree, message = record.split(b"\0", 3)
            rows.append((ref.decode(), commit.decode(), tree.decode(), message.decode()))
        if count is not None:
            rows.reverse()
        return rows

    # -- reading trees and blobs -------------------------------------------

    def diffs(
        self, pairs: Iterable[tuple[str, str]], numstat: bool = False
    ) -> dict[tuple[str, str], list[RawChange]]:
        """What differs between each pair of trees, in one git run."""
        pairs = list(pairs)
        wanted = list(dict.fromkeys(pair for pair in pairs if pair[0] != pair[1]))
        result: dict[tuple[str, str], list[RawChange]] = {pair: [] for pair in pairs}
        if not wanted:
            return result
        args = ["diff-tree", "--stdin", "-r", "-z", "--raw", "--no-renames", "--no-ext-diff"]
        if numstat:
            args.append("--numstat")
        out = self.git(*args, input="".join(f"{a} {b}\n" for a, b in wanted).encode())
        current: list[RawChange] | None = None
        by_path: dict[str, int] = {}
        pos = 0
        while pos < len(out):
            header = _DIFF_HEADER.match(out, pos)
            if header:
                current = result[(header[1].decode(), header[2].decode())]
                by_path = {}
                pos = header.end()
                continue
            if current is None:
                raise CheckpointError("checkpoint store: git diff-tree answered out of order")
            if out[pos : pos + 1] == b":":
                end = out.index(b"\0", pos)
                old_mode, new_mode, old_oid, new_oid, status = out[pos + 1 : end].decode().split()
                path_end = out.index(b"\0", end + 1)
                path = os.fsdecode(out[end + 1 : path_end])
                pos = path_end + 1
                old = None if old_mode == "000000" else Entry(old_mode, old_oid)
                new = None if new_mode == "000000" else Entry(new_mode, new_oid)
                by_path[path] = len(current)
                current.append(RawChange(path, status[:1], old, new))
                continue
            stats = _NUMSTAT.match(out, pos)
            if not stats:
                raise CheckpointError("checkpoint store: cannot read git diff-tree's answer")
            path_end = out.index(b"\0", stats.end())
            path = os.fsdecode(out[stats.end() : path_end])
            pos = path_end + 1
            if path in by_path:
                index = by_path[path]
                added, deleted = (None if n == b"-" else int(n) for n in stats.groups())
                current[index] = current[index]._replace(added=added, deleted=deleted)
        return result

    def entries(self, tree: str, paths: Iterable[str] | None = None) -> dict[str, Entry]:
        """The files of ``tree`` (only ``paths``, when given) by path."""
        args = ["ls-tree", "-r", "-z", "--full-tree", tree]
        selected = None if paths is None else list(paths)
        if selected is not None:
            if not selected:
                return {}
            args += ["--", *(f":(literal){p}" for p in selected)]
        out = self.git(*args)
        found: dict[str, Entry] = {}
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, path = record.split(b"\t", 1)
            mode, kind, oid = meta.decode().split()
            if kind == "blob":
                found[os.fsdecode(path)] = Entry(mode, oid)
        return found

    def read_blobs(self, oids: Iterable[str]) -> dict[str, bytes]:
        """Small blobs (metadata) by id, in one git run."""
        wanted = list(dict.fromkeys(oids))
        found: dict[str, bytes] = {}
        if not wanted:
            return found
        with self.blob_reader() as read:
            for oid in wanted:
                found[oid] = b"".join(read(oid))
        return found

    @contextlib.contextmanager
    def blob_reader(self) -> Iterator[Callable[[str], Iterator[bytes]]]:
        """A function giving a blob's bytes in chunks (never the whole of a large file at once)."""
        proc = subprocess.Popen(
            self.command("cat-file", "--batch"),
            cwd=self.cwd,
            env=self.environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

        def read(oid: str) -> Iterator[bytes]:
            proc.stdin.write(oid.encode() + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise CheckpointError(f"checkpoint store: object {oid} is missing or not a file")
            left = int(header[2])
            while left:
                chunk = proc.stdout.read(min(left, 1 << 20))
                if not chunk:
                    raise CheckpointError(f"checkpoint store: object {oid} ended early")
                left -= len(chunk)
                yield chunk
            proc.stdout.read(1)  # the newline after each object

        try:
            yield read
        finally:
            with contextlib.suppress(OSError):
                proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()

    def diff_text(self, old: str, new: str, paths: Iterable[str] | None = None) -> str:
        """A unified diff from tree ``old`` to tree ``new``; never a textconv or external tool."""
        args = [
            "diff-tree",
            "-p",
            "-r",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            old,
            new,
        ]
        if paths is not None:
            selected = list(paths)
            if not selected:
                return ""
            args += ["--", *(f":(literal){p}" for p in selected)]
        return self.git(*args).decode("utf-8", "replace")


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


def read_project_refs(workspace: Path) -> ProjectRefs | None:
    """The HEAD and refs of the git repository holding ``workspace`` (None: there is none).

    Read as files, the way git's files backend keeps them (loose refs over
    ``packed-refs``; a linked worktree's HEAD in its own folder, the rest in
    the common one): nothing of the project's configuration is read and no
    git process runs in its repository. A repository keeping refs in a
    reftable is read with ``git for-each-ref`` in the isolated environment.
    A repository that cannot be read gives ``error``, never an exception.
    """
    git_dir = _find_git_dir(workspace)
    if git_dir is None:
        return None
    try:
        common = git_dir
        with contextlib.suppress(FileNotFoundError):
            pointer = (git_dir / "commondir").read_text().strip()
            common = (git_dir / pointer).resolve()
        if (common / "reftable").is_dir():
            return ProjectRefs(str(git_dir), _refs_through_git(git_dir))
        refs: dict[str, str] = {}
        with contextlib.suppress(FileNotFoundError):
            for line in (common / "packed-refs").read_text(errors="replace").splitlines():
                if line and line[0] not in "#^":
                    oid, _, name = line.partition(" ")
                    refs[name] = oid
        for base in {common, git_dir}:
            folder = base / "refs"
            for dirpath, _dirs, files in os.walk(folder):
                for name in files:
                    full = Path(dirpath) / name
                    if name.endswith(".lock"):
                        continue
                    with contextlib.suppress(OSError):
                        value = full.read_text(errors="replace").strip()
                        refs[full.relative_to(base).as_posix()] = value
        head = (git_dir / "HEAD").read_text(errors="replace").strip()
        refs["HEAD"] = head
        return ProjectRefs(str(git_dir), refs)
    except OSError as exc:
        return ProjectRefs(str(git_dir), {}, f"cannot read {git_dir}: {exc.strerror or exc}")
    except CheckpointError as exc:
        return ProjectRefs(str(git_dir), {}, str(exc))


def _refs_through_git(git_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_DIR=str(git_dir),
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_OPTIONAL_LOCKS="0",
        LC_ALL="C",
    )
    options = [part for item in _ISOLATION[:4] for part in ("-c", item)]
    refs: dict[str, str] = {}
    for args in (
        ["for-each-ref", "--format=%(objectname) %(refname)"],
        ["symbolic-ref", "-q", "HEAD"],
        ["rev-parse", "-q", "--verify", "HEAD"],
    ):
        done = subprocess.run(
            [git_executable(), *options, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT,
        )
        out = done.stdout.decode(errors="replace").strip()
        if args[0] == "for-each-ref":
            if done.returncode != 0:
                raise CheckpointError(f"cannot read the refs of {git_dir}: {_reason(done)}")
            for line in out.splitlines():
                oid, _, name = line.partition(" ")
                refs[name] = oid
        elif done.returncode == 0 and out and "HEAD" not in refs:
            refs["HEAD"] = f"ref: {out}" if args[0] == "symbolic-ref" else out
    return refs


def _find_git_dir(workspace: Path) -> Path | None:
    for folder in (workspace, *workspace.parents):
        dot_git = folder / ".git"
        try:
            if dot_git.is_dir():
                return dot_git
            if dot_git.is_file():
                text = dot_git.read_text(errors="replace").strip()
                if text.startswith("gitdir:"):
                    return (folder / text[len("gitdir:") :].strip()).resolve()
                return None
        except OSError:
            return None
    return None


def folder_size(folder: Path) -> int:
    """Bytes the files under ``folder`` take on disk."""
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(dirpath, name))
                total += getattr(st, "st_blocks", 0) * 512 or st.st_size
    return total


def remove_folder(folder: Path) -> None:
    """Remove a store's folder: renamed aside first, so a half-removed store is never read."""
    if not folder.exists():
        return
    aside = folder.with_name(f".{folder.name}.removed-{os.getpid()}")
    try:
        os.rename(folder, aside)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise CheckpointError(f"cannot remove {folder}: {exc.strerror}") from None
        return
    shutil.rmtree(aside, ignore_errors=True)


def _nul(paths: Iterable[bytes]) -> bytes:
    return b"".join(p + b"\0" for p in paths)


def _text(path: bytes) -> str:
    return os.fsdecode(path)


def _first_line(raw: bytes) -> str:
    lines = [line.strip() for line in raw.decode(errors="replace").splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    line = (fatal or lines or [""])[0]
    return line.removeprefix("fatal: ").removeprefix("error: ")


def _reason(done: subprocess.CompletedProcess) -> str:
    return _first_line(done.stderr or b"") or f"exit status {done.returncode}"


def write_json(data: Any) -> str:
    """Compact, stable JSON for metadata.

    ASCII with escapes: a file name that is not UTF-8 is held as lone
    surrogates (``os.fsdecode``), which only an escape carries through intact.
    """
    return json.dumps(data, sort_keys=True, separators=(",", ":"))
