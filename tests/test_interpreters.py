"""Which commands run code written on their command line or read from stdin.

Each form below ran without a question under an allow rule such as
``exec(python3 *)`` before it was read as inline code (issue: red-team pass
on ``policy.inline_eval``).
"""

from __future__ import annotations

import shlex

import pytest

from mdagent.safety.shell.interpreters import inline_code
from test_policy import check, cmd, make_policy

INLINE = [
    # python -m MODULE where the module runs code given as arguments or stdin
    ("python3 -m timeit -n1 -r1 \"__import__('os').system('id')\"", "python3 -m timeit"),
    ("python3 -m pdb -c 'import os' x.py", "python3 -m pdb"),
    ("python3 -m code", "python3 -m code"),
    ("python3 -mrunpy timeit 1", "python3 -m runpy"),
    ("python3 -Im cProfile /dev/stdin", "python3 -m cProfile"),
    ("python3 -m pickle /dev/stdin", "python3 -m pickle"),
    ("python3 -m idlelib.idle -c 1", "python3 -m idlelib.idle"),
    ("python3 -i tool.py", "python3 -i"),
    # a program read from stdin
    ("python3 /dev/stdin", "python3 /dev/stdin"),
    ("python3 /proc/self/fd/0", "python3 /proc/self/fd/0"),
    ("python3 /dev/fd/0", "python3 /dev/fd/0"),
    ("python3 ../../../../../../dev/stdin", "python3 ../../../../../../dev/stdin"),
    ("python3 -", "python3 -"),
    ("python3 -u -- -", "python3 -"),
    ("python3", "python3 (no script: reads code from stdin)"),
    ("python3 -u -B", "python3 (no script: reads code from stdin)"),
    ("perl /dev/stdin", "perl /dev/stdin"),
    ("node /dev/stdin", "node /dev/stdin"),
    ("node", "node (no script: reads code from stdin)"),
    ("ruby -", "ruby -"),
    ("deno run -", "deno -"),
    ("deno repl", "deno repl"),
    # an option whose value is code
    ("perl '-Mstrict;system(q(id))' /dev/null", "perl -M strict;system(q(id))"),
    ("perl '-mstrict system 1' x.pl", "perl -m strict system 1"),
    ("perl '-d:Foo;system(1)' x.pl", "perl -d:Foo;system(1)"),
    ("perl -d x.pl", "perl -d"),
    ("perl -i -e 'print' f", "perl -e"),  # -i takes no separate value: -e is an option
    ("node --import 'data:text/javascript,1' /dev/null", "node --import data:text/javascript,1"),
    ("node --import=data:x a.js", "node --import data:x"),
    ("node --experimental-loader data:x a.js", "node --experimental-loader data:x"),
    ("node --loader https://example.com/l.mjs a.js", "node --loader https://example.com/l.mjs"),
    ("node -r data:x a.js", "node -r data:x"),
    ("node --require /dev/stdin a.js", "node --require /dev/stdin"),
    ("node -i", "node -i"),
    ("php -d auto_prepend_file=/dev/stdin x.php", "php -d auto_prepend_file=/dev/stdin"),
    ("php -f /dev/stdin", "php /dev/stdin"),
    # make
    ("make --eval='x:;id'", "make --eval"),
    ("make --ev='x:;id' all", "make --eval"),
    ("make all -E 'x:;id'", "make -E"),
    ("make -f /dev/stdin", "make -f /dev/stdin"),
    ("make -f-", "make -f -"),
    ("make --file=/proc/self/fd/0", "make --file /proc/self/fd/0"),
    ("make 'CC=sh -c id' all", "make CC=sh -c id"),
    ("make 'X!=id'", "make X!=id"),
    ("make MAKEFLAGS=-k", "make MAKEFLAGS=-k"),
    ("make SHELL=/bin/python3", "make SHELL=/bin/python3"),
    ("gmake 'CFLAGS=$(shell id)'", "gmake CFLAGS=$(shell id)"),
    # runners
    ("uv run python -c 1", "python -c"),
    ("uv run --with requests python3 -m timeit 1", "python3 -m timeit"),
    ("uv run -", "uv -"),
    ("uvx --from x python3 /dev/stdin", "uvx /dev/stdin"),
    ("poetry run perl -e 1", "perl -e"),
    ("npx -c id", "npx -c"),
    ("npx --call=id", "npx --call"),
    ("npm exec -c id", "npm -c"),
    ("pnpm exec --shell-mode id", "pnpm --shell-mode"),
    ("npx node -e 1", "node -e"),
    ("yarn exec 'id; ls'", "yarn exec"),
]

NOT_INLINE = [
    "python3 tool.py -c x",  # an argument of tool.py
    "python3 -m pytest -c setup.cfg",
    "python3 -m http.server 8000",
    "python3 -W default -X dev script.py",
    "python3 --version",
    "python3 -V",
    "python3 dev/stdin.py",  # a file of the project, not /dev/stdin
    "node app.js --import data:x",  # an argument of app.js
    "node --import ./setup.mjs -r ts-node/register a.ts",
    "node --version",
    "perl -Mstrict -MList::Util=max -MO=Deparse -Mlib=/tmp x.pl",
    "perl -i.bak -p x.pl f",
    "perl -I /tmp -d:NYTProf x.pl",
    "ruby -rjson x.rb",
    "php -f x.php",
    "php -S localhost:8000",
    "deno run -A main.ts",
    "deno task build",
    "bun run dev",
    "make",
    "make test VERBOSE=1 -j4 PREFIX=/usr/local",
    "make -C sub -f Makefile.dev all",
    "uv run pytest -q",
    "uv run python script.py",
    "npx prettier --check .",
    "npm test",
    "git log",
]


@pytest.mark.parametrize(("command", "says"), INLINE)
def test_code_from_the_command_line_or_stdin_is_inline(command, says):
    assert inline_code(shlex.split(command)) == says


@pytest.mark.parametrize("command", NOT_INLINE)
def test_scripts_modules_and_plain_options_are_not_inline(command):
    assert inline_code(shlex.split(command)) is None


@pytest.mark.parametrize(
    "command",
    [
        "echo 'import os' | python3 -",
        "echo 'import os' | python3",
        "python3 <<< 'import os'",
        "python3 /dev/stdin <<< 'import os'",
        "python3 -m code <<< 'import os'",
        "perl '-Mstrict;system(q(id))' /dev/null",
        "node --import 'data:text/javascript,1' /dev/null",
        "make -f /dev/stdin <<< 'x:;id'",
        "uv run python -c 1",
        "sudo -u root python3 -m timeit 1",
    ],
)
def test_an_allow_rule_for_the_program_does_not_cover_them(root, box, command):
    rules = ["exec(echo *)", "exec(python3*)", "exec(perl *)", "exec(node *)"]
    rules += ["exec(make *)", "exec(uv *)", "exec(sudo *)"]
    decision = check(make_policy(root, {"allow": rules}), box, "exec", cmd(command))
    assert not decision.allowed and "runs inline code" in decision.reason, command
    loose = make_policy(root, {"allow": rules, "inline_eval": "allow"})
    assert check(loose, box, "exec", cmd(command)).allowed, command


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("NODE_OPTIONS='--import=data:text/javascript,1' node a.js", "NODE_OPTIONS="),
        ("env NODE_OPTIONS='-r /dev/stdin' node a.js", "NODE_OPTIONS="),
        ("env PERL5OPT='-Mstrict;system(1)' perl x.pl", "PERL5OPT="),
        ("sudo RUBYOPT=-r/dev/stdin ruby x.rb", "RUBYOPT="),
        ("PYTHONINSPECT=1 python3 tool.py", "PYTHONINSPECT=1"),
        ("BASH_ENV=/dev/stdin bash x.sh", "BASH_ENV="),
        ("env MAKEFLAGS=--eval=x make", "MAKEFLAGS="),
        ("MAKEFLAGS=kE make", "MAKEFLAGS="),
        ("NODE_OPTIONS=--max-old-space-size=4096 node a.js", None),
        ("RUBYOPT=-rjson PERL5OPT=-Mstrict MAKEFLAGS=-j4 make", None),
        ("X=1 env Y='a b' node a.js", None),
    ],
)
def test_variables_that_give_an_interpreter_code(command, says):
    from mdagent.safety.shell.interpreters import inline_environment
    from mdagent.safety.shell.shellparse import try_parse

    (segment,) = try_parse(command)
    found = inline_environment(segment.argv, segment.core)
    assert found == says if says is None else found.startswith(says)


@pytest.mark.parametrize(
    ("command", "says"),
    [
        # julia and GNU make read long options with getopt_long: any unambiguous
        # prefix is the option (issue 30).
        ("julia --ev 'run(`ls`)'", "julia --ev"),
        ("julia --eval=1", "julia --eval"),
        ("julia1.10 --pri 1", "julia1.10 --pri"),
        ("make --f=-", "make --f -"),
        ("make --fi /dev/stdin", "make --fi /dev/stdin"),
        ("make --makef=/dev/stdin", "make --makef /dev/stdin"),
        ("make --e='all:;ls'", "make --eval"),
        ("gmake --eva x", "gmake --eval"),
    ],
)
def test_an_abbreviated_long_option_is_the_option(command, says):
    assert inline_code(shlex.split(command)) == says


@pytest.mark.parametrize(
    "command",
    ["julia --project=. x.jl", "make --file=Makefile.dev", "make --environment-overrides"],
)
def test_other_long_options_stay_plain(command):
    assert inline_code(shlex.split(command)) is None
