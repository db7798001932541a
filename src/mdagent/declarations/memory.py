"""Memory files: the instructions ``AGENTS.md``, ``CLAUDE.md`` and ``GEMINI.md`` give a model.

Read as their agents read them (issue 34): the person's own first
(``~/.claude/CLAUDE.md``, ``~/.gemini/GEMINI.md``, ``$CODEX_HOME/AGENTS.md``),
then in a project every folder from the workspace root down to the current
one (``AGENTS.md``, ``CLAUDE.md``, ``GEMINI.md``, ``CLAUDE.local.md`` in each),
so the nearest, most specific instructions come last. Outside a project, the
nearest ``AGENTS.md`` above the current folder and the current folder's own.

A line's ``@path`` imports a file (Claude Code and Gemini CLI's syntax), up
to :data:`MAX_DEPTH` deep: a workspace file's imports stay inside the
workspace, a user-level file's inside the home folder, and code spans and
fenced blocks import nothing. Everything read together is capped at
:data:`MAX_CHARS`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

#: In each folder, in this order, and the interop source each belongs to (None: ours).
FOLDER_FILES = (
    ("AGENTS.md", None),
    ("CLAUDE.md", "claude-memory"),
    ("GEMINI.md", "gemini-memory"),
    ("CLAUDE.local.md", "claude-memory"),
)
MAX_DEPTH = 5
MAX_CHARS = 64_000
MAX_FILE = 1 << 20
_IMPORT = re.compile(r"(?<![\w@`/])@((?:~/|\.{1,2}/|/)?[\w.-]+(?:/[\w.-]+)*)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


class Memory:
    """One memory file read: where, what scope confines its imports, and its text."""

    def __init__(self, path: Path, scope: str, text: str, notes: list[str]) -> None:
        self.path = path
        self.scope = scope  # "workspace" | "user"
        self.text = text
        self.notes = notes


def memory_paths(
    cwd: Path,
    workdir: Path,
    settings: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] = os.environ,
) -> list[tuple[Path, str]]:
    """``(file, scope)`` of every memory file to read, in order (see the module docstring)."""
    from mdagent.core.foreignpaths import codex_home, enabled

    home = Path(environ.get("HOME") or Path.home())
    found: list[tuple[Path, str]] = []
    for path, source in (
        (home / ".claude" / "CLAUDE.md", "claude-memory"),
        (home / ".gemini" / "GEMINI.md", "gemini-memory"),
        (codex_home(environ, home) / "AGENTS.md", "codex-memory"),
    ):
        if enabled(settings, source) and path.is_file():
            found.append((path, "user"))
    cwd = cwd.resolve()
    workdir = workdir.resolve()
    if _in_project(cwd, workdir):
        below = [cwd, *cwd.parents]
        folders = list(reversed(below[: below.index(workdir) + 1]))
        scope = "workspace"
    else:
        nearest = next((f for f in (cwd, *cwd.parents) if (f / "AGENTS.md").is_file()), None)
        if nearest is not None and nearest != cwd:
            found.append((nearest / "AGENTS.md", "workspace"))
        folders, scope = [cwd], "workspace"
    seen = {p.resolve() for p, _ in found}
    for folder in folders:
        for name, source in FOLDER_FILES:
            path = folder / name
            if source is not None and not enabled(settings, source):
                continue
            if path.is_file() and path.resolve() not in seen:
                seen.add(path.resolve())
                found.append((path, scope))
    return found


def _in_project(cwd: Path, workdir: Path) -> bool:
    """Whether ``cwd`` (resolved) is in a real project (``.agents/`` or ``.git``) at ``workdir``."""
    is_project = (workdir / ".agents").is_dir() or (workdir / ".git").exists()
    return is_project and (cwd == workdir or workdir in cwd.parents)


def read_memory(
    cwd: Path,
    workdir: Path,
    settings: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] = os.environ,
    denied: Callable[[str], str | None] | None = None,
) -> list[Memory]:
    """The memory files of :func:`memory_paths`, read with their imports, within the cap.

    ``denied`` says why ``read_file``'s deny rules refuse a file (None: they
    don't): an import is a read for the model, so the rules apply to it.
    """
    home = Path(environ.get("HOME") or Path.home()).resolve()
    budget = [MAX_CHARS]
    out = []
    inside = _in_project(cwd.resolve(), workdir.resolve())
    for path, scope in memory_paths(cwd, workdir, settings, environ):
        root = workdir.resolve() if scope == "workspace" and inside else home
        if scope == "workspace" and not inside:
            root = path.parent.resolve()  # outside a project: the file's own folder
        notes: list[str] = []
        if not path.resolve().is_relative_to(root):
            # A link in a cloned repository (CLAUDE.md -> ~/.aws/credentials) must not
            # send what it points to to the model: a memory file is text of its folder.
            where = "the workspace" if scope == "workspace" else "your home folder"
            text = f"[{path.name} not read: it is a link leading outside {where}]"
            out.append(Memory(path, scope, text, [text]))
            continue
        text = _expand(path, root, home, 0, notes, {path.resolve()}, denied).strip()
        if not text:
            continue
        if len(text) > budget[0]:
            text = text[: max(budget[0], 0)]
            notes.append(f"cut at {MAX_CHARS} characters of memory files in all")
            text += f"\n[memory cut: more than {MAX_CHARS} characters of memory files]"
        budget[0] -= len(text)
        out.append(Memory(path, scope, text, notes))
        if budget[0] <= 0:
            break
    return out


def _read(path: Path) -> str:
    with open(path, "rb") as fh:
        return fh.read(MAX_FILE).decode("utf-8", "replace").replace("\x00", "")


def _expand(
    path: Path, root: Path, home: Path, depth: int, notes: list[str], seen: set, denied=None
) -> str:
    try:
        text = _read(path)
    except OSError as err:
        notes.append(f"{path}: cannot read: {err.strerror or err}")
        return ""
    lines = []
    fenced = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced or "@" not in line:
            lines.append(line)
            continue
        spans = [m.span() for m in _CODE_SPAN.finditer(line)]

        def one(match: re.Match[str], spans=spans) -> str:
            if any(a <= match.start() < b for a, b in spans):
                return match.group(0)
            found = _import(match.group(1), path, root, home, depth, notes, seen, denied)
            return found or match.group(0)

        lines.append(_IMPORT.sub(one, line))
    return "\n".join(lines)


def _import(
    name: str,
    importer: Path,
    root: Path,
    home: Path,
    depth: int,
    notes: list[str],
    seen: set,
    denied: Callable[[str], str | None] | None,
) -> str | None:
    """The text ``@name`` imports, a note in its place when refused, None when it names no file."""
    if name.startswith("~/"):
        target = home / name[2:]
    elif name.startswith("/"):
        target = Path(name)
    else:
        target = importer.parent / name
    try:
        real = target.resolve()
    except (OSError, RuntimeError):
        return None
    if not real.is_file():
        return None  # an @mention, an address: text as written
    if not real.is_relative_to(root):
        where = "the workspace" if root != home else "your home folder"
        notes.append(f"{importer}: @{name} not imported: outside {where}")
        return f"[@{name} not imported: outside {where}]"
    if depth + 1 > MAX_DEPTH:
        notes.append(f"{importer}: @{name} not imported: imports nest at most {MAX_DEPTH} deep")
        return f"[@{name} not imported: imports nest at most {MAX_DEPTH} deep]"
    if real in seen:
        return f"[@{name}: imported already]"
    why = denied(str(real)) if denied is not None else None
    if why:
        notes.append(f"{importer}: @{name} not imported: {why}")
        return f"[@{name} not imported: {why}]"
    return _expand(real, root, home, depth + 1, notes, seen | {real}, denied).strip()
