"""How the shell walker reads each word: quote removal, substitutions, refusals.

Each test pins what the policy judges: the words of a segment after quote
removal (deny rules match them), the commands a word's substitutions run,
and the exact refusal a person reads ("could not be checked: ...") when the
grammar may read a word differently from bash. Written for the survivors of
the mutation run of ``shellparse._Walker.word``, ``unquote`` and
``check_one_line`` (docs/mutation.md).
"""

from __future__ import annotations

import pytest

from mdagent.safety.shell.shellparse import Unparseable, parse


def _cores(command: str) -> list[tuple[str, ...]]:
    return [s.core for s in parse(command)]


# -- quote removal -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        # An assignment loses its quotes as any word does: a deny rule on
        # `PAGER=sh *` must see the value bash assigns, not the quoting.
        ("FOO='a b' ls", ("FOO=a b", "ls")),
        ('FOO="x y"z ls', ("FOO=x yz", "ls")),
        # An escaped backquote in double quotes is a plain character, not a
        # substitution the grammar missed.
        ('echo "\\`"', ("echo", "`")),
    ],
)
def test_quotes_are_removed_from_every_word(command, argv):
    (seg,) = parse(command)
    assert seg.argv == argv


@pytest.mark.parametrize(
    ("command", "cores"),
    [
        # A line continuation between words (also in a test or a redirection)
        # is no line break: the command goes on.
        ("ls \\\n-l", [("ls", "-l")]),
        ("[[ a == \\\n b ]]", [("[[", "a", "==", "b", "]]")]),
        ("cat > \\\nout", [("cat",), (">", "out")]),
        # ... also inside a word the grammar reads across it: bash reads `]}`.
        ("echo ]\\\n}", [("echo", "]}")]),
        # Comments inside an array or a command substitution are not words.
        ("a=(1 # c\n 2)", [()]),
        ("echo $(ls # c\n)", [("echo", "$(ls # c\n)"), ("ls",)]),
        # A regular expression after =~ is read, not refused.
        ("[[ x =~ a.* ]]", [("[[", "x", "=~", "a.*", "]]")]),
        # `$(< file)` reads a file; a substitution naming the file still runs.
        ("echo $(< f)", [("echo", "$(< f)")]),
        ("echo $(< $(rm x))", [("echo", "$(< $(rm x))"), ("rm", "x")]),
        # A substitution in backquotes or right after a string runs.
        ('echo `"ls"`', [("echo", '`"ls"`'), ("ls",)]),
        ('echo "a"`ls`', [("echo", "a`ls`"), ("ls",)]),
    ],
)
def test_words_read_as_bash_reads_them(command, cores):
    assert _cores(command) == cores


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "message"),
    [
        # The grammar glues `} }` into one word; bash reads two.
        ("echo } }", "blank inside a word"),
        ("echo ] ]", "blank inside a word"),
        # A blank in an assignment's subscript: where bash ends such a word
        # is its lexer's business, so the line is refused, not guessed.
        ("a[ 1]=x ls", "blank inside a word \\(variable_assignment\\)"),
        # A `$\` at the end: the grammar leaves a gap inside the expansion.
        ("echo a$\\", "blank inside a word \\(simple_expansion\\)"),
        # The grammar runs echo's word on into the next line; bash runs `\rm`.
        ("echo \n\\rm -rf /", "word across lines"),
        # read/printf -v evaluate a subscript in a quoted name, running $(...).
        ("printf -v 'a[$(rm -rf /)]' x", "command substitution in a quoted array subscript"),
        ("printf -v $'a[$(rm -rf /)]' x", "command substitution in a quoted array subscript"),
        # ... an escaped backquote at the very end of the string included.
        ('read "a[\\`" <<< 1', "command substitution in a quoted array subscript"),
        # Substitutions bash runs that the grammar reads as plain text.
        ("echo ${x:-`rm x`}", "command substitution the grammar did not read"),
        ("echo ${x:-$[1]}", "command substitution the grammar did not read"),
        ("[[ x =~ <(rm x) ]]", "command substitution the grammar did not read"),
        ("echo ${x/<(rm x)/b}", "command substitution the grammar did not read"),
        # The grammar reads `(1)` in a subscript as a subshell; bash as arithmetic.
        ("echo ${a[(1)]}", "unsupported shell construct: subshell"),
    ],
)
def test_words_bash_may_read_differently_fail_closed_saying_why(command, message):
    # The message is what the person reads: "could not be checked: <message>".
    with pytest.raises(Unparseable, match=f"^{message}$"):
        parse(command)


# -- process substitutions the grammar reads as plain text ---------------------------


@pytest.mark.parametrize(
    "command",
    ["echo ${x:-<(rm -rf /)}", "echo ${x/a/<(rm -rf /)}", "echo ${x:->(rm -rf /)}"],
)
def test_a_process_substitution_in_an_expansion_is_refused(command):
    # bash runs `rm` in an unquoted default or replacement (checked with
    # bash 5.2); the grammar reads it as a word, so no segment would show it.
    with pytest.raises(Unparseable, match="^command substitution the grammar did not read$"):
        parse(command)
