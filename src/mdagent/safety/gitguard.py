"""The files of a git folder git reads as configuration or as a pointer elsewhere,
checked around each confined command and put back when the command changed them.

The sandbox binds a git folder's ``config``, ``config.worktree``, ``hooks`` and
``info`` read-only where they exist (:mod:`mdagent.safety.protected`), but git also
follows files that usually do not exist, and a path that does not exist gets no
mount point: ``commondir`` (the folder whose ``config`` and ``hooks`` git uses),
``objects/info/alternates``, a worktree's ``gitdir``, a submodule's ``config``
under ``modules/``, a missing ``hooks`` folder, ``config.worktree``. A script
the model wrote could create one, and the person's next ``git status`` would
run what it names. So :func:`snapshot` reads them before a model's command and
:func:`restore` compares after it: anything created, changed, replaced or
removed is put back as it was, and the command's result says so. A rebase's
todo list is put back only when it gained ``exec`` lines (a rebase the model
runs keeps its state). Fail closed: a file that cannot be put back is named.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import threading
from collections.abc import Iterable

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

# Paths inside a git folder (relative) whose contents point git elsewhere or name programs.
_FILES = (
    "commondir",
    "gitdir",
    "config",
    "config.worktree",
    "objects/info/alternates",
    "objects/info/http-alternates",
)
# Folders whose every file git reads as a program or configuration.
_FOLDERS = ("hooks", "info")
# Folders holding further git folders (linked worktrees, submodules).
_NESTED = ("worktrees", "modules")
# The folders on the way to those files: watched so a link made of one is seen.
_PARENTS = ("objects", "objects/info", "rebase-merge", "sequencer", "worktrees", "modules")
# A rebase's or cherry-pick's list of steps: `exec` lines run commands.
_TODOS = ("rebase-merge/git-rebase-todo", "sequencer/todo")
_EXEC_LINE = re.compile(rb"^\s*(x|exec)(\s|$)", re.M)
#: The largest file whose bytes are kept to put back; a larger one is only named.
MAX_BYTES = 1 << 20
_MAX_ENTRIES = 2048

# (kind, data, mode): ("file", bytes, mode), ("link", target, 0), ("folder", b"", mode),
# ("large", sha256, mode) for a file too big to keep; None: not there.
State = tuple[str, bytes, int] | None


def _state(path: str) -> State:
    try:
        info = os.lstat(path)
        mode = stat.S_IMODE(info.st_mode)
        if stat.S_ISLNK(info.st_mode):
            return ("link", os.readlink(path).encode(), 0)
        if stat.S_ISDIR(info.st_mode):
            return ("folder", b"", mode)
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
            if len(data) <= MAX_BYTES:
                return ("file", data, mode)
            digest = hashlib.sha256(data)
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
            return ("large", digest.digest(), mode)
    except FileNotFoundError:
        return None
    except OSError:
        return ("unreadable", b"", 0)


def _watched(git_dir: str, depth: int = 0) -> list[str]:
    """The paths of ``git_dir`` to watch: existing or not, and what its folders hold."""
    out = [os.path.join(git_dir, f) for f in (*_FILES, *_FOLDERS, *_TODOS, *_PARENTS)]
    for folder in _FOLDERS:
        top = os.path.join(git_dir, folder)
        if os.path.islink(top):
            continue  # never walked through: what it points to is not the git folder's
        for here, dirs, files in os.walk(top):
            out += [os.path.join(here, n) for n in (*dirs, *files)]
            if len(out) > _MAX_ENTRIES:
                return out
    if depth < 4:
        for nested in _NESTED:
            top = os.path.join(git_dir, nested)
            try:
                names = sorted(os.listdir(top))
            except OSError:
                continue
            for name in names[:64]:
                inner = os.path.join(top, name)
                out.append(inner)
                if os.path.isdir(inner) and not os.path.islink(inner):
                    out += _watched(inner, depth + 1)
    return out


def snapshot(git_dirs: Iterable[str]) -> dict[str, State]:
    """What each watched path of ``git_dirs`` holds now (None: not there)."""
    found: dict[str, State] = {}
    for git_dir in git_dirs:
        if os.path.isdir(git_dir):
            for path in _watched(git_dir):
                found.setdefault(path, _state(path))
    return found


def restore(before: dict[str, State], git_dirs: Iterable[str]) -> list[str]:
    """Put back every watched path that differs from ``before``; the paths changed.

    A path that cannot be put back is named with `` (could not be put back)``.
    Nothing is done through a symbolic link: a folder of the git folder the
    command turned into one (``objects/info -> ~/.ssh``) is put back as a
    folder first, and the state is read again, so no file outside is
    written or removed.
    """
    git_dirs = list(git_dirs)
    changed: list[str] = []
    failed: set[str] = set()
    for _ in range(_MAX_ENTRIES):
        now = snapshot(git_dirs)
        linked = _linked_parent(set(before) | set(now), git_dirs, before)
        if linked is not None:
            try:
                os.unlink(linked)
                os.mkdir(linked, 0o755)
                changed.append(linked)
                continue
            except OSError:
                return sorted({*changed, f"{linked} (could not be put back)"})
        pending = [
            p
            for p in set(before) | set(now)
            if p not in failed
            and before.get(p) != now.get(p)
            and not (p.endswith(_TODOS) and not _gained_exec(before.get(p), now.get(p)))
        ]
        if not pending:
            break
        # Deepest first: a file in a new folder goes before the folder.
        for path in sorted(pending, key=lambda p: -p.count(os.sep)):
            try:
                _put_back(path, before.get(path), now.get(path))
                changed.append(path)
            except OSError:
                failed.add(path)
                changed.append(f"{path} (could not be put back)")
        break
    return sorted(set(changed))


def _linked_parent(
    paths: Iterable[str], git_dirs: list[str], before: dict[str, State]
) -> str | None:
    """A folder inside a git folder, between it and a watched path, that is a symbolic
    link now and was not before (a link that was there stays: it is the person's)."""
    for path in sorted(paths, key=lambda p: p.count(os.sep)):
        top = next((g for g in git_dirs if path.startswith(g.rstrip(os.sep) + os.sep)), None)
        if top is None:
            continue
        here = os.path.dirname(path)
        chain = []
        while len(here) > len(top.rstrip(os.sep)):
            chain.append(here)
            here = os.path.dirname(here)
        for folder in reversed(chain):  # shallowest first
            was = before.get(folder)
            if os.path.islink(folder) and not (was is not None and was[0] == "link"):
                return folder
    return None


def _gained_exec(old: State, new: State) -> bool:
    had = bool(old and old[0] == "file" and _EXEC_LINE.search(old[1]))
    has = bool(new and (new[0] != "file" or _EXEC_LINE.search(new[1])))
    return has and not had


def _put_back(path: str, old: State, new: State) -> None:
    if old is not None and old[0] not in ("file", "link", "folder"):
        raise OSError(f"cannot restore {path}")  # before removing anything: fail closed, named
    if new is not None:
        if new[0] == "folder":
            if old is not None and old[0] == "folder":
                return  # its entries are compared one by one
            shutil.rmtree(path)
        else:
            os.unlink(path)
    if old is None:
        return
    kind, data, mode = old
    if kind == "folder":
        os.makedirs(path, mode=mode, exist_ok=True)
    elif kind == "link":
        os.symlink(data.decode(), path)
    elif kind == "file":
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "wb") as handle:
            handle.write(data)
        os.chmod(path, mode)
    else:  # too large to have kept, or unreadable before: fail closed, named
        raise OSError(f"cannot restore {path}")


# -- around a confined call (mdagent.tools.process) ----------------------------------------

# The state of git's pointer and configuration files taken when the first of
# the confined calls running at once started, per set of git folders, with how
# many run: a call that starts while another runs must not take that one's
# changes for the state to put back.
_GIT_BASELINES: dict[tuple[str, ...], list[Any]] = {}
_GIT_LOCK = threading.Lock()


def watch_git(ctx: Any) -> tuple[str, ...] | None:
    """The git folders of a confined call's workspace, their files' state taken
    before it runs unless a call running now took it."""
    from mdagent.safety.gitfolders import git_dirs_of
    from mdagent.safety.protectedfiles import protected_for
    from mdagent.safety.workspace import roots_from

    # Looked for again on each call: a repository made by an earlier call
    # (`git init`) is watched from the next one on.
    root, extras = roots_from(ctx)
    found = [
        *protected_for(ctx).git_dirs,
        *(g for r in (root, *extras) for g in git_dirs_of(str(r))),
    ]
    git_dirs = tuple(dict.fromkeys(os.path.realpath(g) for g in found if os.path.isdir(g)))
    if not git_dirs:
        return None
    with _GIT_LOCK:
        entry = _GIT_BASELINES.get(git_dirs)
        if entry is None:
            _GIT_BASELINES[git_dirs] = [1, snapshot(git_dirs)]
        else:
            entry[0] += 1
    return git_dirs


def put_back_git(git_dirs: tuple[str, ...] | None) -> str:
    """What a confined command changed of git's configuration and pointers, put back
    (:func:`restore`), said in one line; "" when nothing."""
    if git_dirs is None:
        return ""
    with _GIT_LOCK:
        entry = _GIT_BASELINES[git_dirs]
        changed = restore(entry[1], git_dirs)
        entry[0] -= 1
        if entry[0] == 0:
            del _GIT_BASELINES[git_dirs]
    if not changed:
        return ""
    return (
        f"the command changed {', '.join(changed)}, which git reads as its configuration or "
        "as a pointer to another git folder; put back as it was (a model's command may not "
        "change what git runs)"
    )
