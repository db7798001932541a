"""The search built-ins: ``glob`` (files by name) and ``grep`` (files by content).

Both walk the workspace the way git sees it: ``.gitignore`` files (the
root's and nested ones) are respected and ``.git/`` is never entered.
``grep`` hands the work to ripgrep when it is installed and falls back to
Python's ``re`` otherwise, with the same rules and the same result shape.

Either way the search runs in a child process (through
:func:`mdagent.tools.process.run_process`), so the tool's timeout and Ctrl-C stop
it — a pattern that backtracks forever included — and this process keeps
only a capped, line-clipped copy of its output: a match in a 200 MB line
costs the agent a few KiB.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mdagent.core.defaults import setting
from mdagent.core.errors import PolicyDenied
from mdagent.core.globs import gitignore_regex
from mdagent.safety.environment import env_for
from mdagent.safety.workspace import confine, display_path, roots_from

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

# One match line is shown up to this many characters: a hit in a minified
# bundle should not fill a model's context.
MAX_TEXT = 500
SNIFF_BYTES = 8192
# What the agent keeps of the searching child's output (head + tail, bytes).
_RG_MAX_OUTPUT = 8_000_000
# ripgrep cuts each printed line to this many bytes (MAX_TEXT characters of
# up to 4 bytes each); the Python search keeps as much of a long line's head.
_LINE_HEAD = 4 * MAX_TEXT
# The Python search reads _CHUNK bytes at a time and matches a line longer
# than _WINDOW in windows of that size, each overlapping the last by
# _OVERLAP (a match longer than that across a window edge is missed).
_CHUNK = 65536
_WINDOW = 1 << 20
_OVERLAP = 4096
_RG_CUT = re.compile(r" \[\.\.\. (?:omitted end of long line|\d+ more match(?:es)?)\]$")


# -- glob patterns -------------------------------------------------------------


def expand_braces(pattern: str) -> list[str]:
    """``"*.{py,md}"`` -> ``["*.py", "*.md"]`` (nested braces work; no comma: literal)."""
    depth = 0
    start = -1
    for i, ch in enumerate(pattern):
        if ch == "\\":
            continue
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                options = _split_top_level(pattern[start + 1 : i])
                if len(options) < 2:
                    continue
                head, tail = pattern[:start], pattern[i + 1 :]
                return [x for opt in options for x in expand_braces(head + opt + tail)]
    return [pattern]


def _split_top_level(body: str) -> list[str]:
    parts, depth, current = [], 0, []
    for ch in body:
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += ch == "{"
        depth -= ch == "}" and depth > 0
        current.append(ch)
    parts.append("".join(current))
    return parts


def glob_regex(pattern: str) -> re.Pattern[str]:
    """One compiled regex for ``pattern`` and all its brace expansions."""
    options = expand_braces(pattern.lstrip("/")) or [""]
    return re.compile("|".join(f"(?:{gitignore_regex(p)})" for p in options), re.DOTALL)


# -- .gitignore ------------------------------------------------------------------


@dataclass(frozen=True)
class IgnoreRule:
    """One line of a ``.gitignore``, ready to match paths."""

    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool  # contained a slash: matched against the whole path, not the name
    base: str  # folder of the .gitignore, relative to the walk's anchor ("" at the anchor)

    def matches(self, rel: str, is_dir: bool) -> bool:
        """Whether this rule speaks about ``rel`` (relative to the anchor)."""
        if self.dir_only and not is_dir:
            return False
        if self.base:
            if not rel.startswith(self.base + "/"):
                return False
            rel = rel[len(self.base) + 1 :]
        target = rel if self.anchored else rel.rpartition("/")[2]
        return self.regex.fullmatch(target) is not None


def parse_gitignore(text: str, base: str = "") -> list[IgnoreRule]:
    """The rules of one ``.gitignore`` whose folder is ``base``."""
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if raw.endswith("\\ "):  # an escaped trailing space is kept
            line = raw[:-2] + " "
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith(("\\!", "\\#")):  # a backslash escapes a literal ! or #
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        rules.append(
            IgnoreRule(
                re.compile(gitignore_regex(line), re.DOTALL), negate, dir_only, anchored, base
            )
        )
    return rules


def is_ignored(rules: list[IgnoreRule], rel: str, is_dir: bool) -> bool:
    """Git's verdict: the last rule that matches decides."""
    verdict = False
    for rule in rules:
        if rule.matches(rel, is_dir):
            verdict = not rule.negate
    return verdict


def _read_rules(folder: Path, base: str) -> list[IgnoreRule]:
    try:
        text = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return parse_gitignore(text, base)


def _anchor_for(start: Path, root: Path) -> Path:
    """Where ignore rules start: a git checkout at or below the workspace root, else the root.

    Rules are never read from above the workspace root (ripgrep may read
    more: it also honours parent folders' ignore files).
    """
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
        if folder == root:
            break
    return root if start == root or start.is_relative_to(root) else start


def walk_files(start: Path, root: Path, max_depth: int | None = None) -> Iterator[Path]:
    """Files under ``start`` (name-sorted, depth first) that git would not ignore.

    Symlinked folders are not followed (no loops, no escapes); ``.git`` is
    skipped. ``max_depth`` 0 means files directly in ``start`` only.
    """
    anchor = _anchor_for(start, root)
    prefix = start.relative_to(anchor).as_posix() if start != anchor else ""
    rules: list[IgnoreRule] = []
    # .gitignore files above the starting folder still apply inside it.
    if prefix:
        folder, rel = anchor, ""
        for part in prefix.split("/"):
            rules += _read_rules(folder, rel)
            folder, rel = folder / part, f"{rel}/{part}" if rel else part
    yield from _walk(start, prefix, rules, 0, max_depth)


def _walk(
    folder: Path, rel: str, rules: list[IgnoreRule], depth: int, max_depth: int | None
) -> Iterator[Path]:
    rules = rules + _read_rules(folder, rel)
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return  # unreadable folder: skipped, as git and ripgrep do
    for entry in entries:
        if entry.name == ".git":
            continue
        entry_rel = f"{rel}/{entry.name}" if rel else entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = not is_dir and entry.is_file()
        except OSError:
            continue
        if not (is_dir or is_file) or is_ignored(rules, entry_rel, is_dir):
            continue
        if is_dir:
            if max_depth is None or depth < max_depth:
                yield from _walk(Path(entry.path), entry_rel, rules, depth + 1, max_depth)
        else:
            yield Path(entry.path)


class IgnoreOracle:
    """Answers "would the walk from ``start`` skip this file?" for single paths.

    Used on ripgrep's results when a ``glob`` is given, because ripgrep lets
    ``-g`` globs override ``.gitignore`` and the Python walk does not.
    """

    def __init__(self, start: Path, root: Path) -> None:
        self.start = start
        self.anchor = _anchor_for(start, root)
        self._rules: dict[Path, list[IgnoreRule]] = {}

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.anchor).as_posix() if path != self.anchor else ""

    def rules_in(self, folder: Path) -> list[IgnoreRule]:
        """The rules that apply to the entries of ``folder``."""
        if folder not in self._rules:
            above = [] if folder == self.anchor else self.rules_in(folder.parent)
            self._rules[folder] = above + _read_rules(folder, self._rel(folder))
        return self._rules[folder]

    def ignored(self, path: Path) -> bool:
        """Whether ``path`` (a file below ``start``) or a folder between them is ignored."""
        if path == self.start or not path.is_relative_to(self.start):
            return False  # a file named explicitly is searched, as with the walk
        if not path.is_relative_to(self.anchor):
            return False
        folder = path.parent
        between = []
        while folder != self.start and folder.is_relative_to(self.start):
            between.append(folder)
            folder = folder.parent
        for sub in reversed(between):
            if sub.name == ".git" or is_ignored(self.rules_in(sub.parent), self._rel(sub), True):
                return True
        return is_ignored(self.rules_in(path.parent), self._rel(path), False)


# -- the tools -------------------------------------------------------------------


def _base(ctx: Any, path: str | None) -> tuple[Path, Path, list[Path]]:
    """``(base, root, extras)``; raises PolicyDenied for a path outside the workspace.

    Searching only reads: the folders of the skills the model may load count
    as inside (:func:`~mdagent.declarations.skills.skill_read_roots`).
    """
    root, extras = roots_from(ctx)
    if not path:
        return root, root, list(extras)
    try:
        return confine(path, root, extras), root, list(extras)
    except PolicyDenied:
        from mdagent.declarations.skills import (
            skill_read_roots,  # only for a path outside the workspace
        )

        skill_roots = skill_read_roots(ctx, path, root)
        if not skill_roots:
            raise
        return confine(path, root, (*extras, *skill_roots)), root, [*extras, *skill_roots]


def glob_tool(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Files under ``path`` matching ``pattern``, sorted, .gitignore respected."""
    pattern = args["pattern"].strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    try:
        base, root, _ = _base(ctx, args.get("path"))
    except PolicyDenied as exc:
        return {"error": str(exc), "code": "DENIED"}
    if not base.is_dir():
        return {"error": f"not a directory: {args.get('path')}"}
    if not pattern:
        return {"error": "empty pattern"}
    options = expand_braces(pattern.lstrip("/"))
    # Without "**" a pattern cannot match deeper than its own slashes.
    deepest = None if "**" in pattern else max(p.count("/") for p in options)
    regex = glob_regex(pattern)
    cap = int(setting(ctx.settings, "glob", "max_files"))
    found = []
    for file in walk_files(base, root, deepest):
        if regex.fullmatch(file.relative_to(base).as_posix()):
            found.append(display_path(file, root))
    found.sort()
    truncated = len(found) > cap
    files = found[:cap]
    result: dict[str, Any] = {"files": files, "output": "\n".join(files), "truncated": truncated}
    if truncated:
        result["total"] = len(found)
    return result


def ripgrep() -> str | None:
    """The ``rg`` executable, or ``None`` (tests patch this to force the Python path)."""
    return shutil.which("rg")


def grep_tool(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Lines matching the regex ``pattern`` under ``path``: ``path:line:text``."""
    try:
        base, root, _ = _base(ctx, args.get("path"))
    except PolicyDenied as exc:
        return {"error": str(exc), "code": "DENIED"}
    if not base.exists():
        return {"error": f"not found: {args.get('path')}"}
    cap = int(setting(ctx.settings, "grep", "max_matches"))
    found = None
    rg = ripgrep()
    if rg:
        found = _grep_ripgrep(rg, args, ctx, base, root, cap)
    if found is None:  # no ripgrep, or a regex only Python understands
        found = _grep_python_child(args, ctx, base, root, cap)
    if "error" in found:
        return found
    matches = found["matches"]
    truncated = found["truncated"] or len(matches) > cap
    matches = matches[:cap]
    lines = [f"{m['path']}:{m['line']}:{m['text']}" for m in matches]
    return {"matches": matches, "output": "\n".join(lines), "truncated": truncated}


def _run_search(argv: list[str], ctx: Any, root: Path, stdin_data: bytes | None = None) -> Any:
    """Run a searching child with grep's timeout and cancel; ``(result, error dict or None)``."""
    from mdagent.tools.process import run_process

    timeout = float(setting(ctx.settings, "grep", "timeout"))
    done = run_process(
        argv,
        cwd=str(root),
        env=env_for(ctx),
        timeout=timeout,
        max_output=_RG_MAX_OUTPUT,
        cancel=getattr(ctx, "cancel", None),
        stdin_data=stdin_data,
    )
    if done.timed_out:
        return done, {"error": f"grep timed out after {timeout:g} s", "timed_out": True}
    if done.interrupted:
        return done, {"error": "interrupted", "interrupted": True}
    return done, None


def _clip(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " [...]"


def _file_filter(glob: str | None) -> Any:
    """A predicate on a base-relative path for grep's ``glob`` (ripgrep's ``-g`` rules)."""
    if not glob:
        return lambda rel: True
    negate = glob.startswith("!")
    pattern = glob[1:] if negate else glob
    regex = glob_regex(pattern)
    by_name = "/" not in pattern.strip("/")

    def accept(rel: str) -> bool:
        hit = regex.fullmatch(rel.rpartition("/")[2] if by_name else rel) is not None
        return hit != negate

    return accept


# The child that runs the Python search: -P keeps the workspace (its cwd) off
# sys.path, so a folder there named like a module cannot be imported instead.
_CHILD = "from mdagent.tools.builtins.search import grep_child; grep_child()"


def _grep_python_child(
    args: dict[str, Any], ctx: Any, base: Path, root: Path, cap: int
) -> dict[str, Any]:
    """:func:`grep_python` in a child process, so a runaway regex meets the timeout."""
    flags = re.IGNORECASE if args.get("ignore_case") else 0
    try:
        re.compile(args["pattern"], flags)
    except re.error as exc:
        return {"error": f"invalid regex {args['pattern']!r}: {exc}"}
    job = {"args": args, "base": str(base), "root": str(root), "cap": cap}
    done, failed = _run_search(
        [sys.executable, "-P", "-c", _CHILD], ctx, root, json.dumps(job).encode()
    )
    if failed:
        return failed
    try:
        found = json.loads(done.stdout)
    except ValueError:
        reason = done.stderr.strip().splitlines() or [f"exit status {done.exit_code}"]
        return {"error": f"grep failed: {reason[-1]}"}
    return found


def grep_child() -> None:
    """The child's side: a JSON job on stdin, :func:`grep_python`'s result as JSON on stdout."""
    job = json.load(sys.stdin)
    found = grep_python(job["args"], Path(job["base"]), Path(job["root"]), job["cap"])
    sys.stdout.write(json.dumps(found))


def grep_python(args: dict[str, Any], base: Path, root: Path, cap: int) -> dict[str, Any]:
    """grep with Python's ``re``, in this process (no timeout: see :func:`_grep_python_child`)."""
    flags = re.IGNORECASE if args.get("ignore_case") else 0
    try:
        regex = re.compile(args["pattern"], flags)
    except re.error as exc:
        return {"error": f"invalid regex {args['pattern']!r}: {exc}"}
    accept = _file_filter(args.get("glob"))
    if base.is_file():
        files: Iterator[Path] = iter([base])
    else:
        files = (
            f
            for f in walk_files(base, root)
            if not f.is_symlink() and accept(f.relative_to(base).as_posix())
        )
    matches: list[dict[str, Any]] = []
    for file in files:
        try:
            with file.open("rb") as fh:
                if b"\0" in fh.read(SNIFF_BYTES):
                    continue  # binary
                fh.seek(0)
                shown = display_path(file, root)
                for number, text in _matching_lines(fh, regex):
                    matches.append({"path": shown, "line": number, "text": text})
                    if len(matches) > cap:
                        return {"matches": matches, "truncated": True}
        except OSError:
            continue
    return {"matches": matches, "truncated": False}


def _matching_lines(fh: Any, regex: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    """``(line number, clipped text)`` of each line ``regex`` finds something in.

    Memory stays near ``_WINDOW`` whatever the line lengths: a longer line is
    searched window by window and only its head is kept for showing.
    """
    number = 1
    line = bytearray()  # the current line, or its latest window when long
    head = b""  # the start of a long line (empty while the line is short)
    found = False
    while chunk := fh.read(_CHUNK):
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if not found:
                line += chunk[start:] if end < 0 else chunk[start:end]
                if len(line) > _WINDOW:
                    head = head or bytes(line[:_LINE_HEAD])
                    found = _search(regex, line)
                    del line[:-_OVERLAP]
            if end < 0:
                break
            if found or _search(regex, line):
                yield number, _shown(head or line, long=bool(head))
            number += 1
            line.clear()
            head, found = b"", False
            start = end + 1
    if (line or head) and (found or _search(regex, line)):
        yield number, _shown(head or line, long=bool(head))


def _search(regex: re.Pattern[str], data: bytes | bytearray) -> bool:
    return regex.search(data.decode("utf-8", "replace").rstrip("\r\n")) is not None


def _shown(data: bytes | bytearray, long: bool) -> str:
    text = data.decode("utf-8", "replace")
    return text[:MAX_TEXT] + " [...]" if long else _clip(text)


def _grep_ripgrep(
    rg: str, args: dict[str, Any], ctx: Any, base: Path, root: Path, cap: int
) -> dict[str, Any] | None:
    """Matches found by ripgrep; ``None`` when its regex dialect refused the pattern.

    Plain output, not ``--json``: only the plain printer honours
    ``--max-columns``, which keeps a match in a huge line to a short preview.
    ``--null`` ends each path with a NUL, so any file name parses.
    """
    argv = [rg, "--sort=path", "--hidden", "--no-require-git", "-g", "!.git"]
    argv += ["--no-heading", "--with-filename", "--line-number", "--null", "--color=never"]
    argv += [f"--max-columns={_LINE_HEAD}", "--max-columns-preview", "--no-config"]
    if args.get("ignore_case"):
        argv.append("-i")
    if args.get("glob"):
        argv += ["-g", args["glob"]]
    argv += ["-e", args["pattern"], "--"]
    if base != root:
        # Relative when inside the workspace, so rg prints workspace-relative paths.
        argv.append(display_path(base, root))
    done, failed = _run_search(argv, ctx, root)
    if failed:
        return failed
    if done.exit_code == 2 and "regex parse error" in done.stderr:
        return None
    stdout = done.stdout
    if done.truncated:
        # Only the head is in order; the omitted middle makes the tail useless.
        stdout = stdout.split("\n[... ", 1)[0]
    oracle = IgnoreOracle(base, root) if args.get("glob") else None
    matches: list[dict[str, Any]] = []
    # Not splitlines(): a line of text may hold \r, \f or U+2028.
    for line in stdout.split("\n"):
        path, nul, rest = line.partition("\0")
        number, colon, text = rest.partition(":")
        if not (nul and colon and number.isdigit()):
            continue  # "binary file matches", a line cut by the cap
        path = path[2:] if path.startswith("./") else path
        if oracle is not None and oracle.ignored(root / path):
            continue
        text, cut = _RG_CUT.subn("", text)
        text = text[:MAX_TEXT] + " [...]" if cut else _clip(text)
        matches.append({"path": path, "line": int(number), "text": text})
        if len(matches) > cap:
            break
    if not matches and done.exit_code == 2:
        reason = done.stderr.strip().splitlines() or ["ripgrep failed"]
        return {"error": f"grep failed: {reason[-1]}"}
    return {"matches": matches, "truncated": done.truncated or len(matches) > cap}
