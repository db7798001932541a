"""How a shell command is read for what it may write, and where it may run.

:class:`mdagent.safety.protected.Protected` judges a command with these
readings of its parsed segments (:mod:`mdagent.safety.shell.shellparse`):
which programs only read the files they name (:func:`only_reads`), the
files a segment plainly writes (:func:`plain_writes`: redirections,
``rm``/``mv``/``cp`` operands, ``sed -i``, ``dd of=``, ``--output=FILE``),
what a program unpacks or checks out into its folder without naming it
(:func:`changes_folder`: ``tar -x``, ``cpio -i``, ``git stash``), the
folders its own options move it to (:func:`chdir_options`), what in a word
may name a file (:func:`candidates`), and, through :class:`Reading`, the
paths a word may stand for once bash expands it (``~``, ``$VAR``, braces,
globs), where a variable the command sets itself counts as unknowable.
"""

from __future__ import annotations

import copy
import glob as globlib
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from mdagent.safety.protected import Protected

# Programs that only read the files they name: naming a protected file is
# fine for them, unless one of their options that write (or run programs) is
# used. Every other program counts as writing every file it names, however it
# names it (an argument, ``--opt=FILE``, ``-oFILE``), and a folder it names
# as changing everything inside.
_READERS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys((
        "cat", "tac", "head", "tail", "more", "grep", "egrep", "fgrep", "ls", "wc",
        "stat", "du", "diff", "cmp", "echo", "printf", "test", "[", "[[", "((", "pwd",
        "realpath", "readlink", "basename", "dirname", "md5sum", "sha1sum", "sha256sum",
        "sha512sum", "cksum", "nl", "od", "true", "false", "which", "type",
    ), ()),
    "less": ("-o", "-O", "--log-file", "--LOG-FILE"),
    "rg": ("--pre",),
    "tree": ("-o",),
    "find": ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fls"),
}  # fmt: skip
# git subcommands that leave the files of the work tree alone, and the
# options that make them write a file or run a program after all.
_GIT_READERS = {
    "status", "log", "show", "diff", "grep", "ls-files", "ls-tree", "blame", "add", "commit",
    "check-ignore", "check-attr", "shortlog", "describe", "rev-parse", "whatchanged",
}  # fmt: skip
_GIT_UNSAFE_OPTIONS = ("--output", "-O", "--open-files-in-pager")
# git subcommands that rewrite files all over the work tree without naming
# them (a branch switch, a stash, a patch), with the options that keep them
# from doing so.
_GIT_TREE_WRITERS = {
    "stash": ("list", "show"), "clean": ("-n", "--dry-run"), "reset": (),
    "checkout": (), "switch": (), "restore": ("--staged",), "merge": (),
    "pull": (), "rebase": (), "cherry-pick": (), "revert": (), "am": (),
    "apply": ("--check", "--stat", "--numstat", "--summary", "--cached"), "read-tree": (),
    "checkout-index": (), "sparse-checkout": ("list",), "submodule": ("status", "summary"),
    "bisect": (), "filter-branch": (), "worktree": ("list",),
}  # fmt: skip
GIT_CONFIG_READS = {
    "get", "list", "--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list",
}  # fmt: skip
# git options that run before the subcommand; these take a value.
_GIT_VALUED = {"-C", "-c", "--git-dir", "--work-tree", "--namespace"}
# Programs that unpack files into the folder they run in (or one an option names),
# each read with the rules of the archiver whose command line it shares.
_EXTRACTORS = {
    "tar": "tar", "bsdtar": "tar", "gtar": "tar", "star": "tar", "jar": "tar",
    "unzip": "unzip", "bsdunzip": "unzip",
    "cpio": "cpio", "bsdcpio": "cpio",
    "7z": "7z", "7za": "7z", "7zr": "7z", "7zz": "7z", "unrar": "7z", "lha": "7z", "arj": "7z",
    "ar": "ar", "pax": "pax", "unar": "patch", "patch": "patch",
}  # fmt: skip
# Options of any program that change the folder it works in.
_CHDIR_SHORT = {"-C"}
_CHDIR_LONG = {"--chdir", "--directory", "--cwd", "--work-tree", "--working-directory", "--prefix"}
CD = {"cd", "pushd", "popd"}
# Programs that add arguments read at run time to the command they run.
ADDERS = {"xargs", "parallel"}
REDIRECTIONS = {">", ">>", ">|", "&>", "&>>", ">&"}
_WORD_EXPANSION = re.compile(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")
_GLOB = re.compile(r"[*?[]")
_BRACE = re.compile(r"\{([^{}]*(?:,|\.\.)[^{}]*)\}")
# Programs that plainly change every file operand (a clear refusal in held
# mode), those that change only their last operand (the target of a copy),
# and the ones that change folders whole (an operand holding a held place).
_CHANGE_EVERY = {
    "rm", "rmdir", "unlink", "shred", "touch", "truncate", "mkdir", "chmod", "chown", "chgrp",
    "chattr", "setfacl", "mv", "tee", "mkfifo", "mknod",
}  # fmt: skip
_CHANGE_LAST = {"cp", "ln", "install", "rsync"}
_CHANGE_FOLDERS = {"rm", "rmdir", "mv", "shred"}
_GIT_CHANGE_OPERANDS = {"rm", "mv", "checkout", "restore"}
# Long options whose value is a file the program writes (as in policy's `--output=FILE`).
_OUTPUT_OPTIONS = {"--output", "--output-file", "--output-document", "--outfile", "--log-file"}
# What plain_writes says for `git config` that writes (not a word of the command).
GIT_CONFIG_WRITE = "\0git config"


class UnknownFolder(Exception):
    """A folder the command runs in cannot be worked out before it runs."""


class Reading:
    """One command being judged: its text, environment, and the folders its
    parts may run in (``unknown``: why they cannot be worked out)."""

    def __init__(
        self, protected: Protected, command: str, env: Mapping[str, str], cwd: str, moved: bool
    ) -> None:
        self.protected = protected
        self.command = command
        self.folders = [cwd]
        self.unknown: str | None = None
        # $PWD is where the command starts, until a cd moves it.
        self.env = {**env, "PWD": cwd}
        # A variable the command sets itself (x=…, read x, for x in …) is not
        # knowable here; nor is $PWD/$OLDPWD once a cd runs.
        bare = _WORD_EXPANSION.sub(" ", command)
        self.set_here = {w for w in re.findall(r"[A-Za-z_]\w*", bare)}
        if moved:
            self.set_here |= {"PWD", "OLDPWD"}

    def lost(self, why: str) -> Reading:
        """This reading for a part that runs in a folder not knowable here."""
        other = copy.copy(self)
        other.unknown = self.unknown or why
        return other

    def expanded(
        self, word: str, folders: Iterable[str] = (), *, strict: bool = False
    ) -> list[str | None]:
        """The paths ``word`` may stand for once bash expands it; None: not knowable
        here (``strict``: raise :class:`UnknownFolder` instead)."""
        out: list[str | None] = []
        if any(m in word for m in ("`", "$(", "<(", ">(")):
            out.append(None)
        else:
            for variant in braces(word):
                names = [m.group(1) or m.group(2) for m in _WORD_EXPANSION.finditer(variant)]
                expanded = _WORD_EXPANSION.sub(
                    lambda m: self.env.get(m.group(1) or m.group(2), ""), variant
                )
                if any(n in self.set_here for n in names) or "$" in expanded:
                    out.append(None)
                    continue
                expanded = expand_user(expanded)
                out.append(expanded)
                if _GLOB.search(expanded):
                    for base in folders or (self.protected.workdir,):
                        found = globlib.glob(os.path.join(base, expanded), include_hidden=True)
                        out.extend(found[:1000])
        if strict and None in out:
            raise UnknownFolder(f"`{word}` is a folder named at run time")
        return out

    def named(self, words: Iterable[str], folders: list[str], *, parents: bool) -> str | None:
        """The protected place any of ``words`` names, tried from each of ``folders``."""
        for word in words:
            for candidate in candidates(word):
                for path in self.expanded(candidate, folders):
                    if path == "":
                        continue  # `$unset`: no word at all
                    if path is None:
                        return f"{word} (named at run time: it may be any file, these included)"
                    if self.unknown and not os.path.isabs(path):
                        return (
                            f"{word} (in a folder not known before the command runs: "
                            f"{self.unknown}; it may be any file, these included)"
                        )
                    for base in folders:
                        found = self.protected.covers(path, base, parents=parents)
                        if found:
                            return found
        return None


def candidates(word: str) -> list[str]:
    """What in ``word`` may name a file: the word (unless an option), the value
    of ``--opt=value`` or ``key=value``, and every tail of a short-option
    cluster (``-oFILE``, ``-xfFILE``)."""
    out = []
    if not word.startswith("-") or word == "-":
        out.append(word)
    if "=" in word:
        out.append(word.split("=", 1)[1])
    if word.startswith("-") and not word.startswith("--"):
        out += [word[i:] for i in range(2, len(word))]
    return [c for c in dict.fromkeys(out) if c]


def only_reads(core: tuple[str, ...]) -> bool:
    """Whether ``core`` only reads the files it names (see :data:`_READERS`)."""
    program = os.path.basename(core[0])
    args = core[1:]
    if program == "git":
        sub, rest = git_subcommand(args)
        if sub not in _GIT_READERS or any(
            a.startswith(("-c", "--config-env", "--exec-path=")) for a in args[:rest]
        ):
            return False
        return not any(a.startswith(_GIT_UNSAFE_OPTIONS) for a in args[rest:])
    writing = _READERS.get(program)
    if writing is None:
        return False
    return not any(a.startswith(writing) for a in args if a.startswith("-")) if writing else True


def git_subcommand(args: tuple[str, ...]) -> tuple[str | None, int]:
    """git's subcommand among ``args`` (after its own options) and its index."""
    i = 0
    while i < len(args):
        word = args[i]
        if word in _GIT_VALUED:
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            return word, i
    return None, i


def changes_folder(core: tuple[str, ...]) -> str | None:
    """How ``core`` changes files in its folder without naming them (``git
    stash``, ``tar -x``, ``patch``), or None."""
    program = os.path.basename(core[0])
    args = core[1:]
    if program == "git":
        sub, at = git_subcommand(args)
        rest = args[at + 1 :]
        if sub == "init" and any(a.startswith(("--template", "--separate-git-dir")) for a in rest):
            return "git init"  # copies hooks from the template folder
        if sub is None or sub not in _GIT_TREE_WRITERS:
            return None
        if sub == "reset" and not any(a in ("--hard", "--merge", "--keep") for a in rest):
            return None
        if sub in ("checkout", "switch"):
            operands = [a for a in rest if not a.startswith("-")]
            if any(a in ("-b", "-B", "-c", "-C", "--orphan") for a in rest) and len(operands) <= 1:
                return None  # a new branch where HEAD is: no file changes
        keep = _GIT_TREE_WRITERS[sub]
        if any(a in keep for a in rest[:1]) or any(a in keep for a in rest if a.startswith("-")):
            return None
        return f"git {sub}"
    return program if program in _EXTRACTORS and extracts(program, args) else None


def extracts(program: str, args: tuple[str, ...]) -> bool:
    """Whether the archiver or patcher ``program`` writes files with ``args``."""
    first = args[0] if args else ""
    program = _EXTRACTORS.get(program, program)
    if program == "tar":
        clusters = [a for a in args if a.startswith("-") and not a.startswith("--")]
        if not first.startswith("-"):
            clusters.append(first)  # tar xf a.tar: the old style
        return any("x" in c for c in clusters) or "--extract" in args or "--get" in args
    if program == "unzip":
        return not any(a in ("-l", "-t", "-v", "-Z", "-p", "-z") for a in args)
    if program == "ar":
        return "x" in first
    if program == "cpio":
        modes = _cluster_modes(args, _CPIO_VALUED) & {"i", "o", "p", "t"}
        return modes not in ({"o"}, {"t"}, {"i", "t"})
    if program == "pax":
        return "r" in _cluster_modes(args, _PAX_VALUED)  # -r reads an archive out, -rw copies
    if program == "7z":
        return first in ("x", "e")
    return True  # patch, unar: the files its input names


# Short options that take a value: the rest of their cluster, or the next
# word, is that value (`cpio -Hbin`, `-F list.cpio`), not more options.
_CPIO_VALUED = frozenset("CEFHIMOR")
_PAX_VALUED = frozenset("bfopsxGTU")
_LONG_MODES = {"--extract": "i", "--create": "o", "--pass-through": "p", "--list": "t"}


def _cluster_modes(args: tuple[str, ...], valued: frozenset[str]) -> set[str]:
    """The letters of cpio- or pax-style options (``-vid``: i, d, v), values skipped.

    cpio: copy-in (``i``) and pass-through (``p``) write files; only a plain
    copy-out (``o``) or a listing (``t``, ``it``) is known not to, so any
    other mix fails closed. Long cpio modes count as their letters.
    """
    modes: set[str] = set()
    skip = False
    for word in args:
        if skip:
            skip = False
        elif word.startswith("--"):
            modes.add(_LONG_MODES.get(word.split("=", 1)[0], ""))
        elif word.startswith("-") and len(word) > 1:
            for index, letter in enumerate(word[1:], start=1):
                if letter in valued:
                    skip = index == len(word) - 1  # its value is the next word
                    break
                modes.add(letter)
    return modes


def chdir_options(core: tuple[str, ...]) -> list[str | None]:
    """Folders a program's own options move it to (``git -C dir``, ``make
    --directory=dir``, ``tar -C dir``)."""
    out: list[str | None] = []
    args = core[1:]
    for i, word in enumerate(args):
        following = args[i + 1] if i + 1 < len(args) else None
        if word in _CHDIR_SHORT or word in _CHDIR_LONG:
            out.append(following)
        elif word.startswith(tuple(o + "=" for o in _CHDIR_LONG)):
            out.append(word.split("=", 1)[1])
        elif word[:2] in _CHDIR_SHORT and len(word) > 2:
            out.append(word[2:])
    return out


def _operands(args: tuple[str, ...]) -> list[str]:
    """The words of ``args`` that are not options (every word after ``--``)."""
    out: list[str] = []
    ended = False
    for word in args:
        if ended or not word.startswith("-") or word == "-":
            out.append(word)
        elif word == "--":
            ended = True
    return out


def _in_place(program: str, args: tuple[str, ...]) -> bool:
    """Whether ``sed``/``perl`` edit their files in place (``-i``, ``-i.bak``, ``-pi``)."""
    for word in args:
        if word == "--":
            return False
        if word.startswith("--in-place"):
            return program == "sed"
        if word.startswith("-") and not word.startswith("--"):
            letters = word[1:]
            if program == "perl":
                letters = re.split(r"[eE]", letters, maxsplit=1)[0]  # -e takes the rest as code
            if "i" in letters:
                return True
    return False


def plain_writes(seg: Any) -> list[tuple[str, bool]]:
    """The words a segment plainly writes to, each with whether folders holding a held
    place count (``rm -r``); :data:`GIT_CONFIG_WRITE` for ``git config`` writes."""
    argv = seg.argv
    if argv and argv[0] in REDIRECTIONS:
        return [(w, False) for w in argv[1:]]
    core = seg.core
    if not core:
        return []
    program = os.path.basename(core[0])
    args = tuple(core[1:])
    if program in _CHANGE_EVERY:
        return [(w, program in _CHANGE_FOLDERS) for w in _operands(args)]
    if program in _CHANGE_LAST:
        words = _operands(args)[-1:]
        for i, word in enumerate(args):
            if word in ("-t", "--target-directory") and i + 1 < len(args):
                words.append(args[i + 1])
            elif word.startswith("--target-directory="):
                words.append(word.split("=", 1)[1])
        return [(w, False) for w in words]
    if program in ("sed", "perl") and _in_place(program, args):
        return [(w, False) for w in _operands(args)]
    outputs = [] if only_reads(core) else _output_options(args)
    if program == "dd":
        return [(w[3:], False) for w in args if w.startswith("of=")]
    if program == "git":
        sub, rest = git_subcommand(args)
        if sub == "config" and not any(a in GIT_CONFIG_READS for a in args):
            return [(GIT_CONFIG_WRITE, False)]
        if sub in _GIT_CHANGE_OPERANDS:
            operands = _operands(tuple(args[rest + 1 :]))
            return [*outputs, *((w, sub in ("rm", "mv")) for w in operands)]
    return outputs


def _output_options(args: tuple[str, ...]) -> list[tuple[str, bool]]:
    """The values of options that name a file a program writes (``-o FILE``,
    ``--output=FILE``, ``wget -O FILE``, ``--log-file FILE``...)."""
    out = []
    for i, word in enumerate(args):
        name, eq, value = word.partition("=")
        if name in _OUTPUT_OPTIONS and eq:
            out.append((value, False))
        elif (word in _OUTPUT_OPTIONS or word in ("-o", "-O")) and i + 1 < len(args):
            out.append((args[i + 1], False))
    return out


def expand_user(path: str) -> str:
    return os.path.expanduser(path) if path.startswith("~") else path


def braces(word: str, limit: int = 64) -> list[str]:
    """``word`` with simple brace expansions (``{a,b}``, ``{1..3}`` kept as written) expanded."""
    match = _BRACE.search(word)
    if not match or ".." in match.group(1) and "," not in match.group(1):
        return [word]
    out: list[str] = []
    for option in match.group(1).split(","):
        out += braces(word[: match.start()] + option + word[match.end() :], limit)
        if len(out) >= limit:
            break
    return [word, *out][:limit]
