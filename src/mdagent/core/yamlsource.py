"""YAML text -> plain data that remembers where each key was written.

Strict where a silent mistake would change behaviour: duplicate keys are an
error (PyYAML keeps the last one without a word), and every error carries the
file's path and line so ``agent check`` can print ``path:line:col: ...``.

Bounded, whatever the input: a file larger than its cap is refused before it
is read (:func:`read_capped`), and anchors and aliases may not make a document
larger than it is written by more than :data:`ALIAS_BUDGET` values (a 500-byte
"billion laughs" file would otherwise cost gigabytes once anything walks it).
The budget is checked on the composed node graph, between composing and
constructing, so it holds for any PyYAML loader class, the libyaml-backed
``CSafeLoader`` included.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from mdagent.core.errors import ConfigError

# The values that know their place, defined beside the fast reader (which builds
# them too) and importable from here as before.
from mdagent.core.yamlfast import Located, LocatedList

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

#: How many values anchors and aliases may add to a document beyond those
#: written in it. Real files use a few aliases for shared blocks; a
#: "billion laughs" file needs millions.
ALIAS_BUDGET = 10_000
#: The largest YAML file (settings, declarations) read, in bytes.
MAX_YAML_BYTES = 1 << 20
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _located_mapping(loader: Any, node: Any, build: Callable[[Any], Any]) -> Located:
    """A mapping node as a :class:`Located`, its keys and values made by ``build``.

    A key written twice and an unhashable key are errors at the key's
    position. A key written beside a ``<<`` merge replaces the merged one, as
    YAML's merge keys mean (that is what they are for: a shared block with
    one value changed); among merged blocks the first one named wins.
    """
    import yaml

    if not isinstance(node, yaml.MappingNode):
        raise yaml.constructor.ConstructorError(
            None, None, f"expected a mapping, found {node.id}", node.start_mark
        )
    loader.flatten_mapping(node)
    merged = node.merged_pairs  # the first pairs came from `<<`; the rest were written here
    mapping = Located()
    mapping.at = (node.start_mark.line + 1, node.start_mark.column + 1)
    lines = mapping.lines
    written_keys: set[Any] = set()
    for index, (key_node, value_node) in enumerate(node.value):
        key = build(key_node)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value", key_node.start_mark
            ) from None
        if index >= merged:
            if key in written_keys:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first defined on line {lines[key][0]})",
                    key_node.start_mark,
                )
            written_keys.add(key)
        # A merged key met again is replaced: flatten_mapping orders the blocks
        # so that the first one named in `<<: [*a, *b]` comes last and wins.
        mapping[key] = build(value_node)
        lines[key] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
    return mapping


def _located_sequence(node: Any, build: Callable[[Any], Any]) -> LocatedList:
    import yaml

    if not isinstance(node, yaml.SequenceNode):  # `!!seq x`
        raise yaml.constructor.ConstructorError(
            None, None, f"expected a sequence, found {node.id}", node.start_mark
        )
    items = LocatedList(build(child) for child in node.value)
    items.at = (node.start_mark.line + 1, node.start_mark.column + 1)
    items.items_at = [(c.start_mark.line + 1, c.start_mark.column + 1) for c in node.value]
    return items


def _loader_class(pure: bool = False):
    import yaml

    # libyaml's scanner is ~10x faster than PyYAML's pure-Python one, and
    # parsing dominated a cold compile. The constructors below are the same
    # on both, so duplicate keys and positions do not depend on which is used.
    base = yaml.SafeLoader if pure else getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(base):
        """A safe loader that rejects duplicate keys and records key positions."""

        def flatten_mapping(self, node):
            # PyYAML moves merged pairs to the front and drops the `<<` keys,
            # in place, once (also when it merges the node into another one):
            # remember how many pairs came from merges, for _located_mapping.
            if not hasattr(node, "merged_pairs"):
                written = sum(1 for key_node, _ in node.value if key_node.tag != _MERGE_TAG)
                super().flatten_mapping(node)
                node.merged_pairs = len(node.value) - written

    def construct_mapping(loader, node, deep=False):
        return _located_mapping(loader, node, lambda n: loader.construct_object(n, deep=True))

    def construct_sequence(loader, node, deep=False):
        return _located_sequence(node, lambda n: loader.construct_object(n, deep=True))

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    StrictLoader.add_constructor(
        yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, construct_sequence
    )
    return StrictLoader


def construct(loader: Any, root: Any) -> Any:
    """What ``loader.construct_document(root)`` returns, made with less of PyYAML's machinery.

    PyYAML dispatches every node through a table of constructors, keeps each
    result for aliases and runs generators for recursive objects; for
    declaration files and front-matter, nearly all strings, mappings and
    sequences, that was half of a cold compile's YAML time. Plain strings,
    mappings and sequences are made here; every other node (numbers, booleans,
    null, dates, explicit tags, errors) goes to the loader's own constructor.
    An alias is made again where it is used instead of shared (the alias
    budget bounds what that costs), which a plain-data reader cannot tell apart.
    """
    import yaml

    scalar, mapping, sequence = yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode
    str_tag = "tag:yaml.org,2002:str"
    map_tag = yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG
    seq_tag = yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG

    def build(node: Any) -> Any:
        kind, tag = type(node), node.tag
        if kind is scalar and tag == str_tag:
            return node.value
        if kind is mapping and tag == map_tag:
            return _located_mapping(loader, node, build)
        if kind is sequence and tag == seq_tag:
            return _located_sequence(node, build)
        return loader.construct_object(node, deep=True)

    return build(root)


_LOADERS: dict[bool, Any] = {}


def strict_loader(pure: bool = False):
    """The strict loader class: libyaml-backed when available, unless ``pure``.

    Strict: a duplicate key is an error; mappings and lists remember where
    their items are (:class:`Located`, :class:`LocatedList`). Cached per ``pure``.
    """
    loader = _LOADERS.get(pure)
    if loader is None:
        loader = _LOADERS[pure] = _loader_class(pure)
    return loader


def _size(count: int) -> str:
    if count >= 1 << 20:
        return f"{count / (1 << 20):.1f} MiB"
    return f"{count / 1024:.0f} KiB" if count >= 1024 else f"{count} bytes"


def read_capped(path: str | Path, limit: int = MAX_YAML_BYTES, what: str = "a YAML file") -> bytes:
    """The bytes of ``path``, or a ConfigError when it holds more than ``limit`` bytes.

    At most ``limit + 1`` bytes are ever read, so a huge file (or one that
    grows while it is read) costs nothing. ``OSError`` passes through.
    """
    with open(path, "rb") as fh:
        # Ask for the size the file has (plus one byte, to see it grow) rather
        # than for the cap: read(n) allocates n bytes first, a megabyte per
        # file, which a cold compile of a thousand skills paid for in time.
        size = os.fstat(fh.fileno()).st_size
        raw = fh.read(min(size, limit) + 1)
        if len(raw) > size and len(raw) <= limit:
            raw += fh.read(limit + 1 - len(raw))  # it grew while read
    if len(raw) > limit:
        try:
            size = _size(max(os.stat(path).st_size, len(raw)))
        except OSError:
            size = f"more than {_size(limit)}"
        raise ConfigError(
            f"file too large: {size} ({what} may be at most {_size(limit)})", str(path), 1, 1
        )
    return raw


def _line_col(text: Any, index: int, newline: Any) -> tuple[int, int]:
    """The 1-based (line, col) of ``index`` in ``text`` (a str or bytes, with its ``newline``)."""
    return text.count(newline, 0, index) + 1, index - (text.rfind(newline, 0, index) + 1) + 1


def decode(raw: bytes, path: str | Path) -> str:
    """UTF-8 text of ``raw``, or a ConfigError naming the line of the first bad byte."""
    if b"\x00" in raw[:8192]:
        raise ConfigError("binary file, expected UTF-8 text", str(path), 1, 1)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _line_col(raw, exc.start, b"\n")
        raise ConfigError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", str(path), line, col
        ) from None
    return text.removeprefix("\ufeff")


def load_yaml(
    text: str, path: str | Path, line_offset: int = 0, *, pure: bool = False, fast: bool = True
) -> Any:
    """Parse ``text``; a syntax error becomes a ConfigError at its line.

    ``line_offset`` shifts reported lines (front-matter starts after ``---``).
    ``pure`` forces PyYAML's pure-Python parser (tests compare the two);
    ``fast=False`` skips :mod:`mdagent.core.yamlfast`, which reads the plain part
    of YAML nearly every file is written in without importing PyYAML.
    """
    if fast and not pure:
        from mdagent.core.yamlfast import NOT_SIMPLE, read

        data = read(text)
        if data is not NOT_SIMPLE:
            return data
    import yaml

    try:
        # yaml.load() spelled out, to check the aliases between composing and constructing.
        loader = strict_loader(pure)(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            if "&" in text and "*" in text:  # no anchor or no alias: nothing to expand
                _check_aliases(node, path, line_offset)
            return construct(loader, node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = (mark.line + 1 if mark else 1) + line_offset
        col = mark.column + 1 if mark else 1
        message = exc.problem or exc.context or "invalid YAML"
        if "\\t" in message or "'\\t'" in str(exc) or "tab character" in message:
            message = "tab character: YAML indentation must use spaces"
        elif mark is not None and _char_at(text, mark.line, mark.column) == "\t":
            # libyaml's message does not show the character: look at the text.
            message = "tab character: YAML indentation must use spaces"
        raise ConfigError(f"invalid YAML: {message}", str(path), line, col) from None
    except yaml.reader.ReaderError as exc:
        # A character YAML does not allow: one line at its own position, not
        # PyYAML's two-line message about "<unicode string>".
        line, col = _line_col(text, exc.position, "\n")
        line += line_offset
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        message = f"invalid YAML: character U+{code:04X} is not allowed ({exc.reason})"
        raise ConfigError(message, str(path), line, col) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", str(path), 1 + line_offset, 1) from None
    except RecursionError:
        raise ConfigError(
            "invalid YAML: nested too deeply", str(path), 1 + line_offset, 1
        ) from None


def _char_at(text: str, line: int, column: int) -> str:
    """The character at 0-based ``line``/``column`` of ``text``, or ``""``."""
    start = 0
    for _ in range(line):
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    index = start + column
    return text[index] if index < len(text) else ""


def _check_aliases(root: Any, path: str | Path, line_offset: int) -> None:
    """Refuse a node graph whose aliases expand it by more than :data:`ALIAS_BUDGET` values.

    An alias is a second reference to a node, so the graph stays small while
    its expansion (what ``plain``, a schema check or a JSON dump walks) can be
    exponential. Each node's expanded size is computed once, bottom up, without
    recursion (deep nesting must not overflow the stack here); a node that
    contains itself (``&a [*a]``) is refused too.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    distinct = 0
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        children = _child_nodes(node)
        if finished:
            open_nodes.discard(key)
            total = 1 + sum(sizes[id(child)] for child in children)
            sizes[key] = total
            if total - distinct > ALIAS_BUDGET:
                mark = node.start_mark
                raise ConfigError(
                    f"YAML aliases expand this document by more than {ALIAS_BUDGET:,} values;"
                    " refusing it (write the values out, or use fewer aliases)",
                    str(path),
                    mark.line + 1 + line_offset,
                    mark.column + 1,
                )
            continue
        if key in sizes:
            continue
        if key in open_nodes:  # DFS: an open node met again is its own ancestor
            mark = node.start_mark
            raise ConfigError(
                "a YAML alias refers to a node that contains it (a recursive structure)",
                str(path),
                mark.line + 1 + line_offset,
                mark.column + 1,
            )
        open_nodes.add(key)
        distinct += 1
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)


def _child_nodes(node: Any) -> list[Any]:
    value = node.value
    if not isinstance(value, list):  # a scalar
        return []
    if value and isinstance(value[0], tuple):  # a mapping: (key, value) pairs
        return [part for pair in value for part in pair]
    return list(value)


def position(data: Any, pointer: Iterable[Any], offset: int = 0) -> tuple[int, int]:
    """The (line, col) of the deepest key of ``pointer`` that ``data`` locates."""
    where = getattr(data, "at", (1, 1))
    node = data
    for key in pointer:
        if isinstance(node, Located) and key in node.lines:
            where = node.lines[key]
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            items_at = getattr(node, "items_at", None)
            node = node[key]
            where = items_at[key] if items_at else getattr(node, "at", where)
        else:
            break
    return where[0] + offset, where[1]


def plain(data: Any) -> Any:
    """``data`` with every :class:`Located` turned back into a dict (for JSON)."""
    kind = data.__class__
    if kind is str or kind is int or kind is bool or data is None:
        return data  # nearly every value: no isinstance chain for them
    if isinstance(data, dict):
        return {(k if k.__class__ is str else str(k)): plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [plain(v) for v in data]
    if isinstance(data, (str, int, float, bool)):
        return data
    return str(data)  # dates and the like: YAML types JSON has no word for
