"""Splitting a shell command into the simple commands it would run.

The policy judges ``exec`` calls per segment: ``git status && rm -rf x`` is two
commands, and an allow rule for the first must not let the second through.
:func:`parse` walks bashlex's syntax tree and returns every simple command,
including those inside command and process substitutions, subshells, groups,
loops, conditionals, function bodies and ``sh -c``/``eval`` strings, plus one
segment per redirection that writes a file (``> out.txt``): writing a file is
an action of its own that an allow rule for the command does not cover.

Whatever bashlex cannot parse, or parses but leaves partly unexamined (a
command substitution inside ``${x:-...}`` or a here-document, arithmetic),
raises :class:`Unparseable`: the policy then never allows the command by a
rule, so a person must approve it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


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
    without leading assignments and wrappers (``env``, ``nohup``, ``sudo``,
    ``xargs``, ``timeout 10``...): the program that actually runs, which deny
    rules also see.
    """

    text: str
    argv: tuple[str, ...]
    core: tuple[str, ...] = ()

    @property
    def plain(self) -> str:
        """The words after quote removal, joined by spaces."""
        return " ".join(self.argv)


# Redirections that only read, or that duplicate/close a descriptor, are not
# actions of their own; these targets are harmless to write to.
_WRITING = {">", ">>", ">|", "&>", "&>>", "<>", ">&"}
_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr", "-"}
# Text bashlex keeps as an opaque string although bash would run a command in it.
_HIDDEN_COMMANDS = ("$(", "`", "$[", "<(", ">(")
# Programs that run their string argument as shell code.
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"}
_WRAPPERS = {
    "env", "command", "exec", "nohup", "builtin", "nice", "time", "timeout",
    "sudo", "doas", "xargs", "stdbuf", "setsid", "chrt", "ionice",
}  # fmt: skip
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_NUMBER = re.compile(r"[0-9.]+[smhd]?")
_MAX_DEPTH = 8


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

    ``FOO=1 nohup timeout 5 rm -rf x`` -> ``rm -rf x``. A heuristic for deny
    rules and ``sh -c`` detection: it may strip too little, never too much
    of what runs.
    """
    words = list(argv)
    wrapped = False
    while words:
        word = words[0]
        if _ASSIGNMENT.match(word) or word in _WRAPPERS:
            wrapped = wrapped or word in _WRAPPERS
        elif wrapped and (word.startswith("-") or _NUMBER.fullmatch(word)):
            pass  # a wrapper's option or argument: nice -n 5, timeout 10s
        else:
            break
        words.pop(0)
    return tuple(words)


def _parse(command: str, depth: int) -> list[Segment]:
    if depth > _MAX_DEPTH:
        raise Unparseable("commands nested too deeply")
    if "\x00" in command:
        raise Unparseable("NUL byte in command")
    # bash's own notion of lines and blanks (str.splitlines/strip know more).
    if all(
        not line.strip(" \t") or line.lstrip(" \t").startswith("#") for line in command.split("\n")
    ):
        return []
    import bashlex  # only exec calls need it; keeps `agent /name` startup lean

    try:
        trees = bashlex.parse(command)
    except Exception as exc:  # bashlex raises many types (ParsingError, NotImplementedError, ...)
        raise Unparseable(f"cannot parse command: {exc}") from None
    out: list[Segment] = []
    walker = _Walker(command, depth, out)
    try:
        for tree in trees:
            walker.visit(tree)
    except Unparseable:
        raise
    except Exception as exc:  # a node shape this walker does not know
        raise Unparseable(f"cannot parse command: {exc}") from None
    return out


class _Walker:
    def __init__(self, source: str, depth: int, out: list[Segment]) -> None:
        self.source = source
        self.depth = depth
        self.out = out

    def text(self, node: Any) -> str:
        start, end = node.pos
        return self.source[start:end]

    def visit(self, node: Any) -> None:
        kind = node.kind
        if kind == "command":
            self.command(node)
        elif kind in ("list", "pipeline", "if", "for", "while", "until", "function"):
            for part in node.parts:
                self.visit(part)
        elif kind == "compound":
            for part in node.list:
                self.visit(part)
            for redirect in getattr(node, "redirects", ()) or ():
                self.redirect(redirect)
        elif kind in ("word", "assignment"):
            self.word(node)
        elif kind == "redirect":
            self.redirect(node)
        elif kind in ("commandsubstitution", "processsubstitution"):
            self.visit(node.command)
        elif kind in ("parameter", "heredoc"):
            self.opaque(getattr(node, "value", ""))
        elif kind in ("operator", "reservedword", "pipe", "tilde"):
            pass
        else:
            raise Unparseable(f"unsupported shell construct: {kind}")

    def opaque(self, text: str) -> None:
        # bashlex does not look inside ${...} or here-document bodies; bash
        # would run a command substitution found there.
        if any(marker in text for marker in _HIDDEN_COMMANDS):
            raise Unparseable("command substitution bashlex does not parse")

    def word(self, node: Any) -> None:
        for part in getattr(node, "parts", ()) or ():
            self.visit(part)

    def command(self, node: Any) -> None:
        # The command is listed before what its words nest, so segments read
        # in source order: ``echo $(rm x)`` gives ``echo $(rm x)``, ``rm x``.
        index = len(self.out)
        texts: list[str] = []
        argv: list[str] = []
        for part in node.parts:
            if part.kind == "redirect":
                self.redirect(part)
                continue
            if part.kind not in ("word", "assignment"):
                self.visit(part)
                continue
            texts.append(self.text(part))
            argv.append(part.word)
            self.word(part)
        if texts:
            core = unwrap(argv)
            self.out.insert(index, Segment(" ".join(texts), tuple(argv), core))
            self.inner_script(core)

    def inner_script(self, core: tuple[str, ...]) -> None:
        """Add the segments of the code ``sh -c CODE`` or ``eval ARGS`` would run."""
        if not core:
            return
        program = core[0].rsplit("/", 1)[-1]
        code = None
        if program == "eval":
            code = " ".join(core[1:])
        elif program in _SHELLS:
            for i, word in enumerate(core[1:], start=1):
                if word.startswith("-") and not word.startswith("--") and "c" in word:
                    code = core[i + 1] if i + 1 < len(core) else ""
                    break
        if code:
            self.out.extend(_parse(code, self.depth + 1))

    def redirect(self, node: Any) -> None:
        target = node.output
        if not hasattr(target, "kind"):  # a descriptor number: 2>&1
            return
        self.visit(target)
        heredoc = getattr(node, "heredoc", None)
        if heredoc is not None:
            self.visit(heredoc)
        if node.type in _WRITING and target.word not in _HARMLESS_TARGETS:
            op = node.type
            words = (op, target.word)
            self.out.append(Segment(f"{op} {self.text(target)}", words, words))
