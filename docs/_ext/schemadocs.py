"""Key tables from JSON Schemas, and the keys a schema knows.

A row per key: its path (``policy.mode``, ``mcp_servers.<name>.url``,
``hooks.before[]``), what values it takes (read from the schema's types,
enums and bounds), its default where the program has one, and its
``description`` (or ``title``, for a key whose description doubles as the
"expected …" text of its error message). The same walk answers whether a key
the docs mention exists at all (:func:`find_key`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, NamedTuple

#: A description that names another key makes this key that key's other spelling.
ALIAS = re.compile(r"Another spelling of `([^`]+)`\.")
#: The placeholder for a key that is a name the author picks.
NAME = "<name>"


class Row(NamedTuple):
    """One key of a table."""

    path: str
    value: str
    text: str
    default: str = ""


class SchemaKeys:
    """One schema: its keys as rows, its ``$ref``s resolved.

    ``node`` arguments are schema objects of this schema; ``id()`` of the
    property schemas a walk passed is kept in :attr:`shown`, so a caller can
    tell which keys no table shows.
    """

    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        self.name = name
        self.schema = schema
        self.shown: set[int] = set()

    # -- reading the schema ------------------------------------------------------------

    def at(self, pointer: str) -> Any:
        """The part of the schema at a JSON pointer (``/$defs/hooks/items``)."""
        node: Any = self.schema
        for part in [p for p in pointer.split("/") if p]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node

    def resolve(self, node: Any) -> Any:
        """``node`` with its ``$ref`` followed (its own keywords win over the target's)."""
        seen = 0
        while isinstance(node, dict) and "$ref" in node and seen < 32:
            target = self.at(node["$ref"].removeprefix("#"))
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            seen += 1
        return node

    def ref_name(self, node: Any) -> str | None:
        """The ``$defs`` name ``node`` (or its ``items``) refers to, if any."""
        for part in (node, node.get("items") if isinstance(node, dict) else None):
            if isinstance(part, dict) and str(part.get("$ref", "")).startswith("#/$defs/"):
                return part["$ref"].rsplit("/", 1)[1]
        return None

    def branches(self, node: Any) -> list[Any]:
        """``node`` and the resolved schemas of its ``oneOf``/``anyOf``/``allOf``."""
        node = self.resolve(node)
        found = [node]
        for keyword in ("oneOf", "anyOf", "allOf"):
            for branch in node.get(keyword, []) if isinstance(node, dict) else []:
                found.extend(self.branches(branch))
        return found

    def properties(self, node: Any) -> dict[str, Any]:
        """The properties ``node`` declares, its branches' included."""
        found: dict[str, Any] = {}
        for branch in self.branches(node):
            if isinstance(branch, dict):
                for key, value in (branch.get("properties") or {}).items():
                    found.setdefault(key, value)
        return found

    @staticmethod
    def text(node: Any) -> str | None:
        """What a key does: its ``title`` when it has one, else its ``description``."""
        if not isinstance(node, dict):
            return None
        return node.get("title") or node.get("description")

    def described(self, node: Any) -> str | None:
        """The key's own text, else that of the definition it refers to."""
        return self.text(node) or self.text(self.resolve(node))

    # -- values ------------------------------------------------------------------------

    def value(self, node: Any) -> str:
        """What values a key takes, in a few words (``integer ≥ 1``, `` `ask` | `deny` ``)."""
        node = self.resolve(node)
        if not isinstance(node, dict) or not node:
            return "any"
        if "const" in node:
            return f"`{_yaml(node['const'])}`"
        if "enum" in node:
            return " \\| ".join(f"`{_yaml(v)}`" for v in node["enum"])
        for keyword in ("oneOf", "anyOf"):
            if keyword in node and "type" not in node:
                words: list[str] = []
                for branch in node[keyword]:
                    word = self.value(branch)
                    if word not in words:
                        words.append(word)
                return " or ".join(words)
        kinds = node.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
        words = [self._kind(kind, node) for kind in kinds] or (
            ["mapping"] if "properties" in node else ["any"]
        )
        return " or ".join(words)

    def _kind(self, kind: str, node: dict[str, Any]) -> str:
        if kind == "array":
            items = node.get("items")
            return f"list of {self._plural(items)}" if items else "list"
        if kind == "object":
            more = node.get("additionalProperties")
            if isinstance(more, dict) and not node.get("properties"):
                return f"mapping of names to {self._plural(more)}"
            return "mapping"
        if kind in ("integer", "number"):
            return kind + _bounds(node)
        return {"string": "text", "null": "`null`"}.get(kind, kind)

    def _plural(self, node: Any) -> str:
        words = self.value(node).split(" or ")
        simple = {
            "text": "texts",
            "mapping": "mappings",
            "integer": "integers",
            "number": "numbers",
            "boolean": "booleans",
        }
        return " or ".join(simple.get(word, word) for word in words)

    # -- rows --------------------------------------------------------------------------

    def rows(
        self,
        pointer: str = "",
        prefix: str = "",
        linked: dict[str, str] | None = None,
        defaults: dict[str, Any] | None = None,
    ) -> list[Row]:
        """A row for every key under ``pointer``, paths starting with ``prefix``.

        ``linked`` maps a ``$defs`` name to the words a key that refers to it
        shows instead of its own keys (a shape documented elsewhere).
        ``defaults`` (nested like the settings) fills the default column.
        """
        start = self.at(pointer)
        self.shown.add(id(start))  # a table of one key's insides shows that key too
        found = list(self._below(start, prefix, linked or {}, defaults))
        return _merge_aliases(found)

    def _walk(
        self, node: Any, prefix: str, linked: dict[str, str], defaults: dict[str, Any] | None
    ) -> Iterator[Row]:
        for key, sub in self.properties(node).items():
            path = f"{prefix}.{key}" if prefix else key
            self.shown.add(id(sub))
            default = _lookup(defaults, path)
            ref = self.ref_name(sub)
            if ref in linked:
                yield Row(path, linked[ref], self.described(sub) or "", default)
                continue
            yield Row(path, self.value(sub), self.described(sub) or "", default)
            yield from self._below(sub, path, linked, defaults)

    def _below(
        self, node: Any, path: str, linked: dict[str, str], defaults: dict[str, Any] | None
    ) -> Iterator[Row]:
        """The keys inside a key's value: its own, its items', its named entries'."""
        yield from self._walk(node, path, linked, defaults)
        for branch in self.branches(node):
            if not isinstance(branch, dict):
                continue
            items = branch.get("items")
            if isinstance(items, dict) and self.properties(items):
                yield from self._walk(items, f"{path}[]", linked, defaults)
            more = branch.get("additionalProperties")
            if isinstance(more, dict) and self.properties(more):
                entry = f"{path}.{NAME}"
                if self.described(more):
                    yield Row(entry, self.value(more), self.described(more) or "")
                yield from self._below(more, entry, linked, defaults)

    # -- completeness ------------------------------------------------------------------

    def every_key(self) -> Iterator[tuple[str, Any]]:
        """``(where, schema)`` of every property anywhere in the schema, ``$defs`` included."""

        def visit(node: Any, where: str) -> Iterator[tuple[str, Any]]:
            if isinstance(node, dict):
                for key, sub in (node.get("properties") or {}).items():
                    yield f"{where}/properties/{key}", sub
                for key, sub in node.items():
                    if key not in ("enum", "const", "default"):
                        yield from visit(sub, f"{where}/{key}")
            elif isinstance(node, list):
                for index, sub in enumerate(node):
                    yield from visit(sub, f"{where}/{index}")

        seen: set[int] = set()
        for where, sub in visit(self.schema, "#"):
            if id(sub) not in seen:
                seen.add(id(sub))
                yield where, sub

    # -- looking a key up --------------------------------------------------------------

    def child(self, node: Any, key: str, root: bool = False) -> Any:
        """The schema of ``key`` inside ``node``; :data:`OPEN` where any key is allowed;
        None where the schema does not allow it.

        At the root of a schema that keeps unknown keys (SKILL.md front-matter:
        other tools add their own) the docs still may not name a key mdagent
        does not know.
        """
        props = self.properties(node)
        if key in props:
            return props[key]
        for branch in self.branches(node):
            if not isinstance(branch, dict):
                continue
            more = branch.get("additionalProperties")
            if isinstance(more, dict):
                return more
        closed = root or any(
            isinstance(b, dict) and b.get("additionalProperties") is False
            for b in self.branches(node)
        )
        return None if closed else OPEN

    def items(self, node: Any) -> Any:
        """The schema of a list's entries (``OPEN`` when the list's entries are anything)."""
        for branch in self.branches(node):
            if isinstance(branch, dict) and isinstance(branch.get("items"), dict):
                return branch["items"]
        return OPEN


#: Where a schema allows any key or value.
OPEN: dict[str, Any] = {}


def find_key(keys: SchemaKeys, path: list[str]) -> bool:
    """Whether the schema knows the dotted ``path`` (``["policy", "mode"]``)."""
    node: Any = keys.schema
    for index, part in enumerate(path):
        if node is OPEN:
            return True
        node = keys.child(node, part, root=index == 0)
        if node is None:
            return False
    return True


def unknown_keys(keys: SchemaKeys, data: Any) -> list[str]:
    """The dotted paths in ``data`` (an example's YAML) that the schema does not know."""
    found: list[str] = []

    def visit(node: Any, value: Any, path: str, root: bool) -> None:
        if node is OPEN:
            return
        if isinstance(value, dict):
            for key, sub in value.items():
                where = f"{path}.{key}" if path else str(key)
                child = keys.child(node, str(key), root=root)
                if child is None:
                    found.append(where)
                else:
                    visit(child, sub, where, False)
        elif isinstance(value, list):
            entries = keys.items(node)
            for sub in value:
                visit(entries, sub, f"{path}[]", False)

    visit(keys.schema, data, "", True)
    return found


def markdown_table(rows: list[Row], with_default: bool = False) -> str:
    """The rows as a Markdown table."""
    head = (
        ["key", "value", "default", "what it does"]
        if with_default
        else ["key", "value", "what it does"]
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [f"`{row.path}`" if "`" not in row.path else row.path, row.value]
        if with_default:
            cells.append(row.default)
        cells.append(_cell(row.text))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# -- helpers ---------------------------------------------------------------------------


def _merge_aliases(rows: list[Row]) -> list[Row]:
    """Rows of another spelling (``command_tool``) folded into their key's row."""
    by_path = {row.path: index for index, row in enumerate(rows)}
    also: dict[int, list[str]] = {}
    kept: list[int] = []
    for index, row in enumerate(rows):
        match = ALIAS.fullmatch(row.text)
        if match and match.group(1) in by_path:
            also.setdefault(by_path[match.group(1)], []).append(row.path)
        else:
            kept.append(index)
    merged = []
    for index in kept:
        row = rows[index]
        if index in also:
            spelled = ", ".join(f"`{p}`" for p in also[index])
            row = row._replace(path=f"`{row.path}` (also {spelled})")
        merged.append(row)
    return merged


def _lookup(defaults: dict[str, Any] | None, path: str) -> str:
    if defaults is None or "[" in path or NAME in path:
        return ""
    node: Any = defaults
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return ""
        node = node[part]
    if isinstance(node, dict) and node:
        return ""  # a section: its keys say theirs
    return f"`{_yaml(node)}`"


def _yaml(value: Any) -> str:
    """A value as YAML writes it (``true``, ``null``, ``[]``)."""
    import json

    if isinstance(value, str):
        return value
    return json.dumps(value)


def _bounds(node: dict[str, Any]) -> str:
    parts = []
    for keyword, sign in (
        ("minimum", "≥"),
        ("exclusiveMinimum", ">"),
        ("maximum", "≤"),
        ("exclusiveMaximum", "<"),
    ):
        if keyword in node:
            parts.append(f"{sign} {_yaml(node[keyword])}")
    return " " + ", ".join(parts) if parts else ""


def _cell(text: str) -> str:
    """Text in a table cell: a ``|`` outside code would end the cell."""
    return text.replace("|", "\\|").replace("\n", " ")
