"""Arriving from another agent (issue 34), through the real ``agent`` executable.

Each test lays a temporary folder out as Claude Code, Gemini CLI, Codex or
OpenClaw lays it out (a git repository with no ``.agents/``), and checks
what a person would notice: the command runs and the model receives its
prompt, the memory reaches the model's request, the MCP server starts, a
foreign deny refuses, a foreign allow does nothing until ``agent trust``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from conftest import provider_args, scripted_model, tool_results, write
from model_server import ModelServer

FIXTURE = Path(__file__).with_name("mcp_fixture_server.py")


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A cloned repository as another agent's user has it: ``.git``, no ``.agents``."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def home() -> Path:
    return Path(os.environ["HOME"])


def first_user(server) -> str:
    messages = server.requests[0]["json"]["messages"]
    return next(m["content"] for m in messages if m["role"] == "user")


def system_of(server) -> str:
    messages = server.requests[0]["json"]["messages"]
    return next(m["content"] for m in messages if m["role"] == "system")


def untrusted(run_agent, repo, *args, **kw):
    return run_agent(*args, cwd=repo, trusted=False, **kw)


# -- commands ---------------------------------------------------------------------------


def test_a_claude_code_legacy_command_runs_with_its_namespace_and_arguments(repo, run_agent):
    write(
        repo / ".claude" / "commands" / "frontend" / "component.md",
        "---\ndescription: Make a React component\nargument-hint: <name>\n---\n"
        "Create the component $ARGUMENTS in src/components.\n",
    )
    write(repo / ".claude" / "commands" / "plain.md", "Say hello to $ARGUMENTS\n")
    listed = untrusted(run_agent, repo, "commands")
    assert "/frontend:component" in listed.stdout
    assert ".claude/commands/frontend/component.md" in listed.stdout  # its source
    assert "Make a React component" in listed.stdout
    with ModelServer(["Done.", "Hi."]) as server:
        done = untrusted(run_agent, repo, *provider_args(server), "/frontend:component", "Button")
        plain = untrusted(run_agent, repo, *provider_args(server), "/plain", "Ada")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Done.\n"
    assert "Create the component Button in src/components." in first_user(server)
    assert plain.returncode == 0, plain.stderr
    messages = server.requests[1]["json"]["messages"]
    assert any("Say hello to Ada" in str(m.get("content")) for m in messages)
    check = untrusted(run_agent, repo, "check")
    assert "read as /frontend:component (claude-commands)" in check.stdout


def test_a_user_level_claude_command_and_a_codex_prompt(repo, run_agent, home):
    write(home / ".claude" / "commands" / "standup.md", "Summarise my day: $ARGUMENTS\n")
    write(home / ".codex" / "prompts" / "explain.md", "Explain $1 simply.\n")
    listed = untrusted(run_agent, repo, "commands")
    assert "/standup" in listed.stdout and "/prompts:explain" in listed.stdout
    with ModelServer(["ok", "ok"]) as server:
        done = untrusted(run_agent, repo, *provider_args(server), "/standup", "reviews")
        explained = untrusted(
            run_agent, repo, *provider_args(server), "/prompts:explain", "monads", "please"
        )
    assert done.returncode == 0, done.stderr
    assert "Summarise my day: reviews" in first_user(server)
    assert explained.returncode == 0, explained.stderr
    second = server.requests[1]["json"]["messages"]
    assert any("Explain monads simply." in str(m.get("content")) for m in second)  # $1: the first


def test_a_gemini_toml_command_through_our_live_context_includes_and_quoting(
    repo, run_agent, tmp_path
):
    marker = tmp_path / "pwned"
    write(repo / "notes.txt", "NOTE-LINE\n")
    write(
        repo / ".gemini" / "commands" / "git" / "commit.toml",
        'description = "Draft a commit message"\n'
        'prompt = """Message for {{args}}.\nStatus: !{echo STATUS {{args}}}\nNotes: @{notes.txt}\n"""\n',
    )
    hostile = f"$(touch {marker})"
    with ModelServer(["one", "two"]) as server:
        # Another agent's command: its commands ask first; without a terminal they do not run.
        refused = untrusted(run_agent, repo, *provider_args(server), "/git:commit", "x")
        approved = untrusted(
            run_agent, repo, *provider_args(server), "--yes", "/git:commit", hostile
        )
    assert refused.returncode == 0, refused.stderr
    first = first_user(server)
    assert "Message for x." in first and "not run:" in first and "NOTE-LINE" in first
    assert approved.returncode == 0, approved.stderr
    second = next(
        m["content"] for m in server.requests[1]["json"]["messages"] if m["role"] == "user"
    )
    assert f"Status: STATUS {hostile}" in second  # {{args}} quoted: the text, not run
    assert not marker.exists()
    assert "!{" not in second and "@{" not in second


def test_a_broken_gemini_command_is_one_line_and_the_rest_load(repo, run_agent):
    write(repo / ".gemini" / "commands" / "bad.toml", 'prompt = "unclosed\n')
    write(repo / ".gemini" / "commands" / "good.toml", 'prompt = "fine"\n')
    check = untrusted(run_agent, repo, "check")
    assert "bad.toml:" in check.stdout and "not valid TOML" in check.stdout
    assert "Traceback" not in check.stderr
    assert "/good" in untrusted(run_agent, repo, "commands").stdout


def test_a_foreign_command_s_allowed_tools_and_model_wait_for_trust(repo, run_agent):
    write(
        repo / ".claude" / "commands" / "st.md",
        "---\nallowed-tools: Bash(git status:*)\nmodel: other-model\n---\nStatus?\n",
    )
    check = untrusted(run_agent, repo, "check")
    assert "skill st pre-approves exec(git status)" in check.stdout
    assert "ignored: this folder is not trusted" in check.stdout
    shown = untrusted(run_agent, repo, "trust", "--show")
    assert "not trusted" in shown.stdout


# -- memory -----------------------------------------------------------------------------


def test_memory_files_reach_the_model_in_order_with_confined_imports(repo, run_agent, home):
    write(home / ".claude" / "CLAUDE.md", "USER-CLAUDE\n")
    write(home / "private.md", "HOME-PRIVATE\n")
    write(repo / "AGENTS.md", "ROOT-AGENTS\n")
    write(
        repo / "CLAUDE.md",
        "ROOT-CLAUDE\n@docs/style.md\n@~/private.md\n`@docs/style.md` stays text\n",
    )
    write(repo / "docs" / "style.md", "STYLE-IMPORTED\n")
    write(repo / "CLAUDE.local.md", "ROOT-LOCAL\n")
    write(repo / "pkg" / "GEMINI.md", "PKG-GEMINI\n")
    with ModelServer(["ok"]) as server:
        done = run_agent(*provider_args(server), "ask", "hi", cwd=repo / "pkg", trusted=False)
    assert done.returncode == 0, done.stderr
    system = system_of(server)
    order = ["USER-CLAUDE", "ROOT-AGENTS", "ROOT-CLAUDE", "ROOT-LOCAL", "PKG-GEMINI"]
    assert [system.index(x) for x in order] == sorted(system.index(x) for x in order)
    assert "STYLE-IMPORTED" in system
    assert "HOME-PRIVATE" not in system  # a workspace file imports only inside the workspace
    assert "[@~/private.md not imported: outside the workspace]" in system
    assert "`@docs/style.md` stays text" in system
    shown = run_agent("config", "show", cwd=repo / "pkg", trusted=False)
    assert f"{repo / 'CLAUDE.md'}  -> system prompt" in shown.stdout
    assert f"{repo / 'pkg' / 'GEMINI.md'}  -> system prompt" in shown.stdout


def test_a_memory_import_meets_the_deny_rules(repo, run_agent):
    write(repo / ".env", "SECRET=hunter2\n")
    write(repo / "CLAUDE.md", "Setup:\n@.env\n")
    write(repo / ".claude" / "settings.json", '{"permissions": {"deny": ["Read(./.env)"]}}')
    with ModelServer(["ok"]) as server:
        done = untrusted(run_agent, repo, *provider_args(server), "ask", "hi")
    assert done.returncode == 0, done.stderr
    system = system_of(server)
    assert "hunter2" not in system and "@.env not imported: denied by policy rule" in system


def test_memory_sources_turn_off_by_name(repo, run_agent):
    write(repo / "CLAUDE.md", "ROOT-CLAUDE\n")
    write(repo / "GEMINI.md", "ROOT-GEMINI\n")
    write(
        Path(os.environ["AGENT_HOME"]) / "config" / "agent.yaml",
        "skills:\n  interop: {claude-memory: false}\n",
    )
    with ModelServer(["ok"]) as server:
        done = untrusted(run_agent, repo, *provider_args(server), "ask", "hi")
    assert done.returncode == 0, done.stderr
    system = system_of(server)
    assert "ROOT-GEMINI" in system and "ROOT-CLAUDE" not in system


# -- MCP servers ------------------------------------------------------------------------


def fixture_entry() -> dict:
    return {"command": sys.executable, "args": [str(FIXTURE)]}


@pytest.mark.parametrize(
    "path, text",
    [
        (".mcp.json", lambda e: json.dumps({"mcpServers": {"fx": e}})),
        (".gemini/settings.json", lambda e: json.dumps({"mcpServers": {"fx": e}})),
        (
            ".codex/config.toml",
            lambda e: (
                f"[mcp_servers.fx]\ncommand = {json.dumps(e['command'])}\n"
                f"args = {json.dumps(e['args'])}\n"
            ),
        ),
    ],
    ids=["claude", "gemini", "codex"],
)
def test_another_agent_s_mcp_server_starts_once_the_folder_is_trusted(repo, run_agent, path, text):
    pytest.importorskip("mcp")
    write(repo / path, text(fixture_entry()))
    before = untrusted(run_agent, repo, "mcp", "list")
    assert "not started: this folder is not trusted" in before.stdout + before.stderr
    check = untrusted(run_agent, repo, "check")
    assert f"{path}:" in check.stdout and "read as mcp_servers.fx" in check.stdout
    trusted = untrusted(run_agent, repo, "trust", "--yes")
    assert trusted.returncode == 0, trusted.stderr
    assert path in trusted.stdout  # the file trust is bound to
    listed = untrusted(run_agent, repo, "mcp", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert "fx__echo" in listed.stdout
    tools = json.loads(untrusted(run_agent, repo, "tools", "--json").stdout)
    echo = next(t for t in tools if t["name"] == "fx__echo")
    assert echo["source"] == f"mcp:fx ({repo / path})"  # where the server came from
    check = untrusted(run_agent, repo, "check")
    assert f"{repo / path}:" in check.stdout and "mcp server fx: " in check.stdout


def test_a_user_level_mcp_server_is_the_person_s_own(repo, run_agent, home):
    pytest.importorskip("mcp")
    write(home / ".gemini" / "settings.json", json.dumps({"mcpServers": {"fx": fixture_entry()}}))
    listed = untrusted(run_agent, repo, "mcp", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert "fx__echo" in listed.stdout


# -- permissions ------------------------------------------------------------------------


CLAUDE_SETTINGS = json.dumps(
    {
        "permissions": {
            "deny": ["Read(./.env)", "Bash(curl:*)"],
            "allow": ["Bash(ls:*)"],
        },
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": []}]},
    },
    indent=2,
)


def decision(run_agent, repo, call: str) -> str:
    tool, _, rest = call.partition(" ")
    done = untrusted(run_agent, repo, "--json", "policy", "check", tool, rest)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)["decision"]


def test_a_foreign_deny_refuses_the_model_untrusted_or_not(repo, run_agent):
    write(repo / ".env", "SECRET=hunter2\n")
    write(repo / ".claude" / "settings.json", CLAUDE_SETTINGS)
    calls = [
        ("read_file", {"path": ".env"}),
        ("exec", {"command": "curl http://127.0.0.1:9/"}),
    ]
    with scripted_model(*calls) as server:
        done = untrusted(run_agent, repo, *provider_args(server), "ask", "--yes", "go")
    assert done.returncode == 0, done.stderr
    results = tool_results(server)
    assert all("denied by policy rule" in json.dumps(r) for r in results), results
    assert "hunter2" not in json.dumps(results)
    assert "Bash(curl:*)" in json.dumps(results)  # the reason names the person's rule
    assert decision(run_agent, repo, "exec curl -s x") == "deny"


def test_a_foreign_allow_does_nothing_until_agent_trust(repo, run_agent):
    write(repo / ".claude" / "settings.json", CLAUDE_SETTINGS)
    assert decision(run_agent, repo, "exec ls -la") == "ask"
    check = untrusted(run_agent, repo, "check")
    assert "policy.allow allows exec(ls *): ignored: this folder is not trusted" in check.stdout
    assert "Claude Code's hooks are not run by mdagent" in check.stdout
    assert untrusted(run_agent, repo, "trust", "--yes").returncode == 0
    assert decision(run_agent, repo, "exec ls -la") == "allow"
    assert decision(run_agent, repo, "exec curl x") == "deny"
    # A new, looser file after trust: trust lapses, the allow is ignored again.
    write(repo / ".claude" / "settings.local.json", '{"permissions": {"allow": ["Bash(rm:*)"]}}')
    assert decision(run_agent, repo, "exec rm -rf build") == "ask"
    assert decision(run_agent, repo, "exec ls -la") == "ask"


def test_the_person_s_own_claude_settings_apply_in_any_folder(repo, run_agent, home):
    write(
        home / ".claude" / "settings.json",
        json.dumps({"permissions": {"allow": ["Bash(ls:*)"], "deny": ["Bash(wget:*)"]}}),
    )
    assert decision(run_agent, repo, "exec ls -la") == "allow"
    assert decision(run_agent, repo, "exec wget x") == "deny"


def test_a_broken_claude_settings_file_refuses_until_fixed(repo, run_agent):
    write(repo / ".claude" / "settings.json", '{"permissions": {"deny": ["Read(.env)"],}')
    check = untrusted(run_agent, repo, "check")
    assert check.returncode == 1
    assert ".claude/settings.json:1:" in check.stdout and "not valid JSON" in check.stdout


def test_the_sandbox_keeps_other_agents_settings_read_only(repo, run_agent):
    write(repo / ".claude" / "settings.json", '{"permissions": {"deny": ["Bash(curl:*)"]}}')
    calls = [
        ("write_file", {"path": ".claude/settings.json", "content": "{}"}),
        ("write_file", {"path": ".mcp.json", "content": '{"mcpServers": {}}'}),
        ("write_file", {"path": ".gemini/commands/x.toml", "content": 'prompt = "x"'}),
    ]
    with scripted_model(*calls) as server:
        done = untrusted(run_agent, repo, *provider_args(server), "ask", "--yes", "go")
    assert done.returncode == 0, done.stderr
    results = json.dumps(tool_results(server))
    assert "Bash(curl:*)" in (repo / ".claude" / "settings.json").read_text()
    assert not (repo / ".mcp.json").exists()
    assert not (repo / ".gemini" / "commands" / "x.toml").exists()
    assert results.count("another agent's") >= 2, results


# -- skill folders and switches ---------------------------------------------------------


def skill(folder: Path, name: str) -> None:
    write(folder / name / "SKILL.md", f"---\nname: {name}\ndescription: d\n---\nBody\n")


def test_openclaw_workspace_skills_are_opt_in_and_github_skills_load(repo, run_agent):
    skill(repo / "skills", "claw")
    skill(repo / ".github" / "skills", "hub")
    listed = untrusted(run_agent, repo, "skills")
    assert "hub" in listed.stdout and "claw" not in listed.stdout
    write(
        Path(os.environ["AGENT_HOME"]) / "config" / "agent.yaml",
        "skills:\n  interop: {openclaw-workspace-skills: true, github-skills: false}\n",
    )
    listed = untrusted(run_agent, repo, "skills")
    assert "claw" in listed.stdout and "hub" not in listed.stdout


def test_each_source_turns_off_by_name(repo, run_agent):
    write(repo / ".claude" / "commands" / "one.md", "One\n")
    write(repo / ".gemini" / "commands" / "two.toml", 'prompt = "Two"\n')
    write(repo / ".claude" / "settings.json", '{"permissions": {"deny": ["Bash(curl:*)"]}}')
    write(
        Path(os.environ["AGENT_HOME"]) / "config" / "agent.yaml",
        "skills:\n  interop: {claude-commands: false, claude-permissions: false}\n",
    )
    listed = untrusted(run_agent, repo, "commands").stdout
    assert "/two" in listed and "/one" not in listed
    assert decision(run_agent, repo, "exec curl x") == "ask"
    write(Path(os.environ["AGENT_HOME"]) / "config" / "agent.yaml", "skills:\n  interop: false\n")
    assert "/two" not in untrusted(run_agent, repo, "commands").stdout


def test_a_bad_interop_setting_is_one_line(repo, run_agent):
    write(
        Path(os.environ["AGENT_HOME"]) / "config" / "agent.yaml",
        "skills:\n  interop: {claude-comands: false}\n",
    )
    check = untrusted(run_agent, repo, "check")
    assert check.returncode == 1 and "skills.interop" in check.stdout
    assert "Traceback" not in check.stderr


def test_links_out_of_a_cloned_repository_are_not_read(repo, run_agent, home):
    write(home / ".aws" / "credentials", "AWS-SECRET-KEY\n")
    (repo / "CLAUDE.md").symlink_to(home / ".aws" / "credentials")
    (repo / ".claude" / "commands").mkdir(parents=True)
    (repo / ".claude" / "commands" / "steal.md").symlink_to(home / ".aws" / "credentials")
    write(repo / "GEMINI.md", "REAL-MEMORY\n")
    listed = untrusted(run_agent, repo, "commands")
    assert "/steal" not in listed.stdout
    check = untrusted(run_agent, repo, "check")
    assert "steal.md" in check.stdout and "leads out of the workspace" in check.stdout
    with ModelServer(["ok"]) as server:
        done = untrusted(run_agent, repo, *provider_args(server), "ask", "hi")
    assert done.returncode == 0, done.stderr
    sent = json.dumps(server.requests[0]["json"])
    assert "AWS-SECRET-KEY" not in sent and "REAL-MEMORY" in sent
    assert "CLAUDE.md not read: it is a link leading outside the workspace" in sent


def test_a_project_cannot_switch_off_the_person_s_own_deny_rules(repo, run_agent, home):
    write(
        home / ".claude" / "settings.json", json.dumps({"permissions": {"deny": ["Bash(wget:*)"]}})
    )
    write(repo / ".agents" / "config" / "agent.yaml", "skills:\n  interop: false\n")
    write(repo / ".claude" / "commands" / "mine.md", "Mine\n")
    assert decision(run_agent, repo, "exec wget x") == "deny"  # untrusted
    assert untrusted(run_agent, repo, "trust", "--yes").returncode == 0
    assert decision(run_agent, repo, "exec wget x") == "deny"  # trusted too
    # Its own files it may leave unread.
    assert "/mine" not in untrusted(run_agent, repo, "commands").stdout
