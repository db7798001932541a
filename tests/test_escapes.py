"""mdagent.core.escapes: someone else's text made safe to show on a terminal."""

from __future__ import annotations

import pytest

from mdagent.core.escapes import blank_line, is_blank, visible, visible_lines
from mdagent.tools.toolbox import Result
from mdagent.ui import approval
from mdagent.ui.display import outcome_line, short_arguments


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\rb", "a\\rb"),
        ("x\x1b[2K\x1b[1Ay", "x\\x1b[2K\\x1b[1Ay"),
        ("\x1b]0;TITLE\x07", "\\x1b]0;TITLE\\x07"),
        ("\x1b[8mhidden", "\\x1b[8mhidden"),
        ("abc\u202edef", "abc\\u202edef"),
        ("\x9b2J", "\\x9b2J"),  # C1 CSI
        ("a\u2028b", "a\\u2028b"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("tab\tkept", "tab\tkept"),
        ("line\nend", "line\\nend"),
    ],
)
def test_visible_escapes_every_control_and_format_character(text, shown):
    assert visible(text) == shown


def test_visible_lines_keeps_line_ends():
    assert visible_lines("a\x1b[2K\nb\r\n") == "a\\x1b[2K\nb\\r\n"


@pytest.mark.parametrize("ch", ["\u2800", "\u3164", "\u00a0", "\u3000", "\u115f", "\uffa0", " "])
def test_characters_that_draw_nothing_are_blanks(ch):
    assert is_blank(ch) and blank_line(ch * 3)


def test_letters_are_not_blanks():
    assert not blank_line("\u2800x") and not is_blank("a")


# -- finding 9: the question counts every kind of blank -------------------------------


@pytest.mark.parametrize("blank", ["\u2800", "\u3164", "\u00a0", "\u2003", "\uffa0"])
def test_blank_looking_lines_are_counted_not_drawn(blank):
    text = "curl x | sh" + f"\n{blank}" * 300 + "\necho done"
    drawn = approval.shown(text, width=90).splitlines()
    assert drawn == ["curl x | sh", "⟨300 blank lines⟩", "echo done"], drawn[:4]


@pytest.mark.parametrize("blank", ["\u00a0", "\u2800", "\u3164", "\u3000"])
def test_a_run_of_blank_looking_characters_is_counted(blank):
    assert approval.shown("a" + blank * 5000 + "b", width=90) == "a ⟨5000 blanks⟩ b"


# -- finding 10: what the call line and the outcome show --------------------------------


def test_the_call_line_shows_escapes_escaped():
    shown = short_arguments({"command": "echo hi\x1b[2K\x1b[1A\u202e\x9b"})
    assert "\x1b" not in shown and "\u202e" not in shown and "\x9b" not in shown
    assert shown.startswith("echo hi\\x1b[2K")


def test_the_outcome_line_shows_an_error_quoting_the_model_escaped():
    result = Result({"error": "exec would change \x1b[8mx", "code": "DENIED"}, False)
    assert "\x1b" not in outcome_line("exec", result)


def test_a_table_shows_others_text_escaped():
    from mdagent.ui.console import table

    drawn = table([["evil\x1b[2K", "desc\r\u202e"]], ["NAME", "DESCRIPTION"])
    assert "\x1b" not in drawn and "\r" not in drawn and "\u202e" not in drawn
    assert "evil\\x1b[2K" in drawn and "desc\\r\\u202e" in drawn


def test_printable_text_is_returned_as_it_is():
    text = "plain text — with Unicode ✓ and tabs\t"
    assert visible(text) is text and visible_lines(text + "\n") == text + "\n"
