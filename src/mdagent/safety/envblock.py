"""The agent's own secrets out of its children's reach: its original environment block, blanked.

A process's environment block (the strings the kernel copied onto its
stack at exec, from ``env_start`` to ``env_end`` in ``/proc/self/stat``) is
what ``/proc/PID/environ`` shows, to every process of the same user: a
model's command run with ``sandbox.mode: off``, or any command when the
agent runs as root, could read the agent's API keys there even though its
own environment was scrubbed. Python copied the block into ``os.environ``
at start-up; C code reads it through libc's ``environ`` array.

:func:`scrub` first hands every variable to libc again (``putenv`` copies
it to the heap and points ``environ`` there), then overwrites the whole
block with zero bytes. So ``os.environ``, ``getenv`` in C libraries and
children started with the inherited environment all see what they saw
before, while ``/proc/PID/environ`` shows nothing at all (every variable,
not only secret-named ones: no pattern can know every secret's name). No
re-exec, no import beyond ``os``: a read of ``/proc/self/stat`` and one
write to ``/proc/self/mem`` (ctypes only where that write is refused),
about 0.1 ms of every ``agent`` start.

What it does not hide: the heap copies are still in the agent's memory,
which ``/proc/PID/mem`` shows to a process allowed to trace the agent (root
outside a sandbox; a sandboxed command is in a user namespace of its own
and may not).
"""

from __future__ import annotations

import os

# Fields of /proc/self/stat after the command name, counted from 1 at the
# state field (field 3 of proc(5)): env_start is field 50, env_end 51.
_ENV_START = 50 - 3
_ENV_END = 51 - 3


def block_bounds() -> tuple[int, int] | None:
    """``(env_start, env_end)`` of this process, or None where ``/proc`` does not say."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    if len(fields) <= _ENV_END:
        return None  # a kernel before 3.5, or a /proc that hides them
    start, end = int(fields[_ENV_START]), int(fields[_ENV_END])
    return (start, end) if 0 < start < end else None


def scrub() -> bool:
    """Blank this process's original environment block; whether it was done.

    Safe to call more than once (the second call blanks a blank block).
    Nothing else changes: ``os.environ`` keeps every variable, and libc's
    ``environ`` points at copies of them.
    """
    bounds = block_bounds()
    if bounds is None:
        return False
    for name, value in os.environb.items():
        try:
            os.putenv(name, value)  # a heap copy for libc: getenv() and children keep it
        except (ValueError, OSError):
            return False  # a name libc would not take back: leave the block as it is
    start, end = bounds
    zeros = bytes(end - start)
    try:
        fd = os.open("/proc/self/mem", os.O_RDWR | os.O_CLOEXEC)
        try:
            return os.pwrite(fd, zeros, start) == len(zeros)
        finally:
            os.close(fd)
    except OSError:
        pass
    try:
        import ctypes

        ctypes.memset(start, 0, end - start)
    except (ImportError, OSError, ValueError):
        return False
    return True
