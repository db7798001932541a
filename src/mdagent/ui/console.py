"""What a person sees: terminal checks, colour and plain-text tables (no rich on the fast path).

Colour is a handful of ANSI codes, only on a terminal and never with
``NO_COLOR`` set (no-color.org) or ``TERM=dumb``. Tables fit the terminal's
width by shortening their last column; piped output keeps every character,
so ``agent tools | grep`` sees whole descriptions.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Sequence

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

_CODES = {"red": "31", "green": "32", "yellow": "33", "bold": "1", "dim": "2"}


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (False for pipes, files and closed streams)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def colour_enabled(stream: Any) -> bool:
    """Whether to colour what goes to ``stream``: a terminal, no ``NO_COLOR``, not ``TERM=dumb``."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return is_terminal(stream)


def paint(text: str, colour: str, stream: Any = None) -> str:
    """``text`` in ``colour`` (red, green, yellow, bold, dim) when ``stream`` takes colour.

    ``stream`` is where the text will be written (default stdout); ``text``
    comes back unchanged when that is a pipe, a file or ``NO_COLOR`` is set.
    """
    if not colour_enabled(sys.stdout if stream is None else stream):
        return text
    return f"\x1b[{_CODES[colour]}m{text}\x1b[0m"


def mark(ok: bool, stream: Any = None) -> str:
    """``✓`` in green or ``✗`` in red (plain when ``stream`` takes no colour)."""
    return paint("✓", "green", stream) if ok else paint("✗", "red", stream)


_SEVERITY_COLOURS = {"error": "red", "warning": "yellow"}


def problem_line(problem: Any, stream: Any = None) -> str:
    """``path:line:col: severity: message`` with the severity coloured (red error, yellow warning)."""
    colour = _SEVERITY_COLOURS.get(problem.severity)
    if colour is None:
        return str(problem)
    where = f"{problem.path}:{problem.line}:{problem.col}"
    return f"{where}: {paint(problem.severity, colour, stream)}: {problem.message}"


def say_error(message: str, stream: Any = None) -> None:
    """Print ``agent: message`` on stderr, its first line red on a colour terminal.

    Every error line a person sees goes through here, so they all look the same.
    """
    stream = sys.stderr if stream is None else stream
    first, _, rest = f"agent: {message}".partition("\n")
    text = paint(first, "red", stream) + (f"\n{rest}" if rest else "")
    print(text, file=stream)


def report_error(
    message: str,
    code: str = "ERROR",
    *,
    as_json: bool | str = False,
    session: str | None = None,
    exit_status: int | None = None,
) -> None:
    """An error at a CLI edge: one JSON object on stdout with ``--json``, else one line on stderr.

    The JSON is ``{"ok": false, "error": {"code": ..., "message": ...}}`` (see
    :attr:`mdagent.core.errors.MdagentError.code`), so a script reading ``--json``
    output always gets JSON, even when no tool ran. ``session``: the saved
    session of a turn that failed (a ``"session"`` key beside the error).
    ``as_json="stream"`` (``--output-format stream-json``) writes the run's
    final ``result`` event instead, with ``exit_status``.
    """
    if as_json == "stream":
        from mdagent.ui import events

        events.started()  # notes held for a `start` that never came go out first
        events.emit("result", **events.error_result(code, message, exit_status or 1, session))
        return
    if as_json:
        print(error_json(code, message, session), flush=True)
    else:
        say_error(message)


def say_warning(message: str, stream: Any = None) -> None:
    """Print ``agent: warning: message`` on stderr, yellow on a colour terminal."""
    stream = sys.stderr if stream is None else stream
    print(paint(f"agent: warning: {message}", "yellow", stream), file=stream)


def show_notice(message: str, warning: bool = False) -> None:
    """A notice (:mod:`mdagent.core.notices`) as one line on stderr: ``agent: warning: …`` or ``agent: …``.

    Nothing when stderr is closed or gone (the log has the warnings).
    """
    with contextlib.suppress(OSError, ValueError):
        if warning:
            say_warning(message)
        else:
            print(f"agent: {message}", file=sys.stderr, flush=True)


def error_json(code: str, message: str, session: str | None = None) -> str:
    """The one line ``--json`` prints for an error (with the session of a failed turn)."""
    import json

    data: dict[str, Any] = {"ok": False, "error": {"code": code, "message": message}}
    if session is not None:
        data["session"] = session
    return json.dumps(data, ensure_ascii=False)


def terminal_width(stream: Any = None) -> int | None:
    """Columns to fit output to: the terminal's (``COLUMNS`` wins) or None when not a terminal."""
    if not is_terminal(sys.stdout if stream is None else stream):
        return None
    import shutil

    return shutil.get_terminal_size().columns


def table(
    rows: Iterable[Sequence[Any]],
    header: Sequence[str] | None = None,
    width: int | None = None,
    *,
    fit: bool = False,
    stream: Any = None,
) -> str:
    """:func:`mdagent.core.text.table`, fitted to the terminal with ``fit``.

    With ``fit`` (and no ``width``) each line fits the terminal's width when
    ``stream`` (stdout by default) is one; without a terminal nothing is
    shortened. Opt-in: a table whose last column must be copied whole (a
    rule to paste) stays as it is.
    """
    from mdagent.core import text

    if width is None and fit:
        width = terminal_width(stream)
    return text.table(rows, header, width)


def described(pairs: Iterable[tuple[Any, Any]], width: int | None = None) -> str:
    """``name  description`` rows (descriptions cut to their first line, then to the width)."""
    from mdagent.core.text import first_line

    rows = ((name, first_line(description, None)) for name, description in pairs)
    return table(rows, width=width, fit=True)
