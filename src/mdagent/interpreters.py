"""Interpreters told to run code written on their command line (``python -c``, ``node -e``).

An allow rule such as ``exec(python3 *)`` is meant for running scripts; with
an inline script the command line *is* the program, and the rule's author
never saw it. :func:`inline_code` recognises such a command from its words
after wrappers are removed (``Segment.core`` of :mod:`mdagent.shellparse`,
so ``sudo env X=1 nice python3 -c …`` counts too); the policy then does not
let an allow pattern cover it unless ``policy.inline_eval: allow``.

Shells (``bash -c``, ``eval``) are not here: the shell parser already marks
them as running code, and no setting lets a pattern cover them.

Options are read the way each interpreter reads them, up to its script
argument, so ``python3 tool.py -c x`` (an argument of tool.py) is not inline
code. Where a reading is uncertain the answer errs towards "inline": the
cost of a wrong "yes" is one question.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class _Interpreter(NamedTuple):
    code: tuple[str, ...]  # options whose value is code: -c, --eval
    letters: str = ""  # short options that take code inside a cluster (perl -lne)
    valued: str = ""  # short options taking a value (attached, or the next word)
    valued_long: tuple[str, ...] = ()  # long options taking the next word as value
    subcommands: tuple[str, ...] = ()  # subcommands that run code: deno eval
    ends: str = ""  # short options after which the rest belongs to a module: python -m


_NODE = _Interpreter(
    ("-e", "-p", "--eval", "--print"),
    "ep",
    "rC",
    ("--require", "--import", "--loader", "--experimental-loader", "--input-type", "--title"),
)
_PWSH = _Interpreter(
    ("-c", "-command", "-e", "-ec", "-encodedcommand"),
    valued_long=(
        "-executionpolicy", "-workingdirectory", "-windowstyle", "-inputformat",
        "-outputformat", "-configurationname", "-settingsfile",
    ),
)  # fmt: skip
_TABLE: dict[str, _Interpreter] = {
    "python": _Interpreter(("-c",), "c", "WXQ", ("--check-hash-based-pycs",), ends="m"),
    "pypy": _Interpreter(("-c",), "c", "WXQ", ends="m"),
    "node": _NODE,
    "nodejs": _NODE,
    "bun": _Interpreter(("-e", "-p", "--eval", "--print"), "", "rc", ("--preload", "--cwd")),
    "deno": _Interpreter(("--eval",), subcommands=("eval",)),
    "perl": _Interpreter(("-e", "-E"), "eE", "IMmxdDFiC"),
    "ruby": _Interpreter(("-e",), "e", "CEFIirxWKT", ("--encoding",)),
    "php": _Interpreter(
        ("-r", "-R", "-B", "-E", "--run", "--process-code", "--process-begin", "--process-end"),
        valued="cdfzt",
    ),
    "lua": _Interpreter(("-e",), "e", "l"),
    "luajit": _Interpreter(("-e",), "e", "lbjO"),
    "rscript": _Interpreter(("-e",)),
    "r": _Interpreter(("-e",)),
    "osascript": _Interpreter(("-e",), "e", "ls"),
    "pwsh": _PWSH,
    "powershell": _PWSH,
    "julia": _Interpreter(("-e", "-E", "--eval", "--print"), "", "LptJ", ("--project",)),
    "elixir": _Interpreter(("-e", "--eval"), valued="r", valued_long=("-pa", "-pz")),
    "groovy": _Interpreter(("-e",)),
    "guile": _Interpreter(("-c",), valued="lLxe"),
    "racket": _Interpreter(("-e", "--eval"), "e", "ltfruk"),
}
# python3.12, pypy3, lua5.4, php8.2, ruby3.2, node18: the same program.
_VERSION = re.compile(r"[-_.]?\d+(\.\d+)*[a-z]?$")


def inline_code(argv: tuple[str, ...] | list[str]) -> str | None:
    """How ``argv`` runs code given on its command line (``"python3 -c"``), or None.

    ``argv`` is a command without wrappers (``Segment.core``).
    """
    if not argv:
        return None
    program = argv[0].rsplit("/", 1)[-1]
    base = program.lower()
    spec = _TABLE.get(base) or _TABLE.get(_VERSION.sub("", base))
    if spec is None:
        return None
    words = list(argv[1:])
    skip = False
    for word in words:
        if skip:  # the value of the option before
            skip = False
            continue
        name = word.split("=", 1)[0] if word.startswith("--") else word
        if spec is _PWSH:
            name = _pwsh_option(name.lower())
        if name in spec.code:
            return f"{program} {name}"
        if word in spec.subcommands:
            return f"{program} {word}"
        if word in ("-", "--") or not word.startswith("-"):
            return None  # the script (or stdin, or the end of the options)
        if word.startswith("--") or spec is _PWSH:
            skip = name in spec.valued_long and "=" not in word
            continue
        evaluates, skip = _cluster(word[1:], spec)
        if evaluates:
            return f"{program} {word}"
        if skip is None:
            return None  # python -m: the module's arguments follow
    return None


def _cluster(cluster: str, spec: _Interpreter) -> tuple[bool, bool | None]:
    """A cluster of short options (``lne`` of ``-lne``).

    ``(whether it holds a code option, whether the next word is an option's
    value)``; None for the latter when the options end there (``-m``).
    """
    for i, ch in enumerate(cluster):
        if ch in spec.letters:
            return True, False
        if ch in spec.ends:
            return False, None
        if ch in spec.valued:
            return False, i == len(cluster) - 1  # the rest, or else the next word, is its value
    return False, False


def _pwsh_option(name: str) -> str:
    """PowerShell accepts a prefix of a parameter name (``-com``, ``-ex``): the full name."""
    if len(name) >= 2 and "-command".startswith(name):
        return "-command"
    if len(name) >= 4 and "-encodedcommand".startswith(name):
        return "-encodedcommand"
    full = [v for v in _PWSH.valued_long if len(name) >= 3 and v.startswith(name)]
    return full[0] if len(full) == 1 else name
