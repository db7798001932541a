"""How the shell scanner reads characters, and which argv words are code (issue 12).

Tables of templates through the public functions: the exact ``sh -c`` text
a value gives, the refusal a position gets, the option check a person would
meet, and which ``run:`` words :func:`check_argv` treats as code.
"""

from __future__ import annotations

import re

import pytest

from mdagent.declarations.placeholders import TemplateError, check_argv
from mdagent.tools.templates import OptionValueError, expand_shell

PARAMS = {"x": {"type": "string"}}


# -- quoting contexts: text that must not change where a value lands -----------


@pytest.mark.parametrize(
    ("template", "script"),
    [
        # an escaped character is one quoted character, and only one
        ("echo \\$HOME {x}", "echo \\$HOME 'a b'"),
        ("echo PS1\\={x}", "echo PS1\\='a b'"),  # `PS1\=` is no assignment
        # a comment ends at its newline, and so does its command
        ("# it's a note\necho {x}", "# it's a note\necho 'a b'"),
        ("eval #\necho {x}", "eval #\necho 'a b'"),
        # '...', $'...' and "..." close where the shell closes them
        ("echo 'PS1='{x}", "echo 'PS1=''a b'"),
        ("echo $'it\\'s' {x}", "echo $'it\\'s' 'a b'"),
        ('echo "PS1=\\"b"{x}', 'echo "PS1=\\"b"\'a b\''),
        # inside ${...}: backslashes, quotes, nested braces and parentheses
        ("echo ${{a:-\\'}} {x}", "echo ${a:-\\'} 'a b'"),
        ("echo ${{a:-'}}'}} {x}", "echo ${a:-'}'} 'a b'"),
        ('echo ${{a:-"}}"}} {x}', "echo ${a:-\"}\"} 'a b'"),
        ("echo ${{a:-X[}} {x}", "echo ${a:-X[} 'a b'"),
        ("echo ${{a:-$b}} {x}", "echo ${a:-$b} 'a b'"),
        ("echo ${{a:-$'\\t'}} {x}", "echo ${a:-$'\\t'} 'a b'"),
        ("echo ${{a}} {x}", "echo ${a} 'a b'"),
        ("echo ${{a:-($'\\t')}} {x}", "echo ${a:-($'\\t')} 'a b'"),
        ("echo ${{a:-{{b}}}} {x}", "echo ${a:-{b}} 'a b'"),
        ("echo ${{a:-{{$'\\t'}}}} {x}", "echo ${a:-{$'\\t'}} 'a b'"),
        # arithmetic: parentheses and brackets nest
        ("echo $(( (1) + 2 )) {x}", "echo $(( (1) + 2 )) 'a b'"),
        ("echo $((1)) {x}", "echo $((1)) 'a b'"),
        ("echo $[a[1]] {x}", "echo $[a[1]] 'a b'"),
        ("echo $[a[$'\\t']] {x}", "echo $[a[$'\\t']] 'a b'"),
    ],
)
def test_text_before_a_value_leaves_it_quoted_for_where_it_lands(template, script):
    assert expand_shell(template, {"x": "a b"}, PARAMS) == script


@pytest.mark.parametrize(
    ("template", "where"),
    [
        ("echo $(( ({x}) ))", "inside arithmetic ((...))"),
        ("echo $[a[{x}]]", "inside arithmetic ((...))"),
        ("echo ${{a:-{{{x}}}}}", "inside ${...}"),
        ("echo ${{a:-({x})}}", "inside ${...}"),
    ],
)
def test_a_value_nested_inside_a_re_read_context_is_refused(template, where):
    with pytest.raises(TemplateError) as caught:
        expand_shell(template, {"x": "1"}, PARAMS)
    assert str(caught.value) == (
        f"placeholder {{x}} cannot be used {where} in shell template {template!r}"
    )


# -- where a value starts a word (the option check) --------------------------------


@pytest.mark.parametrize(
    ("template", "script"),
    [
        ("grep \\\n{x} f", None),  # a line continuation is no text: -r starts the word
        ("grep \\a{x} f", "grep \\a'-r' f"),  # an escaped character is text
        ('grep "Xy"{x} f', "grep \"Xy\"'-r' f"),  # quoted text, no expansion
        ("grep $(( (1) )) {x}", None),
        ("grep ${{a:-{{b}}}}{x} f", None),  # the expansion may be empty
        ("grep $[a[1]]{x} f", None),
    ],
)
def test_a_models_value_is_refused_only_where_it_starts_a_word(template, script):
    if script is None:
        with pytest.raises(OptionValueError):
            expand_shell(template, {"x": "-r"}, PARAMS, allow_options=())
    else:
        assert expand_shell(template, {"x": "-r"}, PARAMS, allow_options=()) == script


# -- argv words that are code ------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "where"),
    [
        (["/bin/sh", "-c", "{x}"], "as the script of `/bin/sh -c`"),
        (["/usr/local/bin/bash", "-c", "{x}"], "as the script of `/usr/local/bin/bash -c`"),
        (["bash", "-c", "-o", "posix", "{x}"], "as the script of `bash -c`"),
        (["bash", "-c", "+o", "posix", "{x}"], "as the script of `bash -c`"),
        (["bash", "-c", "-O", "extglob", "{x}"], "as the script of `bash -c`"),
        (["bash", "-c", "+O", "extglob", "{x}"], "as the script of `bash -c`"),
        (["bash", "-o", "posix", "-c", "{x}"], "as the script of `bash -c`"),
        (["bash", "-x", "-c", "{x}"], "as the script of `bash -c`"),
        (["runuser", "-u", "bob", "-c", "{x}"], "as the command of `runuser -c`"),
        (["su", "bob", "-c", "{x}"], "as the command of `su -c`"),
        (["su", "--command", "{x}"], "as the command of `su -c`"),
        (["ssh", "-lbob", "host", "{x}"], "in the remote command of `ssh`"),
        (["ssh", "-v", "host", "{x}"], "in the remote command of `ssh`"),
        (["ssh", "-p", "22", "host", "{x}"], "in the remote command of `ssh`"),
    ],
)
def test_run_words_that_are_code_are_refused(template, where):
    with pytest.raises(TemplateError, match=re.escape(f"placeholder {{x}} cannot be used {where}")):
        check_argv(template)


@pytest.mark.parametrize(
    "template",
    [
        ["sh", "-c", "X", "{x}"],  # after the script: $0, a plain argument
        ["bash", "-x", "{x}"],  # a script file's name, not code
        ["bash", "--norc", "{x}"],  # a long option has no -c in it
        ["ssh", "-v", "{x}"],  # the destination
        ["ssh", "-p", "22", "{x}"],  # -p takes a value; then the destination
        ["ssh", "-p", "22", "-v", "{x}"],
        ["ssh", "-l", "bob", "-p", "22", "{x}"],
    ],
)
def test_run_words_that_are_arguments_are_accepted(template):
    check_argv(template)


@pytest.mark.parametrize(
    ("template", "where"),
    [
        ("/bin/sh -c {x}", "as the script of `/bin/sh -c`"),
        ("ssh -o BatchMode=yes host ls {x}", "in the remote command of `ssh`"),
    ],
)
def test_shell_words_that_are_code_are_refused(template, where):
    with pytest.raises(TemplateError, match=re.escape(f"placeholder {{x}} cannot be used {where}")):
        expand_shell(template, {"x": "a"}, PARAMS)
