"""Text someone else wrote, made safe to show on a terminal.

A repository's settings, a skill's front-matter, a tool's description, a
model's arguments and answer all reach the person's terminal. Written raw,
their control characters would act there: ``\\r`` and ``\\x1b[2K`` erase the
line that names what is being trusted, ``\\x1b[8m`` conceals the question
after it, U+202E turns text around, ``\\x1b]0;…`` sets the window title. So
every place that shows such text goes through :func:`visible` (one line,
escapes shown as ``\\x1b``) or :func:`visible_lines` (line ends kept).

Characters that draw nothing but are no control character (U+2800 braille
blank, U+3164 Hangul filler, U+00A0 and the other Unicode spaces) are
*blanks* (:func:`is_blank`): the approval question counts runs of them, so
they cannot push a payload off the screen either.
"""

from __future__ import annotations

import unicodedata

# Characters that look like nothing on a terminal but are letters or symbols
# to Unicode (so neither str.isspace() nor the control categories catch them).
_INVISIBLE = frozenset(
    "\u2800"  # braille pattern blank
    "\u3164"  # Hangul filler
    "\u115f\u1160"  # Hangul choseong and jungseong fillers
    "\uffa0"  # halfwidth Hangul filler
    "\u034f"  # combining grapheme joiner
    "\u17b4\u17b5"  # Khmer inherent vowels
    "\u180e"  # Mongolian vowel separator
    "\u2060\u2061\u2062\u2063\u2064"  # word joiner, invisible operators
    "\ufeff"  # zero width no-break space (BOM)
    "\U0001d159\U0001d173\U0001d174\U0001d175\U0001d176"  # musical null notehead, formats
    "\U0001d177\U0001d178\U0001d179\U0001d17a"
)
_ESCAPED_CATEGORIES = ("Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn")

#: A character class matching one blank (for counting runs of them).
BLANK_CLASS = (
    "[ \t\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000"
    + "".join(sorted(c for c in _INVISIBLE if unicodedata.category(c) not in _ESCAPED_CATEGORIES))
    + "]"
)


def is_blank(ch: str) -> bool:
    """Whether ``ch`` draws nothing on a terminal (a space of any kind, a filler)."""
    return ch.isspace() or ch in _INVISIBLE


def blank_line(line: str) -> bool:
    """Whether ``line`` draws nothing: only blanks (after escaping, see :func:`visible_lines`)."""
    return all(is_blank(ch) for ch in line)


def _escape(ch: str) -> str:
    if unicodedata.category(ch) in _ESCAPED_CATEGORIES:
        return ch.encode("unicode_escape").decode("ascii")
    return ch


def visible_lines(text: str) -> str:
    """``text`` with every control and format character shown escaped (``\\x1b``,
    ``\\r``, ``\\u202e``) except line ends and tabs, which keep their place."""
    text = str(text)
    if text.replace("\n", "").replace("\t", "").isprintable():
        return text  # the common case, in C: nothing to escape (a listing of 10,000 rows)
    return "".join(ch if ch in "\n\t" else _escape(ch) for ch in text)


def visible(text: str) -> str:
    """``text`` on one line: :func:`visible_lines`, with line ends shown as ``\\n`` too."""
    text = str(text)
    if text.replace("\t", "").isprintable():
        return text
    return "".join(ch if ch == "\t" else _escape(ch) for ch in text)
