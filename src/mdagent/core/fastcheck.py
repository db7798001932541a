"""JSON Schemas compiled to plain Python predicates: the one fast "is this valid?".

Two things are checked against JSON Schemas all the time: the files
authors write (a cold compile validates every declaration file, SKILL.md
front-matter and tool parameter schema) and every tool call's arguments
(importing jsonschema costs about 50 ms, more than the rest of a typed
``agent /name``). Valid is the common case for both, so a schema is
compiled once into nested closures that answer only valid / not valid;
jsonschema runs only when the answer is "not valid" (or the schema is not
compiled), so every message a person or a model sees stays jsonschema's.

The compiled check must never accept what jsonschema rejects (Draft
2020-12, no format checker). It knows the keywords mdagent's own schemas
and tool parameters use; a schema with any other keyword, or a keyword
value of the wrong type, is not compiled (:func:`compile_schema` returns
``None``) and jsonschema does all the work. Equality (``enum``, ``const``)
is jsonschema's own (``True`` is not ``1``, ``1`` is ``1.0``); a value JSON
does not give (a ``Decimal``, a tuple) is "not valid" wherever jsonschema's
rules for it differ, which costs only the slow path. The property tests in
``tests/test_fastcheck.py`` hold the promise over generated schemas and
instances.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

    Check = Callable[[Any], bool]

#: Keywords that never change whether an instance is valid (``format`` is an
#: annotation: mdagent's validators have no format checker).
_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",
    }
)


class _Unsupported(Exception):
    """A keyword the compiler does not know: leave the schema to jsonschema."""


def compile_schema(schema: Any) -> Check | None:
    """A predicate true only for instances ``schema`` accepts, or ``None``.

    Instances are plain JSON data (dict, list, str, int, float, bool, None).
    ``None`` means the schema uses a keyword this compiler does not know.
    """
    compiler = _Compiler(schema)
    try:
        return compiler.compile(schema)
    except _Unsupported:
        return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _equal(one: Any, two: Any) -> bool:
    """jsonschema's ``equal`` (used by enum and const): True is not 1, 1 is 1.0."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(
            key in two and _equal(value, two[key]) for key, value in one.items()
        )
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    return one == two


def _every(checks: list[Check]) -> Check:
    """A check that passes when every one of ``checks`` does (a loop, not a generator)."""
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)

    def every(value: Any) -> bool:
        for check in checks:  # noqa: SIM110 - a loop: all() over a generator is slower here
            if not check(value):
                return False
        return True

    return every


def _some(checks: list[Check]) -> Check:
    """A check that passes when one of ``checks`` does."""
    if len(checks) == 1:
        return checks[0]

    def some(value: Any) -> bool:
        for check in checks:  # noqa: SIM110 - as in _every
            if check(value):
                return True
        return False

    return some


class _Compiler:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return lambda value: True
        if schema is False:
            return lambda value: False
        if not isinstance(schema, dict):
            raise _Unsupported
        checks: list[Check] = []
        for keyword, arg in schema.items():
            if keyword in _ANNOTATIONS:
                continue
            method = getattr(self, "k_" + keyword.replace("$", "_"), None)
            if method is None:
                raise _Unsupported(keyword)
            check = method(arg, schema)
            if check is not None:
                checks.append(check)
        if not checks:
            return lambda value: True
        return _every(checks)

    # -- any type --

    def k_type(self, arg: Any, schema: dict) -> Check:
        names = [arg] if isinstance(arg, str) else arg
        if not isinstance(names, list) or not all(n in _TYPES for n in names):
            raise _Unsupported("type")
        return _some([_TYPES[n] for n in names])

    def k_enum(self, arg: Any, schema: dict) -> Check:
        if not isinstance(arg, list):
            raise _Unsupported("enum")
        return lambda value: any(_equal(value, option) for option in arg)

    def k_const(self, arg: Any, schema: dict) -> Check:
        return lambda value: _equal(value, arg)

    def k__ref(self, arg: Any, schema: dict) -> Check:
        if not isinstance(arg, str) or not arg.startswith("#/$defs/") or "~" in arg:
            raise _Unsupported("$ref")
        name = arg[len("#/$defs/") :]
        if "/" in name or name not in (self.root.get("$defs") or {}):
            raise _Unsupported("$ref")
        if name not in self.refs:
            self.refs[name] = lambda value: self.refs[name](value)  # a cycle resolves later
            self.refs[name] = self.compile(self.root["$defs"][name])
        refs = self.refs
        return lambda value: refs[name](value)

    def k_oneOf(self, arg: Any, schema: dict) -> Check:
        checks = self._list(arg)
        return lambda value: sum(1 for check in checks if check(value)) == 1

    def k_anyOf(self, arg: Any, schema: dict) -> Check:
        return _some(self._list(arg))

    def k_allOf(self, arg: Any, schema: dict) -> Check:
        return _every(self._list(arg))

    def k_not(self, arg: Any, schema: dict) -> Check:
        check = self.compile(arg)
        return lambda value: not check(value)

    def _list(self, arg: Any) -> list[Check]:
        if not isinstance(arg, list) or not arg:
            raise _Unsupported("a list of schemas")
        return [self.compile(sub) for sub in arg]

    # -- numbers --

    def _bound(self, arg: Any, test: Callable[[Any, Any], bool]) -> Check:
        if not _is_number(arg):
            raise _Unsupported("a bound")

        def bound(value: Any) -> bool:
            if isinstance(value, (int, float)):
                return isinstance(value, bool) or test(value, arg)
            # A number JSON does not give (Decimal, Fraction) is bounded in
            # jsonschema: "not valid" here leaves it to jsonschema's verdict.
            return isinstance(value, (str, list, dict)) or value is None

        return bound

    # Written as jsonschema's own failure tests, so a NaN fails no bound there either.
    def k_minimum(self, arg: Any, schema: dict) -> Check:
        return self._bound(arg, lambda v, a: not v < a)

    def k_maximum(self, arg: Any, schema: dict) -> Check:
        return self._bound(arg, lambda v, a: not v > a)

    def k_exclusiveMinimum(self, arg: Any, schema: dict) -> Check:
        return self._bound(arg, lambda v, a: not v <= a)

    def k_exclusiveMaximum(self, arg: Any, schema: dict) -> Check:
        return self._bound(arg, lambda v, a: not v >= a)

    # -- strings --

    def _count(self, arg: Any, kind: type, test: Callable[[int, int], bool]) -> Check:
        if not _is_integer(arg) or arg < 0:
            raise _Unsupported("a count")
        return lambda value: not isinstance(value, kind) or test(len(value), arg)

    def k_minLength(self, arg: Any, schema: dict) -> Check:
        return self._count(arg, str, lambda n, a: n >= a)

    def k_maxLength(self, arg: Any, schema: dict) -> Check:
        return self._count(arg, str, lambda n, a: n <= a)

    def k_pattern(self, arg: Any, schema: dict) -> Check:
        try:
            search = re.compile(arg).search
        except (re.error, TypeError):
            raise _Unsupported("pattern") from None
        return lambda value: not isinstance(value, str) or search(value) is not None

    # -- arrays --

    def k_items(self, arg: Any, schema: dict) -> Check:
        check = self.compile(arg)
        return lambda value: not isinstance(value, list) or all(map(check, value))

    def k_minItems(self, arg: Any, schema: dict) -> Check:
        return self._count(arg, list, lambda n, a: n >= a)

    def k_maxItems(self, arg: Any, schema: dict) -> Check:
        return self._count(arg, list, lambda n, a: n <= a)

    def k_contains(self, arg: Any, schema: dict) -> Check:
        check = self.compile(arg)
        return lambda value: not isinstance(value, list) or any(map(check, value))

    # -- objects --

    def k_properties(self, arg: Any, schema: dict) -> Check:
        if not isinstance(arg, dict):
            raise _Unsupported("properties")
        checks = {key: self.compile(sub) for key, sub in arg.items()}

        def properties(value: Any) -> bool:
            if not isinstance(value, dict):
                return True
            for key, check in checks.items():
                if key in value and not check(value[key]):
                    return False
            return True

        return properties

    def k_patternProperties(self, arg: Any, schema: dict) -> Check:
        if not isinstance(arg, dict):
            raise _Unsupported("patternProperties")
        try:
            checks = [(re.compile(p).search, self.compile(sub)) for p, sub in arg.items()]
        except (re.error, TypeError):
            raise _Unsupported("patternProperties") from None

        def pattern_properties(value: Any) -> bool:
            if isinstance(value, dict):
                for key, item in value.items():
                    for search, check in checks:
                        if search(key) and not check(item):
                            return False
            return True

        return pattern_properties

    def k_additionalProperties(self, arg: Any, schema: dict) -> Check:
        known = set(schema.get("properties") or ())
        searches = [re.compile(p).search for p in schema.get("patternProperties") or ()]
        if arg is False and not searches:  # the usual `additionalProperties: false`
            return lambda value: not isinstance(value, dict) or known.issuperset(value)
        check = self.compile(arg)

        def additional_properties(value: Any) -> bool:
            if isinstance(value, dict):
                for key, item in value.items():
                    if key in known or any(search(key) for search in searches):
                        continue
                    if not check(item):
                        return False
            return True

        return additional_properties

    def k_required(self, arg: Any, schema: dict) -> Check:
        if not isinstance(arg, list):
            raise _Unsupported("required")
        try:
            required = frozenset(arg)
        except TypeError:
            raise _Unsupported("required") from None
        return lambda value: not isinstance(value, dict) or value.keys() >= required

    def k_propertyNames(self, arg: Any, schema: dict) -> Check:
        check = self.compile(arg)
        return lambda value: not isinstance(value, dict) or all(map(check, value))

    def k_minProperties(self, arg: Any, schema: dict) -> Check:
        return self._count(arg, dict, lambda n, a: n >= a)

    def k_maxProperties(self, arg: Any, schema: dict) -> Check:
        return self._count(arg, dict, lambda n, a: n <= a)


_SIMPLE_TYPES = frozenset(_TYPES)
_COUNTS = frozenset(
    {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}
)
_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_SUBSCHEMA = frozenset({"additionalProperties", "items", "not", "contains", "propertyNames"})
_STRINGS = frozenset({"title", "description", "format", "pattern", "$comment"})


def plainly_valid_schema(schema: Any) -> bool:  # noqa: C901
    """Whether ``schema`` is certainly valid JSON Schema (Draft 2020-12).

    A sufficient test for what tool parameters usually are, much cheaper than
    checking against the metaschema: ``True`` means the metaschema accepts it;
    ``False`` means "ask the metaschema" (any ``$ref`` or rarer keyword).
    """
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    for keyword, arg in schema.items():
        if keyword == "type":
            names = [arg] if isinstance(arg, str) else arg
            if not (
                isinstance(names, list)
                and names
                and all(isinstance(n, str) and n in _SIMPLE_TYPES for n in names)
                and len(set(names)) == len(names)
            ):
                return False
        elif keyword in _COUNTS:
            if not (isinstance(arg, int) and not isinstance(arg, bool) and arg >= 0):
                return False
        elif keyword in _BOUNDS:
            if not _is_number(arg):
                return False
        elif keyword in _STRINGS:
            if not isinstance(arg, str):
                return False
        elif keyword in _SUBSCHEMA:
            if not plainly_valid_schema(arg):
                return False
        elif keyword == "properties":
            if not (isinstance(arg, dict) and all(map(plainly_valid_schema, arg.values()))):
                return False
        elif keyword == "required":
            if not (
                isinstance(arg, list)
                and all(isinstance(n, str) for n in arg)
                and len(set(arg)) == len(arg)
            ):
                return False
        elif keyword in ("anyOf", "oneOf", "allOf"):
            if not (isinstance(arg, list) and arg and all(map(plainly_valid_schema, arg))):
                return False
        elif keyword == "enum":
            if not isinstance(arg, list):
                return False
        elif keyword == "uniqueItems":
            if not isinstance(arg, bool):
                return False
        elif keyword not in ("const", "default"):
            return False
    return True
