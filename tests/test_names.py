"""The one "did you mean" (mdagent.core.names), and the one lazy loader (mdagent.core.lazy)."""

from __future__ import annotations

import pytest

from mdagent.core.errors import unknown_tool
from mdagent.core.lazy import load
from mdagent.core.names import closest, did_you_mean
from mdagent.providers import PROVIDERS
from mdagent.tools.builtins import HANDLERS


def test_closest_ignores_case_underscores_and_dashes_and_gives_the_choice_as_written():
    assert closest("command_tools", ["command-tool", "description"]) == "command-tool"
    assert closest("DESCRIPTON", ["description", "name"]) == "description"
    assert closest("a_b", ["a_b", "a-b"]) == "a-b"  # of two spellings, the dashed one


def test_closest_finds_nothing_below_the_cutoff_unless_a_choice_begins_with_the_word():
    assert closest("de", ["deploy", "status"]) is None  # ratio 0.5
    assert closest("de", ["deploy", "status"], prefix=True) == "deploy"
    assert closest("zzz", ["deploy"], prefix=True) is None
    assert closest("", ["deploy"], prefix=True) is None


def test_did_you_mean_is_a_messages_tail():
    assert did_you_mean("tol", ["tool", "shell"]) == " (did you mean 'tool'?)"
    assert did_you_mean("xyz", ["tool"]) == ""


def test_unknown_tool_lists_what_exists():
    assert unknown_tool("x", ["b", "a"]) == "unknown tool: x. Available: a, b"
    assert unknown_tool("x", []) == "unknown tool: x. Available: (none)"


@pytest.mark.parametrize("target", sorted({*HANDLERS.values(), *PROVIDERS.values()}))
def test_every_lazily_named_target_loads(target):
    assert callable(load(target))


def test_the_public_api_is_loaded_on_first_use():
    import mdagent

    for name in mdagent.__all__:
        assert getattr(mdagent, name) is not None
