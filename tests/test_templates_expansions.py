"""How the shell template scanner reads `$...`, backticks and the words around them.

Table-driven: each row is a shell template and what a user gets from it, through
the public functions (`check_shell`, `expand_shell`): the exact shell text with a
hostile value quoted into it, the exact refusal, or whether a model's value that
starts with `-` is refused where it would start an option word.
"""

import shlex

import pytest

from mdagent.declarations.placeholders import TemplateError, check_shell
from mdagent.tools.templates import OptionValueError, expand_shell

PARAMS = {"v": {"type": "string"}, "path": {"type": "string"}, "a": {"type": "string"}}
HOSTILE = 'a b\'$(touch pwned)`id`"$HOME";x'
QUOTED = shlex.quote(HOSTILE)


def _refusal(template: str) -> str:
    with pytest.raises(TemplateError) as caught:
        check_shell(template)
    with pytest.raises(TemplateError) as again:
        expand_shell(template, {"v": HOSTILE}, PARAMS)
    assert str(again.value) == str(caught.value)
    return str(caught.value)


# -- refusals: the exact line a template author reads ------------------------------------

EVAL = "in the arguments of `eval` (it runs its arguments as code)"
ARITH = "inside arithmetic ((...))"
EQ = "as an operand of -eq in [[ ... ]] (bash evaluates it as arithmetic)"


@pytest.mark.parametrize(
    ("template", "where"),
    [
        ("echo \\{v}", "after a backslash"),
        ("cat <<EOF\n{v}\nEOF", "after a here-document (<<)"),
        ("echo hi # {v}", "in a comment (a newline in the value would end it)"),
        ("echo ${{x:-{v}}}", "inside ${...}"),
        ("echo $'{v}'", "inside $'...'"),
        ("echo `echo {v}`", "inside backticks (use $(...) instead)"),
        ("echo $(( {v} + 1 ))", ARITH),
        ("echo $((1){v})", ARITH),  # between the two closing parentheses: still arithmetic
        ("echo $[{v} + 1]", ARITH),
        ("a[{v}]=1", "in an array subscript (bash evaluates it as arithmetic)"),
        ("printf -v {v} %s x", "in `printf -v` (it takes a variable name)"),
        ("[[ {v} -eq 1 ]]", EQ),  # seen when -eq arrives after the value
        ("[[ 1 -eq {v} ]]", EQ),
        ("[ -v {v} ]", "as the operand of -v (a variable name; its subscript is arithmetic)"),
        ("test -R {v}", "as the operand of -R (a variable name; its subscript is arithmetic)"),
        # A new command after `;`, `&&` or `]]` starts over: its program is read again.
        ("echo a; eval {v}", EVAL),
        ("[[ -f x ]] && eval {v}", EVAL),
        ("echo $(eval {v})", EVAL),
        ('echo "$(eval {v})"', EVAL),
        # A quoted name is no assignment: declare reads the whole word as its argument.
        ('declare "x"={v}', "in `declare` other than after a literal `name=`"),
        ("declare -i n={v}", "in `declare -i` (it may evaluate values or names)"),
        ("export +x n={v}", "in `export +x` (it may evaluate values or names)"),
    ],
)
def test_refusals_name_the_placeholder_the_place_and_the_template(template, where):
    assert _refusal(template) == (
        f"placeholder {{v}} cannot be used {where} in shell template {template!r}"
    )


def test_a_placeholder_right_after_a_dollar_is_refused():
    message = _refusal("echo ${v}")
    assert message.startswith("placeholder {v} cannot be used right after `$` ")
    assert message.endswith(" in shell template 'echo ${v}'")


# -- accepted: the exact script, the value one literal word ------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "{v} x",  # the program itself, first thing in the template
        "echo {v}$1{v}",  # first of the `$1` rows: a text part that is only `$1`
        "echo $(date) {v}",
        "echo `date` {v}",
        'echo `"date"` {v}',
        "echo `printf $'\\t'` {v}",
        "echo $((1+2)) {v}",
        "echo $((`echo 1` + 1)) {v}",
        "echo $(( $'\\61' + 1 )) {v}",
        "echo $[1+2] {v}",
        "echo $[`echo 1`+1] {v}",
        "echo $[ $'\\61' + 1 ] {v}",
        "echo ${{HOME}} {v}",
        "echo ${{x:-$'\\t'}} {v}",
        "echo $'\\'quoted\\'' {v}",
        "printf $'a\\tb' {v}",
        'grep -e "$1" {v}',
        'echo "cost: 5$" {v}',
        "echo $1 {v}; echo $? {v}; echo $$ {v}",
        "[[ -f {v} ]] && echo {v}",
        "grep -v {v} f",  # -v is an operand test only for test/[
        "command -p declare y={v}",
        "declare X=1 Y={v}",
        "export NAME={v}",
        "echo $(( (1) + $'\\61' )) {v}",
        "x=`echo $'\\t'`; echo {v}",
        "echo $((1)$'\\t') {v}",  # odd, but balanced: an answer, never a traceback
    ],
)
def test_accepted_templates_quote_the_value_into_the_script(template):
    check_shell(template)
    expected = template.replace("{v}", QUOTED).replace("{{", "{").replace("}}", "}")
    assert expand_shell(template, {"v": HOSTILE}, PARAMS) == expected


# -- a model's value that starts with `-` ----------------------------------------------------


@pytest.mark.parametrize(
    ("template", "refused"),
    [
        # Text joined to an expansion is not a literal `--`: options are not over.
        ("grep `x`-- {path} f", True),
        ("grep $((0))-- {path} f", True),
        ("grep $[0]-- {path} f", True),
        ("grep $(x)-- {path} f", True),
        ("grep ${{x}}-- {path} f", True),
        ("grep $'x'-- {path} f", True),
        ("grep -- {path} f", False),
        # An expansion that may be empty opens the word: the value may start it.
        ("grep $1{path} f", True),
        ("grep $@{path} f", True),
        ("grep $x{path} f", True),
        ("grep $_x{path} f", True),
        ('grep "$x"{path} f', True),
        ("grep {a}$1{path} f", True),  # values then an expansion: checked always
        ("grep x{path} f", False),
        # A redirection takes one word; the next is an argument again.
        ("grep x < f {path}", True),
        ("grep x > {path}", False),
        # `[[ ... ]]` ends with its command.
        ("[[ -n x ]]; grep {path} f", True),
        ("echo a; grep {path} f", True),
        ("[[ {path} == -* ]]", False),
        ("{path} x", False),
    ],
)
def test_option_values_where_expansions_and_redirections_are_near(template, refused):
    args = {"path": "-rf", "a": "x"}
    if refused:
        with pytest.raises(OptionValueError, match="'path'"):
            expand_shell(template, args, PARAMS, allow_options=())
    expected = (
        template.replace("{path}", "'-rf'")
        .replace("{a}", "x")
        .replace("{{", "{")
        .replace("}}", "}")
    )
    # a person's values are taken as meant; `-rf` is quoted even so: `[[` reads bare -x
    assert expand_shell(template, args, PARAMS) == expected
    assert expand_shell(template, args, PARAMS, allow_options={"path"}) == expected
    if not refused:
        assert expand_shell(template, args, PARAMS, allow_options=()) == expected
