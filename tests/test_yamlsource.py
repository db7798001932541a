"""The strict YAML loader: libyaml and pure-Python parsers report alike."""

from __future__ import annotations

import pytest
import yaml

from mdagent.errors import ConfigError
from mdagent.yamlsource import ALIAS_BUDGET, _loader, load_yaml, position

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
    assert issubclass(_loader(), yaml.CSafeLoader)
    assert not issubclass(_loader(pure=True), yaml.CSafeLoader)


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
