"""What makes a command's meaning depend on run-time values: words computed
or evaluated as arithmetic or code, and the code `sh -c`, `watch` or
`parallel` run. Policy allows no pattern to cover a dynamic segment."""

from __future__ import annotations

import re

import pytest

from mdagent.safety.shell.shellparse import Unparseable, parse


def _dynamic(command: str) -> list[str | None]:
    return [s.dynamic for s in parse(command)]


@pytest.mark.parametrize(
    "command",
    [
        "echo {1..3}",  # a brace expansion only names words
        "[[ a =~ x.* ]]",  # a regex is matched, not evaluated
        "a=(1 2)",  # an array of literals
        "a=(x # note\n y)",  # a comment inside an array is no value
    ],
)
def test_literal_words_are_not_dynamic(command):
    assert _dynamic(command) == [None]


@pytest.mark.parametrize(
    "command",
    [
        "echo ${x}; ls",  # a plain read of a value evaluates nothing
        "echo $((1+2)); ls",  # arithmetic on numbers alone runs no code
    ],
)
def test_a_plain_expansion_leaves_the_other_segments_alone(command):
    assert _dynamic(command)[1:] == [None]


@pytest.mark.parametrize(
    ("command", "why"),
    [
        # Arithmetic reads a variable's value as an expression, and
        # `a[$(cmd)]` in that value runs cmd: nothing on the line is safe.
        ("echo $((x)); ls", "arithmetic `$((x))` may run code held in a variable"),
        ("echo $((X)); ls", "arithmetic `$((X))` may run code held in a variable"),
        ("echo ${x:-a}; ls", "`${x:-a}` is computed at run time"),
        ("echo ${a[i]}; ls", "subscript `a[i]` is evaluated as arithmetic"),
    ],
)
def test_an_evaluating_expansion_makes_every_segment_dynamic(command, why):
    assert _dynamic(command)[-1] == why


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("watch ls", "a wrapper runs its arguments as shell code"),
        ("parallel rm ::: a", "`parallel` runs its arguments as shell commands"),
        ("/usr/bin/parallel", "`parallel` runs its arguments as shell commands"),
    ],
)
def test_programs_that_run_their_arguments_as_code_are_dynamic(command, why):
    assert _dynamic(command)[0] == why


@pytest.mark.parametrize(
    ("command", "inner"),
    [
        # `--` ends the shell's options: the code is the word after it, the
        # next one is $0.
        ("bash -c -- 'rm x' arg0", [("rm", "x")]),
        ("bash -e -c -- 'rm x' arg0", [("rm", "x")]),
        # -c without code runs nothing (bash reports the missing argument).
        ("bash -c", []),
        ("bash -c --", []),
    ],
)
def test_the_code_a_shell_runs_with_c_is_split(command, inner):
    segments = parse(command)
    assert segments[0].dynamic == f"`{segments[0].argv[0]}` runs a string or its input as code"
    assert [s.argv for s in segments[1:]] == inner


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("echo ${x@P}", "`${x@P}` runs its value as code"),
        # bash drops backslash-newline inside double quotes before it reads
        # `$(`: this runs rm, though the grammar saw no substitution.
        ('echo "$\\\n(rm x)"', "command substitution the grammar did not read"),
    ],
)
def test_evaluation_hidden_from_the_grammar_is_refused(command, message):
    with pytest.raises(Unparseable, match=re.escape(message)):
        parse(command)


def test_arithmetic_in_a_here_document_makes_every_segment_dynamic():
    # bash evaluates $((ls)) in the body: a value `a[$(cmd)]` read from a file
    # runs cmd, yet read, cat and a command `ls` look harmless.
    command = "read ls < f; cat <<EOF\n$((ls))\nEOF"
    segments = parse(command)
    assert [s.plain for s in segments] == ["read ls", "cat", "ls"]
    assert all(s.dynamic for s in segments)


# Variants of the four bugs the mutants found: other spellings must fail closed too.
UNCHECKED_VARIANTS = [
    "env --split-string='rm -rf / #x'",
    "env -S'rm -rf / #x'",
    "env -vS 'rm -rf / #x'",
    "sudo env -S 'rm -rf / #x'",
    "typeset -$o r=$(cat f)",
    "local -$o r",
    "export -$o r=1",
    "readonly +$o r",
    'declare -"$o" r=x',
    "declare -${o} r=x",
    "declare -a$o r=x",
    "command declare -$o r=x",
]


@pytest.mark.parametrize("command", UNCHECKED_VARIANTS)
def test_variants_of_env_comments_and_computed_declare_options_are_unchecked(command):
    assert any(s.unchecked for s in parse(command))


@pytest.mark.parametrize(
    "command",
    [
        "echo ${x:=>(rm -rf /)}",
        "echo ${x:+<(rm -rf /)}",
        "echo ${x#<(rm -rf /)}",
        "echo ${x:-a<(rm -rf /)}",
        "cat <<EOF\n${x:-<(rm -rf /)}\nEOF",
        "bash -c 'echo ${x:-<(rm x)}'",
    ],
)
def test_variants_of_a_process_substitution_in_an_expansion_are_refused(command):
    with pytest.raises(Unparseable):
        parse(command)


def test_arithmetic_read_as_a_substitution_in_a_string_or_indented_document_is_dynamic():
    assert all(s.dynamic for s in parse('echo "$((ls))"'))
    assert all(s.dynamic for s in parse("cat <<EOF\n$((ls))\nEOF"))
