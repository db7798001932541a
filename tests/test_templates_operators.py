"""Shell and argv templates around operators, redirections, wrappers and options.

Table-driven: each row is a template and values, and what a person sees —
the exact script or argv, or the refusal. Written against the survivors of
the mutation run of templates.py (issue 12, docs/mutation.md).
"""

import subprocess

import pytest

from mdagent.declarations.placeholders import TemplateError, check_shell
from mdagent.tools.templates import OptionValueError, expand_argv, expand_shell, expand_url

P = {"p": {"type": "string"}, "q": {"type": "string"}, "files": {"type": "array"}}


def run_sh(script: str) -> str:
    ran = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10)
    return ran.stdout


# -- quoting: the exact script a value gives ------------------------------------------


@pytest.mark.parametrize(
    ("template", "value", "script", "printed"),
    [
        # shlex leaves a plain word bare; only a leading - or = is quoted on top
        ("printf %s {p}", "Xa", "printf %s Xa", "Xa"),
        ("printf %s {p}", "XX", "printf %s XX", "XX"),
        ("printf %s {p}", "-L", "printf %s '-L'", "-L"),
        ("printf %s {p}", "==", "printf %s '=='", "=="),
        ("printf %s {p}", "", "printf %s ''", ""),
        ("printf %s {p}", "a-", "printf %s a-", "a-"),
        # after `$name` a bare value gets an empty '' to end the name; a quoted
        # value ends it already and gets nothing more
        ("printf %s $x{p}", "ab", "printf %s $x''ab", "ab"),
        ("printf %s $x{p}", "a b", "printf %s $x'a b'", "a b"),
        ("printf %s $x{p}", "", "printf %s $x''", ""),
        # inside the author's "...", the value closes and reopens them: an
        # added '' there would be two literal apostrophes
        ('printf %s "$x{p}"', "a b", 'printf %s "$x"\'a b\'""', "a b"),
        ('printf %s "$x{p}"', "ab", 'printf %s "$x"ab""', "ab"),
        ("printf %s '$x{p}'", "a b", "printf %s '$x''a b'''", "$xa b"),
    ],
)
def test_the_script_a_value_gives_is_exact_and_prints_the_value(template, value, script, printed):
    assert expand_shell(template, {"p": value}, P) == script
    assert run_sh(script) == printed


def test_values_as_json_keep_non_ascii_text():
    params = {"m": {"type": "object"}}
    assert expand_shell("printf %s {m}", {"m": {"k": "é"}}, params) == 'printf %s \'{"k": "é"}\''
    assert expand_argv(["x", "m={m}"], {"m": ["é", 1]}, params) == ["x", "m=é 1"]
    assert expand_url("http://h/{m}", {"m": {"k": "é"}}, params) == (
        "http://h/%7B%22k%22%3A%20%22%C3%A9%22%7D"
    )


# -- which word is the program: assignments and wrappers before it ----------------------


@pytest.mark.parametrize(
    ("template", "refused"),
    [
        ("FOO=1 eval {p}", "in the arguments of `eval`"),
        ("FOO=1 BAR=2 eval {p}", "in the arguments of `eval`"),
        ("command eval {p}", "in the arguments of `eval`"),
        ("command -p eval {p}", "in the arguments of `eval`"),
        ("builtin -- eval {p}", "in the arguments of `eval`"),
        ("command -p -- read {p}", "in the arguments of `read`"),
        ("FOO=1 command -p sh -c {p}", "as the script of `sh -c`"),
        # after a wrapper an assignment is the program's name, not an assignment
        ("command FOO=1 eval {p}", None),
        # a word that is not literal ends the search: it is the program
        ("command $x eval {p}", None),
        ("command -p $x eval {p}", None),
        ("FOO=1 $x eval {p}", None),
        ("FOO=1 echo {p}", None),
        ("command -p echo {p}", None),
    ],
)
def test_the_program_is_found_after_assignments_and_wrappers(template, refused):
    if refused:
        with pytest.raises(TemplateError) as caught:
            check_shell(template)
        assert str(caught.value).startswith(f"placeholder {{p}} cannot be used {refused}")
        assert str(caught.value).endswith(f"in shell template {template!r}")
    else:
        check_shell(template)
        expand_shell(template, {"p": "x"}, P)


@pytest.mark.parametrize(
    ("template", "refused"),
    [
        # the value is an argument of the program after the assignments/wrapper
        ("FOO=1 grep {p} f", True),
        ("command -p grep {p} f", True),
        ("command grep -- {p} f", False),
        ("command -p grep -- {p} f", False),
        ("FOO=1 grep -- {p} f", False),
        # the value is the program itself
        ("FOO=1 {p} f", False),
        ("command -p {p} f", False),
        ("FOO={p} grep x", False),
    ],
)
def test_an_option_value_after_assignments_and_wrappers(template, refused):
    args = {"p": "-r"}
    if refused:
        with pytest.raises(OptionValueError, match="'p' starts with '-'"):
            expand_shell(template, args, P, allow_options=())
    else:
        script = expand_shell(template, args, P, allow_options=())
        assert "'-r'" in script


@pytest.mark.parametrize(
    ("template", "message"),
    [
        # where the scanner refuses before it looks at the word
        ("echo x # {p}", "placeholder {p} cannot be used in a comment"),
        ("echo \\{p}", "placeholder {p} cannot be used after a backslash"),
        ("echo ${{{p}}}", "placeholder {p} cannot be used inside ${...}"),
        ("echo $(({p}))", "placeholder {p} cannot be used inside arithmetic"),
        ("cat <<EOF\n{p}\nEOF", "placeholder {p} cannot be used after a here-document"),
        # where the word or the command decides
        ("a[{p}]=1", "placeholder {p} cannot be used in an array subscript"),
        ("PS1={p}", "placeholder {p} cannot be used in the value of PS1"),
        ("[[ 1 -eq {p} ]]", "placeholder {p} cannot be used as an operand of -eq"),
        ("eval {p}", "placeholder {p} cannot be used in the arguments of `eval`"),
        ("[[ {p} -eq 1 ]]", "placeholder {p} cannot be used as an operand of -eq"),
    ],
)
def test_a_refusal_names_the_placeholder_and_the_template(template, message):
    with pytest.raises(TemplateError) as caught:
        check_shell(template)
    assert str(caught.value).startswith(message)
    assert str(caught.value).endswith(f"in shell template {template!r}")


# -- operators, redirections and nesting: where a word starts -------------------------


@pytest.mark.parametrize(
    ("template", "outcome"),
    [
        # a file descriptor number before > is not a word of the command
        ("2>f eval {p}", "in the arguments of `eval`"),
        ("2>f {p} x", "ok"),
        ("2>f grep {p}", "option"),
        # two-character redirections take both characters; the target follows
        ("eval x >&f {p}", "in the arguments of `eval`"),
        ("echo x >X {p}", "option"),
        ("echo x >f {p}", "option"),
        ("echo x >>f {p}", "option"),
        ("echo x;>f {p}", "ok"),
        ("echo x>{p}", "ok"),
        ("cat < {p}", "ok"),
        ("cat <<< {p}", "ok"),
        ("cat <<<{p}", "ok"),
        ("cat <<<x {p}", "option"),
        ("echo x &> {p}", "ok"),
        ("echo x&>{p}", "ok"),
        ("echo x &>f {p}", "option"),
        ("echo x &>>f {p}", "option"),
        # inside [[ ]] the parentheses are the expression's; ]] still closes it
        ("[[ (a)]] && grep {p}", "option"),
        ("[[ a && b ]] && grep {p}", "option"),
        # an operator after a blank ends the command as one after a word does
        ("echo x | grep {p}", "option"),
        ("echo x ; grep {p}", "option"),
        ("echo x & grep {p}", "option"),
        # ( ... ) subshells and (( ... )) arithmetic nest and close
        ("grep $( (a) ) {p}", "option"),
        ("eval $( (a) ) {p}", "in the arguments of `eval`"),
        ("( grep {p} )", "option"),
        ("(());grep {p}", "option"),
        ("(( 1 ) {p} )", "inside arithmetic"),
        ("(( $'\\n' )) && grep {p}", "option"),
        ("(( 1 ) $'\\n' )); grep {p}", "option"),
        # a `--` before the program (a wrapper's) does not end the options of the program
        ("command -- grep {p} f", "option"),
        ("grep x -- {p} f", "ok"),
    ],
)
def test_where_operators_leave_a_value(template, outcome):
    args = {"p": "-r"}
    if outcome == "ok":
        assert "'-r'" in expand_shell(template, args, P, allow_options=())
    elif outcome == "option":
        assert "'-r'" in expand_shell(template, args, P)
        with pytest.raises(OptionValueError):
            expand_shell(template, args, P, allow_options=())
    else:
        with pytest.raises(TemplateError) as caught:
            check_shell(template)
        assert f"placeholder {{p}} cannot be used {outcome}" in str(caught.value)


@pytest.mark.parametrize(
    ("template", "value", "script", "printed"),
    [
        # a quote right after `<` inside [[ ]] is read as a quote
        ("[[ a <'{p}' ]] && printf %s y", "a b", "[[ a <'''a b''' ]] && printf %s y", "y"),
        ('[[ b > "{p}" ]] && printf %s y', "a b", '[[ b > ""\'a b\'"" ]] && printf %s y', "y"),
    ],
)
def test_values_inside_test_expressions_stay_quoted(template, value, script, printed):
    assert expand_shell(template, {"p": value}, P) == script
    ran = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=10)
    assert ran.stdout == printed


@pytest.mark.parametrize(
    ("template", "args", "refused"),
    [
        # a word opening with an expansion: the value after it may start the word
        ("grep {q}$x{p} f", {"q": "", "p": "-r"}, True),
        ("grep $x{q}{p} f", {"q": "zz", "p": "-r"}, True),
        ("grep x{q}$x{p} f", {"q": "", "p": "-r"}, False),
        # values only before it: it starts the word when they are empty
        ("ls {q}{p}", {"q": "", "p": "-la"}, True),
        ("ls {q}{p}", {"q": "x", "p": "-la"}, False),
        # after `--`, array items are arguments; before it, each may be an option
        ("ls -- {files}", {"files": ["a", "-l"]}, False),
        ("ls {files}", {"files": ["a", "-l"]}, True),
        ('ls "{files}"', {"files": ["a", "-l"]}, False),
        ('ls "{files}"', {"files": ["-l", "a"]}, True),
    ],
)
def test_option_positions_of_values_next_to_expansions_and_arrays(template, args, refused):
    expand_shell(template, args, P)
    if refused:
        with pytest.raises(OptionValueError):
            expand_shell(template, args, P, allow_options=())
    else:
        expand_shell(template, args, P, allow_options=())


# -- process substitution: <(...) and >(...) are commands of their own ----------------


@pytest.mark.parametrize(
    ("template", "refusal"),
    [
        # the command inside <( ) is read as a command: eval's arguments are code
        ("cat <(eval {p})", "in the arguments of `eval`"),
        ("cat >(eval x {p})", "in the arguments of `eval`"),
        # text glued before <( ) makes one word that is not `eval` (bash runs `eval/dev/fd/63`)
        ("eval<(true) {p}", None),
        # a function's body is commands, whatever letter its name has (`X(` is no `<(`)
        ("f() {{ eval {p}; }}", "in the arguments of `eval`"),
        ("X(){{ eval {p}; }}; X", "in the arguments of `eval`"),
    ],
)
def test_process_substitution_and_function_bodies_hold_commands(template, refusal):
    if refusal is None:
        check_shell(template)
        return
    with pytest.raises(TemplateError) as caught:
        check_shell(template)
    assert f"placeholder {{p}} cannot be used {refusal}" in str(caught.value)


def test_process_substitution_inside_a_test_expression_is_a_command_too():
    # bash runs <( ) inside [[ ]]: an array there is a command and its options
    template = "[[ -n <({files}) ]]"
    assert expand_shell(template, {"files": ["grep", "-r"]}, P) == "[[ -n <(grep '-r') ]]"
    with pytest.raises(OptionValueError):
        expand_shell(template, {"files": ["grep", "-r"]}, P, allow_options=())
