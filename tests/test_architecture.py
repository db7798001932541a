"""The package's shape: arrows one way, small modules, the architecture in the folder tree.

``lint-imports`` (``.ci/run``) checks the layers of README "Architecture";
these tests check what its contracts cannot: that the import graph, with
the imports inside functions, has no cycle at all, and that no module grows
past :data:`MAX_LINES`.
"""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mdagent"
MAX_LINES = 800


def import_cycles(graph=None) -> list[set[str]]:
    """The strongly connected components of mdagent's import graph (more than one module each).

    Imports inside functions count: a cycle closed at run time still ties the
    modules together. Imports only type checkers see do not.
    """
    if graph is None:
        graph = grimp.build_graph("mdagent", exclude_type_checking_imports=True)
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(start: str) -> None:
        # Tarjan's algorithm, iterative: the graph is deep enough for Python's recursion limit.
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in edges:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


def test_the_import_graph_has_no_cycle():
    assert [sorted(c) for c in import_cycles()] == []


def test_a_cycle_is_found_when_there_is_one(tmp_path, monkeypatch):
    # The check itself: a package whose two modules import each other inside functions.
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from cyclic import b\n")
    (package / "b.py").write_text("def g():\n    from cyclic import a\n")
    (package / "c.py").write_text("from cyclic import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyclic")
    assert graph.find_modules_directly_imported_by("cyclic.a") == {"cyclic.b"}
    assert import_cycles(graph) == [{"cyclic.a", "cyclic.b"}]


def test_no_module_is_over_800_lines():
    long = {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines())
        for path in PACKAGE.rglob("*.py")
        if len(path.read_text().splitlines()) > MAX_LINES
    }
    assert long == {}


def test_the_public_apis_annotations_resolve():
    # No hand-made namespace: the names the annotations use are there at run time.
    import importlib
    import typing

    import mdagent

    hints = typing.get_type_hints(mdagent.Result)
    assert hints["ok"] is bool and hints["data"] == dict[str, object]
    context = typing.get_type_hints(mdagent.ToolContext)
    assert context["caller"] is str and context["trusted"] is bool
    calls = importlib.import_module("mdagent.core.calls")
    for name in ("Decision", "HookDecision"):
        assert typing.get_type_hints(getattr(calls, name))


# The policy and the modules it decides with (split out of it by issue 31).
POLICY_MODULES = ["policy", "rules", "views", "modes", "questions", "verdicts"]


@pytest.mark.parametrize("module", POLICY_MODULES)
def test_the_policy_decides_and_never_talks_to_a_person_or_edits_a_file(module):
    # Asking is the approver's (handed in by the runtime), remembering "always"
    # is the settings editor's: the module that defines the policy does neither.
    import importlib.util
    import re

    source = Path(importlib.util.find_spec(f"mdagent.safety.{module}").origin).read_text()
    words = [
        "print(",
        "input(",
        "sys.stdout",
        "sys.stderr",
        "open(",
        ".write(",
        "os.replace",
        "os.rename",
        "add_allow_rule",
        "remove_allow_rule",
    ]
    assert [w for w in words if w in source] == []
    imported = set(re.findall(r"^\s*(?:from|import) ([\w.]+)", source, re.M))
    talking = {"rich", "prompt_toolkit", "typer", "click", "termios", "tty", "curses", "readline"}
    assert {m.split(".")[0] for m in imported} & talking == set()
    mine = {m for m in imported if m.startswith("mdagent.")}
    assert [m for m in mine if m.split(".")[-1] in ("approval", "console", "display", "edit")] == []
