"""The approval question shows the change a write or edit would make (issue 17)."""

import io
import re

import pytest

from mdagent.ui.approval import (
    MAX_DIFF_LINES,
    Change,
    ask_terminal,
    coloured_diff,
    format_call,
    proposed_change,
    proposed_diff,
    settings_changes,
    shown,
)
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
    assert coloured_diff(diff, io.StringIO()) == diff
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = coloured_diff(diff, Tty())
    assert "\x1b[31m-old\x1b[0m" in coloured and "\x1b[32m+new\x1b[0m" in coloured
    monkeypatch.setenv("NO_COLOR", "1")
    assert coloured_diff(diff, Tty()) == diff


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


# -- a question that never hides the change (issue 30) ---------------------------------


def test_a_long_diff_is_cut_and_counted(tmp_path):
    old = "".join(f"line {i}\n" for i in range(100))
    (tmp_path / "a.txt").write_text(old)
    new = old.replace("line 5\n", "five\n").replace("line 95\n", "ninety-five\n")
    args = {"path": "a.txt", "content": new + "".join(f"more {i}\n" for i in range(80))}
    change = proposed_change("write_file", args, tmp_path)
    assert (change.added, change.removed) == (82, 2)
    assert change.counted() == "84 lines changed (+82 −2)"
    cut = proposed_diff("write_file", args, tmp_path).splitlines()
    assert len(cut) == MAX_DIFF_LINES + 1
    assert (
        cut[-1]
        == f"… {len(change.lines) - MAX_DIFF_LINES} more diff lines (answer v to see them all)"
    )
    assert change.text(None).splitlines()[-1] == "+more 79"
    assert Change(("+x",), 1, 0).counted() == "1 line changed (+1 −0)"
    assert change.settings is None  # not YAML


def test_a_yaml_file_says_what_changes_in_its_settings(tmp_path):
    (tmp_path / "agent.yaml").write_text("policy:\n  mode: ask\n  allow: [read_file]\n")
    new = "# pad\npolicy:\n  mode: full\n  allow: [read_file, 'exec(*)']\nhooks: {}\n"
    change = proposed_change("write_file", {"path": "agent.yaml", "content": new}, tmp_path)
    assert change.settings == (
        "policy.mode: ask → full",
        "policy.allow: + exec(*)",
        "hooks: (none) → {}",
    )


@pytest.mark.parametrize(
    ("old", "new", "lines"),
    [
        ("a: 1\n", "# only a comment\na: 1\n", []),
        ("", "policy:\n  mode: full\n", ["policy.mode: (none) → full"]),
        ("policy: {deny: [x, y]}", "policy: {deny: [y]}", ["policy.deny: − x"]),
        ("a: [x]", "a: [x, x]", ['a: ["x"] → ["x", "x"]']),
        ("a: [x, y]", "a: [y, x]", ['a: ["x", "y"] → ["y", "x"]']),
        ("a: {b: 1}", "a: 2", ['a: {"b": 1} → 2']),
        ("a: 1", "b: true", ["a: 1 → (none)", "b: (none) → true"]),
        ("a: 1", "- x", ['(the whole file): {"a": 1} → ["x"]']),
        ("a: [1", "a: 1", ["the file is not valid YAML now: "]),
        ("a: 1", "a: [1", ["the file is not valid YAML after the change: "]),
        ("a: 1", "a: null", ["a: 1 → null"]),
        ("a: 1", "a: 1\nhooks: {}", ["hooks: (none) → {}"]),
        ("hooks: {}", "hooks:", ["hooks: {} → null"]),
    ],
)
def test_settings_changes(old, new, lines):
    got = settings_changes(old, new)
    assert len(got) == len(lines)
    assert all(g.startswith(line) for g, line in zip(got, lines, strict=True))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rm x" + "\n" * 300, "rm x\n⟨300 blank lines⟩"),
        ("a\n\n\nb", "a\n\n\nb"),  # two blank lines are drawn
        ("a\n\n\n\nb", "a\n⟨3 blank lines⟩\nb"),
        ("a\n  \n\t\n \nb", "a\n⟨3 blank lines⟩\nb"),  # blanks only count as blank
        ("echo" + " " * 17 + "x", "echo ⟨17 blanks⟩ x"),
        ("e" + " " * 16 + "x", "e" + " " * 16 + "x"),
        ("x" * 45, "x" * 19 + "↩\n" + "x" * 19 + "↩\n" + "x" * 7),
        ("ls\x1b[2K\rrm", "ls\\x1b[2K\\rrm"),
        ("", ""),
    ],
)
def test_what_the_question_draws_of_a_value(text, expected):
    assert shown(text, width=20) == expected


def test_a_command_is_never_shortened_but_drawn_folded():
    command = "echo hi" + "\n" * 300 + "rm -rf ~" + " " * 5000 + "; reboot"
    text = format_call("exec", {"command": command}, width=40)
    assert text.splitlines() == [
        "exec",
        "  command:",
        "      echo hi",
        "      ⟨299 blank lines⟩",
        "      rm -rf ~ ⟨5000 blanks⟩ ; reboot",
    ]


def _asked(monkeypatch, typed: str, *args, **kwargs):
    """``ask_terminal`` with ``typed`` as the person's lines: (answer, what it showed)."""
    import contextlib

    from mdagent.ui import approval

    @contextlib.contextmanager
    def fake_input():
        yield io.StringIO(typed)

    monkeypatch.setattr(approval, "terminal_input", fake_input)
    shown_text = io.StringIO()
    return ask_terminal(*args, out=shown_text, **kwargs), shown_text.getvalue()


def test_a_cut_diff_can_be_shown_whole_before_answering(monkeypatch, tmp_path):
    args = {"path": "a.txt", "content": "".join(f"new {i}\n" for i in range(100))}
    answer, text = _asked(monkeypatch, "v\nwhat\nn\n", "write_file", args, workdir=tmp_path)
    assert answer == "no"
    question = "Run it? [y]es / [v]iew all / [t]ell / [n]o / [a]lways: "
    assert text.count(question) == 3
    assert text.count("+new 99") == 1 and text.count("+new 10\n") == 2
    assert "100 lines changed (+100 −0)" in text and "Please answer y, v, t, n or a." in text
    answer, text = _asked(
        monkeypatch, "x\nv\ny\n", "write_file", args, workdir=tmp_path, always=False
    )
    assert answer == "yes" and "Run it? [y]es / [v]iew all / [t]ell / [n]o: " in text
    assert "Please answer y, v, t or n." in text and "+new 99" in text


def test_v_is_no_answer_where_nothing_is_cut(monkeypatch, tmp_path):
    args = {"path": "a.txt", "content": "one\n"}
    answer, text = _asked(monkeypatch, "v\nn\n", "write_file", args, workdir=tmp_path)
    assert answer == "no" and "Please answer y, t, n or a." in text
    assert "Run it? [y]es / [t]ell / [n]o / [a]lways: " in text and "[v]iew" not in text
    assert "1 line changed (+1 −0)" in text


def test_the_agents_own_settings_are_shown_whole_with_what_changes(monkeypatch, tmp_path):
    target = tmp_path / ".agents" / "config" / "agent.yaml"
    target.parent.mkdir(parents=True)
    target.write_text("policy:\n  mode: ask\n")
    pad = "".join(f"# padding {i}\n" for i in range(70))
    content = f"{pad}policy:\n  mode: full\n{pad}"
    args = {"path": ".agents/config/agent.yaml", "content": content}
    answer, text = _asked(
        monkeypatch, "n\n", "write_file", args, workdir=tmp_path, always=False, protected=True
    )
    assert answer == "no"
    lines = text.splitlines()
    assert "+  mode: full" in lines and "-  mode: ask" in lines
    assert "+# padding 69" in lines and "more diff lines" not in text
    assert lines[-3:-1] == ["What this changes in the settings:", "  policy.mode: ask → full"]
    assert "more chars" not in text  # the content in full too
    assert "Run it? [y]es / [t]ell / [n]o: " in text
    answer, text = _asked(
        monkeypatch, "n\n", "write_file", {**args, "content": "# x\npolicy:\n  mode: ask\n"},
        workdir=tmp_path, protected=True,
    )  # fmt: skip
    assert "  nothing (only comments or layout)" in text.splitlines()


PADDED_SETTINGS = "".join(f"# padding line {i}\n" for i in range(70))


def test_the_question_shows_a_padded_settings_change_on_a_real_terminal(workspace):
    settings = workspace / ".agents" / "config" / "agent.yaml"
    settings.parent.mkdir(parents=True)
    settings.write_text("policy:\n  mode: ask\n")
    content = f"{PADDED_SETTINGS}policy:\n  mode: full\n{PADDED_SETTINGS}"
    with (
        ModelServer(
            [write_call(content, ".agents/config/agent.yaml"), {"text": "done"}]
        ) as server,
        Terminal(
            "--provider", "openai", "--base-url", server.url, "ask", "go", cwd=workspace,
            columns=120,
        ) as term,
    ):  # fmt: skip
        shown_text = term.expect(re.escape("Run it? [y]es / [t]ell / [n]o: ") + "$")
        screen = term.text.splitlines()
        assert "+  mode: full" in screen and "-  mode: ask" in screen
        assert "  policy.mode: ask → full" in screen
        assert "142 lines changed (+141 −1)" in screen
        assert shown_text
        term.type("n")
        assert term.wait() == 0
    assert settings.read_text() == "policy:\n  mode: ask\n"


def test_a_command_padded_with_blank_lines_shows_its_payload_on_a_real_terminal(workspace):
    command = "echo payload && rm -f victim" + "\n" * 300
    (workspace / "victim").write_text("keep")
    call = {"tool_calls": [{"name": "exec", "arguments": {"command": command}}]}
    with (
        ModelServer([call, {"text": "done"}]) as server,
        Terminal(
            "--provider", "openai", "--base-url", server.url, "ask", "go", cwd=workspace
        ) as term,
    ):
        above = term.expect_prompt().splitlines()
        question = above.index("Allow exec")
        assert above[question + 1 :] == [
            "  command:",
            "      echo payload && rm -f victim",
            "      ⟨300 blank lines⟩",
            "[a]lways saves exec(echo payload:*), exec(rm:*) in the project layer",
            "(to change it: a [project|user] [RULE, …])",
            "Run it? [y]es / [s]ession / [t]ell / [n]o / [a]lways: ",
        ]
        term.type("n")
        assert term.wait() == 0
    assert (workspace / "victim").exists()


def test_a_long_diff_is_shown_whole_on_v_on_a_real_terminal(workspace):
    content = "".join(f"new line {i}\n" for i in range(90))
    with (
        ModelServer([write_call(content), {"text": "done"}]) as server,
        Terminal(
            "--provider", "openai", "--base-url", server.url, "ask", "go", cwd=workspace
        ) as term,
    ):
        first = term.expect(re.escape("[v]iew all / [s]ession / [t]ell / [n]o / [a]lways: ") + "$")
        assert first
        assert "+new line 89" not in term.text and "90 lines changed (+90 −0)" in term.text
        assert "… 33 more diff lines (answer v to see them all)" in term.text
        term.type("v")
        term.expect(re.escape("[v]iew all / [s]ession / [t]ell / [n]o / [a]lways: ") + "$")
        assert "+new line 89" in term.text.splitlines()
        term.type("n")
        assert term.wait() == 0
    assert not (workspace / "a.txt").exists()
