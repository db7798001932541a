"""``agent mcp serve``: this registry's tools, prompt skills and skill files, over MCP.

Built on the official SDK's low-level :class:`mcp.server.lowlevel.Server`
(the tools are declared at run time with their own JSON Schemas, which the
decorator API cannot express); the SDK owns the protocol, the transports
(stdio, Streamable HTTP) and the framing.

Another agent is a model as far as the policy is concerned: every call
goes through the toolbox with ``caller="mcp"``: validation, deny rules,
hooks, ask/allow rules, rate limits, the sandbox and the audit log, as for
``agent ask``. Nobody can be asked: the server never opens the terminal, so
a call that would ask is refused with the message saying which rule or
setting would allow it (``--yes`` answers those questions; it never covers
the agent's own configuration files). Over stdio the SDK points fd 1 at
stderr while it serves, so nothing but protocol messages reaches stdout.

The tools of ``mcp_servers:`` are not served again: an MCP client can reach
those servers itself, and a server listed in its own settings would start
itself without end.
"""

from __future__ import annotations

import base64
import contextlib
import mimetypes
import os
import re
import shlex
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from mdagent.core.defaults import setting
from mdagent.core.errors import UsageError, unknown_tool
from mdagent.core.specs import unmet_requirement
from mdagent.mcp.mcpclient import one_line, require_sdk

if TYPE_CHECKING:
    from mdagent.core.calls import Result
    from mdagent.core.specs import Skill
    from mdagent.runtime.runtime import Runtime
    from mdagent.tools.toolbox import Toolbox

#: Seconds a served call may run past its tool's own timeout before it is
#: answered as a failure (the tool's own limit should fire first).
GRACE = 10.0
MAX_RESOURCE_BYTES = 1_000_000
MAX_SKILL_FILES = 500
_POSITIONAL = re.compile(r"\$ARGUMENTS\[(\d+)\]|\$(\d+)(?!\d)")


def parse_address(value: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[IPv6]:PORT`` -> (host, port); a bare port binds 127.0.0.1."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"--http {value}: expected PORT or HOST:PORT (e.g. 127.0.0.1:8931)")
    return host, int(port)


# -- what is served ---------------------------------------------------------------------


class Served:
    """The tools, prompts and resources of one ``agent mcp serve``, and how to run them."""

    def __init__(self, runtime: Runtime) -> None:
        from mdagent.agent.prompts import model_tools

        self.runtime = runtime
        runtime.check_settings()
        # Never interactive: stdin and stdout belong to the protocol, and a
        # person at this terminal did not ask for the call.
        self.policy = runtime.policy(approver=runtime.approver(interactive=False))
        self.box: Toolbox = runtime.toolbox(policy=self.policy, mcp=False)
        self.tools = model_tools(self.box, runtime.settings)  # as `agent ask` would send them
        self.names = {t["name"] for t in self.tools}

    # -- tools --

    def tool_list(self) -> list[Any]:
        import mcp.types as types

        out = []
        for described in self.tools:
            tool = self.box.tool_for(described["name"])
            security = str(tool.meta.get("security") or "moderate")
            approval = bool(tool.meta.get("approval"))
            out.append(
                types.Tool(
                    name=described["name"],
                    description=described["description"],
                    input_schema=described["parameters"],
                    annotations=types.ToolAnnotations(
                        read_only_hint=security == "safe" and not approval,
                        destructive_hint=security == "dangerous" or approval,
                    ),
                )
            )
        return out

    def render_prompt(self, skill: Skill, arguments: str) -> str:
        """``skill``'s prompt for ``arguments``, its commands run as the client's calls."""
        from mdagent.agent.promptskills import render

        return render(skill, arguments, self.runtime.context(self.box, caller="mcp"))

    def schema(self, name: str) -> dict[str, Any] | None:
        return self.box.tool_for(name).schema if name in self.names else None

    def limit(self, name: str) -> float:
        """How long a served call may take before it is answered as timed out."""
        tool = self.box.tool_for(name)
        own = tool.meta.get("timeout")
        if own is None and name == "exec":
            own = setting(self.runtime.settings, "exec", "timeout", None)
        if own is None:
            own = setting(self.runtime.settings, "mcp", "timeout")
        return float(own) + GRACE

    def run(self, name: str, args: dict[str, Any], cancel: Any) -> Result:
        """One call, through the toolbox, as the caller ``mcp``."""
        from mdagent.agent.skillrunner import SkillRunner

        ctx = self.runtime.context(
            self.box, caller="mcp", output=None, cancel=cancel, skill_runner=SkillRunner()
        )
        return self.box.run(name, args, ctx)

    # -- prompts --

    def prompt_skills(self) -> list[Skill]:
        """Prompt skills a model may use: not ``disable-model-invocation``, requirements met."""
        registry = self.runtime.registry
        return [
            skill
            for _, skill in sorted(registry.skills.items())
            if skill.dispatch != "tool"
            and not skill.disable_model_invocation
            and unmet_requirement(skill.requires) is None
        ]

    def visible_skills(self) -> list[Skill]:
        registry = self.runtime.registry
        return [
            skill
            for _, skill in sorted(registry.skills.items())
            if not skill.disable_model_invocation and unmet_requirement(skill.requires) is None
        ]

    # -- resources --

    def resource_paths(self, skill: Skill) -> list[tuple[str, Path]]:
        """``(uri, file)`` for SKILL.md and every other file of the skill's folder.

        Hidden files and folders are left out (a ``.env`` has no business in
        a skill's listing), symlinks are not followed out of the folder.
        """
        root = Path(skill.dir)
        found: list[tuple[str, Path]] = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                if name.startswith("."):
                    continue
                path = Path(folder, name)
                if self._inside(path, root):
                    rel = path.relative_to(root).as_posix()
                    found.append((f"skill://{skill.name}/{quote(rel)}", path))
                if len(found) >= MAX_SKILL_FILES:
                    return found
        return found

    @staticmethod
    def _inside(path: Path, root: Path) -> bool:
        real, base = os.path.realpath(path), os.path.realpath(root)
        return real.startswith(base.rstrip(os.sep) + os.sep) and os.path.isfile(real)

    def resource_file(self, uri: str) -> Path:
        """The file a ``skill://name/path`` URI names; ValueError saying why not."""
        match = re.fullmatch(r"skill://([^/]+)/(.+)", uri)
        if not match:
            raise ValueError(f"not a skill resource: {uri} (expected skill://NAME/PATH)")
        name, rel = unquote(match.group(1)), unquote(match.group(2))
        skill = next((s for s in self.visible_skills() if s.name == name), None)
        if skill is None:
            raise ValueError(f"no skill {name!r}")
        parts = Path(rel).parts
        if Path(rel).is_absolute() or ".." in parts or any(p.startswith(".") for p in parts):
            raise ValueError(f"{uri}: not a file of skill {name}")
        path = Path(skill.dir, rel)
        if not self._inside(path, Path(skill.dir)):
            raise ValueError(f"{uri}: no such file in skill {name}")
        denied = self._denied(path)
        if denied:
            raise ValueError(f"{uri}: {denied}")
        return path

    def _denied(self, path: Path) -> str | None:
        """The refusal of read_file's deny rules for ``path`` (a resource read is a read)."""
        screen = getattr(self.policy, "screen", None)
        tool = self.box.tool_for("read_file")
        if screen is None or not hasattr(tool, "schema"):
            return None
        ctx = self.runtime.context(self.box, caller="mcp")
        decision = screen(tool, {"path": str(path)}, ctx)
        return decision.reason if decision is not None else None


def prompt_arguments(skill: Skill, body: str) -> list[tuple[str, str, bool]]:
    """``(name, description, required)`` of a prompt skill's arguments.

    From ``argument-hint`` (``<file>`` required, ``[focus]`` optional), with
    one ``argN`` for each ``$N`` the body uses beyond them; a skill with
    neither takes its whole argument string as ``arguments``.
    """
    hinted = [
        (_argument_name(req or opt), req or opt, bool(req))
        for req, opt in re.findall(r"<([^<>]+)>|\[([^\[\]]+)\]", skill.argument_hint or "")
    ]
    used = [int(a or b) for a, b in _POSITIONAL.findall(body)]
    count = max(used) + 1 if used else 0
    out = [(n, d, r) for n, d, r in hinted if n]
    for index in range(len(out), count):
        out.append((f"arg{index}", f"${index} of the skill", False))
    if not out:
        out = [("arguments", "the arguments, as typed after /" + skill.name, False)]
    names: set[str] = set()
    unique = []
    for name, description, required in out:
        while name in names:
            name += "_"
        names.add(name)
        unique.append((name, description, required))
    return unique


def _argument_name(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_")


def argument_string(spec: list[tuple[str, str, bool]], given: dict[str, str]) -> str:
    """What ``agent /name`` would have received: one value verbatim, several shell-joined."""
    values = [str(given.get(name) or "") for name, _, _ in spec]
    while values and not values[-1]:
        values.pop()
    if len(values) <= 1:
        return values[0] if values else ""
    return shlex.join(values)


def result_content(result: Result) -> tuple[str, dict[str, Any]]:
    """The text a calling agent reads, and the whole result as structured content."""
    import json

    data = result.data
    if not result.ok:
        return one_line(result.error or "failed", limit=2000), result.to_dict()
    if data.get("output") is not None:
        text = str(data["output"])
    elif "stdout" in data or "stderr" in data:
        text = str(data.get("stdout") or "")
        if data.get("stderr"):
            text += ("\n" if text else "") + str(data["stderr"])
    else:
        text = json.dumps(data, ensure_ascii=False, default=str)
    return text, result.to_dict()


# -- the server ---------------------------------------------------------------------------


#: The extension a server declares when it serves skills as ``skill://`` resources.
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
#: MCP's log levels, least severe first (``logging/setLevel``).
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def build_server(served: Served) -> Any:
    """The SDK server answering with ``served``'s tools, prompts and resources."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    def bad_request(message: str) -> MCPError:
        return MCPError(code=types.INVALID_PARAMS, message=message)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=served.tool_list())

    async def call_tool(ctx: Any, params: Any) -> Any:
        name = params.name
        if name not in served.names:
            raise bad_request(unknown_tool(name, served.names))
        import threading

        cancel = threading.Event()
        limit = served.limit(name)
        try:
            with anyio.fail_after(limit):
                result = await anyio.to_thread.run_sync(
                    served.run, name, dict(params.arguments or {}), cancel, abandon_on_cancel=True
                )
        except TimeoutError:
            cancel.set()  # the call's processes are stopped; its thread is left to finish
            text = f"{name} timed out after {limit:g} s"
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], is_error=True
            )
        text, structured = result_content(result)
        if not result.ok:
            await log(ctx, "warning", f"{name}: {text.splitlines()[0] if text else 'failed'}")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=structured,
            is_error=not result.ok,
        )

    # `logging/setLevel`: nothing is sent until a client asks for a level.
    chosen: dict[str, int] = {}

    async def set_logging_level(ctx: Any, params: Any) -> Any:
        chosen["level"] = LOG_LEVELS.index(str(params.level))
        return types.EmptyResult()

    async def log(ctx: Any, level: str, text: str) -> None:
        if "level" in chosen and LOG_LEVELS.index(level) >= chosen["level"]:
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated from a later protocol version on
                # A log line never fails the call it is about.
                await ctx.session.send_log_message(level, text, logger="mdagent")

    async def list_resource_templates(ctx: Any, params: Any) -> Any:
        # Every skill file is listed as itself (resources/list): no templates to offer.
        return types.ListResourceTemplatesResult(resource_templates=[])

    list_prompts, get_prompt = _prompt_handlers(served, types, bad_request)
    list_resources, read_resource = _resource_handlers(served, types, bad_request)

    with warnings.catch_warnings():
        # logging/setLevel is what clients of the 2025 protocol versions call;
        # the SDK's note that a later version drops it is not the person's concern.
        warnings.simplefilter("ignore")
        server = _server(
            Server,
            served,
            list_tools=list_tools,
            call_tool=call_tool,
            list_prompts=list_prompts,
            get_prompt=get_prompt,
            list_resources=list_resources,
            list_resource_templates=list_resource_templates,
            read_resource=read_resource,
            set_logging_level=set_logging_level,
        )
    if served.visible_skills():
        _declare_skills_extension(server)
    return server


def _prompt_handlers(served: Served, types: Any, bad_request: Any) -> tuple[Any, Any]:
    """``prompts/list`` and ``prompts/get``: prompt skills, rendered as ``agent /name`` renders them."""
    import anyio

    from mdagent.core.errors import MdagentError
    from mdagent.declarations.skillbody import read_body

    def skill_named(name: str) -> Skill:
        skill = next((s for s in served.prompt_skills() if s.name == name), None)
        if skill is None:
            raise bad_request(f"unknown prompt: {name}")
        return skill

    async def list_prompts(ctx: Any, params: Any) -> Any:
        prompts = []
        for skill in served.prompt_skills():
            arguments = prompt_arguments(skill, read_body(skill.path))
            prompts.append(
                types.Prompt(
                    name=skill.name,
                    description=skill.description,
                    arguments=[
                        types.PromptArgument(name=n, description=d, required=r)
                        for n, d, r in arguments
                    ],
                )
            )
        return types.ListPromptsResult(prompts=prompts)

    async def get_prompt(ctx: Any, params: Any) -> Any:
        skill = skill_named(params.name)
        body = read_body(skill.path)
        spec = prompt_arguments(skill, body)
        given = {str(k): str(v) for k, v in (params.arguments or {}).items()}
        missing = [n for n, _, required in spec if required and not given.get(n)]
        if missing:
            raise bad_request(f"prompt {skill.name}: missing argument(s): {', '.join(missing)}")
        try:
            # Rendered as `agent /name` renders it, its !`cmd` run as the MCP
            # client's calls (judged as a model's: policy, sandbox, audit).
            text = await anyio.to_thread.run_sync(
                served.render_prompt, skill, argument_string(spec, given)
            )
        except MdagentError as exc:
            raise bad_request(f"prompt {skill.name}: {exc}") from None
        return types.GetPromptResult(
            description=skill.description,
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
            ],
        )

    return list_prompts, get_prompt


def _resource_handlers(served: Served, types: Any, bad_request: Any) -> tuple[Any, Any]:
    """``resources/list`` and ``resources/read``: every served skill's files as ``skill://``."""

    async def list_resources(ctx: Any, params: Any) -> Any:
        resources = []
        for skill in served.visible_skills():
            for uri, path in served.resource_paths(skill):
                rel = path.relative_to(skill.dir).as_posix()
                resources.append(
                    types.Resource(
                        uri=uri,
                        name=f"{skill.name}/{rel}",
                        description=skill.description if rel == "SKILL.md" else None,
                        mime_type=_mime(path),
                        size=path.stat().st_size,
                    )
                )
        return types.ListResourcesResult(resources=resources)

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        try:
            path = served.resource_file(uri)
        except ValueError as err:
            raise bad_request(str(err)) from None
        data = path.read_bytes()[: MAX_RESOURCE_BYTES + 1]
        if len(data) > MAX_RESOURCE_BYTES:
            raise bad_request(f"{uri}: larger than {MAX_RESOURCE_BYTES} bytes")
        mime = _mime(path)
        try:
            contents: Any = types.TextResourceContents(
                uri=uri, mime_type=mime, text=data.decode("utf-8")
            )
        except UnicodeDecodeError:
            contents = types.BlobResourceContents(
                uri=uri, mime_type=mime, blob=base64.b64encode(data).decode("ascii")
            )
        return types.ReadResourceResult(contents=[contents])

    return list_resources, read_resource


def _declare_skills_extension(server: Any) -> None:
    """Skills over MCP (SEP-2640): the skill:// resources are what it describes.

    Declared as an extension (SEP-2133) and, for clients of the 2025 protocol
    versions, which have no ``extensions``, as experimental too.
    """
    server.extensions[SKILLS_EXTENSION] = {}
    create = server.create_initialization_options

    def with_skills(notification_options=None, experimental_capabilities=None, extensions=None):
        experimental = {**(experimental_capabilities or {}), SKILLS_EXTENSION: {}}
        return create(notification_options, experimental, extensions)

    server.create_initialization_options = with_skills


def _server(Server: Any, served: Served, **on: Any) -> Any:
    from mdagent import __version__

    return Server(
        "mdagent",
        version=__version__,
        instructions="Tools, prompts and skills declared for mdagent in "
        f"{served.runtime.workdir}; calls run under its policy.",
        get_tool_input_schema=served.schema,
        **{f"on_{name}": handler for name, handler in on.items()},
    )


def _mime(path: Path) -> str:
    if path.suffix.lower() in (".md", ".markdown"):
        return "text/markdown"
    return mimetypes.guess_type(path.name)[0] or "text/plain"


# -- who may reach the HTTP server -------------------------------------------------------


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only, in any spelling.

    Every address of 127.0.0.0/8 however written (``127.1``, ``0x7f.1``,
    ``127.0.0.2``, ``[::ffff:127.0.0.1]``), ``::1`` and ``localhost``
    (:func:`mdagent.safety.views.normal_host` reads the spellings).
    """
    import ipaddress

    from mdagent.safety.views import normal_host

    name = normal_host(host)
    if name == "localhost":
        return True
    try:
        return name is not None and ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _header_host(value: str) -> str | None:
    """The host of a ``Host`` header (``name``, ``name:port``, ``[v6]:port``), or None."""
    if value.startswith("["):
        host, bracket, rest = value[1:].partition("]")
        return host if bracket and re.fullmatch(r"(:\d{1,5})?", rest) else None
    host, colon, port = value.rpartition(":")
    if not colon:
        return value
    return host if port.isdigit() and ":" not in host else None


def _origin_host(value: str) -> str | None:
    """The host of an ``Origin`` header (``http[s]://host[:port]``), or None."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a port that is not one
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or parts.path or parts.username is not None:
        return None
    return parts.hostname


def foreign_request(headers: list[tuple[bytes, bytes]]) -> tuple[int, str] | None:
    """``(status, reason)`` when a request to a loopback server may come from elsewhere.

    A web page can make the browser send requests to 127.0.0.1 (DNS
    rebinding: its own name, resolved to 127.0.0.1; or a form posted
    across sites). The browser still writes the page's name in ``Host``
    and its origin in ``Origin``, so both must name this machine; no
    ``Origin`` is a client that is not a browser. A header given twice, or
    that cannot be read, is refused.
    """
    found: dict[bytes, list[str]] = {}
    for key, value in headers:
        if key.lower() in (b"host", b"origin"):
            found.setdefault(key.lower(), []).append(value.decode("latin-1").strip())
    hosts, origins = found.get(b"host", []), found.get(b"origin", [])
    host = _header_host(hosts[0]) if len(hosts) == 1 else None
    if host is None or not is_loopback(host):
        return 421, "Invalid Host header: this server answers requests for this machine only"
    if not origins:
        return None
    origin = _origin_host(origins[0]) if len(origins) == 1 else None
    if origin is None or not is_loopback(origin):
        return 403, "Invalid Origin header: this server answers pages of this machine only"
    return None


class LocalOnly:
    """ASGI middleware refusing what :func:`foreign_request` refuses, on every path.

    The SDK has a check of its own, but it is switched on only for the
    exact bind strings ``127.0.0.1``, ``localhost`` and ``::1`` and matches
    header text, so ``--http 127.1:P`` or ``127.0.0.2:P`` went unprotected
    and ``Host: 127.1:P`` would be refused; this one reads every spelling.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            refused = foreign_request(scope.get("headers") or [])
            if refused is not None:
                from starlette.responses import PlainTextResponse

                status, reason = refused
                await PlainTextResponse(reason, status_code=status)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def serve(runtime: Runtime, *, http: str | None = None) -> int:
    """Serve until the client goes away (stdio) or the process is stopped (HTTP)."""
    try:
        require_sdk()
    except Exception as err:
        raise UsageError(str(err)) from None
    import anyio

    address = parse_address(http) if http is not None else None
    served = Served(runtime)
    server = build_server(served)
    if address is None:
        anyio.run(_stdio, server)
    else:
        from mdagent.core import signals

        sock = _listen(*address)
        arrived: list[int] = []
        running: dict[str, Any] = {}

        def stop(signum: int) -> None:
            arrived.append(signum)
            if "web" in running:
                running["web"].should_exit = True  # uvicorn shuts down as for its own signals

        # uvicorn takes SIGTERM itself, shuts down, then raises the signal again
        # inside the event loop: raised there, it came out as a screen of
        # exception groups. Held here, it ends the run afterwards, in one line.
        with sock, signals.deferred(stop):
            anyio.run(_http, server, sock, runtime.options.verbose, running, arrived)
        if arrived:
            raise signals.Terminated(arrived[0])
    return 0


def _listen(host: str, port: int) -> Any:
    """A bound socket: "address in use" is one line here, not a web server's log."""
    import socket

    from mdagent.core.errors import ToolFailed

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, where = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as err:
        raise ToolFailed(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(where)
        sock.listen(128)
    except OSError as err:
        sock.close()
        raise ToolFailed(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    return sock


async def _stdio(server: Any) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _http(
    server: Any, sock: Any, verbose: bool, running: dict[str, Any], stopped: list[int]
) -> None:
    import anyio
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    # Where the socket is bound decides, not how the address was spelled.
    bound = sock.getsockname()
    local = is_loopback(str(bound[0]))
    # The SDK's own Host check off (see LocalOnly): on a loopback bind ours
    # runs in front of every path; on any other there is no name to check.
    app = server.streamable_http_app(
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    config = uvicorn.Config(
        LocalOnly(app) if local else app,
        log_level="info" if verbose else "warning",
        access_log=verbose,
        lifespan="on",
    )
    web = uvicorn.Server(config)
    running["web"] = web
    web.should_exit = bool(stopped)  # a stop signal already arrived
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: web.serve(sockets=[sock]))
        while not web.started:
            if web.should_exit:
                return
            await anyio.sleep(0.02)
        shown = f"[{bound[0]}]" if ":" in str(bound[0]) else bound[0]
        if not local:
            from mdagent.ui.console import say_warning

            say_warning(
                f"serving on {bound[0]}, reachable from other machines, without authentication"
            )
        print(f"agent: serving MCP on http://{shown}:{bound[1]}/mcp", file=sys.stderr, flush=True)
