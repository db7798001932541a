"""The strict YAML loader: libyaml and pure-Python parsers report alike."""

from __future__ import annotations

import datetime

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mdagent.core.errors import ConfigError
from mdagent.core.yamlsource import (
    ALIAS_BUDGET,
    Located,
    LocatedList,
    construct,
    load_yaml,
    position,
    strict_loader,
)

needs_libyaml = pytest.mark.skipif(
    not getattr(yaml, "__with_libyaml__", False), reason="PyYAML built without libyaml"
)

BAD = {
    "tab indentation": "a:\n\tb: 1\n",
    "tab among spaces": "a:\n  b: 1\n\t c: 2\n",
    "duplicate key": "a: 1\nb: 2\na: 3\n",
    "nested duplicate key": "x:\n  a: 1\n  a: 2\n",
    "duplicate key in a list item": "- a: 1\n  a: 2\n",
    "bad indentation": "a:\n  b: 1\n c: 2\n",
    "indented key": "a: 1\n  b: 2\n",
    "unclosed list": "a: [1, 2\nb: 3\n",
    "unclosed quote": "a: 'x\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "undefined alias": "a: *x\n",
    "list as key": "? [1]\n: 2\n",
}


def _error(text: str, pure: bool) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_yaml(text, "f.yaml", 3, pure=pure)
    return info.value


@needs_libyaml
def test_the_default_loader_is_libyaml():
    assert issubclass(strict_loader(), yaml.CSafeLoader)
    assert not issubclass(strict_loader(pure=True), yaml.CSafeLoader)


@needs_libyaml
@pytest.mark.parametrize("text", BAD.values(), ids=BAD.keys())
def test_libyaml_errors_point_where_the_pure_python_parser_does(text):
    fast, pure = _error(text, False), _error(text, True)
    assert str(fast).split(": ", 1)[0] == str(pure).split(": ", 1)[0]  # path:line:col
    if "\t" in text:
        assert "tab character: YAML indentation must use spaces" in str(fast)
    if text in (BAD["duplicate key"], BAD["nested duplicate key"], BAD["list as key"]):
        assert str(fast) == str(pure)  # our own messages, raised by our constructors


def test_positions_are_the_same_with_either_parser():
    text = "tools:\n  hi:\n    run: echo\n    params:\n      - one\n      - two\n"
    for pure in (False, True):
        data = load_yaml(text, "f.yaml", pure=pure)
        assert position(data, ["tools", "hi", "run"]) == (3, 5)
        assert position(data, ["tools", "hi", "params", 1]) == (6, 9)
        assert data == {"tools": {"hi": {"run": "echo", "params": ["one", "two"]}}}


@pytest.mark.parametrize("pure", [False, True])
def test_alias_budget_holds_with_either_parser(pure):
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]"
        for i in range(5)
    ]
    with pytest.raises(ConfigError, match=f"more than {ALIAS_BUDGET:,} values"):
        load_yaml("\n".join(lines) + "\n", "f.yaml", pure=pure)


# -- the fast constructor makes what PyYAML's constructor makes -------------------------


def _same(fast, slow) -> None:
    """Equal values of the same types, with the same recorded positions, at every level."""
    assert type(fast) is type(slow), (fast, slow)
    if isinstance(slow, Located):
        assert (fast.at, fast.lines) == (slow.at, slow.lines)
        assert list(fast) == list(slow)  # key order too
        assert [type(k) for k in fast] == [type(k) for k in slow]  # 1 and True are equal keys
        for key in slow:
            _same(fast[key], slow[key])
    elif isinstance(slow, LocatedList):
        assert (fast.at, fast.items_at, len(fast)) == (slow.at, slow.items_at, len(slow))
        for a, b in zip(fast, slow, strict=True):
            _same(a, b)
    elif isinstance(slow, float) and slow != slow:
        assert fast != fast  # .nan
    else:
        assert fast == slow


def _both(text: str, pure: bool):
    """(fast constructor's result, PyYAML's construct_document's result) for ``text``."""
    results = []
    for build in (construct, lambda loader, node: loader.construct_document(node)):
        loader = strict_loader(pure)(text)
        try:
            results.append(build(loader, loader.get_single_node()))
        finally:
            loader.dispose()
    return results


SCALARS = st.one_of(
    st.text(max_size=12),
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.dates(),
    st.sampled_from(
        ["yes", "No", "~", "0x1f", "0o17", "1_000", ".inf", "2001-12-14t21:59:43.10-05:00"]
    ),
)
DATA = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(SCALARS, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(data=DATA, flow=st.sampled_from([None, True, False]), pure=st.booleans())
def test_the_fast_constructor_makes_what_pyyaml_makes(data, flow, pure):
    try:
        text = yaml.safe_dump({"root": data}, default_flow_style=flow, allow_unicode=True)
    except yaml.YAMLError:
        return
    try:
        fast, slow = _both(text, pure)
    except yaml.YAMLError:  # a key PyYAML dumped but cannot read back (a list): both refuse
        with pytest.raises(yaml.YAMLError):
            _both(text, not pure)
        return
    _same(fast, slow)


HAND_WRITTEN = {
    "anchors and merge keys": "base: &b {a: 1, b: [x, y]}\nuse:\n  <<: *b\n  c: *b\n",
    "explicit tags": "a: !!str 12\nb: !!int '7'\nc: !!binary aGk=\nd: !!set {x, y}\ne: !!omap [{k: v}]\n",
    "dates and specials": "d: 2001-12-14\nt: 2001-12-14 21:59:43.10 -5\nn: ~\nf: .NaN\nbool: yes\n",
    "block scalars": "a: |\n  line\n  two\nb: >-\n  folded\n  text\n",
    "explicit map and seq tags": "a: !!map {x: !!seq [1, 2]}\n",
    "front-matter shape": 'name: x\ndescription: "a: b"\nmetadata: {"openclaw": {"requires": {"bins": ["sh"]}}}\n',
}


@pytest.mark.parametrize("pure", [False, True])
@pytest.mark.parametrize("text", HAND_WRITTEN.values(), ids=HAND_WRITTEN.keys())
def test_the_fast_constructor_agrees_on_tags_aliases_and_merges(text, pure):
    fast, slow = _both(text, pure)
    _same(fast, slow)
    if "<<" in text:
        assert fast["use"] == {"a": 1, "b": ["x", "y"], "c": {"a": 1, "b": ["x", "y"]}}
    if "!!binary" in text:
        assert fast["c"] == b"hi" and fast["d"] == {"x", "y"}
    if "2001" in text:
        assert fast["d"] == datetime.date(2001, 12, 14)


@pytest.mark.parametrize("text", ["a: !!python/name:os.system x\n", "a: !custom x\n"])
def test_unknown_and_unsafe_tags_are_still_refused(text):
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_yaml(text, "f.yaml")


MERGES = {
    "a written key replaces the merged one": "base: &b {timeout: 5, run: x}\nt:\n  <<: *b\n  timeout: 10\n",
    "written before the merge": "base: &b {timeout: 5}\nt:\n  timeout: 10\n  <<: *b\n",
    "the first merged block wins": "a: &a {x: 1, y: 1}\nb: &b {x: 2, z: 2}\nc:\n  <<: [*a, *b]\n  y: 3\n",
    "a merged node met again": "a: &a {x: {<<: {q: 1}, q: 2}}\nb: {<<: *a}\n",
    "an anchor inside a merge": "b: {<<: &a {<<: {q: 1}, q: 2}}\nc: {<<: *a, q: 3}\n",
}


@pytest.mark.parametrize("pure", [False, True])
@pytest.mark.parametrize("text", MERGES.values(), ids=MERGES.keys())
def test_merge_keys_mean_what_yaml_says(text, pure):
    from mdagent.core.yamlsource import plain

    assert plain(load_yaml(text, "f.yaml", pure=pure)) == yaml.safe_load(text)


def test_a_key_written_beside_a_merge_is_placed_where_it_was_written():
    data = load_yaml("base: &b {timeout: 5}\nt:\n  <<: *b\n  timeout: 10\n", "f.yaml")
    assert data["t"] == {"timeout": 10} and position(data, ["t", "timeout"]) == (4, 3)


@pytest.mark.parametrize(
    ("text", "line", "col"),
    [
        ("b: &b {x: 1}\nt:\n  <<: *b\n  y: 1\n  y: 2\n", 5, 3),  # written twice
        ("x: !!seq y\n", 1, 4),
        ("x: !!seq {a: 1}\n", 1, 4),
        ("x: !!map [1]\n", 1, 4),
    ],
)
def test_duplicates_and_mistagged_nodes_are_one_line_at_their_place(text, line, col):
    for pure in (False, True):
        message = str(_error(text, pure))  # read with a line offset of 3
        assert message.split(": ", 1)[0] == f"f.yaml:{line + 3}:{col}", message
        assert "\n" not in message
