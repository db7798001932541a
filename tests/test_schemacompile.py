"""The compiled schema checks never accept what jsonschema rejects."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from mdagent.schemacompile import compile_schema, plainly_valid_schema, schema_check
from mdagent.schemas import validator

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


def test_doubtful_equality_answers_not_valid():
    check = compile_schema({"enum": [1, "a"]})
    assert check(1) and check("a")
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
