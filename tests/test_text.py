"""core/text.py: first lines, the columns text takes, shortening at a word, plain tables."""

from __future__ import annotations

from mdagent.core.text import display_width, first_line, shorten, table


def test_shorten():
    assert shorten("short", 10) == "short"
    assert shorten("two words", 6) == "two…"
    assert shorten("abcdef", 4) == "abc…"
    assert shorten("abc", 1) == "…"


def test_wide_characters_are_cut_by_the_columns_they_take():
    wide = "把暂存的更改总结成一段简短的提交说明"
    assert display_width(wide) == 2 * len(wide)
    assert display_width("e\u0301") == 1  # a combining accent takes no column
    assert shorten(wide, 11) == "把暂存的更…"  # 10 columns of text and the ellipsis
    assert shorten(wide, 10) == "把暂存的…"  # a wide character never straddles the edge
    assert shorten(wide, 36) == wide


def test_first_line_is_the_first_non_blank_one_shortened_to_its_limit():
    assert first_line("\n\n  Count lines\nof a file\n") == "Count lines"
    assert first_line("x" * 100) == "x" * 79 + "…"
    assert first_line("x" * 100, None) == "x" * 100
    assert first_line(None) == ""


def test_a_table_without_a_width_keeps_every_character_whatever_the_terminal():
    # No stream, no terminal query: what /help caches for a pipe.
    rows = [["/greet <name>", "Say hello " * 20], ["/x", ""]]
    assert table(rows).splitlines() == ["/greet <name>  " + ("Say hello " * 20).rstrip(), "/x"]
    assert table(rows, width=30).splitlines()[0] == "/greet <name>  Say hello Say…"
