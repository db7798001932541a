"""SIGTERM and SIGHUP stop mdagent the way Ctrl-C does, with the shell's exit status.

A running tool's child lives in its own session, so a signal sent to
``agent`` (``kill``, a closed terminal, a service manager) never reaches it.
By default Python would just die and leave the child running. Instead the
handler raises :class:`Terminated`, a ``KeyboardInterrupt``: every path that
already handles Ctrl-C — stopping the child's process group, putting the
call on the record as interrupted, saving the session — handles it too.
The CLI edge then exits 128 + the signal number (143, 129).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

TYPE_CHECKING = False  # not typing's: see mdagent.records
if TYPE_CHECKING:
    from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

# The first stop signal that arrived in this process (its number), if any.
_received: int | None = None

# While set, a stop signal calls this instead of raising (see :func:`deferred`).
_deferred_to: Callable[[int], None] | None = None


class Terminated(KeyboardInterrupt):
    """A stop signal arrived; unwinds like Ctrl-C, exits 128 + the signal number."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__(f"terminated by {signal.Signals(signum).name}")


def install() -> None:
    """Raise :class:`Terminated` on SIGTERM and SIGHUP (main thread only).

    A signal this process was started ignoring stays ignored: ``nohup
    agent …`` must keep running when the terminal closes.
    """
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is signal.SIG_DFL:
            try:
                signal.signal(signum, _stop)
            except ValueError:  # not the main thread (an embedding caller): leave it be
                return


def _stop(signum: int, frame: Any) -> None:
    global _received
    if _received is None:
        _received = signum
    if _deferred_to is not None:
        _deferred_to(signum)
        return
    raise Terminated(signum)


@contextmanager
def deferred(callback: Callable[[int], None]) -> Iterator[None]:
    """Within the block a stop signal calls ``callback(signum)`` instead of raising.

    An event loop (the session's prompt) runs its own tasks: an exception
    raised in whichever of them the signal happened to interrupt is caught
    and printed by the loop as an "unhandled exception", and the prompt goes
    on. The callback instead asks the loop to end the way it chooses.
    """
    global _deferred_to
    previous, _deferred_to = _deferred_to, callback
    try:
        yield
    finally:
        _deferred_to = previous


def received() -> int | None:
    """The number of the first stop signal this process got, or ``None``."""
    return _received


def exit_status(status: int) -> int:
    """``status``, or 128 + the stop signal when one arrived: it is why the process ends."""
    return 128 + _received if _received is not None else status


def message() -> str:
    """What to tell the person about an interrupted run."""
    if _received is None:
        return "interrupted"
    return f"interrupted: terminated by {signal.Signals(_received).name}"
