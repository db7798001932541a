"""JSON files in the state folder: read only when whole and of the expected format, written atomically.

The registry's cache (:mod:`mdagent.registry.registry`) and the MCP servers' tool
lists (:mod:`mdagent.declarations.mcpconfig`) keep their files this way. A file is a
cache: one that is missing, torn, or of another format reads as None, and a
write that fails (a read-only state folder) costs speed, never correctness.
"""

from __future__ import annotations

import contextlib
import json
import os

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


def read_json(path: Path, format: int) -> dict[str, Any] | None:
    """The object in ``path`` when its ``"format"`` is ``format``; else None."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None  # missing, or torn (not written by write_json): never used
    if not isinstance(data, dict) or data.get("format") != format:
        return None
    return data


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (temp file + rename): concurrent writers never leave half a file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # What tempfile.mkstemp does, without its import (~3 ms) on a cold
        # compile: a name no other writer uses, created exclusively, 0600.
        tmp = path.with_name(f".registry-{os.getpid()}-{os.urandom(6).hex()}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(tmp, flags, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                # dumps, not dump: json.dump streams through the pure-Python
                # encoder, several times slower on a cold compile's megabytes.
                fh.write(json.dumps(data, separators=(",", ":"), check_circular=False).encode())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass  # a read-only state dir costs speed, never correctness


def key(text: str) -> str:
    """A short name for ``text`` in the state dir: CRC-32 and Adler-32, hex.

    Not a digest of anything secret: a name to find a file by (``hashlib``
    costs more start-up time than the whole lookup it serves).
    """
    import zlib

    data = text.encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"
