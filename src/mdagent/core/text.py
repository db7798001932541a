"""Plain text for a person, without a terminal: first lines, widths, shortening, tables.

Pure functions of their arguments (no stream, no colour, no terminal
query): the registry caches ``/help``'s rows and table with them, and
:mod:`mdagent.ui.console` fits the same tables to a terminal's width.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

#: The last column gives way to this first; below it the other columns are narrowed.
MIN_LAST_COLUMN = 12
#: No column is cut narrower than this (three characters and ``…``).
FLOOR = 4


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
) -> str:
    """Rows as left-aligned columns two spaces apart, with an optional header line.

    With a ``width`` the columns are shortened with ``…``, at a word's end
    when one is near, so each line fits it, never wrapped (see
    :func:`_fit_widths` for which column gives first); without one nothing
    is shortened (:func:`mdagent.ui.console.table` fits the terminal's).
    """
    # Written for many rows (``/help`` lists 10,000): each pass over them is
    # one comprehension or one builtin, and each line one expression.
    from mdagent.core.escapes import visible

    lines = [list(header)] if header else []
    # Cells hold others' text (descriptions, a model's arguments): escaped, never acting.
    lines += [list(map(visible, row)) for row in rows]
    if not lines:
        return ""
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
