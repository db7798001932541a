"""Interpreters told to run code written on their command line (``python -c``, ``node -e``).

An allow rule such as ``exec(python3 *)`` is meant for running scripts; with
an inline script the command line *is* the program, and the rule's author
never saw it. :func:`inline_code` recognises such a command from its words
after wrappers are removed (``Segment.core`` of :mod:`mdagent.safety.shell.shellparse`,
so ``sudo env X=1 nice python3 -c …`` counts too); the policy then does not
let an allow pattern cover it unless ``policy.inline_eval: allow``.

Shells (``bash -c``, ``eval``) are not here: the shell parser already marks
them as running code, and no setting lets a pattern cover them.

Options are read the way each interpreter reads them, up to its script
argument, so ``python3 tool.py -c x`` (an argument of tool.py) is not inline
code. Inline code is also: a program read from standard input (``-``,
``/dev/stdin``, ``/proc/self/fd/0``, or no script at all, the way
``echo CODE | python3`` and ``python3 <<< CODE`` run), an option whose value
may be code (``perl '-Mstrict;system(…)'``, ``node --import data:…``), a module
that runs code from its arguments (``python3 -m timeit CODE``), ``make
--eval``/``-f /dev/stdin`` and command-line variables holding shell text, and
any of these behind a runner (``uv run``, ``npx``, ``poetry run``). Where a
reading is uncertain the answer errs towards "inline": the cost of a wrong
"yes" is one question.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable

from mdagent.core.records import Record


def _any_module(value: str) -> bool:
    """Any value names a module (the interpreter loads it from a file)."""
    return True


def _node_module(value: str) -> bool:
    """Whether node may load ``value`` (``--import``, ``-r``) as a file or package.

    A ``data:`` URL is the code itself; http(s) fetches code no one saw.
    """
    return not re.match(r"(data|https?|blob):", value, re.I)


def _perl_module(value: str) -> bool:
    """Whether ``-M``/``-m`` names a module: perl pastes anything else into
    ``use …;`` as written (``-Mstrict;system(…)``). After ``=`` come the
    import's arguments, which perl quotes with NUL, so they stay strings."""
    return re.fullmatch(r"-?[\w:]+(=.*)?", value, re.S) is not None


def _perl_debugger(value: str) -> bool:
    """``-d`` alone starts the debugger, whose commands are code read from the
    terminal or stdin; ``-d:Mod`` loads ``Devel::Mod``, pasted like ``-M``."""
    return re.fullmatch(r":[\w:]+(=.*)?", value, re.S) is not None


class _Interpreter(Record):
    code: tuple[str, ...]  # options whose value is code (-c, --eval) or that read code (-i)
    letters: str = ""  # short options that take code inside a cluster (perl -lne)
    valued: str = ""  # short options taking a value (attached, or the next word)
    valued_long: tuple[str, ...] = ()  # long options taking the next word as value
    subcommands: tuple[str, ...] = ()  # subcommands that run code: deno eval
    ends: str = ""  # short options after which the rest belongs to a module: python -m
    attached: str = ""  # short options whose value is only the rest of the cluster (perl -i.bak)
    # Options that print something and exit: without a script, nothing is read from stdin.
    exits: tuple[str, ...] = ("--version", "--help")
    # Options whose value names code to load, and the test that it is a name, not code.
    loads: tuple[str, ...] = ()
    loadable: Callable[[str], bool] = _any_module
    script: str = ""  # short options whose value is the script file (php -f)
    commands: tuple[str, ...] = ()  # words before the script that are subcommands (deno run)


_NODE = _Interpreter(
    ("-e", "-p", "--eval", "--print", "-i", "--interactive"),
    "epi",
    "rC",
    (
        "--require", "--import", "--loader", "--experimental-loader", "--input-type",
        "--title", "--env-file", "--conditions", "--experimental-policy",
    ),
    exits=("--version", "-v", "--help", "-h", "--v8-options"),
    loads=("-r", "--require", "--import", "--loader", "--experimental-loader"),
    loadable=_node_module,
)  # fmt: skip
_PWSH = _Interpreter(
    ("-c", "-command", "-e", "-ec", "-encodedcommand"),
    valued_long=(
        "-executionpolicy", "-workingdirectory", "-windowstyle", "-inputformat",
        "-outputformat", "-configurationname", "-settingsfile",
    ),
    exits=("-version", "-v", "-help", "-h", "-?"),
)  # fmt: skip
_PYTHON_EXITS = (
    "--version", "-V", "-VV", "--help", "-h", "-?", "--help-env", "--help-xoptions", "--help-all",
)  # fmt: skip
_TABLE: dict[str, _Interpreter] = {
    "python": _Interpreter(
        ("-c", "-i"), "ci", "WXQ", ("--check-hash-based-pycs",), ends="m", exits=_PYTHON_EXITS
    ),
    "pypy": _Interpreter(("-c", "-i"), "ci", "WXQ", ends="m", exits=_PYTHON_EXITS),
    "ipython": _Interpreter(("-c", "-i", "-m")),
    "node": _NODE,
    "nodejs": _NODE,
    "bun": _Interpreter(
        ("-e", "-p", "--eval", "--print"),
        "",
        "rc",
        ("--preload", "--cwd"),
        exits=("--version", "-v", "--help", "-h", "--revision"),
        loads=("-r", "--preload"),
        loadable=_node_module,
        commands=("run", "x"),
    ),
    "deno": _Interpreter(
        ("--eval",),
        subcommands=("eval", "repl"),
        exits=("--version", "-V", "--help", "-h", "help"),
        commands=("run", "serve", "test", "bench", "compile", "install"),
    ),
    "perl": _Interpreter(
        ("-e", "-E"),
        "eE",
        "I",
        attached="MmxdDFiC",
        exits=("-v", "-V", "-h", "--version", "--help"),
        loads=("-M", "-m"),
        loadable=_perl_module,
    ),
    "ruby": _Interpreter(
        ("-e",),
        "e",
        "CEIr",
        ("--encoding",),
        attached="FiWxKT",
        exits=("--version", "-v", "--help", "-h"),
    ),  # fmt: skip
    "php": _Interpreter(
        (
            "-r",
            "-R",
            "-B",
            "-E",
            "-a",
            "--run",
            "--process-code",
            "--process-begin",
            "--process-end",
            "--interactive",
        ),
        valued="cdzt",
        exits=("--version", "-v", "--help", "-h", "-i", "--info", "-m", "--modules"),
        script="f",
    ),  # fmt: skip
    "lua": _Interpreter(("-e", "-i"), "ei", "l", exits=("-v",)),
    "luajit": _Interpreter(("-e", "-i"), "ei", "lbjO", exits=("-v",)),
    "rscript": _Interpreter(("-e",)),
    "r": _Interpreter(("-e",)),
    "osascript": _Interpreter(("-e",), "e", "ls"),
    "pwsh": _PWSH,
    "powershell": _PWSH,
    "julia": _Interpreter(
        ("-e", "-E", "--eval", "--print", "-i"),
        "",
        "LptJ",
        ("--project",),
        exits=("--version", "-v", "--help", "-h"),
    ),  # fmt: skip
    "elixir": _Interpreter(("-e", "--eval"), valued="r", valued_long=("-pa", "-pz")),
    "groovy": _Interpreter(("-e",)),
    "guile": _Interpreter(("-c",), valued="lLxe"),
    "racket": _Interpreter(("-e", "--eval", "-i", "--repl"), "ei", "ltfruk"),
}
# python3.12, pypy3, lua5.4, php8.2, ruby3.2, node18: the same program.
_VERSION = re.compile(r"[-_.]?\d+(\.\d+)*[a-z]?$")

# Modules that run code given as their arguments or read from stdin
# (``python3 -m timeit CODE``, ``-m pdb -c CMD``, ``-m code`` reads a session,
# ``-m pickle FILE`` unpickles, which calls anything). Modules that run the
# code of files (pytest, unittest, pip) stay coverable, like scripts.
_CODE_MODULES = frozenset(
    {
        "timeit", "pdb", "code", "runpy", "trace", "cProfile", "profile", "doctest",
        "asyncio", "pickle", "idlelib", "IPython", "ipdb", "pudb", "ptpython", "bpython",
    }
)  # fmt: skip

# Programs that run another program named among their arguments (``uv run
# python -c …``, ``npx node -e …``): what they run is read from each later word.
_RUNNERS = frozenset(
    {
        "uv", "uvx", "pipx", "poetry", "pdm", "hatch", "pipenv", "rye", "pixi", "conda",
        "mamba", "micromamba", "npx", "npm", "pnpm", "pnpx", "yarn", "bunx", "mise",
        "asdf", "fnm", "volta", "direnv", "dotenv", "corepack",
    }
)  # fmt: skip
# Runner options whose value is shell code (``npx -c 'cmd'``, ``pnpm exec -c``).
_RUNNER_SHELL = {
    "npx": ("-c", "--call"),
    "npm": ("-c", "--call"),
    "pnpm": ("-c", "--shell-mode"),
    "pnpx": ("-c", "--shell-mode"),
    "yarn": ("exec",),  # yarn (berry) runs `yarn exec`'s arguments as a shell script
}
_MAKE = ("make", "gmake")
# make's command-line variables that change how it reads makefiles or runs recipes.
_MAKE_VARIABLES = {"MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKEFILES", "SHELL", ".SHELLFLAGS"}
_MAKE_ASSIGNMENT = re.compile(r"([^\s=:!?+$]+)\s*(:::=|::=|:=|\?=|\+=|!=|=)(.*)", re.S)
_PLAIN_VALUE = re.compile(r"[\w.,/@%+:-]*")


def inline_code(argv: tuple[str, ...] | list[str]) -> str | None:  # noqa: C901
    """How ``argv`` runs code given on its command line (``"python3 -c"``), or None.

    ``argv`` is a command without wrappers (``Segment.core``).
    """
    if not argv:
        return None
    program = argv[0].rsplit("/", 1)[-1]
    base = program.lower()
    words = list(argv[1:])
    if base in _RUNNERS:
        return _runner(program, base, words)
    if base in _MAKE:
        return make_inline(program, words)
    key = base if base in _TABLE else _VERSION.sub("", base)
    spec = _TABLE.get(key)
    if spec is None:
        return None
    from mdagent.safety.shell.longoptions import dangerous_option

    exits = False
    i = 0
    while i < len(words):
        word = words[i]
        i += 1

        def value() -> str:  # the option's value is the next word
            nonlocal i
            i += 1
            return words[i - 1] if i <= len(words) else ""

        name = word.split("=", 1)[0] if word.startswith("--") else word
        if spec is _PWSH:
            name = _pwsh_option(name.lower())
        # julia reads long options with getopt_long: `--ev` is `--eval`.
        if name in spec.code or dangerous_option(key, word):
            return f"{program} {name}"
        if word in spec.subcommands:
            return f"{program} {word}"
        if word in spec.exits or name in spec.exits:
            exits = True
            continue
        if word == "--":
            return _script(program, words[i] if i < len(words) else None, exits)
        if word == "-" or not word.startswith("-"):
            if word in spec.commands:
                continue
            return _script(program, word, exits)
        if word.startswith("--") or spec is _PWSH:
            if "=" in word:
                found = _option_value(program, spec, name, word.split("=", 1)[1])
            elif name in spec.valued_long:
                found = _option_value(program, spec, name, value())
            else:
                found = None
            if found:
                return found
            continue
        cluster = word[1:]
        for at, ch in enumerate(cluster):
            rest = cluster[at + 1 :]
            if ch in spec.letters:
                return f"{program} {word}"
            if ch in spec.ends:  # python -m MODULE: the module's arguments follow
                module = rest or value()
                if module.split(".", 1)[0] in _CODE_MODULES:
                    return f"{program} -m {module}"
                return None
            if ch in spec.script:  # php -f FILE
                return _script(program, rest or value(), exits)
            if ch in spec.attached or ch in spec.valued:
                given = rest if rest or ch in spec.attached else value()
                found = _option_value(program, spec, f"-{ch}", given)
                if found:
                    return found
                break
    return None if exits else f"{program} (no script: reads code from stdin)"


def _script(program: str, word: str | None, exits: bool) -> str | None:
    """The script argument: a program read from stdin, or fetched, is inline code."""
    if word is None:
        return None if exits else f"{program} (no script: reads code from stdin)"
    if word == "-" or _stdin_path(word) or re.match(r"(data|https?|blob):", word, re.I):
        return f"{program} {word}"
    return None


def _option_value(program: str, spec: _Interpreter, option: str, value: str) -> str | None:
    """Whether an option's value makes the command inline code (what says so), or None."""
    if option in spec.loads and not spec.loadable(value):
        return f"{program} {option} {value}"
    if option == "-d" and program.lower().startswith("perl") and not _perl_debugger(value):
        return f"{program} -d{value}"
    # A value naming stdin loads code from it (node -r /dev/stdin, php -d
    # auto_prepend_file=/dev/stdin).
    if any(_stdin_path(part) for part in value.split("=")):
        return f"{program} {option} {value}"
    return None


def _stdin_path(word: str) -> bool:
    """Whether ``word`` is a path to stdin or another open file (``/dev/stdin``,
    ``/dev/fd/0``, ``/proc/self/fd/0``, ``../../dev/stdin``, ``~/../../dev/fd/3``).

    Any file under /dev or /proc but /dev/null counts. A relative path that
    does not climb (``dev/x.py``) is a file of the project.
    """
    if not word.startswith(("/", "~", "..")):
        return False
    path = posixpath.normpath(word.lstrip("~")).lstrip("/")
    while path.startswith("../"):
        path = path[3:]
    if path in ("dev/null", ".."):
        return False
    return path.startswith(("dev/", "proc/")) or path in ("dev", "proc")


def _runner(program: str, base: str, words: list[str]) -> str | None:
    """``uv run python -c …``, ``npx -c 'cmd'``: inline code anywhere in what a runner runs.

    Its own options are not read: every later word is tried as the program it
    runs, which errs towards "inline" (``npm install node`` asks).
    """
    shell = _RUNNER_SHELL.get(base, ())
    for word in words:
        if word.split("=", 1)[0] in shell:
            return f"{program} {word.split('=', 1)[0]}"
        if _stdin_path(word) or (word == "-" and base in ("uv", "uvx")):
            return f"{program} {word}"  # uv run - reads a Python script from stdin
    for start in range(len(words)):
        found = inline_code(words[start:])
        if found:
            return found
    return None


def make_inline(program: str, words: list[str]) -> str | None:
    """``make --eval=TEXT``, ``make -f /dev/stdin``, ``make CC='sh -c …'``: inline.

    A makefile runs its recipes as shell code, so text on the command line
    that becomes makefile text is code; GNU make reads options among its
    targets, so every word is read, and takes any prefix of a long option
    (``--ev``, ``--f=-``; see :data:`mdagent.safety.shell.longoptions.LONG_OPTIONS`). A
    variable set on the command line overrides the makefile's: one whose
    value is more than a plain word (a file name, a number) may put a
    command into any recipe, ``!=`` runs one.
    """
    from mdagent.safety.shell.longoptions import dangerous_option

    i = 0
    options = True
    while i < len(words):
        word = words[i]
        i += 1
        following = words[i] if i < len(words) else ""
        if options and word == "--":
            options = False
            continue
        if options and word.startswith("--"):
            name, eq, value = word.partition("=")
            option = dangerous_option("make", word)
            if option == "eval":
                return f"{program} --eval"
            if option:
                target = value if eq else following
                if target == "-" or _stdin_path(target):
                    return f"{program} {name} {target}"
            continue
        if options and word.startswith("-") and len(word) > 1:
            cluster = word[1:]
            for at, ch in enumerate(cluster):
                rest = cluster[at + 1 :]
                if ch == "E":
                    return f"{program} -E"
                if ch == "f":
                    target = rest or following
                    if target == "-" or _stdin_path(target):
                        return f"{program} -f {target}"
                if ch in "fCIoW":  # the rest, or else the next word, is its value
                    if not rest:
                        i += 1
                    break
            continue
        assignment = _MAKE_ASSIGNMENT.fullmatch(word)
        if assignment:
            name, operator, value = assignment.groups()
            if (
                operator == "!="
                or name in _MAKE_VARIABLES
                or not _PLAIN_VALUE.fullmatch(value)
                or _stdin_path(value)
            ):
                return f"{program} {word}"
    return None


def _pwsh_option(name: str) -> str:
    """PowerShell accepts a prefix of a parameter name (``-com``, ``-ex``): the full name."""
    if len(name) >= 2 and "-command".startswith(name):
        return "-command"
    if len(name) >= 4 and "-encodedcommand".startswith(name):
        return "-encodedcommand"
    full = [v for v in _PWSH.valued_long if len(name) >= 3 and v.startswith(name)]
    return full[0] if len(full) == 1 else name


# Environment variables an interpreter reads options or code from, and the
# command whose options they stand for (node reads NODE_OPTIONS as options).
_OPTION_VARIABLES = {"NODE_OPTIONS": "node", "PERL5OPT": "perl", "RUBYOPT": "ruby"}
# Variables whose mere presence runs code no one saw: PYTHONINSPECT reads
# stdin after the script, PERL5DB is the debugger's code, BASH_ENV/ENV are
# sourced by a shell; MAKEFLAGS and the like are read as make's options.
_CODE_VARIABLES = {"PYTHONINSPECT", "PERL5DB", "BASH_ENV", "ENV", "MAKEFILES"}
_MAKE_FLAG_VARIABLES = {"MAKEFLAGS", "GNUMAKEFLAGS", "MFLAGS"}


def inline_environment(
    argv: tuple[str, ...] | list[str], core: tuple[str, ...] | list[str]
) -> str | None:
    """An assignment before ``core`` that gives an interpreter code (``NODE_OPTIONS=…``).

    ``argv`` is the whole segment (``Segment.argv``), ``core`` the program
    that runs (``Segment.core``): the words before it are assignments and
    wrappers (``env PERL5OPT=… perl x.pl``, ``sudo RUBYOPT=… ruby``).
    """
    before = list(argv)
    if core and tuple(before[-len(core) :]) == tuple(core):
        before = before[: -len(core)]
    for word in before:
        match = re.fullmatch(r"([A-Za-z_]\w*)=(.*)", word, re.S)
        if not match:
            continue
        name, value = match.groups()
        if name in _CODE_VARIABLES:
            return f"{name}={value}"
        if name in _MAKE_FLAG_VARIABLES and (
            not re.fullmatch(r"[-\w ]*", value)  # plain flags only: -k, -j4, ks
            or re.search(r"(^|\s)-*[^-\s]*[Ef]|eval|file", value)  # -E TEXT, -f FILE
        ):
            return f"{name}={value}"
        program = _OPTION_VARIABLES.get(name)
        if program:
            try:
                options = shlex.split(value)
            except ValueError:
                return f"{name}={value}"
            if inline_code([program, *options, "script"]):
                return f"{name}={value}"
    return None
