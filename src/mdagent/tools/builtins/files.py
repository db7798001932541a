"""The file built-ins: ``read_file``, ``write_file`` and ``edit_file``.

Every path is confined to the workspace (symlinks resolved) before it is
touched; a refusal is a failure with ``code: DENIED``. What was checked is
then opened through :func:`~mdagent.safety.workspace.open_parent`, component by
component without following symlinks, and written inside the folder
descriptor it holds: a folder swapped for a symlink after the check fails
the call instead of redirecting it out of the workspace.

``read_file`` reads in bounded chunks and cuts long lines, so a 200 MB file
without a newline costs time, not memory.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import secrets
import stat
from pathlib import Path

from mdagent.core.errors import PolicyDenied
from mdagent.safety.workspace import (
    confine,
    display_path,
    open_entry,
    open_parent,
    roots_from,
)

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any, BinaryIO

DEFAULT_LIMIT = 2000
# A minified file can be one multi-megabyte line; a model gains nothing from
# all of it and loses its context window. `column` pages through the rest.
MAX_LINE_CHARS = 2000
# Like git: a NUL byte in the first 8 KiB means binary.
SNIFF_BYTES = 8192
_CHUNK = 65536


def _resolve(
    ctx: Any, path: str, *, read_only: bool = False
) -> tuple[Path, str, tuple[Path, tuple[Path, ...]]]:
    """The confined path, how to show it and the roots; raises PolicyDenied.

    ``read_only`` also admits the folders of the skills the model may load.
    """
    root, extras = roots_from(ctx)
    try:
        resolved = confine(path, root, extras)
    except PolicyDenied:
        from mdagent.declarations.skills import (
            skill_read_roots,  # only for a path outside the workspace
        )

        skill_roots = skill_read_roots(ctx, path, root) if read_only else ()
        if not skill_roots:
            raise
        extras = (*extras, *skill_roots)
        resolved = confine(path, root, extras)
    return resolved, display_path(resolved, root), (root, extras)


def _denied(exc: PolicyDenied) -> dict[str, Any]:
    return {"error": str(exc), "code": "DENIED"}


def read_file(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Lines ``offset``..``offset+limit-1`` of a text file, numbered like ``cat -n``.

    Each line shows at most :data:`MAX_LINE_CHARS` characters, from character
    ``column`` (1-based) on; a cut line says how to read the rest.
    """
    try:
        path, shown, roots = _resolve(ctx, args["path"], read_only=True)
        with open_parent(path, *roots) as (folder, name):
            # O_NONBLOCK: a FIFO must not hang the call; it is refused below.
            fd = open_entry(folder, name, os.O_RDONLY | os.O_NONBLOCK, path)
    except PolicyDenied as exc:
        return _denied(exc)
    except (FileNotFoundError, NotADirectoryError):
        return {"error": f"not found: {args['path']}"}
    except OSError as exc:
        return {"error": f"cannot read {args['path']}: {exc.strerror or exc}"}
    offset = int(args.get("offset") or 1)
    limit = int(args.get("limit") or DEFAULT_LIMIT)
    column = int(args.get("column") or 1)
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        if stat.S_ISDIR(kind):
            return {"error": f"is a directory: {args['path']} (use glob to list files)"}
        return {"error": f"not a regular file: {args['path']}"}
    os.set_blocking(fd, True)
    try:
        with os.fdopen(fd, "rb") as fh:
            if b"\0" in fh.read(SNIFF_BYTES):
                return {"error": f"binary file, not shown: {args['path']}", "path": shown}
            fh.seek(0)
            lines, total, cut_lines = _numbered_lines(fh, offset, limit, column)
    except OSError as exc:
        return {"error": f"cannot read {args['path']}: {exc.strerror or exc}"}
    if total and offset > total:
        return {"error": f"offset {offset} is past the end of {args['path']} ({total} lines)"}
    more = offset + limit - 1 < total
    result: dict[str, Any] = {
        "path": shown,
        "output": "\n".join(lines),
        "total_lines": total,
        "truncated": more or cut_lines,
    }
    if more:
        result["next_offset"] = offset + limit
    return result


class _Line:
    """The shown window of one line, fed in pieces: memory is the window, not the line."""

    def __init__(self, start: int) -> None:
        self.start = start  # first character shown (0-based)
        self.end = start + MAX_LINE_CHARS
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.chars = 0
        self.kept: list[str] = []
        self.trailing_cr = 0  # "\r" at the end so far: a CRLF line ends without it

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self.decoder.decode(data, final)
        if not text:
            return
        before, self.chars = self.chars, self.chars + len(text)
        if before < self.end and self.chars > self.start:
            self.kept.append(text[max(self.start - before, 0) : self.end - before])
        body = text.rstrip("\r")
        self.trailing_cr = len(text) - len(body) + (0 if body else self.trailing_cr)

    def render(self, number: int) -> tuple[str, bool]:
        self.feed(b"", final=True)
        length = self.chars - self.trailing_cr
        text = "".join(self.kept)[: max(min(length, self.end) - self.start, 0)]
        if length <= self.end:
            return text, False
        rest = length - self.end
        return (
            f"{text} [... {rest} chars cut; read_file with offset={number}, limit=1, "
            f"column={self.end + 1} shows more]",
            True,
        )


def _numbered_lines(
    fh: BinaryIO, offset: int, limit: int, column: int
) -> tuple[list[str], int, bool]:
    """``(numbered lines in range, total line count, whether a line was cut)``.

    Reads ``_CHUNK`` bytes at a time; lines outside the range are only counted.
    """
    last = offset + limit - 1
    lines: list[str] = []
    cut_any = False
    number = 1  # the line being read
    pending = False  # bytes of line `number` seen (a last line without newline counts)
    line = _Line(column - 1) if offset == 1 else None
    while chunk := fh.read(_CHUNK):
        if number > last:  # past the range: only count
            number += chunk.count(b"\n")
            pending = not chunk.endswith(b"\n")
            continue
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if line is not None:
                line.feed(piece)
            pending = pending or bool(piece)
            if end < 0:
                break
            if line is not None:
                text, cut = line.render(number)
                lines.append(f"{number:6d}\t{text}")
                cut_any = cut_any or cut
            number += 1
            pending = False
            line = _Line(column - 1) if offset <= number <= last else None
            start = end + 1
            if number > last:
                rest = chunk[start:]
                number += rest.count(b"\n")
                pending = bool(rest) and not rest.endswith(b"\n")
                break
    if pending and line is not None:
        text, cut = line.render(number)
        lines.append(f"{number:6d}\t{text}")
        cut_any = cut_any or cut
    total = number if pending else number - 1
    return lines, total, cut_any


def _write_atomically(folder: int, name: str, data: bytes, mode: int | None) -> None:
    """Replace ``name`` in the open ``folder`` so readers see the old or the new file, never half.

    The temporary file is created and renamed relative to the folder
    descriptor, so neither can land anywhere else.
    """
    tmp = f".{name[:200]}.{secrets.token_hex(4)}.tmp"
    # 0o666 lets the umask decide a new file's mode, as for any editor; an
    # existing file keeps its own mode.
    fd = os.open(
        tmp,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o666,
        dir_fd=folder,
    )
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
        os.rename(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise


def _existing(folder: int, name: str, path: Path) -> os.stat_result | None:
    """The entry ``name`` in ``folder`` (not followed), ``None`` when missing.

    It was resolved, so it is no symlink unless one was put there since.
    """
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise PolicyDenied(
            f"path changed while it was being opened: {name!r} in {path} became a symlink"
        )
    return info


def write_file(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Create or overwrite a file with ``content``, creating parent folders."""
    data = args["content"].encode("utf-8")
    try:
        path, shown, roots = _resolve(ctx, args["path"])
        with open_parent(path, *roots, create=True) as (folder, name):
            info = _existing(folder, name, path)
            if info is not None and stat.S_ISDIR(info.st_mode):
                return {"error": f"is a directory: {args['path']}"}
            created = info is None
            _write_atomically(folder, name, data, None if created else info.st_mode & 0o7777)
    except PolicyDenied as exc:
        return _denied(exc)
    except OSError as exc:
        return {"error": f"cannot write {args['path']}: {exc.strerror or exc}"}
    verb = "created" if created else "wrote"
    return {
        "path": shown,
        "bytes": len(data),
        "created": created,
        "output": f"{verb} {shown} ({len(data)} bytes)",
    }


def edit_file(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Replace ``old_string`` by ``new_string``: exactly once, or everywhere with ``replace_all``."""
    old, new = args["old_string"], args["new_string"]
    try:
        path, shown, roots = _resolve(ctx, args["path"])
        with open_parent(path, *roots) as (folder, name):
            return _edit_in(folder, name, path, shown, old, new, args)
    except PolicyDenied as exc:
        return _denied(exc)
    except (FileNotFoundError, NotADirectoryError):
        return {"error": f"not found: {args['path']}"}
    except OSError as exc:
        return {"error": f"cannot edit {args['path']}: {exc.strerror or exc}"}


def _edit_in(
    folder: int, name: str, path: Path, shown: str, old: str, new: str, args: dict[str, Any]
) -> dict[str, Any]:
    """edit_file's work on ``name`` inside the open ``folder``."""
    fd = open_entry(folder, name, os.O_RDONLY | os.O_NONBLOCK, path)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return {"error": f"not found: {args['path']}"}
    if old == "" or old == new:
        os.close(fd)
        if old == "":
            return {"error": "old_string is empty; to create or overwrite a file use write_file"}
        return {"error": "old_string and new_string are the same; nothing to change"}
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as fh:
        try:
            text = fh.read().decode("utf-8")
        except UnicodeDecodeError:
            return {"error": f"not a UTF-8 text file: {args['path']}"}
        except OSError as exc:
            return {"error": f"cannot read {args['path']}: {exc.strerror or exc}"}
    count = text.count(old)
    if count == 0:
        return {"error": f"old_string not found in {shown}"}
    if count > 1 and not args.get("replace_all"):
        return {
            "error": (
                f"old_string occurs {count} times in {shown}; include more surrounding "
                "text to make it unique, or set replace_all"
            ),
            "occurrences": count,
        }
    try:
        _write_atomically(
            folder, name, text.replace(old, new).encode("utf-8"), info.st_mode & 0o7777
        )
    except OSError as exc:
        return {"error": f"cannot write {args['path']}: {exc.strerror or exc}"}
    times = "1 occurrence" if count == 1 else f"{count} occurrences"
    return {"path": shown, "replacements": count, "output": f"replaced {times} in {shown}"}
