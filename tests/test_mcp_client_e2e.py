"""Other MCP servers' tools and prompts in mdagent (issue 18, client side).

A small server built with the SDK's ``MCPServer`` (tests/mcp_fixture_server.py)
is declared in ``mcp_servers:`` and reached over stdio (the real ``agent``
starts it) or Streamable HTTP on 127.0.0.1 (the test starts it). Its tools
join as ``fx__<tool>``: sent to the model, judged by mdagent's own policy,
recorded in the audit log; its prompts become ``/fx:<prompt>``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ask, provider_args, scripted_model, settings, tool_results, write
from model_server import ModelServer

pytest.importorskip("mcp")

FIXTURE = Path(__file__).with_name("mcp_fixture_server.py")


def declare(ws: Path, extra: str = "", server: str = "") -> Path:
    """Settings declaring the fixture as server ``fx`` (plus ``server`` entries, then ``extra``)."""
    return settings(
        ws,
        "mcp_servers:\n"
        f"  fx:\n    command: {sys.executable}\n    args: ['{FIXTURE}']\n"
        "    env: {FIXTURE_LOG: '${FIXTURE_LOG}'}\n" + server + extra,
    )


@pytest.fixture
def log(tmp_path):
    """Where the fixture server logs its start and each call (see ``env_for``)."""
    return tmp_path / "fixture.log"


def env_for(log: Path, **more: str) -> dict[str, str]:
    return {"FIXTURE_LOG": str(log), **more}


def lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def sent_tools(server: ModelServer) -> dict[str, dict]:
    return {t["function"]["name"]: t["function"] for t in server.requests[0]["json"]["tools"]}


def audit(run_agent) -> list[dict]:
    done = run_agent("logs", "--json", "-n", "50")
    return json.loads(done.stdout)


def test_a_model_calls_a_server_tool_under_the_allowlist(workspace, run_agent, log):
    policy = "policy:\n  mode: allowlist\n"
    declare(workspace, policy)
    with scripted_model(("fx__add", {"a": 2, "b": 3})) as model:
        denied = ask(run_agent, model, env=env_for(log))
    assert denied.returncode == 0, denied.stderr
    tools = sent_tools(model)
    assert tools["fx__add"]["parameters"]["properties"]["a"]["type"] == "integer"
    assert tools["fx__add"]["description"] == "Add two integers."
    [refused] = tool_results(model)
    assert refused["ok"] is False and "add `fx__add` to policy.allow" in refused["error"]
    assert not any(line.startswith("add") for line in lines(log))

    declare(workspace, policy + "  allow: [fx__add]\n")
    with scripted_model(("fx__add", {"a": 2, "b": 3})) as model:
        allowed = ask(run_agent, model, env=env_for(log))
    assert allowed.returncode == 0, allowed.stderr
    [result] = tool_results(model)
    assert result["ok"] is True and result["output"] == "5"
    assert "add 2 3" in lines(log)

    declare(workspace, policy + "  allow: [fx__add]\n  deny: ['fx__add(a=2)']\n")
    with scripted_model(("fx__add", {"a": 2, "b": 4})) as model:
        ask(run_agent, model, env=env_for(log))
    [blocked] = tool_results(model)
    assert blocked["ok"] is False and "denied by policy rule `fx__add(a=2)`" in blocked["error"]
    assert "add 2 4" not in lines(log)

    rows = [r for r in audit(run_agent) if r["tool"] == "fx__add"]
    assert [(r["caller"], bool(r["ok"]), r["code"]) for r in rows] == [
        ("model", False, "DENIED"),
        ("model", True, None),
        ("model", False, "DENIED"),
    ]
    assert rows[1]["approved_by"] == "rule:fx__add"


def test_security_from_annotations_decides_what_ask_mode_lets_run(workspace, run_agent, log):
    declare(workspace)  # mode ask, no rules: safe tools run, the rest would ask (no terminal)
    calls = [("fx__echo", {"text": "hi"}), ("fx__wipe", {"name": "db"})]
    with scripted_model(*calls) as model:
        ask(run_agent, model, env=env_for(log))
    echo, wipe = tool_results(model)
    assert echo["ok"] is True and echo["output"] == "echo: hi"  # readOnlyHint: safe
    assert wipe["ok"] is False and "needs approval" in wipe["error"]  # destructiveHint
    assert "wipe db" not in lines(log)


def test_a_server_over_streamable_http(workspace, run_agent, log):
    fixture = subprocess.Popen(
        [sys.executable, str(FIXTURE), "http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "FIXTURE_LOG": str(log)},
        start_new_session=True,
    )
    try:
        port = int(fixture.stdout.readline().split()[1])
        settings(
            workspace,
            f"mcp_servers:\n  web:\n    url: http://127.0.0.1:{port}/mcp\n"
            "    headers: {X-Token: '${WEB_TOKEN}'}\n",
        )
        with scripted_model(("web__echo", {"text": "over http"})) as model:
            done = ask(run_agent, model, env={"WEB_TOKEN": "t0k3n"})
        listed = run_agent("mcp", "list", env={"WEB_TOKEN": "t0k3n"})
        unset = run_agent("mcp", "list")
    finally:
        fixture.terminate()
        fixture.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    [result] = tool_results(model)
    assert result["ok"] is True and result["output"] == "echo: over http"
    assert "echo over http" in lines(log)
    assert listed.returncode == 0
    assert f"web  (http: http://127.0.0.1:{port}/mcp)  ok: 10 tools, 1 prompt" in listed.stdout
    assert unset.returncode == 1
    assert "mcp server web: header X-Token names ${WEB_TOKEN}, which is not set\n" in unset.stdout


def test_a_server_that_fails_is_one_line_and_the_rest_keeps_working(workspace, run_agent, log):
    declare(workspace, server="  broken:\n    command: /nonexistent/server\n")
    with scripted_model(("fx__echo", {"text": "still here"}), ("glob", {"pattern": "*"})) as model:
        done = ask(run_agent, model, env=env_for(log))
    assert done.returncode == 0
    about = [line for line in done.stderr.splitlines() if "broken" in line]
    assert about == [
        "agent: mcp server broken: failed to start: /nonexistent/server: command not found"
    ]
    assert "Traceback" not in done.stderr
    assert "fx__echo" in sent_tools(model) and "glob" in sent_tools(model)
    echo, glob = tool_results(model)
    assert echo["output"] == "echo: still here" and glob["ok"] is True


def test_a_server_that_dies_mid_call_or_runs_too_long(workspace, run_agent, log):
    declare(workspace, "    timeout: 1\npolicy: {mode: full}\n")
    calls = [
        ("fx__crash", {}),
        ("fx__echo", {"text": "again"}),
        ("fx__slow", {"seconds": 20}),
        ("fx__echo", {"text": "after"}),
    ]
    with scripted_model(*calls) as model:
        done = ask(run_agent, model, env=env_for(log), timeout=90)
    assert done.returncode == 0, done.stderr
    crash, again, slow, after = tool_results(model)
    assert crash["ok"] is False
    assert crash["error"].startswith("mcp server fx: crash: the server stopped answering")
    assert "stderr: " in crash["error"] and "about to crash on purpose" in crash["error"]
    assert "\n" not in crash["error"]
    assert again["output"] == "echo: again"  # started again on next use
    assert slow["ok"] is False and slow["error"] == "mcp server fx: slow timed out after 1 s"
    assert after["output"] == "echo: after"
    assert lines(log).count("start") == 2


def test_servers_start_lazily_and_their_tool_lists_are_cached(workspace, run_agent, log):
    declare(workspace)
    write(
        workspace / ".agents" / "skills" / "t" / "SKILL.md",
        "---\nname: t\ndescription: run\ncommand-dispatch: tool\ncommand-tool: exec\n---\n",
    )
    typed = run_agent("/t", "echo", "unrelated", env=env_for(log))
    assert typed.stdout.strip() == "unrelated"
    assert lines(log) == []  # an unrelated /name never starts a server

    with ModelServer([{"text": "no tools needed"}]) as model:
        first = run_agent(*provider_args(model), "ask", "hi", env=env_for(log))
    assert first.returncode == 0 and "fx__echo" in sent_tools(model)
    assert lines(log) == ["start"]  # listing its tools needed the server once

    with ModelServer([{"text": "no tools needed"}]) as model:
        run_agent(*provider_args(model), "ask", "hi", env=env_for(log))
    assert "fx__echo" in sent_tools(model)
    assert lines(log) == ["start"]  # the cached list sufficed: not started again

    with scripted_model(("fx__echo", {"text": "now"})) as model:
        ask(run_agent, model, env=env_for(log))
    assert lines(log) == ["start", "start", "echo now"]  # started for the call itself


def test_env_variables_reach_only_their_server(workspace, run_agent, log):
    settings(
        workspace,
        "mcp_servers:\n"
        f"  fx:\n    command: {sys.executable}\n    args: ['{FIXTURE}']\n"
        "    env: {FIXTURE_SECRET: '${MY_SECRET_TOKEN}'}\n"
        f"  plain:\n    command: {sys.executable}\n    args: ['{FIXTURE}']\n",
    )
    write(
        workspace / ".agents" / "config" / "cmds.yaml",
        "commands:\n  secret:\n    description: s\n    tool: fx__secret\n"
        "  plain-secret:\n    description: s\n    tool: plain__secret\n",
    )
    secret = {"MY_SECRET_TOKEN": "hunter2-value", "FIXTURE_SECRET": "from-the-shell"}
    own = run_agent("/secret", env=secret)
    other = run_agent("/plain-secret", env=secret)
    assert own.returncode == 0, own.stderr
    assert own.stdout.strip() == "hunter2-value"
    assert other.stdout.strip() == "(unset)"  # *SECRET* is scrubbed from every child's env
    missing = run_agent("/secret")
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        "agent: /secret: mcp server fx: env FIXTURE_SECRET names ${MY_SECRET_TOKEN}, "
        "which is not set"
    )


def test_command_tool_binds_a_slash_command_to_a_server_tool(workspace, run_agent, log):
    declare(workspace)
    write(
        workspace / ".agents" / "skills" / "adder" / "SKILL.md",
        "---\nname: adder\ndescription: add\ncommand-dispatch: tool\n"
        "command-tool: fx__add\ncommand-arg-mode: parsed\n---\n",
    )
    write(
        workspace / ".agents" / "skills" / "ghost" / "SKILL.md",
        "---\nname: ghost\ndescription: x\ncommand-dispatch: tool\ncommand-tool: fx__nope\n---\n",
    )
    done = run_agent("/adder", "2", "3", env=env_for(log))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "5"
    helped = run_agent("/adder", "--help", env=env_for(log))
    assert "usage: /adder <a> <b>" in helped.stdout
    bad = run_agent("/adder", "two", env=env_for(log))
    assert bad.returncode == 2 and "integer" in bad.stderr
    ghost = run_agent("/ghost", env=env_for(log))
    assert ghost.returncode == 1 and ghost.stderr.strip().count("\n") == 0
    assert "fx__nope" in ghost.stderr
    rows = [r for r in audit(run_agent) if r["tool"] == "fx__add"]
    assert rows and rows[0]["caller"] == "person" and rows[0]["ok"]

    checked = run_agent("check", env=env_for(log))
    assert checked.returncode == 1
    assert "info: mcp server fx: 10 tool(s), 1 prompt(s)" in checked.stdout
    assert "error: /ghost: mcp server fx offers no tool 'fx__nope'" in checked.stdout
    assert "/adder" not in checked.stdout


def test_a_servers_prompt_is_a_slash_command(workspace, run_agent, log):
    declare(workspace)
    with ModelServer([{"text": "Looks fine."}]) as model:
        done = run_agent(
            *provider_args(model), "/fx:review", "the parser", "tone=stern", env=env_for(log)
        )
    assert done.returncode == 0, done.stderr
    assert "Looks fine." in done.stdout
    user = [m for m in model.requests[0]["json"]["messages"] if m["role"] == "user"]
    assert user[-1]["content"] == "Please review the parser in a stern tone."

    helped = run_agent("/fx:review", "--help", env=env_for(log))
    assert "Ask for a review of a topic." in helped.stdout and "topic" in helped.stdout
    missing = run_agent("/fx:review", env=env_for(log))
    assert missing.returncode == 2 and "`/topic` is required" in missing.stderr
    unknown = run_agent("/fx:nope", env=env_for(log))
    assert unknown.returncode == 2
    assert "mcp server fx has no prompt 'nope'. Its prompts: /fx:review" in unknown.stderr


def test_mcp_list_and_tools_show_each_server(workspace, run_agent, log):
    declare(workspace, server="  broken:\n    command: /nonexistent/server\n")
    listed = run_agent("mcp", "list", "--json", env=env_for(log))
    assert listed.returncode == 1  # a server could not be reached
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["fx"]["status"] == "ok" and rows["fx"]["prompts"] == ["/fx:review"]
    security = {t["name"]: t["security"] for t in rows["fx"]["tools"]}
    assert security["fx__echo"] == "safe" and security["fx__wipe"] == "dangerous"
    assert rows["broken"]["status"] == "failed" and "command not found" in rows["broken"]["error"]

    tools = run_agent("tools", env=env_for(log))
    assert tools.returncode == 0
    assert any(
        line.startswith("fx__add ") and " mcp " in line for line in tools.stdout.splitlines()
    )
    one = run_agent("tools", "fx__add", env=env_for(log))
    assert "category: mcp  security: moderate" in one.stdout


def test_a_servers_prompt_runs_in_the_interactive_session_too(workspace, run_agent, log):
    declare(workspace)
    with ModelServer([{"text": "Looks fine."}]) as model:
        done = run_agent(
            *provider_args(model),
            input="/fx:review 'the parser' tone=stern\n/exit\n",
            env=env_for(log),
        )
    assert done.returncode == 0, done.stderr
    assert "Looks fine." in done.stdout and "unknown command" not in done.stderr
    user = [m for m in model.requests[0]["json"]["messages"] if m["role"] == "user"]
    assert user[-1]["content"] == "Please review the parser in a stern tone."


# -- issue 28, item 4: a server's list and schemas within a budget ---------------------

HOSTILE = Path(__file__).with_name("mcp_hostile_server.py")
REFUSALS = {
    "doubling": "tool doubling: its input schema has more than 10,000 values with its $refs inlined",
    "fan": "tool fan: its input schema has more than 10,000 values with its $refs inlined",
    "tuple": "tool tuple: its input schema has more than 10,000 values with its $refs inlined",
    "mixed": "tool mixed: its input schema has more than 10,000 values with its $refs inlined",
    "deep": "tool deep: its input schema nests deeper than 64 levels",
    "wide": "tool wide: its input schema has more than 10,000 values with its $refs inlined",
    "many": "tool t49: the input schemas of the server's tools have more than 100,000 values "
    "with their $refs inlined",
    "crowd": "lists more than 1,000 tools",
    "endless": "its list of tools runs past 100 pages",
}


def hostile(shape: str) -> str:
    return f"  bad:\n    command: {sys.executable}\n    args: ['{HOSTILE}', {shape}]\n"


@pytest.mark.parametrize("shape", REFUSALS)
def test_a_server_past_the_budget_is_refused_in_one_line(workspace, run_agent, log, shape):
    declare(workspace, server=hostile(shape))
    listed = run_agent("mcp", "list", "--json", env=env_for(log))
    assert listed.returncode == 1, listed.stderr  # a server could not be used
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["bad"]["status"] == "failed" and rows["bad"]["tools"] == []
    assert rows["bad"]["error"] == f"mcp server bad: {REFUSALS[shape]}; the server is not used"
    assert rows["fx"]["status"] == "ok" and rows["fx"]["tools"]  # the others are served


def test_a_refused_server_offers_the_model_nothing_and_says_so_once(workspace, run_agent, log):
    declare(workspace, server=hostile("doubling"))
    with scripted_model(("fx__echo", {"text": "still here"}), ("bad__ok", {})) as model:
        done = ask(run_agent, model, env=env_for(log))
    assert done.returncode == 0, done.stderr
    about = [line for line in done.stderr.splitlines() if "server bad" in line]
    assert about == [
        "agent: mcp server bad: tool doubling: its input schema has more than 10,000 values "
        "with its $refs inlined; the server is not used"
    ]
    tools = sent_tools(model)
    assert "fx__echo" in tools and not [t for t in tools if t.startswith("bad__")]
    echo, refused = tool_results(model)
    assert echo["output"] == "echo: still here"
    assert not refused["ok"] and "unknown tool: bad__ok" in refused["error"]
    check = run_agent("check", env=env_for(log))
    assert "warning: mcp server bad: tool doubling: its input schema has more" in check.stdout


# -- images, resource links, progress and logs (issue 34) ---------------------------------


def test_a_resource_link_is_read_back_through_read_resource_under_the_policy(
    workspace, run_agent, log
):
    declare(workspace, "policy:\n  mode: allowlist\n  allow: [fx__picture]\n")
    calls = [("fx__picture", {}), ("fx__read_resource", {"uri": "fixture://notes"})]
    with scripted_model(*calls) as model:
        done = ask(run_agent, model, env=env_for(log))
    assert done.returncode == 0, done.stderr
    assert "fx__read_resource" in sent_tools(model)
    picture, refused = tool_results(model)
    assert "here it is" in picture["output"]
    assert "[resource link fixture://notes (notes, text/plain)]" in picture["output"]
    # A read is a call like any other: the allowlist does not name it, so it is refused.
    assert refused["ok"] is False and "fx__read_resource" in refused["error"]
    declare(workspace, "policy:\n  mode: allowlist\n  allow: [fx__picture, fx__read_resource]\n")
    with scripted_model(*calls) as model:
        done = ask(run_agent, model, env=env_for(log))
    assert done.returncode == 0, done.stderr
    _, read = tool_results(model)
    assert read["ok"] is True and read["output"] == "NOTES-FROM-RESOURCE"
    calls = [e for e in audit(run_agent) if e.get("tool") == "fx__read_resource"]
    assert calls, "the read is in the audit log"


def test_progress_and_log_messages_show_under_v(workspace, run_agent, log):
    declare(workspace, "policy:\n  allow: [fx__progress]\n")
    with scripted_model(("fx__progress", {"steps": 3})) as model:
        quiet = ask(run_agent, model, env=env_for(log))
    assert quiet.returncode == 0, quiet.stderr
    assert "step 1" not in quiet.stderr and "fixture log line" not in quiet.stderr
    with scripted_model(("fx__progress", {"steps": 3})) as model:
        loud = run_agent("-v", *provider_args(model), "ask", "go", env=env_for(log))
    assert loud.returncode == 0, loud.stderr
    assert "fx__progress: 1/3 step 1" in loud.stderr
    assert "fx__progress: 3/3 step 3" in loud.stderr
    assert "mcp server fx" in loud.stderr and "[info]: fixture log line" in loud.stderr
    assert tool_results(model)[0]["output"] == "progressed"


def test_an_image_from_a_server_reaches_the_model_as_an_image(workspace, run_agent, log):
    declare(workspace, "policy:\n  allow: [fx__picture]\n")
    with scripted_model(("fx__picture", {})) as model:
        done = ask(run_agent, model, env=env_for(log))
    assert done.returncode == 0, done.stderr
    messages = model.requests[-1]["json"]["messages"]
    result = next(m for m in messages if m["role"] == "tool")
    note = json.loads(result["content"])["output"]
    assert "[image content (image/png, 70 bytes)]" in note  # the text names it
    assert "iVBOR" not in result["content"]  # the image itself is no text
    images = messages[messages.index(result) + 1]
    assert images["role"] == "user"
    url = images["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,iVBORw0KGgo")

    with ModelServer(
        [{"tool_calls": [{"name": "fx__picture", "arguments": {}}]}, {"text": "seen"}]
    ) as model:
        done = run_agent(
            "--provider", "anthropic", "--base-url", model.anthropic_url, "ask", "go",
            env=env_for(log, ANTHROPIC_API_KEY="test"),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    user = model.requests[-1]["json"]["messages"][-1]
    tool_result = next(b for b in user["content"] if b["type"] == "tool_result")
    kinds = [b["type"] for b in tool_result["content"]]
    assert kinds == ["text", "image"]
    source = tool_result["content"][1]["source"]
    assert source["media_type"] == "image/png" and source["data"].startswith("iVBORw0KGgo")
