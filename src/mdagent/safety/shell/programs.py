"""Programs that run more than themselves: code or programs named in their
options, their scripts or their environment.

:mod:`mdagent.safety.shell.shellparse` splits a command line into the simple commands bash
runs. Some of those run further code the line does not show as a command of
its own: ``git fetch --upload-pack='rm …'``, ``tar --to-command=…``,
``sed 's/x/y/e'``, ``less '+!rm …'``, ``bash -i`` (start-up files,
``PROMPT_COMMAND``), ``GIT_DIR=src/evil git status`` (that folder's
configuration). :func:`runs` says so for one command (wrappers removed),
:func:`assigned` for a variable set on the line; the parser then lets no
allow pattern cover the command (``Segment.dynamic``) and, where deny rules
cannot see what runs (``hidden``), makes them fail closed
(``Segment.unchecked``).

Long options (``git fetch --upl=CMD`` is ``--upload-pack=CMD``) are read
with :mod:`mdagent.safety.shell.longoptions`, shared with :mod:`mdagent.safety.shell.interpreters`.

Where a reading is uncertain (a sed script this module cannot follow, an
option it does not know), the answer errs towards "runs code".
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from mdagent.safety.shell.lexicon import SHELLS, STDIN_FILES
from mdagent.safety.shell.longoptions import ALIASES as _ALIASES
from mdagent.safety.shell.longoptions import abbreviated, dangerous_option
from mdagent.safety.shell.words import COMPUTED


@dataclass(frozen=True)
class Runs:
    """Why a command runs something its words do not show as a command.

    ``hidden``: deny rules cannot see what runs (a program named in an
    option, code read from a script or a file), so they fail closed. A
    command that only writes a file it names (``sed 'w out'``) is not hidden:
    no allow pattern covers it, but it runs nothing. ``inline``: code an
    interpreter reads from its command line (``make --eval``); whether an
    allow pattern covers it is ``policy.inline_eval``'s to say.
    """

    why: str
    hidden: bool = True
    inline: bool = (
        False  # inline code (mdagent.safety.shell.interpreters): policy.inline_eval decides
    )


def runs(core: tuple[str, ...], kinds: tuple[str, ...] | None = None) -> Runs | None:
    """Why ``core`` (a command without wrappers) runs more than its words show, or None.

    ``kinds`` says how each word was written (literal, pattern or computed:
    :mod:`mdagent.safety.shell.words`); a script computed at run time is unknowable.
    """
    if not core:
        return None
    kinds = kinds if kinds is not None else ("literal",) * len(core)
    program = core[0].rsplit("/", 1)[-1]
    name = _ALIASES.get(program, program)
    if name in SHELLS:
        reader = _shell
    elif name in _VIM:
        reader = _vim
    else:
        reader = _READERS.get(name)
    return reader(program, core[1:], kinds[1:]) if reader else None


# -- git -------------------------------------------------------------------------

# Short options of a subcommand that name a program: grep -O, rebase -x,
# difftool -x, clone -u (upload-pack) and -c (configuration of the new clone).
_GIT_RUNNING_SHORT = {"grep": "O", "rebase": "x", "difftool": "x", "clone": "uc"}
# Subcommands that run commands given as text.
_GIT_RUNNING_SUB = {
    "submodule": "foreach", "bisect": "run", "filter-branch": None, "remote-ext": None,
}  # fmt: skip
# The subcommands whose own options are prefixes of a dangerous long option
# (LONG_OPTIONS["git"].exact): anywhere else the prefix is the dangerous one.
_GIT_EXACT = {
    "format-patch": {"to", "cc"}, "send-email": {"to", "cc"}, "checkout-index": {"temp"},
}  # fmt: skip
# Global options whose value is the next word.
_GIT_VALUED = ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env")
# Configuration that names no program and points git nowhere else: set with
# `git -c` it is only a setting (still never covered by an allow pattern).
_GIT_SAFE_CONFIG = re.compile(
    r"(user|author|committer)\.(name|email)|(color|advice)\.[\w.-]+"
    r"|core\.(quotepath|autocrlf|abbrev)|init\.defaultbranch|(commit|tag)\.gpgsign"
    r"|pull\.(rebase|ff)|merge\.(ff|conflictstyle)|log\.(date|decorate)"
    r"|diff\.(noprefix|renames)|column\.ui|i18n\.(commitencoding|logoutputencoding)"
    r"|protocol\.version|fetch\.prune|rebase\.(autosquash|autostash)"
    r"|status\.showuntrackedfiles|gc\.auto",
    re.I,
)


def _git(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs | None:
    """``git -c core.pager=…``, ``git fetch --upload-pack=…`` (any abbreviation),
    ``git grep -O…``, ``git submodule foreach``: a program named on the line.

    ``-c`` with a setting that names no program (``user.name``) is not
    hidden: deny rules see all that runs.
    """
    setting: Runs | None = None
    i = 0
    while i < len(args) and args[i].startswith("-"):
        word = args[i]
        if word == "-c":
            value = args[i + 1] if i + 1 < len(args) else ""
            why = "`git -c` sets what git runs"
            if not _GIT_SAFE_CONFIG.fullmatch(value.split("=", 1)[0].strip()):
                return Runs(why)
            setting = setting or Runs(why, hidden=False)
        elif word.startswith(("-c", "--config-env", "--exec-path=")):
            return Runs(f"`git {word}` sets what git runs")
        i += 2 if word in _GIT_VALUED else 1
    sub = args[i] if i < len(args) else ""
    rest = args[i + 1 :]
    letters = _GIT_RUNNING_SHORT.get(sub, "")
    exact = _GIT_EXACT.get(sub, set())
    for word in rest:
        cluster = word[1:] if word[:1] == "-" and word[1:2] != "-" else ""
        option = dangerous_option("git", word, exact)
        if option or any(letter in cluster for letter in letters):
            shown = f" (--{option})" if option and not word[2:].startswith(option) else ""
            return Runs(f"`git {sub} {word}`{shown} runs a program named on the line")
    if sub in _GIT_RUNNING_SUB and (_GIT_RUNNING_SUB[sub] is None or _GIT_RUNNING_SUB[sub] in rest):
        return Runs(f"`git {sub}` runs commands given as text")
    return setting


def git_places(core: tuple[str, ...]) -> list[tuple[str, str]]:
    """The folders ``git`` is pointed at by its global options, in order:
    ``("-C", dir)``, ``("--git-dir", dir)``, ``("--work-tree", dir)`` and
    ``("--bare", "")`` (the current folder is the git folder)."""
    if not core or core[0].rsplit("/", 1)[-1] != "git":
        return []
    out: list[tuple[str, str]] = []
    args = core[1:]
    i = 0
    while i < len(args) and args[i].startswith("-"):
        word = args[i]
        name, eq, value = word.partition("=")
        if word == "--bare":
            out.append((word, ""))
        elif name in ("-C", "--git-dir", "--work-tree"):
            if not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            out.append((name, value))
        elif word in _GIT_VALUED:
            i += 1
        i += 1
    return out


def foreign_repository(
    core: tuple[str, ...], workdir: str, cwd: str, moved: bool = False
) -> str | None:
    """Why ``git`` pointed elsewhere (``-C``, ``--git-dir``, ``--work-tree``,
    ``--bare``) would use another repository than the workspace's, or None.

    Another repository's configuration runs programs (aliases,
    ``core.fsmonitor``), and a model may have written it. ``cwd`` is where
    the command starts; ``moved``: the line changes folder before it
    (``cd``), so a relative folder cannot be placed. Fail closed: a folder
    not positively in the workspace's own repository counts as elsewhere.
    """
    places = git_places(core)
    if not places:
        return None
    unknown = "`git {} {}` after a change of folder: which repository it uses is unknown"
    placed = not moved
    folder = cwd
    checks: list[tuple[str, str]] = []
    for option, value in places:
        if option == "-C" and value:
            value = os.path.expanduser(value)
            placed = placed or os.path.isabs(value)
            if not placed:
                return unknown.format(option, value)
            folder = os.path.join(folder, value)
    if any(option == "-C" for option, _ in places):
        checks.append(("-C", folder))
    for option, value in places:
        if option != "-C":
            value = os.path.expanduser(value)
            if not placed and not os.path.isabs(value):
                return unknown.format(option, value)
            checks.append((option, os.path.join(folder, value)))
    own = _repository(workdir)
    for option, path in checks:
        if option in ("--git-dir", "--bare"):
            same = os.path.realpath(path) == own
        else:  # a folder that is not there yet may be made before git runs
            same = os.path.isdir(path) and _repository(path) == own
        if own is None or not same:
            shown = option if option == "--bare" else f"{option} {_relative(path, workdir)}"
            return (
                f"`git {shown}` uses a repository other than the workspace's, "
                "whose configuration may run any program"
            )
    return None


def _relative(path: str, workdir: str) -> str:
    full = os.path.normpath(path)
    root = os.path.normpath(workdir)
    return os.path.relpath(full, root) if full.startswith(root + os.sep) else full


def _repository(folder: str) -> str | None:
    """The git folder git would find from ``folder`` (real path), or None.

    As git's discovery does, each folder up from ``folder`` is tried for a
    ``.git`` (folder or file) and for being a git folder itself (a bare
    repository); a ``HEAD`` file is enough for that here (fail closed).
    """
    here = os.path.realpath(folder)
    while True:
        dot_git = os.path.join(here, ".git")
        if os.path.lexists(dot_git):
            return os.path.realpath(dot_git)
        if os.path.lexists(os.path.join(here, "HEAD")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


# -- sed ---------------------------------------------------------------------------

_SED_LONG = {
    "expression": "valued", "file": "valued", "line-length": "valued", "in-place": "optional",
    "quiet": "", "silent": "", "debug": "", "follow-symlinks": "", "posix": "",
    "regexp-extended": "", "separate": "", "sandbox": "", "unbuffered": "", "null-data": "",
    "zero-terminated": "", "binary": "", "help": "", "version": "",
}  # fmt: skip
_SED_SIMPLE = set("=dDgGhHnNpPxzF{}")
_SED_NUMBERED = set("lLqQ")
_SED_LABELLED = set(":btTv")
_SED_FILE = set("rRwW")
_SED_STANDARD = {"/dev/stdout", "/dev/stderr"}  # GNU sed writes these to its own output


def _sed(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs | None:  # noqa: C901
    """``sed 'e cmd'``, ``s/x/y/e`` (the pattern space as a command), ``w FILE``:
    what the script runs or writes, read from ``-e``/``--expression`` or the
    first operand; ``-f FILE`` runs a script no rule reads."""
    scripts: list[tuple[str, str]] = []
    files: list[tuple[str, str]] = []
    operands: list[tuple[str, str]] = []
    i = 0
    options = True
    while i < len(args):
        word, kind = args[i], kinds[i]
        following = (args[i + 1], kinds[i + 1]) if i + 1 < len(args) else ("", "literal")
        i += 1
        if not options or word == "-" or not word.startswith("-"):
            operands.append((word, kind))
            continue
        if kind == COMPUTED:
            return Runs(f"`{program}` option `{word}` is computed at run time")
        if word == "--":
            options = False
        elif word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            matches = [o for o in _SED_LONG if o == name] or [
                o for o in _SED_LONG if o.startswith(name)
            ]
            if len(matches) != 1:
                # Ambiguous or unknown: sed refuses it; a script or file may hide behind it.
                return Runs(f"`{program} {word}` not understood")
            option = matches[0]
            if _SED_LONG[option] == "valued" and not eq:
                value, kind = following
                i += 1
            if option == "expression":
                scripts.append((value, kind))
            elif option == "file":
                files.append((value, kind))
        else:
            for at, letter in enumerate(word[1:], start=2):
                if letter in "efl":
                    value, kind = (word[at:], kind) if word[at:] else following
                    i += 0 if word[at:] else 1
                    if letter == "e":
                        scripts.append((value, kind))
                    elif letter == "f":
                        files.append((value, kind))
                    break
                if letter == "i":
                    break  # -i[SUFFIX]: the rest is the suffix
                if letter not in "nrEsuzb":
                    return Runs(f"`{program} -{letter}` not understood")
    if files:
        script, kind = files[0]
        if kind == COMPUTED or script == "-" or device_path(script) or script in STDIN_FILES:
            return Runs(f"`{program} -f {script}` runs a script read from a file descriptor")
        # Deny rules cannot read the script (`e`, `s///e` run commands): they fail closed.
        return Runs(f"`{program} -f {script}` runs a script no rule reads")
    if not scripts:
        scripts = operands[:1]
    if not scripts:
        return None
    if any(kind == COMPUTED for _, kind in scripts):
        return Runs(f"`{program}` script is computed at run time")
    return sed_script("\n".join(text for text, _ in scripts), program)


def sed_script(script: str, program: str = "sed") -> Runs | None:
    """What a GNU sed script does besides editing text: ``e`` and ``s///e`` run
    commands (hidden), ``w``/``W`` and ``s///w`` write files. A script this
    reader cannot follow counts as running code."""
    reader = _SedScript(script)
    try:
        reader.read()
    except (ValueError, IndexError):
        return Runs(f"`{program}` script not understood (it may run commands)")
    if reader.runs:
        return Runs(f"`{program}` script runs a command (`{reader.runs}`)")
    if reader.writes:
        return Runs(f"`{program}` script writes `{reader.writes}`", hidden=False)
    return None


class _SedScript:
    """A reader of GNU sed's script syntax, enough to find ``e`` and ``w``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.runs: str | None = None
        self.writes: str | None = None

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def blanks(self, newlines: bool = False) -> None:
        while self.peek() in (" \t\n;" if newlines else " \t") and self.peek():
            self.i += 1

    def line(self) -> str:
        """The rest of the line (a file name, a command, text)."""
        end = self.text.find("\n", self.i)
        end = len(self.text) if end < 0 else end
        value, self.i = self.text[self.i : end], end
        return value

    def delimited(self, delimiter: str) -> None:
        """Up to and past the next unescaped ``delimiter`` (a regex, a replacement)."""
        while True:
            ch = self.text[self.i]  # IndexError: unterminated
            self.i += 1
            if ch == "\\":
                self.i += 1
            elif ch == delimiter:
                return
            elif ch == "\n":
                raise ValueError("newline in a regex or replacement")

    def address(self) -> None:
        ch = self.peek()
        if ch.isdigit():
            while self.peek().isdigit():
                self.i += 1
            if self.peek() == "~":
                self.i += 1
                while self.peek().isdigit():
                    self.i += 1
        elif ch == "$":
            self.i += 1
        elif ch in ("/", "\\"):
            self.i += 1
            if ch == "\\":
                ch = self.text[self.i]
                self.i += 1
            self.delimited(ch)
            while self.peek() in ("I", "M") and self.peek():
                self.i += 1

    def read(self) -> None:
        while True:
            self.blanks(newlines=True)
            if not self.peek():
                return
            if self.peek() == "#":
                self.line()
                continue
            self.address()
            self.blanks()
            if self.peek() == ",":
                self.i += 1
                self.blanks()
                if self.peek() in ("+", "~"):
                    self.i += 1
                self.address()
            self.blanks()
            while self.peek() == "!":
                self.i += 1
                self.blanks()
            command = self.text[self.i]
            self.i += 1
            self.command(command)

    def command(self, command: str) -> None:
        if command in _SED_SIMPLE:
            return
        if command in _SED_NUMBERED:
            self.blanks()
            while self.peek().isdigit():
                self.i += 1
        elif command in _SED_LABELLED:
            self.blanks()
            while self.peek() and self.peek() not in ";\n":
                self.i += 1
        elif command in "aic":
            self.text_argument()
        elif command in _SED_FILE:
            self.blanks()
            name = self.line()
            if command in "wW" and name.strip() not in _SED_STANDARD:
                self.writes = self.writes or name
        elif command == "e":
            self.blanks()
            self.runs = self.runs or self.line().strip() or "e: the pattern space"
        elif command == "s":
            delimiter = self.text[self.i]
            if delimiter in "\n\\":
                raise ValueError("bad delimiter")
            self.i += 1
            self.delimited(delimiter)
            self.delimited(delimiter)
            self.flags()
        elif command == "y":
            delimiter = self.text[self.i]
            self.i += 1
            self.delimited(delimiter)
            self.delimited(delimiter)
        else:
            raise ValueError(f"unknown command {command!r}")

    def text_argument(self) -> None:
        """``a text``, ``a\\`` then lines: to the first newline not escaped."""
        self.blanks()
        while self.peek():
            ch = self.text[self.i]
            self.i += 1
            if ch == "\\":
                self.i += 1
            elif ch == "\n":
                return

    def flags(self) -> None:
        while True:
            ch = self.peek()
            if (ch in ("g", "p", "i", "I", "m", "M") and ch) or ch.isdigit():
                self.i += 1
            elif ch == "e":
                self.i += 1
                self.runs = self.runs or "s///e: the pattern space"
            elif ch == "w":
                self.i += 1
                self.blanks()
                name = self.line()
                if name.strip() not in _SED_STANDARD:
                    self.writes = self.writes or name
                return
            else:
                return


# -- tar, zip, rg, man -----------------------------------------------------------


def _options_until_end(args: tuple[str, ...]) -> tuple[str, ...]:
    """The words before ``--``: where a program still reads options."""
    return args[: args.index("--")] if "--" in args else args


def _tar(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs | None:
    """``--to-command``, ``--checkpoint-action``, ``-I``/``--use-compress-program``,
    ``-F``/``--info-script``, ``--rsh-command``: programs tar runs."""
    for n, word in enumerate(_options_until_end(args)):
        option = dangerous_option("tar", word)
        if option:
            return Runs(f"`{program} {word}` runs a program named on the line")
        old_style = n == 0 and re.fullmatch(r"[A-Za-z]+", word)
        cluster = word[1:] if word[:1] == "-" and word[1:2] != "-" else ""
        letters = set(cluster or (word if old_style else "")) & set("IF")
        if letters:
            return Runs(f"`{program} {word}` (-{min(letters)}) runs a program named on the line")
    return None


def _zip(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs | None:
    """``zip -TT CMD`` / ``--unzip-command CMD``: the program that tests the archive."""
    for word in _options_until_end(args):
        if dangerous_option("zip", word) or (word[:1] == "-" and "TT" in word[1:]):
            return Runs(f"`{program} {word}` runs a program named on the line")
    return None


def _rg(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs | None:
    """``rg --pre CMD``: a program run on every file searched; ``--hostname-bin``."""
    for word in _options_until_end(args):
        if dangerous_option("rg", word):
            return Runs(f"`{program} {word}` runs a program named on the line")
    return None


# man-db's short options that take a value (attached, or the next word), and
# those whose value can only be attached.
_MAN_VALUED = "CRLmMSseEprP"
_MAN_OPTIONAL = "HTX"


def _man(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs | None:
    """``man -P PAGER``, ``-H BROWSER``, ``-C CONFIG``: a program man runs, or a
    configuration naming programs."""
    for word in _options_until_end(args):
        if dangerous_option("man", word):
            return Runs(f"`{program} {word}` runs a program named on the line")
        if word[:1] != "-" or word[1:2] == "-":
            continue
        for letter in word[1:]:
            if letter in "PHC":
                return Runs(f"`{program} -{letter}` runs a program named on the line")
            if letter in _MAN_VALUED or letter in _MAN_OPTIONAL:
                break
    return None


def _make(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs | None:
    """``make -f -``, ``--eval``, ``CC='sh -c …'``: recipe text from the line or
    standard input, which deny rules never read (see :mod:`mdagent.safety.shell.interpreters`)."""
    from mdagent.safety.shell.interpreters import make_inline

    found = make_inline(program, list(args))
    return Runs(f"`{found}` makes recipes of text no rule reads", inline=True) if found else None


# -- less, vim ---------------------------------------------------------------------

# less commands given as `+cmd` that only move or search: a line number, the
# start or end, follow mode, or a search for printable text.
_LESS_SAFE_COMMAND = re.compile(r"\+\+?(\d*[gGpP%]?|F|[/?][^\x00-\x1f\x7f]*)")


def _less(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs | None:
    """``less '+!cmd'`` (a shell command as the first keystrokes), ``+|``, ``+v``,
    ``-k``/``--lesskey-*`` (key bindings that may set ``LESSOPEN``); ``-o``/
    ``--log-file`` write a file."""
    for word in _options_until_end(args):
        if word.startswith("+") and not _LESS_SAFE_COMMAND.fullmatch(word):
            return Runs(f"`{program} {word}` runs less commands, which may run a shell command")
        if dangerous_option("less", word):
            return Runs(f"`{program} {word}` reads key bindings that may run a program")
        if abbreviated(word, ("log-file", "LOG-FILE")):
            return Runs(f"`{program} {word}` writes a log file", hidden=False)
        if word[:1] == "-" and word[1:2] not in ("-", "+"):
            cluster = re.split(r"[bhjpPtTxyz#\"]", word[1:], maxsplit=1)[0]
            if "k" in cluster:
                return Runs(f"`{program} {word}` reads key bindings that may run a program")
            if "o" in cluster or "O" in cluster:
                return Runs(f"`{program} {word}` writes a log file", hidden=False)
    return None


_VIM = {
    "vim", "vi", "nvim", "ex", "view", "vimdiff", "nvimdiff", "gvim", "gview", "gvimdiff",
    "evim", "eview", "rvim", "rview", "rgvim", "rgview", "vimx", "vim.basic", "vim.tiny",
    "vim.nox", "vim.gtk3",
}  # fmt: skip


def _vim(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs | None:
    """``vim -c '!cmd'``, ``+cmd``, ``--cmd``, ``-S``/``-s``/``-u`` (scripts),
    ``-e``/``-E`` and ``ex`` (Ex commands read from input), nvim ``-l``: Ex
    commands or scripts, which run shell commands; ``-w``/``-W`` write a file."""
    if program == "ex":
        return Runs(f"`{program}` reads Ex commands from its input, which may run commands")
    for word in _options_until_end(args):
        if word.startswith("+") and not re.fullmatch(r"\+\d*", word):
            return Runs(f"`{program} {word}` runs an Ex command, which may run commands")
        lower = word.lower()
        if lower.startswith(("--cmd", "--remote")):
            return Runs(f"`{program} {word}` runs an Ex command, which may run commands")
        if lower.startswith(("--log", "--startuptime")):
            return Runs(f"`{program} {word}` writes a file", hidden=False)
        if word[:1] == "-" and word[1:2] != "-":
            found = set(word[1:]) & set("cSsuUeEl")
            if found:
                return Runs(
                    f"`{program} {word}` (-{min(found)}) runs Ex commands or a script, "
                    "which may run commands"
                )
            if set(word[1:]) & set("wW"):
                return Runs(f"`{program} {word}` writes a file", hidden=False)
    return None


# -- shells ------------------------------------------------------------------------


def _shell(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs | None:
    """``bash -i`` (start-up files, ``PROMPT_COMMAND``), ``--rcfile``/``--init-file``,
    and a script read from a file descriptor (``bash /dev/fd/3``)."""
    interactive = Runs(
        f"`{program}` is interactive: it runs start-up files and PROMPT_COMMAND, "
        "and reads commands from its input"
    )
    operand = None
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word in ("--rcfile", "--init-file") or word.startswith(("--rcfile=", "--init-file=")):
            return Runs(f"`{program} {word}` runs a start-up file")
        if word == "--interactive":
            return interactive
        if word == "--":
            operand = args[i] if i < len(args) else None
            break
        if word.startswith("--"):
            continue  # --login, --norc, --posix…
        if word[:1] in "-+" and len(word) > 1:
            if word[0] == "-" and "i" in word[1:]:
                return interactive
            if "c" in word[1:]:
                return None  # the code and its arguments follow
            if word[-1] in "oO":
                i += 1  # -o NAME, +O NAME
            continue
        operand = word
        break
    if operand is not None and device_path(operand):
        return Runs(f"`{program} {operand}` runs code read from a file descriptor")
    return None


def device_path(word: str) -> bool:
    """Whether ``word`` names a device or process file other than standard input
    (``/dev/fd/3``, ``/proc/self/fd/5``, ``/dev/tcp/…``): what it holds comes from
    a descriptor, not a file. ``/dev/null`` holds nothing; standard input
    (``/dev/stdin``) is judged by where the line feeds it from."""
    path = os.path.normpath(word) if word.startswith("/") else ""
    return path.startswith(("/dev/", "/proc/")) and path not in _NOT_DEVICES


_NOT_DEVICES = {*STDIN_FILES, "/dev/null"}


# -- programs that run what an option names, or what their input says ---------------

# Short options (letters of a cluster) and single-dash words (a prefix) that
# name a program, code or a configuration naming programs; the long ones are
# in LONG_OPTIONS. ssh's family is read by _ssh.
_SHORT_RUNNING = {"rsync": "e", "wget": "e", "pandoc": "FL", "split": "", "sort": ""}
# Compilers: -wrapper runs its programs, -fplugin loads code, -specs and -B
# choose the programs the driver runs.
_COMPILERS = {"gcc", "g++", "cc", "c++", "clang", "clang++", "gfortran", "cpp"}
_COMPILER_RUNNING = ("-wrapper", "-fplugin", "-specs", "--specs", "-B", "--prefix", "-fplugin-arg")
# Programs that run commands their input, an argument or a script may give
# (`gdb -ex 'shell …'`, sqlite3's `.shell`, ed's `!cmd`): deny rules never see them.
_COMMAND_READERS = {
    "gdb": "runs the commands of its options, scripts and input (`shell …`)",
    "gdb-multiarch": "runs the commands of its options, scripts and input (`shell …`)",
    "lldb": "runs the commands of its options, scripts and input (`platform shell …`)",
    "sqlite3": "runs the dot commands of its arguments and input (`.shell …`)",
    "ed": "runs the commands of its input (`!cmd`)",
    "red": "runs the commands of its input",
}
# ssh's configuration keys that run a local command, and the options that read
# a configuration file or name a program.
_SSH_RUNNING_KEYS = {"proxycommand", "localcommand", "knownhostscommand", "permitlocalcommand"}


def _by_option(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs | None:
    """``split --filter=CMD``, ``sort --compress-program=CMD``, ``rsync -e CMD``,
    ``wget --use-askpass=CMD``, ``pandoc --filter X``: a program an option names."""
    name = _ALIASES.get(program, program)
    letters = _SHORT_RUNNING.get(name, "")
    for word in _options_until_end(args):
        option = dangerous_option(name, word)
        cluster = word[1:] if word[:1] == "-" and word[1:2] != "-" else ""
        if option or set(cluster) & set(letters):
            return Runs(f"`{program} {word}` runs a program named on the line")
    return None


def _compiler(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs | None:
    """``gcc -wrapper CMD``, ``-fplugin=X``, ``-specs=X``, ``-B DIR``: programs or code
    the compiler driver runs."""
    for word in args:
        if word.startswith(_COMPILER_RUNNING):
            return Runs(f"`{program} {word}` runs a program named on the line")
    return None


def _command_reader(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs:
    return Runs(f"`{program}` {_COMMAND_READERS[program]}")


def _ssh(program: str, args: tuple[str, ...], kinds: tuple[str, ...]) -> Runs | None:
    """``ssh -o ProxyCommand=CMD``, ``LocalCommand``, ``-F FILE`` (a configuration that
    may name both), ``scp -S PROG``/``-J``: a program run on this machine."""
    for n, word in enumerate(args):
        if word[:1] != "-" or word == "--":
            if word == "--":
                break
            continue
        cluster = word[1:]
        if "F" in cluster or (program in ("scp", "sftp") and "S" in cluster):
            return Runs(f"`{program} {word}` runs a program named on the line or in a file")
        if "o" in cluster:
            value = cluster.split("o", 1)[1] or (args[n + 1] if n + 1 < len(args) else "")
            key = re.split(r"[=\s]", value.strip(), maxsplit=1)[0].lower()
            if key in _SSH_RUNNING_KEYS or key == "include" or key == "match":
                return Runs(f"`{program} -o {value}` runs a command on this machine")
    return None


_READERS = {
    "git": _git,
    "sed": _sed,
    "tar": _tar,
    "zip": _zip,
    "rg": _rg,
    "man": _man,
    "make": _make,
    "less": _less,
    **{name: _by_option for name in _SHORT_RUNNING},
    **{name: _compiler for name in _COMPILERS},
    **{name: _command_reader for name in _COMMAND_READERS},
    "ssh": _ssh,
    "scp": _ssh,
    "sftp": _ssh,
}


# -- variables ---------------------------------------------------------------------

# Variables whose value is code, names a program that runs, or points a program
# at start-up files or a configuration that may name programs.
_CODE_VARIABLES = {
    # shells
    "PROMPT_COMMAND", "PS0", "PS1", "PS2", "PS4", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS",
    "ZDOTDIR",
    # git: another repository, another configuration, a program to run
    "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CONFIG", "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_EXEC_PATH",
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EXTERNAL_DIFF", "GIT_PROXY_COMMAND", "GIT_TEMPLATE_DIR",
    # pagers, editors, browsers and the options and start-up files they read
    "PAGER", "MANPAGER", "MANOPT", "MANROFFOPT", "BROWSER", "EDITOR", "VISUAL", "LESS",
    "LESSOPEN", "LESSCLOSE", "LESSKEY", "LESSKEYIN", "LESSKEY_SYSTEM", "LESSKEYIN_SYSTEM",
    "LESSKEY_CONTENT", "LESSEDIT", "VIMINIT", "EXINIT", "VIM", "VIMRUNTIME",
    # options read from the environment
    "RIPGREP_CONFIG_PATH", "TAR_OPTIONS", "ZIPOPT",
}  # fmt: skip
_CODE_VARIABLE_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")
# Where a program finds its start-up files and configuration: a concern for
# the programs that read them.
_HOME_VARIABLES = {"HOME", "XDG_CONFIG_HOME"}
_HOME_READERS = {"git", "less", "man", *SHELLS, *_VIM}
# Pager and editor values that run nothing but themselves.
_PLAIN_PROGRAMS = re.compile(r"((/usr)?/bin/)?(cat|true|less|more)|:|")
_PLAIN_PROGRAM_VARIABLES = {
    "PAGER", "GIT_PAGER", "MANPAGER", "EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
}  # fmt: skip


def assigned(name: str, value: str, program: str | None = None) -> Runs | None:
    """Why setting ``name`` to ``value`` hands a program code or points it
    elsewhere, or None. ``program``: the one command it is set for (``X=1
    git log``); None: the rest of the line, where any program may read it
    (``HOME=x; git log``, ``export HOME=x``)."""
    if name in _HOME_VARIABLES:
        base = program.rsplit("/", 1)[-1] if program is not None else None
        if base is None or base in _HOME_READERS:
            shown = f"`{base}`" if base else "the programs after it"
            return Runs(f"`{name}` points {shown} at other start-up files and configuration")
        return None
    if name not in _CODE_VARIABLES and not name.startswith(_CODE_VARIABLE_PREFIXES):
        return None
    if name in _PLAIN_PROGRAM_VARIABLES and _PLAIN_PROGRAMS.fullmatch(value.strip()):
        return None
    if name == "LESS" and _less("less", tuple(value.split()), ()) is None:
        return None  # options only, none that runs or writes anything
    return Runs(f"`{name}` set on the line is code, names a program, or points to a configuration")
