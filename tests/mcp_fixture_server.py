"""A small MCP server built with the official SDK (``MCPServer``), for the client-side tests.

Run it as ``python mcp_fixture_server.py`` (stdio: what ``mcp_servers: {command, args}``
launches) or ``python mcp_fixture_server.py http`` (Streamable HTTP on 127.0.0.1, on a
free port it prints as ``PORT n``). Its start and every tool call append a line to
``$FIXTURE_LOG`` when that variable is set, so a test can tell whether the server
started and really ran a call.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ImageContent, ResourceLink, TextContent, ToolAnnotations

server = MCPServer("fixture")


def _log(line: str) -> None:
    path = os.environ.get("FIXTURE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Echo the text back."""
    _log(f"echo {text}")
    return f"echo: {text}"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    _log(f"add {a} {b}")
    return a + b


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def wipe(name: str) -> str:
    """Delete the named thing (pretend)."""
    _log(f"wipe {name}")
    return f"wiped {name}"


@server.tool()
def fail(message: str) -> str:
    """Always fails with the message."""
    raise ValueError(message)


@server.tool()
def slow(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "slept"


@server.tool()
def crash() -> str:
    """Write to stderr and die mid-call."""
    print("fixture: about to crash on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def secret() -> str:
    """The value of FIXTURE_SECRET as this server sees it (env passing)."""
    return os.environ.get("FIXTURE_SECRET", "(unset)")


#: A 1x1 PNG.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@server.tool()
def picture() -> list:
    """A picture, and a link to the notes resource."""
    return [
        TextContent(type="text", text="here it is"),
        ImageContent(type="image", data=PNG, mime_type="image/png"),
        ResourceLink(
            type="resource_link", uri="fixture://notes", name="notes", mime_type="text/plain"
        ),
    ]


@server.tool()
async def progress(steps: int, ctx: Context) -> str:
    """Report progress, log a line, then answer."""
    for step in range(steps):
        await ctx.report_progress(step + 1, steps, f"step {step + 1}")
    await ctx.info("fixture log line")
    return "progressed"


@server.resource("fixture://notes", name="notes", mime_type="text/plain")
def notes() -> str:
    """Notes kept as a resource."""
    return "NOTES-FROM-RESOURCE"


@server.prompt()
def review(topic: str, tone: str = "kind") -> str:
    """Ask for a review of a topic."""
    return f"Please review {topic} in a {tone} tone."


def serve_http() -> None:
    """Streamable HTTP on 127.0.0.1, on a port the system picks: printed as ``PORT n``."""
    import socket

    import anyio
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    _log("start")
    if sys.argv[1:2] == ["http"]:
        serve_http()
    else:
        print("fixture: starting on stdio", file=sys.stderr, flush=True)
        server.run("stdio")
