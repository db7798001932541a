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
behind a wrapper option not in :data:`~mdagent.safety.shell.wrappers.WRAPPERS`,
a shell reading a pipe), which the policy counts as matching every deny rule.

This module is the walker: it reads the syntax tree and refuses what the
grammar may read differently from bash. How one word's text reads is
:mod:`mdagent.safety.shell.words`'s; taking wrappers (``env``, ``sudo``…) off a
command is :mod:`mdagent.safety.shell.wrappers`'s; what one command does that its
words do not show (builtins, ``find -exec``, options that write a file) is
:mod:`mdagent.safety.shell.understanding`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from mdagent.safety.shell.grammar import BLANKS, fields, misreading, syntax_tree
from mdagent.safety.shell.lexicon import KEYWORDS
from mdagent.safety.shell.understanding import (
    hidden_commands,
    option_outputs,
    reads_script_from_stdin,
    shell_code,
    why_dynamic,
)
from mdagent.safety.shell.words import (
    BRACES,
    COMPUTED,
    DQ_ESCAPE,
    ESCAPE,
    GLOB,
    HEREDOC_ESCAPE,
    HIDDEN_OR_PROCESS,
    KIND_ORDER,
    LITERAL,
    PATTERN,
    PLAIN_EXPANSION,
    SUBSCRIPT_CODE,
    ansi_c,
    hides_command,
    unescape,
)
from mdagent.safety.shell.wrappers import Unwrapped, read_wrappers


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
#: How deep shell code run by a command (``eval``, ``sh -c``, a here-document or
#: here-string fed to a shell) may nest before the line is refused as unparseable.
MAX_DEPTH = 8

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
_HEREDOC_DELIMITER = re.compile(r"\\?([\w.@%+:,-]+)|'([\w.@%+:,-]+)'|\"([\w.@%+:,-]+)\"")


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


def _parse(command: str, depth: int) -> list[Segment]:
    if depth > MAX_DEPTH:
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
    tree = syntax_tree(source)
    root = tree.root_node
    if root.has_error:
        raise Unparseable("cannot parse command: syntax error")
    walker = _Walker(source, depth)
    try:
        problem = misreading(source, root)
        if problem:
            raise Unparseable(problem)
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
            elif self.source[node.start_byte + 1 : node.start_byte + 2] not in BLANKS:
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
            for field, child in fields(node):
                if not child.is_named or child.type == "comment":
                    continue
                if field in ("variable", "value", "initializer", "condition", "update"):
                    self.word(child)
                else:
                    self.statement(child)
        elif kind == "function_definition":
            for field, child in fields(node):
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
            if seg.unchecked is None and reads_script_from_stdin(seg.core):
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
        for field, child in fields(node):
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
        if any(reads_script_from_stdin(s.core) for s in readers):
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
        unwrapped = read_wrappers(argv, kinds)
        inner, hidden = hidden_commands(argv, unwrapped)
        unchecked = unwrapped.unknown or hidden
        dynamic = unwrapped.unknown or why_dynamic(argv, kinds, unwrapped)
        stages = unwrapped.stages + tuple(s for i in inner for s in i.stages)
        segment = Segment(text, argv, unwrapped.core, stages, dynamic, unchecked, unwrapped.chdirs)
        self.out.insert(index, segment)
        for offset, (path, kind) in enumerate(option_outputs(unwrapped.core, unwrapped.kinds), 1):
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
        kinds = tuple(max((self.kind(n) for n in group), key=KIND_ORDER.index) for group in groups)
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
            plain = ESCAPE.sub("", self.text(node))
            return PATTERN if GLOB.search(plain) or BRACES.search(plain) else LITERAL
        if kind in ("brace_expression", "regex", "extglob_pattern"):
            return PATTERN
        if kind == "string":
            parts = [c for c in node.named_children if c.type != "string_content"]
            return COMPUTED if parts else LITERAL
        if kind in ("concatenation", "command_name", "variable_assignment", "array", "number"):
            if kind == "number" and node.named_children:
                return COMPUTED
            kinds = [self.kind(c) for c in node.children]
            return max(kinds, key=KIND_ORDER.index) if kinds else LITERAL
        return COMPUTED

    def inner_script(self, unwrapped: Unwrapped) -> None:
        """Add the segments of the shell code the command runs (:func:`shell_code`)."""
        for code in shell_code(unwrapped):
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
        dynamic = why_dynamic(argv, kinds, Unwrapped(argv, kinds, (argv,)))
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
            if SUBSCRIPT_CODE.search(self.unquote(node)):
                raise Unparseable("command substitution in a quoted array subscript")
        elif kind == "word":
            text = self.text(node)
            # `<(…)` too: bash runs one in `${x:-<(cmd)}`, where the grammar sees a word.
            if hides_command(text, HIDDEN_OR_PROCESS):
                raise Unparseable("command substitution the grammar did not read")
            if "\n" in text.replace("\\\n", ""):
                # The grammar may run a word on into the next line (``\rm``
                # there); bash ends the command at the newline.
                raise Unparseable("word across lines")
        elif kind in ("regex", "extglob_pattern"):
            if hides_command(self.text(node), HIDDEN_OR_PROCESS):
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
        elif kind == "expansion" and not PLAIN_EXPANSION.fullmatch(text):
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
        if any(hides_command(part) for part in literal):
            raise Unparseable("command substitution the grammar did not read")
        if any(SUBSCRIPT_CODE.search(DQ_ESCAPE.sub(unescape, part)) for part in literal):
            raise Unparseable("command substitution in a quoted array subscript")

    def unquote(self, node: Any) -> str:
        """The word after quote removal; expansions stay as written."""
        kind = node.type
        text = self.text(node)
        if kind == "word":
            if re.search(r"[ \t\n]", ESCAPE.sub("", text)):
                raise Unparseable("blank inside a word")  # echo } } is two words to bash
            return ESCAPE.sub(unescape, text)
        if kind == "raw_string":
            return text[1:-1]
        if kind == "ansi_c_string":
            return ansi_c(text[2:-1])
        if kind == "string":
            parts: list[str] = []
            pos = node.start_byte + 1
            for child in node.named_children:
                if child.type in _EXPANSIONS:
                    parts.append(DQ_ESCAPE.sub(unescape, self.text(node, pos, child.start_byte)))
                    parts.append(self.text(child))
                    pos = child.end_byte
            parts.append(DQ_ESCAPE.sub(unescape, self.text(node, pos, node.end_byte - 1)))
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
            c for f, c in fields(node) if c.is_named and f != "body" and c.type != "comment"
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
        if scripts and any(reads_script_from_stdin(s.core) for s in readers):
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
        for field, child in fields(redirect):
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
        for field, child in fields(node):
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
        for field, child in fields(node):
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
        return HEREDOC_ESCAPE.sub(unescape, content)

    def herestring_code(self, node: Any) -> str:
        words = [c for c in node.named_children if c.type != "file_descriptor"]
        return " ".join(self.unquote(w) for w in words)

    def herestring_script(self, node: Any) -> None:
        self.out.extend(_parse(self.herestring_code(node), self.depth + 1))
