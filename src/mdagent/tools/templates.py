"""Templates of declared tools: ``{param}`` placeholders in argv, shell, http and ``with``.

``{name}`` stands for the argument ``name``, or its schema ``default`` when
the call leaves it out; ``{{`` and ``}}`` are literal braces. What a value
becomes depends on where it lands:

- **argv** (``run:``): an element that is exactly ``"{name}"`` becomes one
  element, an array becomes one element per item, and an absent optional
  value removes the element. An element with more around the placeholder
  (``"--limit={limit}"``) is string-substituted, and is removed as a whole
  when any value it names is absent, so optional flags disappear cleanly.
- **shell** (``shell:``): every value is quoted with :func:`shlex.quote`
  for the quoting context it lands in (bare, ``'...'`` or ``"..."``), so
  it reaches the command as literal text, never as syntax. An array is one
  quoted word per item (one word inside quotes); an absent value is nothing.
  Positions where the shell reads a value again (a comment, ``$``, ``[[ -eq
  ]]``, arithmetic, subscripts, ``eval``, ``sh -c`` scripts...) are refused
  by :func:`check_shell`; :func:`check_argv` refuses the few argv positions
  that are code (``[sh, -c, "..{x}.."]``, ssh's remote command).

Option values: quoting cannot stop a value that starts with ``-`` from
being read as an option. Given ``allow_options``, :func:`expand_argv` and
:func:`expand_shell` refuse such a value where it would start an argument
(not the program, not after a ``--``) unless its parameter is listed.
- **url** (``http.url``): values are percent-encoded (nothing kept safe, so
  a value cannot add a path segment or a query parameter); array items are
  encoded one by one and joined by ``,``; an absent value is empty.
- **values** (``http.json``/``headers``/``body``, ``with``): a string that
  is exactly ``"{name}"`` becomes the typed value (a number stays a number,
  an array an array) and an absent value removes its key or list item;
  other strings are string-substituted.

String substitution writes strings as they are, arrays as their items
joined by spaces and everything else as JSON (``true``, ``3``, ``{"a": 1}``).
A ``null`` argument counts as absent (models send ``null`` for "not given").
Mapping keys are never templates.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Collection, Iterable, Mapping
from functools import lru_cache
from urllib.parse import quote

from mdagent.safety.shell.lexicon import (
    ARITHMETIC_TESTS,
    BUILTIN_WRAPPERS,
    CODE_BUILTINS,
    DECLARERS,
    NAME_TAKERS,
    NAME_TESTS,
    PREFIX_KEYWORDS,
    SHELLS,
    SYNTAX_OPENERS,
)

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "OptionValueError",
    "TemplateError",
    "as_text",
    "check_argv",
    "check_shell",
    "expand_argv",
    "expand_shell",
    "expand_url",
    "expand_value",
    "placeholders",
]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


class TemplateError(ValueError):
    """A malformed template, or a value a template cannot be expanded with."""


# The classes here are plain ones (no dataclasses): this module is on the
# path of every `agent /name` of a `run:` tool, where importing dataclasses
# would cost ~4 ms.


class _Slot:
    """A ``{name}`` placeholder in a parsed template."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return type(other) is _Slot and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"_Slot({self.name!r})"


_ABSENT = object()


@lru_cache(maxsize=1024)
def _parse(template: str) -> tuple[str | _Slot, ...]:
    """Literal text and placeholders, in order (``{{``/``}}`` already unescaped)."""
    parts: list[str | _Slot] = []
    text: list[str] = []
    i, n = 0, len(template)
    while i < n:
        char = template[i]
        if char == "{" and template.startswith("{{", i):
            text.append("{")
            i += 2
        elif char == "}" and template.startswith("}}", i):
            text.append("}")
            i += 2
        elif char == "{":
            end = template.find("}", i + 1)
            if end < 0:
                raise TemplateError(f"unclosed '{{' at column {i + 1} in {template!r}")
            name = template[i + 1 : end]
            if not name:
                raise TemplateError(
                    f"empty placeholder '{{}}' at column {i + 1} in {template!r}"
                    " (write {{}} for literal braces)"
                )
            if not _NAME.fullmatch(name):
                raise TemplateError(
                    f"invalid placeholder '{{{name}}}' at column {i + 1} in {template!r}"
                    " (a placeholder is {param}; write {{ and }} for literal braces)"
                )
            if text:
                parts.append("".join(text))
                text = []
            parts.append(_Slot(name))
            i = end + 1
        elif char == "}":
            raise TemplateError(
                f"stray '}}' at column {i + 1} in {template!r} (write }}}} for a literal brace)"
            )
        else:
            text.append(char)
            i += 1
    if text:
        parts.append("".join(text))
    return tuple(parts)


def placeholders(template: Any) -> set[str]:
    """The parameter names a template refers to.

    ``template`` may be a string, or a list or mapping of templates (searched
    recursively; mapping keys are not templates). Other values (numbers,
    ``None``) have none. Raises :class:`TemplateError` (a ``ValueError``)
    for a malformed template: an unclosed ``{``, an empty ``{}``, a stray
    ``}`` or a name that is not a parameter name.
    """
    if isinstance(template, str):
        return {p.name for p in _parse(template) if isinstance(p, _Slot)}
    if isinstance(template, Mapping):
        template = list(template.values())
    if isinstance(template, list | tuple):
        names: set[str] = set()
        for item in template:
            names |= placeholders(item)
        return names
    return set()


def _lookup(
    name: str, args: Mapping[str, Any], params: Mapping[str, Any], required: Collection[str]
) -> Any:
    """The value for ``{name}``: the argument, else the default, else ``_ABSENT``."""
    value = args.get(name)
    if value is not None:
        return value
    schema = params.get(name)
    if schema is None and name not in args:
        raise TemplateError(f"placeholder {{{name}}} names no parameter")
    if isinstance(schema, Mapping) and schema.get("default") is not None:
        return schema["default"]
    if name in required:
        # Validation rejects such a call before any template is expanded;
        # reaching here means a caller skipped it.
        raise TemplateError(f"missing required argument: {name}")
    return _ABSENT


def _scalar_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def as_text(value: Any) -> str:
    """A value as template text: strings as they are, arrays space-joined, the rest as JSON."""
    if isinstance(value, list | tuple):
        return " ".join(_scalar_text(v) for v in value)
    return _scalar_text(value)


def expand_argv(
    template: list[Any],
    args: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    required: Collection[str] = (),
    allow_options: Collection[str] | None = None,
) -> list[str]:
    """The argv a ``run:`` template gives for ``args``; never goes through a shell.

    See the module docstring for the rules. Non-string template items
    (``5`` in YAML) become their text.

    ``allow_options``: ``None`` takes every value as meant (a person's);
    otherwise a value that starts an element with ``-`` — after the program
    (the first element), before any ``--`` element, and after only empty
    values in the same element (``{prefix}{name}``, prefix ``""``) — raises
    :class:`OptionValueError` unless its parameter is in ``allow_options``.
    """
    argv: list[str] = []
    after_dashes = False  # a literal "--" element came earlier
    for index, item in enumerate(template):
        if not isinstance(item, str):
            argv.append(_scalar_text(item))
            continue
        parts = _parse(item)
        if len(parts) == 1 and isinstance(parts[0], _Slot):
            name = parts[0].name
            value = _lookup(name, args, params, required)
            if value is _ABSENT:
                continue
            guard = not after_dashes
            _check_option(name, value, guard and index > 0, guard, True, allow_options)
            if isinstance(value, list | tuple):
                argv.extend(_scalar_text(v) for v in value)
            else:
                argv.append(_scalar_text(value))
            continue
        after_dashes = after_dashes or item == "--"
        pieces = []
        for part in parts:
            if isinstance(part, str):
                pieces.append(part)
                continue
            value = _lookup(part.name, args, params, required)
            if value is _ABSENT:
                break
            # The value starts the element when nothing before it in the
            # element is text: `{prefix}{name}` with an empty prefix.
            first = not "".join(pieces) and index > 0 and not after_dashes
            _check_option(part.name, value, first, False, False, allow_options)
            pieces.append(as_text(value))
        else:
            argv.append("".join(pieces))
    return argv


# -- options -------------------------------------------------------------------
#
# Quoting makes a value one literal word, but a word that starts with "-" is
# still read as an option by most programs (`grep {pattern} f` with "-r", `git
# {ref}` with "--upload-pack=…"). Where that can happen is known from the
# template alone; whether to refuse is the caller's choice (a person's typed
# value is taken as meant, a model's is not), so expansion takes the set of
# parameters allowed to start with "-" and refuses the others.


class OptionValueError(TemplateError):
    """A value that starts with ``-`` where the program would read it as an option."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"the value of {name!r} starts with '-', so the program would read it as an"
            " option; refused for a model's call. The tool's declaration can allow it with"
            f" `option: true` on the parameter {name!r}, or by putting `--` before"
            f" {{{name}}} in its template"
        )
        self.name = name


def _check_option(
    name: str, value: Any, first: bool, rest: bool, split: bool, allow: Collection[str] | None
) -> None:
    """Refuse ``value`` if it would start an option word (see :class:`OptionValueError`).

    ``first``: the value's first item starts a word; ``rest``: further array
    items are words of their own (``split``) and start words too.
    """
    if allow is None or name in allow or not (first or rest):
        return
    if split and isinstance(value, list | tuple):
        items = [_scalar_text(v) for v in value]
        risky = (items[:1] if first else []) + (items[1:] if rest else [])
    else:
        risky = [as_text(value)] if first else []
    if any(item.startswith("-") for item in risky):
        raise OptionValueError(name)


# -- words that are code -------------------------------------------------------
#
# Some programs take a word and run it as code, however it is quoted: a shell's
# `-c` script, ssh's remote command (the remote shell re-reads the joined
# words). A placeholder there is pasted into code as raw text.

_SSH_VALUE_OPTIONS = set("BbcDEeFIiJLlmOoPpQRSWw")


def _code_position(words: list[str | None]) -> str | None:
    """Why the word after ``words`` (one command's words so far) is run as code, if it is.

    ``None`` in ``words`` is a word that is not literal (it holds a value or
    an expansion).
    """
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1] if word else None
        rest = words[i + 1 :]
        # A program named at run time (`$SHELL`, `{prog}`) may be a shell: fail closed.
        if base in SHELLS or (i == 0 and word is None):
            j, script = 0, False
            while j < len(rest) and (rest[j] or "x")[0] in "-+":
                if rest[j] in ("-o", "+o", "-O", "+O"):  # they take a value
                    j += 1
                elif not rest[j].startswith("--") and "c" in rest[j][1:]:
                    script = True
                j += 1
            if script and j >= len(rest):  # the next word is the -c script
                shown = word if word is not None else "a program named at run time"
                return f"as the script of `{shown} -c` (run as code)"
        elif base in ("su", "runuser") and rest[-1:] in (["-c"], ["--command"]):
            return f"as the command of `{word} -c` (run as code)"
        elif base == "ssh":
            j = 0
            while j < len(rest) and (rest[j] or "x").startswith("-"):
                takes_value = len(rest[j]) == 2 and rest[j][1] in _SSH_VALUE_OPTIONS
                j += 2 if takes_value else 1
            if j < len(rest):  # rest[j] is the destination; after it, the remote command
                return f"in the remote command of `{word}` (the remote shell re-reads it)"
    return None


# -- shell -------------------------------------------------------------------
#
# Quoting a value is only safe if we know the quoting context it lands in:
# shlex.quote's '...' pasted inside '...' would *close* the author's quotes
# and leave the value bare. So the literal text is scanned with a small model
# of sh's quoting and words, and each placeholder gets the quoting its
# context needs. Places where the shell reads a value again as code or as
# arithmetic, however it is quoted, are refused rather than guessed:
#
# - after a backslash, in a comment, right after `$`, after a here-document;
# - inside ${...}, $'...', backticks, $((...)), ((...)), $[...];
# - in an array subscript (`a[{i}]=`, `a=([{i}]=x)`): arithmetic;
# - inside [[ ... ]], as an operand of -eq/-ne/-lt/-le/-gt/-ge (arithmetic)
#   or of -v/-R (a variable name, whose subscript is arithmetic), and as the
#   operand of -v/-R of test/[;
# - in the arguments of builtins that evaluate them or take variable names:
#   eval, let, trap, source/., alias, read, mapfile, printf -v, unset, ...;
#   for declare/typeset/local/readonly/export only the value of a literal
#   `name=` (and no options such as -i, -a, -n) is accepted;
# - in the value of PS1-PS4, PROMPT_COMMAND, BASH_ENV, ENV (expanded again);
# - as the script of `sh -c`/`bash -c`/`su -c`, or ssh's remote command.

_TOP, _SQ, _DQ, _BRACE, _ANSI = "top", "sq", "dq", "brace", "ansi"
_TICK, _ARITH = "backtick", "arith"
_BLANKS = " \t"
_OPERATORS = "\n;&|()<>"
_QUOTED, _VALUE = "\x01", "\x02"  # a quoted character, a value, in a word's shape

_GLUED_NAME = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*\Z")  # text a bare value would lengthen
_NAME_EQ = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_SUBSCRIPT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)?\[[^\]]*\Z")
_EXPANDED_VARIABLES = re.compile(r"(PS[0-4]|PROMPT_COMMAND|BASH_ENV|ENV)=")
# Builtins whose arguments are code or variable names (test, printf -v and
# the declarers are judged word by word below).
_EVALUATING = {
    **CODE_BUILTINS,
    **{
        name: why
        for name, why in NAME_TAKERS.items()
        if name not in DECLARERS and name not in ("printf", "test", "[")
    },
}


class _Word:
    """A shell word being read: its shape, literal text and the values in it."""

    __slots__ = ("shape", "text", "values", "dynamic")

    def __init__(self) -> None:
        self.shape = ""  # as written unquoted; quoted characters _QUOTED, values _VALUE
        self.text = ""  # after quote removal
        self.values: list[str] = []
        self.dynamic = False  # holds an expansion ($x, $(...), ...)

    @property
    def literal(self) -> str | None:
        return None if self.values or self.dynamic else self.text

    @property
    def program_name(self) -> str | None:
        """The word as a program's name: literal, or ``/NAME`` when only a folder is expanded.

        ``"$HOME"/bin/sh`` runs a shell whatever ``$HOME`` holds: its basename
        is known, so a ``-c`` script after it is still code.
        """
        if self.values or not self.dynamic:
            return self.literal
        folder, slash, name = self.text.rpartition("/")
        if not slash or not name or any(c in name for c in "$`\\"):
            return None
        return "/" + name


class _Command:
    """The simple command being read: its words so far and the one in progress."""

    __slots__ = ("words", "word", "cond", "redirect")

    def __init__(self) -> None:
        self.words: list[_Word] = []
        self.word: _Word | None = None
        self.cond = False  # inside [[ ... ]]
        self.redirect = False  # the word in progress is a redirection target

    def current(self) -> _Word:
        if self.word is None:
            self.word = _Word()
        return self.word

    def program(self) -> tuple[int, str | None]:
        """Index of the program's word in ``words`` (len when not read yet) and its text."""
        wrapped = False
        for i, word in enumerate(self.words):
            if _NAME_EQ.match(word.shape) and not wrapped:
                continue
            text = word.literal
            if text in BUILTIN_WRAPPERS:
                wrapped = True
                continue
            if wrapped and text is not None and text.startswith("-"):
                continue
            return i, text
        return len(self.words), None


class _Frame:
    """One open quoting or nesting level: its state, the text that closes it, its command."""

    __slots__ = ("state", "closer", "command")

    def __init__(self, state: str, closer: str | None, command: _Command) -> None:
        self.state = state
        self.closer = closer
        self.command = command


class _ShellScanner:
    """Reads a shell template into literal text and ``(name, context, first, rest)`` slots."""

    def __init__(self, template: str) -> None:
        self.template = template
        self.plan: list[str | tuple[str, str, bool, bool, tuple[str, ...]]] = []
        self.stack = [_Frame(_TOP, None, _Command())]
        self.escaped = False  # the previous character was an active backslash
        self.comment = False
        self.heredoc = False
        self.dollar = False  # the previous character was an active `$`

    def refuse(self, name: str, where: str) -> TemplateError:
        return TemplateError(
            f"placeholder {{{name}}} cannot be used {where} in shell template {self.template!r}"
        )

    # placeholders ------------------------------------------------------------

    def slot(self, name: str) -> None:
        frame = self.stack[-1]
        problem = self.context_problem(frame.state)
        if problem:
            raise self.refuse(name, problem)
        command = frame.command
        word = command.current()
        problem = self.word_problem(command, word)
        if problem:
            raise self.refuse(name, problem)
        # Only values so far (`{prefix}{name}`): this one starts the word
        # when they are empty, known at expansion time.
        at_start = word.shape.strip(_VALUE) == ""
        before = tuple(word.values) if at_start else ()
        # A word that opens with an expansion (`$x{name}`, `"$1"{name}`) may
        # start with the value too: the expansion may be empty, and `grep
        # $x{pattern}` would read a value `-r` as an option. Checked always.
        opens_expanded = word.dynamic and word.shape.lstrip(_VALUE)[:1] in ("$", _QUOTED)
        index, program = command.program()
        guarded = (
            command.cond
            or command.redirect
            or program in SYNTAX_OPENERS
            or any(w.literal == "--" for w in command.words[index + 1 :])
        )
        is_program = index == len(command.words) and not _NAME_EQ.match(word.shape)
        context = frame.state if frame.state in (_SQ, _DQ) else _TOP
        first = (at_start or opens_expanded) and not guarded and not is_program
        rest = context == _TOP and not guarded
        word.shape += _VALUE
        word.values.append(name)
        self.plan.append((name, context, first, rest, before))
        self.dollar = False

    def context_problem(self, state: str) -> str | None:
        if self.escaped:
            return "after a backslash"
        if self.heredoc:
            return "after a here-document (<<)"
        if self.comment:
            return "in a comment (a newline in the value would end it)"
        if self.dollar:
            return "right after `$` (write ${{name}} for a shell variable)"
        return {
            _BRACE: "inside ${...}",
            _ANSI: "inside $'...'",
            _TICK: "inside backticks (use $(...) instead)",
            _ARITH: "inside arithmetic ((...))",
        }.get(state)

    def word_problem(self, command: _Command, word: _Word) -> str | None:
        if command.redirect:
            return None  # a file name (`read line < {file}`), never read again
        if _SUBSCRIPT.match(word.shape):
            return "in an array subscript (bash evaluates it as arithmetic)"
        variable = _EXPANDED_VARIABLES.match(word.shape)
        if variable:
            return f"in the value of {variable.group(1)} (the shell expands it again)"
        previous = command.words[-1].literal if command.words else None
        if command.cond:
            if previous in ARITHMETIC_TESTS:
                return f"as an operand of {previous} in [[ ... ]] (bash evaluates it as arithmetic)"
            if previous in NAME_TESTS:
                return (
                    f"as the operand of {previous} (a variable name; its subscript is arithmetic)"
                )
            return None
        index, program = command.program()
        if index == len(command.words):
            return None  # the program itself
        args = command.words[index + 1 :]
        if program in ("test", "[") and previous in NAME_TESTS:
            return f"as the operand of {previous} (a variable name; its subscript is arithmetic)"
        if program in _EVALUATING:
            return f"in the arguments of `{program}` (it {_EVALUATING[program]})"
        if program in DECLARERS:
            options = [w.literal for w in args if (w.literal or "x")[0] in "-+"]
            if options:
                return f"in `{program} {options[0]}` (it may evaluate values or names)"
            if not _NAME_EQ.match(word.shape):
                return f"in `{program}` other than after a literal `name=`"
        if program == "printf" and any((w.literal or "").startswith("-v") for w in args):
            return "in `printf -v` (it takes a variable name)"
        return _code_position([w.program_name for w in command.words])

    # literal text ------------------------------------------------------------

    def text(self, part: str) -> None:
        self.plan.append(part)
        i = 0
        # After a here-document starts, its body is not shell syntax; no
        # placeholder may follow, so there is nothing left to track.
        while i < len(part) and not self.heredoc:
            i = self.char(part, i)

    def char(self, part: str, i: int) -> int:  # noqa: C901
        """Read ``part[i]`` (and what it starts); the index of the next character."""
        char = part[i]
        frame = self.stack[-1]
        state, command = frame.state, frame.command
        self.dollar = False
        if self.escaped:
            self.escaped = False
            if char != "\n" and state in (_TOP, _DQ, _ANSI):
                self.add(command, char, quoted=True)
        elif self.comment:
            self.comment = char != "\n"
            if char == "\n":
                self.end_command(command)
        elif state == _SQ:
            if char == "'":
                self.stack.pop()
            else:
                self.add(command, char, quoted=True)
        elif state == _ANSI:
            if char == "\\":
                self.escaped = True
            elif char == "'":
                self.stack.pop()
        elif state == _DQ:
            if char == "\\":
                self.escaped = True
            elif char == '"':
                self.stack.pop()
            elif char in "`$":
                return self.expansion(part, i, command)
            else:
                self.add(command, char, quoted=True)
        elif state != _TOP:  # ${...}, `...`, arithmetic: only their nesting matters
            if char == "\\":
                self.escaped = True
            elif char == "'":
                self.stack.append(_Frame(_SQ, None, _Command()))
            elif char == '"':
                self.stack.append(_Frame(_DQ, None, _Command()))
            elif char == frame.closer:
                self.stack.pop()
            elif char in "`$":
                return self.expansion(part, i, command)
            elif char == "(":
                self.stack.append(_Frame(state, ")", command))
            elif char == "{" and state == _BRACE:
                self.stack.append(_Frame(_BRACE, "}", command))
            elif char == "[" and state == _ARITH:
                self.stack.append(_Frame(_ARITH, "]", command))
        else:
            return self.top(part, i, command, frame)
        return i + 1

    def top(self, part: str, i: int, command: _Command, frame: _Frame) -> int:
        """Read unquoted shell text at ``part[i]``: words, operators, quotes, comments."""
        char = part[i]
        nxt = part[i + 1] if i + 1 < len(part) else ""
        if char == "\\":
            self.escaped = True
            command.current()
        elif char == "'":
            command.current()
            self.stack.append(_Frame(_SQ, None, command))
        elif char == '"':
            command.current()
            self.stack.append(_Frame(_DQ, None, command))
        elif char == frame.closer and not command.cond:
            self.end_command(command)
            self.stack.pop()
        elif char in "`$":
            return self.expansion(part, i, command)
        elif char in "<>" and nxt == "(":  # process substitution
            command.current().dynamic = True
            self.stack.append(_Frame(_TOP, ")", _Command()))
            return i + 2
        elif char == "#" and command.word is None:
            self.comment = True
        elif char in _BLANKS:
            self.end_word(command)
        elif char in _OPERATORS:
            return self.operator(part, i, command)
        else:
            self.add(command, char, quoted=False)
        return i + 1

    def operator(self, part: str, i: int, command: _Command) -> int:
        char = part[i]
        nxt = part[i + 1] if i + 1 < len(part) else ""
        if char in "<>":
            if command.cond:  # string comparison inside [[ ... ]]
                self.end_word(command)
                return i + 1
            word = command.word
            if word is not None and word.shape.isdigit():
                command.word = None  # a file descriptor number: 2>file
            self.end_word(command)
            if part.startswith("<<<", i):
                command.redirect = True
                return i + 3
            if char == "<" and nxt == "<":
                self.heredoc = True
                return i + 2
            command.redirect = True
            return i + 2 if nxt in "<>&|" and nxt else i + 1
        if char == "&" and nxt == ">":
            self.end_word(command)
            command.redirect = True
            return i + 2
        if command.cond:  # &&, ||, ( and ) belong to the [[ ... ]] expression
            self.end_word(command)
            return i + 1
        if char == "(" and nxt == "(" and command.word is None:  # the (( ... )) command
            self.end_command(command)
            self.stack += [_Frame(_ARITH, ")", command), _Frame(_ARITH, ")", command)]
            return i + 2
        self.end_command(command)
        if char == "(":
            self.stack.append(_Frame(_TOP, ")", _Command()))
        return i + 1

    def expansion(self, part: str, i: int, command: _Command) -> int:
        """``$...`` or a backtick at ``part[i]``, in unquoted text or inside "..."."""
        char = part[i]
        nxt = part[i + 1] if i + 1 < len(part) else ""
        state = self.stack[-1].state
        word = command.current() if state in (_TOP, _DQ) else _Word()
        if char == "`":
            word.dynamic = True
            self.stack.append(_Frame(_TICK, "`", _Command()))
            return i + 1
        if part.startswith("$((", i):
            word.dynamic = True
            self.stack += [_Frame(_ARITH, ")", _Command()), _Frame(_ARITH, ")", _Command())]
            return i + 3
        if nxt == "[":
            word.dynamic = True
            self.stack.append(_Frame(_ARITH, "]", _Command()))
            return i + 2
        if nxt == "(":
            word.dynamic = True
            self.stack.append(_Frame(_TOP, ")", _Command()))
            return i + 2
        if nxt == "{":
            word.dynamic = True
            self.stack.append(_Frame(_BRACE, "}", _Command()))
            return i + 2
        if nxt == "'" and state != _DQ:
            word.dynamic = True
            self.stack.append(_Frame(_ANSI, None, command))
            return i + 2
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):  # $$, $?, $1...: one unit
            word.dynamic = True
            if state in (_TOP, _DQ):
                self.add(command, "$" + nxt, quoted=state == _DQ)
            return i + 2
        if nxt.isalpha() or nxt == "_":
            word.dynamic = True
        else:
            self.dollar = True  # a lone `$`: what follows decides what it is
        if state in (_TOP, _DQ):
            self.add(command, "$", quoted=state == _DQ)
        return i + 1

    # words and commands --------------------------------------------------------

    @staticmethod
    def add(command: _Command, char: str, *, quoted: bool) -> None:
        word = command.current()
        word.shape += _QUOTED if quoted else char
        word.text += char

    def end_word(self, command: _Command) -> None:
        word, command.word = command.word, None
        if word is None:
            return
        if command.redirect:
            command.redirect = False
            return
        text = word.literal
        if command.cond:
            if text in ARITHMETIC_TESTS and command.words and command.words[-1].values:
                name = command.words[-1].values[0]
                raise self.refuse(
                    name, f"as an operand of {text} in [[ ... ]] (bash evaluates it as arithmetic)"
                )
            if text == "]]":
                self.end_command(command)
                return
        elif not command.words and text in PREFIX_KEYWORDS:
            return  # `if`, `then`, `!`, `{`...: the command starts after it
        elif not command.words and text == "[[":
            command.cond = True
        command.words.append(word)

    def end_command(self, command: _Command) -> None:
        self.end_word(command)
        command.words, command.word, command.cond, command.redirect = [], None, False, False


@lru_cache(maxsize=256)
def _shell_plan(
    template: str,
) -> tuple[str | tuple[str, str, bool, bool, tuple[str, ...]], ...]:
    """Literal text and ``(name, context, first, rest, before)`` slots, or TemplateError.

    ``first``: the value starts a word a program may read as an option, if
    the values of ``before`` (the placeholders earlier in the same word,
    with no text between) are empty; ``rest``: each further array item
    starts a word (see :func:`_check_option`).
    """
    scanner = _ShellScanner(template)
    for part in _parse(template):
        if isinstance(part, _Slot):
            scanner.slot(part.name)
        else:
            scanner.text(part)
    if len(scanner.stack) > 1 and any(not isinstance(step, str) for step in scanner.plan):
        # Either the script is broken or our model of it is: in both cases
        # we cannot tell which quoting a value needs.
        raise TemplateError(f"unbalanced quotes or brackets in shell template {template!r}")
    top = scanner.stack[0].command
    scanner.end_word(top)
    if top.cond and any(not isinstance(step, str) for step in scanner.plan):
        raise TemplateError(f"unclosed [[ in shell template {template!r}")
    return tuple(scanner.plan)


def check_shell(template: str) -> None:
    """Raise :class:`TemplateError` if ``template`` cannot be expanded safely.

    Beyond :func:`placeholders`' checks, every position where the shell
    would read a value again as code, arithmetic or a variable name is
    refused (see the comment above :class:`_ShellScanner` for the list):
    no quoting of the value is right there.
    """
    _shell_plan(template)


def check_argv(template: list[Any]) -> None:
    """Raise :class:`TemplateError` if a ``run:`` template pastes a value into code.

    An argv never meets a shell, except where the program itself runs a word
    as code: ``[sh, -c, "echo {x}"]`` (pass values as arguments after the
    script instead: ``[sh, -c, 'echo "$1"', sh, "{x}"]``), ssh's remote
    command.
    """
    words: list[str | None] = []
    for item in template:
        if isinstance(item, str):
            names = [p.name for p in _parse(item) if isinstance(p, _Slot)]
            if names:
                problem = _code_position(words)
                if problem:
                    raise TemplateError(
                        f"placeholder {{{names[0]}}} cannot be used {problem} in run template"
                        f" {template!r}"
                    )
                words.append(None)
                continue
            words.append("".join(_parse(item)))  # no placeholders: all text
        else:
            words.append(_scalar_text(item))


def _quote(text: str) -> str:
    """``text`` as one literal shell word, quoted even where shlex would leave it
    bare but ``[[ ... ]]`` would read an operator (``-L``, ``==``)."""
    word = shlex.quote(text)
    return f"'{text}'" if word == text and text[:1] in "-=" else word


def _shell_word(value: Any, context: str) -> str:
    if isinstance(value, list | tuple):
        if context == _TOP:
            return " ".join(_quote(_scalar_text(v)) for v in value)
        value = as_text(value)  # inside quotes the author asked for one word
    word = _quote(_scalar_text(value))
    if context == _SQ:  # close the author's '...', add the quoted value, reopen
        return f"'{word}'"
    if context == _DQ:
        return f'"{word}"'
    return word


def expand_shell(
    template: str,
    args: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    required: Collection[str] = (),
    allow_options: Collection[str] | None = None,
) -> str:
    """The ``sh -c`` script a ``shell:`` template gives for ``args``.

    Every value is shell-quoted for the context it lands in, so the command
    sees it as one literal word (or, inside the author's quotes, literal
    text within that word). An absent optional value expands to nothing.
    Don't wrap placeholders in your own quotes to protect them: they are
    protected already; quotes around them only join them with the text
    around (``"Hello, {name}!"`` is one word).

    ``allow_options``: ``None`` takes every value as meant (a person's);
    otherwise a value that starts a word with ``-`` — outside the program
    name, ``[[ ... ]]`` and redirections, and with no ``--`` word earlier in
    its command — raises :class:`OptionValueError` unless its parameter is
    in ``allow_options``.
    """
    plan = _shell_plan(template)
    if allow_options is not None:
        for step in plan:
            if not isinstance(step, str):
                name, context, first, rest, before = step
                value = _lookup(name, args, params, required)
                if value is _ABSENT:
                    continue
                values = (_lookup(b, args, params, required) for b in before)
                first = first and all(v is _ABSENT or as_text(v) == "" for v in values)
                _check_option(name, value, first, rest, context == _TOP, allow_options)
    out: list[str] = []
    for step in plan:
        if isinstance(step, str):
            out.append(step)
            continue
        value = _lookup(step[0], args, params, required)
        if value is _ABSENT:
            continue
        word = _shell_word(value, step[1])
        if word[:1] not in ("'", '"') and _GLUED_NAME.search("".join(out)):
            # Right after `$name` a bare value would lengthen the name (`$x`
            # then `a-b` is `$xa-b`: another variable, maybe a secret's); an
            # empty '' ends the name and leaves the value a word of its own.
            word = "''" + word
        out.append(word)
    return "".join(out)


def expand_url(
    template: str,
    args: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    required: Collection[str] = (),
) -> str:
    """The URL an ``http.url`` template gives: every value percent-encoded.

    Nothing in a value is kept safe (``/``, ``?``, ``&``, ``#`` are encoded
    too), so a value stays inside the path segment or query value it was put
    in. Array items are encoded one by one and joined with ``,``; an absent
    optional value is empty.
    """
    steps = [p if isinstance(p, str) else (p.name, None) for p in _parse(template)]
    return _fill(steps, args, params, required, _url_part)


def _url_part(value: Any, _context: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(quote(_scalar_text(v), safe="") for v in value)
    return quote(_scalar_text(value), safe="")


def _fill(
    steps: Iterable[str | tuple[str, Any]],
    args: Mapping[str, Any],
    params: Mapping[str, Any],
    required: Collection[str],
    render: Callable[[Any, Any], str],
) -> str:
    """Literal text kept, each ``(name, context)`` rendered; absent values vanish."""
    out = []
    for step in steps:
        if isinstance(step, str):
            out.append(step)
            continue
        name, context = step[0], step[1]
        value = _lookup(name, args, params, required)
        if value is not _ABSENT:
            out.append(render(value, context))
    return "".join(out)


def expand_value(
    template: Any,
    args: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    required: Collection[str] = (),
) -> Any:
    """A JSON-like template (``http.json``, ``headers``, ``body``, ``with``) expanded.

    A string that is exactly ``"{name}"`` becomes the typed value; inside a
    mapping or list, an absent optional value removes its key or item (a
    whole template that is an absent value gives ``None``). Other strings are
    string-substituted; an absent value in them is empty. Numbers, booleans
    and ``None`` pass through.
    """
    value = _expand(template, args, params, required)
    return None if value is _ABSENT else value


def _expand(template: Any, args: Mapping[str, Any], params: Mapping[str, Any], required) -> Any:
    if isinstance(template, str):
        parts = _parse(template)
        if len(parts) == 1 and isinstance(parts[0], _Slot):
            return _lookup(parts[0].name, args, params, required)
        out = []
        for part in parts:
            if isinstance(part, str):
                out.append(part)
                continue
            value = _lookup(part.name, args, params, required)
            if value is not _ABSENT:
                out.append(as_text(value))
        return "".join(out)
    if isinstance(template, Mapping):
        expanded = {k: _expand(v, args, params, required) for k, v in template.items()}
        return {k: v for k, v in expanded.items() if v is not _ABSENT}
    if isinstance(template, list | tuple):
        items = [_expand(v, args, params, required) for v in template]
        return [v for v in items if v is not _ABSENT]
    return template
