"""The built-in tools' facts are written once (mdagent.core.catalog) and every reader agrees."""

from __future__ import annotations

from mdagent.core.catalog import (
    ALIASES,
    EFFECTS,
    EXEC_TOOLS,
    FILE_TOOLS,
    PATH_ARGUMENTS,
    SPECS,
    URL_TOOLS,
    WRITE_TOOLS,
    real_name,
)
from mdagent.safety.rules import names_for
from mdagent.tools.builtins import HANDLERS


def test_every_builtin_is_described_once_and_fully():
    assert set(ALIASES) == set(EFFECTS) == set(SPECS) == set(HANDLERS)
    for name, spec in SPECS.items():
        assert tuple(spec["aliases"]) == ALIASES[name]
        argument = PATH_ARGUMENTS.get(name)
        assert argument is None or argument in spec["params"], name


def test_the_policys_tool_classes_are_the_catalogs():
    assert {"exec"} == EXEC_TOOLS
    assert {"read_file", "write_file", "edit_file", "glob", "grep"} == FILE_TOOLS
    assert {"write_file", "edit_file"} == WRITE_TOOLS
    assert {"fetch"} == URL_TOOLS


def test_a_rule_may_name_a_builtin_by_any_alias():
    for name, aliases in ALIASES.items():
        assert names_for(name) == (name, *aliases)
        assert all(real_name(alias) == name for alias in aliases)
