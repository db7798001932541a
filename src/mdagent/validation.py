"""A small exact check of tool arguments against the schemas most tools declare.

Importing jsonschema costs about 50 ms, more than the rest of a typed
``agent /name`` together, and nearly every tool's parameters use a handful
of keywords. :func:`plainly_valid` answers for those keywords alone, with
jsonschema's own Draft 2020-12 semantics, and only ever says "valid" when
jsonschema would: anything it does not know — another keyword, an odd value
type, an invalid instance — is "ask jsonschema" (False), so every error a
person or a model sees is still jsonschema's message.

The subset: ``type`` (a name or a list of names), ``properties``,
``required``, ``additionalProperties`` (true/false), ``enum``, ``const``,
``minimum``/``maximum``, ``minLength``/``maxLength``, ``items`` (one
schema of the same subset), and the annotations ``description``,
``default``, ``title``, ``examples`` and ``$comment``. The property test in
``tests/test_validation.py`` checks the "never accepts what jsonschema
rejects" promise over generated schemas and instances.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

TYPE_CHECKING = False  # not typing's: see mdagent.records
if TYPE_CHECKING:
    from typing import Any

_ANNOTATIONS = frozenset({"description", "default", "title", "examples", "$comment"})
_PLAIN = (str, int, float, list, dict)  # with None: what JSON and typed words give
_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})


def is_simple(schema: Any) -> bool:
    """Whether ``schema`` uses only the subset :func:`plainly_valid` understands.

    The keyword values must be of the types JSON Schema gives them (a
    ``minimum`` that is a number, a ``required`` that is a list of strings…):
    a schema jsonschema itself would choke on is left to jsonschema.
    """
    if type(schema) is not dict:  # boolean schemas and the like: jsonschema's
        return False
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        check = _KEYWORD_SHAPES.get(key)
        if check is None or not check(value):
            return False
    return True


def plainly_valid(schema: dict[str, Any], instance: Any) -> bool:
    """True when ``instance`` is valid against ``schema`` (which :func:`is_simple` accepted).

    False means "not shown valid here": the caller asks jsonschema, for the
    verdict and for its messages.
    """
    if instance is not None and not isinstance(instance, _PLAIN):
        return False  # a tuple, a Decimal…: jsonschema's rules for those are its own
    types = schema.get("type")
    if types is not None:
        if type(types) is str:
            if not _is_type(instance, types):
                return False
        elif not any(_is_type(instance, name) for name in types):
            return False
    if "enum" in schema and not any(_equal(each, instance) for each in schema["enum"]):
        return False
    if "const" in schema and not _equal(instance, schema["const"]):
        return False
    if _is_number(instance):
        # Compared as jsonschema compares (a NaN fails neither bound there either).
        if "minimum" in schema and instance < schema["minimum"]:
            return False
        if "maximum" in schema and instance > schema["maximum"]:
            return False
    elif isinstance(instance, str):
        # len() counts code points, as JSON Schema's lengths do.
        if "minLength" in schema and len(instance) < schema["minLength"]:
            return False
        if "maxLength" in schema and len(instance) > schema["maxLength"]:
            return False
    elif isinstance(instance, dict):
        return _object_valid(schema, instance)
    elif isinstance(instance, list):
        items = schema.get("items")
        if items is not None:
            return all(plainly_valid(items, each) for each in instance)
    return True


def _object_valid(schema: dict[str, Any], instance: dict[Any, Any]) -> bool:
    properties = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in instance:
            return False
    if schema.get("additionalProperties") is False and any(k not in properties for k in instance):
        return False
    for name, subschema in properties.items():
        if name in instance and not plainly_valid(subschema, instance[name]):
            return False
    return True


def _is_type(instance: Any, name: str) -> bool:
    """jsonschema's Draft 2020-12 type checker, restricted to plain Python values."""
    if name == "string":
        return isinstance(instance, str)
    if name == "integer":
        # 2020-12 counts 1.0 as an integer; a bool is never a number.
        if isinstance(instance, bool):
            return False
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    if name == "number":
        return _is_number(instance)
    if name == "boolean":
        return isinstance(instance, bool)
    if name == "object":
        return isinstance(instance, dict)
    if name == "array":
        return isinstance(instance, list)
    if name == "null":
        return instance is None
    return False


def _is_number(instance: Any) -> bool:
    # jsonschema accepts any numbers.Number (Decimal, Fraction…); int and
    # float are the numbers JSON and typed words give, the rest goes there.
    return isinstance(instance, (int, float)) and not isinstance(instance, bool)


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


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _bound(value: Any) -> bool:
    return type(value) in (int, float)


def _type_names(value: Any) -> bool:
    if type(value) is str:
        return value in _TYPES
    return type(value) is list and all(type(v) is str and v in _TYPES for v in value)


def _json_value(value: Any) -> bool:
    """A value JSON could carry (what an ``enum`` or ``const`` may hold here)."""
    if value is None or type(value) in (str, int, float, bool):
        return True
    if type(value) is list:
        return all(_json_value(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _json_value(v) for k, v in value.items())
    return False


_KEYWORD_SHAPES = {
    "type": _type_names,
    "properties": lambda v: (
        type(v) is dict and all(type(k) is str and is_simple(s) for k, s in v.items())
    ),
    "required": lambda v: type(v) is list and all(type(n) is str for n in v),
    "additionalProperties": lambda v: type(v) is bool,
    "enum": lambda v: type(v) is list and _json_value(v),
    "const": _json_value,
    "minimum": _bound,
    "maximum": _bound,
    "minLength": _count,
    "maxLength": _count,
    "items": is_simple,
}
