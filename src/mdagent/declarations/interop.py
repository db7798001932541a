"""Other agents' files, read as they mean them and mapped to ours (issue 34).

A person arriving from Claude Code, Codex, Gemini CLI or OpenClaw keeps
their files: commands (``.claude/commands/**/*.md``, ``.gemini/commands/
**/*.toml``, ``~/.codex/prompts/*.md``) become prompt skills, MCP server
lists (``.mcp.json``, ``.gemini/settings.json``, ``.codex/config.toml``)
become ``mcp_servers:`` entries, and ``.claude/settings.json``
``permissions`` become policy rules. Memory files are :mod:`mdagent.declarations.memory`'s.

Each source has a name (:data:`SOURCES`); ``skills.interop`` in
``agent.yaml`` turns one off by name (``{claude-commands: false}``) or all
of them (``false``). What the workspace holds comes with the folder, so it
is read as the project's settings are: under workspace trust
(:func:`mdagent.registry.trustfacts.tighten` tightens it like an untrusted
``agent.yaml``). What the person's home holds is theirs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from mdagent.core.errors import ConfigError, Problem
from mdagent.core.foreignpaths import (
    LAYER_SOURCES,
    OFF_BY_DEFAULT,
    PROJECT_KIND,
    SOURCES,
    USER_KIND,
    codex_home,
    command_folders,
    enabled,
    foreign_paths,
    settings_files,
)

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "LAYER_SOURCES",
    "OFF_BY_DEFAULT",
    "PROJECT_KIND",
    "SOURCES",
    "USER_KIND",
    "codex_home",
    "command_folders",
    "enabled",
    "foreign_paths",
    "settings_files",
]

MAX_FILE = 1 << 20
MAX_COMMAND_FILES = 2000


# -- settings: permissions and MCP servers --------------------------------------------


def _read_data(path: Path) -> Any:
    """The JSON or TOML of ``path``; ConfigError with the line of a syntax error."""
    from mdagent.core.yamlsource import decode, read_capped

    where = str(path)
    text = decode(read_capped(where, MAX_FILE, "a settings file"), where)
    if path.suffix == ".toml":
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            line = re.search(r"line (\d+)", str(err))
            number = int(line.group(1)) if line else 1
            raise ConfigError(f"not valid TOML: {err}", where, number) from None
    try:
        return json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as err:
        raise ConfigError(f"not valid JSON: {err.msg}", where, err.lineno, err.colno) from None


def line_of(path: Path, needle: str) -> int:
    """The first line of ``path`` holding ``needle`` (1 when none): where a listing points."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, 1):
                if needle in line:
                    return number
    except OSError:
        pass
    return 1


def read_settings(
    source: str, path: Path, layer: str
) -> tuple[dict[str, Any], list[dict[str, Any]], list[Problem]]:
    """One foreign settings file as our settings, its rules' sources and problems.

    A permissions file that cannot be read is an error (its deny rules
    would be lost: like a broken ``agent.yaml``, the policy refuses until it
    is fixed); an MCP list that cannot be read is a warning.
    """
    where = str(path)
    try:
        data = _read_data(path)
    except ConfigError as err:
        severity = "error" if source == "claude-permissions" else "warning"
        return {}, [], [Problem(where, err.line or 1, err.col or 1, severity, err.message)]
    except OSError as err:
        return {}, [], [Problem(where, 1, 1, "warning", f"cannot read: {err.strerror or err}")]
    if not isinstance(data, dict):
        return {}, [], [Problem(where, 1, 1, "warning", "expected an object; not read")]
    problems: list[Problem] = []
    settings: dict[str, Any] = {}
    sources: list[dict[str, Any]] = []
    if source == "claude-permissions":
        policy, sources = _permissions(data.get("permissions"), path, layer, problems)
        if policy:
            settings["policy"] = policy
        if data.get("hooks"):
            problems.append(
                Problem(
                    where,
                    line_of(path, '"hooks"'),
                    1,
                    "info",
                    "hooks: Claude Code's hooks are not run by mdagent (a different event "
                    "model): not mapped; write them as hooks: in agent.yaml",
                )
            )
        servers: dict[str, Any] = {}
    elif source == "codex-mcp":
        servers = data.get("mcp_servers") if isinstance(data.get("mcp_servers"), dict) else {}
    else:
        servers = data.get("mcpServers") if isinstance(data.get("mcpServers"), dict) else {}
    mapped = {}
    for name, entry in servers.items():
        server, why = mcp_server(entry, source)
        line = line_of(path, f"{name}")
        if server is None:
            problems.append(
                Problem(where, line, 1, "warning", f"MCP server {name}: not mapped: {why}")
            )
            continue
        mapped[str(name)] = server
        problems.append(
            Problem(
                where, line, 1, "info", f"MCP server {name} read as mcp_servers.{name} ({source})"
            )
        )
    if mapped:
        settings["mcp_servers"] = mapped
    return settings, sources, problems


_VARIABLE_DEFAULT = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):-[^}]*\}")


def _text(value: Any) -> str:
    # Claude Code's `${VAR:-default}`: mdagent's `${VAR}` (an unset one is an error, not a default).
    return _VARIABLE_DEFAULT.sub(r"${\1}", str(value))


def mcp_server(entry: Any, source: str) -> tuple[dict[str, Any] | None, str]:
    """One foreign MCP server entry as an ``mcp_servers`` entry, or ``(None, why not)``.

    ``source`` names whose entry it is (``claude-mcp``, ``gemini-mcp``,
    ``codex-mcp``): their keys and their timeouts' units differ.
    """
    if not isinstance(entry, dict):
        return None, "expected an object"
    url = entry.get("httpUrl") or entry.get("url")
    command = entry.get("command")
    kind = str(entry.get("type") or entry.get("transport") or "")
    if kind == "sse" or (source == "gemini-mcp" and entry.get("url") and not entry.get("httpUrl")):
        return None, "SSE servers are not supported (Streamable HTTP and stdio are)"
    out: dict[str, Any] = {}
    if command and not url:
        out["command"] = _text(command)
        args = entry.get("args") or []
        if not isinstance(args, list):
            return None, "args: expected a list"
        out["args"] = [_text(a) for a in args]
        env = entry.get("env") or {}
        if isinstance(env, dict) and env:
            out["env"] = {str(k): _text(v) for k, v in env.items()}
        if entry.get("cwd"):
            out["cwd"] = _text(entry["cwd"])
    elif url and not command:
        if not re.match(r"^https?://[^/\s]+", str(url)):
            return None, f"url {url!r} is not an http(s) URL"
        out["url"] = _text(url)
        headers = entry.get("headers") or entry.get("http_headers") or {}
        if isinstance(headers, dict) and headers:
            out["headers"] = {str(k): _text(v) for k, v in headers.items()}
    else:
        return None, "needs a command or a URL, not both"
    # Timeouts: Gemini's in milliseconds, Codex's in seconds.
    if isinstance(entry.get("timeout"), (int, float)) and entry["timeout"] > 0:
        out["timeout"] = entry["timeout"] / 1000 if source == "gemini-mcp" else entry["timeout"]
    for key, ours in (("tool_timeout_sec", "timeout"), ("startup_timeout_sec", "startup_timeout")):
        if isinstance(entry.get(key), (int, float)) and entry[key] > 0:
            out[ours] = entry[key]
    if entry.get("enabled") is False or entry.get("disabled") is True:
        out["enabled"] = False
    allow = entry.get("includeTools") or entry.get("enabled_tools")
    deny = entry.get("excludeTools") or entry.get("disabled_tools")
    tools = {}
    if isinstance(allow, list) and allow:
        tools["allow"] = [str(t) for t in allow]
    if isinstance(deny, list) and deny:
        tools["deny"] = [str(t) for t in deny]
    if tools:
        out["tools"] = tools
    return out, ""


# Claude Code's tool names and the tools of ours each rule names.
_CLAUDE_TOOLS = {
    "bash": ["exec"],
    "read": ["read_file"],
    "edit": ["edit_file", "write_file"],
    "write": ["write_file", "edit_file"],
    "multiedit": ["edit_file", "write_file"],
    "glob": ["glob"],
    "grep": ["grep"],
    "webfetch": ["fetch"],
}
_FILE_TOOLS = {"read_file", "edit_file", "write_file", "glob", "grep"}


def claude_rules(entry: str, section: str) -> list[str]:
    """Our rules for one Claude Code permission rule; ConfigError when it has no counterpart.

    ``Bash(curl:*)`` is ``exec(curl)`` and ``exec(curl *)``; ``Read(./.env)``
    is ``read_file(.env)`` (paths from the workspace root; ``//abs`` is an
    absolute path); ``Edit`` covers ``edit_file`` and ``write_file``;
    ``WebFetch(domain:x)`` is ``fetch(domain:x)``; ``mcp__srv__tool`` is
    ``srv__tool``. A deny or ask rule for a bare file name (``Read(.env)``)
    covers it in every folder, as Claude Code's gitignore-style patterns do.
    """
    from mdagent.safety.rules import Rule

    match = re.fullmatch(r"([^()\s]+)(?:\((.*)\))?", entry.strip(), re.S)
    if not match:
        raise ConfigError(f"`{entry}` is not `Tool` or `Tool(pattern)`")
    name, pattern = match.group(1), match.group(2)
    if name.startswith("mcp__"):
        parts = name.split("__")
        tools = [f"{parts[1]}__{'__'.join(parts[2:]) or '*'}"] if len(parts) > 1 else []
        if not tools or not parts[1]:
            raise ConfigError(f"`{entry}`: no server named")
        if parts[-1] == "*" or len(parts) == 2:
            tools = [f"{parts[1]}__*"]
    else:
        tools = _CLAUDE_TOOLS.get(name.lower(), [])
    if not tools:
        raise ConfigError(f"`{entry}`: Claude Code's {name} has no counterpart in mdagent")
    rules: list[str] = []
    for tool in tools:
        if pattern is None or pattern.strip() in ("", "*"):
            rules.append(tool)
            continue
        text = pattern.strip()
        if tool == "exec":
            if text.endswith(":*"):
                prefix = text[:-2].rstrip()
                rules += [f"exec({prefix})", f"exec({prefix} *)"] if prefix else ["exec"]
            else:
                rules.append(f"exec({text})")
        elif tool in _FILE_TOOLS:
            if text.startswith("//"):
                text = text[1:]
            elif text.startswith("./"):
                text = text[2:]
            elif text.startswith("/"):
                text = text[1:]  # Claude Code: from the settings' project root
            rules.append(f"{tool}({text})")
            if section != "allow" and "/" not in text and not text.startswith("~"):
                rules.append(f"{tool}(**/{text})")
        else:
            rules.append(f"{tool}({text})")
    for rule in rules:
        Rule.parse(rule, "permissions")
    return list(dict.fromkeys(rules))


def _permissions(
    block: Any, path: Path, layer: str, problems: list[Problem]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    where = str(path)
    policy: dict[str, Any] = {}
    sources: list[dict[str, Any]] = []
    if block is None:
        return policy, sources
    if not isinstance(block, dict):
        problems.append(Problem(where, 1, 1, "error", "permissions: expected an object"))
        return policy, sources
    for section in ("deny", "ask", "allow"):
        entries = block.get(section) or []
        if not isinstance(entries, list):
            problems.append(
                Problem(
                    where,
                    line_of(path, f'"{section}"'),
                    1,
                    "error",
                    f"permissions.{section}: expected a list",
                )  # fmt: skip
            )
            continue
        for entry in entries:
            line = line_of(path, json.dumps(str(entry))[1:-1])
            try:
                rules = claude_rules(str(entry), section)
            except ConfigError as err:
                # An unmapped deny is loud: the person meant something to be refused.
                severity = "warning" if section != "allow" else "info"
                problems.append(
                    Problem(
                        where,
                        line,
                        1,
                        severity,
                        f"permissions.{section}: {err.message}; not mapped",
                    )  # fmt: skip
                )
                continue
            reason = f"{path.parent.name}/{path.name}: {entry}"
            for rule in rules:
                item = {"rule": rule, "reason": reason}
                policy.setdefault(section, []).append(item)
                sources.append(
                    {
                        "section": section,
                        "entry": item,
                        "path": where,
                        "line": line,
                        "col": 1,
                        "layer": layer,
                    }
                )
    for key in ("defaultMode", "additionalDirectories"):
        if key in block:
            problems.append(
                Problem(
                    where,
                    line_of(path, f'"{key}"'),
                    1,
                    "info",
                    f"permissions.{key}: not mapped (policy.mode and policy.paths say this "
                    "in agent.yaml)",
                )  # fmt: skip
            )
    return policy, sources


# -- commands: Claude Code's legacy commands, Gemini CLI's TOML, Codex's prompts --------


_PART = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


def command_files(folder: Path, suffix: str, prefix: str = "") -> list[tuple[str, Path]]:
    """``(command name, file)`` in ``folder``: ``frontend/component.md`` is ``frontend:component``.

    With a ``prefix`` only the folder's own files count, named ``prefix:name``.
    """
    found: list[tuple[str, Path]] = []
    if not folder.is_dir():
        return found
    pattern = f"*{suffix}" if prefix else f"**/*{suffix}"
    for path in sorted(folder.glob(pattern))[:MAX_COMMAND_FILES]:
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts) or not path.is_file():
            continue
        parts = [*([prefix] if prefix else []), *relative.parts[:-1], relative.name[: -len(suffix)]]
        found.append((":".join(p.lower() for p in parts), path))
    return found


def name_problem(name: str) -> str | None:
    if all(_PART.match(part) for part in name.split(":")):
        return None
    return f"/{name}: a command name is lower-case letters, digits, '-', '_' and '.'"


def toml_body(path: str | Path) -> str:
    """A Gemini CLI command's ``prompt`` in our syntax (ConfigError when it has none).

    ``{{args}}`` is ``$ARGUMENTS``, ``!{cmd}`` is live context `` !`cmd` ``
    (run through ``exec``, with our quoting and consent), and ``@{path}``
    is our include already.
    """
    data = _read_data(Path(path))
    prompt = data.get("prompt") if isinstance(data, dict) else None
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError("prompt: a Gemini CLI command needs a prompt (text)", str(path), 1, 1)
    return gemini_prompt(prompt)


#: Sources whose ``$1`` is the first argument (a SKILL.md's ``$0`` is).
ONE_BASED = frozenset({"claude-commands", "codex-prompts"})


def one_based(body: str) -> str:
    """``$1``…``$9`` of a Claude Code legacy command or a Codex prompt as our ``$ARGUMENTS[0]``…

    Both number arguments from 1; a prompt skill's ``$N`` counts from 0.
    """
    return re.sub(r"\$([1-9])(?!\d)", lambda m: f"$ARGUMENTS[{int(m.group(1)) - 1}]", body)


def gemini_prompt(prompt: str) -> str:
    """Gemini CLI's prompt syntax as ours (see :func:`toml_body`)."""
    out: list[str] = []
    i = 0
    while i < len(prompt):
        if prompt.startswith("!{", i):
            depth, j = 1, i + 2
            while j < len(prompt) and depth:
                depth += {"{": 1, "}": -1}.get(prompt[j], 0)
                j += 1
            command = prompt[i + 2 : j - 1].replace("{{args}}", "$ARGUMENTS")
            if depth or "`" in command or "\n" in command:
                out.append(prompt[i:j])  # left as text: our live context is one line, no backticks
            else:
                out.append(f"!`{command}`")
            i = j
            continue
        out.append(prompt[i])
        i += 1
    return "".join(out).replace("{{args}}", "$ARGUMENTS")


def load_command(
    name: str, path: Path, source: str, layer: str, confine_to: Path | None = None
) -> tuple[Any | None, list[Problem]]:
    """One foreign command file as a prompt :class:`~mdagent.core.specs.Skill` (for you to type).

    ``confine_to`` is the workspace root for a workspace's command files: one whose
    real path (a symbolic link, or a linked folder) is outside it is not loaded.
    """
    from mdagent.core.specs import Skill
    from mdagent.core.yamlsource import decode, plain, read_capped
    from mdagent.declarations.skills import (
        _load_front_matter,
        allowed_tool_rules,
        live_commands,
        skill_model,
        split_allowed_tools,
        split_front_matter,
    )

    where = str(path)
    problems: list[Problem] = []
    bad = name_problem(name)
    if bad:
        return None, [Problem(where, 1, 1, "warning", f"{bad}; not loaded")]
    if confine_to is not None and not path.resolve().is_relative_to(confine_to.resolve()):
        # A cloned repository's link to ~/.ssh/id_rsa must not become a prompt sent to a model.
        message = (
            f"not loaded: this link leads out of the workspace to {path.resolve()}; "
            "a workspace's command files must stay inside it"
        )
        return None, [Problem(where, 1, 1, "warning", message)]
    meta: dict[str, Any] = {}
    try:
        if source == "gemini-commands":
            data = _read_data(path)
            meta = {"description": data.get("description")} if isinstance(data, dict) else {}
            body = toml_body(path)
        else:
            text = decode(read_capped(where, MAX_FILE, "a command file"), where)
            body = text
            if text.lstrip("\ufeff").startswith("---"):
                fm, body, _ = split_front_matter(text, where)
                loaded = _load_front_matter(fm, where, problems)
                meta = plain(loaded) if isinstance(loaded, dict) else {}
    except ConfigError as err:
        return None, [*problems, Problem(where, err.line or 1, err.col or 1, "warning",
                                         f"{err.message}; /{name} not loaded")]  # fmt: skip
    except OSError as err:
        return None, [Problem(where, 1, 1, "warning", f"cannot read: {err.strerror or err}")]
    description = str(meta.get("description") or "").strip()
    if not description:  # as Claude Code: the first line of the body
        description = next((ln.strip("# ").strip() for ln in body.splitlines() if ln.strip()), "")
    allowed: list[str] = []
    for entry in split_allowed_tools(meta.get("allowed-tools")):
        try:
            allowed += [r for r in allowed_tool_rules(entry) if r not in allowed]
        except ConfigError as err:
            problems.append(
                Problem(where, 1, 1, "warning", f"allowed-tools: {err.message}; ignored")
            )
    skill = Skill(
        name=name,
        description=description[:1024],
        path=where,
        # For the person to type, as the other agent offers them; the model loads skills.
        disable_model_invocation=True,
        argument_hint=str(meta.get("argument-hint") or ""),
        allowed_tools=allowed,
        layer=layer,
        model=skill_model(meta.get("model")) if meta.get("model") != "inherit" else None,
        extra={"interop": source},
        live_context=live_commands(body),
    )
    problems.append(Problem(where, 1, 1, "info", f"read as /{name} ({source})"))
    return skill, problems


def server_files(layers: list[Any], settings: Mapping[str, Any] | None) -> dict[str, Path]:
    """MCP server name -> the other agent's file it was read from (the entry in force).

    Only servers no higher layer of ours declares: ``agent.yaml`` entries are
    :func:`mdagent.declarations.mcpconfig.server_locations`'s.
    """
    import os

    found: dict[str, Path] = {}
    for layer in layers:  # highest first
        if not layer.foreign:
            continue
        for source, path in reversed(settings_files(layer.kind, layer.path, os.environ)):
            if source == "claude-permissions" or not enabled(settings, source):
                continue
            if not path.is_file():
                continue
            try:
                data = _read_data(path)
            except (ConfigError, OSError):
                continue
            key = "mcp_servers" if source == "codex-mcp" else "mcpServers"
            block = data.get(key) if isinstance(data, dict) else None
            for name in block if isinstance(block, dict) else ():
                found.setdefault(str(name), path)
    return found
