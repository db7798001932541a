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
  (:func:`mdagent.rewind.projectrefs.read_project_refs`).
- **Never the person's configuration or filters.** Global and system
  configuration and attributes are off (``GIT_CONFIG_GLOBAL=/dev/null``,
  ``GIT_CONFIG_NOSYSTEM``, ``GIT_ATTR_NOSYSTEM``), and so are the default
  global attributes and ignore files, hooks and fsmonitor (``-c`` options on
  every run, over the store's own config). The store's ``info/attributes``,
  which outranks a project's ``.gitattributes``, unsets every attribute that
  changes bytes on the way in or out (text, eol, ident, filter,
  working-tree-encoding) and every diff driver: a project's filter or
  textconv never runs, and a file is stored byte for byte.
- **What a snapshot covers**, and how it stays cheap: :mod:`mdagent.rewind.snapshot`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
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
    """One workspace's private repository: running git, commits, refs, diffs, blobs.

    A snapshot of the workspace is taken into it by
    :func:`mdagent.rewind.snapshot.take_snapshot`.

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

    def start(self, *args: str, cwd: Path, stderr: Any) -> subprocess.Popen:
        """Start git in the store, its output on a pipe to read as it comes (the caller waits for it)."""
        return subprocess.Popen(
            self.command(*args),
            cwd=cwd,
            env=self.environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )

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


def refs_through_git(git_dir: Path) -> dict[str, str]:
    """The refs of a repository that keeps them in a reftable: git reads them, isolated."""
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


def first_line(raw: bytes) -> str:
    """The line of git's stderr that says why it failed (a ``fatal:`` or ``error:`` one first)."""
    lines = [line.strip() for line in raw.decode(errors="replace").splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    line = (fatal or lines or [""])[0]
    return line.removeprefix("fatal: ").removeprefix("error: ")


def _reason(done: subprocess.CompletedProcess) -> str:
    return first_line(done.stderr or b"") or f"exit status {done.returncode}"


def write_json(data: Any) -> str:
    """Compact, stable JSON for metadata.

    ASCII with escapes: a file name that is not UTF-8 is held as lone
    surrogates (``os.fsdecode``), which only an escape carries through intact.
    """
    return json.dumps(data, sort_keys=True, separators=(",", ":"))
