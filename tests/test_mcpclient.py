"""What an MCP tool's answer becomes for the model (mdagent.mcp.mcpclient), block by block."""

from __future__ import annotations

import pytest

from mdagent.mcp.mcpclient import content_text, media_note


def test_images_and_audio_are_named_with_type_and_size():
    png = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
    wav = {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}
    assert media_note(png) == "[image content (image/png, 8 bytes)]"
    assert media_note(wav) == "[audio content (audio/wav, 4 bytes)]"
    assert content_text([{"type": "text", "text": "hi"}, png]) == (
        "hi\n[image content (image/png, 8 bytes)]"
    )


def test_a_resource_link_keeps_its_uri_name_type_and_description():
    link = {
        "type": "resource_link",
        "uri": "file:///r/a.txt",
        "name": "a.txt",
        "mimeType": "text/plain",
        "description": "the notes",
    }
    assert content_text([link]) == "[resource link file:///r/a.txt (a.txt, text/plain): the notes]"
    assert content_text([{"type": "resource_link", "uri": "x://y"}]) == "[resource link x://y]"


def test_a_tool_result_keeps_images_aside_for_the_providers():
    pytest.importorskip("mcp")
    import mcp.types as types

    from mdagent.agent.conversation import tool_message
    from mdagent.mcp.mcpclient import result_dict
    from mdagent.tools.toolbox import Result

    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="shot"),
            types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
            types.ImageContent(type="image", data="AAAA", mime_type="image/x-unknown"),
            types.AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav"),
        ]
    )
    data = result_dict(result)
    assert [m["type"] for m in data["media"]] == ["image", "image", "audio"]
    message = tool_message("c1", "s__shot", Result(data, True))
    assert "iVBOR" not in message["content"] and "media" not in message["content"]
    # Only the image types both APIs take are sent as images; the rest stay notes.
    assert message["images"] == [{"mime": "image/png", "data": "iVBORw0KGgo="}]


def test_agent_mcp_list_names_a_task_only_tool_as_not_offered():
    from types import SimpleNamespace

    from mdagent.declarations.mcpconfig import tool_specs
    from mdagent.mcp.mcptools import McpTools, server_status

    runtime = SimpleNamespace(settings={"mcp_servers": {"s": {"command": "x"}}}, workdir="/w")
    mcp = McpTools(runtime, notify=lambda line: None)
    tools = [
        {"name": "plain", "inputSchema": {}},
        {"name": "tasked", "inputSchema": {}, "execution": {"taskSupport": "required"}},
    ]
    mcp._listings["s"] = {"tools": tools, "prompts": []}
    mcp._specs["s"] = tool_specs(mcp.configs["s"], tools)
    mcp._live.add("s")
    status = server_status(mcp, "s")
    assert [t["name"] for t in status["tools"]] == ["s__plain"]
    assert status["not_offered"] == [
        {"name": "tasked", "reason": "it runs only as a task (taskSupport: required)"}
    ]
