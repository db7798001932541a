"""The files that make the agent's own policy, which a model may never change unasked.

A model that could write ``.agents/config/agent.yaml`` could allow itself
anything. :func:`protected_files` collects what such a write would reach:
every layer folder (the project ``.agents/`` whether it exists yet or not,
any ``.agents`` folder inside the workspace, which becomes the project layer
of a run started below it, the user layer ``$AGENT_HOME``, ``--layer`` and
``AGENT_PATH`` folders; their ``skills/`` and ``config/`` for the bundled
layer), handler modules declared outside a layer, and the files hook commands
name; and git's configuration, which names programs git runs (any
``.git`` in the workspace, the repository's git folder above it, the user's
``~/.gitconfig``). :meth:`Protected.file_target` judges a file tool's path,
:meth:`Protected.exec_target` a shell command: its file-writing
redirections, every word of a program not known to only read (an argument,
``--opt=FILE``, ``-oFILE``, a folder holding protected files), what unpacks
or checks out into its folder (``tar -x``, ``git stash``), and a program run
inside a protected folder. Paths are resolved (``~``, ``..``, symlinks, every
folder the command may ``cd`` to, ``env -C``, ``git -C``) before comparing,
and compared ignoring case; what cannot be worked out before the command
runs (``cd "$d"``, ``> $f``, ``xargs``) counts as protected.

Where a namespace sandbox runs a model's commands (:mod:`mdagent.safety.namespaces`)
the kernel holds the protected paths that exist read-only
(:meth:`Protected.read_only_binds`), so :meth:`Protected.held_by_kernel`
gives the guard for that case: it no longer judges what the kernel holds
(reading a layer's files, running a skill's scripts), only what it cannot
(paths that do not exist yet, the rest of a git folder, ``.agents`` folders
deeper in the workspace), and :meth:`Protected.kernel_refusal` names a plain
write into a held place (``> .agents/…``, ``rm``, ``sed -i``) so the model
gets a clear refusal instead of the kernel's "Read-only file system".

Not covered by the parser alone, and said so in the README: an arbitrary
program (``python -c``, ``make``, a script) can still write any file the
user can, when it does not name the file on the command line; only the
namespace sandbox holds those.
"""

from __future__ import annotations

import copy
import glob as globlib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mdagent.core.defaults import PROJECT_DIR

# A git folder anywhere in the workspace: its config and hooks name programs
# that git runs (core.fsmonitor, core.pager, aliases, filters, hooks), so a
# model writing it could make an allowed `git status` run anything.
GIT_DIR = ".git"
_INSIDE = {
    PROJECT_DIR: "a layer folder",
    GIT_DIR: "a git folder: its config and hooks run programs",
}

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
_GIT_CONFIG_READS = {
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
_CD = {"cd", "pushd", "popd"}
# Programs that add arguments read at run time to the command they run.
_ADDERS = {"xargs", "parallel"}
_REDIRECTIONS = {">", ">>", ">|", "&>", "&>>", ">&"}
_WORD_EXPANSION = re.compile(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")
_GLOB = re.compile(r"[*?[]")
_BRACE = re.compile(r"\{([^{}]*(?:,|\.\.)[^{}]*)\}")
# At most this many folders a command may run in are followed (cd in loops).
_MAX_FOLDERS = 256
# The parts of a git folder that name programs git runs (its settings, hooks,
# attributes and excludes): a namespace sandbox binds these read-only, and
# leaves objects, refs and the index writable so that git can still commit.
_GIT_HELD = ("config", "config.worktree", "hooks", "info")
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
# What _plain_writes says for `git config` that writes (not a word of the command).
_GIT_CONFIG_WRITE = "\0git config"


class _Unknown(Exception):
    """A folder the command runs in cannot be worked out before it runs."""


@dataclass(frozen=True)
class Protected:
    """Folders (everything inside) and single files a model may not change unasked.

    ``workdir`` is the workspace root; inside it any ``.agents`` folder is
    protected too. Each entry maps a normalised absolute path to what it is
    (shown to the person: "the project layer .agents").
    """

    workdir: str
    folders: Mapping[str, str]
    files: Mapping[str, str]
    environ: Mapping[str, str] | None = None
    #: The repository's git folders (their program-naming parts are what a sandbox binds).
    git_dirs: tuple[str, ...] = ()
    #: Held mode (:meth:`held_by_kernel`): the read-only binds (path -> what it is),
    #: every form of the places a command may write, and the entries the kernel holds.
    binds: Mapping[str, str] = field(default_factory=dict)
    writable: tuple[str, ...] | None = None
    held_entries: frozenset[str] = frozenset()

    def read_only_binds(self, writable: Iterable[str | os.PathLike[str]]) -> dict[str, str]:
        """The protected paths a namespace sandbox binds read-only, each with what it is.

        Those that exist beneath a place a command may write (``writable``;
        elsewhere nothing is writable anyway), by their real path, each once
        (not inside another); a git folder by its parts that name programs
        (:data:`_GIT_HELD`), so git can still write objects and refs. A path
        that does not exist gets no bind (no mount point is made in the
        workspace): the parser's guard keeps it.
        """
        places = [os.path.realpath(p) for p in writable]
        git = {os.path.realpath(g) for g in self.git_dirs}
        found: dict[str, str] = {}
        for entry, what in [*self.folders.items(), *self.files.items()]:
            real = os.path.realpath(entry)
            folders = [real, *_submodule_git_dirs(real)] if real in git else []
            parts = [os.path.join(f, part) for f in folders for part in _GIT_HELD] or [real]
            for path in parts:
                found.setdefault(path, what)
        binds: dict[str, str] = {}
        for path in sorted(found):
            if not os.path.exists(path) or not any(_beneath(path, p) for p in places):
                continue
            if not any(_beneath(path, b) for b in binds):
                binds[path] = found[path]
        return binds

    def held_by_kernel(self, writable: Iterable[str | os.PathLike[str]]) -> Protected:
        """This guard for a command a namespace sandbox runs, writing only in ``writable``.

        It judges only what the kernel does not hold: a path beneath a
        read-only bind (:meth:`read_only_binds`) or outside every writable
        place is left to the kernel. So reading a layer's files or running a
        skill's scripts is no longer asked about; a protected path that does
        not exist yet, the rest of a git folder and ``.agents`` folders deeper
        in the workspace still are.
        """
        places = list(writable)
        held = replace(
            self,
            binds=self.read_only_binds(places),
            writable=tuple(sorted({os.path.realpath(p) for p in places})),
        )
        entries = [*self.folders, *self.files]
        return replace(held, held_entries=frozenset(e for e in entries if held._held(e)))

    def _held(self, path: str) -> bool:
        """Whether the kernel keeps ``path`` read-only (held mode only)."""
        if self.writable is None:
            return False
        real = os.path.realpath(path)
        if any(_beneath(real, b) for b in self.binds):
            return True
        return not any(_beneath(real, w) for w in self.writable)

    def _holds_writable(self, folder: str) -> bool:
        """Whether a place a command may write lies inside ``folder`` (``tar -x -C /``)."""
        real = os.path.realpath(folder)
        return any(_beneath(w, real) for w in self.writable or ())

    def kernel_refusal(
        self, command: str, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> str | None:
        """The kernel-held place ``command`` plainly writes, or None (held mode).

        Only what the parser can tell for sure counts: a redirection's target,
        the operands of programs that change every file they are given
        (``rm``, ``mv``, ``touch``, ``tee``, ``chmod``...; ``rm -r`` of a folder
        holding one), the target of ``cp``/``ln``/``install``, ``sed -i`` and
        ``perl -i``, ``dd of=``, ``git config`` writes and ``git rm``/``mv``/
        ``checkout``/``restore`` operands. The command would fail on the
        kernel's "Read-only file system"; this lets the model be told why
        first. Whatever cannot be worked out is left to the kernel.
        """
        held = self._kernel_held()
        if not held:
            return None
        from mdagent.safety.shell.shellparse import Unparseable, parse

        cwd = os.path.normpath(os.path.join(self.workdir, cwd or "."))
        env = env if env is not None else (self.environ or os.environ)
        try:
            segments = parse(command)
        except Unparseable:
            return None
        moves = [s.core for s in segments if s.core and os.path.basename(s.core[0]) in _CD]
        reading = _Reading(self, command, env, cwd, moved=bool(moves))
        try:
            folders = self._folders(moves, reading)
        except _Unknown:
            folders = [cwd]
        for seg in segments:
            writes = _plain_writes(seg)
            if not writes:
                continue
            here = list(folders)
            for word in [*seg.chdirs, *(_chdir_options(seg.core) if seg.core else [])]:
                for path in reading.expanded(word, folders) if word else ():
                    here += [os.path.normpath(os.path.join(b, path)) for b in folders if path]
            for word, parents in writes:
                if word == _GIT_CONFIG_WRITE:
                    found = self._git_config_bind()
                    if found:
                        return found
                    continue
                for path in reading.expanded(word, here):
                    # None: named at run time, "": no word at all; the kernel judges those.
                    for base in here if path else ():
                        target = os.path.normpath(os.path.join(base, path))
                        found = self._bound(target, parents, held)
                        if found:
                            return found
        return None

    def _kernel_held(self) -> dict[str, str]:
        """Every protected place the kernel holds (held mode): the read-only binds and the
        protected paths outside every writable place, by real path, with what each is."""
        held = dict(self.binds)
        for entry in self.held_entries:
            what = self.folders.get(entry) or self.files.get(entry) or "protected"
            held.setdefault(os.path.realpath(entry), what)
        return held

    def _bound(self, path: str, parents: bool, held: Mapping[str, str]) -> str | None:
        real = os.path.realpath(path)
        for place, what in held.items():
            if _beneath(real, place):
                return f"{self._shown(path)} ({what})"
            if parents and _beneath(place, real):
                return f"{self._shown(place)} ({what}), inside {self._shown(path)}"
        return None

    def _git_config_bind(self) -> str | None:
        for bind, what in self.binds.items():
            if os.path.basename(bind) in ("config", "config.worktree") and any(
                os.path.dirname(bind) == os.path.realpath(g) for g in self.git_dirs
            ):
                return f"{self._shown(bind)} ({what})"
        return None

    def file_target(self, path: str, cwd: str | None = None) -> str | None:
        """What ``path`` (relative to ``cwd``, default the workspace) reaches that is protected."""
        return self._covers(_expand_user(path), cwd or self.workdir, parents=False)

    def exec_target(
        self, command: str, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> str | None:
        """What protected file ``command`` would write, move or delete, or None.

        Every word of a program not known to only read (:data:`_READERS`)
        counts as a file it may change: an argument, the value of
        ``--opt=FILE`` or ``-oFILE``, a folder (everything inside); so does a
        redirection's target, and the folder a program unpacks or checks out
        into (``tar -x``, ``git stash``, ``git checkout``...). Relative names
        are tried from every folder the command may run in (``cd``,
        ``pushd``, ``env -C``, ``git -C``...). Fails closed: a target
        computed at run time (``> $out`` with ``out`` set by the command,
        ``$(...)``), a folder changed to at run time (``cd "$d"``, ``cd`` with
        ``CDPATH`` set by the command), arguments ``xargs`` adds, and a
        command that cannot be parsed but names a protected place all count.
        """
        from mdagent.safety.shell.shellparse import Unparseable, parse

        cwd = os.path.normpath(os.path.join(self.workdir, cwd or "."))
        env = env if env is not None else (self.environ or os.environ)
        try:
            segments = parse(command)
        except Unparseable:
            return self._named_in(command)
        moves = [s.core for s in segments if s.core and os.path.basename(s.core[0]) in _CD]
        reading = _Reading(self, command, env, cwd, moved=bool(moves))
        try:
            reading.folders = self._folders(moves, reading)
        except _Unknown as why:
            reading.unknown = str(why)
        for seg in segments:
            found = self._segment_target(seg, reading)
            if found:
                return found
        return None

    def _folders(self, moves: list[tuple[str, ...]], reading: _Reading) -> list[str]:
        """Every folder the parts of a command may run in: where it starts and
        wherever its ``cd``/``pushd`` commands may lead, taken in any order (a
        loop or a function may run a later ``cd`` first). Raises :class:`_Unknown`."""
        folders = list(reading.folders)
        for _ in moves:
            found = [t for core in moves for t in self._cd_targets(core, reading, folders)]
            new = [t for t in dict.fromkeys(found) if t not in folders]
            if not new:
                break
            folders += new
            if len(folders) > _MAX_FOLDERS:
                raise _Unknown("more folders than can be followed")
        return folders

    def _cd_targets(
        self, core: tuple[str, ...], reading: _Reading, folders: list[str]
    ) -> list[str]:
        """The folders ``cd``/``pushd``/``popd`` (``core``) may go to from ``folders``."""
        program = os.path.basename(core[0])
        args = list(core[1:])
        while args and args[0].startswith("-") and args[0] != "-" and program == "cd":
            if args.pop(0) == "--":
                break
        if program == "popd" or (program == "pushd" and (not args or args[0][:1] in "+-")):
            return []  # back to, or rotating, folders already listed
        if not args:
            args = ["$HOME"]
        if args[0] == "-":
            args = ["$OLDPWD"]
        targets = reading.expanded(args[0], folders)
        if None in targets:
            raise _Unknown(f"`{program} {args[0]}` goes to a folder named at run time")
        cdpath = reading.env.get("CDPATH", "")
        out = []
        # An expansion that comes out empty leaves `cd` alone: it goes home.
        home = reading.env.get("HOME") or ""
        if "" in targets and not home:
            raise _Unknown(f"`{program} {args[0]}` may go to $HOME, which is not set")
        for target in (str(t or home) for t in targets):
            searched = not target.startswith(("/", "./", "../")) and target not in (".", "..")
            if searched and re.search(r"(?<!\w)CDPATH(?!\w)", reading.command):
                raise _Unknown(f"`{program} {target}` searches a CDPATH set by the command")
            for base in folders:
                out.append(os.path.normpath(os.path.join(base, target)))
                for entry in cdpath.split(os.pathsep) if searched and cdpath else ():
                    # Only a folder that exists is found (making one in a
                    # protected place is caught as a write of its own).
                    found = os.path.normpath(os.path.join(base, _expand_user(entry), target))
                    if os.path.isdir(found):
                        out.append(found)
        return out

    def _segment_target(self, seg: Any, reading: _Reading) -> str | None:
        """What protected place one segment (a simple command or a redirection) changes."""
        argv = seg.argv
        if argv and argv[0] in _REDIRECTIONS:
            return reading.named(argv[1:], reading.folders, parents=False)
        core = seg.core
        if not core or os.path.basename(core[0]) in _CD:
            return None
        if None in reading.expanded(core[0]):
            # `$cmd` may split into any program and arguments: `gzip .agents/…`.
            return f"{core[0]} (a program named at run time: it may change any file)"
        program = os.path.basename(core[0])
        folders = reading.folders
        chdirs = [*seg.chdirs, *_chdir_options(core)]
        if chdirs:
            if None in chdirs:
                reading = reading.lost("a wrapper runs it in a folder not named on the line")
            else:
                try:
                    folders = folders + [
                        os.path.normpath(os.path.join(base, path))
                        for word in chdirs
                        for path in reading.expanded(word, folders, strict=True)
                        for base in folders
                    ]
                except _Unknown as why:
                    reading = reading.lost(str(why))
        # Wrappers' own words (`time -o FILE`, `FOO=path`) and, unless the
        # program only reads, every word of the program.
        programs = {len(argv) - len(stage) for stage in seg.stages}
        words = [w for i, w in enumerate(argv[: len(argv) - len(core)]) if i not in programs]
        only_reads = _only_reads(core)
        if not only_reads:
            words += core[1:]
            adder = next(
                (w for st in seg.stages for w in st[:1] if os.path.basename(w) in _ADDERS), None
            )
            if adder or program in _ADDERS:
                return (
                    f"the files named by the arguments `{adder or program}` adds at run time "
                    "(they may be any file, these included)"
                )
        found = reading.named(words, folders, parents=True)
        if found or only_reads:
            return found
        # A program run inside a protected folder may write there unnamed
        # (`cd .agents/config && curl -O …`, `make`, `npm install`).
        if reading.unknown:
            return f"files where `{program}` runs ({reading.unknown}; it may be any folder)"
        for base in folders:
            found = self._covers(".", base, parents=False)
            if found:
                return f"{found}, where `{program}` runs"
        for word in words:
            found = self._mentions(word)
            if found:
                return found
        configures = program == "git" and _git_subcommand(core[1:])[0] == "config"
        if configures and not any(a in _GIT_CONFIG_READS for a in core[1:]):
            return "git's configuration (`git config`: its settings can run programs)"
        changes = _changes_folder(core)
        if changes is None:
            return None
        if reading.unknown:
            return f"files `{changes}` changes ({reading.unknown}; it may be any folder)"
        for base in folders:
            top = _git_top(base) if program == "git" else base
            found = self._covers(".", top, parents=True)
            if found:
                return f"{found}, changed by `{changes}` without naming it"
        return None

    # -- matching ----------------------------------------------------------------------

    def _covers(self, path: str, cwd: str, *, parents: bool) -> str | None:
        lexical = os.path.normpath(os.path.join(cwd, path))
        for form in dict.fromkeys([lexical, os.path.realpath(lexical)]):
            what = self._what(form, parents)
            if what:
                return f"{self._shown(form)} ({what})"
        return None

    def _what(self, form: str, parents: bool) -> str | None:
        if self._held(form) and not (parents and self._holds_writable(form)):
            return None  # the kernel keeps it read-only (held mode)
        key = os.path.normcase(form).casefold()
        inside = key.rstrip(os.sep) + os.sep
        for folder, what in self.folders.items():
            f = folder.casefold()
            if key == f or key.startswith(f.rstrip(os.sep) + os.sep):
                return what
            if parents and f.startswith(inside) and folder not in self.held_entries:
                return f"holds {what}"
        for file, what in self.files.items():
            f = file.casefold()
            if key == f:
                return what
            if parents and f.startswith(inside) and file not in self.held_entries:
                return f"holds {what}"
        return self._agents_inside(form, parents)

    def _shown(self, path: str) -> str:
        for root in dict.fromkeys([self.workdir, os.path.realpath(self.workdir)]):
            if path == root:
                return "."
            if path.startswith(root.rstrip(os.sep) + os.sep):
                return os.path.relpath(path, root)
        return path

    def _agents_inside(self, path: str, parents: bool) -> str | None:
        """Any ``.agents`` folder in the workspace (the project layer of a run below
        it) and any ``.git`` (its config and hooks run programs), also when
        ``parents`` and ``path`` is a folder holding one."""
        for root in {os.path.normpath(self.workdir), os.path.realpath(self.workdir)}:
            if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
                rel = os.path.relpath(path, root)
                parts = [p.casefold() for p in Path(rel).parts]
                for name, what in _INSIDE.items():
                    if name in parts:
                        return what
                if parents and rel == "." and not self._held(os.path.join(path, PROJECT_DIR)):
                    return f"holds {PROJECT_DIR}"
                if parents:
                    for name, what in _INSIDE.items():
                        inner = os.path.join(path, name)
                        if os.path.lexists(inner) and not self._held(inner):
                            return f"holds {name}, {what}"
        return None

    def _mentions(self, word: str) -> str | None:
        """A protected place a word mentions by name inside other text (code for
        ``python -c``, a sed script): the program may write there."""
        for name, what in _INSIDE.items():
            pattern = rf"[^\s'\"`;,()=<>|&]*(?<![\w.]){re.escape(name)}(?![\w.-])[^\s'\"`;,()<>|&]*"
            for match in re.finditer(pattern, word, re.I):
                # Held mode: a mention of a place the kernel holds is the kernel's.
                if not self._held(os.path.join(self.workdir, _expand_user(match.group()))):
                    return f"{name} (mentioned in `{word}`: {what})"
        text = word.casefold()
        for path, what in [*self.folders.items(), *self.files.items()]:
            if path.casefold() in text and path not in self.held_entries:
                return f"{self._shown(path)} (mentioned in `{word}`: {what})"
        return None

    def _named_in(self, command: str) -> str | None:
        """A protected place the text of ``command`` mentions (for what cannot be parsed)."""
        text = command.casefold()
        for name, what in _INSIDE.items():
            if name in text:
                return f"{name} (the command cannot be parsed and names {what})"
        for path, what in [*self.folders.items(), *self.files.items()]:
            if path in self.held_entries:
                continue
            # The name, with its folder when the name alone is a common word (git, home).
            parts = Path(path).parts
            tail = parts[-1] if parts[-1][:1] == "." or "." in parts[-1] else "/".join(parts[-2:])
            names = {path.casefold(), tail.casefold()}
            if any(n and n in text for n in names):
                return f"{self._shown(path)} (the command cannot be parsed and names {what})"
        return None


class _Reading:
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

    def lost(self, why: str) -> _Reading:
        """This reading for a part that runs in a folder not knowable here."""
        other = copy.copy(self)
        other.unknown = self.unknown or why
        return other

    def expanded(
        self, word: str, folders: Iterable[str] = (), *, strict: bool = False
    ) -> list[str | None]:
        """The paths ``word`` may stand for once bash expands it; None: not knowable
        here (``strict``: raise :class:`_Unknown` instead)."""
        out: list[str | None] = []
        if any(m in word for m in ("`", "$(", "<(", ">(")):
            out.append(None)
        else:
            for variant in _braces(word):
                names = [m.group(1) or m.group(2) for m in _WORD_EXPANSION.finditer(variant)]
                expanded = _WORD_EXPANSION.sub(
                    lambda m: self.env.get(m.group(1) or m.group(2), ""), variant
                )
                if any(n in self.set_here for n in names) or "$" in expanded:
                    out.append(None)
                    continue
                expanded = _expand_user(expanded)
                out.append(expanded)
                if _GLOB.search(expanded):
                    for base in folders or (self.protected.workdir,):
                        found = globlib.glob(os.path.join(base, expanded), include_hidden=True)
                        out.extend(found[:1000])
        if strict and None in out:
            raise _Unknown(f"`{word}` is a folder named at run time")
        return out

    def named(self, words: Iterable[str], folders: list[str], *, parents: bool) -> str | None:
        """The protected place any of ``words`` names, tried from each of ``folders``."""
        for word in words:
            for candidate in _candidates(word):
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
                        found = self.protected._covers(path, base, parents=parents)
                        if found:
                            return found
        return None


def _candidates(word: str) -> list[str]:
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


def _only_reads(core: tuple[str, ...]) -> bool:
    """Whether ``core`` only reads the files it names (see :data:`_READERS`)."""
    program = os.path.basename(core[0])
    args = core[1:]
    if program == "git":
        sub, rest = _git_subcommand(args)
        if sub not in _GIT_READERS or any(
            a.startswith(("-c", "--config-env", "--exec-path=")) for a in args[:rest]
        ):
            return False
        return not any(a.startswith(_GIT_UNSAFE_OPTIONS) for a in args[rest:])
    writing = _READERS.get(program)
    if writing is None:
        return False
    return not any(a.startswith(writing) for a in args if a.startswith("-")) if writing else True


def _git_subcommand(args: tuple[str, ...]) -> tuple[str | None, int]:
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


def _changes_folder(core: tuple[str, ...]) -> str | None:
    """How ``core`` changes files in its folder without naming them (``git
    stash``, ``tar -x``, ``patch``), or None."""
    program = os.path.basename(core[0])
    args = core[1:]
    if program == "git":
        sub, at = _git_subcommand(args)
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
    return program if program in _EXTRACTORS and _extracts(program, args) else None


def _extracts(program: str, args: tuple[str, ...]) -> bool:
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


def _chdir_options(core: tuple[str, ...]) -> list[str | None]:
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


def _git_top(folder: str) -> str:
    """The top of the git work tree ``folder`` is in (``folder`` itself if none)."""
    here = folder
    while True:
        if os.path.lexists(os.path.join(here, GIT_DIR)):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return folder
        here = parent


def _submodule_git_dirs(git_dir: str, limit: int = 64) -> list[str]:
    """The git folders of submodules kept in ``git_dir/modules`` (nested ones too)."""
    out: list[str] = []
    pending = [os.path.join(git_dir, "modules")]
    while pending and len(out) < limit:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            if os.path.isfile(os.path.join(entry.path, "HEAD")):
                out.append(entry.path)
                pending.append(os.path.join(entry.path, "modules"))
            else:
                pending.append(entry.path)  # a submodule named with a slash: a/b
    return out


def _beneath(path: str, place: str) -> bool:
    """Whether ``path`` is ``place`` or inside it (both normalised, absolute)."""
    return path == place or path.startswith(place.rstrip(os.sep) + os.sep)


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


def _plain_writes(seg: Any) -> list[tuple[str, bool]]:
    """The words a segment plainly writes to, each with whether folders holding a held
    place count (``rm -r``); :data:`_GIT_CONFIG_WRITE` for ``git config`` writes."""
    argv = seg.argv
    if argv and argv[0] in _REDIRECTIONS:
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
    outputs = [] if _only_reads(core) else _output_options(args)
    if program == "dd":
        return [(w[3:], False) for w in args if w.startswith("of=")]
    if program == "git":
        sub, rest = _git_subcommand(args)
        if sub == "config" and not any(a in _GIT_CONFIG_READS for a in args):
            return [(_GIT_CONFIG_WRITE, False)]
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


def _expand_user(path: str) -> str:
    return os.path.expanduser(path) if path.startswith("~") else path


def _braces(word: str, limit: int = 64) -> list[str]:
    """``word`` with simple brace expansions (``{a,b}``, ``{1..3}`` kept as written) expanded."""
    match = _BRACE.search(word)
    if not match or ".." in match.group(1) and "," not in match.group(1):
        return [word]
    out: list[str] = []
    for option in match.group(1).split(","):
        out += _braces(word[: match.start()] + option + word[match.end() :], limit)
        if len(out) >= limit:
            break
    return [word, *out][:limit]


def protected_files(
    *,
    workdir: str | os.PathLike[str],
    project_layer: str | os.PathLike[str] | None = None,
    layers: Iterable[Any] = (),
    settings: Mapping[str, Any] | None = None,
    tools: Iterable[Any] = (),
    environ: Mapping[str, str] = os.environ,
) -> Protected:
    """Everything a model may not change unasked, for a workspace and its layers.

    ``layers`` are :class:`mdagent.core.layers.Layer` records; ``tools`` the
    registry's tool specs (for handler modules); ``settings`` the merged
    settings (for hook commands).
    """
    from mdagent.core.layers import state_dir, user_layer_path

    root = os.path.normpath(os.path.abspath(workdir))
    folders: dict[str, str] = {}
    files: dict[str, str] = {}

    def folder(path: Any, what: str) -> None:
        for form in _forms(path):
            folders.setdefault(os.path.normcase(form), what)

    def file(path: Any, what: str) -> None:
        for form in _forms(path):
            files.setdefault(os.path.normcase(form), what)

    folder(project_layer or os.path.join(root, PROJECT_DIR), "the project layer")
    git_dirs = _git_dirs(root)
    for git_dir in git_dirs:
        folder(git_dir, "the workspace's git folder: its config and hooks run programs")
    # A `policy.paths` root is a workspace too: its repository's configuration
    # runs programs when anyone runs git there (red team 15).
    for extra in _policy_paths(settings or {}):
        for git_dir in _git_dirs(os.path.normpath(os.path.join(root, _expand_user(extra)))):
            if git_dir not in git_dirs:
                git_dirs.append(git_dir)
                folder(
                    git_dir, "a policy.paths root's git folder: its config and hooks run programs"
                )
    home = environ.get("HOME") or os.path.expanduser("~")
    xdg = environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    configs = [environ.get("GIT_CONFIG_GLOBAL") or "", os.path.join(home, ".gitconfig")]
    configs = [c for c in configs if c] + [os.path.join(xdg, "git", "config")]
    for config in configs[:-1]:
        file(config, "git's user configuration: it can run programs")
    folder(os.path.join(xdg, "git"), "git's user configuration: it can run programs")
    for hooks in _hooks_paths([*(os.path.join(g, "config") for g in git_dirs), *configs], root):
        folder(hooks, "git's hooks folder (core.hooksPath): git runs what it holds")
    folder(user_layer_path(environ), "the user layer ($AGENT_HOME)")
    # The registry cache there holds the compiled settings; the audit log is the record.
    folder(state_dir(environ), "mdagent's state folder (the registry cache, the audit log)")
    for entry in environ.get("AGENT_PATH", "").split(os.pathsep):
        if entry.strip():
            folder(os.path.expanduser(entry), "a layer folder (AGENT_PATH)")
    _layer_folders(layers, folder)
    _other_agents_files(root, home, environ, settings, folder, file)
    for spec in tools:
        implementation = getattr(spec, "implementation", None) or {}
        ref = implementation.get("handler")
        if isinstance(ref, str):
            module = re.sub(r":[A-Za-z_]\w*$", "", ref)
            base = implementation.get("base_dir") or root
            file(os.path.join(base, os.path.expanduser(module)), "a handler module")
    for hook_file in _hook_files(settings or {}, root):
        file(hook_file, "a hook script")
    for server_file in _server_files(settings or {}, root):
        file(server_file, "an MCP server's script (it runs outside the sandbox)")
    return Protected(root, folders, files, environ, tuple(git_dirs))


def _layer_folders(layers: Iterable[Any], folder: Callable[[Any, str], None]) -> None:
    """Each layer's folder (the bundled layer's declarations), and the real folders
    behind its symlinked skill folders."""
    for layer in layers:
        kind = getattr(layer, "kind", "")
        path = Path(getattr(layer, "path", layer))
        if getattr(layer, "foreign", False):
            continue  # the workspace or the home folder: its files are named below
        if kind == "bundled":
            # In a source checkout the bundled layer is the repository root:
            # only its declarations are policy.
            folder(path / "skills", "the bundled layer")
            folder(path / "config", "the bundled layer")
        else:
            folder(path, f"a layer folder ({kind or 'layer'})")
        # A symlinked skill folder is part of its layer wherever it leads.
        for linked in _linked_skill_folders(layer):
            folder(linked, f"a skill folder linked from a layer ({kind or 'layer'})")


def _other_agents_files(
    root: str,
    home: str,
    environ: Mapping[str, str],
    settings: Mapping[str, Any] | None,
    folder: Callable[[Any, str], None],
    file: Callable[[Any, str], None],
) -> None:
    """Other agents' skill folders, settings and commands that mdagent reads as its own."""
    # Other agents' skill folders are layers once they exist (mdagent.core.layers):
    # one the model creates would be read as a layer on the next run.
    from mdagent.core.foreignpaths import LAYER_SOURCES, OFF_BY_DEFAULT, enabled, foreign_paths
    from mdagent.core.layers import INTEROP_KINDS, interop_paths

    folder(os.path.join(root, ".claude", "skills"), "a skill folder read as a layer")
    for kind, path in interop_paths(Path(root), environ, existing_only=False):
        source = LAYER_SOURCES.get(kind)
        if source not in OFF_BY_DEFAULT or enabled(settings, source):
            folder(path, f"a skill folder read as a layer ({INTEROP_KINDS[kind]})")
    # Other agents' settings and commands are read as settings and commands
    # (mdagent.declarations.interop): one the model writes would act on the next run.
    for path, is_folder, what in foreign_paths(Path(root), Path(home), environ):
        (folder if is_folder else file)(str(path), what)


def protected_for(ctx: Any) -> Protected:
    """The protected files of a call's workspace: its policy's (cached there), else built here."""
    policy = getattr(ctx, "policy", None) or getattr(getattr(ctx, "toolbox", None), "policy", None)
    if hasattr(policy, "protected_files"):
        return policy.protected_files(ctx)
    registry = getattr(ctx, "registry", None)
    return protected_files(
        workdir=getattr(ctx, "workdir", None) or os.getcwd(),
        layers=getattr(registry, "layers", ()) or (),
        settings=getattr(ctx, "settings", None) or getattr(registry, "settings", None),
        tools=getattr(registry, "tools", {}).values() if registry is not None else (),
    )


def _hooks_paths(configs: Iterable[str], root: str) -> list[str]:
    """The folders ``core.hooksPath`` names in git's configuration files (``.husky``,
    ``.githooks``): git runs the hooks there, outside any sandbox. A relative one is
    taken from the top of the work tree."""
    out = []
    for config in configs:
        try:
            with open(config, encoding="utf-8", errors="replace") as handle:
                text = handle.read(1 << 20)
        except OSError:
            continue
        section = ""
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("["):
                section = line[1:].split("]", 1)[0].strip().lower()
                continue
            key, eq, value = line.partition("=")
            if section == "core" and eq and key.strip().lower() == "hookspath":
                value = value.split("#", 1)[0].split(";", 1)[0].strip().strip('"')
                if value:
                    out.append(os.path.join(_git_top(root), _expand_user(value)))
    return out


def _linked_skill_folders(layer: Any) -> list[str]:
    """The real folders of a layer's skills that live outside the layer (symlinked in)."""
    from mdagent.core.layers import Layer, trust_root, walk_skills

    if not isinstance(layer, Layer) or not layer.skills_dir.is_dir():
        return []
    try:
        home = layer.path.resolve()
    except OSError:
        return []
    out = []
    for found in walk_skills(layer.skills_dir, trust_root(layer)):
        if found.kind == "skill":
            real = found.path.resolve()
            if not real.is_relative_to(home):
                out.append(str(real))
    return out


def git_dirs_of(root: str) -> list[str]:
    """The git folders of the repository ``root`` is in (see :func:`_git_dirs`), found now."""
    return _git_dirs(root)


def _git_dirs(root: str) -> list[str]:
    """The git folder of the repository ``root`` is in, wherever it lives: a
    ``.git`` above the workspace, the folder a ``.git`` file points to
    (``gitdir: …``, a worktree or submodule), and a worktree's common folder."""
    here = root
    while True:
        dot_git = os.path.join(here, GIT_DIR)
        if os.path.isdir(dot_git):
            return [dot_git]
        if os.path.isfile(dot_git):
            out = [dot_git]
            try:
                with open(dot_git, encoding="utf-8", errors="replace") as handle:
                    line = handle.readline(4096).strip()
            except OSError:
                return out
            if line.startswith("gitdir:"):
                target = os.path.join(here, line[len("gitdir:") :].strip())
                out.append(target)
                try:
                    with open(os.path.join(target, "commondir"), encoding="utf-8") as handle:
                        out.append(os.path.join(target, handle.readline(4096).strip()))
                except OSError:
                    pass
            return out
        parent = os.path.dirname(here)
        if parent == here:
            return []
        here = parent


def _policy_paths(settings: Mapping[str, Any]) -> list[str]:
    """The ``policy.paths`` roots ``settings`` names (any layer's: protecting more only tightens)."""
    policy = settings.get("policy")
    paths = policy.get("paths") if isinstance(policy, Mapping) else None
    paths = [paths] if isinstance(paths, str) else paths
    return [p for p in paths if isinstance(p, str) and p] if isinstance(paths, list) else []


def _forms(path: Any) -> set[str]:
    lexical = os.path.normpath(os.path.abspath(os.path.expanduser(str(path))))
    return {lexical, os.path.realpath(lexical)}


def _hook_files(settings: Mapping[str, Any], root: str) -> list[str]:
    """Existing files the hook commands of ``settings`` name (``./scripts/guard.sh``,
    ``sh "$PWD/scripts/guard.sh"``, ``python3 -m pyguard``): read as trust reads
    them (:func:`mdagent.safety.commandfiles.named_files`), so what trust binds the kernel holds."""
    section = settings.get("hooks")
    if not isinstance(section, Mapping):
        return []
    from mdagent.safety.commandfiles import named_files
    from mdagent.safety.shell.shellparse import Unparseable, parse

    workspace = Path(os.path.realpath(root))
    out = []
    for when in ("before", "after", "session_start", "prompt", "stop"):  # hooks.EVENTS
        entries = section.get(when)
        for entry in entries if isinstance(entries, list) else ():
            run = entry.get("run") if isinstance(entry, Mapping) else None
            if not isinstance(run, (str, list)):
                continue
            out += [p for p in named_files(run, workspace, workspace) if os.path.isfile(p)]
            # Literal words anywhere (a script outside the workspace, in a policy.paths root).
            if isinstance(run, list):  # an argv: no shell
                words = [w for w in run if isinstance(w, str)]
            else:
                try:
                    words = [w for seg in parse(run) for w in seg.argv]
                except Unparseable:
                    words = run.split()
            for word in words:
                path = os.path.join(root, _expand_user(word))
                if os.path.isfile(path):
                    out.append(path)
    return out


def _server_files(settings: Mapping[str, Any], root: str) -> list[str]:
    """Existing files inside the workspace the ``mcp_servers:`` commands name
    (``python3 ./srv.py``): a server runs outside the sandbox, as a hook does."""
    servers = settings.get("mcp_servers")
    if not isinstance(servers, Mapping):
        return []
    from mdagent.safety.commandfiles import named_files

    workspace = Path(os.path.realpath(root))
    out = []
    for entry in servers.values():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("command"), str):
            continue
        base = workspace / str(entry["cwd"]) if entry.get("cwd") else workspace
        args = entry.get("args") if isinstance(entry.get("args"), list) else []
        words = [entry["command"], *(str(a) for a in args)]
        out += [p for p in named_files(words, base, workspace) if os.path.isfile(p)]
    return out
