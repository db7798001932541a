"""Hooks v2 through the real ``agent`` executable (issue 11, item 6).

Deny rules, then before hooks, then ask/allow: a hook may refuse, allow, ask
or rewrite a call, but never lift a deny rule; a broken hook blocks (fail
closed) unless ``on_error: warn``; ``session_start``, ``prompt`` and
``stop`` hooks see the session; ``run:`` as a list runs without a shell.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

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


def hook_script(ws: Path, name: str, body: str) -> Path:
    """An executable Python hook ``scripts/NAME``: ``call`` is the JSON it got on stdin."""
    script = write(
        ws / "scripts" / name,
        f"#!{sys.executable}\nimport json, sys\ncall = json.load(sys.stdin)\n{body}\n",
    )
    script.chmod(0o755)
    return script


def log_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


GUARD = """\
command = call["args"].get("command", "")
with open("seen.jsonl", "a") as log:
    log.write(json.dumps(call) + "\\n")
if command.startswith("rm "):
    print(json.dumps({"decision": "deny", "reason": "use trash instead"}))
elif command.startswith("touch "):
    print(json.dumps({"decision": "allow"}))
elif command == "deploy":
    print(json.dumps({"decision": "ask", "reason": "production"}))
elif command.startswith("echo "):
    print(json.dumps({"arguments": {"command": command + " > rewritten.txt"}}))
"""


def guarded(ws: Path, policy: str = "") -> None:
    hook_script(ws, "guard.py", GUARD)
    settings(ws, policy + "hooks:\n  before:\n    - {tool: exec, run: [./scripts/guard.py]}\n")


def test_a_hook_may_deny_allow_or_ask_for_a_models_call(workspace, run_agent):
    guarded(workspace)
    calls = [
        ("exec", {"command": "rm -rf build"}),
        ("exec", {"command": "touch allowed.txt"}),
        ("exec", {"command": "deploy"}),
        ("exec", {"command": "ls"}),
    ]
    with scripted_model(*calls) as server:
        result = ask(run_agent, server)
        denied, allowed, asked, plain = tool_results(server)
    assert result.returncode == 0, result.stderr
    assert denied["error"] == "use trash instead" and denied["blocked_by"] == "hook"
    # No question: the hook allowed it.
    assert allowed["ok"] and (workspace / "allowed.txt").exists()
    assert asked["error"] == (
        "exec needs approval: hook ./scripts/guard.py asks for it: production; "
        "no terminal to ask on; rerun with --yes"
    )
    assert "needs approval" in plain["error"]  # no say from the hook: the policy asks
    assert any("✗" in line and "use trash instead" in line for line in result.stderr.splitlines())
    assert [c["args"]["command"] for c in log_lines(workspace / "seen.jsonl")] == [
        "rm -rf build",
        "touch allowed.txt",
        "deploy",
        "ls",
    ]


def test_a_hooks_allow_never_lifts_a_deny_rule(workspace, run_agent):
    guarded(workspace, "policy:\n  deny: ['exec(touch *)']\n")
    with scripted_model(("exec", {"command": "touch allowed.txt"})) as server:
        ask(run_agent, server)
        (result,) = tool_results(server)
    assert result["error"] == "denied by policy rule `exec(touch *)` (touch allowed.txt)"
    assert not (workspace / "allowed.txt").exists()
    assert log_lines(workspace / "seen.jsonl") == []  # deny rules come before hooks


def test_a_hook_may_rewrite_the_arguments_which_meet_the_deny_rules_again(workspace, run_agent):
    guarded(workspace, "policy:\n  mode: full\n  deny: ['exec(*rewritten.txt*)']\n")
    with scripted_model(("exec", {"command": "echo hi"})) as server:
        ask(run_agent, server)
        (result,) = tool_results(server)
    assert result["error"].startswith("denied by policy rule `exec(*rewritten.txt*)`")
    assert not (workspace / "rewritten.txt").exists()
    guarded(workspace, "policy:\n  mode: full\n")
    with scripted_model(("exec", {"command": "echo hi"})) as server:
        ask(run_agent, server)
    assert (workspace / "rewritten.txt").read_text() == "hi\n"


def test_a_typed_command_meets_the_hooks_deny_and_yes_answers_its_ask(workspace, run_agent):
    guarded(workspace)
    command_skill(workspace)
    typed = run_agent("/t", "rm -rf build")
    assert typed.returncode == 126 and typed.stderr == "agent: /t: use trash instead\n"
    with scripted_model(("exec", {"command": "deploy"})) as server:
        ask(run_agent, server, "--yes")
        (result,) = tool_results(server)
    assert result["exit_code"] == 127  # asked, answered by --yes, ran: no such program


def test_a_failing_hook_blocks_the_call_unless_on_error_warn(workspace, run_agent):
    command_skill(workspace)
    settings(workspace, "hooks:\n  before:\n    - {run: 'echo broken >&2; exit 1'}\n")
    blocked = run_agent("/t", "touch made")
    assert blocked.returncode == 126
    assert blocked.stderr == (
        "agent: /t: before hook `echo broken >&2; exit 1` for exec exited with status 1: broken; "
        "the call is blocked (a failing hook blocks; `on_error: warn` in its entry only warns)\n"
    )
    assert not (workspace / "made").exists()
    settings(
        workspace, "hooks:\n  before:\n    - {run: 'echo broken >&2; exit 1', on_error: warn}\n"
    )
    warned = run_agent("/t", "touch made")
    assert warned.returncode == 0
    assert "agent: warning: before hook `echo broken >&2; exit 1` for exec exited" in warned.stderr
    assert (workspace / "made").exists()


def test_a_hook_that_cannot_start_or_answers_nonsense_blocks(workspace, run_agent):
    command_skill(workspace)
    settings(workspace, "hooks:\n  before:\n    - {run: [./scripts/missing.py]}\n")
    missing = run_agent("/t", "touch made")
    assert missing.returncode == 126
    assert "could not start: command not found: ./scripts/missing.py" in missing.stderr
    hook_script(workspace, "odd.py", 'print(json.dumps({"decision": "perhaps"}))')
    settings(workspace, "hooks:\n  before:\n    - {run: [./scripts/odd.py]}\n")
    odd = run_agent("/t", "touch made")
    assert odd.returncode == 126 and 'answered decision "perhaps"' in odd.stderr
    assert not (workspace / "made").exists()


# Issue 28, item 3: a deny was ignored unless the output started with `{`.
WRAPPED_DENIALS = {
    "progress line first": 'guard: checking...\n{"decision": "deny", "reason": "no"}\n',
    "byte-order mark": '\ufeff{"decision": "deny", "reason": "no"}',
    "array": '[{"decision": "deny", "reason": "no"}]',
    "two objects": '{"decision": "deny", "reason": "no"}\n{"decision": "allow"}',
    "trailing text": '{"decision": "deny", "reason": "no"}\nguard: done',
    "key twice": '{"decision": "deny", "decision": "allow"}',
    "form feed before": '\f{"decision": "deny", "reason": "no"}',
    "plain text": "looks fine to me",
}


@pytest.mark.parametrize("stdout", WRAPPED_DENIALS.values(), ids=WRAPPED_DENIALS.keys())
def test_an_answer_that_is_not_exactly_one_object_blocks(workspace, run_agent, stdout):
    command_skill(workspace)
    hook_script(workspace, "guard.py", f"sys.stdout.buffer.write({stdout.encode()!r})")
    settings(
        workspace, "policy:\n  mode: full\nhooks:\n  before:\n    - {run: [./scripts/guard.py]}\n"
    )
    typed = run_agent("/t", "touch typed")
    assert typed.returncode == 126, typed.stderr
    assert "before hook `./scripts/guard.py` for exec printed an answer" in typed.stderr
    assert "the call is blocked" in typed.stderr
    with scripted_model(("exec", {"command": "touch modelled"})) as server:
        asked = ask(run_agent, server)
        (result,) = tool_results(server)
    assert asked.returncode == 0, asked.stderr
    assert not result["ok"] and "printed an answer" in result["error"]
    assert not (workspace / "typed").exists() and not (workspace / "modelled").exists()


def test_blanks_around_the_one_object_are_allowed(workspace, run_agent):
    command_skill(workspace)
    hook_script(
        workspace,
        "guard.py",
        'print("\\n  {\\"decision\\": \\"deny\\", \\"reason\\": \\"no\\"}\\n\\t")',
    )
    settings(workspace, "hooks:\n  before:\n    - {run: [./scripts/guard.py]}\n")
    denied = run_agent("/t", "touch typed")
    assert denied.returncode == 126 and denied.stderr == "agent: /t: no\n"
    hook_script(workspace, "guard.py", 'print("\\n\\n")')
    assert run_agent("/t", "touch typed").returncode == 0
    assert (workspace / "typed").exists()


def test_run_as_a_list_passes_words_without_a_shell(workspace, run_agent):
    command_skill(workspace)
    hook_script(workspace, "argv.py", "open('argv.json', 'w').write(json.dumps(sys.argv[1:]))")
    settings(
        workspace,
        "hooks:\n  before:\n    - {run: [./scripts/argv.py, '$HOME', 'a b; touch pwned']}\n",
    )
    assert run_agent("/t", "true").returncode == 0
    assert json.loads((workspace / "argv.json").read_text()) == ["$HOME", "a b; touch pwned"]
    assert not (workspace / "pwned").exists()


def test_session_prompt_and_stop_hooks_see_the_session(workspace, run_agent):
    events = workspace / "events.jsonl"
    for name in ("start.py", "stop.py"):
        hook_script(workspace, name, f"open({str(events)!r}, 'a').write(json.dumps(call) + '\\n')")
    hook_script(
        workspace,
        "context.py",
        f"open({str(events)!r}, 'a').write(json.dumps(call) + '\\n')\n"
        "print(json.dumps({'context': 'The build is red.'}))",
    )
    settings(
        workspace,
        "hooks:\n"
        "  session_start: [{run: [./scripts/start.py]}]\n"
        "  prompt: [{run: [./scripts/context.py]}]\n"
        "  stop: [{run: [./scripts/stop.py]}]\n",
    )
    with ModelServer(["first answer", "second answer"]) as server:
        first = run_agent(*provider_args(server), "ask", "fix it")
        second = run_agent(*provider_args(server), "ask", "--continue", "and now?")
        sent = [r["json"]["messages"] for r in server.requests]
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert sent[0][-1]["content"] == "fix it\n\nThe build is red."
    assert sent[1][-1]["content"] == "and now?\n\nThe build is red."
    seen = log_lines(events)
    session = seen[0]["session"]
    assert [(e["event"], e.get("source") or e.get("prompt") or e.get("answer")) for e in seen] == [
        ("session_start", "new"),
        ("prompt", "fix it"),
        ("stop", "first answer"),
        ("session_start", "resume"),
        ("prompt", "and now?"),
        ("stop", "second answer"),
    ]
    assert {e["session"] for e in seen} == {session}
    assert seen[0]["cwd"] == str(workspace) and seen[2]["reason"] == "answer"


def test_a_prompt_hook_may_refuse_the_prompt(workspace, run_agent):
    hook_script(
        workspace,
        "nosecrets.py",
        "if 'password' in call['prompt']:\n"
        "    print(json.dumps({'decision': 'deny', 'reason': 'no secrets in prompts'}))",
    )
    settings(workspace, "hooks:\n  prompt: [{run: [./scripts/nosecrets.py]}]\n")
    with ModelServer(["ok"]) as server:
        refused = run_agent(*provider_args(server), "ask", "my password is hunter2")
        assert refused.returncode == 126
        assert refused.stderr == "agent: no secrets in prompts\n"
        assert server.requests == []  # the model never saw it
        fine = run_agent(*provider_args(server), "ask", "hello")
    assert fine.returncode == 0 and fine.stdout.strip() == "ok"


def test_a_failing_session_start_hook_keeps_the_session_from_starting(workspace, run_agent):
    settings(workspace, "hooks:\n  session_start: [{run: 'exit 1'}]\n")
    with ModelServer(["ok"]) as server:
        result = run_agent(*provider_args(server), "ask", "hello")
        assert server.requests == []
    assert result.returncode == 126
    assert result.stderr == (
        "agent: session_start hook `exit 1` exited with status 1; the session does not start "
        "(a failing hook blocks; `on_error: warn` in its entry only warns)\n"
    )


def test_the_interactive_session_runs_session_start_once_and_prompt_per_line(workspace, run_agent):
    events = workspace / "events.jsonl"
    record = f"open({str(events)!r}, 'a').write(json.dumps(call) + '\\n')"
    hook_script(workspace, "record.py", record)
    settings(
        workspace,
        "hooks:\n  session_start: [{run: [./scripts/record.py]}]\n"
        "  prompt: [{run: [./scripts/record.py]}]\n",
    )
    with ModelServer(["one", "two", "three"]) as server:
        result = run_agent(*provider_args(server), input="hi\nagain\n/clear\nfresh\n")
    assert result.returncode == 0, result.stderr
    seen = [(e["event"], e.get("source") or e.get("prompt")) for e in log_lines(events)]
    assert seen == [
        ("session_start", "new"),
        ("prompt", "hi"),
        ("prompt", "again"),
        ("session_start", "new"),
        ("prompt", "fresh"),
    ]


def test_a_model_may_not_rewrite_a_hook_script_of_any_event(workspace, run_agent):
    script = hook_script(workspace, "start.py", "pass")
    settings(workspace, "policy:\n  mode: full\nhooks:\n  stop: [{run: [./scripts/start.py]}]\n")
    with scripted_model(
        ("write_file", {"path": "scripts/start.py", "content": "#!/bin/sh\n"})
    ) as server:
        ask(run_agent, server, "--yes")
        (result,) = tool_results(server)
    assert not result["ok"] and "agent's own configuration" in result["error"]
    assert "import json" in script.read_text()


# Red team 18: an answer with a key the guard's event does not read, or a null decision, ran the call.
NOT_UNDERSTOOD = {
    "capitalised key": ('{"Decision": "deny"}', 'answered the key "Decision"'),
    "null decision": ('{"decision": null}', 'answered "decision": null'),
    "misspelt key": ('{"desicion": "deny", "reason": "no"}', 'answered the key "desicion"'),
    "another agent's format": ('{"permissionDecision": "deny"}', "permissionDecision"),
}


@pytest.mark.parametrize(("stdout", "why"), NOT_UNDERSTOOD.values(), ids=NOT_UNDERSTOOD.keys())
def test_an_answer_that_is_not_understood_blocks(workspace, run_agent, stdout, why):
    command_skill(workspace)
    hook_script(workspace, "guard.py", f"sys.stdout.write({stdout!r})")
    settings(
        workspace, "policy:\n  mode: full\nhooks:\n  before:\n    - {run: [./scripts/guard.py]}\n"
    )
    with scripted_model(("exec", {"command": "touch modelled"})) as server:
        asked = ask(run_agent, server)
        (result,) = tool_results(server)
    assert asked.returncode == 0, asked.stderr
    assert not result["ok"] and why in result["error"] and "the call is blocked" in result["error"]
    assert not (workspace / "modelled").exists()
    typed = run_agent("/t", "touch typed")
    assert typed.returncode == 126 and not (workspace / "typed").exists()
