"""What a person sees: terminal checks and plain-text tables (no rich on the fast path)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (False for pipes, files and closed streams)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def first_line(text: str | None, limit: int = 80) -> str:
    """The first non-blank line of ``text``, shortened to ``limit`` characters."""
    lines = (text or "").strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def table(rows: Iterable[Sequence[Any]], header: Sequence[str] | None = None) -> str:
    """Rows as left-aligned columns two spaces apart, with an optional header line."""
    body = [[str(c) for c in row] for row in rows]
    lines = ([list(header)] if header else []) + body
    if not lines:
        return ""
    widths = [max(len(r[i]) for r in lines if i < len(r)) for i in range(len(lines[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in lines
    )


def described(pairs: Iterable[tuple[Any, Any]]) -> str:
    """``name  description`` rows (descriptions cut to their first line)."""
    return table((name, first_line(description)) for name, description in pairs)
