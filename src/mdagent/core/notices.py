"""Notices for the person from the modules that may not talk to one themselves.

A hook's warning, a note about the sandbox, an MCP server that could not
start, a record the store could not keep: the module that meets it calls
:func:`tell` or :func:`warn` here, and the edge that talks to the person
decides how it is shown. ``agent``'s entry point (:func:`mdagent.cli.cli.main`)
hands in a sink with :func:`show_with` that prints one ``agent: …`` line on
stderr (:func:`mdagent.ui.console.show_notice`). Without one (mdagent used as a
library) a notice goes to the ``mdagent`` log, as a library's should.
"""

from __future__ import annotations

import threading

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from collections.abc import Callable

    Sink = Callable[[str, bool], None]

_sink: Sink | None = None

# Notes already told once in this process (one process is one run); tool
# calls run in threads.
_told: set[str] = set()
_told_lock = threading.Lock()


def show_with(sink: Sink | None) -> Sink | None:
    """Show every notice from now on with ``sink(message, warning)``; the sink it replaces."""
    global _sink
    previous, _sink = _sink, sink
    return previous


def tell(message: str) -> None:
    """A note for the person (``agent: message``)."""
    _show(message, False)


def tell_once(message: str) -> None:
    """:func:`tell` ``message`` the first time this process meets it, never again."""
    with _told_lock:
        if message in _told:
            return
        _told.add(message)
    tell(message)


def forget() -> None:
    """Forget which notes :func:`tell_once` told: each is told again (a new run in this process)."""
    with _told_lock:
        _told.clear()


def warn(message: str) -> None:
    """A warning for the person (``agent: warning: message``)."""
    _show(message, True)


def _show(message: str, warning: bool) -> None:
    sink = _sink
    if sink is not None:
        sink(message, warning)
        return
    import logging

    from mdagent.core.errors import logger

    logger("mdagent.core.notices").log(logging.WARNING if warning else logging.INFO, "%s", message)
