"""What deny and allow rules see through wrappers, renaming builtins and scripts read
from stdin: the program a line really runs (`Segment.core`, `stages`), why a segment
cannot be checked (`unchecked`) and what a shell reads as code.

Each case holds a decision the mutation tests found unguarded (docs/mutation.md).
"""

from __future__ import annotations

import shlex

import pytest

from mdagent.safety.shell.shellparse import parse, segments


@pytest.mark.parametrize(
    ("command", "core"),
    [
        ("sudo -u root rm x", ("rm", "x")),
        # Clustered flags: every letter is read, the valued one takes the next word.
        ("sudo -Eu root rm x", ("rm", "x")),
        ("env -iu HOME rm x", ("rm", "x")),
        # A lone `-` is flock's lock file, not an option.
        ("flock - rm -rf x", ("rm", "-rf", "x")),
        # env -S splits as the shell would: quotes are removed.
        ("env -S \"'rm' -rf x\"", ("rm", "-rf", "x")),
        ("env -S 'rm -rf X'", ("rm", "-rf", "X")),  # an X is neither `$` nor `\`
        ("chrt -f 1 rm x", ("rm", "x")),
        ("env -S 'bash -e' ./build.sh", ("bash", "-e", "./build.sh")),  # words after the string
    ],
)
def test_deny_rules_see_the_program_behind_the_wrapper(command, core):
    (seg,) = parse(command)
    assert seg.core == core
    assert seg.unchecked is None


@pytest.mark.parametrize(
    "command", ["env", "nohup", "timeout", "timeout -s KILL", "env --unset HOME"]
)
def test_a_wrapper_without_a_command_runs_nothing(command):
    # `env --unset HOME` prints the environment: nothing else runs, nothing is unknown.
    (seg,) = parse(command)
    assert seg.core == ()
    assert seg.stages == (tuple(command.split()),)
    assert seg.unchecked is None


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("sudo -u", "`sudo` option `-u` without a literal value"),
        ("env --unset", "`env` option `--unset` without a literal value"),
        ('sudo --user "$u" rm x', "`sudo` option `--user` without a literal value"),
        ("timeout --verbose=1 5 rm x", "`timeout` option `--verbose=1` takes no value"),
        ("sudo -* rm x", "`sudo` option `-*` is computed at run time"),
        ("sudo ./*.sh", "the program `./*.sh` is named at run time"),
        ('env -S "rm \'x"', "`env -S` string that cannot be split"),
        ("flock /tmp/*.lock rm x", "`flock` operand `/tmp/*.lock` is computed at run time"),
        # After a wrapper's operand or chrt's priority, the program is still a word
        # computed at run time.
        ('timeout 5 "$cmd" x', "the program `$cmd` is named at run time"),
        ('chrt -f 1 "$cmd"', "the program `$cmd` is named at run time"),
        ("shopt -s expand_aliases", "`shopt -s expand_aliases` makes aliases run"),
        ("fc -s", "`fc` runs commands from the history"),
        ("/usr/bin/parallel rm ::: a b", "`parallel` runs its arguments as shell commands"),
        ('sh "$f"', "`sh` runs code from `$f`, computed at run time"),
        # A script whose name merely starts with a capital letter is still the script.
        ('sh "X$f"', "`sh` runs code from `X$f`, computed at run time"),
    ],
)
def test_what_deny_rules_cannot_read_is_unchecked_saying_exactly_why(command, why):
    # The reason is what the person is shown when a deny rule fails closed on it.
    assert parse(command)[0].unchecked == why


@pytest.mark.parametrize(
    ("command", "stage"),
    [
        ("/usr/bin/find . -exec rm {} \\;", ("rm", "{}")),
        ("find -exec rm {} \\;", ("rm", "{}")),  # -exec right after the program
        ("find . -name x -exec rm -rf {} +", ("rm", "-rf", "{}")),  # `+` ends it too
        ("find . -exec rm -rf {} + -print", ("rm", "-rf", "{}")),
        ("fd -x rm", ("rm",)),
        ("find . -exec echo {} \\; -exec rm {} \\;", ("rm", "{}")),  # each -exec
    ],
)
def test_the_command_find_runs_is_a_stage_and_unchecked(command, stage):
    (seg,) = parse(command)
    assert stage in seg.stages
    assert "runs a command with file names found at run time" in seg.unchecked


def test_find_exec_without_a_command_runs_nothing():
    assert parse("find . -exec \\;")[0].unchecked is None


def test_code_a_shell_run_by_find_gets_is_parsed_whatever_precedes_exec():
    # A word computed at run time before -exec says nothing about the command after it.
    command = 'find . -newer "$ref" -exec sudo sh -c \'rm -rf "$1"\' sh {} \\;'
    assert segments(command)[1:] == ['rm -rf "$1"']


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("flock /tmp/l --command 'rm x'", ["flock /tmp/l --command 'rm x'", "rm x"]),
        ("watch rm -rf x", ["watch rm -rf x", "rm -rf x"]),  # watch joins its words for sh -c
        ("flock /tmp/l -c", ["flock /tmp/l -c"]),  # no code: nothing more runs
        ("watch --exec rm x", ["watch --exec rm x"]),  # --exec: no shell in between
    ],
)
def test_code_a_wrapper_runs_is_split(command, expected):
    assert segments(command) == expected


def test_only_watch_without_exec_runs_a_string_as_code():
    assert parse("flock /tmp/l -c")[0].dynamic
    assert parse("watch --exec rm x")[0].dynamic is None


def test_an_output_option_without_a_value_writes_nothing():
    assert segments("curl https://x --output") == ["curl https://x --output"]


def test_an_output_file_named_at_run_time_is_never_literal():
    assert parse('curl https://x --output "$f"')[1].dynamic


@pytest.mark.parametrize(
    "command", ["/bin/sh <<< 'rm -rf /'", "bash --norc <<< 'rm -rf /'"]
)  # a long option never holds -c
def test_a_shell_reads_its_here_string_as_a_script(command):
    assert "rm -rf /" in segments(command)


def test_a_here_string_to_a_sourced_script_is_its_input_not_code():
    # `. FILE ARGS`: /dev/stdin as an argument is data; the code is FILE.
    assert "rm -rf /" not in segments(". ./env.sh /dev/stdin <<< 'rm -rf /'")


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("mapfile -C cb arr", "`mapfile -C`/`-x` runs a command given as text"),
        ("readarray -C cb arr", "`readarray -C`/`-x` runs a command given as text"),
        ("complete -C 'rm -rf ~' ls", "`complete -C`/`-x` runs a command given as text"),
        ("compgen -C 'rm -rf ~' x", "`compgen -C`/`-x` runs a command given as text"),
        ("bind -x '\"\\C-t\": rm -rf ~'", "`bind -C`/`-x` runs a command given as text"),
        ('typeset "$n"=1', "`typeset` assigns to a variable named at run time"),
        ("local $n", "`local` assigns to a variable named at run time"),
        ("export $n=1", "`export` assigns to a variable named at run time"),
        ("readonly $n", "`readonly` assigns to a variable named at run time"),
        ("readarray -t $arr", "`readarray` assigns to a variable named at run time"),
        ("read `echo name`", "`read` assigns to a variable named at run time"),
        ("declare -n ref=`echo x`", "`declare -n` refers to a variable named at run time"),
    ],
)
def test_builtins_that_may_change_what_a_name_runs_are_unchecked(command, why):
    assert parse(command)[0].unchecked == why


@pytest.mark.parametrize(
    "command",
    [
        "hash npm",  # remembers npm's path: no `-p`
        "hash --help",
        "make -C build",  # -C names a folder, not a callback
        "bind '\"\\e[A\": history-search-backward'",
        'export URL="$BASE/?q=1"',  # the name is URL, whatever the value holds
        'mapfile -n "$count" lines',  # a count, not a name
        'getopts ab opt "$@"',  # the words getopts reads, not names
    ],
)
def test_harmless_forms_stay_checked(command):
    assert parse(command)[0].unchecked is None


def test_an_arithmetic_test_on_a_word_is_never_covered_by_a_pattern():
    # `test 1 -eq a` evaluates `a` as arithmetic (a[$(cmd)] would run cmd).
    assert parse("test 1 -eq a")[0].dynamic


# -- real bugs the mutants showed (not fixed here) ---------------------------------


@pytest.mark.parametrize("string", ["rm -rf / #x", "#x", "rm '#x'"])
def test_an_env_split_string_with_a_comment_is_unchecked(string):
    # GNU env ends the string at a word starting with `#` (`env -S 'echo a #b'`
    # prints `a`) but keeps a quoted one: shlex's words cannot tell them apart.
    (segment,) = parse(f"env -S {shlex.quote(string)} rm y")
    assert segment.unchecked == "`env -S` string with a `#` comment"


def test_a_hash_inside_an_env_split_word_is_kept():
    assert parse("env -S 'echo a#b' c")[0].core == ("echo", "a#b", "c")


@pytest.mark.parametrize(
    "command", ["declare -$o r=$(cat f)", "declare +$o r=$(cat f)", "declare -`cat o` r=$(cat f)"]
)
def test_declare_with_an_option_computed_at_run_time_is_unchecked(command):
    # o=n makes it `declare -n`; +$o too: unquoted, o='x -n' splits into `+x -n`.
    assert "is computed at run time" in parse(command)[0].unchecked
