"""The shell's words, once: what both of mdagent's shell models know about sh.

Two models read shell text. :mod:`mdagent.safety.shell.shellparse` splits a command line
into the simple commands it runs (tree-sitter), for the policy; the
template scanner (:mod:`mdagent.safety.shell.slots`) reads a ``shell:`` template's
own text to decide how each ``{placeholder}`` must be quoted. Both need to
know which programs are shells, which builtins run text as code or take
variable names, and which words are syntax. Kept in two tables, the lists
drifted apart (the scanner knew fish, csh and tcsh, the parser posh); read
from here, they cannot.

Every set errs towards more: a word wrongly listed makes a command
unchecked or a placeholder refused, never the other way round.
"""

from __future__ import annotations

import re

# Programs that run their string argument (``-c``) or their input as shell
# code. fish, csh and tcsh are not sh: the parser reads their code with
# bash's grammar, where what it cannot read leaves the command unchecked.
SHELLS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "yash", "posh", "fish", "csh", "tcsh"}
)

# Builtins that run text as code, or change what a later command name runs
# (an alias, a hashed path, a loaded builtin, a completion callback), with
# what each does: no allow pattern covers them, and no placeholder may be
# pasted into their arguments.
CODE_BUILTINS = {
    "eval": "runs its arguments as code",
    "trap": "runs its argument as code",
    "source": "runs a file named by it",
    ".": "runs a file named by it",
    "let": "evaluates its arguments as arithmetic",
    "alias": "defines code",
    "hash": "sets the program a command name runs",
    "enable": "loads builtins",
    "mapfile": "takes a variable name (whose subscript is arithmetic)",
    "readarray": "takes a variable name (whose subscript is arithmetic)",
    "compgen": "expands its word list again",
    "complete": "may run code",
    "fc": "runs history as code",
    "bind": "may bind a key to code",
    "coproc": "runs its arguments as a command",
}

# Builtins that take variable names: bash evaluates a subscript in a name
# (``read 'a[$(cmd)]'``) as arithmetic, which runs its substitutions.
NAME_TAKERS = {
    "read": "takes variable names (whose subscripts are arithmetic)",
    "getopts": "takes a variable name (whose subscript is arithmetic)",
    "unset": "takes variable names (whose subscripts are arithmetic)",
    "wait": "may take a variable name (whose subscript is arithmetic)",
    "printf": "takes a variable name after -v (whose subscript is arithmetic)",
    "declare": "sets variables (their subscripts are arithmetic)",
    "typeset": "sets variables (their subscripts are arithmetic)",
    "local": "sets variables (their subscripts are arithmetic)",
    "export": "sets variables (their subscripts are arithmetic)",
    "readonly": "sets variables (their subscripts are arithmetic)",
    "test": "takes a variable name after -v or -R",
    "[": "takes a variable name after -v or -R",
}

# The start of an assignment word: ``NAME=``, ``NAME+=``, ``NAME[subscript]=``.
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")

# Variables whose value the shell reads again: prompt strings are expanded
# each time they are shown (``$(…)`` in them runs; PS4 at every traced
# command), PROMPT_COMMAND is run, BASH_ENV and ENV name a file a starting
# shell runs. PS3 errs towards more (bash prints it as it is).
REREAD_VARIABLES = frozenset(
    {"PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "BASH_ENV", "ENV"}
)

# Builtins that set variables from their operands (``export PS4=…``).
DECLARERS = frozenset({"declare", "typeset", "local", "readonly", "export"})

# Builtins that run the command named after them (and their options).
BUILTIN_WRAPPERS = frozenset({"command", "builtin"})

# Bash's reserved words that the grammar does not know as such (coproc), or
# that it takes for a command name only when it misread the line around them.
KEYWORDS = frozenset(
    {
        "coproc", "{", "}", "!", "[[", "]]", "if", "then", "elif", "else", "fi", "case",
        "esac", "for", "select", "while", "until", "do", "done", "in", "function",
    }
)  # fmt: skip

# Reserved words a command may follow (``if``, ``then``, ``!``, ``{``, ``time``...):
# the word after them is read as the start of a command.
PREFIX_KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}"}
    | {"time", "function"}
)

# Words after which the rest is syntax, not a program's arguments.
SYNTAX_OPENERS = frozenset({"[[", "case", "for", "select"})

# Operators of test and [[ ]]: arithmetic comparisons (their operands are
# evaluated as arithmetic) and the operators taking a variable name.
ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
NAME_TESTS = frozenset({"-v", "-R"})

# Files that are standard input.
STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
