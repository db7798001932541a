"""console.py: tables that fit a width, colour only where it belongs, the --json error line."""

from __future__ import annotations

import io
import json

import pytest

from mdagent.core.errors import (
    ConfigError,
    MdagentError,
    PolicyDenied,
    Problem,
    ToolFailed,
    UsageError,
)
from mdagent.ui import console


class Tty(io.StringIO):
    """A captured stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def colour_env(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")


ROWS = [
    ("/count", "Count lines, words and bytes of a file"),
    ("/term", "Run a shell command line in the workspace, exactly as typed"),
]


def test_a_table_without_a_width_keeps_every_character():
    text = console.table(ROWS, ["NAME", "DESCRIPTION"], fit=True, stream=io.StringIO())
    assert text.splitlines() == [
        "NAME    DESCRIPTION",
        "/count  Count lines, words and bytes of a file",
        "/term   Run a shell command line in the workspace, exactly as typed",
    ]


def test_a_table_fits_its_width_by_cutting_the_last_column_at_a_word():
    lines = console.table(ROWS, ["NAME", "DESCRIPTION"], width=40).splitlines()
    assert lines == [
        "NAME    DESCRIPTION",
        "/count  Count lines, words and bytes of…",
        "/term   Run a shell command line in the…",
    ]
    assert all(len(line) <= 40 for line in lines)


def test_a_word_longer_than_the_room_is_cut_inside_it():
    assert console.table([("a", "x" * 30)], width=20) == "a  " + "x" * 16 + "…"


def test_the_last_column_keeps_a_minimum_and_the_first_gives_way_after_it():
    line = console.table([("n" * 30, "a fairly long description here")], width=20)
    assert line == "n" * 11 + "…  a fai…"  # fits exactly: never wider than asked
    assert len(line) <= 20


@pytest.mark.parametrize("width", [60, 45, 30, 20, 12, 8])
def test_every_line_of_a_wide_table_fits_exactly_and_cuts_at_a_word(width):
    rows = [
        ["/term", "exec", "raw", "bundled:skills/term/SKILL.md", "Run a shell command line"],
        ["/commit-message", "(prompt)", "", "bundled:skills/commit/SKILL.md", "Draft a message"],
    ]
    header = ["COMMAND", "TOOL", "ARGS", "SOURCE", "DESCRIPTION"]
    text = console.table(rows, header, width=width)
    words = {w for row in [*rows, header] for cell in row for w in cell.split()}
    for line in text.splitlines():
        assert len(line) <= width, line
        for cell in line.split("  "):
            for word in cell.strip().split():
                # Every word is whole, or a cut one ends in "…".
                assert word in words or word.endswith("…"), line
    assert text.splitlines()[1].startswith("/te")  # the name is the last to go


def test_the_width_comes_from_the_terminal_and_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    assert console.terminal_width(Tty()) == 30
    assert console.terminal_width(io.StringIO()) is None
    shown = console.table(ROWS, fit=True, stream=Tty())
    assert shown.splitlines()[0] == "/count  Count lines, words…"
    assert console.table(ROWS, stream=Tty()).splitlines()[0] == "  ".join(ROWS[0])  # not asked


def test_described_uses_the_first_line_whole_and_fits_the_width():
    pairs = [("a", "first line of a long text\nsecond")]
    assert console.described(pairs) == "a  first line of a long text"
    assert console.described(pairs, width=16) == "a  first line…"


def test_paint_colours_a_terminal_only(colour_env, monkeypatch):
    assert console.paint("x", "red", Tty()) == "\x1b[31mx\x1b[0m"
    assert console.paint("x", "red", io.StringIO()) == "x"
    assert console.mark(True, Tty()) == "\x1b[32m✓\x1b[0m"
    assert console.mark(False, Tty()) == "\x1b[31m✗\x1b[0m"
    assert console.mark(False, io.StringIO()) == "✗"


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"NO_COLOR": "yes"}, {"TERM": "dumb"}])
def test_no_color_and_a_dumb_terminal_turn_colour_off(colour_env, monkeypatch, env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert console.paint("x", "red", Tty()) == "x"
    assert console.mark(True, Tty()) == "✓"


def test_an_empty_no_color_does_not_count(colour_env, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "")  # no-color.org: only a non-empty value
    assert console.paint("x", "green", Tty()) == "\x1b[32mx\x1b[0m"


def test_problem_lines_colour_the_severity(colour_env):
    error = Problem("a.yaml", 3, 1, "error", "bad")
    warning = Problem("a.yaml", 4, 2, "warning", "odd")
    assert console.problem_line(error, io.StringIO()) == str(error)
    assert console.problem_line(error, Tty()) == "a.yaml:3:1: \x1b[31merror\x1b[0m: bad"
    assert console.problem_line(warning, Tty()) == "a.yaml:4:2: \x1b[33mwarning\x1b[0m: odd"


def test_say_error_reds_the_first_line_only(colour_env):
    tty = Tty()
    console.say_error("unknown command /x\ncommands: /a", tty)
    assert tty.getvalue() == "\x1b[31magent: unknown command /x\x1b[0m\ncommands: /a\n"
    plain = io.StringIO()
    console.say_error("unknown command /x", plain)
    assert plain.getvalue() == "agent: unknown command /x\n"


def test_say_warning(colour_env):
    tty = Tty()
    console.say_warning("careful", tty)
    assert tty.getvalue() == "\x1b[33magent: warning: careful\x1b[0m\n"


def test_report_error_as_json_is_one_object_on_stdout(capsys):
    console.report_error("no such thing", "USAGE", as_json=True)
    out, err = capsys.readouterr()
    assert err == ""
    assert out.count("\n") == 1
    assert json.loads(out) == {"ok": False, "error": {"code": "USAGE", "message": "no such thing"}}
    console.report_error("no such thing", "USAGE")
    out, err = capsys.readouterr()
    assert (out, err) == ("", "agent: no such thing\n")


def test_every_error_has_a_code_named_after_its_class():
    assert MdagentError.code == "ERROR"
    assert UsageError.code == "USAGE"
    assert ConfigError.code == "CONFIG"
    assert ToolFailed.code == "TOOL_FAILED"
    assert PolicyDenied.code == "DENIED"  # the code a denied call's result carries

    class QuotaExceededError(MdagentError):
        pass

    class Refused(PolicyDenied):
        pass

    assert QuotaExceededError.code == "QUOTA_EXCEEDED"
    assert Refused.code == "DENIED"


def test_a_wide_middle_column_is_narrowed_so_every_line_fits():
    rows = [
        ("/count", "bundled:config/a-rather-long-folder/files.yaml:44", "Count lines of a file")
    ]
    for width in (60, 50):
        line = console.table(rows, width=width)
        assert len(line) <= width, line
        name, source, description = line.split("  ")
        assert name == "/count" and source.endswith("…") and description.startswith("Count")


def test_costs_show_two_significant_digits():
    from mdagent.ui.display import format_cost

    shown = [format_cost(c) for c in (0, 0.0062, 0.00999, 1.234, 12345.678, 0.0000001)]
    assert shown == ["$0.00", "$0.0062", "$0.010", "$1.23", "$12,345.68", "< $0.0001"]
