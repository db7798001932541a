"""The skill tool: a skill's body on demand."""

from __future__ import annotations

import pytest

from mdagent.builtins import register_builtins
from mdagent.toolbox import Toolbox, ToolContext


class FakeRegistry:
    """Just what the skill tool needs from a registry."""

    def __init__(self, bodies):
        self.skills = dict(bodies)

    def skill_body(self, name):
        return self.skills[name]  # KeyError for an unknown name, like the real one


@pytest.fixture
def call():
    tb = Toolbox()
    register_builtins(tb, ["skill"])
    registry = FakeRegistry({"pdf-tools": "# PDF\nUse pdftotext.", "git-flow": "Branch first."})

    def call(name, registry=registry):
        return tb.run("skill", {"name": name}, ToolContext(registry=registry))

    return call


def test_returns_the_body(call):
    result = call("pdf-tools")
    assert result.ok
    assert result.data == {"name": "pdf-tools", "output": "# PDF\nUse pdftotext."}


def test_case_and_underscores_do_not_matter(call):
    assert call("PDF_Tools").data["name"] == "pdf-tools"
    assert call("/git-flow").data["output"] == "Branch first."


def test_unknown_skill_lists_the_available_ones(call):
    result = call("nope")
    assert not result.ok
    assert result.error == "unknown skill: nope. Available: git-flow, pdf-tools"


def test_no_registry(call):
    assert call("pdf-tools", registry=None).error == "no skills are loaded"
