"""Talking to other MCP servers with the official SDK: start, list, call, get a prompt.

mdagent is synchronous; the SDK is async. One daemon thread runs an event
loop with an anyio :class:`~anyio.from_thread.BlockingPortal`, and every
server's connection lives in a task there, so one process keeps each server
running across calls (an agent turn may call a tool many times). Calls from
any thread go through the portal.

What this module guarantees:

- a server starts on first use and only then; a failed start is remembered
  for the process (each later use fails at once with the same line);
- every failure is one line naming the server: it did not start, did not
  start in ``startup_timeout``, a call ran past ``timeout``, it died mid-call
  (a stdio server's stderr tail is appended); a server that died is started
  again on next use;
- stdio servers run in a session of their own (the SDK's doing) with the
  scrubbed environment plus their own ``env``; their stderr goes to a
  temporary file, not the terminal; they are stopped at exit.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mdagent.core.errors import Interrupted, ToolFailed
from mdagent.declarations.mcpconfig import MAX_LISTED, MAX_PAGES, ListingTooLarge, ServerConfig

#: Shown when the SDK is missing: every MCP entry point says the same.
INSTALL_HINT = "MCP needs the official SDK: pip install 'mdagent[mcp]'"
STDERR_TAIL = 300  # characters of a stdio server's stderr shown with a failure


def require_sdk() -> None:
    """Raise a one-line ToolFailed when the ``mcp`` package is not installed."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise ToolFailed(INSTALL_HINT) from None


def one_line(text: Any, limit: int = 500) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe(exc: BaseException) -> str:
    """What went wrong, in a few words: the innermost of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"{exc.filename}: command not found"
    message = getattr(exc, "message", None) or str(exc)
    return one_line(message) or type(exc).__name__


class _Loop:
    """The event loop thread and its portal, started on first need."""

    def __init__(self) -> None:
        self._portal: Any = None
        self._lock = threading.Lock()

    def portal(self) -> Any:
        with self._lock:
            if self._portal is None:
                ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
                # A daemon thread: it must not keep a finished process alive;
                # atexit (which runs before daemon threads are dropped) stops
                # the servers cleanly first.
                thread = threading.Thread(
                    target=self._run, args=(ready,), name="mdagent-mcp", daemon=True
                )
                thread.start()
                self._portal = ready.result()
        return self._portal

    @staticmethod
    def _run(ready: concurrent.futures.Future[Any]) -> None:
        import anyio
        from anyio.from_thread import BlockingPortal

        async def main() -> None:
            async with BlockingPortal() as portal:
                ready.set_result(portal)
                await portal.sleep_until_stopped()

        try:
            anyio.run(main)
        except BaseException as exc:  # the caller waiting for the portal must hear of it
            if not ready.done():
                ready.set_exception(exc)


class _Connection:
    """One running server: its client session, held open by a task in the loop."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        workdir: str,
        env: Mapping[str, str],
        on_log: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self.workdir = workdir
        self.on_log = on_log
        # ${VAR}s resolved now: a missing one fails here, by name, before anything starts.
        if config.url:
            self.headers = config.resolved_headers()
        else:
            self.env = {**env, **config.resolved_env()}
        self.client: Any = None
        self.listing: dict[str, Any] = {}
        self.broken: str | None = None
        self._closing: Any = None
        self._task: concurrent.futures.Future[Any] | None = None
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the server

    # -- starting and stopping --

    def start(self, portal: Any) -> dict[str, Any]:
        """Start the server and list what it offers; ToolFailed when it cannot."""
        ready = threading.Event()
        self._task = portal.start_task_soon(self._hold, ready)
        self._task.add_done_callback(lambda _: ready.set())
        limit = self.config.startup_timeout
        if not ready.wait(limit):
            self._task.cancel()
            raise self.failure(f"did not start within {limit:g} s (startup_timeout)")
        if self._task.done():
            try:
                exc = self._task.exception()
            except concurrent.futures.CancelledError:
                exc = None
            while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
                exc = exc.exceptions[0]
            if isinstance(exc, ListingTooLarge):
                raise ListingTooLarge(str(exc))
            raise self.failure(f"failed to start: {describe(exc) if exc else 'cancelled'}")
        return self.listing

    async def _hold(self, ready: threading.Event) -> None:
        import anyio

        self._closing = anyio.Event()
        async with contextlib.AsyncExitStack() as stack:
            client = await stack.enter_async_context(self._client(stack))
            self.listing = await _listing(client, self.config.name)
            self.client = client
            ready.set()
            await self._closing.wait()

    def _client(self, stack: contextlib.AsyncExitStack) -> Any:
        from mcp import Client

        config = self.config
        if config.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(
                headers=self.headers,
                timeout=httpx2.Timeout(config.startup_timeout, read=max(config.timeout, 300)),
            )
            stack.push_async_exit(http.__aexit__)  # closed after the session ends
            transport = streamable_http_client(config.url, http_client=http)
        else:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=config.command or "",
                args=list(config.args),
                env=self.env,
                cwd=str(Path(self.workdir, config.cwd)) if config.cwd else self.workdir,
                encoding_error_handler="replace",
            )
            transport = stdio_client(params, errlog=self._stderr)
        info = _client_info()
        return Client(
            transport,
            client_info=info,
            read_timeout_seconds=config.timeout,
            logging_callback=self._logged if self.on_log is not None else None,
            # The 2026 protocol sends a call's log messages only when asked for a level.
            log_level="info" if self.on_log is not None else None,
        )

    async def _logged(self, params: Any) -> None:
        """A server's log message (``notifications/message``), as one line to the person."""
        data = params.data if isinstance(params.data, str) else json.dumps(params.data)
        logger = f" {params.logger}" if params.logger else ""
        if self.on_log is not None:
            self.on_log(f"mcp server {self.config.name}{logger} [{params.level}]: {one_line(data)}")

    def close(self, portal: Any) -> None:
        """Stop the server (the SDK closes its stdin, then ends its process group)."""
        task, self._task = self._task, None
        if task is None:
            return
        if self._closing is not None:
            with contextlib.suppress(Exception):
                portal.call(self._closing.set)
        with contextlib.suppress(Exception):
            task.result(timeout=10)
        if not task.done():
            task.cancel()
        with contextlib.suppress(OSError):
            self._stderr.close()

    # -- using it --

    def run(self, portal: Any, coro_fn: Any, *args: Any, cancel: Any = None) -> Any:
        """Run ``coro_fn(client, *args)`` in the loop; Interrupted when ``cancel`` is set."""
        future = portal.start_task_soon(coro_fn, self.client, *args)
        # wait(), not result(timeout=): the call's own TimeoutError would look
        # like "not done yet" (concurrent.futures.TimeoutError is TimeoutError).
        while not concurrent.futures.wait([future], timeout=0.1).done:
            if cancel is not None and cancel.is_set():
                future.cancel()
                raise Interrupted("interrupted")
            if self._task is not None and self._task.done():
                future.cancel()
                raise ConnectionError("the connection ended")
        return future.result()

    def failure(self, what: str) -> ToolFailed:
        """A one-line ToolFailed naming the server, with a stdio server's stderr tail."""
        tail = self.stderr_tail()
        return ToolFailed(
            f"mcp server {self.config.name}: {what}" + (f"; stderr: {tail}" if tail else "")
        )

    def stderr_tail(self) -> str:
        try:
            size = os.fstat(self._stderr.fileno()).st_size
            data = os.pread(self._stderr.fileno(), 4096, max(0, size - 4096))
        except (OSError, ValueError):
            return ""
        text = one_line(data.decode("utf-8", "replace"), limit=10_000)
        return text if len(text) <= STDERR_TAIL else "…" + text[-STDERR_TAIL:]


def _client_info() -> Any:
    import mcp.types as types

    from mdagent import __version__

    return types.Implementation(name="mdagent", version=__version__)


async def _listing(client: Any, server: str) -> dict[str, Any]:
    """Every tool and prompt the server offers, as plain dicts (camelCase, as on the wire)."""
    tools = await _pages(client.list_tools, "tools", server)
    capabilities = client.server_capabilities
    prompts = await _pages(client.list_prompts, "prompts", server) if capabilities.prompts else []
    return {"tools": tools, "prompts": prompts, "resources": capabilities.resources is not None}


async def _pages(method: Any, field: str, server: str) -> list[dict[str, Any]]:
    """The whole list, page by page: ListingTooLarge past MAX_PAGES or MAX_LISTED.

    Cut short, the list would be silently incomplete; a server whose list
    never ends would hold up the start for ever.
    """
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(MAX_PAGES):
        page = await method(cursor=cursor)
        entries = getattr(page, field)
        if len(items) + len(entries) > MAX_LISTED:
            raise ListingTooLarge(
                f"mcp server {server}: lists more than {MAX_LISTED:,} {field}; "
                "the server is not used"
            )
        items += [i.model_dump(by_alias=True, mode="json", exclude_none=True) for i in entries]
        cursor = page.next_cursor
        if not cursor:
            return items
    raise ListingTooLarge(
        f"mcp server {server}: its list of {field} runs past {MAX_PAGES} pages; "
        "the server is not used"
    )


async def _call_tool(
    client: Any, tool: str, args: dict[str, Any], timeout: float, progress: Any = None
) -> Any:
    import anyio

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress(done, total, message)

    with anyio.fail_after(timeout):
        return await client.call_tool(
            tool,
            args,
            read_timeout_seconds=timeout,
            progress_callback=on_progress if progress is not None else None,
        )


async def _read_resource(client: Any, uri: str, timeout: float) -> Any:
    import anyio

    with anyio.fail_after(timeout):
        return await client.read_resource(uri)


async def _get_prompt(client: Any, prompt: str, arguments: dict[str, str], timeout: float) -> Any:
    import anyio

    with anyio.fail_after(timeout):
        return await client.get_prompt(prompt, arguments)


class McpClients:
    """The MCP servers of one process, each started on first use and stopped at exit."""

    def __init__(
        self,
        configs: Mapping[str, ServerConfig],
        *,
        workdir: str,
        env: Mapping[str, str],
        on_log: Callable[[str], None] | None = None,
        before_start: Any = None,
    ) -> None:
        """``on_log`` receives the servers' log messages as lines (None: they are dropped)."""
        require_sdk()
        #: ``before_start(name) -> reason | None``: why a server may not start now
        #: (the workspace's trust lapsed since the run began); asked before each start.
        self.before_start = before_start
        self.configs = dict(configs)
        self.on_log = on_log
        self.workdir = workdir
        self.env = dict(env)
        self._loop = _Loop()
        self._connections: dict[str, _Connection] = {}
        self._failed: dict[str, ToolFailed] = {}
        self._locks = {name: threading.Lock() for name in self.configs}
        self._closed = False
        atexit.register(self.close)

    def connection(self, name: str) -> _Connection:
        """The running connection to server ``name``, started now if need be."""
        with self._locks[name]:
            failed = self._failed.get(name)
            if failed is not None:
                raise ToolFailed(str(failed))
            conn = self._connections.get(name)
            if conn is not None and conn.broken is None:
                return conn
            if conn is not None:
                conn.close(self._loop.portal())
            conn = None
            refused = self.before_start(name) if self.before_start is not None else None
            if refused:
                raise ToolFailed(f"mcp server {name} not started: {refused}")
            try:
                conn = _Connection(
                    self.configs[name], workdir=self.workdir, env=self.env, on_log=self.on_log
                )
                conn.start(self._loop.portal())
            except ToolFailed as err:
                if conn is not None:
                    conn.close(self._loop.portal())
                self._failed[name] = err
                raise
            self._connections[name] = conn
            return conn

    def listing(self, name: str) -> dict[str, Any]:
        """What server ``name`` offers now: ``{"tools": [...], "prompts": [...]}``."""
        return self.connection(name).listing

    def call_tool(
        self,
        name: str,
        tool: str,
        args: Mapping[str, Any],
        *,
        timeout: float,
        cancel: Any = None,
        progress: Callable[[float, float | None, str | None], None] | None = None,
    ) -> dict[str, Any]:
        """Call ``tool`` of server ``name``; the result as a toolbox dict (``error`` on failure).

        ``progress(done, total, message)`` is told each progress notification of the call.
        """
        conn = self.connection(name)
        try:
            result = conn.run(
                self._loop.portal(), _call_tool, tool, dict(args), timeout, progress, cancel=cancel
            )
        except Interrupted:
            raise
        except TimeoutError:
            return {
                "error": f"mcp server {name}: {tool} timed out after {timeout:g} s",
                "timed_out": True,
            }
        except Exception as exc:
            return {"error": str(self._broken(conn, exc, tool))}
        return result_dict(result)

    def read_resource(
        self, name: str, uri: str, *, timeout: float, cancel: Any = None
    ) -> dict[str, Any]:
        """Read resource ``uri`` of server ``name``, as a toolbox result (``error`` on failure)."""
        conn = self.connection(name)
        try:
            result = conn.run(self._loop.portal(), _read_resource, uri, timeout, cancel=cancel)
        except Interrupted:
            raise
        except TimeoutError:
            return {"error": f"mcp server {name}: reading {uri} timed out after {timeout:g} s"}
        except Exception as exc:
            return {"error": str(self._broken(conn, exc, f"resource {uri}"))}
        parts = []
        for item in result.contents:
            block = item.model_dump(mode="json", by_alias=True)
            if "text" in block:
                parts.append(str(block["text"]))
            else:
                parts.append(media_note({**block, "type": "binary", "data": block.get("blob")}))
        return {"output": "\n".join(parts)}

    def get_prompt(
        self, name: str, prompt: str, arguments: Mapping[str, str], *, cancel: Any = None
    ) -> list[dict[str, str]]:
        """The messages of ``prompt`` of server ``name`` (``{"role", "content"}`` text)."""
        conn = self.connection(name)
        timeout = conn.config.timeout
        try:
            result = conn.run(
                self._loop.portal(), _get_prompt, prompt, dict(arguments), timeout, cancel=cancel
            )
        except Interrupted:
            raise
        except TimeoutError:
            raise ToolFailed(
                f"mcp server {name}: prompt {prompt} timed out after {timeout:g} s"
            ) from None
        except Exception as exc:
            raise self._broken(conn, exc, f"prompt {prompt}") from None
        return [
            {"role": m.role, "content": content_text([m.content.model_dump(mode="json")])}
            for m in result.messages
        ]

    def _broken(self, conn: _Connection, exc: Exception, what: str) -> ToolFailed:
        """The failure of a request; a connection that ended is dropped (restarted on next use)."""
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED

        if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:
            return ToolFailed(f"mcp server {conn.config.name}: {what}: {describe(exc)}")
        conn.broken = describe(exc)
        return conn.failure(f"{what}: the server stopped answering ({describe(exc)})")

    def close(self) -> None:
        """Stop every server this process started (also run at exit)."""
        if self._closed:
            return
        self._closed = True
        if self._loop._portal is None:
            return
        for conn in list(self._connections.values()):
            conn.close(self._loop.portal())
        self._connections.clear()


def content_text(blocks: list[dict[str, Any]]) -> str:
    """The text of MCP content blocks; images, audio and binary resources are named, not inlined."""
    parts = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "resource":
            resource = block.get("resource") or {}
            if "text" in resource:
                parts.append(str(resource["text"]))
            else:
                parts.append(
                    f"[resource {resource.get('uri', '')} ({resource.get('mimeType', 'binary')})]"
                )
        elif kind == "resource_link":
            parts.append(resource_link_text(block))
        elif kind in ("image", "audio"):
            parts.append(media_note(block))
        else:
            parts.append(f"[{kind} content ({block.get('mimeType', '?')})]")
    return "\n".join(parts)


def media_note(block: dict[str, Any]) -> str:
    """What stands for an image or a sound a model cannot be sent: its type and size."""
    data = str(block.get("data") or "")
    size = len(data) * 3 // 4 - data[-2:].count("=")  # base64's decoded length
    return f"[{block.get('type')} content ({block.get('mimeType', '?')}, {size:,} bytes)]"


def resource_link_text(block: dict[str, Any]) -> str:
    """A resource link as the model reads it: the URI to pass to ``SERVER__read_resource``."""
    details = [str(block[k]) for k in ("name", "mimeType") if block.get(k)]
    described = f": {block['description']}" if block.get("description") else ""
    extra = f" ({', '.join(details)})" if details else ""
    return f"[resource link {block.get('uri', '')}{extra}{described}]"


def result_dict(result: Any) -> dict[str, Any]:
    """A ``CallToolResult`` as a toolbox result: ``output`` text (+ ``structured``); ``error`` when isError."""
    blocks = [b.model_dump(mode="json", by_alias=True) for b in result.content or []]
    text = content_text(blocks)
    data: dict[str, Any] = {"output": text}
    media = [
        {"type": b["type"], "mime": str(b.get("mimeType") or ""), "data": str(b.get("data") or "")}
        for b in blocks
        if b.get("type") in ("image", "audio") and b.get("data")
    ]
    if media:
        # Sent as images to a model that takes them (mdagent.agent.conversation.tool_message),
        # never inside the JSON text: the text names each one instead.
        data["media"] = media
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        data["structured"] = structured
    if result.is_error:
        data["error"] = one_line(text) or "the tool reported an error"
    return data
