"""The approval question's parts one at a time: reading an answer, colour,
escapes, the question's loop, and the text edits of "always" and revoke
(what the mutation run of approval.py found unguarded, issue 30)."""

from __future__ import annotations

import contextlib
import io
import os
import threading

import pytest

from mdagent.ui import approval
from mdagent.ui.approval import (
    ask_terminal,
    coloured_diff,
    format_call,
    proposed_change,
    read_line,
    tell,
)


class Tty(io.StringIO):
    def isatty(self):
        return True


# -- colour ----------------------------------------------------------------------------


def test_each_kind_of_diff_line_has_its_colour(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n keep\n-old\n+new"
    assert coloured_diff(diff, Tty()).split("\n") == [
        "\x1b[1m--- a/x\x1b[0m",
        "\x1b[1m+++ b/x\x1b[0m",
        "\x1b[36m@@ -1 +1 @@\x1b[0m",
        " keep",  # context stays as it is
        "\x1b[31m-old\x1b[0m",
        "\x1b[32m+new\x1b[0m",
    ]


def test_an_output_without_isatty_is_not_a_terminal():
    class Plain:
        def write(self, text):
            pass

    assert coloured_diff("+x", Plain()) == "+x"


def test_the_question_colours_the_diff_on_a_terminal(monkeypatch, tmp_path):
    monkeypatch.delenv("NO_COLOR", raising=False)
    shown = Tty()

    @contextlib.contextmanager
    def fake_input():
        yield io.StringIO("n\n")

    monkeypatch.setattr(approval, "terminal_input", fake_input)
    args = {"path": "a.txt", "content": "new\n"}
    assert ask_terminal("write_file", args, out=shown, workdir=tmp_path) == "no"
    assert "\x1b[32m+new\x1b[0m" in shown.getvalue()


# -- what the question draws -----------------------------------------------------------


def test_line_and_paragraph_separators_are_shown_escaped():
    text = format_call("exec", {"command": "ls\u2028rm -rf ~\u2029x"})
    assert "\u2028" not in text and "\u2029" not in text
    assert "\\u2028" in text and "\\u2029" in text


def test_a_long_value_keeps_its_two_ends_in_equal_halves():
    text = format_call(
        "t", {"content": "a" * 150 + "b" * 300 + "c" * 150}, max_value=200, width=1000
    )
    assert text.splitlines()[1] == f"  content: {'a' * 100} … (400 more chars) … {'c' * 100}"


def test_format_call_folds_at_the_width_given():
    text = format_call("exec", {"command": "x" * 50}, width=20)
    assert text.splitlines()[1:] == [
        "  command:",
        "      " + "x" * 19 + "↩",
        "      " + "x" * 19 + "↩",
        "      " + "x" * 12,
    ]


def test_the_width_defaults_to_the_terminals(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    assert approval.shown("x" * 40).splitlines()[0] == "x" * 31 + "↩"
    monkeypatch.setenv("COLUMNS", "10")  # never narrower than 20
    assert approval.shown("x" * 40).splitlines()[0] == "x" * 19 + "↩"


def test_two_trailing_blank_lines_are_drawn():
    assert approval.shown("a\n\n", width=20) == "a\n\n"
    assert approval.shown("\n\n\n\na", width=20) == "⟨4 blank lines⟩\na"


# -- the question ----------------------------------------------------------------------


@pytest.fixture
def typed(monkeypatch):
    """Make ``ask_terminal`` read ``text`` as the person's lines."""

    def feed(text):
        @contextlib.contextmanager
        def fake_input():
            yield io.StringIO(text)

        monkeypatch.setattr(approval, "terminal_input", fake_input)

    return feed


def test_three_unclear_answers_are_a_no(typed):
    typed("x\nx\nx\ny\n")
    shown = io.StringIO()
    assert ask_terminal("exec", {"command": "make"}, out=shown) == "no"
    assert shown.getvalue().count("Run it?") == 3


def test_a_cancelled_question_is_a_no(monkeypatch):
    read, write = os.pipe()
    cancel = threading.Event()
    cancel.set()

    @contextlib.contextmanager
    def pipe_input():
        with os.fdopen(read) as source:
            yield source

    monkeypatch.setattr(approval, "terminal_input", pipe_input)
    shown = io.StringIO()
    try:
        assert ask_terminal("exec", {"command": "make"}, out=shown, cancel=cancel) == "no"
    finally:
        os.close(write)
    assert shown.getvalue().endswith("[a]lways: \n")


def test_show_shows_the_whole_diff_and_counts_it_again(typed, tmp_path):
    typed("view\nn\n")
    shown = io.StringIO()
    args = {"path": "a.txt", "content": "".join(f"n{i}\n" for i in range(70))}
    assert ask_terminal("write_file", args, out=shown, workdir=tmp_path) == "no"
    text = shown.getvalue()
    assert text.count("70 lines changed (+70 −0)") == 2 and "+n69" in text


def test_other_values_are_shortened_and_other_yaml_not_summarised(typed, tmp_path):
    typed("n\n")
    shown = io.StringIO()
    args = {"path": "x.yaml", "content": "a: 1\n" + "#" * 400 + "\n"}
    assert ask_terminal("write_file", args, out=shown, workdir=tmp_path) == "no"
    text = shown.getvalue()
    assert "more chars" in text and "What this changes in the settings" not in text


# -- reading an answer -----------------------------------------------------------------


def _answer_from_pipe(data: bytes, cancel: threading.Event) -> str | None:
    read, write = os.pipe()
    os.write(write, data)
    try:
        with os.fdopen(read) as source:
            return read_line(source, cancel)
    finally:
        os.close(write)


def test_an_answer_is_read_whole_and_undecodable_bytes_replaced():
    assert _answer_from_pipe(b"y\n", threading.Event()) == "y\n"
    assert _answer_from_pipe(b"\xff\n", threading.Event()) == "\ufffd\n"


def test_a_cancel_while_waiting_ends_the_read():
    read, write = os.pipe()
    cancel = threading.Event()
    got = []
    with os.fdopen(read) as source:
        reader = threading.Thread(target=lambda: got.append(read_line(source, cancel)))
        reader.start()
        cancel.set()
        reader.join(10)
        stuck = reader.is_alive()
        os.close(write)  # lets a reader stuck in select go
        reader.join(10)
    assert not stuck and got == [None]


def test_a_source_without_a_descriptor_is_read_by_line():
    assert read_line(io.StringIO("a\nb\n"), threading.Event()) == "a\n"


# -- the change of a file ----------------------------------------------------------------


def test_undecodable_bytes_in_the_file_are_replaced(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"old \xff\n")
    change = proposed_change("write_file", {"path": "a.txt", "content": "new\n"}, tmp_path)
    assert change.lines[-2:] == ("-old \ufffd", "+new")


def test_a_yml_file_is_summarised_too(tmp_path):
    change = proposed_change("write_file", {"path": "a.yml", "content": "a: 1\n"}, tmp_path)
    assert change.settings == ("a: (none) → 1",)


# -- telling the person ------------------------------------------------------------------


def test_tell_writes_one_line_and_never_fails():
    out = io.StringIO()
    tell("added allow rule `x`", out)
    assert out.getvalue() == "agent: added allow rule `x`\n"
    closed = io.StringIO()
    closed.close()
    tell("x", closed)  # ValueError: nothing to show it on

    class Broken(io.StringIO):
        def write(self, text):
            raise OSError("gone")

    tell("x", Broken())


# -- what the question offers and says (issue 31's mutation run) -------------------------


def _ask(monkeypatch, typed, out=None, **options):
    """``ask_terminal`` for an exec call with ``typed`` on the terminal: (answer, shown)."""
    out = out if out is not None else io.StringIO()

    @contextlib.contextmanager
    def fake_input():
        yield io.StringIO(typed)

    monkeypatch.setattr(approval, "terminal_input", fake_input)
    return ask_terminal("exec", {"command": "make"}, out=out, **options), out.getvalue()


@pytest.mark.parametrize(
    ("layers", "hint"),
    [
        ((), "[a]lways saves exec(make)\n(to change it: a [RULE, …])"),
        (
            ("project",),
            "[a]lways saves exec(make) in the project layer\n(to change it: a [RULE, …])",
        ),
        (
            ("user", "project"),
            "[a]lways saves exec(make) in the user layer\n(to change it: a [user|project] [RULE, …])",
        ),
    ],
)
def test_the_always_hint_names_the_rule_and_the_layers_to_choose(monkeypatch, layers, hint):
    answer, shown = _ask(monkeypatch, "n\n", rules=("exec(make)",), layers=layers)
    assert answer == "no"
    assert f"\n{hint}\nRun it? " in shown


def test_no_always_hint_without_always_or_without_rules(monkeypatch):
    _, shown = _ask(monkeypatch, "n\n", always=False, rules=("exec(make)",))
    assert "saves" not in shown
    _, shown = _ask(monkeypatch, "n\n", rules=())
    assert "saves" not in shown


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("a\n", {"kind": "always", "rules": ("exec(make)",), "layer": None}),
        ("a exec(ls)\n", {"kind": "always", "rules": ("exec(ls)",), "layer": None}),
    ],
)
def test_always_without_layers_or_a_rule_check(monkeypatch, typed, expected):
    answer, _ = _ask(monkeypatch, typed, rules=("exec(make)",))
    assert answer == expected


def test_without_tell_the_question_does_not_offer_it(monkeypatch):
    answer, shown = _ask(monkeypatch, "n\n", tell=False)
    assert answer == "no"
    assert shown.endswith("Run it? [y]es / [n]o / [a]lways: ")


def test_tell_asks_for_the_reason_on_its_own_line(monkeypatch):
    answer, shown = _ask(monkeypatch, "t\nbecause\n")
    assert answer == {"kind": "tell", "reason": "because"}
    assert shown.endswith(": Tell the model why (Enter: no reason): ")


def test_a_cancel_while_the_reason_is_asked_is_no(monkeypatch):
    cancel = threading.Event()

    class Out(io.StringIO):
        def write(self, text):
            if text.startswith("Tell the model why"):
                cancel.set()  # Ctrl-C while the reason is asked
            return super().write(text)

    read, write = os.pipe()
    os.write(write, b"t\n")
    with open(read, encoding="utf-8") as source, open(write, "wb"):

        @contextlib.contextmanager
        def fake_input():
            yield source

        monkeypatch.setattr(approval, "terminal_input", fake_input)
        out = Out()
        assert ask_terminal("exec", {"command": "make"}, out=out, cancel=cancel) == "no"


@pytest.mark.parametrize(
    ("typed", "expected", "pleas"),
    [("x\nx\ny\n", "yes", 2), ("x\nx\nx\n", "no", 3)],
)
def test_three_unclear_answers_are_no(monkeypatch, typed, expected, pleas):
    answer, shown = _ask(monkeypatch, typed)
    assert answer == expected
    assert shown.count("Please answer y, t, n or a.") == pleas


def test_a_closed_terminal_says_so(monkeypatch):
    with pytest.raises(EOFError, match="^terminal closed$"):
        _ask(monkeypatch, "")


def _lines(count):
    return "".join(f"line{i}\n" for i in range(1, count + 1))


def test_a_diff_of_exactly_the_limit_is_not_cut(monkeypatch, tmp_path):
    # 3 header lines and 57 added lines: MAX_DIFF_LINES in all
    monkeypatch.setattr(
        approval, "terminal_input", lambda: contextlib.nullcontext(io.StringIO("n\n"))
    )
    out = io.StringIO()
    args = {"path": "a.txt", "content": _lines(approval.MAX_DIFF_LINES - 3)}
    ask_terminal("write_file", args, out=out, workdir=tmp_path)
    assert "[v]iew all" not in out.getvalue()
    assert "more diff lines" not in out.getvalue()


def test_view_all_colours_the_whole_diff_on_a_terminal(monkeypatch, tmp_path):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(
        approval, "terminal_input", lambda: contextlib.nullcontext(io.StringIO("v\nn\n"))
    )
    out = Tty()
    args = {"path": "a.txt", "content": _lines(approval.MAX_DIFF_LINES)}
    assert ask_terminal("write_file", args, out=out, workdir=tmp_path) == "no"
    # the last line is only in the whole diff, shown after `v`
    assert f"\x1b[32m+line{approval.MAX_DIFF_LINES}\x1b[0m" in out.getvalue()


def test_format_call_shows_other_values_as_json_in_their_own_characters():
    import datetime

    text = format_call("t", {"when": datetime.date(2020, 1, 2), "names": ["é"]})
    assert text == 't\n  when: "2020-01-02"\n  names: ["é"]'


def test_an_edit_with_a_new_string_that_is_not_text_shows_no_change(tmp_path):
    (tmp_path / "a.txt").write_text("old\n")
    args = {"path": "a.txt", "old_string": "old", "new_string": 5}
    assert proposed_change("edit_file", args, tmp_path) is None


def test_settings_show_other_values_in_their_own_characters():
    from mdagent.ui.approval import settings_changes

    assert settings_changes("a: []\n", "a: [{b: é}]\n") == ['a: + {"b": "é"}']


def test_tell_reaches_the_stream_json_sink(monkeypatch):
    from mdagent.ui import events

    said = []
    monkeypatch.setattr(events, "sink", said.append)
    tell("added allow rule `x`")
    assert said == ["agent: added allow rule `x`"]


def test_tell_is_seen_at_once_in_a_buffered_file(tmp_path):
    path = tmp_path / "log"
    with open(path, "w", encoding="utf-8") as out:
        tell("x", out)
        assert path.read_text() == "agent: x\n"


@pytest.mark.parametrize(
    ("typed", "expected"),
    [("a bad(1)\na bad(2)\ny\n", "yes"), ("a bad(1)\na bad(2)\na bad(3)\n", "no")],
)
def test_three_wrong_rules_are_no(monkeypatch, typed, expected):
    def check_rule(rule):
        return f"{rule} is not allowed"

    answer, shown = _ask(monkeypatch, typed, rules=("exec(make)",), check_rule=check_rule)
    assert answer == expected
    assert shown.count("Not a rule: ") == typed.count("a bad")
