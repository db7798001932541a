"""The one "did you mean": the choice closest to a name someone got wrong.

Unknown keys in a file, unknown commands at the shell and in the session,
unknown parameters and tools all suggest a name the same way: spelling
(difflib's ratio) with case, ``_`` and ``-`` ignored, then, where asked, a
choice the word begins.
"""

from __future__ import annotations

from collections.abc import Iterable


def _plain(word: str) -> str:
    return str(word).lower().replace("_", "-")


def closest(
    word: str, choices: Iterable[str], *, cutoff: float = 0.6, prefix: bool = False
) -> str | None:
    """The choice nearest ``word``, as written in ``choices``, or None.

    Case, ``_`` and ``-`` are ignored when comparing (``command_tools`` is
    close to ``command-tool``; of two choices that differ only so, the one
    with ``-`` is given). ``cutoff`` is difflib's ratio below which nothing
    is close. ``prefix``: failing that, the first choice (in sorted order)
    that begins with ``word``.
    """
    import difflib

    options: dict[str, str] = {}
    for choice in sorted(map(str, choices), key=lambda c: ("_" in c, c)):  # `a-b` over `a_b`
        options.setdefault(_plain(choice), choice)
    key = _plain(word)
    close = difflib.get_close_matches(key, options, n=1, cutoff=cutoff)
    if close:
        return options[close[0]]
    if prefix and key:
        return next((options[o] for o in sorted(options) if o.startswith(key)), None)
    return None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the choice closest to ``word``, or ``""`` (a message's tail)."""
    near = closest(word, choices, cutoff=0.75)
    return f" (did you mean {near!r}?)" if near is not None else ""
