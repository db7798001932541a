"""Where a prompt skill's reach ends, through the real ``agent`` executable.

A red-team pass found four ways a skill reached past the policy: ``@{path}``
includes that ignored ``read_file``'s deny rules, an installed skill moved
into a group folder that no longer counted as foreign, and a ``context:
fork`` skill the model loads whose ``allowed-tools`` pre-approved the fork's
calls. (The MCP server's side, never asking on its terminal, is in
tests/test_mcp_server_e2e.py.)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import ask, provider_args, scripted_model, settings, tool_results, write
from model_server import ModelServer

DENY_ENV = "policy:\n  deny: ['read_file(**/.env)']\n"
SECRET = "TOKEN=S3CR3T-VALUE"


def prompt_skill(ws: Path, name: str, body: str, extra: str = "") -> Path:
    return write(
        ws / ".agents" / "skills" / name / "SKILL.md",
        f"---\nname: {name}\ndescription: a prompt skill\n{extra}---\n{body}",
    )


def everything_sent(server) -> str:
    return json.dumps([r["json"] for r in server.requests])


# -- 1. includes meet read_file's deny rules -----------------------------------------


def test_the_model_loading_a_skill_cannot_include_a_denied_file(workspace, run_agent):
    write(workspace / ".env", SECRET + "\n")
    settings(workspace, DENY_ENV)
    prompt_skill(workspace, "envy", "Env: @{.env}\n")
    with scripted_model(("skill", {"name": "envy"})) as server:
        result = ask(run_agent, server)
    assert result.returncode == 0, result.stderr
    error = tool_results(server)[0]["error"]
    assert error.startswith("cannot load skill envy: /envy: @{.env}: denied by policy rule")
    assert "read_file(**/.env)" in error
    assert "S3CR3T" not in everything_sent(server) + result.stdout + result.stderr


def test_a_symlink_in_the_skill_folder_to_a_denied_file_is_refused(workspace, run_agent):
    write(workspace / ".env", SECRET + "\n")
    settings(workspace, DENY_ENV)
    skill = prompt_skill(workspace, "linked", "Ref: @{${SKILL_DIR}/ref.md}\n")
    (skill.parent / "ref.md").symlink_to(workspace / ".env")
    with ModelServer(["never sent"]) as server:
        typed = run_agent(*provider_args(server), "/linked")
    # A person's /name too: deny rules hold for every caller; one line, exit 126, no turn.
    assert typed.returncode == 126 and not server.requests
    lines = typed.stderr.strip().splitlines()
    assert len(lines) == 1 and "@{" in lines[0] and "denied by policy rule" in lines[0]
    assert "S3CR3T" not in typed.stdout + typed.stderr
    with scripted_model(("skill", {"name": "linked"})) as server:
        loaded = ask(run_agent, server)
    assert loaded.returncode == 0, loaded.stderr
    assert "denied by policy rule" in tool_results(server)[0]["error"]
    assert "S3CR3T" not in everything_sent(server)


def test_without_the_deny_rule_the_same_include_works(workspace, run_agent):
    write(workspace / ".env", SECRET + "\n")
    prompt_skill(workspace, "envy", "Env: @{.env}\n")
    with scripted_model(("skill", {"name": "envy"})) as server:
        result = ask(run_agent, server)
    assert result.returncode == 0, result.stderr
    assert f"Env: {SECRET}" in tool_results(server)[0]["output"]


# -- 3. an installed skill in a group folder is still foreign ------------------------


def test_an_installed_skill_moved_into_a_group_folder_still_asks(workspace, run_agent, tmp_path):
    marker = tmp_path / "ran"
    upstream = write(
        tmp_path / "upstream" / "thirdp" / "SKILL.md",
        f"---\nname: thirdp\ndescription: third party\n---\nX !`touch {marker}` Y\n",
    ).parent
    added = run_agent("skills", "add", str(upstream), "--yes")
    assert added.returncode == 0, added.stderr
    skills = workspace / ".agents" / "skills"
    (skills / "vendor").mkdir()
    shutil.move(skills / "thirdp", skills / "vendor" / "thirdp")
    with ModelServer(["ok"]) as server:
        result = run_agent(*provider_args(server), "/thirdp")
    assert result.returncode == 0, result.stderr
    prompt = server.requests[0]["json"]["messages"][-1]["content"]
    assert f"[`touch {marker}` not run: skill thirdp" in prompt
    assert "comes from outside this project" in prompt
    assert not marker.exists()


def test_a_skill_the_lock_lists_under_another_name_and_folder_is_foreign(
    workspace, run_agent, tmp_path
):
    marker = tmp_path / "ran"
    upstream = write(
        tmp_path / "upstream" / "thirdp" / "SKILL.md",
        f"---\nname: thirdp\ndescription: third party\n---\nX !`touch {marker}` Y\n",
    ).parent
    assert run_agent("skills", "add", str(upstream), "--yes").returncode == 0
    skills = workspace / ".agents" / "skills"
    # Moved and its folder renamed: the lock still knows its SKILL.md.
    shutil.move(skills / "thirdp", write(skills / "team" / "x", "").parent / "mine")
    (skills / "team" / "x").unlink()
    with ModelServer(["ok"]) as server:
        result = run_agent(*provider_args(server), "/thirdp")
    assert result.returncode == 0, result.stderr
    assert (
        "comes from outside this project" in server.requests[0]["json"]["messages"][-1]["content"]
    )
    assert not marker.exists()


def test_a_projects_own_skill_in_a_group_folder_runs_its_commands(workspace, run_agent):
    write(workspace / ".agents" / "skills.lock", "skills: {}\n")
    write(
        workspace / ".agents" / "skills" / "team" / "own" / "SKILL.md",
        "---\nname: own\ndescription: ours\n---\nX !`echo OWN-OUTPUT` Y\n",
    )
    with ModelServer(["ok"]) as server:
        result = run_agent(*provider_args(server), "/own")
    assert result.returncode == 0, result.stderr
    assert "X OWN-OUTPUT Y" in server.requests[0]["json"]["messages"][-1]["content"]


def test_an_unreadable_lock_fails_closed(workspace, run_agent, tmp_path):
    marker = tmp_path / "ran"
    write(workspace / ".agents" / "skills.lock", "skills: [unclosed\n")
    write(
        workspace / ".agents" / "skills" / "team" / "own" / "SKILL.md",
        f"---\nname: own\ndescription: ours\n---\nX !`touch {marker}` Y\n",
    )
    with ModelServer(["ok"]) as server:
        result = run_agent(*provider_args(server), "/own")
    assert result.returncode == 0, result.stderr
    assert "not run" in server.requests[0]["json"]["messages"][-1]["content"]
    assert not marker.exists()


# -- 4. allowed-tools pre-approve only a turn a person started -----------------------

FORKED = "context: fork\nallowed-tools: Bash(touch *)\n"


def test_a_fork_the_model_starts_gets_no_allowed_tools(workspace, run_agent, tmp_path):
    marker = workspace / "ran"  # a model's command writes in the workspace
    prompt_skill(workspace, "forky", "Touch the marker\n", FORKED)
    script = [
        {"tool_calls": [{"name": "skill", "arguments": {"name": "forky"}}]},
        {"tool_calls": [{"name": "exec", "arguments": {"command": f"touch {marker}"}}]},
        "fork done",
        "parent done",
    ]
    with ModelServer(script) as server:
        result = ask(run_agent, server)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "parent done\n"
    refused = tool_results(server, 2)[0]  # the fork's exec result, in the fork's request
    assert refused["error"].startswith("exec needs approval")
    assert "no terminal to ask on" in refused["error"]
    assert not marker.exists()


def test_a_fork_a_person_types_gets_its_allowed_tools(workspace, run_agent, tmp_path):
    marker = workspace / "ran"  # a model's command writes in the workspace
    prompt_skill(workspace, "forky", "Touch the marker\n", FORKED)
    with scripted_model(("exec", {"command": f"touch {marker}"}), answer="touched") as server:
        result = run_agent(*provider_args(server), "/forky")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "touched\n"
    assert marker.exists()


def test_an_inline_skill_the_model_loads_gets_no_allowed_tools(workspace, run_agent, tmp_path):
    marker = workspace / "ran"  # a model's command writes in the workspace
    prompt_skill(workspace, "inline", "Touch the marker\n", "allowed-tools: Bash(touch *)\n")
    with scripted_model(
        ("skill", {"name": "inline"}), ("exec", {"command": f"touch {marker}"})
    ) as server:
        result = ask(run_agent, server)
    assert result.returncode == 0, result.stderr
    assert tool_results(server)[1]["error"].startswith("exec needs approval")
    assert not marker.exists()
