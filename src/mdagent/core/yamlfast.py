"""A fast reader for the plain part of YAML that front-matter and declarations are written in.

A cold compile reads every SKILL.md's front-matter and every declaration
file. Through libyaml that is a C parse, then a Python call per scalar for
PyYAML's resolver and per node for building: most of a cold compile. Nearly
every such file uses a small part of YAML: block mappings and sequences
indented with spaces, one-line plain and quoted scalars, and flow
collections (``{...}``, ``[...]``, also spread over lines as OpenClaw's
``metadata`` is). :func:`read` reads exactly that part into the same
:class:`~mdagent.core.yamlsource.Located` data, positions included, and answers
:data:`NOT_SIMPLE` for anything else: anchors, aliases, tags, block scalars,
escapes, multi-line plain scalars, floats, dates, duplicate keys, tabs,
anything odd. The caller then reads the text with libyaml as before, so
every error message and every rare form is still libyaml's. A property test
(``tests/test_yamlfast.py``) checks that whatever this reader accepts,
libyaml reads to the same values, types and positions.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any


class Located(dict):
    """A mapping that knows the (line, col) of each of its keys (1-based)."""

    __slots__ = ("at", "lines")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lines: dict[Any, tuple[int, int]] = {}
        self.at: tuple[int, int] = (1, 1)


class LocatedList(list):
    """A list that knows the (line, col) of each of its items (1-based).

    Policy rules are list items: ``agent policy rules`` and a failing
    ``policy.tests`` entry point at the item's own line, not its list's key.
    """

    __slots__ = ("at", "items_at")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.at: tuple[int, int] = (1, 1)
        self.items_at: list[tuple[int, int]] = []


#: What :func:`read` returns for text outside the part of YAML it reads.
NOT_SIMPLE = object()


class _NotSimple(Exception):
    """The text uses YAML this reader leaves to libyaml."""


# Anything but printable text and "\n": tabs, CR, YAML's other line breaks
# (NEL, LS, PS), a byte-order mark, control characters. libyaml's business.
# Written as the few ranges left out: the complement takes 4 ms to compile.
_ODD = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
# A block mapping key and its `:` (followed by a space or the line's end).
_KEY = re.compile(r"""(?:([A-Za-z0-9_][A-Za-z0-9_.\-/]*)|'((?:[^']|'')*)'|"([^"\\]*)"):(?: +|$)""")
_SINGLE = re.compile(r"'((?:[^'\n]|'')*)'")
_DOUBLE = re.compile(r'"((?:[^"\\\n]|\\[^\n])*)"')
_ESCAPE = re.compile(r"\\(?:x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))")
# The escapes of double-quoted scalars (YAML 1.1, as libyaml reads them).
_ESCAPES = {
    **{"0": "\0", "a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f"},
    **{"r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\"},
    **{"N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"},
}
# A plain scalar inside a flow collection: words separated by single spaces,
# without the characters that end it or that this reader leaves to libyaml.
_FLOW_PLAIN = re.compile(r"[^ \n,\[\]{}:#]+(?: [^ \n,\[\]{}:#]+)*")
# Blanks, line breaks and comments between tokens of a flow collection.
_GAP = re.compile(r"(?:[ \n]|(?<![^ \n])#[^\n]*)*")
# What may follow a value on its line: nothing, or a comment after a space.
_TAIL = re.compile(r"(?: +(?:#[^\n]*)?)?(?:\n|\Z)")
# Characters that begin something other than a plain scalar.
_INDICATORS = frozenset("?:,[]{}#&*!|>'\"%@`")
# First characters of plain scalars PyYAML may resolve to a number, a date,
# a merge key or a "value" (its implicit resolvers, by first character).
_NUMERIC_START = frozenset("-+.0123456789<=")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9_]*)\Z")
# What those resolvers match besides decimal integers: left to libyaml. Any
# other plain scalar, `1password` or `1.0.0`, is a string.
_NOT_TEXT = re.compile(
    r"""(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
    |[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
    |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?.*
    |<<|=)\Z""",
    re.VERBOSE,
)
# YAML 1.1's booleans and nulls, as PyYAML resolves them.
_WORDS: dict[str, object] = {
    **dict.fromkeys(["yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"], True),
    **dict.fromkeys(["no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"], False),
    **dict.fromkeys(["~", "null", "Null", "NULL"], None),
}
# libyaml refuses an implicit key longer than 1024 characters (up to its `:`).
_MAX_KEY = 1000
# Deeper collections are left to libyaml, whose own limit (the stack) then
# decides, as it does for every other document.
_MAX_DEPTH = 64


def read(text: str) -> object:
    """The data of the YAML document ``text``, or :data:`NOT_SIMPLE`.

    The data is what :func:`mdagent.core.yamlsource.load_yaml` makes of the same
    text (``None`` for a document of blanks and comments).
    """
    if _ODD.search(text):
        return NOT_SIMPLE
    try:
        return _Reader(text).document()
    except (_NotSimple, IndexError, KeyError, ValueError, RecursionError):
        return NOT_SIMPLE


def _unescape(match: re.Match[str]) -> str:
    digits = match.group(1) or match.group(2) or match.group(3)
    if digits is None:
        return _ESCAPES[match.group(4)]  # KeyError: not an escape, libyaml's error
    code = int(digits, 16)
    if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        raise _NotSimple
    return chr(code)


def _quoted(match: re.Match[str], quote: str) -> str:
    """The value of a quoted scalar matched by :data:`_SINGLE` or :data:`_DOUBLE`."""
    value = match.group(1)
    if quote == "'":
        return value.replace("''", "'")
    return _ESCAPE.sub(_unescape, value) if "\\" in value else value


def _plain(text: str) -> object:
    """A plain scalar's value: a string, a decimal integer, a boolean or null."""
    if text[0] in _NUMERIC_START:
        if text[0] == "-" and (len(text) == 1 or text[1] == " "):
            raise _NotSimple  # a sequence's `- `, where it may not be
        if _INT.match(text):
            return int(text.replace("_", ""))
        if _NOT_TEXT.match(text):
            raise _NotSimple
        return text
    return _WORDS.get(text, text)  # (None for null: get's default is only for a miss)


class _Reader:
    """One document: block structure by lines, flow collections by characters."""

    def __init__(self, text: str) -> None:
        self.text = text
        # (line number, indent, text without indent or trailing blanks, offset of that text)
        rows = []
        offset = 0
        for number, line in enumerate(text.split("\n"), 1):
            body = line.lstrip(" ")
            if body and body[0] != "#":
                indent = len(line) - len(body)
                rows.append((number, indent, body.rstrip(" "), offset + indent))
            offset += len(line) + 1
        self.rows = rows
        # Where a flow collection's reading is: its line and that line's offset.
        self.line = 0
        self.line_start = 0
        self.depth = 0  # collections open

    def enter(self) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _NotSimple

    def document(self) -> object:
        if not self.rows:
            return None
        data, k = self.mapping(0, self.rows[0][1])
        if k != len(self.rows):
            raise _NotSimple
        return data

    def mapping(self, k: int, indent: int) -> tuple[Located, int]:
        self.enter()
        rows, count = self.rows, len(self.rows)
        result = Located()
        lines = result.lines
        result.at = (rows[k][0], indent + 1)
        while k < count:
            number, ind, body, start = rows[k]
            if ind != indent:
                if ind < indent:
                    break
                raise _NotSimple
            match = _KEY.match(body)
            if match is None:
                raise _NotSimple
            end = match.end()
            if end > _MAX_KEY:
                raise _NotSimple
            plain_key, single, double = match.groups()
            if plain_key is not None:
                # Nearly every key is a word: no call for it (a cold compile reads thousands).
                if plain_key[0] in _NUMERIC_START or plain_key in _WORDS:
                    key = _plain(plain_key)
                else:
                    key = plain_key
            elif single is not None:
                key = single.replace("''", "'")
            else:
                key = double
            if key in lines:
                raise _NotSimple  # written twice: libyaml's error says where
            lines[key] = (number, indent + 1)
            rest = body[end:]
            if rest and rest[0] != "#":
                result[key], k = self.inline(k, rest, start + end, indent)
            else:
                result[key], k = self.below(k + 1, indent)
        self.depth -= 1
        return result, k

    def below(self, k: int, indent: int) -> tuple[object, int]:
        """The value of a key at ``indent`` written on the lines after it."""
        if k < len(self.rows):
            number, ind, body, start = self.rows[k]
            if body[0] == "-" and (len(body) == 1 or body[1] == " ") and ind >= indent:
                return self.sequence(k, ind)
            if ind > indent:
                if body[0] in "[{":
                    return self.inline(k, body, start, indent)
                return self.mapping(k, ind)
        return None, k

    def sequence(self, k: int, indent: int) -> tuple[LocatedList, int]:
        self.enter()
        rows, count = self.rows, len(self.rows)
        items = LocatedList()
        items.at = (rows[k][0], indent + 1)
        where = items.items_at
        while k < count:
            number, ind, body, start = rows[k]
            if ind != indent or body[0] != "-":
                if ind > indent:
                    raise _NotSimple
                break
            if len(body) == 1 or body[1] != " ":
                raise _NotSimple  # `-` alone or `-x` where items are
            rest = body[2:].lstrip(" ")
            if not rest or rest[0] == "#":
                raise _NotSimple  # an empty item, or a block below it
            skip = len(body) - len(rest)
            where.append((number, ind + skip + 1))
            if _KEY.match(rest):
                # `- key: value`: a mapping whose keys line up with this first one.
                self.rows[k] = (number, ind + skip, rest, start + skip)
                value, k = self.mapping(k, ind + skip)
            else:
                value, k = self.inline(k, rest, start + skip, indent)
            items.append(value)
        self.depth -= 1
        return items, k

    def inline(self, k: int, rest: str, offset: int, indent: int) -> tuple[object, int]:
        """The value that starts at ``rest`` (text offset ``offset``) on row ``k``."""
        first = rest[0]
        if first == "[" or first == "{":
            number, ind, _, start = self.rows[k]
            self.line, self.line_start = number, start - ind
            value, end = self.flow(offset, indent)
            tail = _TAIL.match(self.text, end)
            if tail is None:
                raise _NotSimple
            k += 1
            while k < len(self.rows) and self.rows[k][0] <= self.line:
                k += 1  # rows the collection spread over
            return value, k
        if first == "'" or first == '"':
            match = (_SINGLE if first == "'" else _DOUBLE).match(rest)
            if match is None:
                raise _NotSimple  # spread over lines, or with escapes
            tail = rest[match.end() :]
            if tail and not (tail[0] == " " and tail.lstrip(" ")[0] == "#"):
                raise _NotSimple
            return _quoted(match, first), k + 1
        if first in _INDICATORS:
            raise _NotSimple
        comment = rest.find(" #")
        if comment >= 0:
            rest = rest[:comment].rstrip(" ")
        if ": " in rest or rest[-1] == ":":
            raise _NotSimple  # a mapping where a scalar is, an error for libyaml
        if rest[0] in _NUMERIC_START or rest in _WORDS:
            return _plain(rest), k + 1
        return rest, k + 1

    # -- flow collections, read by character --------------------------------

    def gap(self, i: int, indent: int) -> int:
        """Skip blanks, line breaks and comments; lines must stay right of ``indent``."""
        text = self.text
        here = text[i]
        if here != " " and here != "\n" and here != "#":
            return i  # the common cases first: nothing to skip, or one space
        if here == " " and text[i + 1] not in " \n#":
            return i + 1
        end = _GAP.match(text, i).end()
        newline = text.rfind("\n", i, end)
        if newline >= 0:
            self.line += text.count("\n", i, end)
            self.line_start = newline + 1
            if end - self.line_start <= indent:
                raise _NotSimple  # a line of the collection as far left as its key
        return end

    def flow(self, i: int, indent: int) -> tuple[object, int]:
        """The flow node at ``i`` and the offset after it."""
        first = self.text[i]
        if first == "[":
            return self.flow_sequence(i, indent)
        if first == "{":
            return self.flow_mapping(i, indent)
        return self.flow_scalar(i)

    def flow_sequence(self, i: int, indent: int) -> tuple[LocatedList, int]:
        self.enter()
        text = self.text
        items = LocatedList()
        items.at = (self.line, i - self.line_start + 1)
        where = items.items_at
        i = self.gap(i + 1, indent)
        while text[i] != "]":
            where.append((self.line, i - self.line_start + 1))
            value, i = self.flow(i, indent)
            items.append(value)
            i = self.next_entry(i, indent, "]")
        self.depth -= 1
        return items, i + 1

    def flow_mapping(self, i: int, indent: int) -> tuple[Located, int]:
        self.enter()
        text = self.text
        result = Located()
        result.at = (self.line, i - self.line_start + 1)
        lines = result.lines
        i = self.gap(i + 1, indent)
        while text[i] != "}":
            at = (self.line, i - self.line_start + 1)
            quoted = text[i] in "'\""
            key_start = i
            key, i = self.flow_scalar(i)  # a collection as a key: not here
            if key in lines:
                raise _NotSimple
            while text[i] == " ":
                i += 1
            if text[i] != ":" or not (quoted or text[i + 1] in " \n"):
                raise _NotSimple
            if i - key_start > _MAX_KEY:
                raise _NotSimple  # libyaml's limit on implicit keys
            i = self.gap(i + 1, indent)
            if text[i] in ",}":
                raise _NotSimple  # a key without a value
            result[key], i = self.flow(i, indent)
            lines[key] = at
            i = self.next_entry(i, indent, "}")
        self.depth -= 1
        return result, i + 1

    def next_entry(self, i: int, indent: int, closer: str) -> int:
        """Past the ``,`` after an entry, or at the ``closer`` after the last one."""
        i = self.gap(i, indent)
        if self.text[i] == ",":
            return self.gap(i + 1, indent)
        if self.text[i] != closer:
            raise _NotSimple
        return i

    def flow_scalar(self, i: int) -> tuple[object, int]:
        text = self.text
        first = text[i]
        if first == "'" or first == '"':
            match = (_SINGLE if first == "'" else _DOUBLE).match(text, i)
            if match is None:
                raise _NotSimple
            return _quoted(match, first), match.end()
        if first in _INDICATORS:
            raise _NotSimple  # `[` and `{` among them: a collection where a scalar must be
        match = _FLOW_PLAIN.match(text, i)
        if match is None:
            raise _NotSimple
        return _plain(match.group()), match.end()
