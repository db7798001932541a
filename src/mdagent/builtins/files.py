"""The file built-ins: ``read_file``, ``write_file`` and ``edit_file``.

Every path is confined to the workspace (symlinks resolved) before it is
touched; a refusal is a failure with ``code: DENIED``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Any

from mdagent.errors import PolicyDenied
from mdagent.workspace import confine, display_path, roots_from

DEFAULT_LIMIT = 2000
# A minified file can be one multi-megabyte line; a model gains nothing from
# all of it and loses its context window.
MAX_LINE_CHARS = 2000
# Like git: a NUL byte in the first 8 KiB means binary.
SNIFF_BYTES = 8192


def _resolve(ctx: Any, path: str) -> tuple[Path, str]:
    """The confined path and how to show it; raises PolicyDenied."""
    root, extras = roots_from(ctx)
    resolved = confine(path, root, extras)
    return resolved, display_path(resolved, root)


def _denied(exc: PolicyDenied) -> dict[str, Any]:
    return {"error": str(exc), "code": "DENIED"}


def read_file(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Lines ``offset``..``offset+limit-1`` of a text file, numbered like ``cat -n``."""
    try:
        path, shown = _resolve(ctx, args["path"])
    except PolicyDenied as exc:
        return _denied(exc)
    if not path.exists():
        return {"error": f"not found: {args['path']}"}
    if path.is_dir():
        return {"error": f"is a directory: {args['path']} (use glob to list files)"}
    offset = int(args.get("offset") or 1)
    limit = int(args.get("limit") or DEFAULT_LIMIT)
    lines: list[str] = []
    total = 0
    cut_lines = False
    try:
        with path.open("rb") as fh:
            if b"\0" in fh.read(SNIFF_BYTES):
                return {"error": f"binary file, not shown: {args['path']}", "path": shown}
            fh.seek(0)
            # Streamed line by line: a huge file costs time, not memory.
            for number, raw in enumerate(fh, start=1):
                total = number
                if offset <= number < offset + limit:
                    text = raw.decode("utf-8", "replace").rstrip("\r\n")
                    if len(text) > MAX_LINE_CHARS:
                        text = (
                            text[:MAX_LINE_CHARS] + f" [... {len(text) - MAX_LINE_CHARS} chars cut]"
                        )
                        cut_lines = True
                    lines.append(f"{number:6d}\t{text}")
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


def _write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so readers see the old or the new file, never half."""
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    # 0o666 through os.open lets the umask decide a new file's mode, as for
    # any editor; an existing file keeps its own mode.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_file(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Create or overwrite a file with ``content``, creating parent folders."""
    try:
        path, shown = _resolve(ctx, args["path"])
    except PolicyDenied as exc:
        return _denied(exc)
    if path.is_dir():
        return {"error": f"is a directory: {args['path']}"}
    data = args["content"].encode("utf-8")
    created = not path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(path, data)
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
    try:
        path, shown = _resolve(ctx, args["path"])
    except PolicyDenied as exc:
        return _denied(exc)
    old, new = args["old_string"], args["new_string"]
    if not path.is_file():
        return {"error": f"not found: {args['path']}"}
    if old == "":
        return {"error": "old_string is empty; to create or overwrite a file use write_file"}
    if old == new:
        return {"error": "old_string and new_string are the same; nothing to change"}
    try:
        text = path.read_bytes().decode("utf-8")
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
        _write_atomically(path, text.replace(old, new).encode("utf-8"))
    except OSError as exc:
        return {"error": f"cannot write {args['path']}: {exc.strerror or exc}"}
    times = "1 occurrence" if count == 1 else f"{count} occurrences"
    return {"path": shown, "replacements": count, "output": f"replaced {times} in {shown}"}
