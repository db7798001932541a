"""What workspace trust covers, computed with the registry (and cached with it).

The compiler (:mod:`mdagent.registry.compile`) calls :func:`workspace_facts`
once per compile: the *items* (each thing the workspace's own layers hold
that acts only once the person trusts the folder: hooks, MCP servers, allow
rules, a looser mode, ``model:``, a skill's ``allowed-tools``...), the
*files* and *folders* trust is bound to, and the untrusted view of the
settings (:func:`tighten`: what only tightens is kept). Deciding whether the
folder is trusted now, the record and telling the person are the runtime's
(:mod:`mdagent.runtime.trust`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from mdagent.core.records import Record

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

#: The layer kinds that come with the working folder (maybe a repository someone else wrote).
WORKSPACE_LAYERS = (
    "project",
    "project-claude",
    "project-github",
    "project-openclaw",
    "project-foreign",
)
#: The workspace layers whose settings are tightened until trusted: its
#: ``agent.yaml`` and other agents' settings files in it (mdagent.declarations.interop).
SETTINGS_LAYERS = ("project", "project-foreign")

# How strict each value is: a project's value applies only when it is at
# least as strict as the person's own (higher is stricter).
# Permission modes: full < accept-edits < ask < allowlist = deny < plan (a
# project may pick plan whatever yours is: nothing changes; where plan asks
# and yours would refuse, a question is still not a change).
_MODE_RANK = {"full": 0, "accept-edits": 1, "ask": 2, "allowlist": 3, "deny": 3, "plan": 4}
_SANDBOX_RANK = {"off": 0, "false": 0, "workspace-write": 1, "read-only": 2}
# Sections of a project's settings that loosen nothing: kept as written.
KEPT_SECTIONS = ("agent", "exec", "fetch", "glob", "grep", "mcp")
#: The strictest settings a person could have: a project value that is an
#: item even against these can loosen something, so its file is covered.
_STRICTEST: dict[str, Any] = {
    "policy": {"mode": "deny", "inline_eval": "ask"},
    "sandbox": {"mode": "read-only", "network": False, "applies_to": "all", "required": True},
    "skills": {"shell_interpolation": False},
}


class Item(Record):
    """One thing the workspace holds that acts only once trusted: ``key`` does ``what``.

    ``hooks.before`` ``runs ./scripts/guard.sh``; ``policy.mode`` ``says
    full (yours: ask)``; ``skill helper`` ``chooses model …``. ``path`` and
    ``line`` say where it is written.
    """

    key: str
    what: str
    path: str = ""
    line: int = 1

    @property
    def text(self) -> str:
        return f"{self.key} {self.what}"


def _files_run(settings: Mapping[str, Any], workspace: Path, unknown: list[str]) -> list[str]:
    """The files a layer's hooks and MCP servers run (trust is bound to them);
    commands naming files only known when they run are added to ``unknown``."""
    from mdagent.safety.commandfiles import named_files

    files: list[str] = []
    for entries in _mapping(settings.get("hooks")).values():
        for entry in entries if isinstance(entries, list) else ():
            files += named_files(_mapping(entry).get("run"), workspace, workspace, unknown)
    for entry in _mapping(settings.get("mcp_servers")).values():
        entry = _mapping(entry)
        if entry.get("enabled") is False or not entry.get("command"):
            continue
        base = (workspace / str(entry["cwd"])) if entry.get("cwd") else workspace
        words = [str(entry["command"]), *(str(a) for a in entry.get("args") or [])]
        files += named_files(words, base, workspace, unknown)
    return files


def workspace_facts(
    layers: Iterable[Any],
    layer_settings: list[tuple[Any, dict[str, Any], Path]],
    tools: Mapping[str, Any],
    skills: Mapping[str, Any],
    sources: list[dict[str, Any]],
) -> dict[str, Any] | None:
    """What trust covers in the workspace of ``layers``, as cached JSON; None when nothing.

    ``layer_settings`` is ``(layer, its settings, agent.yaml path)`` of each
    layer with a settings file, lowest first; ``tools``, ``skills`` and
    ``sources`` are the compile's. The result: ``workspace`` (its real path),
    ``items`` (``[key, what, path, line]``), ``files`` and ``folders`` (real
    paths trust is bound to) and, when there are items, the untrusted view:
    ``settings`` (merged with the project's tightened) and ``sources``
    (without the project's allow rules).
    """
    from mdagent.declarations.declarations import merge_settings
    from mdagent.safety.commandfiles import named_files

    workspace = _workspace_of(layers)
    if workspace is None:
        return None
    items: list[Item] = []
    files: list[str] = []
    folders: list[str] = []
    owns = [(s, p) for layer, s, p in layer_settings if layer.kind in SETTINGS_LAYERS]
    person = merge_settings(
        [s for layer, s, _ in reversed(layer_settings) if layer.kind not in SETTINGS_LAYERS]
    )
    kept_of: dict[str, dict[str, Any]] = {}
    project_covered = False
    unknown: list[str] = []  # hook or server commands naming files only known at run time
    for settings, path in owns:
        kept_of[str(path)], found = tighten(settings, person)
        items += _located(found, path)
        if tighten(settings, _STRICTEST)[1]:
            files.append(str(path))
            project_covered = True
        files += _files_run(settings, workspace, unknown)
    project_tools = [t for t in tools.values() if t.layer == "project"]
    own_code: list[str] = []  # tools that run the folder's own code when a model calls them
    for tool in project_tools:
        if tool.security == "safe":
            what = "is declared security: safe (a model's calls would run unasked)"
            items.append(Item(f"tool {tool.name}", what, tool.source, tool.line or 1))
            project_covered = True
        if tool.kind in ("run", "shell", "handler"):
            # Its code is the folder's: a person's rules and mode (an allow rule
            # for a tool of that name in their own layer) do not cover it.
            what = f"runs this folder's own {tool.kind} code when a model calls it"
            items.append(Item(f"tool {tool.name}", what, tool.source, tool.line or 1))
            own_code.append(tool.name)
            project_covered = True
    for skill in skills.values():
        if skill.layer not in WORKSPACE_LAYERS:
            continue
        found = list(_skill_items(skill))
        if found:
            items += found
            folders.append(os.path.realpath(skill.dir))
            project_covered = project_covered or skill.layer == "project"
    if project_covered:
        # What an allow rule or a safe tool lets run is the tools' own code.
        for tool in project_tools:
            files.append(tool.source)
            implementation = tool.implementation or {}
            base = Path(implementation.get("base_dir") or Path(tool.source).parent)
            if "handler" in implementation:
                files.append(str(base / str(implementation["handler"]).split(":", 1)[0]))
            for key in ("run", "shell"):
                if key in implementation:
                    files += named_files(implementation[key], workspace, workspace)
    if not items and not files and not folders:
        return None
    from mdagent.core.escapes import visible

    facts: dict[str, Any] = {
        "workspace": str(workspace),
        "unknown": sorted(set(unknown)),
        # The folder's own text, escaped once here: every listing, notice and
        # question shows it (a `\r\x1b[2K` must not hide what is trusted).
        "items": [[visible(i.key), visible(i.what), i.path, i.line] for i in items],
        "files": sorted({os.path.realpath(f) for f in files}),
        "folders": sorted(set(folders)),
        "settings": None,
        "sources": None,
    }
    if items:
        high_first = [
            kept_of.get(str(path), {}) if layer.kind in SETTINGS_LAYERS else settings
            for layer, settings, path in reversed(layer_settings)
        ]
        facts["settings"] = view = merge_settings(high_first)
        if own_code:
            # Until trusted, a model's call of such a tool is asked about in every
            # mode (refused without a terminal); a person's typed command still runs.
            policy = dict(view.get("policy") or {})
            policy["ask"] = [
                *(policy.get("ask") or []),
                *({"rule": name, "reason": OWN_CODE_REASON} for name in own_code),
            ]
            view["policy"] = policy
        facts["sources"] = [
            s
            for s in sources
            if not (s.get("layer") in SETTINGS_LAYERS and s.get("section") == "allow")
        ]
    return facts


OWN_CODE_REASON = (
    "a tool this untrusted folder declares runs the folder's own code (`agent trust` to let it)"
)


def _workspace_of(layers: Iterable[Any]) -> Path | None:
    """The real path of the folder the workspace's layers belong to, or None (no such layer)."""
    from mdagent.core.layers import workspace_of

    for layer in layers:
        root = workspace_of(layer)
        if root is not None:
            return Path(os.path.realpath(root))
    return None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def tighten(
    project: Mapping[str, Any], person: Mapping[str, Any]
) -> tuple[dict[str, Any], list[tuple[str, str, list[Any]]]]:
    """The part of a project's settings an untrusted workspace keeps, and what it drops.

    ``person`` is the merged settings of every other layer (defaults
    included). Kept: what only tightens (deny and ask rules, a stricter
    mode or sandbox, policy tests, timeouts and limits). Dropped, each as
    ``(key, what, pointer into the file)``: hooks, MCP servers, ``model:``,
    allow rules, a looser mode, ``inline_eval``, ``policy.paths``,
    ``policy.env.include``, sandbox widening, ``shell_interpolation`` turned
    back on, and any key this function does not know (fail closed).
    """
    kept: dict[str, Any] = {}
    dropped: list[tuple[str, str, list[Any]]] = []

    def drop(key: str, what: str, *pointer: Any) -> None:
        dropped.append((key, what, list(pointer)))

    for section, value in project.items():
        if section in KEPT_SECTIONS:
            kept[section] = value
        elif section == "policy" and isinstance(value, Mapping):
            kept[section] = _tighten_policy(value, _mapping(person.get("policy")), drop)
        elif section == "sandbox" and isinstance(value, Mapping):
            kept[section] = _tighten_sandbox(value, _mapping(person.get("sandbox")), drop)
        elif section == "skills" and isinstance(value, Mapping):
            own = {}
            for key, setting in value.items():
                theirs = _mapping(person.get("skills")).get(key, True)
                if key == "interop" or setting is False or theirs is not False:
                    own[key] = setting
                else:
                    drop(f"skills.{key}", "turns live context back on (yours: false)", section, key)
            kept[section] = own
        elif section == "hooks" and isinstance(value, Mapping):
            for event, entries in value.items():
                for i, entry in enumerate(entries if isinstance(entries, list) else ()):
                    drop(f"hooks.{event}", _hook_text(entry), section, event, i)
        elif section == "mcp_servers" and isinstance(value, Mapping):
            off = {}
            for name, entry in value.items():
                if isinstance(entry, Mapping) and entry.get("enabled") is False:
                    off[name] = entry  # switching a server off only tightens
                else:
                    drop(f"mcp_servers.{name}", _server_text(entry), section, name)
            if off:
                kept[section] = off
        elif section == "model":
            if value:
                drop("model", f"chooses {_model_text(value)}", section)
        else:
            drop(section, "is set", section)
    return kept, dropped


def _tighten_policy(policy: Mapping[str, Any], theirs: Mapping[str, Any], drop) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in policy.items():
        if key in ("deny", "ask", "tests"):
            kept[key] = value
        elif key == "mode":
            mine = str(theirs.get("mode") or "ask")
            if _MODE_RANK.get(str(value), 0) >= _MODE_RANK.get(mine, 2):
                kept[key] = value
            else:
                drop("policy.mode", f"says {value} (yours: {mine})", "policy", key)
        elif key == "allow":
            for i, rule in enumerate(value if isinstance(value, list) else [value]):
                text = rule.get("rule") if isinstance(rule, Mapping) else rule
                drop("policy.allow", f"allows {text}", "policy", key, i)
        elif key == "inline_eval":
            if value != "allow" or theirs.get("inline_eval") == "allow":
                kept[key] = value
            else:
                drop("policy.inline_eval", "says allow (yours: ask)", "policy", key)
        elif key == "paths":
            for i, path in enumerate(value if isinstance(value, list) else [value]):
                drop("policy.paths", f"adds {path}", "policy", key, i)
        elif key == "env" and isinstance(value, Mapping):
            env = {k: v for k, v in value.items() if k == "exclude"}
            for i, name in enumerate(value.get("include") or []):
                drop("policy.env.include", f"lets {name} through", "policy", key, "include", i)
            for other in value:
                if other not in ("exclude", "include"):
                    drop(f"policy.env.{other}", "is set", "policy", key, other)
            kept[key] = env
        else:
            drop(f"policy.{key}", "is set", "policy", key)
    return kept


def _tighten_sandbox(sandbox: Mapping[str, Any], theirs: Mapping[str, Any], drop) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in sandbox.items():
        if key == "mode":
            mine = theirs.get("mode", "workspace-write")
            if _SANDBOX_RANK.get(str(value).lower(), 0) >= _SANDBOX_RANK.get(str(mine).lower(), 1):
                kept[key] = value
            else:
                drop("sandbox.mode", f"says {_word(value)} (yours: {_word(mine)})", "sandbox", key)
        elif key == "network":
            on = value in (True, "on")
            if not on or theirs.get("network", True) in (True, "on"):
                kept[key] = value
            else:
                drop("sandbox.network", "says on (yours: off)", "sandbox", key)
        elif key == "writable":
            for i, path in enumerate(value if isinstance(value, list) else [value]):
                drop("sandbox.writable", f"adds {path}", "sandbox", key, i)
        elif key == "applies_to":
            if value == "all" or theirs.get("applies_to", "model") == "model":
                kept[key] = value
            else:
                drop("sandbox.applies_to", "says model (yours: all)", "sandbox", key)
        elif key == "required":
            if value is True or not theirs.get("required"):
                kept[key] = value
            else:
                drop("sandbox.required", "says false (yours: true)", "sandbox", key)
        else:
            drop(f"sandbox.{key}", "is set", "sandbox", key)
    return kept


def _word(value: Any) -> str:
    return "off" if value is False else "on" if value is True else str(value)


def _hook_text(entry: Any) -> str:
    entry = _mapping(entry)
    run = entry.get("run")
    shown = _shell_words(run) if isinstance(run, list) else str(run)
    tool = entry.get("tool")
    return f"runs {shown}" + (f" (for {tool})" if tool and tool != "*" else "")


def _server_text(entry: Any) -> str:
    entry = _mapping(entry)
    if entry.get("url"):
        return f"connects to {entry['url']}"
    words = [str(entry.get("command") or ""), *(str(a) for a in entry.get("args") or [])]
    return f"starts {_shell_words(words)}"


def _shell_words(words: list[Any]) -> str:
    import shlex

    return shlex.join(str(w) for w in words)


def _model_text(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {v}" for k, v in value.items() if not isinstance(v, Mapping))
    return str(value)


def _skill_items(skill: Any) -> Iterator[Item]:
    """What a workspace's prompt skill would do once trusted (a command skill's body is text)."""
    if skill.dispatch == "tool":
        return
    key = f"skill {skill.name}"
    if skill.allowed_tools:
        yield Item(key, f"pre-approves {', '.join(skill.allowed_tools)}", skill.path)
    if skill.model:
        yield Item(key, f"chooses model {_model_text(skill.model)}", skill.path)
    if skill.layer == "project":
        for command in getattr(skill, "live_context", None) or ():
            yield Item(key, f"runs !`{command}` before its prompt", skill.path)


def _located(found: list[tuple[str, str, list[Any]]], path: Path) -> list[Item]:
    """Items of a settings file at their lines (the file is read again, at compile time only)."""
    if not found:
        return []
    from mdagent.core.yamlsource import position
    from mdagent.declarations.declarations import read_yaml_file

    if path.suffix not in (".yaml", ".yml"):  # another agent's file: the line naming the key
        from mdagent.declarations.interop import line_of

        return [Item(key, what, str(path), line_of(path, str(p[-1]))) for key, what, p in found]
    data, _ = read_yaml_file(path)
    items = []
    for key, what, pointer in found:
        try:
            line = position(data, pointer)[0] if data is not None else 1
        except (KeyError, IndexError, TypeError, ValueError):
            line = 1
        items.append(Item(key, what, str(path), line or 1))
    return items
