"""How bash reads the text of one word, before any of it runs.

Each word of a segment is one of three kinds (:data:`LITERAL` after quote
removal, a static :data:`PATTERN` that only names files, or :data:`COMPUTED`
at run time); a ``NAME=value`` word is an :data:`ASSIGNMENT`. Quote removal
needs bash's escapes: a backslash in a bare word, in a double-quoted string
or a here-document, and ANSI-C quoting (``$'\\x41'``, :func:`ansi_c`). Text the
grammar read as plain may still hold a substitution bash would run
(:func:`hides_command`). Read by the walker (:mod:`mdagent.safety.shell.shellparse`),
the wrapper table (:mod:`mdagent.safety.shell.wrappers`) and what it knows about
single commands (:mod:`mdagent.safety.shell.understanding`).
"""

from __future__ import annotations

import re

# How each word of a segment was written: literal after quote removal, a
# static pattern (glob or brace expansion: file names, not code), or computed
# at run time (any expansion or substitution).
LITERAL, PATTERN, COMPUTED = "literal", "pattern", "computed"
KIND_ORDER = (LITERAL, PATTERN, COMPUTED)
# A word that assigns a variable (``NAME=``, ``NAME+=``, ``NAME[i]=``).
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
INTEGER = re.compile(r"[+-]?\d+")
# Unquoted glob characters and brace expansions ({a,b}, {1..3}) in a word.
GLOB = re.compile(r"[*?[]")
BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
# ${name}, ${1}, ${#name}: a value read, nothing evaluated or assigned.
PLAIN_EXPANSION = re.compile(r"\$\{#?([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])\}")
# Text bash would expand although the grammar read it as plain text.
HIDDEN = ("`", "$(", "${", "$[")
HIDDEN_OR_PROCESS = (*HIDDEN, "<(", ">(")
# Bash evaluates an array subscript found in a string as arithmetic, running
# its substitutions: read, printf -v, [[ -v ]], [[ 1 -eq 'a[$(cmd)]' ]], (( )).
SUBSCRIPT_CODE = re.compile(r"\[[^\]]*(\$\(|`)")
# A backslash escape in a bare word, in a double-quoted string, in a here-document.
ESCAPE = re.compile(r"\\(.)", re.S)
DQ_ESCAPE = re.compile(r'\\([$`"\\\n])')
HEREDOC_ESCAPE = re.compile(r"\\([$`\\\n])")
_ANSI_C_ESCAPE = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.S
)
_ANSI_C_SIMPLE = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip


def hides_command(text: str, markers: tuple[str, ...] = HIDDEN) -> bool:
    """Whether ``text``, read as plain, holds an unescaped substitution."""
    plain = ESCAPE.sub("", text)
    return any(marker in plain for marker in markers)


def ansi_c(body: str) -> str:
    """The text of ``$'body'``: escapes decoded as bash does."""

    def decode(match: re.Match[str]) -> str:
        code = match.group(1)
        try:
            if code[0] in "xuU":
                return chr(int(code[1:], 16))
            if code[0].isdigit():
                return chr(int(code, 8) & 0xFF)
        except (ValueError, OverflowError):
            return match.group(0)
        if code[0] == "c" and len(code) == 2:
            return chr(ord(code[1]) & 0x1F)
        return _ANSI_C_SIMPLE.get(code, match.group(0))

    return _ANSI_C_ESCAPE.sub(decode, body)


def unescape(match: re.Match[str]) -> str:
    """What an escape :data:`ESCAPE`, :data:`DQ_ESCAPE` or :data:`HEREDOC_ESCAPE`
    matched stands for: the character, or nothing for a backslash-newline."""
    return "" if match.group(1) == "\n" else match.group(1)
