"""MCP servers as ``agent.yaml`` declares them, and their tools as registry entries.

Nothing here imports the MCP SDK: the registry, ``agent check`` and the
``/name`` fast path read these records without paying for it.

::

    mcp_servers:
      github:                               # tools join as github__<tool>
        command: npx
        args: [-y, "@modelcontextprotocol/server-github"]
        env: {GITHUB_TOKEN: "${GITHUB_TOKEN}"}   # passed to this server only
        security: moderate                  # or {create_issue: dangerous}
        tools: {allow: ["*issue*"], deny: [delete_*]}
      docs:
        url: http://127.0.0.1:8931/mcp      # Streamable HTTP
        headers: {Authorization: "Bearer ${DOCS_TOKEN}"}

A higher layer's entry replaces a lower layer's entry of the same name whole
(:func:`mdagent.declarations.declarations.merge_settings`); ``enabled: false`` switches a
lower layer's server off.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mdagent.core.defaults import DEFAULT_SETTINGS, setting
from mdagent.core.errors import ToolFailed
from mdagent.core.records import Record
from mdagent.core.specs import TIERS, ToolSpec

#: Between the server's name and its tool's in the registry: ``github__create_issue``.
SEPARATOR = "__"
#: What every provider accepts in a tool name (OpenAI: ``^[a-zA-Z0-9_-]{1,64}$``).
NAME_LIMIT = 64
CACHE_PREFIX = "registry-mcp-"
#: The shape of a cached tool list; a file of another format is not read.
LISTING_FORMAT = 1
#: What one server may offer, so a hostile or broken one costs bounded time
#: and memory. Its tool (and prompt) list may run to MAX_PAGES pages and
#: MAX_LISTED entries. Inlining the local ``$ref``s of its tools' input
#: schemas may make at most SCHEMA_TOOL_BUDGET values for one tool and
#: SCHEMA_BUDGET for all of them (like the YAML alias budget: a ``$defs``
#: chain whose entries each refer twice to the next doubles at every link,
#: so 2 KB of schema would become millions of values), nested at most
#: SCHEMA_DEPTH deep. Real servers stay far below: a few dozen tools of a
#: few dozen values each. A server past any of them is refused whole.
MAX_PAGES = 100
MAX_LISTED = 1_000
SCHEMA_TOOL_BUDGET = 10_000
SCHEMA_BUDGET = 100_000
SCHEMA_DEPTH = 64
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ServerConfig(Record):
    """One entry of ``mcp_servers``: a stdio command or a Streamable HTTP URL."""

    name: str
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    security: Any = None  # a level, a {tool: level} mapping, or None (from annotations)
    tier: str = "full"
    allow: list[str] = []
    deny: list[str] = []
    startup_timeout: float = float(DEFAULT_SETTINGS["mcp"]["startup_timeout"])
    timeout: float = float(DEFAULT_SETTINGS["mcp"]["timeout"])

    @property
    def transport(self) -> str:
        """``stdio`` or ``http``."""
        return "http" if self.url else "stdio"

    @property
    def target(self) -> str:
        """What the server is, for listings: the command line or the URL."""
        if self.url:
            return self.url
        import shlex

        return shlex.join([self.command or "", *self.args])

    def stamp(self, workdir: str | os.PathLike[str] | None = None) -> str:
        """A key that changes when the server may offer other tools.

        The entry as written (variables unexpanded: no secret reaches the
        cache's name), plus the size and time of the program and of every
        argument naming a file: editing ``server.py`` refreshes the cached
        tool list.
        """
        import hashlib  # here, not at the top: `agent /name` never needs a stamp
        import shutil

        files = []
        if self.command:
            base = Path(self.cwd or workdir or ".")
            found = shutil.which(self.command) or str(base / self.command)
            for candidate in [found, *(str(base / a) for a in self.args)]:
                try:
                    st = os.stat(candidate)
                except (OSError, ValueError):
                    continue
                files.append([candidate, st.st_size, st.st_mtime_ns])
        text = json.dumps([self._asdict(), files], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def resolved_env(self, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
        """``env`` with ``${VAR}`` filled in from ``environ``; ToolFailed naming a missing one."""
        return {
            k: expand(v, environ, f"mcp server {self.name}: env {k}") for k, v in self.env.items()
        }

    def resolved_headers(self, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
        """``headers`` with ``${VAR}`` filled in (see :meth:`resolved_env`)."""
        return {
            k: expand(v, environ, f"mcp server {self.name}: header {k}")
            for k, v in self.headers.items()
        }

    def admits(self, tool: str) -> bool:
        """Whether ``tools: {allow, deny}`` lets the server's ``tool`` in (globs)."""
        import fnmatch

        if any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.deny):
            return False
        return not self.allow or any(fnmatch.fnmatchcase(tool, p) for p in self.allow)

    def security_of(self, tool: str, annotations: Mapping[str, Any] | None) -> str:
        """The security level of the server's ``tool``.

        ``security:`` decides when it names one (for the server, or for this
        tool); else the tool's annotations: read-only is ``safe``, destructive
        ``dangerous``, anything else ``moderate``. Annotations are the server's
        word about itself, so a mapping in ``security:`` can only be stricter
        or looser by the person's choice, never by the server's.
        """
        chosen = self.security
        if isinstance(chosen, Mapping):
            chosen = chosen.get(tool, chosen.get("*"))
        if chosen:
            return str(chosen)
        annotations = annotations or {}
        if annotations.get("destructiveHint") is True:
            return "dangerous"
        if annotations.get("readOnlyHint") is True:
            return "safe"
        return "moderate"


def expand(value: str, environ: Mapping[str, str], where: str) -> str:
    """``value`` with each ``${VAR}`` replaced by ``environ[VAR]``; ToolFailed when unset."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise ToolFailed(f"{where} names ${{{name}}}, which is not set")
        return environ[name]

    return _VARIABLE.sub(one, value)


def server_configs(settings: Mapping[str, Any]) -> dict[str, ServerConfig]:
    """The enabled servers of the merged ``settings`` (already schema-checked), by name."""
    block = settings.get("mcp_servers") if isinstance(settings, Mapping) else None
    if not isinstance(block, Mapping):
        return {}
    startup = float(setting(settings, "mcp", "startup_timeout"))
    timeout = float(setting(settings, "mcp", "timeout"))
    out = {}
    for name, entry in block.items():
        if not isinstance(entry, Mapping) or entry.get("enabled") is False:
            continue
        tools = entry.get("tools") or {}
        out[str(name)] = ServerConfig(
            name=str(name),
            command=entry.get("command"),
            args=[str(a) for a in entry.get("args") or []],
            env={str(k): str(v) for k, v in (entry.get("env") or {}).items()},
            cwd=entry.get("cwd"),
            url=entry.get("url"),
            headers={str(k): str(v) for k, v in (entry.get("headers") or {}).items()},
            security=entry.get("security"),
            tier=str(entry.get("tier") or "full"),
            allow=list(tools.get("allow") or []),
            deny=list(tools.get("deny") or []),
            startup_timeout=float(entry.get("startup_timeout") or startup),
            timeout=float(entry.get("timeout") or timeout),
        )
    return out


def registry_name(server: str, tool: str) -> str:
    """``server__tool``, in the characters every provider accepts, at most 64 of them."""
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", tool)
    return f"{server}{SEPARATOR}{clean}"[:NAME_LIMIT]


def server_of(name: str | None, servers: Mapping[str, Any]) -> str | None:
    """The declared server a registry name ``server__tool`` belongs to, or None."""
    if not name or SEPARATOR not in name:
        return None
    server = name.split(SEPARATOR, 1)[0]
    return server if server in servers else None


def prompt_command(name: str, servers: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(server, prompt)`` for a slash command ``/server:prompt``, or None."""
    server, colon, prompt = name.lstrip("/").partition(":")
    if not colon or not prompt or server not in servers:
        return None
    return server, prompt


class ListingTooLarge(ToolFailed):
    """A server whose tool list or schemas exceed what one server may offer (see MAX_LISTED)."""


def tool_specs(
    config: ServerConfig, tools: list[dict[str, Any]], source: str = "", resources: bool = False
) -> list[ToolSpec]:
    """Registry entries for a server's listed tools (MCP ``Tool`` dicts, camelCase keys).

    Tools its ``tools: {allow, deny}`` keep out are left out; two tools whose
    names clash once made provider-safe keep the first. Raises
    :class:`ListingTooLarge` (one line naming the server and the tool) when
    the list or its schemas exceed the budgets above, in time and memory
    bounded by them.
    """
    if len(tools) > MAX_LISTED:
        raise ListingTooLarge(
            f"mcp server {config.name}: offers {len(tools)} tools, more than {MAX_LISTED:,}; "
            "the server is not used"
        )
    budget = _Budget(SCHEMA_BUDGET)
    specs: dict[str, ToolSpec] = {}
    for tool in tools:
        original = str(tool.get("name") or "")
        if not original or not config.admits(original):
            continue
        if (tool.get("execution") or {}).get("taskSupport") == "required":
            # It answers only as a task, which mdagent does not run: offered, every call
            # would fail. `agent mcp list` names it among those not offered.
            continue
        name = registry_name(config.name, original)
        if name in specs:
            continue
        try:
            params, required = split_schema(tool.get("inputSchema") or {}, budget)
        except SchemaTooLarge as err:
            raise ListingTooLarge(
                f"mcp server {config.name}: tool {original}: {err}; the server is not used"
            ) from None
        annotations = tool.get("annotations") or {}
        description = str(tool.get("description") or annotations.get("title") or original)
        specs[name] = ToolSpec(
            name=name,
            description=" ".join(description.split())[:1024],
            params=params,
            required=required,
            category="mcp",
            security=config.security_of(original, annotations),
            tier=config.tier if config.tier in TIERS else "full",
            timeout=config.timeout,
            implementation={"mcp": {"server": config.name, "tool": original}},
            source=source or f"mcp:{config.name}",
            layer="mcp",
        )
    name = registry_name(config.name, READ_RESOURCE)
    if resources and name not in specs and config.admits(READ_RESOURCE):
        # The model's way to read what a server offers and its results link to:
        # a tool like the others, judged by the policy (read-only: its annotations).
        specs[name] = ToolSpec(
            name=name,
            description=f"Read a resource of MCP server {config.name} by its URI (as its "
            "resource links and resource list name it).",
            params={"uri": {"type": "string", "description": "The resource's URI"}},
            required=["uri"],
            category="mcp",
            security=config.security_of(READ_RESOURCE, {"readOnlyHint": True}),
            tier=config.tier if config.tier in TIERS else "full",
            timeout=config.timeout,
            implementation={"mcp": {"server": config.name, "resource": True}},
            source=source or f"mcp:{config.name}",
            layer="mcp",
        )
    return list(specs.values())


#: The tool every server with resources gets: ``SERVER__read_resource``.
READ_RESOURCE = "read_resource"


class SchemaTooLarge(ValueError):
    """An input schema past its budget: the message says which one."""


class _Budget:
    """How many more values the schemas of one server may make."""

    def __init__(self, total: int) -> None:
        self.left = total


def split_schema(
    schema: Mapping[str, Any], budget: _Budget | None = None
) -> tuple[dict[str, Any], list[str]]:
    """``(properties, required)`` of an input schema, local ``$ref``s inlined.

    The toolbox validates ``{"type": "object", "properties", "required"}``;
    a ``$ref`` into the schema's own ``$defs`` would point nowhere there.
    A recursive reference becomes ``{}`` (anything) past one level. Every
    value made counts against SCHEMA_TOOL_BUDGET and ``budget`` (the
    server's), nesting against SCHEMA_DEPTH: past one, :class:`SchemaTooLarge`
    is raised at once, before the expansion costs more.
    """
    budget = budget or _Budget(SCHEMA_BUDGET)
    own = _Budget(SCHEMA_TOOL_BUDGET)
    schema = _mapping(schema)
    defs = {**_mapping(schema.get("definitions")), **_mapping(schema.get("$defs"))}

    def spend(depth: int) -> None:
        own.left -= 1
        budget.left -= 1
        if own.left < 0:
            raise SchemaTooLarge(
                f"its input schema has more than {SCHEMA_TOOL_BUDGET:,} values "
                "with its $refs inlined"
            )
        if budget.left < 0:
            raise SchemaTooLarge(
                f"the input schemas of the server's tools have more than "
                f"{SCHEMA_BUDGET:,} values with their $refs inlined"
            )
        if depth > SCHEMA_DEPTH:
            raise SchemaTooLarge(f"its input schema nests deeper than {SCHEMA_DEPTH} levels")

    def inline(node: Any, seen: tuple[str, ...], depth: int) -> Any:
        spend(depth)
        if isinstance(node, list):
            return [inline(n, seen, depth + 1) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
            key = ref.rsplit("/", 1)[1]
            if key in seen or key not in defs:
                return {k: inline(v, seen, depth + 1) for k, v in node.items() if k != "$ref"}
            rest = {k: inline(v, seen, depth + 1) for k, v in node.items() if k != "$ref"}
            return {**inline(defs[key], (*seen, key), depth + 1), **rest}
        return {
            k: inline(v, seen, depth + 1)
            for k, v in node.items()
            if k not in ("$defs", "definitions")
        }

    properties = inline(schema.get("properties") or {}, (), 0)
    if not isinstance(properties, dict):
        return {}, []
    named = schema.get("required")
    required = (
        [r for r in named if isinstance(r, str) and r in properties]
        if isinstance(named, list)
        else []
    )
    return properties, required


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# -- the tool-list cache ---------------------------------------------------------------


def cache_path(config: ServerConfig, workdir: str | os.PathLike[str] | None = None) -> Path:
    """Where the tool and prompt lists of ``config`` are kept, beside the registry cache."""
    from mdagent.core.layers import state_dir

    return state_dir() / f"{CACHE_PREFIX}{config.name}-{config.stamp(workdir)}.json"


def read_listing(config: ServerConfig, workdir: Any = None) -> dict[str, Any] | None:
    """The cached ``{"tools": [...], "prompts": [...]}`` of ``config``, or None."""
    from mdagent.core.statefiles import read_json

    data = read_json(cache_path(config, workdir), LISTING_FORMAT)
    listing = data.get("listing") if data else None
    return listing if isinstance(listing, dict) else None


def write_listing(config: ServerConfig, listing: dict[str, Any], workdir: Any = None) -> None:
    """Cache ``listing`` under the server's stamp (atomically; a failure costs speed only)."""
    from mdagent.core.statefiles import write_json

    write_json(cache_path(config, workdir), {"format": LISTING_FORMAT, "listing": listing})


# -- where servers were declared ---------------------------------------------------------


def server_locations(layers: list[Any]) -> dict[str, tuple[str, int, int]]:
    """Server name -> ``(agent.yaml path, line, col)`` of the entry in force (highest layer)."""
    from mdagent.core.defaults import SETTINGS_FILE
    from mdagent.core.yamlsource import position
    from mdagent.declarations.declarations import read_yaml_file

    found: dict[str, tuple[str, int, int]] = {}
    for layer in layers:  # highest first: the first sighting is the entry in force
        if layer.foreign:  # another agent's MCP list (.mcp.json): at the line naming it
            from mdagent.declarations.interop import line_of, server_files

            for name, path in server_files([layer], None).items():
                needle = f"mcp_servers.{name}" if path.suffix == ".toml" else f'"{name}"'
                found.setdefault(name, (str(path), line_of(path, needle), 1))
            continue
        if layer.config_dir is None:
            continue  # another agent's skill folder (.claude/skills): no settings
        path = Path(layer.config_dir) / SETTINGS_FILE
        if not path.is_file():
            continue
        data, _ = read_yaml_file(path)
        servers = data.get("mcp_servers") if isinstance(data, Mapping) else None
        for name in servers if isinstance(servers, Mapping) else ():
            if str(name) not in found:
                line, col = position(data, ["mcp_servers", name])
                found[str(name)] = (str(path), line, col)
    return found
