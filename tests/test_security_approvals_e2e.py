"""The person's approvals through the real ``agent`` executable (issue 9, items 5-7).

- "always" saves the narrowest rule, anchored at the workspace root;
- a model never changes its own policy unasked: layer files, hook scripts and
  handlers are asked about whatever the mode, the rules, "always" or --yes say;
- a skill's ``allowed-tools`` pre-approve no more than they name.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import (
    ask,
    command_skill,
    provider_args,
    scripted_model,
    settings,
    tool_results,
    write,
)
from model_server import ModelServer
from test_terminal_e2e import SESSION_PROMPT, Terminal, write_call

SETTINGS = Path(".agents") / "config" / "agent.yaml"
# The question for a protected call: no [a]lways.
PROTECTED_PROMPT = re.escape("Run it? [y]es / [t]ell / [n]o: ") + "$"


# -- 6. a model never changes its own policy ------------------------------------------


def test_full_mode_and_yes_do_not_let_a_model_write_its_settings(workspace, run_agent):
    original = "policy:\n  mode: full\n  deny: ['exec(rm *)']\n"
    target = settings(workspace, original)
    (workspace / "cfg").symlink_to(workspace / ".agents")
    widened = "policy: {mode: full}\n"
    with scripted_model(
        ("write_file", {"path": str(SETTINGS), "content": widened}),
        ("edit_file", {"path": str(SETTINGS), "old_string": "rm *", "new_string": "nothing"}),
        ("write_file", {"path": "cfg/config/agent.yaml", "content": widened}),
        ("write_file", {"path": "sub/../.agents/skills/x/SKILL.md", "content": "---\n---\n"}),
        ("write_file", {"path": "notes.txt", "content": "fine"}),
    ) as server:
        result = ask(run_agent, server, "--yes")
        results = tool_results(server)
    assert result.returncode == 0
    assert target.read_text() == original
    assert not (workspace / ".agents" / "skills").exists()
    for denied in results[:4]:
        assert denied["ok"] is False and denied["code"] == "DENIED"
        assert "agent's own configuration" in denied["error"]
    assert results[4]["ok"] is True and (workspace / "notes.txt").read_text() == "fine"


@pytest.mark.parametrize(
    "command",
    [
        "echo 'policy: {mode: full}' > .agents/config/agent.yaml",
        "echo x >> ./.agents/config/../config/agent.yaml",
        "cd .agents/config && printf x | tee agent.yaml",
        "sed -i 's/rm/nothing/' .agents/config/agent.yaml",
        "cp notes.txt .agents/config/agent.yaml",
        "mv .agents/config/agent.yaml gone.yaml",
        "rm -rf .agents",
        "dd if=notes.txt of=.agents/config/agent.yaml",
        "d=.agents; echo x > $d/config/agent.yaml",
    ],
)
def test_exec_writing_the_settings_is_denied_in_full_mode_with_yes(workspace, run_agent, command):
    original = "policy:\n  mode: full\n  deny: ['exec(rm notes*)']\n"
    target = settings(workspace, original)
    (workspace / "notes.txt").write_text("x\n")
    with scripted_model(
        ("exec", {"command": command}), ("exec", {"command": "echo ok > out.txt"})
    ) as s:
        result = ask(run_agent, s, "--yes")
        denied, allowed = tool_results(s)
    assert result.returncode == 0
    assert target.read_text() == original
    assert not (workspace / "gone.yaml").exists()
    assert denied["ok"] is False and denied["code"] == "DENIED"
    assert "agent's own configuration" in denied["error"]
    assert allowed["ok"] is True and (workspace / "out.txt").read_text() == "ok\n"


def test_allow_rules_do_not_cover_layer_files_user_layer_and_hook_scripts(
    workspace, run_agent, hermetic
):
    guard = write(workspace / "scripts" / "guard.sh", "#!/bin/sh\nexit 0\n")
    guard.chmod(0o755)
    user_settings = write(hermetic["home"] / "config" / "agent.yaml", "# mine\n")
    settings(
        workspace,
        "policy:\n  allow: [write_file, exec]\n"
        "hooks:\n  before: [{tool: exec, run: ./scripts/guard.sh}]\n",
    )
    with scripted_model(
        ("write_file", {"path": ".agents/config/tools.yaml", "content": "tools: {}\n"}),
        ("write_file", {"path": "scripts/guard.sh", "content": "#!/bin/sh\n"}),
        ("exec", {"command": f"echo 'policy: {{mode: full}}' > {user_settings}"}),
        ("exec", {"command": "chmod -x scripts/guard.sh"}),
        ("write_file", {"path": "sub/.agents/config/agent.yaml", "content": "x: 1\n"}),
        ("write_file", {"path": "src/ok.py", "content": "ok = 1\n"}),
    ) as server:
        ask(run_agent, server)
        results = tool_results(server)
    assert [r["ok"] for r in results] == [False, False, False, False, False, True]
    assert all("no terminal" in r["error"] or "terminal" in r["error"] for r in results[:5])
    assert not (workspace / ".agents" / "config" / "tools.yaml").exists()
    assert guard.read_text() == "#!/bin/sh\nexit 0\n" and guard.stat().st_mode & 0o111
    assert user_settings.read_text() == "# mine\n"
    assert not (workspace / "sub" / ".agents").exists()
    assert (workspace / "src" / "ok.py").exists()


def test_a_person_typing_a_command_may_change_the_settings(workspace, run_agent):
    command_skill(workspace)
    settings(workspace, "# settings\n")
    typed = run_agent("/t", "echo '# by hand' >> .agents/config/agent.yaml")
    assert typed.returncode == 0, typed.stderr
    assert (workspace / SETTINGS).read_text() == "# settings\n# by hand\n"


def test_at_a_terminal_a_protected_write_is_asked_without_always(workspace):
    target = settings(workspace, "policy:\n  mode: full\n")
    call = {"path": str(SETTINGS), "content": "policy:\n  mode: full\n# seen\n"}
    with scripted_model(("write_file", call), ("write_file", call)) as server:
        with Terminal(*provider_args(server), "ask", "--yes", "go", cwd=workspace) as term:
            shown = term.expect(PROTECTED_PROMPT).string
            assert "agent's own configuration" in shown and "[a]lways" not in shown
            term.type("a")  # not an answer here
            term.expect(r"^Please answer y, t or n\.$")
            term.expect(PROTECTED_PROMPT)
            term.type("y")
            term.expect(PROTECTED_PROMPT)  # a yes is for one call only
            term.type("n")
            assert term.wait() == 0
        first, second = tool_results(server)
    assert first["ok"] is True and second["ok"] is False
    assert target.read_text().endswith("# seen\n")


# -- 5. "always" saves the narrowest rule ----------------------------------------------


def test_always_saves_a_rule_anchored_at_the_workspace_root(workspace):
    (workspace / "sub").mkdir()
    script = [
        write_call("1", "agent.yaml"),
        {"text": "one"},
        write_call("2", "agent.yaml"),
        {"text": "two"},
        write_call("3", "sub/agent.yaml"),
        {"text": "three"},
    ]
    with (
        ModelServer(script) as server,
        Terminal(*provider_args(server), cwd=workspace) as term,
    ):
        term.expect(rf"^{SESSION_PROMPT}$")
        term.type("write it")
        term.expect(r"\[a\]lways: $")
        term.type("a")
        term.expect(
            r"added allow rule `write_file\(\./agent\.yaml\)` to \.agents/config/agent\.yaml"
        )
        term.expect(r"^one$")
        term.expect(rf"^{SESSION_PROMPT}$")
        term.type("again")
        term.expect(r"^two$")
        term.expect(rf"^{SESSION_PROMPT}$")
        term.type("deeper")
        term.expect(r"\[a\]lways: $")  # sub/agent.yaml is not covered: asked again
        term.type("n")
        term.expect(r"^three$")
        term.expect(rf"^{SESSION_PROMPT}$")
        term.type("/exit")
        assert term.wait() == 0
    saved = yaml.safe_load((workspace / SETTINGS).read_text())
    assert saved == {"policy": {"allow": ["write_file(./agent.yaml)"]}}
    assert (workspace / "agent.yaml").read_text() == "2"
    assert not (workspace / "sub" / "agent.yaml").exists()


def test_a_saved_anchored_rule_does_not_cover_the_settings_file(workspace, run_agent):
    # An old unanchored rule would match .agents/config/agent.yaml; the guard still asks.
    settings(
        workspace, "policy:\n  allow: ['write_file(./agent.yaml)', 'write_file(agent.yaml)']\n"
    )
    with scripted_model(
        ("write_file", {"path": "agent.yaml", "content": "root"}),
        ("write_file", {"path": "deep/agent.yaml", "content": "deep"}),
        ("write_file", {"path": str(SETTINGS), "content": "policy: {mode: full}\n"}),
    ) as server:
        ask(run_agent, server)
        results = tool_results(server)
    assert [r["ok"] for r in results] == [True, True, False]
    assert "agent's own configuration" in results[2]["error"]


# -- 7. allowed-tools pre-approve no more than they name -------------------------------


def review_skill(ws: Path, allowed: str) -> Path:
    return write(
        ws / ".agents" / "skills" / "review" / "SKILL.md",
        f"---\nname: review\ndescription: Review the diff\nallowed-tools: {allowed}\n---\n"
        "Review the changes.\n",
    )


def test_allowed_tools_prefix_rule_runs_git_diff_but_not_git_push(workspace, run_agent):
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    review_skill(workspace, "Bash(git diff:*) Read(src/**)")
    with scripted_model(
        ("exec", {"command": "git diff"}),
        ("exec", {"command": "git diff --stat"}),
        ("exec", {"command": "git push origin main"}),
        ("exec", {"command": "git diff; echo pwned > pwned.txt"}),
        ("exec", {"command": "git diff > .agents/config/agent.yaml"}),
    ) as server:
        result = run_agent(*provider_args(server), "/review")
        results = tool_results(server)
    assert result.returncode == 0, result.stderr
    assert [r["ok"] for r in results] == [True, True, False, False, False]
    assert all(r["code"] == "DENIED" for r in results[2:])
    assert not (workspace / "pwned.txt").exists()
    assert not (workspace / SETTINGS).exists()


def test_check_warns_on_a_bare_bash_in_allowed_tools_at_its_line(workspace, run_agent):
    path = write(
        workspace / ".agents" / "skills" / "review" / "SKILL.md",
        "---\nname: review\ndescription: Review\nallowed-tools:\n  - Read\n  - Bash\n---\nBody\n",
    )
    result = run_agent("check")
    lines = [line for line in result.stdout.splitlines() + result.stderr.splitlines()]
    warning = [line for line in lines if "pre-approves every command" in line]
    assert len(warning) == 1, lines
    assert warning[0].startswith(f"{path}:6:5: warning: ")
    assert "Bash" in warning[0]


def test_the_bundled_commit_message_skill_names_only_git_read_commands(workspace, run_agent):
    result = run_agent("skills", "--json")
    skills = json.loads(result.stdout)
    skills = skills if isinstance(skills, list) else skills.get("skills", [])
    (skill,) = [s for s in skills if s["name"] == "commit-message"]
    rules = skill["allowed_tools"]
    assert "exec" not in rules and all(r.startswith(("exec(git ", "read_file")) for r in rules)
