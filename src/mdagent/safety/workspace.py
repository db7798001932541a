"""Keeping file tools inside the workspace.

The workspace is the working directory of the call (``ctx.workdir``) plus any
extra roots the settings grant (``policy.paths``). A person's relative paths
start in the folder the command was typed in (:func:`base_for`,
:func:`person_arguments`); the workspace still confines them. A path is judged by where
it really leads: ``..`` and symlinks are resolved first, so neither
``../outside`` nor a link pointing out of the workspace gets through.

A check alone leaves a race: a folder swapped for a symlink between the check
and the open would redirect the open outside. So the file tools open what
they checked through :func:`open_parent` and :func:`open_entry`, which walk
the *resolved* path from its root one component at a time, never following a
symlink (``openat`` with ``O_NOFOLLOW``), and then work inside the folder
descriptor they hold. A symlink that appears after the check fails the call
instead of being followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from mdagent.core.catalog import PATH_ARGUMENTS
from mdagent.core.errors import PolicyDenied

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any


def confine(
    path: str | os.PathLike[str], root: str | Path, extra_roots: Iterable[str | Path] = ()
) -> Path:
    """The resolved absolute path of ``path``, which must lie inside ``root`` or an extra root.

    ``path`` is relative to ``root`` unless absolute; ``~`` is expanded.
    Symlinks are followed (the target need not exist yet, so a file about to
    be created can be checked). Raises :class:`PolicyDenied` when the result
    is outside every root.
    """
    base = Path(root).expanduser().resolve()
    candidate = Path(os.fspath(path)).expanduser()
    if not candidate.is_absolute():
        candidate = base / candidate
    try:
        resolved = candidate.resolve(strict=False)
    except OSError as exc:  # a link swapped while it was being read (EINVAL), a loop
        raise PolicyDenied(f"cannot check {os.fspath(path)}: {exc.strerror or exc}") from exc
    roots = [base, *(Path(r).expanduser().resolve() for r in extra_roots)]
    if any(resolved == r or resolved.is_relative_to(r) for r in roots):
        return resolved
    raise PolicyDenied(f"path escapes the workspace: {os.fspath(path)}")


def roots_from(ctx: Any) -> tuple[Path, tuple[Path, ...]]:
    """``(root, extra_roots)`` for a call: its workdir and the settings' ``policy.paths``.

    ``root`` is ``ctx.workdir`` (default: the current directory). Extra roots
    that are relative are taken relative to it; ``~`` is expanded.
    """
    root = Path(getattr(ctx, "workdir", None) or os.getcwd()).expanduser().resolve()
    settings = getattr(ctx, "settings", None) or {}
    policy = settings.get("policy") or {}
    paths = (policy.get("paths") or []) if hasattr(policy, "get") else []
    if isinstance(paths, str):
        paths = [paths]
    extras = []
    for entry in paths:
        extra = Path(str(entry)).expanduser()
        extras.append((extra if extra.is_absolute() else root / extra).resolve())
    return root, tuple(extras)


# Whose missing path means "here" (a shell's `find`, `grep -r`): the folder typed in.
_HERE_BY_DEFAULT = frozenset({"glob", "grep"})


def base_for(ctx: Any) -> Path:
    """The folder the relative paths of the call ``ctx`` serves start from, and its commands run in.

    A person's command starts where it was typed (``ctx.cwd``, a folder
    inside the workspace), as at a shell; every other call (a model's,
    another agent's, a declared test's) at the workspace root. A folder
    outside the workspace never becomes the base: the root does.
    """
    root = Path(getattr(ctx, "workdir", None) or os.getcwd()).expanduser().resolve()
    typed = getattr(ctx, "cwd", None)
    if not typed or getattr(ctx, "caller", None) != "person":
        return root
    here = Path(typed).expanduser().resolve()
    return here if here.is_relative_to(root) else root


def person_arguments(tool_name: str, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """``args`` of a person's call with a relative path made relative to the workspace root.

    ``read_file notes.txt`` typed in ``docs/`` reads ``docs/notes.txt``: the
    tool, the deny rules (written relative to the root), the hooks and the
    audit log all see that one path. Only the arguments of
    :data:`mdagent.core.catalog.PATH_ARGUMENTS` (a person's relative value is taken from
    the folder the command was typed in; a run: or shell: tool's arguments are left
    as typed: its process runs in that folder); absolute and ``~`` paths are left alone, and so
    is ``..`` (``docs/../../x`` still escapes and is refused; symlinks
    resolve as the shell would resolve them). Unchanged when the base is
    the root.
    """
    key = PATH_ARGUMENTS.get(tool_name)
    if key is None:
        return args
    base = base_for(ctx)
    root = Path(getattr(ctx, "workdir", None) or os.getcwd()).expanduser().resolve()
    if base == root:
        return args
    prefix = base.relative_to(root).as_posix()
    value = args.get(key)
    if not value and tool_name in _HERE_BY_DEFAULT:
        return {**args, key: prefix}
    if not isinstance(value, str) or not value:
        return args
    if value.startswith("~") or os.path.isabs(value):
        return args
    return {**args, key: f"{prefix}/{value}"}


def confine_for(ctx: Any, path: str | os.PathLike[str]) -> Path:
    """:func:`confine` ``path`` to the workspace of the call ``ctx`` serves.

    A relative ``path`` starts from :func:`base_for` (a person's command:
    the folder it was typed in), so a handler tool's path argument means what
    the person's shell completion offered.
    """
    root, extras = roots_from(ctx)
    candidate = Path(os.fspath(path)).expanduser()
    if not candidate.is_absolute():
        candidate = base_for(ctx) / candidate
    return confine(candidate, root, extras)


def display_path(path: Path, root: Path) -> str:
    """``path`` as a user would type it: relative to ``root`` when inside, else absolute."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return str(path)
    return rel.as_posix() if rel.parts else "."


# A folder entered by the walk: never through a symlink, never kept open by a child.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _swapped(path: Path, name: str) -> PolicyDenied:
    return PolicyDenied(
        f"path changed while it was being opened: {name!r} in {path} became a symlink"
    )


def _raise_if_link(exc: OSError, dir_fd: int, name: str, path: Path) -> None:
    """Turn the error ``O_NOFOLLOW`` gives for a symlink into a refusal naming the race."""
    if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return
    with contextlib.suppress(OSError):
        if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise _swapped(path, name) from exc


def _enter(dir_fd: int, name: str, path: Path, create: bool) -> int:
    """The folder ``name`` inside ``dir_fd``, opened without following a symlink."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        _raise_if_link(exc, dir_fd, name, path)
        raise
    with contextlib.suppress(FileExistsError):  # made meanwhile: opened like any other
        os.mkdir(name, 0o777, dir_fd=dir_fd)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        _raise_if_link(exc, dir_fd, name, path)
        raise


@contextlib.contextmanager
def open_parent(
    path: Path, root: str | Path, extra_roots: Iterable[str | Path] = (), *, create: bool = False
) -> Iterator[tuple[int, str]]:
    """``(folder_fd, name)`` for a path :func:`confine` returned, opened without following symlinks.

    The walk starts at the (deepest) root holding ``path`` and enters each
    folder below it with ``O_NOFOLLOW``; ``create`` makes missing folders on
    the way. ``name`` is the last component (``"."`` for a root itself), to be
    opened relative to ``folder_fd`` with :func:`open_entry` or any
    ``dir_fd=`` call. The descriptor is closed on leaving the block.
    Raises :class:`PolicyDenied` when a component is now a symlink (it was
    not when ``path`` was resolved), :class:`FileNotFoundError` or
    :class:`NotADirectoryError` when a folder is missing or is a file.
    """
    roots = [Path(r).expanduser().resolve() for r in (root, *extra_roots)]
    holders = [r for r in roots if path == r or path.is_relative_to(r)]
    if not holders:
        raise PolicyDenied(f"path escapes the workspace: {path}")
    anchor = max(holders, key=lambda r: len(r.parts))
    parts = path.relative_to(anchor).parts
    # The root itself was resolved by the caller and is not the model's to swap.
    fd = os.open(anchor, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = _enter(fd, part, path, create)
            os.close(fd)
            fd = inner
        yield fd, parts[-1] if parts else "."
    finally:
        os.close(fd)


def open_entry(dir_fd: int, name: str, flags: int, path: Path, mode: int = 0o666) -> int:
    """``os.open(name, flags, dir_fd=dir_fd)`` that refuses to follow a symlink at ``name``."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        _raise_if_link(exc, dir_fd, name, path)
        raise
