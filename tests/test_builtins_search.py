"""glob and grep over a real tree with .gitignore files; grep with and without ripgrep."""

from __future__ import annotations

import shutil
import threading

import pytest

from mdagent.core.calls import ToolContext
from mdagent.tools.builtins import register_builtins, search
from mdagent.tools.builtins.search import expand_braces, is_ignored, parse_gitignore
from mdagent.tools.toolbox import Toolbox


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    files = {
        ".gitignore": "# build output\nbuild/\n*.log\n!keep.log\n/top.txt\n",
        ".git/config": "NEEDLE in git internals\n",
        ".env.example": "NEEDLE=hidden but not ignored\n",
        "top.txt": "NEEDLE ignored at the root only\n",
        "keep.log": "kept by negation\n",
        "debug.log": "NEEDLE ignored log\n",
        "main.py": "import os\nNEEDLE = 1\n",
        "local.py": "# the nested rule does not reach here\n",
        "build/out.py": "NEEDLE = 'generated'\n",
        "src/.gitignore": "local.py\n",
        "src/app.py": "def needle():\n    pass\n",
        "src/util.py": "def helper():\n    return needle()\n",
        "src/local.py": "NEEDLE = 'ignored by src/.gitignore'\n",
        "src/top.txt": "anchored rules do not match deeper\n",
        "src/deep/x/test_a.py": "def test_needle():\n    assert True\n",
        "docs/readme.md": "# Docs\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "data.bin").write_bytes(b"NEEDLE\x00\x00binary")
    (tmp_path / "outside").mkdir()
    return root


@pytest.fixture
def call(ws):
    tb = Toolbox()
    register_builtins(tb)

    def call(name, settings=None, **args):
        return tb.run(name, args, ToolContext(workdir=str(ws), settings=settings or {}))

    return call


# -- glob --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("**/*.py", ["local.py", "main.py", "src/app.py", "src/deep/x/test_a.py", "src/util.py"]),
        ("*.py", ["local.py", "main.py"]),
        ("src/**/test_*.py", ["src/deep/x/test_a.py"]),
        ("**/*.{md,txt}", ["docs/readme.md", "src/top.txt"]),
        ("**/*.log", ["keep.log"]),
        ("src/*", ["src/.gitignore", "src/app.py", "src/top.txt", "src/util.py"]),
        ("./src/*.py", ["src/app.py", "src/util.py"]),
    ],
)
def test_glob_respects_gitignore(call, pattern, expected):
    result = call("glob", pattern=pattern)
    assert result.ok
    assert result.data["files"] == expected
    assert result.data["output"] == "\n".join(expected)
    assert result.data["truncated"] is False


def test_glob_never_lists_git_internals(call):
    files = call("glob", pattern="**").data["files"]
    assert not any(f.startswith(".git/") for f in files)
    assert ".env.example" in files and "data.bin" in files
    assert "build/out.py" not in files and "top.txt" not in files


def test_glob_under_a_folder_gives_workspace_relative_paths(call):
    assert call("glob", pattern="*.py", path="src").data["files"] == ["src/app.py", "src/util.py"]
    # The root's rules still apply below a chosen folder.
    assert call("glob", pattern="**/*.txt", path="src").data["files"] == ["src/top.txt"]


def test_glob_caps_the_listing(call):
    result = call("glob", {"glob": {"max_files": 2}}, pattern="**/*.py")
    assert result.data["files"] == ["local.py", "main.py"]
    assert result.data["truncated"] is True and result.data["total"] == 5


def test_glob_refuses_folders_outside_the_workspace(call):
    result = call("glob", pattern="*", path="../outside")
    assert not result.ok and result.data["code"] == "DENIED"


def test_gitignore_rules():
    rules = parse_gitignore(
        "\n".join(["foo/", "doc/*.txt", "a/**/z", "**/cache", "*.tmp", "!important.tmp", "\\#hash"])
    )
    assert is_ignored(rules, "foo", is_dir=True)
    assert not is_ignored(rules, "foo", is_dir=False)  # trailing slash: folders only
    assert is_ignored(rules, "doc/notes.txt", False)
    assert not is_ignored(rules, "doc/sub/notes.txt", False)  # * stays in one folder
    assert is_ignored(rules, "a/z", False) and is_ignored(rules, "a/b/c/z", False)
    assert is_ignored(rules, "x/y/cache", True)
    assert is_ignored(rules, "deep/scratch.tmp", False)
    assert not is_ignored(rules, "deep/important.tmp", False)
    assert is_ignored(rules, "#hash", False)
    nested = parse_gitignore("*.gen\n", base="pkg")
    assert is_ignored(nested, "pkg/sub/a.gen", False)
    assert not is_ignored(nested, "other/a.gen", False)


def test_brace_expansion():
    assert expand_braces("*.{py,md}") == ["*.py", "*.md"]
    assert expand_braces("{a,b{c,d}}") == ["a", "bc", "bd"]
    assert expand_braces("{single}") == ["{single}"]


# -- grep ------------------------------------------------------------------------


@pytest.fixture(params=["python", "ripgrep"])
def engine(request, monkeypatch):
    """Run a grep test once with Python's re and once with ripgrep (when installed)."""
    if request.param == "python":
        monkeypatch.setattr(search, "ripgrep", lambda: None)
    elif shutil.which("rg") is None:
        pytest.skip("ripgrep is not installed")
    return request.param


def test_grep_finds_lines_and_respects_gitignore(call, engine):
    result = call("grep", pattern="NEEDLE")
    assert result.ok
    assert result.data["matches"] == [
        {"path": ".env.example", "line": 1, "text": "NEEDLE=hidden but not ignored"},
        {"path": "main.py", "line": 2, "text": "NEEDLE = 1"},
    ]
    assert (
        result.data["output"]
        == ".env.example:1:NEEDLE=hidden but not ignored\nmain.py:2:NEEDLE = 1"
    )
    assert result.data["truncated"] is False


def test_grep_ignore_case_and_file_filter(call, engine):
    result = call("grep", pattern="needle", ignore_case=True, glob="*.py")
    assert [(m["path"], m["line"]) for m in result.data["matches"]] == [
        ("main.py", 2),
        ("src/app.py", 1),
        ("src/deep/x/test_a.py", 1),
        ("src/util.py", 2),
    ]


def test_grep_under_a_folder_or_in_one_file(call, engine):
    in_src = call("grep", pattern="needle", path="src")
    assert [m["path"] for m in in_src.data["matches"]] == [
        "src/app.py",
        "src/deep/x/test_a.py",
        "src/util.py",
    ]
    one = call("grep", pattern="return", path="src/util.py")
    assert one.data["output"] == "src/util.py:2:    return needle()"
    # A file named explicitly is searched even when .gitignore lists it.
    named = call("grep", pattern="NEEDLE", path="src/local.py", glob="*.md")
    assert named.data["output"] == "src/local.py:1:NEEDLE = 'ignored by src/.gitignore'"


def test_grep_regex_only_python_understands_still_works(call, engine):
    # Lookbehind is not in ripgrep's dialect: the Python path takes over.
    result = call("grep", pattern=r"(?<=def )needle")
    assert result.data["output"] == "src/app.py:1:def needle():"


def test_grep_invalid_regex_is_a_clear_error(call, engine):
    result = call("grep", pattern="(unclosed")
    assert not result.ok
    assert result.error.startswith("invalid regex '(unclosed'")


def test_grep_caps_the_matches(call, engine):
    result = call("grep", {"grep": {"max_matches": 2}}, pattern="e")
    assert len(result.data["matches"]) == 2
    assert result.data["truncated"] is True


def test_grep_refuses_paths_outside_the_workspace(call, engine):
    result = call("grep", pattern="x", path="/etc")
    assert result.data["code"] == "DENIED"
    assert call("grep", pattern="x", path="missing").error == "not found: missing"


def test_both_engines_agree(call, monkeypatch):
    if shutil.which("rg") is None:
        pytest.skip("ripgrep is not installed")
    queries = [
        {"pattern": "e"},
        {"pattern": "^def", "path": "src"},
        {"pattern": "o", "glob": "*.md"},
    ]
    with_rg = [call("grep", **q).data for q in queries]
    monkeypatch.setattr(search, "ripgrep", lambda: None)
    assert [call("grep", **q).data for q in queries] == with_rg


def test_grep_shows_only_the_head_of_a_huge_line(call, ws, engine):
    # 3 MiB without a newline, the hit at the very end: found, shown clipped.
    (ws / "bundle.min.js").write_bytes(b"a" * (3 << 20) + b"NEEDLE_AT_END")
    (ws / "feed.txt").write_text("x\fNEEDLE_AT_END y\n")
    result = call("grep", pattern="NEEDLE_AT_END")
    assert result.data["matches"] == [
        {"path": "bundle.min.js", "line": 1, "text": "a" * 500 + " [...]"},
        {"path": "feed.txt", "line": 1, "text": "x\fNEEDLE_AT_END y"},
    ]


def test_a_backtracking_regex_meets_the_timeout(call, ws, engine):
    (ws / "a.txt").write_text("x" + "a" * 60 + "!\n")
    # Look-behind: ripgrep refuses it, so Python's re runs it in both engines.
    result = call("grep", {"grep": {"timeout": 1}}, pattern="(?<=x)(a+)+$")
    assert not result.ok
    assert result.error == "grep timed out after 1 s" and result.data["timed_out"] is True


def test_a_backtracking_regex_stops_on_cancel(ws, engine):
    from mdagent.core.calls import ToolContext
    from mdagent.tools.toolbox import Toolbox

    (ws / "a.txt").write_text("x" + "a" * 60 + "!\n")
    tb = Toolbox()
    register_builtins(tb)
    ctx = ToolContext(workdir=str(ws))
    threading.Timer(1.0, ctx.cancel.set).start()
    result = tb.run("grep", {"pattern": "(?<=x)(a+)+$"}, ctx)
    # Interrupted, not timed out: the cancel stopped it, not the 60 s default timeout.
    assert result.data.get("interrupted") is True and not result.data.get("timed_out")
