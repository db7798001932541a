"""Gitignore-style globs as regular expressions over ``/``-separated paths.

One translation for every place a path glob is matched: ``glob`` and
``grep`` (their patterns and ``.gitignore`` lines) and the policy's path
rules, which add their own anchoring on top (see :mod:`mdagent.safety.views`).
"""

from __future__ import annotations

import re


def gitignore_regex(pattern: str) -> str:
    """The regex source (for a full match) of one gitignore-flavoured glob.

    ``*`` and ``?`` stay within one path component; ``**/`` spans any number
    of folders (none included) and a trailing ``/**`` everything inside;
    any other ``**`` is a plain ``*``, as in gitignore. ``[abc]``, ``[!a-z]``
    and ``[^a-z]`` are character classes that never match ``/``; an unclosed
    ``[`` is literal. A backslash makes the next character literal.

    The pattern is translated as written: stripping a leading ``/``, matching
    by name when there is no slash, and similar rules are the caller's.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            if pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/"):
                after = i + 2
                if after == n:
                    out.append(".*")
                    i = after
                    continue
                if pattern[after] == "/":
                    out.append("(?:.*/)?")
                    i = after + 1
                    continue
            while i < n and pattern[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = _class_end(pattern, i)
            if end < 0:  # an unclosed bracket is a literal
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                body = body.replace("\\", "\\\\").replace("[", "\\[")
                out.append(("[^/" if negate else "[") + body + "]")
                i = end + 1
                continue
        elif ch == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """The index of the ``]`` closing the class opened at ``start``, or -1."""
    j = start + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":  # a leading "]" is a member
        j += 1
    return pattern.find("]", j)
