"""The list of what a model may never change unasked, built for a workspace and its layers.

:func:`protected_files` collects every place a write could change the
agent's own policy or what runs outside the sandbox: every layer folder
(the project ``.agents/`` whether it exists yet or not, the user layer
``$AGENT_HOME``, ``--layer`` and ``AGENT_PATH`` folders; their ``skills/``
and ``config/`` for the bundled layer; skill folders linked into a layer),
mdagent's state folder, other agents' skill folders, settings and commands
that mdagent reads as its own, handler modules declared outside a layer,
the files hook commands and MCP servers' commands name, and git's
configuration, which names programs git runs (the repository's git folders,
a ``policy.paths`` root's, ``core.hooksPath`` folders, the user's
``~/.gitconfig``). It returns the :class:`mdagent.safety.protected.Protected`
guard that judges a call against them; :func:`protected_for` gives a
call's (its policy's, cached there).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from mdagent.core.defaults import PROJECT_DIR
from mdagent.safety.commandwrites import expand_user
from mdagent.safety.gitfolders import git_dirs_of, git_top
from mdagent.safety.protected import Protected


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
    git_dirs = git_dirs_of(root)
    for git_dir in git_dirs:
        folder(git_dir, "the workspace's git folder: its config and hooks run programs")
    # A `policy.paths` root is a workspace too: its repository's configuration
    # runs programs when anyone runs git there (red team 15).
    for extra in _policy_paths(settings or {}):
        for git_dir in git_dirs_of(os.path.normpath(os.path.join(root, expand_user(extra)))):
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
                    out.append(os.path.join(git_top(root), expand_user(value)))
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
                path = os.path.join(root, expand_user(word))
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
