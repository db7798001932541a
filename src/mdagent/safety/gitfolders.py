"""Where a repository's git folders are: the ``.git`` above a folder, the folder a
``.git`` file points to, a worktree's common folder, and submodules' git folders.

Git's configuration and hooks in them name programs git runs, so
:mod:`mdagent.safety.protected` guards them and a namespace sandbox binds
their program-naming parts read-only; :mod:`mdagent.safety.gitguard` watches
the rest of them around a confined command.
"""

from __future__ import annotations

import os

# A git folder anywhere in the workspace: its config and hooks name programs
# that git runs (core.fsmonitor, core.pager, aliases, filters, hooks), so a
# model writing it could make an allowed `git status` run anything.
GIT_DIR = ".git"


def git_dirs_of(root: str) -> list[str]:
    """The git folder of the repository ``root`` is in, wherever it lives: a
    ``.git`` above the workspace, the folder a ``.git`` file points to
    (``gitdir: …``, a worktree or submodule), and a worktree's common folder."""
    here = root
    while True:
        dot_git = os.path.join(here, GIT_DIR)
        if os.path.isdir(dot_git):
            return [dot_git]
        if os.path.isfile(dot_git):
            out = [dot_git]
            try:
                with open(dot_git, encoding="utf-8", errors="replace") as handle:
                    line = handle.readline(4096).strip()
            except OSError:
                return out
            if line.startswith("gitdir:"):
                target = os.path.join(here, line[len("gitdir:") :].strip())
                out.append(target)
                try:
                    with open(os.path.join(target, "commondir"), encoding="utf-8") as handle:
                        out.append(os.path.join(target, handle.readline(4096).strip()))
                except OSError:
                    pass
            return out
        parent = os.path.dirname(here)
        if parent == here:
            return []
        here = parent


def git_top(folder: str) -> str:
    """The top of the git work tree ``folder`` is in (``folder`` itself if none)."""
    here = folder
    while True:
        if os.path.lexists(os.path.join(here, GIT_DIR)):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return folder
        here = parent


def submodule_git_dirs(git_dir: str, limit: int = 64) -> list[str]:
    """The git folders of submodules kept in ``git_dir/modules`` (nested ones too)."""
    out: list[str] = []
    pending = [os.path.join(git_dir, "modules")]
    while pending and len(out) < limit:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            if os.path.isfile(os.path.join(entry.path, "HEAD")):
                out.append(entry.path)
                pending.append(os.path.join(entry.path, "modules"))
            else:
                pending.append(entry.path)  # a submodule named with a slash: a/b
    return out
