"""The compiled schema checks never accept what jsonschema rejects (mdagent.core.fastcheck).

Two uses, one checker: mdagent's own schemas over the files authors write
(valid documents, mutated), and tool parameter schemas over arguments
(generated schemas and instances on JSON Schema's edges).
"""

from __future__ import annotations

import copy
import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from mdagent import Toolbox
from mdagent.core.fastcheck import compile_schema, plainly_valid_schema
from mdagent.declarations.schemas import check as schema_check
from mdagent.declarations.schemas import validator

VALID = {
    "declarations": {
        "tools": {
            "hello": {
                "description": "Say hi",
                "aliases": ["hi-tool"],
                "params": {"who": {"type": "string", "minLength": 1}},
                "required": ["who"],
                "run": ["echo", "hi {who}"],
                "timeout": 5,
            },
            "sh": {"description": "d", "shell": "echo {x}", "params": {"x": {"type": "string"}}},
            "fetch-it": {"description": "d", "http": {"method": "GET", "url": "http://x/{q}"}},
        },
        "commands": {"hi": {"tool": "hello", "arg-mode": "parsed"}},
    },
    "skill": {
        "name": "deploy",
        "description": "Deploy the site",
        "command-dispatch": "tool",
        "command-tool": "exec",
        "user-invocable": True,
        "metadata": {"openclaw": {"requires": {"bins": ["sh"]}}},
    },
    "settings": {
        "model": {"provider": "openai", "name": "gpt", "timeout": 30},
        "policy": {"mode": "ask", "allow": ["read_file"], "deny": ["exec(rm *)"]},
        "skills": {"interop": False},
    },
}

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def mutated(draw, name):
    """A valid document with one value somewhere replaced, added or removed."""
    doc = copy.deepcopy(VALID[name])
    node = doc
    for _ in range(draw(st.integers(0, 4))):
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            break
        key = draw(st.sampled_from(keys))
        if not isinstance(node[key], (dict, list)) or draw(st.booleans()):
            break
        node = node[key]
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    action = draw(st.sampled_from(["replace", "add", "remove"]))
    if action == "add" and isinstance(node, dict):
        node[draw(st.text(max_size=8) | st.sampled_from(["run", "tool", "name", "x"]))] = draw(JSON)
    elif action == "remove" and keys:
        del node[draw(st.sampled_from(keys))]
    elif keys:
        node[draw(st.sampled_from(keys))] = draw(JSON)
    return doc


def test_mdagents_schemas_compile_and_accept_valid_documents():
    for name, doc in VALID.items():
        assert validator(name).is_valid(doc), name
        check = schema_check(name)
        assert check is not None and check(doc), name


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.sampled_from(sorted(VALID)).flatmap(lambda n: st.tuples(st.just(n), mutated(n))))
def test_the_compiled_check_never_accepts_what_jsonschema_rejects(case):
    name, doc = case
    if schema_check(name)(doc):
        assert validator(name).is_valid(doc), doc


def test_a_schema_with_an_unknown_keyword_is_left_to_jsonschema():
    assert compile_schema({"type": "array", "uniqueItems": True}) is None
    assert compile_schema({"$ref": "https://example.com/x"}) is None


def test_equality_is_jsonschemas():
    check = compile_schema({"enum": [1, "a"]})
    assert check(1) and check("a") and check(1.0)  # jsonschema: 1.0 is 1
    assert not check(True)  # jsonschema: True is not 1
    assert not compile_schema({"type": "integer"})(True)
    assert compile_schema({"type": "integer"})(2.0)  # jsonschema: 2.0 is an integer


KEYWORD_VALUES = {
    "type": st.sampled_from(["string", "integer", "object", "strng", 3])
    | st.lists(st.sampled_from(["string", "null", "x"]), max_size=3),
    "minLength": st.integers(-2, 3) | st.booleans() | st.floats(0, 2),
    "maximum": st.integers() | st.text(max_size=2) | st.booleans(),
    "required": st.lists(st.sampled_from(["a", "b", 1]), max_size=3),
    "enum": JSON,
    "description": JSON,
    "pattern": st.sampled_from(["^a", "(", 1]),
    "uniqueItems": st.booleans() | st.integers(0, 1),
    "anyOf": st.lists(st.just({"type": "string"}) | st.just(3), max_size=2),
    "$ref": st.just("#/x"),
    "minItems": st.integers(-1, 2),
}


def schemas():
    keyword = st.dictionaries(st.sampled_from(sorted(KEYWORD_VALUES)), st.just(None), max_size=4)
    flat = keyword.flatmap(lambda keys: st.fixed_dictionaries({k: KEYWORD_VALUES[k] for k in keys}))
    return st.recursive(
        flat,
        lambda inner: (
            st.fixed_dictionaries(
                {
                    "type": st.just("object"),
                    "properties": st.dictionaries(st.text(max_size=3), inner),
                }
            )
            | st.fixed_dictionaries({"items": inner})
        ),
        max_leaves=4,
    )


@settings(max_examples=400, deadline=None)
@given(schemas())
def test_a_plainly_valid_schema_is_valid_under_the_metaschema(schema):
    if plainly_valid_schema(schema):
        assert Draft202012Validator(Draft202012Validator.META_SCHEMA).is_valid(schema), schema


# -- tool arguments ------------------------------------------------------------------

TYPES = ["array", "boolean", "integer", "null", "number", "object", "string"]
NAMES = ["a", "b", "path", "n", "é"]

# Values that sit on JSON Schema's edges: bools beside 0/1, 1.0 beside 1,
# NaN and infinities, huge ints, astral and combining characters.
edge_numbers = st.sampled_from(
    [0, 1, -1, 1.0, 0.0, -0.0, 2.5, 10**20, 1e300, math.nan, math.inf, -math.inf, True, False]
)
numbers = st.one_of(
    edge_numbers,
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.integers(-(2**70), 2**70).map(float),
)
text = st.lists(st.sampled_from(["a", "é", "😀", "e\u0301", "\x00", "\ud800"]), max_size=4).map(
    "".join
)
scalars = st.one_of(st.none(), st.booleans(), numbers, text, st.sampled_from(NAMES))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(NAMES), inner, max_size=3),
    ),
    max_leaves=8,
)
# Values equal in Python but not all in JSON Schema (True == 1, [1] == [True]).
tricky = st.sampled_from(
    [0, 1, 1.0, 0.0, -0.0, True, False, None, "", "1", [], {}, [1], [True], [1.0], {"a": 1}]
)
bounds = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -1.5, 1e300, 10**20]))
counts = st.integers(0, 4)


def argument_schemas(depth: int = 2):
    """Schemas of the keywords tool parameters use; ``depth`` levels of items/properties."""
    keywords = {
        "type": st.one_of(
            st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3)
        ),
        "enum": st.lists(st.one_of(tricky, scalars, json_values), min_size=1, max_size=4),
        "const": st.one_of(tricky, scalars, json_values),
        "minimum": bounds,
        "maximum": bounds,
        "minLength": counts,
        "maxLength": counts,
        "default": json_values,
        "description": st.text(max_size=3),
    }
    if depth:
        nested = st.deferred(lambda: argument_schemas(depth - 1))
        keywords.update(
            items=nested,
            properties=st.dictionaries(st.sampled_from(NAMES), nested, max_size=3),
            required=st.lists(st.sampled_from(NAMES), max_size=3),
            additionalProperties=st.booleans(),
        )
    # A few keywords at a time, usually with a type: a schema carrying all of
    # them accepts almost nothing, and acceptance is what this test is about.
    others = sorted(k for k in keywords if k != "type")
    chosen = st.tuples(
        st.sampled_from([["type"], ["type"], []]),
        st.lists(st.sampled_from(others), max_size=3, unique=True),
    )
    return chosen.flatmap(
        lambda names: st.fixed_dictionaries({k: keywords[k] for k in names[0] + names[1]})
    )


def twins(value):
    """Values JSON Schema tells apart from ``value`` or not, depending: 1 / 1.0 / True."""
    if isinstance(value, bool):
        return st.sampled_from([value, int(value), float(value)])
    if isinstance(value, (int, float)) and not math.isnan(value):
        near = [value, float(value), value + 1, value - 0.5]
        if value in (0, 1):
            near += [bool(value)] * 3
        if isinstance(value, float) and value.is_integer():
            near.append(int(value))
        return st.sampled_from(near)
    if isinstance(value, list):
        return st.tuples(*(twins(v) for v in value)).map(list)
    if isinstance(value, dict):
        return st.fixed_dictionaries({k: twins(v) for k, v in value.items()})
    return st.just(value)


def near_bounds(schema):
    """Numbers on and beside the schema's bounds, where an off-by-one would show."""
    found = [schema[k] for k in ("minimum", "maximum") if k in schema]
    near = [b + d for b in found for d in (-1, -0.5, 0, 0.5, 1)] + [float(b) for b in found]
    return st.sampled_from(near) if near else numbers


def near_lengths(schema):
    """Strings just shorter than, as long as, and just longer than the bounds, in code points."""
    found = [schema[k] for k in ("minLength", "maxLength") if k in schema]
    lengths = st.sampled_from([max(n + d, 0) for n in found for d in (-1, 0, 1)] or [0, 1, 2])
    chars = st.sampled_from(["a", "😀", "e\u0301", "\ud800"])
    return lengths.flatmap(lambda n: st.lists(chars, min_size=n, max_size=n).map("".join))


def _implied_types(schema):
    if "minimum" in schema or "maximum" in schema:
        return ["integer", "number"]
    if "minLength" in schema or "maxLength" in schema:
        return ["string"]
    if "properties" in schema or "required" in schema:
        return ["object"]
    return ["array"] if "items" in schema else TYPES


def instances_for(schema, draw, depth: int = 3):
    """A value that often fits ``schema`` (so acceptance is exercised), sometimes not."""
    if depth == 0 or draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    if "const" in schema and draw(st.booleans()):
        return draw(twins(schema["const"]))
    if "enum" in schema and draw(st.booleans()):
        return draw(st.sampled_from(schema["enum"]).flatmap(twins))
    types = schema.get("type") or _implied_types(schema)
    kind = draw(st.sampled_from([types] if isinstance(types, str) else types))
    if kind == "object":
        props = schema.get("properties", {})
        value = {
            name: instances_for(sub, draw, depth - 1)
            for name, sub in props.items()
            if draw(st.integers(0, 3))
        }
        for name in schema.get("required", []):
            if draw(st.integers(0, 5)):
                value.setdefault(name, draw(json_values))
        if draw(st.integers(0, 3)) == 0:
            value[draw(st.sampled_from(NAMES))] = draw(json_values)
        return value
    if kind == "array":
        items = schema.get("items", {})
        return [instances_for(items, draw, depth - 1) for _ in range(draw(st.integers(0, 3)))]
    if kind == "string":
        return draw(st.one_of(text, near_lengths(schema)))
    if kind in ("integer", "number"):
        return draw(st.one_of(numbers, near_bounds(schema)))
    if kind == "boolean":
        return draw(st.booleans())
    return None


def jsonschema_accepts(schema, instance) -> bool:
    return Draft202012Validator(schema).is_valid(instance)


def plainly_valid(schema, instance) -> bool:
    """What the toolbox's fast path says: compiled, and the compiled check accepts."""
    check = compile_schema(schema)
    return check is not None and check(instance)


def check_never_accepts_more(schema, instance):
    assert compile_schema(schema) is not None  # every generated schema is compiled
    if plainly_valid(schema, instance):
        assert jsonschema_accepts(schema, instance), (schema, instance)


@settings(max_examples=2000, deadline=None)
@given(schema=argument_schemas(0), data=st.data())
def test_fast_check_never_accepts_what_jsonschema_rejects(schema, data):
    check_never_accepts_more(schema, instances_for(schema, data.draw))


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=argument_schemas(2), data=st.data())
def test_nested_schemas_too(schema, data):
    check_never_accepts_more(schema, instances_for(schema, data.draw))


@settings(max_examples=300, deadline=None)
@given(schema=argument_schemas(1), instance=json_values)
def test_arbitrary_json_values_too(schema, instance):
    check_never_accepts_more(schema, instance)


@settings(max_examples=300, deadline=None)
@given(schema=argument_schemas(1), data=st.data())
def test_most_valid_arguments_need_no_jsonschema(schema, data):
    # The fast check is only worth having if it says yes to what is plainly
    # valid: for values without NaN (where the two may differ by design, see
    # the NaN test below) it agrees with jsonschema on acceptance.
    instance = instances_for(schema, data.draw)
    assume("nan" not in repr(instance) and "nan" not in repr(schema))
    assert plainly_valid(schema, instance) == jsonschema_accepts(schema, instance), (
        schema,
        instance,
    )


@pytest.mark.parametrize(
    ("schema", "instance", "valid"),
    [
        ({"type": "integer"}, True, False),  # a bool is not an integer
        ({"type": "number"}, False, False),
        ({"type": "integer"}, 1.0, True),  # 2020-12: 1.0 is an integer
        ({"type": "integer"}, 1.5, False),
        ({"type": "integer"}, math.inf, False),
        ({"type": "number"}, math.nan, True),
        ({"type": "string", "maxLength": 1}, "😀", True),  # one code point
        ({"type": "string", "maxLength": 1}, "e\u0301", False),  # two code points
        ({"type": ["string", "null"]}, None, True),
        ({"enum": [1, "a"]}, True, False),  # True is not 1 here
        ({"enum": [1]}, 1.0, True),  # but 1.0 is
        ({"const": [True]}, [1], False),
        ({"const": {"a": [1]}}, {"a": [1.0]}, True),
        ({"minimum": 3}, "ab", True),  # bounds apply to numbers only
        ({"minLength": 3}, 1, True),
        ({"required": ["a"]}, [], True),  # required applies to objects only
        ({"additionalProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2}, False),
        ({"items": {"type": "integer"}}, [1, 2.0, True], False),
    ],
)
def test_json_schema_subtleties(schema, instance, valid):
    assert jsonschema_accepts(schema, instance) is valid  # the reference itself
    assert plainly_valid(schema, instance) is valid


def test_nan_is_never_a_reason_to_accept_more_than_jsonschema():
    # NaN fails no bound in jsonschema (every comparison is false); the fast
    # check follows it exactly, so the two agree.
    schema = {"type": "number", "minimum": 0, "maximum": 1}
    assert plainly_valid(schema, math.nan) is jsonschema_accepts(schema, math.nan) is True
    assert plainly_valid({"enum": [math.nan]}, float("nan")) is False


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/x"},
        {"type": "strung"},
        {"minimum": True},
        {"minLength": 1.5},
        {"items": [{"type": "string"}]},
        {"type": "array", "uniqueItems": True},
    ],
)
def test_other_keywords_and_odd_values_are_left_to_jsonschema(schema):
    assert compile_schema(schema) is None


def test_values_json_does_not_give_are_left_to_jsonschema():
    from decimal import Decimal

    assert not plainly_valid({"minimum": 5}, Decimal(1))
    assert not plainly_valid({"type": "array"}, ("a",))


def _box(params, required=()):
    box = Toolbox()
    box.add("t", description="d", params=params, required=required, handler=lambda a: a)
    return box


def test_messages_for_invalid_arguments_stay_jsonschemas():
    tool = _box({"n": {"type": "integer", "minimum": 1}}, ["n"]).tool_for("t")
    assert tool.validate({"n": 0}) == ["value at `/n` is less than the minimum of 1"]
    assert tool.validate({}) == ["value at `/n` is required"]
    assert tool.validate({"n": True}) == ["value at `/n` is not of type 'integer'"]
    assert tool.validate({"n": 3}) == []


def test_a_schema_outside_the_subset_is_still_enforced():
    tool = _box({"s": {"type": "string", "pattern": "^a"}}).tool_for("t")
    assert tool.validate({"s": "abc"}) == []
    assert tool.validate({"s": "xyz"}) == ["value at `/s` does not match '^a'"]
