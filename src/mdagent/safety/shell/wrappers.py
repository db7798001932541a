"""Wrapper programs: the commands that run another command (``env``, ``nice``,
``timeout``, ``sudo``, ``xargs``…), and how each reads its options.

The policy's deny rules must see the program that really runs:
``FOO=1 nohup timeout -s KILL 5 rm -rf x`` runs ``rm -rf x``.
:func:`read_wrappers` takes the leading assignments and wrappers off a
command's words (:data:`WRAPPERS` holds each wrapper's options, from its
manual) and says what it learnt on the way: each wrapper's view
(``stages``), the folders it changes to, code it runs (``flock -c``,
``watch``), arguments it adds at run time (``xargs``), and why what runs
could not be read (an option not in the table, a program named at run
time). The walker (:mod:`mdagent.safety.shell.shellparse`) then marks such a
segment ``unchecked`` rather than guess.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from mdagent.safety.shell.words import ASSIGNMENT, COMPUTED, INTEGER, LITERAL

_DURATION = re.compile(r"(\d+(\.\d*)?|\.\d+)[smhd]?|inf(inity)?")


class _UnreadOption(ValueError):
    """A wrapper option the table cannot read: what follows it is not known to run."""


def unwrap(argv: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``argv`` without leading assignments, wrapper programs and their options.

    ``FOO=1 nohup timeout -s KILL 5 rm -rf x`` -> ``rm -rf x``. Where a
    wrapper's options cannot be read (an option it does not know), what
    follows the wrapper is returned;
    :class:`~mdagent.safety.shell.shellparse.Segment` marks such a segment
    ``unchecked``.
    """
    return read_wrappers(tuple(argv), (LITERAL,) * len(argv)).core


@dataclass(frozen=True)
class _Wrapper:
    """How a wrapper reads its options: GNU getopt with ``+``, so they end at
    the first operand. Long options may be abbreviated, as getopt allows."""

    flags: str = ""  # short options without a value
    valued: str = ""  # short options that take a value (attached or next word)
    optional: str = ""  # short options whose value, if any, is attached (xargs -i{})
    long_flags: frozenset[str] = frozenset()
    long_valued: frozenset[str] = frozenset()
    long_optional: frozenset[str] = frozenset()  # --opt or --opt=value
    operands: int = 0  # words before the command: timeout's duration, flock's file
    assignments: bool = False  # NAME=value words before the command (env, sudo)


def _wrapper(
    flags: str = "",
    valued: str = "",
    optional: str = "",
    long_flags: str = "",
    long_valued: str = "",
    long_optional: str = "",
    operands: int = 0,
    assignments: bool = False,
) -> _Wrapper:
    return _Wrapper(
        flags,
        valued,
        optional,
        frozenset(long_flags.split()),
        frozenset(long_valued.split()),
        frozenset(long_optional.split()),
        operands,
        assignments,
    )


# The options of each wrapper, from its manual (GNU coreutils, util-linux,
# procps, findutils, sudo, bash builtins). An option missing here makes the
# segment unchecked rather than guessed at.
WRAPPERS: dict[str, _Wrapper] = {
    "env": _wrapper(
        "i0v", "uCS", "", "ignore-environment null debug list-signal-handling",
        "unset chdir split-string", "ignore-signal default-signal block-signal",
        assignments=True,
    ),
    "command": _wrapper("pvV"),
    "builtin": _wrapper(),
    "exec": _wrapper("cl", "a"),
    "nohup": _wrapper(),
    "nice": _wrapper("", "n", "", "", "adjustment"),
    "time": _wrapper("apqvV", "fo", "", "append portability quiet verbose", "format output"),
    "timeout": _wrapper(
        "v", "sk", "", "foreground preserve-status verbose", "signal kill-after", operands=1
    ),
    "sudo": _wrapper(
        "AbEHiKklnPSsVvBN", "CDghpRrtTUu", "",
        "askpass background bell login no-update non-interactive preserve-groups "
        "remove-timestamp reset-timestamp set-home shell stdin list validate",
        "chdir chroot close-from command-timeout group host other-user prompt role type user",
        "preserve-env",
        assignments=True,
    ),
    "doas": _wrapper("nsL", "uC"),
    "xargs": _wrapper(
        "0prtx", "aEdILnPs", "eil",
        "null interactive no-run-if-empty verbose exit open-tty show-limits",
        "arg-file delimiter max-args max-procs max-chars process-slot-var",
        "eof replace max-lines",
    ),
    "stdbuf": _wrapper("", "ioe", "", "", "input output error"),
    "setsid": _wrapper("cfw", "", "", "ctty fork wait"),
    "chrt": _wrapper(
        "abdefimoprRv", "TPD", "",
        "all-tasks batch deadline ext fifo idle max other pid rr reset-on-fork verbose",
        "sched-runtime sched-period sched-deadline",
    ),
    "ionice": _wrapper("pPut", "cn", "", "pid pgid uid ignore", "class classdata"),
    "taskset": _wrapper("acp", "", "", "all-tasks cpu-list pid", operands=1),
    "flock": _wrapper(
        "sexnoFu", "wE", "", "shared exclusive nonblock nb close no-fork unlock verbose",
        "timeout wait conflict-exit-code", operands=1,
    ),
    "watch": _wrapper(
        "bcCegprtwx", "nq", "d",
        "beep color no-color errexit chgexit precise no-rerun no-title no-wrap "
        "no-linewrap exec",
        "interval equexit", "differences",
    ),
    "busybox": _wrapper(),
    "chroot": _wrapper("", "", "", "skip-chdir", "userspec groups", operands=1),
    "unbuffer": _wrapper("p"),
    "eatmydata": _wrapper(),
}  # fmt: skip


@dataclass(frozen=True)
class Unwrapped:
    """A command's words with the leading assignments and wrappers taken off
    (``core``, with the ``kinds`` of its words), and what the wrappers said."""

    core: tuple[str, ...]
    kinds: tuple[str, ...]
    stages: tuple[tuple[str, ...], ...]
    code: str | None = None  # shell code a wrapper runs (flock -c, watch)
    unknown: str | None = None  # why what runs could not be read
    chdirs: tuple[str | None, ...] = ()  # folders wrappers change to (None: unknown)
    appends: str | None = None  # the wrapper that adds arguments at run time (xargs)
    assigned: tuple[str, ...] = ()  # NAME=value words set for the command (also env -S's)


# Wrapper options that change the folder the command runs in; None: to a
# folder not named on the line (a login shell's home, a new root).
_CHDIR_OPTIONS = {
    "env": {"C": "", "chdir": ""},
    "sudo": {"D": "", "chdir": "", "i": None, "login": None},
    "chroot": {},
}


def read_wrappers(argv: tuple[str, ...], kinds: tuple[str, ...]) -> Unwrapped:  # noqa: C901
    """Take the leading assignments and wrappers off ``argv``, whose words are
    of ``kinds`` (:data:`~mdagent.safety.shell.words.LITERAL`...), reading each
    wrapper's options with :data:`WRAPPERS`."""
    words, how = list(argv), list(kinds)
    stages: list[tuple[str, ...]] = []
    chdirs: list[str | None] = []
    assigned: list[str] = []
    code = appends = None

    def assignments() -> None:
        while words and ASSIGNMENT.match(words[0]):
            assigned.append(words[0])
            del words[0], how[0]

    def done(unknown: str | None = None) -> Unwrapped:
        if words and (not stages or stages[-1] != tuple(words)):
            stages.append(tuple(words))
        return Unwrapped(
            tuple(words),
            tuple(how),
            tuple(stages),
            code,
            unknown,
            tuple(chdirs),
            appends,
            tuple(assigned),
        )

    assignments()
    while words:
        if how[0] != LITERAL:
            return done(f"the program `{words[0]}` is named at run time")
        name = words[0].rsplit("/", 1)[-1]
        spec = WRAPPERS.get(name)
        if spec is None:
            break
        stages.append(tuple(words))
        del words[0], how[0]
        try:
            end, options = _options(name, spec, words, how)
        except _UnreadOption as exc:
            return done(f"`{name}` {exc}")
        split = options.get("S") or options.get("split-string")
        del words[:end], how[:end]
        for option, known in _CHDIR_OPTIONS.get(name, {}).items():
            if option in options:
                chdirs.append(options[option] if known is not None else None)
        if name == "chroot":
            chdirs.append(None)  # every path is read inside the new root
        if name == "xargs":
            appends = name
        if split is not None:
            # env -S: the string is split into words that precede the rest.
            try:
                extra = shlex.split(split, comments=False, posix=True)
            except ValueError:
                return done("`env -S` string that cannot be split")
            if any(c in split for c in "$\\"):
                return done("`env -S` string with escapes or variables")
            if any(word.startswith("#") for word in extra):
                # env ends the string at a word that starts with `#` (a comment);
                # a quoted `'#'` does not: which one it was, shlex has forgotten.
                return done("`env -S` string with a `#` comment")
            words[:0], how[:0] = extra, [LITERAL] * len(extra)
        if spec.assignments:
            assignments()
        for _ in range(spec.operands):
            if not words:
                break
            if how[0] != LITERAL:
                return done(f"`{name}` operand `{words[0]}` is computed at run time")
            if name == "timeout" and not _DURATION.fullmatch(words[0]):
                return done(f"`timeout` duration `{words[0]}` not understood")
            del words[0], how[0]
        if name == "chrt" and words and INTEGER.fullmatch(words[0]):
            del words[0], how[0]  # the priority, unless --max or --pid mode
        if name == "flock" and words[:1] in (["-c"], ["--command"]):
            code = words[1] if len(words) > 1 else ""
            del words[:], how[:]
        elif name == "watch" and words and "x" not in options and "exec" not in options:
            code = " ".join(words)  # watch runs its words through sh -c
    return done()


def _options(
    name: str, spec: _Wrapper, words: list[str], how: list[str]
) -> tuple[int, dict[str, str]]:
    """Read a wrapper's options from ``words``: the index of its first operand
    and the options seen (by letter or long name, with their values)."""
    seen: dict[str, str] = {}
    longs = spec.long_flags | spec.long_valued | spec.long_optional
    i = 0
    while i < len(words):
        word = words[i]
        if how[i] != LITERAL:
            if word.startswith("-") or how[i] == COMPUTED:
                raise _UnreadOption(f"option `{word}` is computed at run time")
            break
        if word == "--":
            return i + 1, seen
        if name == "env" and word == "-":
            seen["i"] = ""
        elif name == "nice" and re.fullmatch(r"--?\d+", word):
            seen["n"] = word.lstrip("-")
        elif word.startswith("--"):
            key, eq, value = word[2:].partition("=")
            matches = [o for o in longs if o == key] or [o for o in longs if o.startswith(key)]
            if len(matches) != 1:
                raise _UnreadOption(f"option `{word}` not understood")
            key = matches[0]
            if key in spec.long_valued and not eq:
                if i + 1 >= len(words) or how[i + 1] != LITERAL:
                    raise _UnreadOption(f"option `{word}` without a literal value")
                i += 1
                value = words[i]
            elif key in spec.long_flags and eq:
                raise _UnreadOption(f"option `{word}` takes no value")
            seen[key] = value
        elif word.startswith("-") and len(word) > 1:
            j = 1
            while j < len(word):
                letter = word[j]
                if letter in spec.flags:
                    seen[letter] = ""
                    j += 1
                    continue
                if letter in spec.valued:
                    value = word[j + 1 :]
                    if not value:
                        if i + 1 >= len(words) or how[i + 1] != LITERAL:
                            raise _UnreadOption(f"option `-{letter}` without a literal value")
                        i += 1
                        value = words[i]
                elif letter in spec.optional:
                    value = word[j + 1 :]
                else:
                    raise _UnreadOption(f"option `-{letter}` not understood")
                seen[letter] = value
                break
        else:
            break
        i += 1
    return i, seen
