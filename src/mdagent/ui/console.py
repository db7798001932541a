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
#: The last column gives way to this first; below it the other columns are narrowed.
MIN_LAST_COLUMN = 12
#: No column is cut narrower than this (three characters and ``…``).
FLOOR = 4


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


def first_line(text: str | None, limit: int | None = 80) -> str:
    """The first non-blank line of ``text``, shortened to ``limit`` characters (None: whole)."""
    lines = (text or "").strip().splitlines()
    line = lines[0] if lines else ""
    return line if limit is None or len(line) <= limit else line[: limit - 1] + "…"


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: wide (CJK) characters two, combining marks none."""
    return len(text) if text.isascii() else sum(map(_char_width, text))


def _char_width(char: str) -> int:
    import unicodedata  # only for text that is not ASCII

    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def _fitting(text: str, columns: int) -> int:
    """How many characters of ``text`` fit in ``columns`` terminal columns."""
    used = 0
    for index, char in enumerate(text):
        used += _char_width(char)
        if used > columns:
            return index
    return len(text)


def shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal columns with ``…``, at a word's end when one is near."""
    if text.isascii():
        if len(text) <= width:
            return text
        keep, half = width - 1, width // 2
    else:
        if display_width(text) <= width:
            return text
        keep = _fitting(text, width - 1)
        half = keep // 2
    if width <= 1:
        return "…"[:width]
    cut = text[:keep]
    # Break after a whole word, unless that would waste more than half the room.
    space = cut.rfind(" ")
    if space >= half and not text[keep].isspace():
        cut = cut[:space]
    return cut.rstrip() + "…"


def table(
    rows: Iterable[Sequence[Any]],
    header: Sequence[str] | None = None,
    width: int | None = None,
    *,
    fit: bool = False,
    stream: Any = None,
) -> str:
    """Rows as left-aligned columns two spaces apart, with an optional header line.

    With ``fit`` (or a ``width``) the columns are shortened with ``…``, at a
    word's end when one is near, so each line fits ``width`` (default: the
    terminal's, when ``stream``, stdout by default, is one), never wrapped
    (see :func:`_fit_widths` for which column gives first). Without a terminal nothing is
    shortened. Opt-in: a table whose last column must be copied whole (a
    rule to paste) stays as it is.
    """
    # Written for many rows (``/help`` lists 10,000): each pass over them is
    # one comprehension or one builtin, and each line one expression.
    from mdagent.core.escapes import visible

    lines = [list(header)] if header else []
    # Cells hold others' text (descriptions, a model's arguments): escaped, never acting.
    lines += [list(map(visible, row)) for row in rows]
    if not lines:
        return ""
    if width is None and fit:
        width = terminal_width(stream)
    columns = max(map(len, lines))
    if min(map(len, lines)) == columns:  # every row has every column
        widths = [max(map(len, column)) for column in zip(*lines, strict=True)]
    else:
        widths = [max((len(r[i]) for r in lines if i < len(r)), default=0) for i in range(columns)]
    if width is not None:
        # Too narrow for a few characters of each column: the last ones go.
        while columns > 1 and columns * (FLOOR + 2) - 2 > width:
            columns -= 1
            widths = widths[:columns]
            lines = [r[:columns] for r in lines]
        natural = widths
        widths = _fit_widths(widths, max(width, 1))
        for i in [i for i in range(columns) if widths[i] < natural[i]]:  # the narrowed ones
            w = widths[i]
            lines = [
                [*r[:i], shorten(r[i], w), *r[i + 1 :]] if len(r) == columns else r for r in lines
            ]
    # The columns before the last padded to their width; the last needs no
    # padding: a line's trailing spaces go anyway.
    if columns <= 2:
        first = widths[0] if widths else 0
        return "\n".join(
            [
                (r[0].ljust(first) + "  " + r[1]).rstrip() if len(r) == 2 else "  ".join(r).rstrip()
                for r in lines
            ]
        )
    last = columns - 1
    form = ("".join(f"{{{i}:<{w}}}  " for i, w in enumerate(widths[:last])) + f"{{{last}}}").format
    text = "\n".join(
        form(*r).rstrip()
        if len(r) == columns
        else "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip()
        for r in lines
    )
    return text


def _fit_widths(widths: list[int], width: int) -> list[int]:
    """Column widths whose lines (two spaces between columns) fit ``width`` exactly.

    What gives first: the last column (a description) down to
    :data:`MIN_LAST_COLUMN`, then the middle ones (a long SOURCE path), widest
    first, to the same; then the middle ones and the last, widest first, to
    :data:`FLOOR`; then the first column (the name) to
    :data:`MIN_LAST_COLUMN`; then the last and the first to :data:`FLOOR`.
    """
    widths = list(widths)
    excess = sum(widths) + 2 * (len(widths) - 1) - width
    last = len(widths) - 1
    middle = list(range(1, last))
    for candidates, floor in (
        ([last], MIN_LAST_COLUMN),
        (middle, MIN_LAST_COLUMN),
        ([*middle, last] if middle else [], FLOOR),
        ([0], MIN_LAST_COLUMN),
        ([last], FLOOR),
        ([0], FLOOR),
    ):
        while excess > 0:
            wide = [i for i in candidates if widths[i] > floor]
            if not wide:
                break
            widest = max(wide, key=lambda i: widths[i])
            second = max([widths[i] for i in wide if i != widest] + [floor])
            cut = min(excess, max(1, widths[widest] - second))
            widths[widest] -= cut
            excess -= cut
    return widths


def described(pairs: Iterable[tuple[Any, Any]], width: int | None = None) -> str:
    """``name  description`` rows (descriptions cut to their first line, then to the width)."""
    rows = ((name, first_line(description, None)) for name, description in pairs)
    return table(rows, width=width, fit=True)
