"""The guard of the files that make the agent's own policy: what a call would change of them.

A model that could write ``.agents/config/agent.yaml`` could allow itself
anything. :class:`Protected` is the guard that judges a call against the
places such a write would reach: the folders and files
:func:`mdagent.safety.protectedfiles.protected_files` lists (every layer
folder, handler modules, the files hook commands name, git's
configuration), any ``.agents`` folder inside the workspace (it becomes the
project layer of a run started below it) and any ``.git`` in it.
:meth:`Protected.file_target` judges a file tool's path,
:meth:`Protected.exec_target` a shell command: its file-writing
redirections, every word of a program not known to only read (an argument,
``--opt=FILE``, ``-oFILE``, a folder holding protected files), what unpacks
or checks out into its folder (``tar -x``, ``git stash``), and a program run
inside a protected folder (:mod:`mdagent.safety.commandwrites` reads the
command's words). Paths are resolved (``~``, ``..``, symlinks, every folder
the command may ``cd`` to, ``env -C``, ``git -C``) before comparing, and
compared ignoring case; what cannot be worked out before the command
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

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mdagent.core.defaults import PROJECT_DIR
from mdagent.safety.commandwrites import (
    ADDERS,
    CD,
    GIT_CONFIG_READS,
    GIT_CONFIG_WRITE,
    REDIRECTIONS,
    Reading,
    UnknownFolder,
    changes_folder,
    chdir_options,
    expand_user,
    git_subcommand,
    only_reads,
    plain_writes,
)
from mdagent.safety.gitfolders import GIT_DIR, git_top, submodule_git_dirs

_INSIDE = {
    PROJECT_DIR: "a layer folder",
    GIT_DIR: "a git folder: its config and hooks run programs",
}
# At most this many folders a command may run in are followed (cd in loops).
_MAX_FOLDERS = 256
# The parts of a git folder that name programs git runs (its settings, hooks,
# attributes and excludes): a namespace sandbox binds these read-only, and
# leaves objects, refs and the index writable so that git can still commit.
_GIT_HELD = ("config", "config.worktree", "hooks", "info")


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
            folders = [real, *submodule_git_dirs(real)] if real in git else []
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
        moves = [s.core for s in segments if s.core and os.path.basename(s.core[0]) in CD]
        reading = Reading(self, command, env, cwd, moved=bool(moves))
        try:
            folders = self._folders(moves, reading)
        except UnknownFolder:
            folders = [cwd]
        for seg in segments:
            writes = plain_writes(seg)
            if not writes:
                continue
            here = list(folders)
            for word in [*seg.chdirs, *(chdir_options(seg.core) if seg.core else [])]:
                for path in reading.expanded(word, folders) if word else ():
                    here += [os.path.normpath(os.path.join(b, path)) for b in folders if path]
            for word, parents in writes:
                if word == GIT_CONFIG_WRITE:
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
        return self.covers(expand_user(path), cwd or self.workdir, parents=False)

    def exec_target(
        self, command: str, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> str | None:
        """What protected file ``command`` would write, move or delete, or None.

        Every word of a program not known to only read (:func:`only_reads`)
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
        moves = [s.core for s in segments if s.core and os.path.basename(s.core[0]) in CD]
        reading = Reading(self, command, env, cwd, moved=bool(moves))
        try:
            reading.folders = self._folders(moves, reading)
        except UnknownFolder as why:
            reading.unknown = str(why)
        for seg in segments:
            found = self._segment_target(seg, reading)
            if found:
                return found
        return None

    def _folders(self, moves: list[tuple[str, ...]], reading: Reading) -> list[str]:
        """Every folder the parts of a command may run in: where it starts and
        wherever its ``cd``/``pushd`` commands may lead, taken in any order (a
        loop or a function may run a later ``cd`` first). Raises :class:`UnknownFolder`."""
        folders = list(reading.folders)
        for _ in moves:
            found = [t for core in moves for t in self._cd_targets(core, reading, folders)]
            new = [t for t in dict.fromkeys(found) if t not in folders]
            if not new:
                break
            folders += new
            if len(folders) > _MAX_FOLDERS:
                raise UnknownFolder("more folders than can be followed")
        return folders

    def _cd_targets(self, core: tuple[str, ...], reading: Reading, folders: list[str]) -> list[str]:
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
            raise UnknownFolder(f"`{program} {args[0]}` goes to a folder named at run time")
        cdpath = reading.env.get("CDPATH", "")
        out = []
        # An expansion that comes out empty leaves `cd` alone: it goes home.
        home = reading.env.get("HOME") or ""
        if "" in targets and not home:
            raise UnknownFolder(f"`{program} {args[0]}` may go to $HOME, which is not set")
        for target in (str(t or home) for t in targets):
            searched = not target.startswith(("/", "./", "../")) and target not in (".", "..")
            if searched and re.search(r"(?<!\w)CDPATH(?!\w)", reading.command):
                raise UnknownFolder(f"`{program} {target}` searches a CDPATH set by the command")
            for base in folders:
                out.append(os.path.normpath(os.path.join(base, target)))
                for entry in cdpath.split(os.pathsep) if searched and cdpath else ():
                    # Only a folder that exists is found (making one in a
                    # protected place is caught as a write of its own).
                    found = os.path.normpath(os.path.join(base, expand_user(entry), target))
                    if os.path.isdir(found):
                        out.append(found)
        return out

    def _segment_target(self, seg: Any, reading: Reading) -> str | None:
        """What protected place one segment (a simple command or a redirection) changes."""
        argv = seg.argv
        if argv and argv[0] in REDIRECTIONS:
            return reading.named(argv[1:], reading.folders, parents=False)
        core = seg.core
        if not core or os.path.basename(core[0]) in CD:
            return None
        if None in reading.expanded(core[0]):
            # `$cmd` may split into any program and arguments: `gzip .agents/…`.
            return f"{core[0]} (a program named at run time: it may change any file)"
        program = os.path.basename(core[0])
        folders = reading.folders
        chdirs = [*seg.chdirs, *chdir_options(core)]
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
                except UnknownFolder as why:
                    reading = reading.lost(str(why))
        # Wrappers' own words (`time -o FILE`, `FOO=path`) and, unless the
        # program only reads, every word of the program.
        programs = {len(argv) - len(stage) for stage in seg.stages}
        words = [w for i, w in enumerate(argv[: len(argv) - len(core)]) if i not in programs]
        reads_only = only_reads(core)
        if not reads_only:
            words += core[1:]
            adder = next(
                (w for st in seg.stages for w in st[:1] if os.path.basename(w) in ADDERS), None
            )
            if adder or program in ADDERS:
                return (
                    f"the files named by the arguments `{adder or program}` adds at run time "
                    "(they may be any file, these included)"
                )
        found = reading.named(words, folders, parents=True)
        if found or reads_only:
            return found
        # A program run inside a protected folder may write there unnamed
        # (`cd .agents/config && curl -O …`, `make`, `npm install`).
        if reading.unknown:
            return f"files where `{program}` runs ({reading.unknown}; it may be any folder)"
        for base in folders:
            found = self.covers(".", base, parents=False)
            if found:
                return f"{found}, where `{program}` runs"
        for word in words:
            found = self._mentions(word)
            if found:
                return found
        configures = program == "git" and git_subcommand(core[1:])[0] == "config"
        if configures and not any(a in GIT_CONFIG_READS for a in core[1:]):
            return "git's configuration (`git config`: its settings can run programs)"
        changes = changes_folder(core)
        if changes is None:
            return None
        if reading.unknown:
            return f"files `{changes}` changes ({reading.unknown}; it may be any folder)"
        for base in folders:
            top = git_top(base) if program == "git" else base
            found = self.covers(".", top, parents=True)
            if found:
                return f"{found}, changed by `{changes}` without naming it"
        return None

    # -- matching ----------------------------------------------------------------------

    def covers(self, path: str, cwd: str, *, parents: bool) -> str | None:
        """The protected place ``path`` (taken from ``cwd``) reaches, said with what it is, or
        None; with ``parents`` a folder holding one counts too."""
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
                if not self._held(os.path.join(self.workdir, expand_user(match.group()))):
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


def _beneath(path: str, place: str) -> bool:
    """Whether ``path`` is ``place`` or inside it (both normalised, absolute)."""
    return path == place or path.startswith(place.rstrip(os.sep) + os.sep)
