"""What a ``shell:`` template's text means around each ``{slot}``: how to quote it, or why not.

A declared tool's ``shell:`` template is shell text with ``{name}``
placeholders (parsed by :mod:`mdagent.tools.templates`, which expands them).
Quoting a value is only safe if the quoting context it lands in is known,
and some positions are code however a value is quoted. :class:`ShellScanner`
reads the template's literal text with a small model of sh's quoting and
words, and gives, for each slot, the context its value is quoted for
(:data:`TOP`, :data:`SQ`, :data:`DQ`) and whether the value may start an
option word; it refuses the positions where the shell reads a value again.
:func:`code_position` tells which word of a command a program runs as code
(``sh -c``'s script, ssh's remote command), for argv templates too.

The words it knows about sh (shells, builtins, keywords) are
:mod:`mdagent.safety.shell.lexicon`'s, which the command parser reads too.
"""

from __future__ import annotations

import re

from mdagent.safety.shell.lexicon import (
    ARITHMETIC_TESTS,
    ASSIGNMENT,
    BUILTIN_WRAPPERS,
    CODE_BUILTINS,
    DECLARERS,
    NAME_TAKERS,
    NAME_TESTS,
    PREFIX_KEYWORDS,
    REREAD_VARIABLES,
    SHELLS,
    SYNTAX_OPENERS,
)

__all__ = ["DQ", "SQ", "TOP", "ShellScanner", "ShellTemplateError", "code_position", "glued_option"]


class ShellTemplateError(ValueError):
    """A shell template whose text puts a placeholder where no quoting is right,
    or whose quoting the scanner cannot follow (unbalanced quotes, an unclosed ``[[``)."""


# -- words that are code -------------------------------------------------------
#
# Some programs take a word and run it as code, however it is quoted: a shell's
# `-c` script, ssh's remote command (the remote shell re-reads the joined
# words). A placeholder there is pasted into code as raw text.

_SSH_VALUE_OPTIONS = set("BbcDEeFIiJLlmOoPpQRSWw")
# Shell options whose value is the next word: a cluster ending in one of these
# letters (`-o pipefail`, `-eo pipefail`, `+O extglob`), and long ones. fish's
# -c and -C (--command, --init-command) take the code itself as their value.
_SHELL_VALUE_LETTERS = {"fish": "CcDdfOop"}
_SHELL_VALUE_LETTERS_DEFAULT = "Oo"
_SHELL_VALUE_LONG = {
    "--rcfile", "--init-file", "--profile", "--debug", "--debug-output", "--features",
}  # fmt: skip
_SHELL_CODE_LONG = {"--command", "--init-command"}
_SU_CODE_LONG = {"--command", "--session-command"}


def code_position(words: list[str | None]) -> str | None:
    """Why the word after ``words`` (one command's words so far) is run as code, if it is.

    ``None`` in ``words`` is a word that is not literal (it holds a value or
    an expansion).
    """
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1] if word else None
        rest = words[i + 1 :]
        # A program named at run time (`$SHELL`, `{prog}`) may be a shell: fail closed.
        if base in SHELLS or (i == 0 and word is None):
            if _shell_code_next(base, rest):
                shown = word if word is not None else "a program named at run time"
                return f"as the script of `{shown} -c` (run as code)"
        elif base in ("su", "runuser") and _su_code_next(rest[-1:]):
            return f"as the command of `{word} -c` (run as code)"
        elif base == "ssh":
            j = 0
            while j < len(rest) and (rest[j] or "x").startswith("-"):
                takes_value = len(rest[j]) == 2 and rest[j][1] in _SSH_VALUE_OPTIONS
                j += 2 if takes_value else 1
            if j < len(rest):  # rest[j] is the destination; after it, the remote command
                return f"in the remote command of `{word}` (the remote shell re-reads it)"
    return None


def _shell_code_next(shell: str | None, options: list[str | None]) -> bool:
    """Whether the word after a shell's ``options`` is its code: the operand
    after a ``-c`` (``-C``, ``--command``), with the values of options skipped.

    Fails closed: a program named at run time knows every shell's value
    letters, and a word skipped as a value still counts when it reads as a
    ``-c``.
    """
    if shell is None:
        letters = _SHELL_VALUE_LETTERS_DEFAULT + "".join(_SHELL_VALUE_LETTERS.values())
    else:
        letters = _SHELL_VALUE_LETTERS.get(shell, _SHELL_VALUE_LETTERS_DEFAULT)
    code = False  # a -c was read; its code not yet
    j = 0
    while j < len(options):
        word = options[j]
        if word is None and not code and shell is not None:
            return True  # a shell's word known at run time may be `-c`, or empty before one
        if not word or word[0] not in "-+":
            return False  # the code (or a script file) comes before the word after
        j += 1
        if word.startswith("--"):
            name, equals, _ = word.partition("=")
            code = code or (name in _SHELL_CODE_LONG and not equals)
            takes_value = name in _SHELL_VALUE_LONG and not equals
        else:
            code = code or "c" in word[1:] or "C" in word[1:]
            takes_value = word[-1] in letters and word[-1] not in "cC"
        if takes_value and j < len(options):
            value = options[j]
            code = code or (value is not None and value[:1] in ("-", "+") and "c" in value[1:])
            j += 1
    return code


def _su_code_next(last: list[str | None]) -> bool:
    """Whether the word after ``su``'s or ``runuser``'s ``last`` word is its
    command: after ``-c`` (alone or ending a cluster: ``-lc``) or ``--command``."""
    word = last[0] if last else None
    if word is None or word[:1] != "-":
        return False
    if word.startswith("--"):
        return word in _SU_CODE_LONG
    return "c" in word[1:]


def glued_option(text: str) -> str | None:
    """The option a word's literal ``text`` opens, a value glued on
    (``--command=`` gives ``--command``, ``-c`` gives ``-c``), or None.

    A value pasted there is that option's value, as the word after the option
    would be.
    """
    if text[:1] != "-" or len(text) < 2:
        return None
    return text.partition("=")[0] if text.startswith("--") else text


# -- the scanner ---------------------------------------------------------------
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
# - in the value of a variable the shell reads again (PS0-PS4, PROMPT_COMMAND,
#   BASH_ENV, ENV: the lexicon's REREAD_VARIABLES);
# - as the script of `sh -c`/`bash -c`/`su -c`, or ssh's remote command.

# The quoting contexts a slot can land in (the second item of a plan's slot):
# unquoted text, inside '...', inside "...". The other states are nestings
# no slot is accepted in.
TOP, SQ, DQ = "top", "sq", "dq"
_BRACE, _ANSI = "brace", "ansi"
_TICK, _ARITH = "backtick", "arith"
_BLANKS = " \t"
_OPERATORS = "\n;&|()<>"
_QUOTED, _VALUE = "\x01", "\x02"  # a quoted character, a value, in a word's shape

_SUBSCRIPT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)?\[[^\]]*\Z")
# `PS4=`, and `PS4+=`, `PS4[0]=` (element 0 is the variable itself) too.
_EXPANDED_VARIABLES = re.compile("(" + "|".join(sorted(REREAD_VARIABLES)) + r")(\[[^\]]*\])?\+?=")
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
            if ASSIGNMENT.match(word.shape) and not wrapped:
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


class ShellScanner:
    """Reads a shell template into literal text and ``(name, context, first, rest, before)`` slots.

    Give it the template's parts in order, :meth:`text` for literal text and
    :meth:`slot` for a placeholder's name, then take the plan from
    :meth:`finish`. Each raises :class:`ShellTemplateError` for a position
    no quoting makes safe.
    """

    def __init__(self, template: str) -> None:
        self.template = template
        self.plan: list[str | tuple[str, str, bool, bool, tuple[str, ...]]] = []
        self.stack = [_Frame(TOP, None, _Command())]
        self.escaped = False  # the previous character was an active backslash
        self.comment = False
        self.heredoc = False
        self.dollar = False  # the previous character was an active `$`

    def refuse(self, name: str, where: str) -> ShellTemplateError:
        return ShellTemplateError(
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
        is_program = index == len(command.words) and not ASSIGNMENT.match(word.shape)
        context = frame.state if frame.state in (SQ, DQ) else TOP
        first = (at_start or opens_expanded) and not guarded and not is_program
        rest = context == TOP and not guarded
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
            if not ASSIGNMENT.match(word.shape):
                return f"in `{program}` other than after a literal `name=`"
        if program == "printf" and any((w.literal or "").startswith("-v") for w in args):
            return "in `printf -v` (it takes a variable name)"
        # A value glued to an option (`--command={x}`, `-c{x}`, `{prefix}-c{x}` with an
        # empty prefix) is that option's value, as the word after it would be.
        names = [w.program_name for w in command.words]
        option = glued_option(word.text)
        return code_position(names) or (code_position([*names, option]) if option else None)

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
            if char != "\n" and state in (TOP, DQ, _ANSI):
                self.add(command, char, quoted=True)
        elif self.comment:
            self.comment = char != "\n"
            if char == "\n":
                self.end_command(command)
        elif state == SQ:
            if char == "'":
                self.stack.pop()
            else:
                self.add(command, char, quoted=True)
        elif state == _ANSI:
            if char == "\\":
                self.escaped = True
            elif char == "'":
                self.stack.pop()
        elif state == DQ:
            if char == "\\":
                self.escaped = True
            elif char == '"':
                self.stack.pop()
            elif char in "`$":
                return self.expansion(part, i, command)
            else:
                self.add(command, char, quoted=True)
        elif state != TOP:  # ${...}, `...`, arithmetic: only their nesting matters
            if char == "\\":
                self.escaped = True
            elif char == "'":
                self.stack.append(_Frame(SQ, None, _Command()))
            elif char == '"':
                self.stack.append(_Frame(DQ, None, _Command()))
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
            self.stack.append(_Frame(SQ, None, command))
        elif char == '"':
            command.current()
            self.stack.append(_Frame(DQ, None, command))
        elif char == frame.closer and not command.cond:
            self.end_command(command)
            self.stack.pop()
        elif char in "`$":
            return self.expansion(part, i, command)
        elif char in "<>" and nxt == "(":  # process substitution
            command.current().dynamic = True
            self.stack.append(_Frame(TOP, ")", _Command()))
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
            self.stack.append(_Frame(TOP, ")", _Command()))
        return i + 1

    def expansion(self, part: str, i: int, command: _Command) -> int:
        """``$...`` or a backtick at ``part[i]``, in unquoted text or inside "..."."""
        char = part[i]
        nxt = part[i + 1] if i + 1 < len(part) else ""
        state = self.stack[-1].state
        word = command.current() if state in (TOP, DQ) else _Word()
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
            self.stack.append(_Frame(TOP, ")", _Command()))
            return i + 2
        if nxt == "{":
            word.dynamic = True
            self.stack.append(_Frame(_BRACE, "}", _Command()))
            return i + 2
        if nxt == "'" and state != DQ:
            word.dynamic = True
            self.stack.append(_Frame(_ANSI, None, command))
            return i + 2
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):  # $$, $?, $1...: one unit
            word.dynamic = True
            if state in (TOP, DQ):
                self.add(command, "$" + nxt, quoted=state == DQ)
            return i + 2
        if nxt.isalpha() or nxt == "_":
            word.dynamic = True
        else:
            self.dollar = True  # a lone `$`: what follows decides what it is
        if state in (TOP, DQ):
            self.add(command, "$", quoted=state == DQ)
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

    # the end ----------------------------------------------------------------

    def finish(self) -> tuple[str | tuple[str, str, bool, bool, tuple[str, ...]], ...]:
        """The plan, once the whole template is read: literal text and
        ``(name, context, first, rest, before)`` slots.

        ``first``: the value starts a word a program may read as an option, if
        the values of ``before`` (the placeholders earlier in the same word,
        with no text between) are empty; ``rest``: each further array item
        starts a word.
        """
        if len(self.stack) > 1 and any(not isinstance(step, str) for step in self.plan):
            # Either the script is broken or our model of it is: in both cases
            # we cannot tell which quoting a value needs.
            raise ShellTemplateError(
                f"unbalanced quotes or brackets in shell template {self.template!r}"
            )
        top = self.stack[0].command
        self.end_word(top)
        if top.cond and any(not isinstance(step, str) for step in self.plan):
            raise ShellTemplateError(f"unclosed [[ in shell template {self.template!r}")
        return tuple(self.plan)
