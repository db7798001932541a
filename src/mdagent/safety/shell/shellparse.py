"""Splitting a shell command into the simple commands it would run.

The policy judges ``exec`` calls per segment: ``git status && rm -rf x`` is two
commands, and an allow rule for the first must not let the second through.
:func:`parse` walks a tree-sitter bash syntax tree and returns every simple
command, including those inside command and process substitutions (also in
``${x:-...}`` defaults, arithmetic and here-documents), subshells, groups,
loops, conditionals, ``case`` branches, function bodies, ``sh -c``/``eval``
strings and here-documents or here-strings fed to a shell, plus one segment
per redirection that writes a file (``> out.txt``): writing a file is an
action of its own that an allow rule for the command does not cover.
``[ ... ]``, ``[[ ... ]]`` and ``(( ... ))`` are segments of their own too.

Why tree-sitter: it is MIT-licensed like mdagent (bashlex, used before, is
GPLv3+), and tree-sitter-bash is a real bash grammar, covering what bashlex
could not (``case``, ``[[``, arithmetic, here-documents). It never gives up,
though: on a syntax error it returns a tree with error nodes, where bash might
still run part of the line. So a tree with any error or missing node, a
construct this walker does not know, or a place where the grammar is known to
read a line differently from bash raises :class:`Unparseable`: the policy
then never allows the command by a rule, so a person must approve it, and
denies it outright where a deny rule on ``exec`` exists.

Each segment also says how well it was understood (:class:`Segment`):
``dynamic`` when a word is computed at run time or the command evaluates
text as code (``eval``, ``sh -c``, ``${x@P}`` is refused outright,
arithmetic, names with subscripts), which no allow pattern may cover; and
``unchecked`` when even the program that runs is unknown (named at run time,
behind a wrapper option not in :data:`_WRAPPERS`, a shell reading a pipe),
which the policy counts as matching every deny rule.
"""

from __future__ import annotations

import re
import shlex
import threading
from dataclasses import dataclass, replace
from typing import Any

from mdagent.safety.shell.lexicon import (
    ARITHMETIC_TESTS,
    CODE_BUILTINS,
    DECLARERS,
    KEYWORDS,
    NAME_TAKERS,
    SHELLS,
    STDIN_FILES,
)


class Unparseable(ValueError):
    """The command could not be split reliably; it must not be allowed by a rule."""


@dataclass(frozen=True)
class Segment:
    """One simple command (or one file-writing redirection) of a command line.

    ``text`` is the command as written, its words joined by single spaces,
    quoting kept and redirections left out (``git log --format='%H'``); a
    redirection segment reads ``> out.txt``. ``argv`` holds the words after
    quote removal (``["git", "log", "--format=%H"]``): deny rules are checked
    against both forms so quoting cannot dodge them. ``core`` is ``argv``
    without leading assignments and wrappers with their options (``env -u X``,
    ``nohup``, ``sudo -u root``, ``xargs -I{}``, ``timeout -s KILL 10``...):
    the program that actually runs, which deny rules also see; ``stages``
    holds each wrapper's view on the way there (``sudo nice rm``,
    ``nice rm``, ``rm``).

    ``dynamic`` says why no allow pattern may cover the segment (None: every
    word is literal after quote removal and nothing in it runs text as
    code). ``unchecked`` says why deny rules cannot see what it runs (a
    program named at run time, a wrapper option this module does not know):
    the policy counts it as matching every deny rule on ``exec``: also a
    command whose arguments are added at run time (``xargs rm``, ``find
    -exec``), and one that changes what a command name runs (``alias``,
    ``hash -p``, ``enable``, ``BASH_CMDS[ls]=``).

    ``chdirs`` holds the folders wrappers change to before running
    ``core`` (``env -C dir``, ``sudo -D dir``), None where that folder is
    not knowable (``sudo -i`` goes to a home folder, ``chroot``).
    """

    text: str
    argv: tuple[str, ...]
    core: tuple[str, ...] = ()
    stages: tuple[tuple[str, ...], ...] = ()
    dynamic: str | None = None
    unchecked: str | None = None
    chdirs: tuple[str | None, ...] = ()

    @property
    def plain(self) -> str:
        """The words after quote removal, joined by spaces."""
        return " ".join(self.argv)


# Redirections that only read, or that duplicate/close a descriptor, are not
# actions of their own; these targets are harmless to write to.
_WRITING = {">", ">>", ">|", "&>", "&>>", ">&"}
_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr", "-"}
# How each word of a segment was written: literal after quote removal, a
# static pattern (glob or brace expansion: file names, not code), or computed
# at run time (any expansion or substitution).
LITERAL, PATTERN, COMPUTED = "literal", "pattern", "computed"
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_DURATION = re.compile(r"(\d+(\.\d*)?|\.\d+)[smhd]?|inf(inity)?")
_INTEGER = re.compile(r"[+-]?\d+")
_KIND_ORDER = (LITERAL, PATTERN, COMPUTED)
# Unquoted glob characters and brace expansions ({a,b}, {1..3}) in a word.
_GLOB = re.compile(r"[*?[]")
_BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
# ${name}, ${1}, ${#name}: a value read, nothing evaluated or assigned.
_PLAIN_EXPANSION = re.compile(r"\$\{#?([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])\}")
_MAX_DEPTH = 8

# Words and literal text: the node types whose quoting argv removes.
_LITERALS = {
    "word", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation",
    "number", "simple_expansion", "expansion", "command_substitution",
    "process_substitution", "arithmetic_expansion", "brace_expression", "regex",
    "extglob_pattern", "test_operator", "variable_name", "special_variable_name",
}  # fmt: skip
# Nodes inside words and expressions that hold nothing to run but their parts.
_CONTAINERS = {
    "concatenation", "translated_string", "number", "simple_expansion", "expansion",
    "arithmetic_expansion", "brace_expression", "array", "subscript", "command_name",
    "variable_assignment", "binary_expression", "unary_expression",
    "ternary_expression", "postfix_expression", "parenthesized_expression",
}  # fmt: skip
# Parts of one word: bash never reads a blank between their children.
_TIGHT = {
    "concatenation", "simple_expansion", "command_name", "variable_assignment",
    "translated_string", "number", "brace_expression",
}  # fmt: skip
_EXPRESSIONS = {
    "binary_expression", "unary_expression", "ternary_expression", "postfix_expression",
    "parenthesized_expression",
}  # fmt: skip
# Parts of a string or here-document that bash expands.
_EXPANSIONS = {"simple_expansion", "expansion", "command_substitution", "arithmetic_expansion"}
# Text bash would expand although the grammar read it as plain text.
_HIDDEN = ("`", "$(", "${", "$[")
_HIDDEN_OR_PROCESS = (*_HIDDEN, "<(", ">(")
# Bash evaluates an array subscript found in a string as arithmetic, running
# its substitutions: read, printf -v, [[ -v ]], [[ 1 -eq 'a[$(cmd)]' ]], (( )).
_SUBSCRIPT_CODE = re.compile(r"\[[^\]]*(\$\(|`)")
_ESCAPE = re.compile(r"\\(.)", re.S)
_DQ_ESCAPE = re.compile(r'\\([$`"\\\n])')
_HEREDOC_ESCAPE = re.compile(r"\\([$`\\\n])")
_ANSI_C_ESCAPE = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.S
)
_ANSI_C_SIMPLE = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip
# A backslash-newline (an odd run of backslashes before the newline).
_CONTINUATION = re.compile(rb"(?<!\\)(?:\\\\)*(\\\n)")
_ESCAPED_BLANK = re.compile(rb"(?<!\\)(?:\\\\)*(\\[ \t])")
_BLANKS = (b" ", b"\t", b"\n")
_BEFORE_COMMENT = (*_BLANKS, b";", b"&", b"|", b"(", b")")
# Tokens whose text bash reads as one piece (or not at all: comments).
_TOKENS = {
    "word", "raw_string", "ansi_c_string", "string", "string_content", "comment",
    "heredoc_body", "heredoc_content", "regex", "extglob_pattern",
}  # fmt: skip
_HEREDOC_DELIMITER = re.compile(r"\\?([\w.@%+:,-]+)|'([\w.@%+:,-]+)'|\"([\w.@%+:,-]+)\"")

_parser: Any = None
_parser_lock = threading.Lock()


def parse(command: str) -> list[Segment]:
    """The segments of ``command`` in source order; raises :class:`Unparseable`.

    An empty or comment-only command has no segments.
    """
    return _parse(command, 0)


def segments(command: str) -> list[str]:
    """The ``text`` of each segment of ``command``; raises :class:`Unparseable`."""
    return [s.text for s in parse(command)]


def try_parse(command: str) -> list[Segment] | None:
    """Like :func:`parse`, but ``None`` when the command cannot be parsed."""
    try:
        return parse(command)
    except Unparseable:
        return None


def unwrap(argv: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``argv`` without leading assignments, wrapper programs and their options.

    ``FOO=1 nohup timeout -s KILL 5 rm -rf x`` -> ``rm -rf x``. Where a
    wrapper's options cannot be read (an option it does not know), what
    follows the wrapper is returned; :class:`Segment` marks such a segment
    ``unchecked``.
    """
    return _unwrap(tuple(argv), (LITERAL,) * len(argv)).core


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
_WRAPPERS: dict[str, _Wrapper] = {
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
class _Unwrapped:
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


def _unwrap(argv: tuple[str, ...], kinds: tuple[str, ...]) -> _Unwrapped:  # noqa: C901
    words, how = list(argv), list(kinds)
    stages: list[tuple[str, ...]] = []
    chdirs: list[str | None] = []
    assigned: list[str] = []
    code = appends = None

    def assignments() -> None:
        while words and _ASSIGNMENT.match(words[0]):
            assigned.append(words[0])
            del words[0], how[0]

    def done(unknown: str | None = None) -> _Unwrapped:
        if words and (not stages or stages[-1] != tuple(words)):
            stages.append(tuple(words))
        return _Unwrapped(
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
        spec = _WRAPPERS.get(name)
        if spec is None:
            break
        stages.append(tuple(words))
        del words[0], how[0]
        try:
            end, options = _options(name, spec, words, how)
        except Unparseable as exc:
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
        if name == "chrt" and words and _INTEGER.fullmatch(words[0]):
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
                raise Unparseable(f"option `{word}` is computed at run time")
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
                raise Unparseable(f"option `{word}` not understood")
            key = matches[0]
            if key in spec.long_valued and not eq:
                if i + 1 >= len(words) or how[i + 1] != LITERAL:
                    raise Unparseable(f"option `{word}` without a literal value")
                i += 1
                value = words[i]
            elif key in spec.long_flags and eq:
                raise Unparseable(f"option `{word}` takes no value")
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
                            raise Unparseable(f"option `-{letter}` without a literal value")
                        i += 1
                        value = words[i]
                elif letter in spec.optional:
                    value = word[j + 1 :]
                else:
                    raise Unparseable(f"option `-{letter}` not understood")
                seen[letter] = value
                break
        else:
            break
        i += 1
    return i, seen


def _parse(command: str, depth: int) -> list[Segment]:
    if depth > _MAX_DEPTH:
        raise Unparseable("commands nested too deeply")
    if "\x00" in command:
        raise Unparseable("NUL byte in command")
    if any(c in command for c in "\r\v\f"):
        # Bash reads these as part of a word, tree-sitter as blanks (and
        # backslash-CR-LF as a line continuation): ``a\v#; rm x`` runs rm.
        raise Unparseable("carriage return, vertical tab or form feed in command")
    try:
        source = command.encode("utf-8")
    except UnicodeEncodeError:
        raise Unparseable("command is not valid text") from None
    tree = _syntax_tree(source)
    root = tree.root_node
    if root.has_error:
        raise Unparseable("cannot parse command: syntax error")
    walker = _Walker(source, depth)
    try:
        walker.check_blanks(root)
        walker.statement(root)
    except Unparseable:
        raise
    except Exception as exc:  # a node shape this walker does not know; too deep
        raise Unparseable(f"cannot parse command: {exc!r}") from None
    if walker.input:
        walker.reading(0, f"runs code read from a redirection (`{walker.input}`)")
    if walker.evaluates:
        # Arithmetic or an assignment outside any one command (a for ((...))
        # header, a here-document) may run code hidden in a variable's value:
        # no part of the line is then understood well enough to allow.
        return [s if s.dynamic else replace(s, dynamic=walker.evaluates) for s in walker.out]
    return walker.out


def _syntax_tree(source: bytes) -> Any:
    global _parser
    # One parser per process; a parser is not safe to share between threads.
    with _parser_lock:
        if _parser is None:
            import tree_sitter  # only exec calls need it; keeps start-up lean
            import tree_sitter_bash

            _parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        return _parser.parse(source)


def _hides_command(text: str, markers: tuple[str, ...] = _HIDDEN) -> bool:
    """Whether ``text``, read as plain, holds an unescaped substitution."""
    plain = _ESCAPE.sub("", text)
    return any(marker in plain for marker in markers)


def _ansi_c(body: str) -> str:
    """The text of ``$'body'``: escapes decoded as bash does."""

    def decode(match: re.Match[str]) -> str:
        code = match.group(1)
        try:
            if code[0] in "xuU":
                return chr(int(code[1:], 16))
            if code[0].isdigit():
                return chr(int(code, 8) & 0xFF)
        except (ValueError, OverflowError):
            return match.group(0)
        if code[0] == "c" and len(code) == 2:
            return chr(ord(code[1]) & 0x1F)
        return _ANSI_C_SIMPLE.get(code, match.group(0))

    return _ANSI_C_ESCAPE.sub(decode, body)


def _reads_script_from_stdin(core: tuple[str, ...]) -> bool:
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


def _dynamic(argv: tuple[str, ...], kinds: tuple[str, ...], unwrapped: _Unwrapped) -> str | None:
    """Why no allow pattern may cover this segment, or None when it is fully understood.

    Understood means every word is literal after quote removal (a glob or
    brace expansion in an argument only names files) and nothing in it makes
    bash evaluate text as code or compute what runs.
    """
    for word, kind in zip(argv, kinds, strict=True):
        if kind == COMPUTED:
            return f"`{word}` is computed at run time"
        name = _ASSIGNMENT.match(word)
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


def _hidden(argv: tuple[str, ...], unwrapped: _Unwrapped) -> tuple[list[_Unwrapped], str | None]:
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
    inner: list[_Unwrapped] = []
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
                    inner.append(_unwrap(core[i + 1 : end], kinds[i + 1 : end]))
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


def _runs(unwrapped: _Unwrapped) -> Any:
    """What the program runs besides itself (:func:`mdagent.safety.shell.programs.runs`)."""
    from mdagent.safety.shell.programs import runs

    return runs(unwrapped.core, unwrapped.kinds)


def _code_assignment(unwrapped: _Unwrapped) -> Any:
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
        words += [(w, None) for w in core[1:] if _ASSIGNMENT.match(w)]
        if "n" in "".join(w[1:] for w in core[1:] if w.startswith("-")):
            # declare -n ref=PS4: assigning to ref sets PS4.
            words += [(w.split("=", 1)[1] + "=", None) for w in core[1:] if "=" in w]
    names = [(w, "", None) for w in _names_assigned(program, core[1:])]
    for word, where in words:
        match = _ASSIGNMENT.match(word)
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


def _outputs(core: tuple[str, ...], kinds: tuple[str, ...]) -> list[tuple[str, str]]:
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
            if not all(_INTEGER.fullmatch(w.strip()) for w in around):
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


def _fields(node: Any) -> list[tuple[str | None, Any]]:
    """The children of ``node`` with their field names."""
    return [(node.field_name_for_child(i), child) for i, child in enumerate(node.children)]


class _Walker:
    def __init__(self, source: bytes, depth: int) -> None:
        self.source = source
        self.depth = depth
        self.out: list[Segment] = []
        # Words the grammar hung on a redirection (``rm 2>/dev/null -rf /``)
        # although bash gives them to the command: command node id -> words.
        self.extra: dict[int, list[Any]] = {}
        # Why some part of the line evaluates text (arithmetic, an expansion
        # with an operator): then no segment counts as literal.
        self.evaluates: str | None = None
        # The first input redirection from a file or descriptor (`< f`, `<&3`,
        # `3< <(…)`): a shell on the line may read its code from there, also
        # through `exec < f` or a function the redirection applies to.
        self.input: str | None = None

    def text(self, node: Any, start: int | None = None, end: int | None = None) -> str:
        start = node.start_byte if start is None else start
        end = node.end_byte if end is None else end
        return self.source[start:end].decode("utf-8")

    # -- statements ----------------------------------------------------------------

    def statement(self, node: Any) -> None:  # noqa: C901
        kind = node.type
        if kind in (
            "program", "subshell", "do_group", "if_statement", "elif_clause",
            "else_clause", "while_statement", "list",
        ):  # fmt: skip
            self.statements(node)
        elif kind == "pipeline":
            for i, child in enumerate(c for c in node.named_children if c.type != "comment"):
                start = len(self.out)
                self.statement(child)
                if i:
                    self.piped(start)
        elif kind in ("compound_statement", "negated_command"):
            if node.children and node.children[0].type == "((":
                self.test(node)
            elif self.source[node.start_byte + 1 : node.start_byte + 2] not in _BLANKS:
                # To bash ``{ls;}`` and ``!ls`` are words, not a group or negation.
                raise Unparseable(f"{self.text(node)[0]!r} not followed by a blank")
            else:
                self.statements(node)
        elif kind == "command":
            self.command(node)
        elif kind == "variable_assignment":
            self.simple([node])
        elif kind == "variable_assignments":
            self.simple([c for c in node.named_children if c.type != "comment"])
        elif kind in ("declaration_command", "unset_command"):
            self.simple([c for c in node.children if c.type != "comment"])
        elif kind == "test_command":
            self.test(node)
        elif kind == "redirected_statement":
            self.redirected(node)
        elif kind in ("for_statement", "c_style_for_statement", "case_statement", "case_item"):
            # The words (list, patterns, arithmetic) are expanded, the rest runs.
            if kind == "c_style_for_statement":
                self.evaluates = "a for ((...)) header is evaluated as arithmetic"
            for field, child in _fields(node):
                if not child.is_named or child.type == "comment":
                    continue
                if field in ("variable", "value", "initializer", "condition", "update"):
                    self.word(child)
                else:
                    self.statement(child)
        elif kind == "function_definition":
            for field, child in _fields(node):
                if field == "name":
                    self.word(child)
                elif field == "body":
                    self.statement(child)
                elif field == "redirect":
                    self.no_command_words(self.redirect(child))
                elif child.is_named and child.type != "comment":
                    raise Unparseable(f"unsupported shell construct: {child.type}")
        else:
            raise Unparseable(f"unsupported shell construct: {kind}")

    def statements(self, node: Any) -> None:
        for child in node.named_children:
            if child.type != "comment":
                self.statement(child)

    def piped(self, start: int) -> None:
        """Mark the shells among the segments from ``start`` on, which read a pipe:
        their code is whatever the commands before them print, unknowable here."""
        self.reading(start, "runs code read from a pipe")

    def reading(self, start: int, what: str) -> None:
        """Mark the shells among the segments from ``start`` on that read their
        input as code, which comes from where ``what`` says: unknowable here."""
        for i in range(start, len(self.out)):
            seg = self.out[i]
            if seg.unchecked is None and _reads_script_from_stdin(seg.core):
                why = f"`{seg.text}` {what}"
                self.out[i] = replace(seg, dynamic=seg.dynamic or why, unchecked=why)

    def no_command_words(self, words: list[Any]) -> None:
        """Refuse words after a redirection target where no command takes them."""
        if words:
            raise Unparseable("words after a redirection that no command takes")

    # -- simple commands -----------------------------------------------------------

    def command(self, node: Any) -> None:
        # The command is listed before what its words nest, so segments read
        # in source order: ``echo $(rm x)`` gives ``echo $(rm x)``, ``rm x``.
        index = len(self.out)
        self.check_one_line([c for c in node.children if c.type != "comment"])
        words: list[Any] = []
        herestrings: list[Any] = []
        extra: list[Any] = []
        for field, child in _fields(node):
            if child.type == "comment":
                continue
            if child.type in ("file_redirect", "herestring_redirect"):
                extra += self.redirect(child)
                if child.type == "herestring_redirect":
                    herestrings.append(child)
            elif herestrings and child.start_byte == herestrings[-1].end_byte:
                raise Unparseable("here-string read in pieces")
            elif field in ("name", "argument") or child.type == "variable_assignment":
                if field == "name" and self.text(child) in KEYWORDS:
                    raise Unparseable(f"shell keyword {self.text(child)!r} read as a command")
                words.append(child)
                self.word(child)
            else:
                raise Unparseable(f"unsupported part of a command: {child.type}")
        for word in extra + self.extra.pop(node.id, []):
            words.append(word)
            self.word(word)
        segment = self.segment(words, index)
        # The here-string is the input of all the command runs: the code it
        # runs in turn reads it too (`eval sh <<< CODE`, `sh -c sh <<< CODE`).
        readers = self.out[index:] if segment is not None else []
        if any(_reads_script_from_stdin(s.core) for s in readers):
            for herestring in herestrings:
                self.herestring_script(herestring)

    def simple(self, words: list[Any]) -> None:
        index = len(self.out)
        for word in words:
            self.word(word)
        self.segment(words, index)

    def segment(self, words: list[Any], index: int) -> Segment | None:
        if not words:
            return None
        self.check_one_line(words)
        text, argv, kinds = self.joined(words)
        unwrapped = _unwrap(argv, kinds)
        inner, hidden = _hidden(argv, unwrapped)
        unchecked = unwrapped.unknown or hidden
        dynamic = unwrapped.unknown or _dynamic(argv, kinds, unwrapped)
        stages = unwrapped.stages + tuple(s for i in inner for s in i.stages)
        segment = Segment(text, argv, unwrapped.core, stages, dynamic, unchecked, unwrapped.chdirs)
        self.out.insert(index, segment)
        for offset, (path, kind) in enumerate(_outputs(unwrapped.core, unwrapped.kinds), 1):
            # `git log --output=f` writes f: like `> f`, a write a rule for
            # the command does not cover.
            words = (">", path)
            why = f"`{path}` is computed at run time" if kind == COMPUTED else None
            self.out.insert(index + offset, Segment(f"> {path}", words, words, (words,), why))
        for nested in (unwrapped, *inner):
            self.inner_script(nested)
        return segment

    def check_one_line(self, nodes: list[Any]) -> None:
        """Refuse a command the grammar ran on past the end of its line."""
        nodes = sorted(nodes, key=lambda n: n.start_byte)
        for a, b in zip(nodes, nodes[1:], strict=False):
            gap = self.source[a.end_byte : b.start_byte].replace(b"\\\n", b"")
            if b"\n" in gap:
                raise Unparseable("command continued on the next line")

    def joined(self, nodes: list[Any]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """The text, argv and word kinds of ``nodes``; nodes written without a
        blank between them are one word to bash, wherever the grammar split them."""
        groups: list[list[Any]] = []
        end = -1
        for node in sorted(nodes, key=lambda n: n.start_byte):
            if node.start_byte == end:
                groups[-1].append(node)
            else:
                groups.append([node])
            end = node.end_byte
        texts = ["".join(self.text(n) for n in group) for group in groups]
        argv = tuple("".join(self.unquote(n) for n in group) for group in groups)
        kinds = tuple(max((self.kind(n) for n in group), key=_KIND_ORDER.index) for group in groups)
        return " ".join(texts), argv, kinds

    def kind(self, node: Any) -> str:
        """Whether ``node`` is literal after quote removal, a static pattern, or computed."""
        kind = node.type
        if kind == "$":
            return COMPUTED  # the grammar splits $"text" (a translation) after the $
        if not node.is_named or kind in (
            "raw_string", "ansi_c_string", "test_operator", "variable_name", "comment",
        ):  # fmt: skip
            return LITERAL
        if kind == "word":
            plain = _ESCAPE.sub("", self.text(node))
            return PATTERN if _GLOB.search(plain) or _BRACES.search(plain) else LITERAL
        if kind in ("brace_expression", "regex", "extglob_pattern"):
            return PATTERN
        if kind == "string":
            parts = [c for c in node.named_children if c.type != "string_content"]
            return COMPUTED if parts else LITERAL
        if kind in ("concatenation", "command_name", "variable_assignment", "array", "number"):
            if kind == "number" and node.named_children:
                return COMPUTED
            kinds = [self.kind(c) for c in node.children]
            return max(kinds, key=_KIND_ORDER.index) if kinds else LITERAL
        return COMPUTED

    def inner_script(self, unwrapped: _Unwrapped) -> None:
        """Add the segments of the code ``sh -c CODE``, ``eval ARGS``, ``trap CODE
        SIG``, ``flock FILE -c CODE`` or ``watch CODE`` would run."""
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
        for code in codes:
            if code:
                self.out.extend(_parse(code, self.depth + 1))

    # -- tests and arithmetic ------------------------------------------------------

    def test(self, node: Any) -> None:
        """``[ ... ]``, ``[[ ... ]]`` or ``(( ... ))``: one segment of its own."""
        index = len(self.out)
        if node.children[0].type == "[":
            self.check_single_bracket(node)
        for child in node.named_children:
            if child.type != "comment":
                self.word(child)
        # Tokens written together form one word: (( i++ )) -> "((", "i++", "))".
        atoms = self.atoms(node)
        if node.children[0].type != "((":
            self.check_one_line(atoms)
        text, argv, kinds = self.joined(atoms)
        dynamic = _dynamic(argv, kinds, _Unwrapped(argv, kinds, (argv,)))
        if dynamic and argv[0] == "((":
            self.evaluates = dynamic
        self.out.insert(index, Segment(text, argv, argv, (argv,), dynamic))

    def atoms(self, node: Any) -> list[Any]:
        if not node.is_named or node.type in _LITERALS or not node.children:
            return [node] if node.type != "comment" else []
        return [atom for child in node.children for atom in self.atoms(child)]

    def check_single_bracket(self, node: Any) -> None:
        # ``[`` is an ordinary command to bash: ``<``, ``>``, ``&&``, ``(``...
        # between the brackets are redirections and operators, not a test.
        for child in node.children:
            if child.type in ("binary_expression", "unary_expression"):
                allowed = {"=", "==", "!=", "=~"} if child.type == "binary_expression" else {"!"}
                for part in child.children:
                    if not part.is_named and part.type not in allowed:
                        raise Unparseable(f"{part.type!r} inside [ ]")
                self.check_single_bracket(child)
            elif child.type in _EXPRESSIONS or child.type == "redirected_statement":
                raise Unparseable(f"{child.type} inside [ ]")

    # -- words ---------------------------------------------------------------------

    def word(self, node: Any) -> None:
        """Walk a word or expression for the commands bash would run expanding it."""
        kind = node.type
        if not node.is_named or kind in (
            "variable_name", "special_variable_name", "test_operator", "comment",
        ):  # fmt: skip
            return
        if kind in ("raw_string", "ansi_c_string"):
            if _SUBSCRIPT_CODE.search(self.unquote(node)):
                raise Unparseable("command substitution in a quoted array subscript")
        elif kind == "word":
            text = self.text(node)
            # `<(…)` too: bash runs one in `${x:-<(cmd)}`, where the grammar sees a word.
            if _hides_command(text, _HIDDEN_OR_PROCESS):
                raise Unparseable("command substitution the grammar did not read")
            if "\n" in text.replace("\\\n", ""):
                # The grammar may run a word on into the next line (``\rm``
                # there); bash ends the command at the newline.
                raise Unparseable("word across lines")
        elif kind in ("regex", "extglob_pattern"):
            if _hides_command(self.text(node), _HIDDEN_OR_PROCESS):
                raise Unparseable("command substitution the grammar did not read")
        elif kind == "string":
            self.expanding(node, node.start_byte + 1, node.end_byte - 1)
        elif kind in ("command_substitution", "process_substitution"):
            self.note_evaluation(node)
            start = len(self.out)
            for child in node.named_children:
                if child.type == "file_redirect":  # $(< file)
                    self.no_command_words(self.redirect(child))
                elif child.type != "comment":
                    self.statement(child)
            if self.text(node).startswith(">("):
                # `tee >(sh)`: what runs inside reads what the command writes.
                self.piped(start)
        elif kind in _CONTAINERS:
            self.note_evaluation(node)
            parts = node.children
            if kind in _TIGHT and any(
                a.end_byte != b.start_byte for a, b in zip(parts, parts[1:], strict=False)
            ):
                raise Unparseable(f"blank inside a word ({kind})")
            name = node.child_by_field_name("name") if kind == "variable_assignment" else None
            if name is not None and re.search(r"\s", self.text(name)):
                raise Unparseable("blank inside a word (variable_assignment)")
            for child in node.children:
                self.word(child)
        else:
            raise Unparseable(f"unsupported shell construct: {kind}")

    def note_evaluation(self, node: Any) -> None:
        """Note (or refuse) an expansion that evaluates text rather than reading a value."""
        kind = node.type
        text = self.text(node)
        if kind == "expansion" and re.search(r"@P\s*\}$", text):
            # Prompt expansion runs the substitutions in the variable's value.
            raise Unparseable(f"`{text}` runs its value as code")
        if kind == "arithmetic_expansion" and re.search(r"[A-Za-z_\[]", text[3:]):
            self.evaluates = f"arithmetic `{text}` may run code held in a variable"
        elif kind == "expansion" and not _PLAIN_EXPANSION.fullmatch(text):
            self.evaluates = f"`{text}` is computed at run time"
        elif kind == "subscript":
            self.evaluates = f"subscript `{text}` is evaluated as arithmetic"
        elif kind == "command_substitution" and text.startswith("$(("):
            # bash reads `$((…))` as arithmetic when it can; the grammar, in a
            # here-document, reads it as `$( (…) )`. Its names may hold code.
            self.evaluates = f"`{text}` may be arithmetic that runs code held in a variable"

    def expanding(self, node: Any, start: int, end: int) -> None:
        """Walk a double-quoted string or here-document body between ``start`` and ``end``."""
        literal: list[str] = []
        pos = start
        for child in node.named_children:
            if child.type in _EXPANSIONS:
                literal.append(self.text(node, pos, child.start_byte))
                pos = child.end_byte
                self.word(child)
            elif child.type not in ("string_content", "heredoc_content"):
                raise Unparseable(f"unsupported part of a string: {child.type}")
        literal.append(self.text(node, pos, max(pos, end)))
        if any(_hides_command(part) for part in literal):
            raise Unparseable("command substitution the grammar did not read")
        if any(_SUBSCRIPT_CODE.search(_DQ_ESCAPE.sub(_unescape, part)) for part in literal):
            raise Unparseable("command substitution in a quoted array subscript")

    def unquote(self, node: Any) -> str:
        """The word after quote removal; expansions stay as written."""
        kind = node.type
        text = self.text(node)
        if kind == "word":
            if re.search(r"[ \t\n]", _ESCAPE.sub("", text)):
                raise Unparseable("blank inside a word")  # echo } } is two words to bash
            return _ESCAPE.sub(_unescape, text)
        if kind == "raw_string":
            return text[1:-1]
        if kind == "ansi_c_string":
            return _ansi_c(text[2:-1])
        if kind == "string":
            parts: list[str] = []
            pos = node.start_byte + 1
            for child in node.named_children:
                if child.type in _EXPANSIONS:
                    parts.append(_DQ_ESCAPE.sub(_unescape, self.text(node, pos, child.start_byte)))
                    parts.append(self.text(child))
                    pos = child.end_byte
            parts.append(_DQ_ESCAPE.sub(_unescape, self.text(node, pos, node.end_byte - 1)))
            return "".join(parts)
        if kind in ("concatenation", "command_name", "translated_string", "variable_assignment"):
            parts = []
            pos = node.start_byte
            for child in node.children:
                parts.append(self.text(node, pos, child.start_byte))
                parts.append(self.unquote(child) if child.is_named else self.text(child))
                pos = child.end_byte
            text = "".join(parts)
            return text[1:] if kind == "translated_string" else text
        return text

    # -- redirections --------------------------------------------------------------

    def redirected(self, node: Any) -> None:
        body = node.child_by_field_name("body")
        # Every named child but the body is a redirection, whatever its field
        # name: tree-sitter gives none to a here-string after a loop.
        redirects = [
            c for f, c in _fields(node) if c.is_named and f != "body" and c.type != "comment"
        ]
        target = self.rightmost_command(body)
        extra = [w for r in redirects for w in self.extra_words(r)]
        if extra:
            if target is None:
                raise Unparseable("words after a redirection that no command takes")
            self.extra.setdefault(target.id, []).extend(extra)
        index = len(self.out)
        if body is not None:
            self.statement(body)
        # Whatever reads the redirected input: the body, and for a here-document
        # the pipeline written after its delimiter (cat <<EOF | sh).
        readers = self.out[index:]
        scripts: list[str] = []
        for redirect in redirects:
            if redirect.type == "heredoc_redirect":
                start = len(self.out)
                code = self.heredoc(redirect)
                readers += self.out[start:]
                scripts.append(code)
            elif redirect.type == "herestring_redirect":
                self.redirect(redirect)
                scripts.append(self.herestring_code(redirect))
            else:
                self.redirect(redirect)
        if scripts and any(_reads_script_from_stdin(s.core) for s in readers):
            for code in scripts:
                self.out.extend(_parse(code, self.depth + 1))

    def rightmost_command(self, node: Any) -> Any:
        """The simple command a redirection after ``node`` applies to, if any."""
        while node is not None:
            if node.type == "command":
                return node
            if node.type in ("pipeline", "list", "negated_command"):
                named = [c for c in node.named_children if c.type != "comment"]
                node = named[-1] if named else None
            elif node.type == "redirected_statement":
                node = node.child_by_field_name("body")
            else:
                return None
        return None

    def extra_words(self, redirect: Any) -> list[Any]:
        """Words after a redirection's target: arguments of the command, to bash."""
        out = []
        for field, child in _fields(redirect):
            if field == ("destination" if redirect.type == "file_redirect" else "argument"):
                out.append(child)
            elif redirect.type == "heredoc_redirect" and field == "redirect":
                out += self.extra_words(child)
        return out[1:] if redirect.type == "file_redirect" else out

    def redirect(self, node: Any) -> list[Any]:
        """Walk a file redirection or here-string; the words bash gives the command."""
        if node.type == "herestring_redirect":
            for child in node.named_children:
                if child.type != "file_descriptor":
                    self.word(child)
            return []
        if node.type != "file_redirect":
            raise Unparseable(f"unsupported redirection: {node.type}")
        self.check_one_line(node.children)
        op = None
        destinations = []
        for field, child in _fields(node):
            if field == "destination":
                destinations.append(child)
            elif not child.is_named:
                op = child.type
            elif field != "descriptor":
                raise Unparseable(f"unsupported part of a redirection: {child.type}")
        if not destinations:
            return []  # >&- closes a descriptor
        target = destinations[0]
        self.word(target)
        word = self.unquote(target)
        if op in ("<", "<&") and word not in ("/dev/null", "-") and self.input is None:
            self.input = f"{op} {self.text(target)}"
        duplicate = op in (">&", "<&") and (word.isdigit() or word == "-")
        if op in _WRITING and word not in _HARMLESS_TARGETS and not duplicate:
            words = (op, word)
            kind = self.kind(target)
            dynamic = f"`{self.text(target)}` is computed at run time" if kind == COMPUTED else None
            segment = Segment(f"{op} {self.text(target)}", words, words, (words,), dynamic)
            self.out.append(segment)
        return destinations[1:]

    def heredoc(self, node: Any) -> str:
        """Walk a here-document and what follows its delimiter; the script it feeds."""
        strip_tabs = False
        delimiter = body = end = None
        for field, child in _fields(node):
            kind = child.type
            if kind == "<<-":
                strip_tabs = True
            elif kind == "heredoc_start":
                delimiter = child
            elif kind == "heredoc_body":
                body = child
            elif kind == "heredoc_end":
                end = child
            elif field == "redirect":
                self.redirect(child)  # its extra words went to the command
            elif field == "right" or kind == "pipeline":
                start = len(self.out)
                self.statement(child)
                self.piped(start)
            elif not (field in ("argument", "descriptor", "operator") or kind in ("<<", "|", "|&")):
                raise Unparseable(f"unsupported part of a here-document: {kind}")
        if delimiter is None or body is None or end is None:
            raise Unparseable("here-document without a body")
        self.check_one_line([c for c in node.children if c.end_byte <= delimiter.end_byte])
        match = _HEREDOC_DELIMITER.fullmatch(self.text(delimiter))
        if match is None:
            raise Unparseable("unusual here-document delimiter")
        word = next(g for g in match.groups() if g)
        quoted = self.text(delimiter) != word
        content = self.text(body)
        lines = content.split("\n")
        after = self.source[end.end_byte : end.end_byte + 1]
        if (
            self.text(end) != word
            or after not in (b"", b"\n")
            or any((line.lstrip("\t") if strip_tabs else line) == word for line in lines)
        ):
            raise Unparseable("here-document delimiter read differently")
        if quoted:
            if body.named_children:
                raise Unparseable("expansion in a quoted here-document")
            return content
        self.expanding(body, body.start_byte, body.end_byte)
        return _HEREDOC_ESCAPE.sub(_unescape, content)

    def herestring_code(self, node: Any) -> str:
        words = [c for c in node.named_children if c.type != "file_descriptor"]
        return " ".join(self.unquote(w) for w in words)

    def herestring_script(self, node: Any) -> None:
        self.out.extend(_parse(self.herestring_code(node), self.depth + 1))

    # -- blanks the grammar reads differently -------------------------------------

    def check_blanks(self, root: Any) -> None:
        r"""Refuse the places where the grammar's blanks are not bash's.

        Bash removes a backslash-newline before reading words (``r\<newline>m``
        is ``rm``), reads an escaped blank as part of a word and starts a
        comment only at the start of a word; the grammar skips both as blanks,
        so ``echo \ #x; rm y`` would hide ``rm y`` in a comment.
        """
        spans: list[list[int]] = []
        for match in _CONTINUATION.finditer(self.source):
            start, end = match.span(1)
            if spans and spans[-1][1] == start:
                spans[-1][1] = end
            else:
                spans.append([start, end])
        for start, end in spans:
            before = self.source[start - 1 : start]
            after = self.source[end : end + 1]
            if before and after and before not in _BLANKS and after not in _BLANKS:
                self.check_in_token(root, start, "line continuation inside a word")
        for match in _ESCAPED_BLANK.finditer(self.source):
            self.check_in_token(root, match.start(1), "escaped blank between words")
        for match in re.finditer(rb"#", self.source):
            node = root.descendant_for_byte_range(match.start(), match.end())
            start = match.start()
            if node is None or node.type != "comment" or node.start_byte != start or not start:
                continue
            if self.source[start - 1 : start] not in _BEFORE_COMMENT:
                raise Unparseable("comment that does not start a word")

    def check_in_token(self, root: Any, start: int, problem: str) -> None:
        node = root.descendant_for_byte_range(start, start + 2)
        if node is None or node.type not in _TOKENS:
            raise Unparseable(problem)


def _unescape(match: re.Match[str]) -> str:
    return "" if match.group(1) == "\n" else match.group(1)
