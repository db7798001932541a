"""One gitignore-style glob translation, shared by glob/grep and the policy's path rules."""

from __future__ import annotations

import re

import pytest

from mdagent.core.globs import gitignore_regex
from mdagent.safety.views import path_regex
from mdagent.tools.builtins.search import glob_regex, parse_gitignore


def matches(pattern: str, path: str) -> bool:
    return re.fullmatch(gitignore_regex(pattern), path, re.S) is not None


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),  # `*` stays within a folder
        ("a?c", "abc", True),
        ("a?c", "a/c", False),
        ("**/x.py", "x.py", True),  # `**/` may span no folder at all
        ("**/x.py", "a/b/x.py", True),
        ("a/**/z", "a/z", True),
        ("a/**/z", "a/b/c/z", True),
        ("src/**", "src/a/b.py", True),  # a trailing `/**` is everything inside
        ("src/**", "src", False),
        ("**", "any/thing", True),
        ("a**b", "axxb", True),  # any other `**` is a plain `*`
        ("a**b", "a/b", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "c.txt", True),
        ("[^ab].txt", "a.txt", False),
        ("x[!a]y", "x/y", False),  # a negated class never matches a slash
        ("[]]", "]", True),  # a leading `]` is a member
        ("[[]x", "[x", True),
        ("a[b", "a[b", True),  # an unclosed bracket is literal
        (r"\*.py", "*.py", True),
        (r"\*.py", "a.py", False),
        ("a.b", "axb", False),  # regex metacharacters are literal
    ],
)
def test_gitignore_regex(pattern, path, expected):
    assert matches(pattern, path) is expected


@pytest.mark.parametrize("pattern", ["src/**", "src/*.py", "**/test_*.py", "doc/[a-c]?.md"])
@pytest.mark.parametrize(
    "path", ["src/a.py", "src/a/b.py", "src", "x/src/a.py", "tests/test_x.py", "doc/b1.md"]
)
def test_glob_tool_gitignore_and_path_rules_agree(pattern, path):
    """A pattern with a slash means the same in `glob`, in a .gitignore and in a policy rule."""
    by_glob = glob_regex(pattern).fullmatch(path) is not None
    by_rule = path_regex(pattern, False).fullmatch(path) is not None
    by_gitignore = parse_gitignore(pattern)[0].matches(path, False)
    assert by_glob == by_rule == by_gitignore == matches(pattern, path)
