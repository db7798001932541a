"""The shell template scanner (mdagent.safety.shell.slots): positions that are code.

A placeholder is refused where the program runs it as code however it is
quoted: a shell's ``-c`` script, fish's ``-C``/``--command``, ``su -c``, and
the variables the shell reads again. These rows are the spellings that the
scanner once read wrong: an option's value taken for the script (``sh -eo
pipefail -c``), a value glued to its option (``fish --command={v}``), an
assignment that appends or names element 0 (``PS4+=``, ``PS4[0]=``). Each is
checked through both template kinds, and the premise (bash really runs that
word) through a real bash.
"""

from __future__ import annotations

import subprocess

import pytest

from mdagent.declarations.placeholders import TemplateError, check_argv, check_shell
from mdagent.safety.shell.slots import code_position, glued_option
from mdagent.tools.templates import expand_shell

# (shell template, what the refusal names)
SCRIPT_POSITIONS = [
    ("sh -eo pipefail -c {v}", "script of `sh -c`"),
    ("bash -co pipefail {v}", "script of `bash -c`"),
    ("bash -eO extglob -c {v}", "script of `bash -c`"),
    ("bash +O extglob -c {v}", "script of `bash -c`"),
    ("bash --rcfile /dev/null -c {v}", "script of `bash -c`"),
    ("bash --init-file /dev/null -ec {v}", "script of `bash -c`"),
    ("zsh -xo pipefail -c {v}", "script of `zsh -c`"),
    ("fish -d 3 -c {v}", "script of `fish -c`"),
    ("fish -C {v}", "script of `fish -c`"),
    ("fish --command {v}", "script of `fish -c`"),
    ("fish --init-command {v}", "script of `fish -c`"),
    ("fish -c{v}", "script of `fish -c`"),
    ("fish --command={v}", "script of `fish -c`"),
    ("fish --init-command=x{v}", "script of `fish -c`"),
    ("fish {prefix}-c{v}", "script of `fish -c`"),  # an empty prefix
    ("$SHELL -eo pipefail -c {v}", "script of `a program named at run time -c`"),
    ("$SHELL --command {v}", "script of `a program named at run time -c`"),
    ("su -lc {v}", "command of `su -c`"),
    ("su - root -c{v}", "command of `su -c`"),
    ("su --command={v}", "command of `su -c`"),
    ("runuser -u nobody --session-command {v}", "command of `runuser -c`"),
]


@pytest.mark.parametrize(("template", "where"), SCRIPT_POSITIONS)
def test_the_code_of_a_shell_or_su_is_refused_a_placeholder_however_spelled(template, where):
    with pytest.raises(TemplateError, match=f"as the {where}"):
        check_shell(template)
    # The same words as a run: template (no shell, but the program runs the word as code).
    argv = template.replace("$SHELL", "{prog}").split()
    with pytest.raises(TemplateError, match="run as code"):
        check_argv(argv)


@pytest.mark.parametrize(
    "options",
    [
        ["-eo", "pipefail", "-c"],
        ["-co", "pipefail"],
        ["-eO", "extglob", "-c"],
        ["--rcfile", "/dev/null", "-c"],
        ["--init-file", "/dev/null", "-ec"],
    ],
)
def test_bash_runs_the_word_after_those_options_as_code(options):
    # The premise of the rows above: the word the scanner refuses is bash's script.
    ran = subprocess.run(["bash", *options, "echo RAN"], capture_output=True, text=True, timeout=10)
    assert ran.stdout == "RAN\n"


@pytest.mark.parametrize(
    "template",
    [
        "sh -o pipefail -c 'echo \"$1\"' sh {v}",  # the value as an argument of the script
        "bash -eo pipefail -c 'echo \"$1\"' sh {v}",
        "bash -fc 'echo \"$1\"' sh {v}",
        "bash -x -c 'echo \"$1\"' {v}",  # $0
        "fish -c 'echo $argv' {v}",
        "bash -o {v} -c true",  # an option's name, not code
        "bash --rcfile {v} -i",  # a file, judged by the policy when it runs
        "grep -e{v} f",  # not a shell: an option's value is data
        "echo --command={v}",
        "su - {v} -c id",  # the user's name
    ],
)
def test_values_beside_a_shells_code_stay_accepted(template):
    check_shell(template)


@pytest.mark.parametrize(
    ("template", "variable"),
    [
        ("PS4+={v}; set -x; true", "PS4"),
        ("export PS4+={v}; set -x", "PS4"),
        ("PS4[0]={v}; set -x", "PS4"),
        ("declare PS1+={v}", "PS1"),
        ("PROMPT_COMMAND+={v} bash -i", "PROMPT_COMMAND"),
        ("BASH_ENV+={v} bash -c :", "BASH_ENV"),
        ("ENV[0]={v} sh -i", "ENV"),
    ],
)
def test_appending_to_a_variable_the_shell_reads_again_is_refused(template, variable):
    with pytest.raises(TemplateError, match=f"in the value of {variable} "):
        check_shell(template)


@pytest.mark.parametrize("assignment", ["PS4+=", "PS4[0]="])
def test_bash_expands_an_appended_ps4_again(assignment):
    # The premise: the quoted value still runs when bash traces a command.
    script = f"PS4=''; {assignment}'$(echo RAN >&2)'; set -x; true"
    ran = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=10)
    assert "RAN" in ran.stderr


def test_variables_that_only_look_alike_stay_accepted():
    for template in ("MYPS4={v} cmd", "PS5={v} cmd", "ENVIRONMENT+={v} cmd"):
        assert expand_shell(template, {"v": "$(id)"}, {"v": {}}).endswith("='$(id)' cmd")


def test_a_glued_value_is_the_value_of_the_option_it_follows():
    assert glued_option("--command=") == "--command"
    assert glued_option("--command=x") == "--command"
    assert glued_option("-c") == "-c"
    assert glued_option("-lc") == "-lc"
    assert [glued_option(t) for t in ("-", "", "x", "a-c")] == [None] * 4
    assert code_position(["fish", "--command"]) == "as the script of `fish -c` (run as code)"
    assert code_position(["fish", "--command=echo"]) is None  # its code is that word


def test_a_program_named_at_run_time_skips_the_values_of_every_shells_options():
    # `$prog -d x -c {v}`: fish's -d takes a value, so the -c after it may be read:
    # a program named at run time knows every shell's value letters (fail closed).
    assert code_position([None, "-d", "x", "-c"]) is not None
    # bash's -p takes none: `x` is its script file, and the -c after it is an argument.
    assert code_position(["bash", "-p", "x", "-c"]) is None


def test_an_unclosed_test_expression_is_named():
    with pytest.raises(TemplateError, match=r"unclosed \[\["):
        check_shell("[[ -n {x}")


@pytest.mark.parametrize(
    "template",
    ["sh $x -c {v}", "bash $opt {v}", 'bash "$opt" {v}', "sh -e $x -c {v}", "zsh ${{X}} {v}"],
)
def test_a_shell_option_known_only_at_run_time_may_be_its_c(template):
    # `$x` may be `-c` (or empty before one): the slot after it may be the script.
    with pytest.raises(TemplateError, match="as the script of"):
        check_shell(template)


@pytest.mark.parametrize(
    "template", ['sh -c "echo $1" sh {v}', 'sh -c "$x" {v}', "bash ./x.sh $a {v}", "{p} $x {v}"]
)
def test_values_after_a_shells_code_or_script_stay_accepted(template):
    check_shell(template)


def test_an_empty_word_before_c_runs_the_value_as_code():
    # What the refusal is for: with x empty, bash sees `-c VALUE`.
    ran = subprocess.run(
        ["sh", "-c", 'x=; sh $x -c "$1"', "sh", "echo ran"],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert ran.stdout == "ran\n"
