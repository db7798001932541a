"""Keeping file tools inside the workspace.

The workspace is the working directory of the call (``ctx.workdir``) plus any
extra roots the settings grant (``policy.paths``). A path is judged by where
it really leads: ``..`` and symlinks are resolved first, so neither
``../outside`` nor a link pointing out of the workspace gets through.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mdagent.errors import PolicyDenied


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
    resolved = candidate.resolve(strict=False)
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


def confine_for(ctx: Any, path: str | os.PathLike[str]) -> Path:
    """:func:`confine` ``path`` to the workspace of the call ``ctx`` serves."""
    root, extras = roots_from(ctx)
    return confine(path, root, extras)


def display_path(path: Path, root: Path) -> str:
    """``path`` as a user would type it: relative to ``root`` when inside, else absolute."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return str(path)
    return rel.as_posix() if rel.parts else "."
