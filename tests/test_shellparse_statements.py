"""Statements, the checks on the whole line and the top level of the parser.

How `_Walker.statement` reads each kind of statement (lists, pipelines,
compound commands, loops, case, functions, assignments), the blanks and
characters the grammar reads differently from bash (`check_blanks`, `_parse`),
and the refusals the person reads as "could not be checked: <message>".
"""

from __future__ import annotations

import pytest

from mdagent.safety.shell import grammar
from mdagent.safety.shell.shellparse import Unparseable, parse


def _cores(command: str) -> list[tuple[str, ...]]:
    return [s.core for s in parse(command)]


# -- every kind of statement runs its commands ----------------------------------------


@pytest.mark.parametrize(
    ("command", "cores"),
    [
        # the commands of every branch may run
        ("if a; then b; elif c; then rm x; fi", [("a",), ("b",), ("c",), ("rm", "x")]),
        ("if a; then b; else rm x; fi", [("a",), ("b",), ("rm", "x")]),
        # a comment between the parts of a pipeline, a case or a function is no command
        ("ls | # c\n wc", [("ls",), ("wc",)]),
        ("case x in # c\n a) rm x;; esac", [("rm", "x")]),
        ("f() # c\n { rm x; }", [("rm", "x")]),
        # a for ((...)) header is arithmetic, not commands: only the body runs
        ("for ((i=0; i<3; i++)); do rm x; done", [("rm", "x")]),
        # a line writing only a file (`>x`, fed a here-document) runs nothing else
        (">x <<E\nE\n", [(">", "x")]),
    ],
)
def test_each_kind_of_statement_gives_the_commands_bash_runs(command, cores):
    assert _cores(command) == cores


def test_assignments_without_a_command_are_one_segment():
    # `a=1 b=2` sets shell variables; deny rules on e.g. `PATH=*` read its argv.
    (seg,) = parse("a=1 b=2")
    assert seg.argv == ("a=1", "b=2") and seg.core == ()


def test_a_for_header_makes_the_line_dynamic_keeping_each_segments_own_reason():
    (seg,) = parse("for ((i=0; i<3; i++)); do rm x; done")
    assert seg.dynamic == "a for ((...)) header is evaluated as arithmetic"
    # A segment already dynamic keeps the reason that names its own word.
    (seg,) = parse("for ((i=0; i<3; i++)); do rm $x; done")
    assert seg.dynamic == "`$x` is computed at run time"


# -- blanks and line continuations bash reads as the grammar does: accepted -----------


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        # a backslash-newline next to a blank only joins lines: words stay apart
        ("ls \\\n -l \\\n -a", ("ls", "-l", "-a")),
        ("echo a\\\n b", ("echo", "a", "b")),
        ("ls \\\n-l", ("ls", "-l")),
        # two in a row are one continuation, here followed by a blank
        ("echo a\\\n\\\n b", ("echo", "a", "b")),
    ],
)
def test_a_line_continuation_between_words_is_read_as_bash_reads_it(command, argv):
    (seg,) = parse(command)
    assert seg.argv == argv


# -- what bash reads differently, or the walker cannot read: refused, saying why -----


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("ls\x00rm x", "NUL byte in command"),
        ("ls\r\nrm x", "carriage return, vertical tab or form feed in command"),
        ("ls \ud800", "command is not valid text"),  # a lone surrogate cannot be encoded
        # bash runs `echo ' #x'` and `rm y`; the grammar skips `\ ` and reads a comment
        ("echo \\ #x; rm y", "escaped blank between words"),
        # bash writes to the file `#x`; the grammar reads `#x` as a comment
        ("echo >#x\nrm y", "comment that does not start a word"),
        # ... also after a `#` that is only text
        ("echo '#'; echo >#x\nrm y", "comment that does not start a word"),
        # to bash `{ls;}` and `!(ls)` are words, not a group or a negation
        ("{ls; }", "'{' not followed by a blank"),
        ("!(ls)", "'!' not followed by a blank"),
    ],
)
def test_what_bash_reads_differently_is_refused_saying_why(command, message):
    # The message is what the person reads: "could not be checked: <message>".
    with pytest.raises(Unparseable, match=f"^{message}$"):
        parse(command)


def test_a_line_too_deep_for_the_walker_is_refused_saying_why():
    # The walker recurses once per nesting level; Python's limit ends it first.
    with pytest.raises(Unparseable, match=r"^cannot parse command: RecursionError\("):
        parse("( " * 1000 + "rm x" + " )" * 1000)


def test_the_first_line_a_process_parses_builds_the_parser():
    # The parser is built on first use; the test process already has one, so
    # start from a fresh process's state.
    grammar.forget_parser()
    assert _cores("ls; rm x") == [("ls",), ("rm", "x")]
    assert _cores("cat y") == [("cat", "y")]  # and reused after


def test_a_program_that_passes_its_input_on_to_source_runs_it():
    from mdagent.safety.shell.understanding import reads_script_from_stdin

    assert reads_script_from_stdin(("ssh-agent", "source", "/dev/stdin"))
    assert reads_script_from_stdin(("ssh-agent", ".", "/dev/stdin"))
    assert not reads_script_from_stdin(("echo", "source"))
