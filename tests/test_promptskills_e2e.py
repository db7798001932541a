"""Prompt skills with the full toolkit (issue 16), through the real ``agent`` executable.

Each test runs ``agent /name`` (or ``agent ask``) against the local model
server (tests/model_server.py) and reads what the model was sent: live
context (``` !`cmd` ```), file includes (``@{path}``), named arguments, a
skill's own model and step limit, forked runs and ``disallowed-tools``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import ask, provider_args, scripted_model, settings, write
from model_server import ModelServer


def prompt_skill(ws: Path, name: str, body: str, extra: str = "") -> Path:
    return write(
        ws / ".agents" / "skills" / name / "SKILL.md",
        f"---\nname: {name}\ndescription: a prompt skill\n{extra}---\n{body}",
    )


def first_prompt(server) -> str:
    """The user message of the first request the model received."""
    messages = server.requests[0]["json"]["messages"]
    return next(m["content"] for m in messages if m["role"] == "user")


def slash(run_agent, server, *args: str, env=None):
    return run_agent(*provider_args(server), *args, env=env)


def sessions(state: str | None = None) -> list[dict]:
    from mdagent.store.store import Store

    with Store() as store:
        return store.sessions(limit=50)


# -- 1. live context ----------------------------------------------------------------


def test_the_model_receives_the_command_output_and_the_file(workspace, run_agent):
    write(workspace / "notes.txt", "NOTES-LINE-1\nNOTES-LINE-2\n")
    prompt_skill(workspace, "review", "Staged:\n!`echo STAGED-DIFF`\n\nNotes:\n@{notes.txt}\n")
    with ModelServer(["Looks fine."]) as server:
        result = slash(run_agent, server, "/review")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Looks fine.\n"
    prompt = first_prompt(server)
    assert "Staged:\nSTAGED-DIFF\n" in prompt
    assert "NOTES-LINE-1\nNOTES-LINE-2" in prompt
    assert "!`" not in prompt and "@{" not in prompt


def test_typed_in_a_subfolder_the_body_still_runs_at_the_workspace_root(workspace, run_agent):
    write(workspace / "notes.txt", "ROOT-NOTES\n")
    (workspace / "sub").mkdir()
    prompt_skill(workspace, "where", "Here: !`pwd`\n@{notes.txt}\n")
    with ModelServer(["ok"]) as server:
        result = run_agent(*provider_args(server), "/where", cwd=workspace / "sub")
    assert result.returncode == 0, result.stderr
    prompt = first_prompt(server)
    assert f"Here: {workspace.resolve()}\n" in prompt and "ROOT-NOTES" in prompt


def test_a_hostile_argument_stays_literal(workspace, run_agent, tmp_path):
    marker = tmp_path / "pwned"
    prompt_skill(workspace, "say", "Said: !`echo {0}`\n")
    hostile = f"$(touch {marker}); touch {marker} `touch {marker}`"
    with ModelServer(["ok"]) as server:
        result = slash(run_agent, server, "/say", hostile)
    assert result.returncode == 0, result.stderr
    assert f"Said: {hostile}" in first_prompt(server)
    assert not marker.exists()


def test_a_deny_rule_blocks_the_command_with_its_reason_in_the_prompt(workspace, run_agent):
    target = workspace / "precious.txt"
    write(target, "keep me\n")
    settings(
        workspace, "policy:\n  deny:\n    - rule: exec(rm *)\n      reason: never delete here\n"
    )
    prompt_skill(workspace, "clean", "Result: !`rm precious.txt`\n")
    with ModelServer(["ok"]) as server:
        result = slash(run_agent, server, "/clean")
    assert result.returncode == 0, result.stderr
    prompt = first_prompt(server)
    assert "`rm precious.txt` not run" in prompt and "never delete here" in prompt
    assert target.exists()


def test_a_failing_command_inserts_its_error_and_exit_status(workspace, run_agent):
    prompt_skill(workspace, "fail", "Out: !`echo partial; exit 3`\n")
    with ModelServer(["ok"]) as server:
        result = slash(run_agent, server, "/fail")
    assert result.returncode == 0, result.stderr
    prompt = first_prompt(server)
    assert "partial" in prompt and "exit status 3" in prompt


def test_shell_interpolation_false_leaves_the_command_unrun(workspace, run_agent, tmp_path):
    marker = tmp_path / "ran"
    settings(workspace, "skills:\n  shell_interpolation: false\n")
    prompt_skill(workspace, "plain-text", f"X !`touch {marker}` Y\n")
    with ModelServer(["ok"]) as server:
        result = slash(run_agent, server, "/plain-text")
    assert result.returncode == 0, result.stderr
    assert f"X !`touch {marker}` Y" in first_prompt(server)
    assert not marker.exists()


def test_a_user_layer_skill_without_a_terminal_asks_and_is_denied(workspace, run_agent, tmp_path):
    marker = tmp_path / "ran"
    write(
        Path(os.environ["AGENT_HOME"]) / "skills" / "mine" / "SKILL.md",
        f"---\nname: mine\ndescription: d\n---\nA !`touch {marker}` B\n",
    )
    with ModelServer(["ok"]) as server:
        result = slash(run_agent, server, "/mine")
    assert result.returncode == 0, result.stderr
    prompt = first_prompt(server)
    assert "not run" in prompt and "no terminal" in prompt
    assert not marker.exists()


def test_a_skill_the_model_loads_runs_its_commands_as_the_model(workspace, run_agent):
    # The model's calls meet ask rules: without a terminal to ask on, exec is refused.
    prompt_skill(workspace, "ctx", "Context: !`echo MODEL-CONTEXT`\n")
    with scripted_model(("skill", {"name": "ctx"})) as server:
        denied = ask(run_agent, server)
    assert denied.returncode == 0, denied.stderr
    result = json.loads(server.requests[-1]["json"]["messages"][-1]["content"])
    assert "`echo MODEL-CONTEXT` not run" in result["output"]
    with scripted_model(("skill", {"name": "ctx"})) as server:
        allowed = ask(run_agent, server, "--yes")
    assert allowed.returncode == 0, allowed.stderr
    result = json.loads(server.requests[-1]["json"]["messages"][-1]["content"])
    assert "Context: MODEL-CONTEXT" in result["output"]


# -- 2. file includes ---------------------------------------------------------------


def test_includes_a_skill_file_a_folder_listing_and_refuses_a_missing_one(workspace, run_agent):
    folder = workspace / ".agents" / "skills" / "inc"
    write(folder / "ref.md", "REFERENCE TEXT\n")
    write(workspace / "src" / "a.py", "")
    write(workspace / "src" / "ignored.log", "")
    write(workspace / ".gitignore", "*.log\n")
    prompt_skill(workspace, "inc", "R: @{${SKILL_DIR}/ref.md}\nL:\n@{src}\n")
    with ModelServer(["ok"]) as server:
        result = slash(run_agent, server, "/inc")
    assert result.returncode == 0, result.stderr
    prompt = first_prompt(server)
    assert "R: REFERENCE TEXT" in prompt and "a.py" in prompt and "ignored.log" not in prompt

    prompt_skill(workspace, "gone", "@{missing.txt}\n")
    with ModelServer(["never sent"]) as server:
        missing = slash(run_agent, server, "/gone")
    assert missing.returncode == 1 and not server.requests
    assert missing.stderr.strip().splitlines() == [
        "agent: /gone: @{missing.txt}: not found: missing.txt"
    ]


def test_an_include_outside_the_workspace_is_refused(workspace, run_agent, tmp_path):
    write(tmp_path / "secret.txt", "SECRET\n")
    prompt_skill(workspace, "leak", f"@{{{tmp_path / 'secret.txt'}}}\n")
    with ModelServer(["never sent"]) as server:
        result = slash(run_agent, server, "/leak")
    assert result.returncode == 126 and not server.requests
    assert "SECRET" not in result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# -- 3. named arguments -------------------------------------------------------------

NAMED = (
    "arguments:\n  - name: base\n    description: the branch to compare with\n"
    "    default: main\n  - name: path\n"
)


def test_named_arguments_by_option_position_and_default(workspace, run_agent):
    prompt_skill(workspace, "review", "Compare {path} against $base: !`echo base={base}`\n", NAMED)
    with ModelServer(["a", "b"]) as server:
        by_option = slash(run_agent, server, "/review", "--base", "dev", "src/x.py")
        by_default = slash(run_agent, server, "/review", "--path=lib")
    assert by_option.returncode == 0 and by_default.returncode == 0, by_default.stderr
    assert "Compare src/x.py against dev: base=dev" in first_prompt(server)
    second = server.requests[1]["json"]["messages"]
    assert "Compare lib against main: base=main" in second[-1]["content"]
    assert "ARGUMENTS:" not in first_prompt(server)


def test_a_missing_named_argument_is_a_usage_error_with_the_generated_usage(workspace, run_agent):
    prompt_skill(workspace, "review", "Review {path}\n", NAMED)
    with ModelServer([]) as server:
        result = slash(run_agent, server, "/review")
        helped = slash(run_agent, server, "/review", "--help")
    assert result.returncode == 2
    assert "missing argument: path" in result.stderr
    assert "usage: /review [base] <path>" in result.stderr
    assert "usage: /review [base] <path>" in helped.stdout


# -- 4. a model and a step limit of its own ------------------------------------------


def test_a_skill_picks_its_model_and_step_limit(workspace, run_agent):
    prompt_skill(workspace, "small", "go\n", "model: tiny-model\nmax_steps: 1\n")
    calls = [{"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]}] * 3
    with ModelServer(calls) as server:
        result = slash(run_agent, server, "/small")
    assert len(server.requests) == 1
    assert server.requests[0]["json"]["model"] == "tiny-model"
    assert result.returncode == 3 and "stopped after 1 steps" in result.stderr


# -- 5. forked runs -----------------------------------------------------------------


def test_a_forked_skill_typed_by_a_person_runs_in_a_linked_session(workspace, run_agent):
    prompt_skill(workspace, "research", "Find SECRET-METHOD in the code\n", "context: fork\n")
    with scripted_model(("glob", {"pattern": "*"}), answer="It is in a.py.") as server:
        result = slash(run_agent, server, "/research")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "It is in a.py.\n"
    found = {s["title"]: s for s in sessions()}
    parent, child = found["/research"], found["/research (forked)"]
    assert child["parent"] == parent["id"] and parent["parent"] is None
    from mdagent.store.store import Store

    with Store() as store:
        kept = store.messages(parent["id"])
    assert [m["role"] for m in kept] == ["user", "assistant"]
    assert kept[1]["content"] == "It is in a.py." and "SECRET-METHOD" not in json.dumps(kept)


def test_a_forked_skill_the_model_loads_returns_only_its_answer(workspace, run_agent):
    prompt_skill(workspace, "research", "Find SECRET-METHOD\n", "context: fork\n")
    script = [
        {"tool_calls": [{"name": "skill", "arguments": {"name": "research"}}]},
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},  # the fork's
        "FORK-ANSWER",  # the fork's final answer
        "parent done",
    ]
    with ModelServer(script) as server:
        result = ask(run_agent, server)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "parent done\n"
    fork_first = server.requests[1]["json"]["messages"]
    assert "SECRET-METHOD" in fork_first[-1]["content"]
    parent_last = json.dumps(server.requests[3]["json"]["messages"])
    assert "FORK-ANSWER" in parent_last and "SECRET-METHOD" not in parent_last
    assert '\\"files\\"' not in parent_last  # the fork's glob result stayed in the fork
    found = sessions()
    fork = next(s for s in found if s["parent"])
    assert fork["parent"] == next(s["id"] for s in found if not s["parent"])


# -- 6. disallowed-tools ------------------------------------------------------------


def test_disallowed_tools_removes_exec_from_the_tools_array(workspace, run_agent):
    prompt_skill(workspace, "safe", "look around\n", "disallowed-tools: Bash, fetch\n")
    with ModelServer(["ok", "ok"]) as server:
        result = slash(run_agent, server, "/safe")
        plain = ask(run_agent, server)
    assert result.returncode == 0 and plain.returncode == 0
    offered = [t["function"]["name"] for t in server.requests[0]["json"]["tools"]]
    assert "exec" not in offered and "fetch" not in offered and "read_file" in offered
    everything = [t["function"]["name"] for t in server.requests[1]["json"]["tools"]]
    assert "exec" in everything


def test_a_call_to_a_disallowed_tool_is_refused(workspace, run_agent, tmp_path):
    marker = tmp_path / "ran"
    prompt_skill(workspace, "safe", "go\n", "disallowed-tools: [exec]\nallowed-tools: [exec]\n")
    with scripted_model(("exec", {"command": f"touch {marker}"})) as server:
        result = slash(run_agent, server, "/safe")
    assert result.returncode == 0, result.stderr
    from conftest import tool_results

    assert "unknown tool: exec" in tool_results(server)[0]["error"]
    assert not marker.exists()


def test_the_interactive_session_honours_a_skills_model_and_fork(workspace, run_agent):
    prompt_skill(workspace, "small", "go\n", "model: tiny-model\n")
    prompt_skill(workspace, "research", "Find it\n", "context: fork\n")
    with ModelServer([{"text": "small done"}, {"text": "It is in a.py."}]) as server:
        result = run_agent(*provider_args(server), input="/small\n/research\n/exit\n")
    assert result.returncode == 0, result.stderr
    assert "small done" in result.stdout and "It is in a.py." in result.stdout
    assert server.requests[0]["json"]["model"] == "tiny-model"
    found = {s["title"]: s for s in sessions()}
    assert found["/research (forked)"]["parent"] == found["/research"]["id"]
