"""An MCP server built with the official SDK whose tool list is hostile (issue 28, item 4).

``python mcp_hostile_server.py SHAPE`` serves over stdio one well-behaved tool,
``ok``, plus what SHAPE says. Each shape is a way for a small message to cost
the client a great deal, or a list that never ends:

- ``doubling``: a ``$defs`` chain whose entries each refer twice to the next
  (2 KB of schema; 2^18 values once inlined);
- ``fan``: each entry's ``anyOf`` refers eight times to the next (8^6);
- ``tuple``: ``items`` as a list of two references, under ``definitions``;
- ``mixed``: a property, an ``allOf`` and ``additionalProperties`` each refer on;
- ``deep``: 300 entries, each referring once to the next (no fan-out: depth);
- ``wide``: one schema of 20,000 properties, no references at all;
- ``many``: 60 tools of about 2,000 values each (each fine, together too many);
- ``crowd``: 1,500 tools in one page;
- ``endless``: a next-page cursor on every page.
"""

from __future__ import annotations

import sys

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SHAPE = sys.argv[1] if len(sys.argv) > 1 else "doubling"


def chain(depth: int, entry, keyword: str = "$defs") -> dict:
    """An input schema whose one property starts a chain of ``depth`` entries."""
    prefix = f"#/{keyword}/"
    defs = {f"N{i}": entry(f"{prefix}N{i + 1}") for i in range(depth)}
    defs[f"N{depth}"] = {"type": "string"}
    return {"type": "object", "properties": {"x": {"$ref": f"{prefix}N0"}}, keyword: defs}


def schema_of(shape: str) -> dict:
    if shape == "doubling":
        return chain(
            18,
            lambda nxt: {"type": "object", "properties": {"a": {"$ref": nxt}, "b": {"$ref": nxt}}},
        )
    if shape == "fan":
        return chain(6, lambda nxt: {"anyOf": [{"$ref": nxt} for _ in range(8)]})
    if shape == "tuple":
        return chain(
            18,
            lambda nxt: {"type": "array", "items": [{"$ref": nxt}, {"$ref": nxt}]},
            "definitions",
        )
    if shape == "mixed":
        return chain(
            14,
            lambda nxt: {
                "type": "object",
                "properties": {"p": {"$ref": nxt}},
                "allOf": [{"$ref": nxt}],
                "additionalProperties": {"$ref": nxt},
            },
        )
    if shape == "deep":
        return chain(300, lambda nxt: {"type": "object", "properties": {"next": {"$ref": nxt}}})
    if shape == "wide":
        return {
            "type": "object",
            "properties": {f"p{i}": {"type": "string"} for i in range(20_000)},
        }
    raise ValueError(shape)


OK = types.Tool(
    name="ok",
    description="A well-behaved tool.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
)


def tools(cursor: str | None) -> tuple[list[types.Tool], str | None]:
    """The page after ``cursor`` and the next page's cursor."""
    if SHAPE == "endless":
        page = int(cursor or 0)
        return [types.Tool(name=f"t{page}", input_schema={"type": "object"})], str(page + 1)
    if SHAPE == "crowd":
        return [
            OK,
            *(types.Tool(name=f"t{i}", input_schema={"type": "object"}) for i in range(1500)),
        ], None
    if SHAPE == "many":
        # 2,000 values each: under one tool's budget, 60 of them over the server's.
        schema = {
            "type": "object",
            "properties": {f"p{i}": {"type": "string"} for i in range(1000)},
        }
        return [OK, *(types.Tool(name=f"t{i}", input_schema=schema) for i in range(60))], None
    return [OK, types.Tool(name=SHAPE, description="Hostile.", input_schema=schema_of(SHAPE))], None


async def list_tools(ctx, params) -> types.ListToolsResult:
    page, next_cursor = tools(params.cursor if params else None)
    return types.ListToolsResult(tools=page, next_cursor=next_cursor)


async def call_tool(ctx, params) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text="called")])


server = Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
