import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdagent.declarations.placeholders import (
    TemplateError,
    as_text,
    check_argv,
    check_shell,
    placeholders,
)
from mdagent.tools.templates import (
    OptionValueError,
    expand_argv,
    expand_shell,
    expand_url,
    expand_value,
)

PARAMS = {
    "path": {"type": "string"},
    "files": {"type": "array", "items": {"type": "string"}},
    "limit": {"type": "integer", "default": 10},
    "verbose": {"type": "boolean"},
    "opt": {"type": "string"},
    "meta": {"type": "object"},
    "ratio": {"type": "number"},
}


def sh_words(script: str) -> list[str]:
    """What sh makes of ``script``: one line per argument of printf."""
    out = subprocess.run(
        ["sh", "-c", "printf '[%s]\\n' " + script], capture_output=True, text=True, check=True
    )
    return [line[1:-1] for line in out.stdout.split("\n") if line]


# -- placeholders / parsing ------------------------------------------------------


def test_placeholders_in_strings_lists_and_mappings():
    assert placeholders("wc {path} -l {limit}") == {"path", "limit"}
    assert placeholders(["wc", "{path}", "--n={limit}"]) == {"path", "limit"}
    template = {"a": "{path}", "b": ["{files}", {"c": "x {opt}"}], "{notakey}": 3, "n": None}
    assert placeholders(template) == {"path", "files", "opt"}
    assert placeholders(42) == set()
    assert placeholders(None) == set()


def test_doubled_braces_are_literal_and_not_placeholders():
    assert placeholders("awk '{{print $1}}' {path}") == {"path"}
    assert expand_argv(["{{", "{{{path}}}", "}}"], {"path": "p"}, PARAMS) == ["{", "{p}", "}"]


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("wc {path", "unclosed '{' at column 4"),
        ("wc {}", "empty placeholder"),
        ("wc path}", "stray '}' at column 8"),
        ("a } b", "stray '}'"),
        ("awk '{print $1}'", "invalid placeholder '{print $1}'"),
        ("{a{b}", "invalid placeholder"),
        ("{1abc}", "invalid placeholder"),
    ],
)
def test_malformed_templates_raise_value_error(template, message):
    with pytest.raises(ValueError, match=message.replace("$", r"\$").replace("{", r"\{")):
        placeholders(template)
    with pytest.raises(ValueError):
        placeholders(["ok", {"k": template}])


# -- argv ----------------------------------------------------------------------------


def test_exact_placeholder_is_one_element_whatever_it_holds():
    value = "a b; rm -rf / && echo $(id) `x` *"
    assert expand_argv(["echo", "{path}"], {"path": value}, PARAMS) == ["echo", value]


def test_array_expands_to_several_elements_and_empty_array_to_none():
    args = {"files": ["a b", "-c", ""]}
    assert expand_argv(["cat", "{files}", "end"], args, PARAMS) == ["cat", "a b", "-c", "", "end"]
    assert expand_argv(["cat", "{files}"], {"files": []}, PARAMS) == ["cat"]


def test_absent_optional_removes_its_element_default_fills_in():
    assert expand_argv(["ls", "{opt}", "-n", "{limit}"], {}, PARAMS) == ["ls", "-n", "10"]
    assert expand_argv(["ls", "{limit}"], {"limit": 3}, PARAMS) == ["ls", "3"]


def test_null_argument_counts_as_absent():
    assert expand_argv(["ls", "{opt}", "{limit}"], {"opt": None, "limit": None}, PARAMS) == [
        "ls",
        "10",
    ]


def test_embedded_placeholder_is_substituted_and_dropped_whole_when_absent():
    template = ["grep", "--max-count={limit}", "--label={opt}", "x{path}y"]
    assert expand_argv(template, {"path": "P"}, PARAMS) == ["grep", "--max-count=10", "xPy"]


def test_value_types_as_text():
    args = {"verbose": True, "ratio": 0.5, "meta": {"k": "é"}, "files": ["a", "b"], "path": ""}
    template = ["{verbose}", "v={verbose}", "{ratio}", "m={meta}", "f={files}", "{path}"]
    assert expand_argv(template, args, PARAMS) == [
        "true",
        "v=true",
        "0.5",
        'm={"k": "é"}',
        "f=a b",
        "",
    ]
    assert expand_argv(["{verbose}"], {"verbose": False}, PARAMS) == ["false"]
    assert expand_argv(["head", "-n", 5], {}, PARAMS) == ["head", "-n", "5"]
    assert as_text([1, True, "x"]) == "1 true x"


def test_missing_required_and_unknown_placeholder_are_clear_errors():
    with pytest.raises(TemplateError, match="missing required argument: path"):
        expand_argv(["{path}"], {}, PARAMS, required=["path"])
    with pytest.raises(TemplateError, match=r"\{nope\} names no parameter"):
        expand_argv(["{nope}"], {}, PARAMS)


# -- shell ---------------------------------------------------------------------------


def test_shell_values_are_quoted_into_single_words():
    nasty = "x'; rm -rf ~ #"
    script = expand_shell(
        "{path} {files} {limit}", {"path": nasty, "files": ["a b", "$(id)"]}, PARAMS
    )
    assert sh_words(script) == [nasty, "a b", "$(id)", "10"]


def test_shell_absent_optional_is_nothing_and_empty_string_is_an_empty_word():
    assert expand_shell("ls {opt} -l", {}, PARAMS) == "ls  -l"
    assert sh_words(expand_shell("{path} end", {"path": ""}, PARAMS)) == ["", "end"]
    assert sh_words(expand_shell("{files} end", {"files": []}, PARAMS)) == ["end"]


def test_shell_values_inside_the_authors_quotes_stay_literal():
    nasty = 'it\'s $(id) `id` "q" \\ $HOME'
    script = expand_shell(
        "'single {path} x' \"double {path} y\" pre{path}post", {"path": nasty}, PARAMS
    )
    assert sh_words(script) == [f"single {nasty} x", f"double {nasty} y", f"pre{nasty}post"]
    arrays = expand_shell("'{files}'", {"files": ["a", "b c"]}, PARAMS)
    assert sh_words(arrays) == ["a b c"]


def test_shell_values_inside_command_substitution_are_quoted_there():
    script = expand_shell('"$(printf %s {path})" $(printf %s {path})', {"path": "a;b`x`"}, PARAMS)
    assert sh_words(script) == ["a;b`x`", "a;b`x`"]


def test_shell_comment_apostrophe_does_not_confuse_quoting():
    script = expand_shell("{path} # it's a comment\n", {"path": "a'b"}, PARAMS)
    assert sh_words(script) == ["a'b"]


def test_shell_literal_braces_and_shell_variables_without_placeholders():
    check_shell("awk '{{print $1}}' ${{HOME}} {path}")
    assert expand_shell("echo {{}} {path}", {"path": "x"}, PARAMS) == "echo {} x"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("echo \\{path}", "after a backslash"),
        ("cat <<EOF\n{path}\nEOF", "here-document"),
        ("echo ${{X:-{path}}}", r"inside \$\{...\}"),
        ("echo $'{path}'", r"inside \$'...'"),
        ("echo '{path}", "unbalanced quotes"),
        ('echo "$(cat {path}"', "unbalanced"),
    ],
)
def test_shell_contexts_that_cannot_be_quoted_safely_are_refused(template, message):
    with pytest.raises(ValueError, match=message):
        check_shell(template)
    with pytest.raises(TemplateError):
        expand_shell(template, {"path": "x"}, PARAMS)


def test_shell_here_document_without_placeholders_after_it_is_fine():
    check_shell("cat {path} <<EOF\nit's\nEOF")


# -- url -----------------------------------------------------------------------------


def test_url_values_are_percent_encoded_with_nothing_safe():
    url = expand_url(
        "https://h.test/files/{path}?q={opt}&n={limit}", {"path": "a/b c", "opt": "x&y=z#é"}, PARAMS
    )
    assert url == "https://h.test/files/a%2Fb%20c?q=x%26y%3Dz%23%C3%A9&n=10"


def test_url_arrays_join_with_commas_and_absent_is_empty():
    url = expand_url("https://h.test/?ids={files}&o={opt}", {"files": ["1", "a,b"]}, PARAMS)
    assert url == "https://h.test/?ids=1,a%2Cb&o="


# -- values (json, headers, with) -----------------------------------------------------


def test_exact_placeholder_keeps_the_type_and_absent_removes_the_key():
    template = {
        "n": "{limit}",
        "files": "{files}",
        "flag": "{verbose}",
        "opt": "{opt}",
        "label": "limit={limit} {opt}!",
        "nested": {"list": ["{opt}", "{path}", 1, None], "k": True},
        "literal": "{{x}}",
    }
    args = {"files": ["a"], "verbose": False, "path": "p"}
    assert expand_value(template, args, PARAMS) == {
        "n": 10,
        "files": ["a"],
        "flag": False,
        "label": "limit=10 !",
        "nested": {"list": ["p", 1, None], "k": True},
        "literal": "{x}",
    }


def test_whole_value_template_absent_is_none():
    assert expand_value("{opt}", {}, PARAMS) is None
    assert expand_value(None, {}, PARAMS) is None
    assert expand_value("{meta}", {"meta": {"a": [1]}}, PARAMS) == {"a": [1]}


# -- positions the shell reads again (issue 9, item 8) --------------------------------


@pytest.mark.parametrize(
    ("template", "where"),
    [
        # `$(( '$(touch x)1' + 1 ))` runs touch: arithmetic re-reads its text,
        # and a backtick in a value ends a `...` early.
        ("echo $(( {v} + 1 ))", "arithmetic"),
        ("(( {v} > 1 )) && echo big", "arithmetic"),
        ("echo `echo {v}`", "backticks"),
        ('echo "`printf %s {v}`"', "backticks"),
        ("echo hi # {v}", "in a comment"),
        ("echo ${v}", r"right after `\$`"),
        ('echo "${v}"', r"right after `\$`"),
        ("echo ${{{v}}}", r"inside \$\{...\}"),
        ("echo $[{v}]", "arithmetic"),
        ("[[ {v} -eq 1 ]]", "operand of -eq"),
        ("[[ 1 -lt {v} ]] && echo small", "operand of -lt"),
        ("if [[ -f x && {v} -ge 2 ]]; then :; fi", "operand of -ge"),
        ("[[ -v {v} ]]", "operand of -v"),
        ("test -v {v}", "operand of -v"),
        ("let n={v}", "`let`"),
        ("a[{v}]=1", "array subscript"),
        ("a=([{v}]=1)", "array subscript"),
        ("cat <<{v}\nx\n", "here-document"),
        ("eval {v}", "`eval`"),
        ("eval 'echo {v}'", "`eval`"),
        ("command eval {v}", "`eval`"),
        ("trap {v} EXIT", "`trap`"),
        ("source {v}", "`source`"),
        (". {v}", "`.`"),
        ("read {v}", "`read`"),
        ("unset {v}", "`unset`"),
        ("printf -v {v} %s x", "printf -v"),
        ("declare {v}", "`declare`"),
        ("declare -i n={v}", "declare -i"),
        ("local -a a={v}", "local -a"),
        ("PS4={v}; set -x", "PS4"),
        ("env BASH_ENV={v} bash -c :", "BASH_ENV"),
        ('sh -c "{v}"', "script of `sh -c`"),
        ("bash -ec 'echo {v}'", "script of `bash -c`"),
        ("find . -exec sh -c {v} \\;", "script of `sh -c`"),
        ("su -c {v}", "`su -c`"),
        ("ssh -p 22 host cat {v}", "remote command of `ssh`"),
    ],
)
def test_shell_positions_read_again_are_refused(template, where):
    with pytest.raises(TemplateError, match=where):
        check_shell(template)


@pytest.mark.parametrize(
    "template",
    [
        "echo {v} $((1 + 2))",  # arithmetic and substitution away from a placeholder
        "n=$(( (1 + 2) * 3 )); echo $(printf %s {v}) $n",
        "[[ -f {v} ]] && [[ {v} == x* ]]",
        "[ {v} -eq 1 ]",  # test/[ read -eq operands as numbers, not arithmetic
        "export NAME={v}; local x={v}; declare y={v}",
        "cat <<< {v}",
        "echo $((1 << 2)) {v}",
        "sh -c 'echo \"$1\"' sh {v}",
        "ssh {v} uptime",
        "echo $$ {v}; echo $? {v}",
        "echo ${{HOME}} $${{x}} {v}",
        "case {v} in a) echo {v};; esac",
        "echo a#{v} # a comment's apostrophe\necho {v}",
        "diff <(cat {v}) f",
        "f() {{ echo {v}; }}; f",
        "read -r line < {v}; mapfile -t all < {v}",
    ],
)
def test_shell_positions_that_quote_safely_stay_accepted(template):
    check_shell(template)


@pytest.mark.parametrize(
    ("template", "where"),
    [
        (["sh", "-c", "echo {v}"], "script of `sh -c`"),
        (["env", "bash", "-lc", "{v}"], "script of `bash -c`"),
        (["ssh", "host", "ls {v}"], "remote command"),
    ],
)
def test_run_templates_that_paste_a_value_into_code_are_refused(template, where):
    with pytest.raises(TemplateError, match=where):
        check_argv(template)
    check_argv(["sh", "-c", 'echo "$1"', "sh", "{v}"])
    check_argv(["ssh", "{v}", "uptime"])


# Every accepted position, each printing what it received between <i: and >.
# (template segment, the text it prints for value v and array vs, bash only)
PROPERTY_SEGMENTS = [
    ("printf '%s' {v}", lambda v, vs: v, False),
    ("printf '%s' pre{v}post", lambda v, vs: f"pre{v}post", False),
    ("printf '%s' 'a {v} b'", lambda v, vs: f"a {v} b", False),
    ("printf '%s' \"a {v} b\"", lambda v, vs: f"a {v} b", False),
    ("printf '%s' \"$(printf '%s.' {v})\"", lambda v, vs: f"{v}.", False),
    ("printf '%s' $(printf '%s' {v} | wc -c)", lambda v, vs: str(len(v.encode())), False),
    ("x={v}; printf '%s' \"$x\"", lambda v, vs: v, False),
    ("export X={v}; printf '%s' \"$X\"", lambda v, vs: v, False),
    ("f() {{ local y={v}; printf '%s' \"$y\"; }}; f", lambda v, vs: v, False),
    ("set -- {v}; printf '%s' \"$1\"", lambda v, vs: v, False),
    ('Y={v} sh -c \'printf "%s" "$Y"\'', lambda v, vs: v, False),
    ('sh -c \'printf "%s" "$1"\' sh {v}', lambda v, vs: v, False),
    ("[ {v} = {v} ] && printf ok", lambda v, vs: "ok", False),
    ("case {v} in *) printf '%s' {v};; esac", lambda v, vs: v, False),
    ("for i in {v}; do printf '%s' \"$i\"; done", lambda v, vs: v, False),
    ("(printf '%s' {v})", lambda v, vs: v, False),
    ("{{ printf '%s' {v}; }}", lambda v, vs: v, False),
    ("if true; then printf '%s' {v}; fi", lambda v, vs: v, False),
    ("printf '%s' {v} > out.txt; cat out.txt; rm out.txt", lambda v, vs: v, False),
    ("printf '[%s]' {vs}", lambda v, vs: "".join(f"[{x}]" for x in vs), False),
    ("printf '[%s]' \"{vs}\"", lambda v, vs: f"[{' '.join(vs)}]", False),
    ("printf '%s' -- {v}", lambda v, vs: f"--{v}", False),
    ("[[ {v} == {v} ]] && printf ok", lambda v, vs: "ok", True),
    ("[[ -n {v} || -z {v} ]] && printf ok", lambda v, vs: "ok", True),
    ("declare z={v}; printf '%s' \"$z\"", lambda v, vs: v, True),
    ("printf '%s' \"$(cat <<< {v})\"", lambda v, vs: v.rstrip("\n"), True),
    ("cat <(printf '%s' {v})", lambda v, vs: v, True),
]

HOSTILE = [
    "$(touch PWNED)",
    "`touch PWNED`",
    "'; touch PWNED; '",
    '"; touch PWNED; "',
    "\\",
    "\\'",
    "a\nb\ntouch PWNED",
    "x; touch PWNED",
    "a[$(touch PWNED)]",
    "-rf",
    "--",
    "*",
    "~",
    "$HOME ${HOME} $((1+1))",
    "}}{{x}}",
    "é ü 漢字 🙂",
    "",
    " ",
    "!",
    "(",
    "#",
]

VALUES = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12),
    st.text(st.sampled_from(list("$`'\"\\;&|<>(){}[]#*?~!-= \n\tx")), max_size=12),
)
SHELLS = [s for s in ("sh", "bash") if shutil.which(s)]
PROPERTY_PARAMS = {"v": {"type": "string"}, "vs": {"type": "array", "items": {"type": "string"}}}


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(value=VALUES, values=st.lists(VALUES, min_size=1, max_size=3))
def test_hostile_values_arrive_literally_in_every_accepted_position(tmp_path, value, values):
    for shell in SHELLS:
        segments = [
            (i, seg, want)
            for i, (seg, want, bash) in enumerate(PROPERTY_SEGMENTS)
            if shell == "bash" or not bash
        ]
        template = "\n".join(f"printf '<{i}:'; {seg}; printf '>'" for i, seg, _ in segments)
        check_shell(template)
        script = expand_shell(template, {"v": value, "vs": values}, PROPERTY_PARAMS)
        work = tmp_path / shell
        work.mkdir(exist_ok=True)
        done = subprocess.run(
            [shell, "-c", "--", script], cwd=work, capture_output=True, timeout=20
        )
        got = done.stdout.decode()
        want = "".join(f"<{i}:{expect(value, values)}>" for i, _, expect in segments)
        assert got == want, (shell, value, values, done.stderr.decode())
        assert list(work.iterdir()) == [], (shell, value, list(work.iterdir()))


# -- option injection (issue 9, item 9) ------------------------------------------------


def test_argv_option_values_are_refused_unless_allowed_or_after_dashes():
    args = {"path": "-rf", "files": ["ok", "--evil"]}
    assert expand_argv(["rm", "{path}"], args, PARAMS) == ["rm", "-rf"]  # a person's
    with pytest.raises(OptionValueError, match="'path' starts with '-'") as caught:
        expand_argv(["rm", "{path}"], args, PARAMS, allow_options=())
    assert caught.value.name == "path" and "option: true" in str(caught.value)
    assert "--" in str(caught.value)
    assert expand_argv(["rm", "{path}"], args, PARAMS, allow_options={"path"}) == ["rm", "-rf"]
    assert expand_argv(["rm", "--", "{path}"], args, PARAMS, allow_options=()) == [
        "rm",
        "--",
        "-rf",
    ]
    with pytest.raises(OptionValueError, match="'files'"):
        expand_argv(["ls", "{files}"], args, PARAMS, allow_options=())
    with pytest.raises(OptionValueError, match="'path'"):
        expand_argv(["ls", "{path}.txt"], args, PARAMS, allow_options=())
    # Not where an option can start: after text in its element, or the program itself.
    assert expand_argv(["ls", "--x={path}"], args, PARAMS, allow_options=()) == ["ls", "--x=-rf"]
    assert expand_argv(["{path}", "x"], args, PARAMS, allow_options=()) == ["-rf", "x"]
    with pytest.raises(OptionValueError):
        expand_argv(["{files}"], args, PARAMS, allow_options=())  # "--evil" is an argument


@pytest.mark.parametrize(
    ("template", "refused"),
    [
        ("grep {path} f", True),
        ('grep "{path}" f | wc -l', True),
        ("cd x && grep '{path}' f", True),
        ("echo ok; ls {files}", True),
        ("grep -- {path} f", False),
        ("grep -e{path} f", False),
        ("grep --regexp={path} f", False),
        ("{path} x", False),
        ("X=1 {path}", False),
        ("echo x > {path}", False),
        ("[[ {path} == -* ]] && echo dash", False),
        ("case {path} in -*) echo dash;; esac", False),
        ("grep -- x f; grep {path} f", True),
        ("grep -- x $(grep {path} f)", True),
        # An expansion before the value may be empty: the value then starts the word.
        ("grep $x{path} f", True),
        ('grep "$x"{path} f', True),
        ("grep $1{path} f", True),
        ("grep $_x{path} f", True),
        ("grep $(echo){path} f", True),
        ("grep --regexp=$x{path} f", False),
        ("grep -- $x{path} f", False),
    ],
)
def test_shell_option_values_are_refused_where_they_start_a_word(template, refused):
    args = {"path": "-rf", "files": ["a", "-l"]}
    expand_shell(template, args, PARAMS)  # a person's values are taken as meant
    expand_shell(template, args, PARAMS, allow_options={"path", "files"})
    if refused:
        with pytest.raises(OptionValueError):
            expand_shell(template, args, PARAMS, allow_options=())
    else:
        expand_shell(template, args, PARAMS, allow_options=())
    expand_shell(template, {"path": "x-y", "files": ["a"]}, PARAMS, allow_options=())


# -- option injection through an empty neighbour (red-team review of issue 9) ----------


@pytest.mark.parametrize(
    ("prefix", "refused"),
    [
        ("", True),  # `{prefix}{name}` with prefix "" starts the word with the name
        ([], True),  # an empty array is no text either
        (None, True),  # absent: the whole element is dropped in argv, nothing in shell
        ("x", False),
        ("-", True),  # the prefix itself starts an option
    ],
)
def test_a_value_after_empty_values_in_its_word_is_checked_as_starting_it(prefix, refused):
    params = {"prefix": {"type": "string"}, "name": {"type": "string"}}
    args = {"name": "-la"} | ({} if prefix is None else {"prefix": prefix})
    for expand, template in [
        (expand_argv, ["ls", "{prefix}{name}"]),
        (expand_shell, "ls {prefix}{name}"),
        (expand_shell, 'ls "{prefix}{name}"'),
        (expand_shell, "ls ''{prefix}{name}"),
    ]:
        expand(template, args, params)  # a person's values are taken as meant
        if refused and not (prefix is None and expand is expand_argv):
            with pytest.raises(OptionValueError):
                expand(template, args, params, allow_options=())
        else:
            expand(template, args, params, allow_options=())
    # Literal text before the values keeps them inside one argument.
    expand_argv(["ls", "x{prefix}{name}"], args, params, allow_options=())
    expand_shell("ls x{prefix}{name}", args, params, allow_options=())
    expand_shell("ls -- {prefix}{name}", args, params, allow_options=())


@pytest.mark.skipif(not shutil.which("bash"), reason="needs bash")
@pytest.mark.parametrize("value", ["-L", "-eq", "==", "=~", "-n"])
def test_a_value_that_looks_like_a_test_operator_stays_an_operand(value):
    script = expand_shell("[[ {v} == {v} ]] && printf ok", {"v": value}, PROPERTY_PARAMS)
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=20)
    assert done.stdout == "ok", done.stderr


# -- decisions the mutation tests found unguarded (docs/mutation.md) -----------------


def test_url_array_items_encode_slashes_too():
    url = expand_url("https://h.test/{files}", {"files": ["../admin", "a/b"]}, PARAMS)
    assert url == "https://h.test/..%2Fadmin,a%2Fb"


def test_an_array_value_starting_a_word_is_checked_item_by_item():
    with pytest.raises(OptionValueError, match="'files'"):
        expand_argv(["grep", "{files}", "f"], {"files": ["-r", "x"]}, PARAMS, allow_options=())
    # The program itself may be anything, even from an array whose first item starts with -.
    assert expand_argv(["{files}", "x"], {"files": ["-p", "a"]}, PARAMS, allow_options=()) == [
        "-p",
        "a",
        "x",
    ]
    assert expand_argv(["{opt}tool", "x"], {"opt": "-"}, PARAMS, allow_options=()) == [
        "-tool",
        "x",
    ]
    # After `--` nothing is an option.
    assert expand_argv(
        ["grep", "--", "{files}"], {"files": ["-r", "-x"]}, PARAMS, allow_options=()
    ) == ["grep", "--", "-r", "-x"]


def test_a_value_after_several_empty_values_still_starts_the_word():
    args = {"path": "", "opt": "", "files": ["-rf"]}
    with pytest.raises(OptionValueError, match="'files'"):
        expand_argv(["rm", "{path}{opt}{files}"], args, PARAMS, allow_options=())


def test_non_string_items_keep_their_place():
    got = expand_argv(["head", "-n", 5, "{path}", True], {"path": "f"}, PARAMS, allow_options=())
    assert got == ["head", "-n", "5", "f", "true"]


def test_the_option_refusal_says_how_to_allow_it():
    with pytest.raises(OptionValueError) as caught:
        expand_argv(["rm", "{path}"], {"path": "-rf"}, PARAMS, allow_options=())
    assert str(caught.value) == (
        "the value of 'path' starts with '-', so the program would read it as an option;"
        " refused for a model's call. The tool's declaration can allow it with"
        " `option: true` on the parameter 'path', or by putting `--` before {path} in its"
        " template"
    )


@pytest.mark.parametrize(
    "template",
    [
        ["timeout", "{secs}", "sh", "-c", "echo {x}"],
        ["env", "{var}", "bash", "-c", "{x}"],
        ["ssh", "-p", 2222, "example.org", "ls {x}"],
        ["nice", "-n", 5, "sh", "-c", "{x}"],
    ],
)
def test_code_positions_after_a_value_or_a_number_are_still_refused(template):
    with pytest.raises(TemplateError, match="cannot be used"):
        check_argv(template)


@pytest.mark.parametrize(
    ("template", "out"),
    [
        # the outer $(...) is unquoted: its output is split into words, and only that
        ("printf %s $( (printf %s {v}) )", "ab'c;$(id)"),
        ("printf %s $( ( printf %s '{v}' ) )", "ab'c;$(id)"),
        ("printf %s $( (printf x) ){v}", "xa b'c;$(id)"),
        ("printf %s a#{v}", "a#a b'c;$(id)"),
        ("printf %s {v} # it is quoted\n", "a b'c;$(id)"),
        ("printf %s {v};", "a b'c;$(id)"),
        ("printf %s {v}&&true", "a b'c;$(id)"),
        ("printf %s {v}|cat", "a b'c;$(id)"),
    ],
)
def test_values_in_subshells_comments_and_before_operators_arrive_literally(template, out):
    check_shell(template)
    script = expand_shell(template, {"v": "a b'c;$(id)"}, {"v": {"type": "string"}})
    ran = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10)
    assert ran.stdout == out, script


@pytest.mark.parametrize(
    "template",
    ["echo {v} # it's {v}", "echo x # {v}", "#{v}\necho", "echo $((1+{v}))", "(( {v} ))"],
)
def test_placeholders_in_comments_or_arithmetic_are_refused(template):
    with pytest.raises(TemplateError, match=r"cannot be used (in a comment|inside arithmetic)"):
        check_shell(template)


def test_a_template_ending_in_an_operator_expands():
    params = {"v": {"type": "string"}}
    assert expand_shell("echo {v}&", {"v": "a b"}, params) == "echo 'a b'&"
    assert expand_shell("ls {v}>", {"v": "x"}, params) == "ls x>"
    assert expand_shell("echo {v};", {"v": "x"}, params) == "echo x;"


@pytest.mark.parametrize(
    ("template", "refused"),
    [
        # a redirection's target is a file name, never an option
        ("echo x >{path}", False),
        ("echo x >> {path}", False),
        ("echo x &> {path}", False),
        ("echo x&>{path}", False),
        ("echo x &>> {path}", False),
        ("echo x 2> {path}", False),
        ("echo x 2>>{path}", False),
        ("echo x >| {path}", False),
        ("echo x >& {path}", False),
        ("echo x >&{path}", False),
        ("cat <> {path}", False),
        ("cat < {path}", False),
        ("cat <<< {path}", False),
        ("cat <<<{path}", False),
        # …but after the redirection, the command's words go on
        ("echo x 2>&1 {path}", True),
        ("echo x > y {path}", True),
        ("echo x >&2 {path}", True),
        ("echo x 2>y {path}", True),
        ("cat <(ls) {path}", True),
        # a new command starts after an operator: the value is its program
        ("echo x|{path}", False),
        ("echo x |& {path}", False),
        ("echo x&{path}", False),
        ("echo x;{path}", False),
        ("echo x&&{path}", False),
        ("echo x||{path}", False),
    ],
)
def test_redirections_and_operators_decide_where_an_option_can_start(template, refused):
    args = {"path": "-rf"}
    if refused:
        with pytest.raises(OptionValueError):
            expand_shell(template, args, PARAMS, allow_options=())
    else:
        expand_shell(template, args, PARAMS, allow_options=())


def test_a_placeholder_is_known_by_its_name():
    from mdagent.declarations.placeholders import Slot, parse_template

    assert parse_template("cat {path}.txt") == ("cat ", Slot("path"), ".txt")
    assert Slot("a") == Slot("a") and Slot("a") != Slot("b") and Slot("a") != "a"
    assert len({Slot("a"), Slot("a"), Slot("b")}) == 2
    assert hash(Slot("a")) == hash(Slot("a")) != hash(Slot("b"))
    assert repr(Slot("a")) == "Slot('a')"


# -- the scanner's bookkeeping of operators and expansions (mutation survivors) ---------


@pytest.mark.parametrize(
    ("template", "script", "option_refused"),
    [
        ("echo x & grep {p}", "echo x & grep '-r x'", True),
        ('grep "$1"{p}', "grep \"$1\"'-r x'", True),
        ("grep `echo` {p}", "grep `echo` '-r x'", True),
        ("grep $((1)) {p}", "grep $((1)) '-r x'", True),
        ("grep $[1] {p}", "grep $[1] '-r x'", True),
        ('echo "$(ls {p})"', "echo \"$(ls '-r x')\"", True),
        ("grep $(ls) {p}", "grep $(ls) '-r x'", True),
        ("grep $'a\\'b' {p}", "grep $'a\\'b' '-r x'", True),
        ("echo $'\\''{p}", "echo $'\\'''-r x'", True),
        ("grep $$ {p}", "grep $$ '-r x'", True),
        ('grep "$1" {p}', "grep \"$1\" '-r x'", True),
        ("echo $ {p}", "echo $ '-r x'", True),
        ("echo x >{p}", "echo x >'-r x'", False),
        ("[[ a < b ]] && grep {p}", "[[ a < b ]] && grep '-r x'", True),
        ("cat 2>f {p}", "cat 2>f '-r x'", True),
        ("cat <<< {p}", "cat <<< '-r x'", False),
        ("cat <<<x {p}", "cat <<<x '-r x'", True),
        ("cat < {p}", "cat < '-r x'", False),
        ("cat <f {p}", "cat <f '-r x'", True),
        ("echo x >| f {p}", "echo x >| f '-r x'", True),
        ("echo x >&2 {p}", "echo x >&2 '-r x'", True),
        ("echo x &> f {p}", "echo x &> f '-r x'", True),
        ("echo x &> {p}", "echo x &> '-r x'", False),
        ("echo x &>f {p}", "echo x &>f '-r x'", True),
        ("(b {p})", "(b '-r x')", True),
        ("((x)); b {p}", "((x)); b '-r x'", True),
        ('echo "$[1]" {p}', "echo \"$[1]\" '-r x'", True),
        ('echo "$(( 1 ))" {p}', "echo \"$(( 1 ))\" '-r x'", True),
        ('echo "`ls`" {p}', "echo \"`ls`\" '-r x'", True),
        ('echo "x$" {p}', "echo \"x$\" '-r x'", True),
        ('echo $(echo ")") {p}', "echo $(echo \")\") '-r x'", True),
        ("echo $((a[1])) {p}", "echo $((a[1])) '-r x'", True),
        ("echo $[a[1]] {p}", "echo $[a[1]] '-r x'", True),
        ("echo {p}$1", "echo '-r x'$1", True),
        ("grep $@ {p}", "grep $@ '-r x'", True),
        ("grep $_x {p}", "grep $_x '-r x'", True),
        ("echo x <> f {p}", "echo x <> f '-r x'", True),
        ("echo x 2>&1 {p}", "echo x 2>&1 '-r x'", True),
        ("echo x >> f {p}", "echo x >> f '-r x'", True),
        ("a |& b {p}", "a |& b '-r x'", True),
        ("echo $(( (1) )) {p}", "echo $(( (1) )) '-r x'", True),
        ("cmd <(ls) {p}", "cmd <(ls) '-r x'", True),
    ],
)
def test_shell_words_after_operators_and_expansions_are_quoted_and_checked(
    template, script, option_refused
):
    # What the script becomes for a value with a blank and a leading dash, and
    # whether a model's call with it is refused: a value is an option where it
    # starts a word of a program's arguments, and a file name after `<`, `>`,
    # `&>` or `<<<`, however the operators and expansions before it are spelled.
    args, params = {"p": "-r x"}, {"p": {"type": "string"}}
    assert expand_shell(template, args, params) == script
    if option_refused:
        with pytest.raises(OptionValueError):
            expand_shell(template, args, params, allow_options=())
    else:
        assert expand_shell(template, args, params, allow_options=()) == script


@pytest.mark.parametrize(
    ("template", "value", "script"),
    [
        ("printf %s $x{p}", "a-b", "printf %s $x''a-b"),
        ("printf %s $x{p}", "_SECRET", "printf %s $x''_SECRET"),
        ("echo $(echo $y{p})", "ab", "echo $(echo $y''ab)"),
        ('printf %s "$x"{p}', "ab", 'printf %s "$x"ab'),  # the quote ends the name already
        ("printf %s $1{p}", "0", "printf %s $10"),  # `$10` is `$1` and `0` to bash
        ("printf %s x{p}", "ab", "printf %s xab"),
    ],
)
def test_a_bare_value_never_lengthens_the_variable_name_before_it(template, value, script):
    assert expand_shell(template, {"p": value}, {"p": {"type": "string"}}) == script


@pytest.mark.parametrize(
    "template",
    ['"$HOME"/bin/sh -c {v}', "$PREFIX/bin/bash -c {v}", "${{X}}/sh -c {v}", "`pwd`/zsh -c {v}"],
)
def test_a_shell_named_through_an_expanded_folder_is_still_a_shell(template):
    with pytest.raises(TemplateError, match=r"as the script of `/(sh|bash|zsh) -c`"):
        check_shell(template)


def test_an_expanded_name_is_not_taken_for_a_shell():
    check_shell('"$HOME"/bin/tool -c {v}')  # a program that is no shell: the value is data


def test_a_program_named_at_run_time_may_be_a_shell():
    with pytest.raises(TemplateError, match="script of `a program named at run time -c`"):
        check_shell("$SHELL -c {v}")
    check_shell('$SHELL -c "echo \\"$1\\"" sh {v}')  # the value as an argument: fine
