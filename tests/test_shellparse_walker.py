"""What the shell walker makes of redirections, compound statements and shell strings.

Each test pins what the policy judges: the segments (their programs and
words) a real command line produces, the code ``sh``, ``eval`` or ``trap``
runs, and the exact refusal a person reads ("could not be checked: ...")
when the grammar may read a line differently from bash. Written for the
survivors of the mutation run of ``shellparse._Walker`` (docs/mutation.md).
"""

from __future__ import annotations

import pytest

from mdagent.safety.shell.shellparse import MAX_DEPTH, Segment, Unparseable, parse


def _cores(command: str) -> list[tuple[str, ...]]:
    return [s.core for s in parse(command)]


# -- redirections: which command gets the words after them -----------------------------


@pytest.mark.parametrize(
    ("command", "cores"),
    [
        # Bash gives words after a redirection's target to the command the
        # redirection belongs to: the last one of a list, pipeline or `!`.
        ("ls && cat > out x", [("ls",), ("cat", "x"), (">", "out")]),
        ("! cat > out x", [("cat", "x"), (">", "out")]),
        ("a | b | c > out x", [("a",), ("b",), ("c", "x"), (">", "out")]),
        # ... also when the grammar hangs the redirection on a here-document.
        ("cat <<EOF > out x\nhi\nEOF", [("cat", "x"), (">", "out")]),
        ("cat <<EOF > a b > c d\nhi\nEOF", [("cat", "b", "d"), (">", "a"), (">", "c")]),
        # A here-string on another descriptor than stdin is still only data.
        ("while :; do :; done 2<<< x", [(":",), (":",)]),
    ],
)
def test_words_after_a_redirection_go_to_the_command_it_belongs_to(command, cores):
    assert _cores(command) == cores


@pytest.mark.parametrize(
    ("command", "cores"),
    [
        ("ls > 1", [("ls",), (">", "1")]),  # a file named 1, not descriptor 1
        ("ls >& out", [("ls",), (">&", "out")]),  # stdout and stderr into a file
        ("ls >&2", [("ls",)]),  # only a descriptor duplicated
        # no command at all: the file is still created (emptied)
        ("ls && > log <<EOF\nhi\nEOF", [("ls",), (">", "log")]),
    ],
)
def test_a_redirection_writes_a_file_unless_it_only_duplicates_a_descriptor(command, cores):
    assert _cores(command) == cores


def test_a_written_file_is_a_segment_deny_rules_read_like_a_command():
    # policy.segment_candidates reads text, argv, every stage and core.
    assert parse("ls > out")[1] == Segment("> out", (">", "out"), (">", "out"), ((">", "out"),))


def test_an_output_option_is_a_write_listed_right_after_its_command():
    # `git log --output=f` writes f as `> f` would: same segment, same place.
    write = Segment("> f", (">", "f"), (">", "f"), ((">", "f"),))
    git, out, ls = parse("git log --output=f $(ls)")
    assert git.core == ("git", "log", "--output=f", "$(ls)") and ls.core == ("ls",)
    assert out == write


# -- here-documents and here-strings: only a shell reading them runs them -------------


def test_a_here_document_is_code_only_for_the_commands_it_feeds():
    # The shell before the `;` does not read the group's here-document.
    assert _cores("sh; { cat; } <<E\nrm x\nE") == [("sh",), ("cat",)]
    assert _cores("sh; while read l; do :; done <<< 'rm x'") == [
        ("sh",),
        ("read", "l"),
        (":",),
    ]


def test_code_fed_to_a_compound_statement_counts_towards_the_nesting_limit():
    loop = "while sh; do :; done <<< '{}'"
    # The here-string's code is one level deeper, each eval one more.
    deepest = loop.format("eval " * (MAX_DEPTH - 1) + "rm x")
    assert _cores(deepest)[-1] == ("rm", "x")
    with pytest.raises(Unparseable, match="^commands nested too deeply$"):
        parse(loop.format("eval " * MAX_DEPTH + "rm x"))


# -- code run by eval and trap ---------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "cores"),
    [
        ("eval -- 'rm -rf /'", [("eval", "--", "rm -rf /"), ("rm", "-rf", "/")]),
        # After `--` the action is code even when it starts with a dash.
        (
            "trap -- '-x; rm -rf /' EXIT",
            [("trap", "--", "-x; rm -rf /", "EXIT"), ("-x",), ("rm", "-rf", "/")],
        ),
        # `trap - SIGNAL...` resets the signals: no action, nothing to run.
        ("trap - INT TERM", [("trap", "-", "INT", "TERM")]),
        ("trap -l", [("trap", "-l")]),
    ],
)
def test_the_code_eval_and_trap_run_is_exactly_their_action(command, cores):
    assert _cores(command) == cores


# -- what the grammar may read differently: refused, saying why ------------------------


@pytest.mark.parametrize(
    ("command", "message"),
    [
        # bash: `> f 2>&1`, then `rm -rf /` on the next line; the grammar: one command
        ("> f 2>&1 #c\n rm -rf /", "command continued on the next line"),
        # bash feeds `rm -rf /;` to sh; the grammar splits the word after the quote
        ("sh <<< 'rm -rf /'\\;", "here-string read in pieces"),
        ("coproc rm -rf /", "shell keyword 'coproc' read as a command"),
        ("ls ((1))", "unsupported part of a command: subshell"),
        # a syntax error to bash: no command there takes `x`
        ("{ ls; } > out x", "words after a redirection that no command takes"),
        ("f() { :; } > a b", "words after a redirection that no command takes"),
        # the grammar reads a backquote in a here-document as text; bash runs it
        ("cat <<E\n`rm x`\nE", "command substitution the grammar did not read"),
        # `read` evaluates the subscript of the name it is given, running $(...)
        ('read "a[\\$(rm -rf /)]" <<< 1', "command substitution in a quoted array subscript"),
    ],
)
def test_what_the_walker_cannot_read_as_bash_does_is_refused_saying_why(command, message):
    # The message is what the person reads: "could not be checked: <message>".
    with pytest.raises(Unparseable, match=f"^{message}$"):
        parse(command)
