"""What a skill folder holds, as one digest: what consent to a skill is bound to.

Consent to a skill someone else wrote (``agent skills add`` and ``update``,
and the first run of its live context ``!`cmd```) covers its whole folder,
not ``SKILL.md`` alone: the body may run ``sh ${SKILL_DIR}/status.txt``, and
any file the skill brings can be read, sourced or run. :func:`manifest` maps
the path of every entry below the folder (``/``-separated) to what it is:

- a regular file: the SHA-256 of its content, with ``x:`` first when it is
  executable (the lock's format since the first ``skills.lock``);
- a symbolic link: ``l:`` and the SHA-256 of where it points, never followed
  (``installs=True`` refuses links: an installed skill carries files only);
- anything else (a FIFO, a socket, a device): ``s:`` and its kind, never
  opened (refused for installs too).

Folders count through what they hold; ``.git`` folders are left out (a
clone's history is not what the skill runs, and installs never copy them).
:func:`digest` is one SHA-256 of every name and entry. The cost is bounded:
past :data:`MAX_ENTRIES` entries or :data:`MAX_BYTES` of file content the
folder is :class:`FolderTooLarge` before more is read, so a skill folder
holding a virtual environment costs milliseconds, not a read of all of it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from mdagent.core.errors import MdagentError

#: At most this many entries (files, links, others) are read in one skill folder.
MAX_ENTRIES = 2_000
#: At most this many bytes of file content are hashed in one skill folder.
MAX_BYTES = 64 << 20
_CHUNK = 1 << 20
_KINDS = {
    stat.S_IFIFO: "fifo",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
}


class FolderError(MdagentError):
    """A skill folder that cannot be read whole, or holds what an install may not carry."""

    exit_code = 1


class FolderTooLarge(FolderError):
    """A skill folder past :data:`MAX_ENTRIES` entries or :data:`MAX_BYTES` of content."""


def manifest(folder: str | os.PathLike[str], *, installs: bool = False) -> dict[str, str]:
    """``relative/path -> entry`` for everything below ``folder`` (see the module docstring).

    Raises :class:`FolderError` when a folder or file cannot be read (an
    entry left out would be an entry consent does not cover), when
    ``installs`` and the folder holds a link or a special file, and
    :class:`FolderTooLarge` past the limits.
    """
    root = Path(folder)
    found: dict[str, str] = {}
    left = MAX_BYTES

    def unreadable(err: OSError) -> None:
        raise FolderError(f"{err.filename}: cannot read: {err.strerror or err}")

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
        kept = []
        for name in sorted(dirnames):
            path = Path(dirpath, name)
            if name == ".git":
                continue
            if path.is_symlink():  # os.walk lists a link to a folder here: an entry of its own
                filenames.append(name)
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            path = Path(dirpath, name)
            if len(found) >= MAX_ENTRIES:
                raise FolderTooLarge(f"{root}: holds more than {MAX_ENTRIES:,} files")
            entry, size = _entry(path, left, installs)
            left -= size
            found[path.relative_to(root).as_posix()] = entry
    return found


def _entry(path: Path, left: int, installs: bool) -> tuple[str, int]:
    """What ``path`` is (a manifest entry) and how many of the ``left`` bytes it used."""
    try:
        st = os.lstat(path)
    except OSError as err:
        raise FolderError(f"{path}: cannot read: {err.strerror or err}") from None
    if stat.S_ISLNK(st.st_mode):
        if installs:
            raise FolderError(f"{path}: a symbolic link; an installed skill carries files only")
        target = os.fsencode(os.readlink(path))
        return "l:" + hashlib.sha256(target).hexdigest(), 0
    if not stat.S_ISREG(st.st_mode):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "special file")
        if installs:
            raise FolderError(f"{path}: a {kind}; an installed skill carries files only")
        return f"s:{kind}", 0
    # O_NOFOLLOW and O_NONBLOCK: swapped for a link or a FIFO since the lstat,
    # it fails or does not wait, and is checked again on the open file.
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise FolderError(f"{path}: cannot read: {err.strerror or err}") from None
    sha = hashlib.sha256()
    used = 0
    with open(fd, "rb", closefd=True) as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise FolderError(f"{path}: changed while it was read")
        try:
            while chunk := fh.read(min(_CHUNK, left - used + 1)):
                used += len(chunk)
                if used > left:
                    raise FolderTooLarge(
                        f"{path}: the skill's files hold more than {MAX_BYTES >> 20} MiB"
                    )
                sha.update(chunk)
        except OSError as err:
            raise FolderError(f"{path}: cannot read: {err.strerror or err}") from None
    executable = st.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return ("x:" if executable else "") + sha.hexdigest(), used


def digest(entries: Mapping[str, str]) -> str:
    """One SHA-256 of a :func:`manifest`: every name and what it is.

    A name holds no NUL and an entry no newline, so ``name NUL entry LF``
    per entry, in name order, reads back one way only.
    """
    text = "".join(f"{name}\0{entry}\n" for name, entry in sorted(entries.items()))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(name, "changed" | "added" | "removed")`` between two manifests, name-sorted."""
    out = []
    for name in sorted(set(old) | set(new)):
        if name not in new:
            out.append((name, "removed"))
        elif name not in old:
            out.append((name, "added"))
        elif old[name] != new[name]:
            out.append((name, "changed"))
    return out


def summary(changed: list[tuple[str, str]], limit: int = 5) -> str:
    """``status.txt changed, run.sh added and 3 more``: what :func:`changes` found, short.

    A name's control characters are written as escapes: a file named with a
    line break must not add a line of its own to the question it appears in.
    """
    listed = ", ".join(f"{_shown(name)} {how}" for name, how in changed[:limit])
    more = f" and {len(changed) - limit} more" if len(changed) > limit else ""
    return (listed + more) or "no file changed"


def _shown(name: str) -> str:
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in name)
