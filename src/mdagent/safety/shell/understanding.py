"""How well one simple command is understood, read from its words.

The walker (:mod:`mdagent.safety.shell.shellparse`) finds the simple commands of a
line; this module reads one of them, its wrappers taken off
(:mod:`mdagent.safety.shell.wrappers`), and says what its words alone do not show:
why no allow pattern may cover it (:func:`why_dynamic`: a word computed at
run time, a builtin that runs text as code or evaluates a subscript), why deny
rules cannot see what it runs (:func:`hidden_commands`: ``xargs``, ``find
-exec``, ``alias``, ``hash -p``, a script named at run time), the shell code it
runs itself (:func:`shell_code`: ``eval``, ``trap``, ``sh -c``), whether it
reads code from its input (:func:`reads_script_from_stdin`) and the files its
options write (:func:`option_outputs`). The bash builtins' own rules live
here (``read``, ``printf -v``, ``test``, ``declare``, ``alias``…); what git,
sed, tar and other programs run besides themselves is
:mod:`mdagent.safety.shell.programs`'s.
"""

from __future__ import annotations

import re
from typing import Any

from mdagent.safety.shell.lexicon import (
    ARITHMETIC_TESTS,
    CODE_BUILTINS,
    DECLARERS,
    NAME_TAKERS,
    SHELLS,
    STDIN_FILES,
)
from mdagent.safety.shell.words import ASSIGNMENT, COMPUTED, INTEGER
from mdagent.safety.shell.wrappers import Unwrapped, read_wrappers


def reads_script_from_stdin(core: tuple[str, ...]) -> bool:
    """Whether ``core`` runs what it reads: a shell without ``-c``, ``. /dev/stdin``.

    Errs towards yes: a shell given a script file is taken to read code too.
    """
    program = core[0].rsplit("/", 1)[-1] if core else ""
    if program in (".", "source"):
        return any(w in STDIN_FILES for w in core[1:2])
    if program not in SHELLS:
        # A program outside the wrapper table may run its arguments, its input
        # passed on (`ssh-agent sh < f`, `script -qc sh /dev/null < f`): a
        # shell named in them reads that input as code. Printers and searchers
        # that only take a word as text are exempt.
        if program in _TEXT_ONLY:
            return False
        return any(
            part.rsplit("/", 1)[-1] in SHELLS or part in (".", "source")
            for word in core[1:]
            for part in word.split()[:1]
        )
    return not any(w.startswith("-") and not w.startswith("--") and "c" in w for w in core[1:])


# Programs that take their words as text (to print, search or test), never as a command.
_TEXT_ONLY = {
    "echo", "printf", "grep", "egrep", "fgrep", "rg", "cat", "ls", "head", "tail", "wc",
    "which", "type", "test", "[", "man", "file", "stat", "sort", "uniq", "cut", "tr",
    "basename", "dirname", "git", "diff", "cmp", "comm", "jq", "awk", "sed",
}  # fmt: skip


def shell_code(unwrapped: Unwrapped) -> list[str]:
    """The shell code ``sh -c CODE``, ``eval ARGS``, ``trap CODE SIG``, ``flock
    FILE -c CODE`` or ``watch CODE`` would run; a code may be empty (``sh -c``)."""
    codes = [unwrapped.code] if unwrapped.code else []
    core = unwrapped.core
    program = core[0].rsplit("/", 1)[-1] if core else ""
    args = list(core[1:])
    if program == "eval":
        codes.append(" ".join(args[1:] if args[:1] == ["--"] else args))
    elif program == "trap":
        # trap [-lpP] [--] [ACTION SIGNAL...]: with two operands or more
        # the first is code the shell runs later.
        while args and args[0].startswith("-") and args[0] != "-":
            if args.pop(0) == "--":
                break
        if len(args) >= 2 and args[0] != "-":
            codes.append(args[0])
    elif program in SHELLS:
        for i, word in enumerate(core[1:], start=1):
            if word.startswith("-") and not word.startswith("--") and "c" in word:
                rest = core[i + 2 :] if core[i + 1 : i + 2] == ("--",) else core[i + 1 :]
                codes.append(rest[0] if rest else "")
                break
    return codes


def why_dynamic(argv: tuple[str, ...], kinds: tuple[str, ...], unwrapped: Unwrapped) -> str | None:
    """Why no allow pattern may cover this segment, or None when it is fully understood.

    Understood means every word is literal after quote removal (a glob or
    brace expansion in an argument only names files) and nothing in it makes
    bash evaluate text as code or compute what runs.
    """
    for word, kind in zip(argv, kinds, strict=True):
        if kind == COMPUTED:
            return f"`{word}` is computed at run time"
        name = ASSIGNMENT.match(word)
        if name and "[" in name.group(0):
            return f"`{word}` assigns to a subscript, evaluated as arithmetic"
    found = _code_assignment(unwrapped)
    if found:
        return found.why
    if unwrapped.code is not None:
        return "a wrapper runs its arguments as shell code"
    core = unwrapped.core
    if not core:
        return None
    program = core[0].rsplit("/", 1)[-1]
    args = core[1:]
    if program in CODE_BUILTINS:
        return f"`{program}` runs text as code"
    if program == "parallel":
        return "`parallel` runs its arguments as shell commands"
    found = _runs(unwrapped)
    if found and not found.inline:
        return found.why
    if program in SHELLS and (not args or args[0].startswith(("-", "+"))):
        return f"`{program}` runs a string or its input as code"
    if program in ("[", "[[", "test", "(("):
        return _dynamic_test(program, args)
    if program in NAME_TAKERS:
        names = args
        if program == "printf":
            names = _printf_target(args)
        if any("[" in w for w in names):
            return f"`{program}` into a subscript, evaluated as arithmetic"
    return None


# Words that define what a command name runs: aliases, hashed paths and
# functions imported from the environment (env 'BASH_FUNC_ls%%=() { rm "$@"; }').
_RENAMING_WORDS = re.compile(r"BASH_ALIASES|BASH_CMDS|BASH_FUNC_")
# Programs that run a command once per file they find: the command's own
# arguments end at `;` or `+` (find) or the end of the line (fd).
_RUNS_PER_FILE = {
    "find": {"-exec", "-execdir", "-ok", "-okdir"},
    "fd": {"-x", "--exec", "-X", "--exec-batch"},
    "fdfind": {"-x", "--exec", "-X", "--exec-batch"},
}
# `read` options that take a value which is not a variable name.
_READ_VALUED = "dinNptu"


def hidden_commands(
    argv: tuple[str, ...], unwrapped: Unwrapped
) -> tuple[list[Unwrapped], str | None]:
    """What runs that deny rules cannot fully see: the commands a program runs
    per file it finds (``find -exec rm {} ;``, each unwrapped), and why the
    segment is unchecked (None: deny rules see everything it runs).

    Unchecked: a command whose arguments are added at run time (``xargs
    rm``: a deny rule ``exec(rm -rf *)`` cannot tell what ``rm`` gets), and a
    builtin that changes what a later command name runs (``alias ll=rm``,
    ``hash -p /bin/rm ls``, ``enable -f``, ``shopt -s expand_aliases``,
    ``BASH_CMDS[ls]=``, a variable name computed at run time, which may be
    one of those).
    """
    inner: list[Unwrapped] = []
    for word in argv:
        if _RENAMING_WORDS.search(word):
            return inner, f"`{word}` changes what a command name runs"
    for found in (_code_assignment(unwrapped), _runs(unwrapped)):
        if found and found.hidden:
            return inner, found.why
    core = unwrapped.core
    if not core:
        return inner, None
    program = core[0].rsplit("/", 1)[-1]
    args = core[1:]
    if unwrapped.appends:
        return inner, f"`{unwrapped.appends}` adds arguments to `{program}` at run time"
    starts = _RUNS_PER_FILE.get(program)
    if starts:
        kinds = unwrapped.kinds
        i = 1
        while i < len(core):
            if core[i] in starts:
                end = i + 1
                while end < len(core) and core[end] not in (";", "+"):
                    end += 1
                if end > i + 1:
                    inner.append(read_wrappers(core[i + 1 : end], kinds[i + 1 : end]))
                i = end
            i += 1
        if inner:
            return inner, f"`{program}` runs a command with file names found at run time"
    if program == "parallel":
        return inner, "`parallel` runs its arguments as shell commands"
    if program in SHELLS or program in (".", "source"):
        # `source <(curl …)`, `bash <(…)`, `sh $f`: code that exists only at run time.
        operands = [
            (w, k) for w, k in zip(args, unwrapped.kinds[1:], strict=True) if w[:1] not in "-+"
        ]
        if operands and operands[0][1] == COMPUTED:
            return inner, f"`{program}` runs code from `{operands[0][0]}`, computed at run time"
        if program in (".", "source") and operands and _device(operands[0][0]):
            return inner, f"`{program} {operands[0][0]}` runs code read from a file descriptor"
    return inner, _renames(program, args)


def _renames(program: str, args: tuple[str, ...]) -> str | None:
    """Why ``program args`` may change what a later command name runs, or None."""
    options = "".join(w[1:] for w in args if w.startswith("-") and not w.startswith("--"))
    changes = f"`{program}` changes what a command name runs"
    if program == "alias" and any("=" in w for w in args):
        return changes
    if (program == "hash" and "p" in options) or (program == "enable" and args):
        return changes
    if program == "shopt" and "expand_aliases" in args:
        return "`shopt -s expand_aliases` makes aliases run"
    if (program in ("mapfile", "readarray", "complete", "compgen") and "C" in options) or (
        program == "bind" and "x" in options
    ):
        return f"`{program} -C`/`-x` runs a command given as text"
    if program == "fc":
        return "`fc` runs commands from the history"
    names: tuple[str, ...] = ()
    if program in ("declare", "typeset", "local", "export", "readonly"):
        names = tuple(w.split("=", 1)[0] for w in args if not w.startswith(("-", "+")))
        computed = [w for w in args if w.startswith(("-", "+")) and ("$" in w or "`" in w)]
        if computed:  # `declare -$o r=…` is `declare -n r=…` when o=n
            return f"`{program}` option `{computed[0]}` is computed at run time"
        if "n" in options and any("$" in w or "`" in w for w in args):
            return f"`{program} -n` refers to a variable named at run time"
    elif program == "read":
        names = _read_names(args)
    elif program in ("mapfile", "readarray") and args:
        names = args[-1:]
    elif program == "printf":
        names = _printf_target(args)
    elif program == "getopts":
        names = args[1:2]
    if any("$" in n or "`" in n for n in names):
        return f"`{program}` assigns to a variable named at run time"
    return None


# Options that name a file a program writes: a write of its own, like `> file`.
# Any prefix counts (getopt_long takes one: `sort --out=f`, `git log --outp=f`),
# but `--log` alone, a flag of git merge and pull.
_OUTPUT_OPTIONS = ("output", "output-file", "output-document", "outfile", "log-file")


def _device(word: str) -> bool:
    from mdagent.safety.shell.programs import device_path

    return device_path(word)


def _runs(unwrapped: Unwrapped) -> Any:
    """What the program runs besides itself (:func:`mdagent.safety.shell.programs.runs`)."""
    from mdagent.safety.shell.programs import runs

    return runs(unwrapped.core, unwrapped.kinds)


def _code_assignment(unwrapped: Unwrapped) -> Any:
    """A variable set on the line that hands a program code or points it
    elsewhere (``PROMPT_COMMAND=…``, ``GIT_DIR=…``; :func:`mdagent.safety.shell.programs.assigned`):
    set for the command, or for the rest of the line — alone (``HOME=x;``),
    by ``export``/``declare``…, or by ``read``/``printf -v``."""
    from mdagent.safety.shell.programs import assigned

    core = unwrapped.core
    program = core[0].rsplit("/", 1)[-1] if core else ""
    # None: for the rest of the line, where any program may read it.
    scope = program if core and program not in DECLARERS else None
    words = [(w, scope) for w in unwrapped.assigned]
    if program in DECLARERS:
        words += [(w, None) for w in core[1:] if ASSIGNMENT.match(w)]
        if "n" in "".join(w[1:] for w in core[1:] if w.startswith("-")):
            # declare -n ref=PS4: assigning to ref sets PS4.
            words += [(w.split("=", 1)[1] + "=", None) for w in core[1:] if "=" in w]
    names = [(w, "", None) for w in _names_assigned(program, core[1:])]
    for word, where in words:
        match = ASSIGNMENT.match(word)
        if match:
            names.append((match.group(0), word[match.end() :], where))
    for name, value, where in names:
        found = assigned(re.sub(r"(\[.*)?\+?=$", "", name), value, where)
        if found:
            return found
    return None


def _names_assigned(program: str, args: tuple[str, ...]) -> tuple[str, ...]:
    """The variables ``read``, ``printf -v``, ``mapfile`` or ``getopts`` sets."""
    if program == "read":
        return _read_names(args)
    if program == "printf":
        return _printf_target(args)
    if program in ("mapfile", "readarray"):
        return args[-1:]
    if program == "getopts":
        return args[1:2]
    return ()


def option_outputs(core: tuple[str, ...], kinds: tuple[str, ...]) -> list[tuple[str, str]]:
    """The files ``--output=FILE``-style options of ``core`` name, with their kinds."""
    from mdagent.safety.shell.longoptions import abbreviated

    out = []
    for i, word in enumerate(core[1:], start=1):
        name, eq, value = word.partition("=")
        if abbreviated(word, _OUTPUT_OPTIONS, ("log",)):
            if eq:
                out.append((value, kinds[i]))
            elif i + 1 < len(core):
                out.append((core[i + 1], kinds[i + 1]))
    return out


def _read_names(args: tuple[str, ...]) -> tuple[str, ...]:
    """The variable names ``read args`` assigns to (``-a NAME`` included)."""
    names: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            names += args[i + 1 :]
            break
        if word.startswith("-") and len(word) > 1:
            at = next((j for j, c in enumerate(word) if j and c in _READ_VALUED + "a"), None)
            if at is not None:
                value = word[at + 1 :]
                if not value and i + 1 < len(args):
                    i += 1
                    value = args[i]
                if word[at] == "a":
                    names.append(value)
        else:
            names.append(word)
        i += 1
    return tuple(names)


def _dynamic_test(program: str, args: tuple[str, ...]) -> str | None:
    if program == "((":
        inner = " ".join(args[:-1])
        if re.search(r"[A-Za-z_$\[]", inner):
            return f"arithmetic `(( {inner} ))` may run code held in a variable"
        return None
    for i, word in enumerate(args):
        if word == "-v":
            return f"`{program} -v` evaluates a subscript as arithmetic"
        if word in ARITHMETIC_TESTS:
            around = args[i - 1 : i] + args[i + 1 : i + 2]
            if not all(INTEGER.fullmatch(w.strip()) for w in around):
                return f"`{word}` evaluates its operands as arithmetic"
    return None


def _printf_target(args: tuple[str, ...]) -> tuple[str, ...]:
    """The variable ``printf -v NAME`` assigns to (empty without ``-v``)."""
    for i, word in enumerate(args):
        if word == "-v":
            return args[i + 1 : i + 2]
        if word.startswith("-v"):
            return (word[2:],)
        if word == "--" or not word.startswith("-"):
            break
    return ()
