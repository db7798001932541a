"""The files that make the agent's own policy, which a model may never change unasked.

A model that could write ``.agents/config/agent.yaml`` could allow itself
anything. :func:`protected_files` collects what such a write would reach:
every layer folder (the project ``.agents/`` whether it exists yet or not,
any ``.agents`` folder inside the workspace, which becomes the project layer
of a run started below it, the user layer ``$AGENT_HOME``, ``--layer`` and
``AGENT_PATH`` folders; their ``skills/`` and ``config/`` for the bundled
layer), handler modules declared outside a layer, and the files hook commands
name. :meth:`Protected.file_target` judges a file tool's path,
:meth:`Protected.exec_target` a shell command: its file-writing redirections
and the file arguments of programs known to write, move or delete files
(``tee``, ``cp``, ``mv``, ``sed -i``, ``rm``, ``dd of=``...). Paths are
resolved (``~``, ``..``, symlinks, the command's ``cd``) before comparing, and
compared ignoring case.

Not covered, and said so in the README: an arbitrary program (``python -c``,
``make``, a script) can still write any file the user can.
"""

from __future__ import annotations

import glob as globlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_DIR = ".agents"

# Programs whose (non-option) arguments are files they write, move, link or delete.
_WRITERS = {
    "tee", "cp", "mv", "install", "ln", "rm", "rmdir", "unlink", "shred", "truncate",
    "touch", "mkdir", "chmod", "chown", "chgrp", "rsync", "patch", "mkfifo", "mknod",
    "setfacl", "chattr", "split", "csplit",
}  # fmt: skip
# Programs that write their file arguments only with an in-place option.
_IN_PLACE = {"sed", "gsed", "perl", "ruby"}
# git subcommands that rewrite the files they name.
_GIT_WRITERS = {"checkout", "restore", "rm", "mv"}
# Removing or moving a folder changes what is inside: a parent of a protected
# path counts for these.
_DESTRUCTIVE = {"rm", "rmdir", "mv", "shred", "chmod", "chown", "chgrp", "rsync", "setfacl"}
_CD = {"cd", "pushd"}
_WORD_EXPANSION = re.compile(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")
_GLOB = re.compile(r"[*?[]")
_BRACE = re.compile(r"\{([^{}]*(?:,|\.\.)[^{}]*)\}")


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

    def file_target(self, path: str, cwd: str | None = None) -> str | None:
        """What ``path`` (relative to ``cwd``, default the workspace) reaches that is protected."""
        return self._covers(_expand_user(path), cwd or self.workdir, parents=False)

    def exec_target(
        self, command: str, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> str | None:
        """What protected file ``command`` would write, move or delete, or None.

        A command that cannot be parsed, or whose write target is computed at
        run time (``> $out`` with ``out`` set by the command itself, command
        substitution), counts as writing one when its text names a
        protected place at all.
        """
        from mdagent.shellparse import Unparseable, parse

        cwd = cwd or self.workdir
        env = env if env is not None else (self.environ or os.environ)
        try:
            segments = parse(command)
        except Unparseable:
            return self._named_in(command)
        bases = [cwd]
        for seg in segments:
            words = [w for w in seg.argv if not re.match(r"[A-Za-z_]\w*=", w)]
            if not words:
                continue
            if os.path.basename(words[0]) in _CD:
                bases += self._cd_targets(words[1:], bases, env)
                continue
            for target, parents in _targets(seg.argv):
                for candidate in self._expanded(target, command, env, bases):
                    if candidate is None:
                        # Computed at run time: it could be any file, these included.
                        return f"{target} (named at run time: it may be any file, these included)"
                    for base in bases:
                        found = self._covers(candidate, base, parents=parents)
                        if found:
                            return found
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
        key = os.path.normcase(form).casefold()
        inside = key.rstrip(os.sep) + os.sep
        for folder, what in self.folders.items():
            f = folder.casefold()
            if key == f or key.startswith(f.rstrip(os.sep) + os.sep):
                return what
            if parents and f.startswith(inside):
                return f"holds {what}"
        for file, what in self.files.items():
            f = file.casefold()
            if key == f:
                return what
            if parents and f.startswith(inside):
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
        """Any ``.agents`` folder in the workspace: the project layer of a run below it."""
        for root in {os.path.normpath(self.workdir), os.path.realpath(self.workdir)}:
            if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
                rel = os.path.relpath(path, root)
                parts = [p.casefold() for p in Path(rel).parts]
                if PROJECT_DIR in parts:
                    return "a layer folder"
                if parents and rel == ".":
                    return f"holds {PROJECT_DIR}"
        return None

    def _named_in(self, command: str) -> str | None:
        """A protected place the text of ``command`` mentions (for what cannot be parsed)."""
        text = command.casefold()
        if PROJECT_DIR in text:
            return f"{PROJECT_DIR} (the command cannot be parsed and names a layer folder)"
        for path, what in [*self.folders.items(), *self.files.items()]:
            names = {path.casefold(), os.path.basename(path.rstrip(os.sep)).casefold()}
            if any(n and n in text for n in names):
                return f"{self._shown(path)} (the command cannot be parsed and names {what})"
        return None

    def _cd_targets(self, args: list[str], bases: list[str], env: Mapping[str, str]) -> list[str]:
        args = [a for a in args if not a.startswith("-")]
        if not args:
            return [env.get("HOME") or os.path.expanduser("~")]
        out = []
        for base in bases:
            for target in self._expanded(args[0], "", env):
                if target is not None:
                    out.append(os.path.normpath(os.path.join(base, target)))
        return out

    def _expanded(
        self, word: str, command: str, env: Mapping[str, str], bases: Iterable[str] = ()
    ) -> list[str | None]:
        """The paths ``word`` may stand for once bash expands it; None: not knowable here."""
        if any(m in word for m in ("`", "$(", "<(", ">(")):
            return [None]
        # A variable the command sets itself (x=…, read x, for x in …) is not knowable.
        bare = _WORD_EXPANSION.sub(" ", command)
        out: list[str | None] = []
        for variant in _braces(word):
            unknown = False

            def value(match: re.Match[str]) -> str:
                nonlocal unknown
                name = match.group(1) or match.group(2)
                unknown = unknown or bool(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", bare))
                return env.get(name, "")

            expanded = _WORD_EXPANSION.sub(value, variant)
            if unknown or "$" in expanded:
                out.append(None)
                continue
            expanded = _expand_user(expanded)
            out.append(expanded)
            if _GLOB.search(expanded):
                for base in bases or (self.workdir,):
                    matches = globlib.glob(os.path.join(base, expanded), include_hidden=True)
                    out.extend(matches[:1000])
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


def _targets(argv: Iterable[str]) -> list[tuple[str, bool]]:
    """(file, whether a parent folder counts) for each file a segment writes."""
    argv = list(argv)
    if argv and argv[0] in (">", ">>", ">|", "&>", "&>>", ">&"):
        return [(w, False) for w in argv[1:]]
    out: list[tuple[str, bool]] = []
    # The program may sit behind wrappers (sudo -u x tee f): every word that
    # names a writer starts its arguments; a false match only asks.
    for index, word in enumerate(argv):
        name = os.path.basename(word)
        rest = argv[index + 1 :]
        if name in _WRITERS:
            out += [(a, name in _DESTRUCTIVE) for a in _file_args(rest)]
        elif name in _IN_PLACE and any(_in_place(a) for a in rest):
            out += [(a, False) for a in _file_args(rest)]
        elif name == "dd":
            out += [(a[3:], False) for a in rest if a.startswith("of=")]
        elif name == "git" and any(a in _GIT_WRITERS for a in rest):
            out += [(a, True) for a in _file_args(rest)]
    return out


def _in_place(arg: str) -> bool:
    return arg.startswith("--in-place") or bool(re.fullmatch(r"-[a-zA-Z]*i.*", arg))


def _file_args(args: list[str]) -> list[str]:
    """Arguments that may be files: non-options, option values after ``=``, all after ``--``."""
    out = []
    options = True
    for arg in args:
        if options and arg == "--":
            options = False
        elif options and arg.startswith("--") and "=" in arg:
            out.append(arg.split("=", 1)[1])
        elif options and arg.startswith("-") and len(arg) > 1:
            continue
        else:
            out.append(arg)
    return out


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

    ``layers`` are :class:`mdagent.layers.Layer` records; ``tools`` the
    registry's tool specs (for handler modules); ``settings`` the merged
    settings (for hook commands).
    """
    from mdagent.layers import user_layer_path

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
    folder(user_layer_path(environ), "the user layer ($AGENT_HOME)")
    for entry in environ.get("AGENT_PATH", "").split(os.pathsep):
        if entry.strip():
            folder(os.path.expanduser(entry), "a layer folder (AGENT_PATH)")
    for layer in layers:
        kind = getattr(layer, "kind", "")
        path = Path(getattr(layer, "path", layer))
        if kind == "bundled":
            # In a source checkout the bundled layer is the repository root:
            # only its declarations are policy.
            folder(path / "skills", "the bundled layer")
            folder(path / "config", "the bundled layer")
        else:
            folder(path, f"a layer folder ({kind or 'layer'})")
    for spec in tools:
        implementation = getattr(spec, "implementation", None) or {}
        ref = implementation.get("handler")
        if isinstance(ref, str):
            module = re.sub(r":[A-Za-z_]\w*$", "", ref)
            base = implementation.get("base_dir") or root
            file(os.path.join(base, os.path.expanduser(module)), "a handler module")
    for hook_file in _hook_files(settings or {}, root):
        file(hook_file, "a hook script")
    return Protected(root, folders, files, environ)


def _forms(path: Any) -> set[str]:
    lexical = os.path.normpath(os.path.abspath(os.path.expanduser(str(path))))
    return {lexical, os.path.realpath(lexical)}


def _hook_files(settings: Mapping[str, Any], root: str) -> list[str]:
    """Existing files the hook commands of ``settings`` name (``./scripts/guard.sh``)."""
    section = settings.get("hooks")
    if not isinstance(section, Mapping):
        return []
    from mdagent.shellparse import Unparseable, parse

    out = []
    for when in ("before", "after"):
        entries = section.get(when)
        for entry in entries if isinstance(entries, list) else ():
            run = entry.get("run") if isinstance(entry, Mapping) else None
            if not isinstance(run, str):
                continue
            try:
                words = [w for seg in parse(run) for w in seg.argv]
            except Unparseable:
                words = run.split()
            for word in words:
                path = os.path.join(root, _expand_user(word))
                if os.path.isfile(path):
                    out.append(path)
    return out
