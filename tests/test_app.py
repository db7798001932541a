"""The typer subcommands through the real ``agent`` executable."""

import json

from conftest import write


def test_check_clean_project_exits_0(workspace, run_agent):
    result = run_agent("check")
    assert result.returncode == 0 and result.stdout == ""
    assert "0 errors" in result.stderr


def test_check_reports_path_line_col_and_exits_1(workspace, run_agent):
    write(
        workspace / ".agents" / "config" / "bad.yaml",
        "tools:\n  x:\n    description: d\n    security: unsafe\n    run: [x]\n",
    )
    write(
        workspace / ".agents" / "skills" / "nameless" / "SKILL.md", "---\ndescription: [oops\n---\n"
    )
    result = run_agent("check")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert any(
        line.startswith(f"{workspace.resolve()}/.agents/config/bad.yaml:4:") and ": error: " in line
        for line in lines
    )
    assert any("nameless/SKILL.md:" in line and ": error: " in line for line in lines)
    data = json.loads(run_agent("check", "--json").stdout)
    assert {p["severity"] for p in data} >= {"error"}
    assert all({"path", "line", "col", "severity", "message"} <= set(p) for p in data)


def test_check_reports_shadowing_as_info(workspace, run_agent):
    write(
        workspace / ".agents" / "skills" / "term" / "SKILL.md",
        "---\ndescription: mine\n---\nbody\n",
    )
    result = run_agent("check")
    assert result.returncode == 0
    assert any(": info: " in line and "shadowed" in line for line in result.stdout.splitlines())


def test_tools_table_one_tool_and_formats(workspace, run_agent):
    table = run_agent("tools").stdout.splitlines()
    assert table[0].split() == ["NAME", "ALIASES", "CATEGORY", "SECURITY", "TIER", "SOURCE"]
    exec_row = next(line for line in table if line.startswith("exec "))
    assert "bash,sh,shell,execute" in exec_row and "dangerous" in exec_row
    one = run_agent("tools", "bash").stdout
    assert one.startswith("exec - ") and "command" in one
    openai = json.loads(run_agent("tools", "--format", "openai").stdout)
    assert {t["function"]["name"] for t in openai} >= {"exec", "read_file", "wc"}
    assert "bash" not in {t["function"]["name"] for t in openai}
    anthropic = json.loads(run_agent("tools", "--format", "anthropic").stdout)
    assert all(set(t) == {"name", "description", "input_schema"} for t in anthropic)
    assert run_agent("tools", "nope").returncode == 2


def test_tools_all_shows_unavailable_with_reason(workspace, run_agent):
    write(
        workspace / ".agents" / "config" / "t.yaml",
        "tools:\n  needs-bin:\n    description: d\n    requires: {bins: [no-such-binary-xyz]}\n    run: [x]\n",
    )
    assert "needs-bin" not in run_agent("tools").stdout
    listing = run_agent("tools", "--all").stdout
    assert "needs-bin" in listing and "needs no-such-binary-xyz on PATH" in listing
    rows = json.loads(run_agent("tools", "--all", "--json").stdout)
    row = next(r for r in rows if r["name"] == "needs-bin")
    assert row["available"] is False and "no-such-binary-xyz" in row["unavailable_reason"]


def test_commands_and_skills_listings(workspace, run_agent):
    write(
        workspace / ".agents" / "skills" / "hidden" / "SKILL.md",
        "---\ndescription: d\nuser-invocable: false\n---\nbody\n",
    )
    commands = run_agent("commands").stdout
    assert "/term" in commands and "/count" in commands and "/hidden" not in commands
    data = json.loads(run_agent("commands", "--json").stdout)
    assert {c["name"] for c in data} >= {"term", "count"}
    skills = run_agent("skills").stdout
    row = next(line for line in skills.splitlines() if line.startswith("hidden "))
    assert row.split()[1:3] == ["prompt", "hidden"]
    rows = json.loads(run_agent("skills", "--json").stdout)
    assert next(r for r in rows if r["name"] == "hidden")["user_invocable"] is False


def test_new_skill_writes_a_valid_skeleton_and_refuses_to_overwrite(workspace, run_agent):
    made = run_agent("new", "skill", "deploy", "--tool", "exec", "--arg-mode", "raw")
    target = workspace / ".agents" / "skills" / "deploy" / "SKILL.md"
    assert made.returncode == 0 and target.is_file()
    assert run_agent("check").returncode == 0
    assert run_agent("/deploy", "echo deployed").stdout == "deployed\n"
    target.write_text(target.read_text() + "\nmy notes\n")
    again = run_agent("new", "skill", "deploy")
    assert again.returncode == 1 and "already exists" in again.stderr
    assert "my notes" in target.read_text()


def test_new_prompt_skill_and_bad_input(workspace, run_agent):
    assert run_agent("new", "skill", "explain").returncode == 0
    assert run_agent("check").returncode == 0
    assert run_agent("new", "skill", "Bad_Name").returncode == 2
    assert run_agent("new", "skill", "help").returncode == 2
    assert run_agent("new", "skill", "x", "--tool", "nope").returncode == 2
    assert run_agent("new", "skill", "y", "--tool", "exec", "--arg-mode", "weird").returncode == 2


def test_logs_and_sessions_on_an_empty_state_dir(workspace, run_agent):
    assert run_agent("logs").stdout.strip() == (
        "(no calls logged in this workspace (--all: every workspace))"
    )
    assert run_agent("logs", "--all").stdout.strip() == "(no calls logged)"
    assert run_agent("sessions").stdout.strip() == "(no sessions)"
    missing = run_agent("sessions", "show", "zzz")
    assert missing.returncode == 2 and "no session" in missing.stderr


def test_unknown_subcommand_is_a_usage_error(run_agent):
    result = run_agent("frobnicate")
    assert result.returncode == 2 and "No such command" in result.stderr


def test_format_sends_only_the_configured_tier(workspace, run_agent):
    write(workspace / ".agents" / "config" / "agent.yaml", "agent: {tier: essential}\n")
    names = {
        t["function"]["name"] for t in json.loads(run_agent("tools", "--format", "openai").stdout)
    }
    assert "exec" in names and "read_file" in names
    assert "write_file" not in names and "glob" not in names


def test_new_skill_refuses_a_name_the_project_already_declares(workspace, run_agent):
    write(workspace / ".agents" / "config" / "c.yaml", "commands:\n  slow:\n    tool: exec\n")
    result = run_agent("new", "skill", "slow", "--tool", "exec")
    assert result.returncode == 1 and "already declared" in result.stderr
    assert not (workspace / ".agents" / "skills" / "slow").exists()
    assert run_agent("check").returncode == 0


def test_new_skill_when_the_layer_is_not_a_folder(tmp_path, run_agent):
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / ".agents").write_text("not a folder")
    result = run_agent("new", "skill", "x", cwd=odd)
    assert result.returncode == 1 and result.stderr.startswith("agent: cannot write")
