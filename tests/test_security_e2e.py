"""Safety through the real ``agent`` executable, where a person would see it (DESIGN §8)."""

import json
import subprocess
import sys

from conftest import (
    agent_executable,
    ask,
    command_skill,
    config,
    scripted_model,
    settings,
    start_agent,
    tool_results,
    write,
)


def test_secret_variable_never_reaches_exec_or_hook(workspace, run_agent):
    command_skill(workspace)
    hook_out = workspace / "hook-env.txt"
    settings(workspace, f"hooks:\n  before:\n    - {{tool: exec, run: 'env > {hook_out}'}}\n")
    env = {"MY_API_KEY": "sk-very-secret", "HARMLESS": "visible"}
    typed = run_agent("/t", "env", env=env)
    assert "HARMLESS=visible" in typed.stdout and "MY_API_KEY" not in typed.stdout
    hook_env = hook_out.read_text()
    assert "HARMLESS=visible" in hook_env and "MY_API_KEY" not in hook_env
    with scripted_model(("exec", {"command": "env"})) as server:
        ask(run_agent, server, "--yes", env=env)
        result = tool_results(server)[0]
    assert "HARMLESS=visible" in result["stdout"] and "sk-very-secret" not in result["stdout"]
    names = run_agent("config", "env", env=env)
    assert "HARMLESS" in names.stdout.split() and "MY_API_KEY" not in names.stdout
    assert "visible" not in names.stdout


def test_deny_rule_blocks_model_and_person(workspace, run_agent):
    command_skill(workspace)
    settings(workspace, "policy:\n  mode: full\n  deny: ['exec(rm *)']\n")
    victim = workspace / "victim.txt"
    victim.write_text("keep me")
    typed = run_agent("/t", f"rm {victim.name}")
    assert typed.returncode == 126 and victim.exists()
    with scripted_model(("exec", {"command": f"rm {victim.name}"})) as server:
        result = ask(run_agent, server, "--yes")
        denied = tool_results(server)[0]
    assert result.returncode == 0 and victim.exists()
    assert denied["ok"] is False and denied["code"] == "DENIED"


def test_compound_command_is_not_covered_by_a_prefix_allow_rule(workspace, run_agent):
    settings(workspace, "policy:\n  allow: ['exec(git status*)']\n")
    (workspace / "x").mkdir()
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    with scripted_model(
        ("exec", {"command": "git status && rm -rf x"}), ("exec", {"command": "git status --short"})
    ) as server:
        result = ask(run_agent, server)
        compound, plain = tool_results(server)
    assert result.returncode == 0
    assert compound["ok"] is False and compound["code"] == "DENIED" and (workspace / "x").is_dir()
    assert plain["ok"] is True


def test_model_file_tools_stay_in_the_workspace(workspace, run_agent, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    (workspace / "link").symlink_to(outside)
    calls = [("read_file", {"path": p}) for p in ("../outside.txt", str(outside), "link")]
    with scripted_model(*calls) as server:
        ask(run_agent, server, "--yes")
        results = tool_results(server)
    assert len(results) == 3
    for result in results:
        assert result["ok"] is False and "secret" not in json.dumps(result)


def test_hook_exit_2_blocks_with_its_reason(workspace, run_agent):
    command_skill(workspace)
    guard = write(workspace / "guard.sh", "#!/bin/sh\necho 'no deploys on Fridays' >&2\nexit 2\n")
    guard.chmod(0o755)
    settings(workspace, "hooks:\n  before:\n    - {tool: exec, run: ./guard.sh}\n")
    result = run_agent("/t", "echo should-not-run")
    assert result.returncode == 126
    assert "should-not-run" not in result.stdout
    assert "no deploys on Fridays" in result.stderr


def test_rate_limit_holds_across_processes(workspace, run_agent):
    config(
        workspace,
        "limited.yaml",
        "tools:\n  ping:\n    description: Ping\n    run: [echo, pong]\n    rate_limit: {max_calls: 2, window_ms: 60000}\n"
        "commands:\n  ping: {tool: ping}\n",
    )
    assert run_agent("/ping").stdout == "pong\n"
    assert run_agent("/ping").stdout == "pong\n"
    third = run_agent("--json", "/ping")
    data = json.loads(third.stdout)
    assert third.returncode == 1
    assert (
        data["code"] == "RATE_LIMITED" and data["retryable"] is True and data["retry_after_ms"] > 0
    )


# Runs a command and prints the peak RSS (KiB) of it and its descendants. A
# small wrapper is needed: a child's ru_maxrss includes the RSS it had before
# exec, which for a direct child of pytest is pytest's own.
PEAK_RSS = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
    "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def test_gigabyte_of_output_keeps_memory_flat(workspace):
    command_skill(workspace)
    for extra in ([], ["--json"]):
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                PEAK_RSS,
                agent_executable(),
                *extra,
                "/t",
                "head -c 1073741824 /dev/zero | tr '\\0' a",
            ],
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=120,
            start_new_session=True,
        )
        code, peak_kib = map(int, done.stdout.split())
        assert code == 0, done.stderr
        assert peak_kib < 100 * 1024, f"peak RSS {peak_kib} KiB with {extra}"


def test_concurrent_processes_lose_no_audit_row(workspace, run_agent):
    command_skill(workspace)
    procs = [
        start_agent(workspace, "/t", f"echo {i}", stdout=subprocess.DEVNULL) for i in range(20)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 20, errors
    rows = json.loads(run_agent("logs", "--json", "-n", "100").stdout)
    commands = sorted(r["args"]["command"] for r in rows if r["tool"] == "exec")
    assert commands == sorted(f"echo {i}" for i in range(20))


def test_audit_log_records_caller_and_redacts_secrets(workspace, run_agent):
    command_skill(workspace)
    run_agent("/t", "echo $MY_TOKEN sk-abcdef123456", env={"MY_TOKEN": "sk-abcdef123456"})
    rows = json.loads(run_agent("logs", "--json", "--tool", "exec").stdout)
    assert rows[0]["caller"] == "person"
    assert "sk-abcdef123456" not in json.dumps(rows)
    table = run_agent("logs", "-n", "1").stdout
    assert "person" in table and "exec" in table


def test_no_terminal_and_no_yes_denies_with_a_hint(workspace, run_agent):
    with scripted_model(("write_file", {"path": "a.txt", "content": "x"})) as server:
        result = ask(run_agent, server)
        denied = tool_results(server)[0]
    assert result.returncode == 0 and not (workspace / "a.txt").exists()
    assert denied["code"] == "DENIED" and "--yes" in denied["error"]


def test_a_refused_model_call_is_shown_to_the_person(workspace, run_agent):
    with scripted_model(("write_file", {"path": "a.txt", "content": "x"})) as server:
        result = ask(run_agent, server)
    assert "✗ write_file needs approval" in result.stderr and "--yes" in result.stderr
