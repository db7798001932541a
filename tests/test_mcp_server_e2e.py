"""``agent mcp serve`` driven by the official SDK's own client (issue 18, server side).

The real ``agent`` executable runs as the server: over stdio under
``mcp.client.stdio.stdio_client`` + ``ClientSession``, and over Streamable
HTTP on 127.0.0.1 under ``streamable_http_client``. What another agent sees:
the registry's tools with their schemas and annotations, calls that pass
the policy as a model's would (caller ``mcp`` in the audit log), refusals as
error results, bad requests as protocol errors, prompt skills as prompts and
skill files as resources.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from conftest import (
    agent_executable,
    command_skill,
    config,
    gone_soon,
    settings,
    trust_as_is,
    write,
)

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from mdagent.safety import sandbox  # noqa: E402

TOOLS = """\
tools:
  greet:
    description: Greet someone
    params: {name: {type: string, description: Who}}
    required: [name]
    security: safe
    run: [echo, "hello {name}"]
  nap:
    description: Sleep too long
    security: safe
    timeout: 1
    run: [sleep, "30"]
"""

REVIEW = """\
---
name: review
description: Review a file
argument-hint: "<file> [focus]"
---
Review $0 focusing on $1.
"""


@pytest.fixture
def project(workspace):
    """A workspace with YAML tools, a prompt skill with files, and a hidden skill."""
    config(workspace, "tools.yaml", TOOLS)
    write(workspace / ".agents" / "skills" / "review" / "SKILL.md", REVIEW)
    write(workspace / ".agents" / "skills" / "review" / "references" / "notes.md", "# Notes\n")
    write(workspace / ".agents" / "skills" / "review" / ".env", "TOKEN=x\n")
    write(
        workspace / ".agents" / "skills" / "private" / "SKILL.md",
        "---\nname: private\ndescription: people only\ndisable-model-invocation: true\n---\nhi\n",
    )
    return workspace


def server_params(ws: Path, *extra: str, env: dict | None = None) -> StdioServerParameters:
    """``agent mcp serve`` in ``ws``, trusted as it is now (the person's own project)."""
    trust_as_is(ws, {**os.environ, **(env or {})})
    return StdioServerParameters(
        command=agent_executable(),
        args=["mcp", "serve", *extra],
        cwd=str(ws),
        env={**os.environ, **(env or {})},
    )


def run_session(params: StdioServerParameters, body, errlog=None):
    """Run ``body(session)`` against a stdio server; its return value."""

    async def main():
        async with (
            stdio_client(params, errlog=errlog or sys.stderr) as (read, write_),
            ClientSession(read, write_) as session,
        ):
            await session.initialize()
            return await body(session)

    return anyio.run(main)


def text(result) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def audit(run_agent) -> list[dict]:
    done = run_agent("logs", "--json", "-n", "50")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def serve_http(project: Path, address: str) -> subprocess.Popen:
    """``agent mcp serve --http ADDRESS`` in ``project``, in its own session (see :func:`stopped`)."""
    return subprocess.Popen(
        [agent_executable(), "mcp", "serve", "--http", address],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def stopped(proc: subprocess.Popen, sig: int) -> tuple[str, str]:
    """Send ``sig`` to a server started in its own session; its output once it ended.

    A server that does not end within 30 s is killed with its whole group and
    the test fails: no test leaves a process behind, even when it fails.
    """
    proc.send_signal(sig)
    try:
        return proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise


def test_stdio_tools_prompts_and_resources_under_the_policy(project, run_agent):
    async def body(session):
        found = {}
        tools = {t.name: t for t in (await session.list_tools()).tools}
        found["tools"] = tools
        found["greet"] = await session.call_tool("greet", {"name": "Ann"})
        found["read"] = await session.call_tool("read_file", {"path": ".agents/config/tools.yaml"})
        found["exec"] = await session.call_tool("exec", {"command": "echo hi"})
        found["invalid"] = await session.call_tool("greet", {"name": 5})
        with pytest.raises(MCPError, match="unknown tool: nope"):
            await session.call_tool("nope", {})
        found["nap"] = await session.call_tool("nap", {})
        found["after"] = await session.call_tool("greet", {"name": "Bo"})
        found["prompts"] = {p.name: p for p in (await session.list_prompts()).prompts}
        found["review"] = await session.get_prompt("review", {"file": "a.py", "focus": "speed"})
        with pytest.raises(MCPError, match="missing argument"):
            await session.get_prompt("review", {})
        with pytest.raises(MCPError, match="unknown prompt"):
            await session.get_prompt("private", {})
        found["resources"] = [str(r.uri) for r in (await session.list_resources()).resources]
        found["notes"] = await session.read_resource("skill://review/references/notes.md")
        with pytest.raises(MCPError):
            await session.read_resource("skill://review/../../.agents/config/tools.yaml")
        with pytest.raises(MCPError):
            await session.read_resource("skill://review/.env")
        return found

    found = run_session(server_params(project), body)

    tools = found["tools"]
    assert {"greet", "nap", "exec", "read_file", "write_file"} <= set(tools)
    assert tools["greet"].description == "Greet someone"
    assert tools["greet"].input_schema["properties"]["name"]["type"] == "string"
    assert tools["greet"].input_schema["required"] == ["name"]
    assert tools["greet"].annotations.read_only_hint is True
    assert tools["exec"].annotations.destructive_hint is True
    assert tools["write_file"].annotations.read_only_hint is False

    assert not found["greet"].is_error and text(found["greet"]).strip() == "hello Ann"
    assert not found["read"].is_error and "greet" in text(found["read"])
    # A call that would ask a person is refused, naming the rule that would allow it.
    denied = found["exec"]
    assert denied.is_error
    assert "no terminal" in text(denied) and "`exec(echo hi)` to policy.allow" in text(denied)
    invalid = text(found["invalid"])  # the toolbox's own validation message
    assert found["invalid"].is_error and "/name" in invalid and "string" in invalid
    assert found["nap"].is_error and "timed out" in text(found["nap"])
    assert text(found["after"]).strip() == "hello Bo"  # the server kept serving

    review = found["prompts"]["review"]
    assert [(a.name, a.required) for a in review.arguments] == [("file", True), ("focus", False)]
    assert "private" not in found["prompts"]
    # Rendered as `agent /review a.py speed` would: no $ARGUMENTS, so they are appended too.
    rendered = found["review"].messages[0].content.text
    assert rendered == "Review a.py focusing on speed.\n\nARGUMENTS: a.py speed\n"

    resources = found["resources"]
    assert "skill://review/SKILL.md" in resources
    assert "skill://review/references/notes.md" in resources
    assert not any(".env" in r for r in resources) and not any("private" in r for r in resources)
    assert found["notes"].contents[0].text == "# Notes\n"

    rows = audit(run_agent)
    calls = [(r["caller"], r["tool"], bool(r["ok"])) for r in rows]
    assert ("mcp", "greet", True) in calls and ("mcp", "exec", False) in calls
    denied_row = next(r for r in rows if r["tool"] == "exec")
    assert denied_row["code"] == "DENIED"


def test_yes_answers_questions_but_never_for_the_agents_own_configuration(project, run_agent):
    async def body(session):
        ran = await session.call_tool("exec", {"command": "echo approved"})
        protected = await session.call_tool(
            "write_file", {"path": ".agents/config/agent.yaml", "content": "policy: {mode: full}\n"}
        )
        return ran, protected

    ran, protected = run_session(server_params(project, "--yes"), body)
    assert not ran.is_error and "approved" in text(ran)
    assert protected.is_error and "agent's own configuration" in text(protected)
    assert not (project / ".agents" / "config" / "agent.yaml").exists()
    approved = {r["tool"]: r["approved_by"] for r in audit(run_agent) if r["ok"]}
    assert approved["exec"] == "--yes"


def test_allowlist_deny_rules_and_hooks_judge_an_mcp_caller_like_a_model(project):
    settings(
        project,
        "policy:\n  mode: allowlist\n  allow: [greet]\n  deny: ['read_file(**/tools.yaml)']\n"
        "hooks:\n  before:\n    - tool: greet\n"
        "      run: \"grep -q Eve && { echo 'not Eve' >&2; exit 2; } || exit 0\"\n",
    )

    async def body(session):
        return (
            await session.call_tool("greet", {"name": "Cy"}),
            await session.call_tool("glob", {"pattern": "*"}),
            await session.call_tool("read_file", {"path": ".agents/config/tools.yaml"}),
            await session.call_tool("greet", {"name": "Eve"}),
        )

    greet, glob, read, hooked = run_session(server_params(project, "--yes"), body)
    assert not greet.is_error
    assert hooked.is_error and "not Eve" in text(hooked)  # the before hooks ran
    # allowlist: even a safe tool needs an allow rule, and --yes does not add one.
    assert glob.is_error and "policy.mode is allowlist" in text(glob)
    assert read.is_error and "denied by policy rule `read_file(**/tools.yaml)`" in text(read)


@pytest.mark.skipif(sandbox.available() is not None, reason=f"no Landlock: {sandbox.available()}")
def test_an_mcp_callers_commands_run_in_the_sandbox(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    own = {"TMPDIR": str(tmp_path / "t"), "XDG_CACHE_HOME": str(tmp_path / "c")}
    for folder in own.values():
        Path(folder).mkdir()
    settings(project, "policy: {mode: full}\n")
    target = outside / "x"
    command = f"python3 -c \"open('{target}', 'w').write('x')\""

    async def body(session):
        return await session.call_tool("exec", {"command": command})

    result = run_session(server_params(project, env=own), body)
    assert result.is_error
    assert not target.exists()
    assert "sandbox" in result.structured_content


def test_only_protocol_messages_reach_stdout(project, tmp_path):
    """A handler that prints and a tool whose process writes to fd 1 leave the wire clean."""
    handler = write(
        project / ".agents" / "config" / "handlers" / "noisy.py",
        "import os\n\ndef run(args):\n    print('noise from print')\n"
        "    os.system('echo noise from a child')\n    return {'output': 'quiet'}\n",
    )
    config(
        project,
        "noisy.yaml",
        f"tools:\n  noisy:\n    description: prints\n    security: safe\n    handler: {handler.relative_to(project / '.agents' / 'config')}:run\n",
    )
    wire = tmp_path / "stdout.log"
    stderr = tmp_path / "stderr.log"
    trust_as_is(project)
    params = StdioServerParameters(
        command="sh",
        args=["-c", f'"$0" mcp serve | tee "{wire}"', agent_executable()],
        cwd=str(project),
        env=dict(os.environ),
    )

    async def body(session):
        return await session.call_tool("noisy", {})

    with open(stderr, "w") as errlog:
        result = run_session(params, body, errlog=errlog)
    assert text(result) == "quiet"
    lines = [line for line in wire.read_text().splitlines() if line.strip()]
    assert lines and all(json.loads(line)["jsonrpc"] == "2.0" for line in lines)
    assert "noise from print" in stderr.read_text()


def read_line(stream, pattern: str, within: float = 30.0) -> re.Match[str]:
    """Read ``stream`` until a line matches ``pattern`` (a regex); fail at the deadline."""
    selector = selectors.DefaultSelector()
    selector.register(stream, selectors.EVENT_READ)
    end = time.monotonic() + within
    seen = []
    while time.monotonic() < end:
        if selector.select(timeout=0.2):
            line = stream.readline()
            if not line:
                break
            seen.append(line)
            match = re.search(pattern, line)
            if match:
                return match
    pytest.fail(f"no line matching {pattern!r} within {within} s: {seen}")


def test_streamable_http_on_127_0_0_1(project, run_agent):
    from mcp.client.streamable_http import streamable_http_client

    trust_as_is(project)
    proc = serve_http(project, "127.0.0.1:0")
    try:
        url = read_line(proc.stderr, r"serving MCP on (http://127\.0\.0\.1:\d+/mcp)").group(1)

        async def main():
            async with (
                streamable_http_client(url) as (read, write_),
                ClientSession(read, write_) as session,
            ):
                await session.initialize()
                tools = {t.name for t in (await session.list_tools()).tools}
                greet = await session.call_tool("greet", {"name": "Di"})
                exec_ = await session.call_tool("exec", {"command": "echo hi"})
                prompts = [p.name for p in (await session.list_prompts()).prompts]
                skill = await session.read_resource("skill://review/SKILL.md")
                return tools, greet, exec_, prompts, skill

        tools, greet, exec_, prompts, skill = anyio.run(main)
    finally:
        out, err = stopped(proc, signal.SIGTERM)
    assert {"greet", "exec"} <= tools
    assert text(greet).strip() == "hello Di"
    assert exec_.is_error and "policy.allow" in text(exec_)
    assert "review" in prompts
    assert "Review $0" in skill.contents[0].text
    assert out == ""  # HTTP mode: stdout stays empty, the address went to stderr
    assert gone_soon(proc.pid)
    assert ("mcp", "greet") in {(r["caller"], r["tool"]) for r in audit(run_agent)}


def test_http_address_errors_are_one_line(project, run_agent):
    bad = run_agent("mcp", "serve", "--http", "127.0.0.1:notaport")
    assert bad.returncode == 2
    assert "--http 127.0.0.1:notaport: expected PORT or HOST:PORT" in bad.stderr
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        busy = run_agent("mcp", "serve", "--http", f"127.0.0.1:{port}")
    assert busy.returncode == 1
    assert busy.stderr.strip().splitlines() == [
        f"agent: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


def test_the_name_path_never_imports_the_sdk(project):
    """``agent /name`` of a command with MCP servers declared: no ``mcp`` module is loaded."""
    settings(project, "mcp_servers:\n  far:\n    command: /nonexistent/server\n")
    command_skill(project, "t", "exec")
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mdagent", "/t", "echo", "hi"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hi"
    modules = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line]
    assert "mdagent.cli.cli" in modules
    assert not [m for m in modules if m.split(".")[0] in ("mcp", "mcp_types", "anyio", "uvicorn")]


def served_on_a_terminal(project, call):
    """``agent mcp serve --http`` with a controlling terminal: ``(call(session)'s result, screen)``."""
    from mcp.client.streamable_http import streamable_http_client

    from test_terminal_e2e import Terminal

    with Terminal("mcp", "serve", "--http", "127.0.0.1:0", cwd=project) as term:
        url = term.expect(r"serving MCP on (http://127\.0\.0\.1:\d+/mcp)", timeout=30).group(1)

        async def main():
            async with (
                streamable_http_client(url) as (read, write_),
                ClientSession(read, write_) as session,
            ):
                await session.initialize()
                with anyio.fail_after(30):  # a question on the pty would wait forever
                    return await call(session)

        return anyio.run(main), term.text


def test_never_asks_on_the_terminal_even_when_it_has_one(project):
    """Served with a controlling terminal: a call that would ask is refused, not put to the pty."""

    from test_terminal_e2e import PROMPT

    result, screen = served_on_a_terminal(
        project, lambda session: session.call_tool("write_file", {"path": "a.txt", "content": "x"})
    )
    assert result.is_error and "no terminal to ask on" in text(result)
    assert PROMPT not in screen
    assert not (project / "a.txt").exists()


def test_a_prompt_cannot_include_a_file_read_file_may_not_read(project):
    """``@{path}`` in a prompt is a read by the client: ``read_file``'s deny rules apply."""
    settings(project, "policy:\n  deny: ['read_file(**/.env)']\n")
    write(project / ".env", "TOKEN=S3CR3T-VALUE\n")
    write(
        project / ".agents" / "skills" / "leaky" / "SKILL.md",
        "---\nname: leaky\ndescription: d\n---\nEnv: @{.env}\n",
    )
    linked = write(
        project / ".agents" / "skills" / "linked" / "SKILL.md",
        "---\nname: linked\ndescription: d\n---\nRef: @{${SKILL_DIR}/ref.md}\n",
    )
    (linked.parent / "ref.md").symlink_to(project / ".env")

    async def body(session):
        errors = []
        for name in ("leaky", "linked"):
            with pytest.raises(MCPError) as raised:
                await session.get_prompt(name, {})
            errors.append(str(raised.value))
        return errors

    errors = run_session(server_params(project), body)
    for error in errors:
        assert "denied by policy rule `read_file(**/.env)`" in error
        assert "S3CR3T" not in error


def test_a_foreign_skills_commands_are_never_asked_about_on_the_servers_terminal(project, tmp_path):
    """A foreign skill's ``!`cmd``` needs consent; the server never asks: not run, not kept."""

    marker = tmp_path / "ran"
    write(
        Path(os.environ["AGENT_HOME"]) / "skills" / "foreign" / "SKILL.md",
        f"---\nname: foreign\ndescription: d\n---\nA !`touch {marker}` B\n",
    )
    result, screen = served_on_a_terminal(project, lambda s: s.get_prompt("foreign", {}))
    assert "runs these commands" not in screen
    rendered = result.messages[0].content.text
    assert f"A [`touch {marker}` not run: skill foreign" in rendered
    assert "`agent mcp serve` never asks anyone" in rendered
    assert not marker.exists()
    assert not (Path(os.environ["AGENT_STATE_DIR"]) / "skill-consent.json").exists()


def test_yes_never_runs_a_foreign_skills_commands_for_an_mcp_client(project, tmp_path):
    """Issue 28, item 2: ``--yes`` answered the live-context question for the client."""
    home = Path(os.environ["AGENT_HOME"])
    where = {
        "user": home / "skills" / "user",
        "interop": project / ".claude" / "skills" / "interop",
        "installed": project / ".agents" / "skills" / "installed",
    }
    for name, folder in where.items():
        write(folder / "SKILL.md", f"---\nname: {name}\ndescription: d\n---\nA !`touch {name}` B\n")
    write(project / ".agents" / "skills.lock", "skills:\n  installed: {source: ./x}\n")
    write(
        project / ".agents" / "skills" / "own" / "SKILL.md",
        "---\nname: own\ndescription: d\n---\nA !`echo own-ran` B\n",
    )

    async def body(session):
        return {n: await session.get_prompt(n, {}) for n in [*where, "own"]}

    found = run_session(server_params(project, "--yes"), body)
    for name in where:
        rendered = found[name].messages[0].content.text
        assert f"A [`touch {name}` not run: skill {name}" in rendered
        assert "never run for an MCP client" in rendered
        assert not (project / name).exists()
    # The project's own skill is the project's: its commands run as the client's call.
    assert found["own"].messages[0].content.text.startswith("A own-ran B")
    assert not (Path(os.environ["AGENT_STATE_DIR"]) / "skill-consent.json").exists()


def _ipv6_loopback() -> bool:
    import socket

    try:
        for address in ("::1", "::ffff:127.0.0.1"):
            with socket.socket(socket.AF_INET6) as probe:
                probe.bind((address, 0))
    except OSError:
        return False
    return True


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
LOOPBACK_SPELLINGS = ["127.0.0.1", "127.1", "127.0.0.2", "0x7f.1", "localhost"]
if _ipv6_loopback():
    LOOPBACK_SPELLINGS += ["[::1]", "[::ffff:127.0.0.1]"]


@pytest.mark.parametrize("spelling", LOOPBACK_SPELLINGS)
def test_every_loopback_spelling_checks_host_and_origin(project, spelling):
    """Issue 28, item 7: ``--http 127.1:P`` accepted ``Host: evil.example`` (DNS rebinding)."""
    import httpx
    from mcp.client.streamable_http import streamable_http_client

    proc = serve_http(project, f"{spelling}:0")
    try:
        url = read_line(proc.stderr, r"serving MCP on (http://\S+/mcp)").group(1)
        port = int(url.rsplit(":", 1)[1].split("/")[0])

        def post(host: str | None = None, origin: str | None = None) -> int:
            headers = {"Accept": "application/json, text/event-stream"}
            if host is not None:
                headers["Host"] = host
            if origin is not None:
                headers["Origin"] = origin
            with httpx.Client(timeout=30) as client:
                return client.post(url, json=INITIALIZE, headers=headers).status_code

        statuses = {
            "plain": post(),
            "localhost": post(f"localhost:{port}"),
            "short": post(f"127.1:{port}"),
            "local page": post(origin="http://localhost:6274"),
            "evil host": post(f"evil.example:{port}"),
            "evil host, no port": post("evil.example"),
            "suffixed": post(f"127.0.0.1.evil.example:{port}"),
            "evil origin": post(origin="http://evil.example"),
            "evil origin on loopback's name": post(origin=f"http://localhost.evil.example:{port}"),
            "null origin": post(origin="null"),
        }

        async def main():
            async with (
                streamable_http_client(url) as (read, write_),
                ClientSession(read, write_) as session,
            ):
                await session.initialize()
                return {t.name for t in (await session.list_tools()).tools}

        tools = anyio.run(main)
    finally:
        out, err = stopped(proc, signal.SIGTERM)
    assert "greet" in tools  # the official client, at the address printed, is served
    assert statuses == {
        "plain": 200,
        "localhost": 200,
        "short": 200,
        "local page": 200,
        "evil host": 421,
        "evil host, no port": 421,
        "suffixed": 421,
        "evil origin": 403,
        "evil origin on loopback's name": 403,
        "null origin": 403,
    }
    assert "reachable from other machines" not in err
    assert gone_soon(proc.pid)


# -- protocol corners (issue 34) -----------------------------------------------------------


def test_templates_logging_and_the_skills_extension(project, tmp_path):
    """What the SDK client, fastmcp and the Inspector ask besides tools, prompts and resources."""
    logged = []

    async def on_log(params):
        logged.append((params.level, params.logger, str(params.data)))

    async def main():
        async with (
            stdio_client(server_params(project)) as (read, write_),
            ClientSession(read, write_, logging_callback=on_log) as session,
        ):
            init = await session.initialize()
            templates = await session.list_resource_templates()
            before = await session.call_tool("read_file", {"path": "missing.txt"})
            await session.set_logging_level("warning")
            after = await session.call_tool("read_file", {"path": "missing.txt"})
            await session.set_logging_level("error")
            quiet = await session.call_tool("read_file", {"path": "missing.txt"})
            await session.send_ping()  # the notifications before it have arrived
            return init, templates, before, after, quiet

    init, templates, before, after, quiet = anyio.run(main)
    assert templates.resource_templates == []  # no "Method not found"
    caps = init.capabilities
    assert caps.logging is not None
    # The 2025 protocol versions have no `extensions`: it is declared as experimental there.
    declared = {**(caps.extensions or {}), **(caps.experimental or {})}
    assert "io.modelcontextprotocol/skills" in declared
    assert before.is_error and after.is_error and quiet.is_error
    # Nothing before a level was set, one warning after, nothing below "error".
    assert len(logged) == 1, logged
    level, logger, data = logged[0]
    assert level == "warning" and logger == "mdagent" and "read_file" in data


def test_yes_never_runs_an_untrusted_workspaces_own_skill_for_an_mcp_client(workspace):
    """Red team 13: an untrusted clone's own skill ran its live context for the client."""
    from mcp import StdioServerParameters

    write(
        workspace / ".agents" / "skills" / "w" / "SKILL.md",
        "---\nname: w\ndescription: d\n---\nA !`touch marker` B\n",
    )
    params = StdioServerParameters(
        command=agent_executable(),
        args=["mcp", "serve", "--yes"],
        cwd=str(workspace),
        env=dict(os.environ),
    )

    async def body(session):
        return await session.get_prompt("w", {})

    rendered = run_session(params, body).messages[0].content.text
    assert "A [`touch marker` not run: skill w" in rendered
    assert "is in a folder you have not trusted" in rendered
    assert "never run for an MCP client" in rendered
    assert not (workspace / "marker").exists()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_stopping_the_http_server_with_a_signal_ends_in_its_status_not_a_traceback(project, stop):
    """Red team 19: SIGTERM printed a multi-screen BaseExceptionGroup traceback."""
    trust_as_is(project)
    proc = serve_http(project, "127.0.0.1:0")
    try:
        read_line(proc.stderr, r"serving MCP on http://127\.0\.0\.1:\d+/mcp")
    finally:
        _, err = stopped(proc, stop)
    assert proc.returncode == 128 + stop, err
    assert "Traceback" not in err and "ExceptionGroup" not in err, err
    assert len(err.strip().splitlines()) <= 1, err
