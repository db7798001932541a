"""``mcp_servers:`` settings and MCP tools as registry entries (mdagent.declarations.mcpconfig), no server needed."""

from __future__ import annotations

import json

import pytest

from conftest import settings
from mdagent.core.errors import ToolFailed
from mdagent.declarations.declarations import merge_settings
from mdagent.declarations.mcpconfig import (
    ListingTooLarge,
    SchemaTooLarge,
    ServerConfig,
    prompt_command,
    registry_name,
    server_configs,
    server_of,
    split_schema,
    tool_specs,
)


def test_a_higher_layers_server_replaces_the_lower_ones_whole():
    low = {"mcp_servers": {"gh": {"command": "old", "args": ["-a"], "env": {"X": "1"}}}}
    high = {"mcp_servers": {"gh": {"command": "new", "args": ["-b"]}}}
    merged = merge_settings([high, low])
    # Not concatenated, not merged key by key: the higher entry alone.
    assert merged["mcp_servers"] == {"gh": {"command": "new", "args": ["-b"]}}
    only_low = merge_settings([{"mcp_servers": {"docs": {"url": "http://127.0.0.1:1/mcp"}}}, low])
    assert set(only_low["mcp_servers"]) == {"gh", "docs"}


def test_enabled_false_switches_a_lower_layers_server_off():
    low = {"mcp_servers": {"gh": {"command": "x"}}}
    high = {"mcp_servers": {"gh": {"command": "x", "enabled": False}}}
    assert server_configs(merge_settings([high, low])) == {}


def test_tools_are_namespaced_and_made_safe_for_every_provider():
    assert registry_name("github", "create_issue") == "github__create_issue"
    assert registry_name("fs", "read.file/v2") == "fs__read_file_v2"
    assert len(registry_name("s", "x" * 200)) == 64
    servers = {"github": object()}
    assert server_of("github__create_issue", servers) == "github"
    assert server_of("gitlab__create_issue", servers) is None
    assert server_of("exec", servers) is None
    assert prompt_command("/github:summarize", servers) == ("github", "summarize")
    assert prompt_command("/github", servers) is None


def test_security_comes_from_annotations_unless_the_settings_say():
    tools = [
        {"name": "look", "annotations": {"readOnlyHint": True}},
        {"name": "change", "annotations": {}},
        {"name": "drop", "annotations": {"destructiveHint": True}},
    ]
    by_hints = {s.name: s.security for s in tool_specs(ServerConfig("s"), tools)}
    assert by_hints == {"s__look": "safe", "s__change": "moderate", "s__drop": "dangerous"}
    strict = ServerConfig("s", security="dangerous")
    assert {s.security for s in tool_specs(strict, tools)} == {"dangerous"}
    mapped = ServerConfig("s", security={"look": "moderate", "*": "safe"})
    assert {s.name: s.security for s in tool_specs(mapped, tools)} == {
        "s__look": "moderate",
        "s__change": "safe",
        "s__drop": "safe",
    }
    spec = tool_specs(ServerConfig("s"), tools)[0]
    assert spec.category == "mcp" and spec.implementation == {
        "mcp": {"server": "s", "tool": "look"}
    }


def test_allow_and_deny_lists_choose_the_servers_tools():
    tools = [{"name": n} for n in ("read_issue", "create_issue", "delete_repo")]
    config = ServerConfig("gh", allow=["*_issue"], deny=["create_*"])
    assert [s.name for s in tool_specs(config, tools)] == ["gh__read_issue"]


def test_local_refs_are_inlined_so_the_toolbox_can_validate():
    schema = {
        "type": "object",
        "properties": {"item": {"$ref": "#/$defs/Item"}, "n": {"type": "integer"}},
        "required": ["item", "ghost"],
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "child": {"$ref": "#/$defs/Item"}},
            }
        },
    }
    params, required = split_schema(schema)
    assert required == ["item"]  # a required name without a property would never validate
    assert params["item"]["properties"]["name"] == {"type": "string"}
    assert "$ref" not in json.dumps(params)  # recursion stops at one level


def doubling(depth: int, keyword: str = "$defs") -> dict:
    """2 KB or so: each entry refers twice to the next, 2**depth values once inlined."""
    defs = {
        f"N{i}": {
            "type": "object",
            "properties": {
                "a": {"$ref": f"#/{keyword}/N{i + 1}"},
                "b": {"$ref": f"#/{keyword}/N{i + 1}"},
            },
        }
        for i in range(depth)
    }
    defs[f"N{depth}"] = {"type": "string"}
    return {"type": "object", "properties": {"x": {"$ref": f"#/{keyword}/N0"}}, keyword: defs}


@pytest.mark.parametrize("keyword", ["$defs", "definitions"])
def test_a_schema_that_doubles_at_every_ref_is_refused_within_the_budget(keyword):
    """Issue 28, item 4: depth 18 took 30 s and 219 MB; depth 21 did not finish."""
    with pytest.raises(SchemaTooLarge, match="more than 10,000 values"):
        split_schema(doubling(20, keyword))
    params, _ = split_schema(doubling(8, keyword))  # 2**8 leaves: a big schema, still fine
    assert json.dumps(params).count('"string"') == 256


def test_a_chain_without_fan_out_is_refused_by_its_depth():
    defs = {f"N{i}": {"type": "array", "items": {"$ref": f"#/$defs/N{i + 1}"}} for i in range(500)}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/N0"}}, "$defs": defs}
    with pytest.raises(SchemaTooLarge, match="nests deeper than 64 levels"):
        split_schema(schema)


def test_the_budget_is_the_servers_and_the_refusal_names_server_and_tool():
    props = {f"p{i}": {"type": "string"} for i in range(3000)}  # 6,001 values: fine alone
    tools = [{"name": f"t{i}", "inputSchema": {"properties": props}} for i in range(20)]
    with pytest.raises(ListingTooLarge) as raised:
        tool_specs(ServerConfig("big"), tools)
    assert str(raised.value) == (
        "mcp server big: tool t16: the input schemas of the server's tools have more than "
        "100,000 values with their $refs inlined; the server is not used"
    )
    assert len(tool_specs(ServerConfig("big"), tools[:15])) == 15
    # A tool the settings keep out costs nothing.
    config = ServerConfig("big", allow=["t1"])
    assert [s.name for s in tool_specs(config, tools)] == ["big__t1"]


def test_too_many_tools_are_refused():
    tools = [{"name": f"t{i}"} for i in range(1001)]
    with pytest.raises(ListingTooLarge, match="mcp server s: offers 1001 tools, more than 1,000"):
        tool_specs(ServerConfig("s"), tools)


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": [1, 2]},
        {"properties": {"a": {}}, "required": "a"},
        {"properties": {"a": {}}, "required": [{"a": 1}, "a"]},
        {"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": [1]},
        [1, 2],
    ],
)
def test_odd_schemas_do_not_break_the_listing(schema):
    params, required = split_schema(schema)
    assert isinstance(params, dict) and all(r in params for r in required)


def test_variables_in_env_and_headers_come_from_the_environment_or_fail_by_name():
    config = ServerConfig("gh", env={"TOKEN": "${GH_TOKEN}", "PLAIN": "x"})
    assert config.resolved_env({"GH_TOKEN": "s3cret"}) == {"TOKEN": "s3cret", "PLAIN": "x"}
    with pytest.raises(
        ToolFailed, match=r"mcp server gh: env TOKEN names \$\{GH_TOKEN\}, which is not set"
    ):
        config.resolved_env({})


def test_the_stamp_changes_with_the_entry_and_with_the_server_file(tmp_path):
    script = tmp_path / "server.py"
    script.write_text("print(1)\n")
    config = ServerConfig("s", command="python3", args=[str(script)])
    first = config.stamp(tmp_path)
    assert config.stamp(tmp_path) == first
    assert ServerConfig("s", command="python3", args=[str(script), "-v"]).stamp(tmp_path) != first
    script.write_text("print(22)\n")
    assert config.stamp(tmp_path) != first


def test_agent_check_points_at_a_bad_server_entry(workspace, run_agent):
    path = settings(
        workspace,
        "mcp_servers:\n"
        "  both:\n    command: x\n    url: http://127.0.0.1:1/mcp\n"
        "  a__b:\n    command: x\n"
        "  typo:\n    comand: x\n",
    )
    done = run_agent("check")
    assert done.returncode == 1
    out = done.stdout
    assert f"{path}:2:" in out and "mcp_servers.both: expected {command, args, env, cwd}" in out
    assert "must not contain `__`" in out
    assert "mcp_servers.typo.comand: unknown key" in out or "'comand'" in out
    assert "Traceback" not in done.stderr


def test_a_tool_that_runs_only_as_a_task_is_not_offered():
    config = ServerConfig(name="s", command="x")
    tools = [
        {"name": "plain", "inputSchema": {"type": "object"}},
        {"name": "either", "inputSchema": {}, "execution": {"taskSupport": "optional"}},
        {"name": "tasked", "inputSchema": {}, "execution": {"taskSupport": "required"}},
    ]
    assert [s.name for s in tool_specs(config, tools)] == ["s__plain", "s__either"]


def test_a_server_with_resources_gets_a_read_resource_tool():
    config = ServerConfig(name="s", command="x")
    specs = {s.name: s for s in tool_specs(config, [], resources=True)}
    read = specs["s__read_resource"]
    assert read.required == ["uri"] and read.security == "safe"
    assert read.implementation == {"mcp": {"server": "s", "resource": True}}
    assert tool_specs(config, [], resources=False) == []
    # The server's own tool of that name wins; the settings' security and deny lists apply.
    own = [{"name": "read_resource", "description": "its own", "inputSchema": {}}]
    assert tool_specs(config, own, resources=True)[0].description == "its own"
    strict = ServerConfig(name="s", command="x", security="dangerous")
    assert tool_specs(strict, [], resources=True)[0].security == "dangerous"
    denied = ServerConfig(name="s", command="x", deny=["read_resource"])
    assert tool_specs(denied, [], resources=True) == []
