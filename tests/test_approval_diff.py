"""The approval question shows the change a write or edit would make (issue 17)."""

import io

import pytest

from mdagent.approval import _coloured_diff, proposed_diff
from model_server import ModelServer
from test_terminal_e2e import Terminal, write_call


def test_a_write_shows_a_unified_diff_of_the_file(tmp_path):
    (tmp_path / "a.txt").write_text("keep\nold line\n")
    diff = proposed_diff("write_file", {"path": "a.txt", "content": "keep\nnew line\n"}, tmp_path)
    assert diff.splitlines() == [
        "--- a/a.txt",
        "+++ b/a.txt",
        "@@ -1,2 +1,2 @@",
        " keep",
        "-old line",
        "+new line",
    ]


def test_a_new_file_is_all_additions_and_an_edit_replaces_once(tmp_path):
    created = proposed_diff("write_file", {"path": "new.txt", "content": "x\n"}, tmp_path)
    assert created.splitlines()[-1] == "+x"
    (tmp_path / "b.txt").write_text("a a\n")
    edit = {"path": "b.txt", "old_string": "a", "new_string": "b"}
    assert proposed_diff("edit_file", edit, tmp_path).splitlines()[-2:] == ["-a a", "+b a"]
    every = {**edit, "replace_all": True}
    assert proposed_diff("edit_file", every, tmp_path).splitlines()[-1] == "+b b"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("exec", {"command": "ls"}),
        ("write_file", {"path": "../outside.txt", "content": "x"}),
        ("edit_file", {"path": "b.txt", "old_string": "absent", "new_string": "y"}),
        ("write_file", {"path": "b.txt", "content": "same\n"}),
    ],
)
def test_no_diff_where_none_can_honestly_be_shown(tmp_path, tool, args):
    (tmp_path / "b.txt").write_text("same\n")
    (tmp_path.parent / "outside.txt").write_text("secret\n")
    assert proposed_diff(tool, args, tmp_path) is None


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    diff = "--- a/x\n+++ b/x\n-old\n+new"
    assert _coloured_diff(diff, io.StringIO()) == diff
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = _coloured_diff(diff, Tty())
    assert "\x1b[31m-old\x1b[0m" in coloured and "\x1b[32m+new\x1b[0m" in coloured
    monkeypatch.setenv("NO_COLOR", "1")
    assert _coloured_diff(diff, Tty()) == diff


@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
def test_the_approval_prompt_shows_the_diff_on_a_real_terminal(workspace, no_color):
    (workspace / "a.txt").write_text("old line\n")
    env = {"NO_COLOR": "1"} if no_color else {}
    with (
        ModelServer([write_call("new line"), {"text": "done"}]) as server,
        Terminal(
            "--provider", "openai", "--base-url", server.url, "ask", "go", cwd=workspace, env=env
        ) as term,
    ):
        shown = term.expect_prompt().splitlines()
        assert "-old line" in shown and "+new line" in shown
        coloured = b"\x1b[32m+new line" in term.raw
        assert coloured is not no_color
        term.type("n")
        assert term.wait() == 0
    assert (workspace / "a.txt").read_text() == "old line\n"
