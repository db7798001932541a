"""The project's own repository, read without writing: its HEAD and refs, as files.

A checkpoint notes where the project's branches pointed (:class:`ProjectRefs`);
nothing of the project's repository is written, and no git process runs in it
but one in the isolated environment, for a repository that keeps its refs in a
reftable (:func:`mdagent.rewind.checkpointstore.refs_through_git`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from mdagent.core.records import Record
from mdagent.rewind.checkpointstore import CheckpointError, refs_through_git


class ProjectRefs(Record):
    """The project's own HEAD and refs, read without writing anything."""

    git_dir: str
    refs: dict  # "HEAD" -> "ref: refs/heads/main" or an id; "refs/..." -> id
    error: str = ""


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
            return ProjectRefs(str(git_dir), refs_through_git(git_dir))
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
