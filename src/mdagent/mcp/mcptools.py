"""Other MCP servers' tools and prompts in this process's registry and toolbox.

``mcp_servers:`` (:mod:`mdagent.declarations.mcpconfig`) names the servers; this module
turns what they offer into :class:`~mdagent.core.specs.ToolSpec` entries named
``server__tool`` and runs them through the toolbox like any declared tool:
validation, the policy (category ``mcp``, security from the server's
annotations or ``security:``), hooks and the audit log are the toolbox's.

Servers start lazily: a toolbox built while servers are declared holds none
of their tools until something asks for them (a model's tool list, a call
of ``github__x``), so ``agent /name`` of an unrelated command neither starts
a server nor imports the SDK. A server's tool list is kept in the state dir
under its config stamp; with a fresh copy there, the list is known without
starting the server, which then starts at the first call.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from mdagent.core.calls import ToolContext
from mdagent.core.defaults import setting
from mdagent.core.errors import ToolFailed, UsageError
from mdagent.core.specs import CommandSpec, ToolSpec
from mdagent.declarations.mcpconfig import (
    prompt_command,
    read_listing,
    server_configs,
    server_of,
    tool_specs,
    write_listing,
)
from mdagent.tools.toolbox import Tool, Toolbox, UnknownTool

if TYPE_CHECKING:
    from mdagent.mcp.mcpclient import McpClients
    from mdagent.runtime.runtime import Runtime


def _tell(message: str) -> None:
    # The one place a server's failure reaches the person while the rest
    # carries on (a model's turn, a listing): a notice the edge shows.
    from mdagent.core import notices

    notices.tell(message)


class McpTools:
    """The declared MCP servers of a :class:`~mdagent.runtime.runtime.Runtime`: their tools and prompts.

    ``failures`` maps a server that could not be reached to its one-line
    error; ``notify(line)`` shows such a line to the person (stderr).
    """

    def __init__(self, runtime: Runtime, notify: Callable[[str], None] = _tell) -> None:
        self.runtime = runtime
        self.configs = server_configs(runtime.settings)
        self.failures: dict[str, str] = {}
        self.notify = notify
        self._listings: dict[str, dict[str, Any]] = {}
        self._specs: dict[str, list[ToolSpec]] = {}
        self._live: set[str] = set()
        self._clients: McpClients | None = None
        self._lock = threading.RLock()
        #: Server name -> the file its entry is written in (read when first needed).
        self._written: dict[str, str] | None = None

    # -- what the servers offer --

    def clients(self) -> McpClients:
        """The connections (imports the SDK; ToolFailed when it is not installed)."""
        with self._lock:
            if self._clients is None:
                from mdagent.mcp.mcpclient import McpClients

                # A server's log messages are for -v; its progress for a person watching.
                self._clients = McpClients(
                    self.configs,
                    workdir=str(self.runtime.workdir),
                    env=self.runtime.env,
                    on_log=self.notify if self._verbose() else None,
                    before_start=lambda _name: self.runtime.trust_lapsed_now(),
                )
            return self._clients

    def listing(self, server: str, *, live: bool = False) -> dict[str, Any]:
        """``{"tools", "prompts"}`` of ``server``: cached, or from the running server.

        ``live`` starts the server even when a cached copy exists. Raises
        ToolFailed (one line, naming the server) when it cannot be reached,
        or when what it offers is past the budgets of
        :func:`mdagent.declarations.mcpconfig.tool_specs` (then it is not used at all).
        """
        with self._lock:
            if server in self._listings and (server in self._live or not live):
                return self._listings[server]
            config = self.configs[server]
            workdir = self.runtime.workdir
            cached = None if live else read_listing(config, workdir)
            try:
                listing = cached if cached is not None else self.clients().listing(server)
                # Checked (and its schemas inlined) once per listing, within
                # the budgets, before anything keeps or uses it.
                specs = tool_specs(
                    config,
                    listing.get("tools") or [],
                    self._source(server),
                    resources=bool(listing.get("resources")),
                )
            except ToolFailed as err:
                self.failures[server] = str(err)
                raise
            if cached is None:
                write_listing(config, listing, workdir)
                self._live.add(server)
            self._listings[server] = listing
            self._specs[server] = specs
            return listing

    def _source(self, server: str) -> str:
        """``mcp:NAME``, and the other agent's file it was read from (``mcp:docs (.mcp.json)``)."""
        if self._written is None:
            from mdagent.declarations.mcpconfig import server_locations

            self._written = {k: v[0] for k, v in server_locations(self.runtime.layers).items()}
        path = self._written.get(server, "")
        foreign = path and not path.endswith((".yaml", ".yml"))
        return f"mcp:{server} ({path})" if foreign else f"mcp:{server}"

    def specs(self, server: str) -> list[ToolSpec]:
        """The registry entries of ``server``'s tools; none (and one line told) when it fails."""
        try:
            self.listing(server)
        except ToolFailed as err:
            self.notify(str(err))
            return []
        return self._specs[server]

    def spec(self, name: str) -> ToolSpec | None:
        """The entry called ``name`` (``server__tool``); ToolFailed when its server fails."""
        server = server_of(name, self.configs)
        if server is None:
            return None
        found = self._named(server, name, live=False)
        if found is None and server not in self._live:
            # The cached list may be older than the server: ask the server itself.
            found = self._named(server, name, live=True)
        return found

    def _named(self, server: str, name: str, *, live: bool) -> ToolSpec | None:
        self.listing(server, live=live)
        return next((s for s in self._specs[server] if s.name == name), None)

    def call(self, spec: ToolSpec, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        """The handler of every MCP tool: the call, made on the server (started if need be)."""
        target = spec.implementation["mcp"]
        server = target["server"]
        try:
            clients = self.clients()
            fresh = server not in self._live
            timeout = float(spec.timeout or setting(ctx.settings, "mcp", "timeout"))
            if target.get("resource"):
                uri = str(args.get("uri") or "")
                result = clients.read_resource(server, uri, timeout=timeout, cancel=ctx.cancel)
            else:
                result = clients.call_tool(
                    server,
                    target["tool"],
                    args,
                    timeout=timeout,
                    cancel=ctx.cancel,
                    progress=self._progress(spec.name) if self._watched() else None,
                )
        except ToolFailed as err:
            return {"error": str(err)}
        if fresh:  # the server is up now: keep its current list for next time
            self._refresh(server)
        return result

    def _verbose(self) -> bool:
        return bool(getattr(getattr(self.runtime, "options", None), "verbose", False))

    def _watched(self) -> bool:
        """Whether someone sees progress lines: -v, or a terminal on stderr (the session)."""
        return self._verbose() or sys.stderr.isatty()

    def _progress(self, name: str) -> Callable[[float, float | None, str | None], None]:
        def shown(done: float, total: float | None, message: str | None) -> None:
            of = f"/{total:g}" if total else ""
            self.notify(f"{name}: {done:g}{of}{' ' + message if message else ''}")

        return shown

    def _refresh(self, server: str) -> None:
        with contextlib.suppress(ToolFailed):  # the call's own result says what happened
            self.listing(server, live=True)

    # -- prompts --

    def prompt(self, server: str, name: str) -> dict[str, Any]:
        """The prompt ``name`` of ``server`` (its MCP ``Prompt`` dict); UsageError when none."""
        prompts = self.listing(server).get("prompts") or []
        found = _find_prompt(prompts, name)
        if found is None and server not in self._live:
            prompts = self.listing(server, live=True).get("prompts") or []
            found = _find_prompt(prompts, name)
        if found is None:
            names = ", ".join(f"/{server}:{p.get('name')}" for p in prompts) or "(none)"
            raise UsageError(f"mcp server {server} has no prompt {name!r}. Its prompts: {names}")
        return found

    def close(self) -> None:
        """Stop the servers this process started."""
        if self._clients is not None:
            self._clients.close()


def _find_prompt(prompts: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    from mdagent.core.specs import command_key

    exact = next((p for p in prompts if p.get("name") == name), None)
    return exact or next(
        (p for p in prompts if command_key(str(p.get("name"))) == command_key(name)), None
    )


# -- the toolbox ----------------------------------------------------------------------


class ServerDown(UnknownTool):
    """Stand-in for a tool of a server that could not be reached: its run says why."""

    def __init__(self, name: str, reason: str, available: Any) -> None:
        super().__init__(name, available)
        self.reason = reason

    def run(self, args: Any = None, context: Any = None):  # noqa: D102 - UnknownTool's contract
        from mdagent.core.calls import Result

        return Result.failure(self.reason, code="MCP_UNAVAILABLE")


class McpToolbox(Toolbox):
    """A toolbox that adds a server's tools on first use (see the module docstring).

    Asking for the whole set (iterating, ``tools``, the serialisers) adds
    every server's; ``tool_for("github__x")`` adds only ``github``'s.
    """

    def __init__(self, policy: Any, mcp: McpTools) -> None:
        super().__init__(policy=policy)
        self.mcp = mcp
        self._loaded: set[str] = set()
        self._loading = threading.RLock()

    def load(self, server: str | None = None) -> None:
        """Add the tools of ``server`` (None: of every declared server), once."""
        with self._loading:
            for name in [server] if server else list(self.mcp.configs):
                if name in self._loaded:
                    continue
                self._loaded.add(name)
                for spec in self.mcp.specs(name):
                    if spec.name not in self._tools:  # a declared tool of that name wins
                        add_mcp_tool(self, spec, self.mcp)

    def tool_for(self, name: str) -> Tool | UnknownTool:
        server = server_of(name, self.mcp.configs)
        if server is not None and server not in self._loaded:
            self.load(server)
        found = super().tool_for(name)
        if isinstance(found, UnknownTool) and server in self.mcp.failures:
            return ServerDown(name, self.mcp.failures[server], self._tools)
        return found

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            server = server_of(name, self.mcp.configs)
            if server is not None:
                self.load(server)
        return super().__contains__(name)

    def __iter__(self) -> Iterator[Tool]:
        self.load()
        return super().__iter__()

    def __len__(self) -> int:
        self.load()
        return super().__len__()

    @property
    def tools(self) -> dict[str, Tool]:
        self.load()
        return super().tools

    def _selected(self, names: Any) -> list[Tool]:
        self.load()
        return super()._selected(names)


def add_mcp_tool(box: Toolbox, spec: ToolSpec, mcp: McpTools) -> None:
    """Register one MCP tool on ``box``; its handler calls the server through ``mcp``."""

    def handler(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return mcp.call(spec, args, ctx)

    box.add_spec(spec, handler)


# -- /server:prompt -------------------------------------------------------------------


def prompt_target(runtime: Runtime, name: str) -> tuple[str, str] | None:
    """``(server, prompt)`` when ``/name`` is ``/server:prompt`` of a declared server."""
    servers = runtime.settings.get("mcp_servers") or {}
    if ":" not in name or not servers:
        return None
    return prompt_command(name, server_configs(runtime.settings))


def prompt_spec(server: str, prompt: dict[str, Any]) -> tuple[CommandSpec, ToolSpec]:
    """A command and a stand-in tool whose parameters are the prompt's arguments.

    They let the usual parser (:func:`mdagent.tools.dispatch.parse_words`) read
    ``key=value``, ``--key value`` and positional words, and print the usage.
    """
    arguments = prompt.get("arguments") or []
    params = {
        str(a["name"]): {"type": "string", "description": str(a.get("description") or "")}
        for a in arguments
        if a.get("name")
    }
    required = [str(a["name"]) for a in arguments if a.get("required") and a.get("name")]
    name = f"{server}:{prompt.get('name')}"
    command = CommandSpec(
        name=name,
        description=str(prompt.get("description") or ""),
        tool=name,
        arg_mode="parsed",
        kind="mcp-prompt",
        source=f"mcp:{server}",
    )
    return command, ToolSpec(
        name=name, description=command.description, params=params, required=required
    )


# -- status, for `agent mcp list` and `agent check` ---------------------------------------


def server_status(mcp: McpTools, server: str) -> dict[str, Any]:
    """Start ``server`` and say how it went: tools, prompts, or the error."""
    config = mcp.configs[server]
    row: dict[str, Any] = {
        "name": server,
        "transport": config.transport,
        "target": config.target,
    }
    try:
        listing = mcp.listing(server, live=True)
    except ToolFailed as err:
        return {**row, "status": "failed", "error": str(err), "tools": [], "prompts": []}
    specs = mcp.specs(server)
    return {
        **row,
        "status": "ok",
        "tools": [
            {"name": s.name, "security": s.security, "description": s.description} for s in specs
        ],
        "prompts": [f"/{server}:{p.get('name')}" for p in listing.get("prompts") or []],
        "not_offered": [
            {"name": str(t.get("name")), "reason": "it runs only as a task (taskSupport: required)"}
            for t in listing.get("tools") or []
            if (t.get("execution") or {}).get("taskSupport") == "required"
        ],
    }


def check_problems(runtime: Runtime) -> list[Any]:
    """``agent check``'s findings on ``mcp_servers:``: each server started, each binding verified.

    A server that cannot be reached is a warning at its entry (the settings
    may be right and the server down); ``command-tool: server__tool`` naming
    a tool its server does not offer is an error at the command.
    """
    from mdagent.core.errors import Problem
    from mdagent.declarations.mcpconfig import server_locations

    mcp = runtime.mcp
    registry = runtime.registry
    where = server_locations(registry.layers)
    found: list[Problem] = []
    statuses: dict[str, dict[str, Any]] = {}
    for name in mcp.configs:
        path, line, col = where.get(name, ("agent.yaml", 1, 1))
        status = statuses[name] = server_status(mcp, name)
        if status["status"] == "ok":
            tools, prompts = len(status["tools"]), len(status["prompts"])
            message = f"mcp server {name}: {tools} tool(s), {prompts} prompt(s)"
            found.append(Problem(path, line, col, "info", message))
        else:
            found.append(Problem(path, line, col, "warning", status["error"]))
    for key, command in sorted(registry.commands.items()):
        if command.kind != "tool" or registry.tool(command.tool) is not None:
            continue
        server = server_of(command.tool, mcp.configs)
        if server is None:
            continue
        status = statuses[server]
        offered = {t["name"] for t in status["tools"]}
        if status["status"] != "ok":
            message = f"/{key}: tool {command.tool!r} is unverified: its MCP server did not start"
            found.append(Problem(command.source, command.line, 1, "warning", message))
        elif command.tool not in offered:
            message = f"/{key}: mcp server {server} offers no tool {command.tool!r}"
            found.append(Problem(command.source, command.line, 1, "error", message))
    mcp.close()
    return found
