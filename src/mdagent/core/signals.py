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
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
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


class Held:
    """Ctrl-C and the stop signals, held back while a child starts (see :func:`hold`)."""

    def __init__(self) -> None:
        self._previous: dict[int, Any] = {}
        self._pending: int | None = None

    def _hold(self, signum: int, frame: Any) -> None:
        if self._pending is None:
            self._pending = signum

    def release(self) -> None:
        """Put the handlers back and send again the signal that arrived meanwhile.

        Python runs the restored handler at its next instruction, so a
        ``KeyboardInterrupt`` is raised right after this call returns, in
        code that knows the child and can stop it. Calling it twice is harmless.
        """
        previous, self._previous = self._previous, {}
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        pending, self._pending = self._pending, None
        if pending is not None:
            signal.raise_signal(pending)


def hold() -> Held:
    """Hold back Ctrl-C, SIGTERM and SIGHUP until :meth:`Held.release`.

    Between ``fork`` and the moment its caller can stop a child's process
    group, a ``KeyboardInterrupt`` would unwind past the only code that knows
    the child, and leave it running (seen on a busy machine: Ctrl-C at the
    child's first instruction, the agent gone and ``sleep 60`` still holding
    its output pipe). Only the main thread handles signals; elsewhere this
    holds nothing. Signals this process ignores stay ignored.
    """
    held = Held()
    if threading.current_thread() is not threading.main_thread():
        return held
    for signum in (signal.SIGINT, *STOP_SIGNALS):
        handler = signal.getsignal(signum)
        if handler is signal.SIG_IGN or handler is None:
            continue
        held._previous[signum] = handler
        signal.signal(signum, held._hold)
    return held
