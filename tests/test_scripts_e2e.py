"""Scripts and CI drive ``agent ask``: stream-json, per-run limits and rules, modes, @files.

Every test runs the real ``agent`` executable against the scripted model
server on 127.0.0.1 (tests/model_server.py), or the fake provider.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import route_unavailable, write
from model_server import ModelServer


def settings(ws: Path, text: str) -> None:
    write(ws / ".agents" / "config" / "agent.yaml", text)


def ask(run_agent, server, *args, **kw):
    return run_agent("--provider", "openai", "--base-url", server.url, "ask", *args, **kw)


def events(stdout: str) -> list[dict]:
    """Every line of a stream-json run, parsed (each must be one JSON object)."""
    lines = stdout.splitlines()
    assert lines, "no output"
    return [json.loads(line) for line in lines]


def exec_call(command: str, id: str | None = None) -> dict:
    call = {"name": "exec", "arguments": {"command": command}}
    return {"tool_calls": [{**call, **({"id": id} if id else {})}]}


def tool_results(server) -> list[dict]:
    """Every tool result the model was sent, in order (the last request holds them all)."""
    last = server.requests[-1]["json"]["messages"]
    return [json.loads(m["content"]) for m in last if m.get("role") == "tool"]


def rule_files(*folders: Path) -> str:
    """The text of every agent.yaml under ``folders``: where a rule could have been written."""
    return "".join(p.read_text() for f in folders for p in f.rglob("*.yaml"))


# --- stream-json ----------------------------------------------------------------------


def test_stream_json_events_arrive_in_order(run_agent, server, workspace):
    settings(workspace, "policy: {mode: full}\n")
    server.add(
        {
            "tool_calls": [
                {"id": "c1", "name": "exec", "arguments": {"command": "echo one"}},
                {"id": "c2", "name": "glob", "arguments": {"pattern": "*.none"}},
            ]
        },
        {"text": "All done here.", "usage": {"input_tokens": 11, "output_tokens": 4}},
    )
    result = ask(run_agent, server, "--output-format", "stream-json", "go")
    assert result.returncode == 0, result.stderr
    got = events(result.stdout)
    kinds = [e["type"] for e in got]
    assert kinds[0] == "start" and kinds[-1] == "result" and kinds.count("result") == 1
    start = got[0]
    assert start["provider"] == "openai" and start["session"]
    assert start["workspace"] == str(workspace) and start["mode"] == "full"
    for call_id in ("c1", "c2"):
        call = kinds.index(
            "tool_call", next(i for i, e in enumerate(got) if e.get("id") == call_id)
        )
        done = next(
            i for i, e in enumerate(got) if e["type"] == "tool_result" and e["id"] == call_id
        )
        assert call < done < len(got) - 1
    first = next(e for e in got if e["type"] == "tool_result" and e["id"] == "c1")
    assert first["ok"] is True and first["exit_code"] == 0
    assert first["output"]["stdout"] == "one\n" and first["duration_s"] >= 0
    call = next(e for e in got if e["type"] == "tool_call" and e["id"] == "c1")
    assert call["name"] == "exec" and call["arguments"] == {"command": "echo one"}
    text = "".join(e["text"] for e in got if e["type"] == "text")
    assert text == "All done here."
    last_result = max(i for i, e in enumerate(got) if e["type"] == "tool_result")
    assert last_result < kinds.index("text")  # the answer follows the tools it used
    final = got[-1]
    assert final["ok"] is True and final["answer"] == "All done here."
    assert final["exit_status"] == 0 and final["stopped"] == "answered"
    assert final["steps"] == 2 and final["usage"]["output_tokens"] >= 4
    assert final["session"] == start["session"] and final["refused"] == 0


def test_stream_json_a_failing_provider_is_a_final_result(run_agent, server, workspace):
    settings(workspace, "model: {max_retries: 0}\n")
    server.add({"status": 500, "body": {"error": {"message": "the GPU caught fire"}}})
    result = ask(run_agent, server, "--output-format", "stream-json", "go")
    assert result.returncode == 1
    got = events(result.stdout)
    assert [e["type"] for e in got][0] == "start"
    assert [e["type"] for e in got].count("result") == 1 and got[-1]["type"] == "result"
    final = got[-1]
    assert final["ok"] is False and final["exit_status"] == 1 and final["answer"] is None
    assert final["error"]["code"] == "PROVIDER"
    assert "the GPU caught fire" in final["error"]["message"]
    assert final["session"] == got[0]["session"]


def test_stream_json_a_usage_error_before_the_run_is_one_result_line(run_agent, server):
    result = ask(run_agent, server, "--output-format", "stream-json", "--mode", "bold", "go")
    assert result.returncode == 2
    (final,) = events(result.stdout)
    assert final["type"] == "result" and final["ok"] is False and final["exit_status"] == 2
    assert final["error"]["code"] == "USAGE" and "--mode: 'bold'" in final["error"]["message"]


def test_stream_json_ask_events_say_how_a_question_was_answered(run_agent, server, workspace):
    server.add(exec_call("echo hi", "c1"), {"text": "ok"})
    approved = ask(run_agent, server, "--output-format", "stream-json", "--yes", "go")
    got = events(approved.stdout)
    (asked,) = [e for e in got if e["type"] == "ask"]
    assert asked == {
        "type": "ask",
        "id": "c1",
        "name": "exec",
        "decision": "approved",
        "by": "--yes",
    }
    assert [e["type"] for e in got].index("ask") < [e["type"] for e in got].index("tool_result")
    server.add(exec_call("echo hi", "c2"), {"text": "ok"})
    refused = ask(run_agent, server, "--output-format", "stream-json", "go")
    got = events(refused.stdout)
    (asked,) = [e for e in got if e["type"] == "ask"]
    assert asked["decision"] == "refused" and asked["by"] == "no terminal"
    (result,) = [e for e in got if e["type"] == "tool_result"]
    assert result["ok"] is False and result["code"] == "DENIED"
    assert got[-1]["refused"] == 1 and got[-1]["exit_status"] == 0


def test_a_prompt_skill_streams_json_as_a_global_option(run_agent, server, workspace):
    write(
        workspace / ".agents" / "skills" / "hello" / "SKILL.md",
        "---\nname: hello\ndescription: greet\n---\nSay hello to $ARGUMENTS.\n",
    )
    server.add({"text": "Hello, world."})
    result = run_agent(
        "--provider", "openai", "--base-url", server.url,
        "--output-format", "stream-json", "/hello", "world",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    got = events(result.stdout)
    assert got[0]["type"] == "start" and got[-1]["type"] == "result"
    assert got[-1]["answer"] == "Hello, world."
    assert "Say hello to world." in json.dumps(server.requests[0]["json"])


def test_output_format_json_is_the_json_object(run_agent, server):
    server.add({"text": "fine"})
    result = ask(run_agent, server, "--output-format", "json", "go")
    data = json.loads(result.stdout)
    assert data["answer"] == "fine" and data["exit_status"] == 0 and data["refused"] == 0


# --- limits and rules for one run -------------------------------------------------------


def test_max_steps_stops_a_model_that_never_stops_with_its_own_status(run_agent, workspace):
    forever = ModelServer(
        [{"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.x"}}]}], repeat=True
    )
    with forever as server:
        result = ask(run_agent, server, "--max-steps", "2", "loop")
        assert len(server.requests) == 2
    assert result.returncode == 3
    assert "stopped after 2 steps without a final answer; raise --max-steps" in result.stderr
    with ModelServer(
        [{"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.x"}}]}], repeat=True
    ) as server:
        streamed = ask(run_agent, server, "--max-steps", "2", "--output-format", "stream-json", "x")
    final = events(streamed.stdout)[-1]
    assert streamed.returncode == 3 and final["exit_status"] == 3
    assert final["stopped"] == "max_steps" and final["error"]["code"] == "MAX_STEPS"


def test_allow_runs_what_ask_mode_refuses_and_is_written_nowhere(run_agent, server, workspace):
    server.add(exec_call("touch made.txt"), {"text": "ok"})
    refused = ask(run_agent, server, "go")
    assert refused.returncode == 0 and not (workspace / "made.txt").exists()
    assert "exec needs approval" in refused.stderr
    server.add(exec_call("touch made.txt"), {"text": "ok"})
    allowed = ask(run_agent, server, "--allow", "exec(touch *)", "go")
    assert allowed.returncode == 0, allowed.stderr
    assert (workspace / "made.txt").exists()
    where = [workspace, Path(os.environ["AGENT_HOME"]), Path(os.environ["AGENT_STATE_DIR"])]
    assert "touch" not in rule_files(*where)  # --allow is for this run only


def test_deny_refuses_under_yes(run_agent, server, workspace):
    server.add(exec_call("touch made.txt"), {"text": "ok"})
    result = ask(run_agent, server, "--yes", "--deny", "exec(touch *)", "go")
    assert result.returncode == 0
    assert not (workspace / "made.txt").exists()
    (refused,) = tool_results(server)
    assert refused["code"] == "DENIED" and "exec(touch *)" in refused["error"]


def test_fail_on_refusal_exits_4_although_the_model_answered(run_agent, server, workspace):
    server.add(exec_call("touch made.txt"), {"text": "I could not, but here is my answer."})
    result = ask(run_agent, server, "--deny", "exec(touch *)", "--fail-on-refusal", "go")
    assert result.returncode == 4
    assert "I could not, but here is my answer." in result.stdout
    assert "the policy refused 1 tool call(s) (exec); exit status 4 (--fail-on-refusal)" in (
        result.stderr
    )
    server.add({"text": "nothing refused"})
    assert ask(run_agent, server, "--fail-on-refusal", "go").returncode == 0


def test_a_rule_the_policy_cannot_read_is_a_usage_error(run_agent, server):
    result = ask(run_agent, server, "--allow", "exec(git *", "go")
    assert result.returncode == 2 and result.stderr.startswith("agent: --allow:")
    assert server.requests == []


def test_system_prompt_replaces_and_append_adds(run_agent, server, workspace):
    write(workspace / "prompt.md", "You are a terse reviewer.\n")
    server.add({"text": "a"}, {"text": "b"})
    ask(
        run_agent,
        server,
        "--system-prompt",
        "@prompt.md",
        "--append-system-prompt",
        "Be kind.",
        "x",
    )
    system = server.requests[0]["json"]["messages"][0]
    assert system["role"] == "system"
    assert system["content"] == "You are a terse reviewer.\n\nBe kind.\n"
    ask(run_agent, server, "--append-system-prompt", "Answer in French.", "x")
    system = server.requests[1]["json"]["messages"][0]["content"]
    assert system.rstrip().endswith("Answer in French.") and "workspace" in system
    missing = ask(run_agent, server, "--system-prompt", "@nope.md", "x")
    assert missing.returncode == 2 and "--system-prompt: cannot read nope.md" in missing.stderr


def test_tools_offers_only_the_tools_named(run_agent, server):
    server.add({"text": "a"})
    result = ask(run_agent, server, "--tools", "read_file,bash", "x")
    assert result.returncode == 0, result.stderr
    offered = sorted(t["function"]["name"] for t in server.requests[0]["json"]["tools"])
    assert offered == ["exec", "read_file"]
    unknown = ask(run_agent, server, "--tools", "nosuch", "x")
    assert unknown.returncode == 2 and "--tools: no tool 'nosuch'" in unknown.stderr


# --- permission modes ---------------------------------------------------------------------


def _sandbox_here() -> bool:
    return any(route_unavailable(r) is None for r in ("bwrap", "direct", "landlock"))


WRITES = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "w.txt", "content": "x"}}]},
    exec_call("touch t.txt"),
    exec_call("python3 -c \"open('p.txt','w').write('x')\""),
    exec_call("cat notes.txt"),
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
]


@pytest.mark.skipif(not _sandbox_here(), reason="no sandbox on this machine")
def test_plan_changes_nothing_under_yes_and_full_mode_while_reads_work(
    run_agent, server, workspace, tmp_path
):
    settings(workspace, "policy: {mode: full}\n")
    write(workspace / "notes.txt", "plans are cheap\n")
    server.add(*WRITES, {"text": "planned"})
    env = {"TMPDIR": str(tmp_path)}
    result = ask(run_agent, server, "--mode", "plan", "--yes", "plan it", env=env)
    assert result.returncode == 0, result.stderr
    for name in ("w.txt", "t.txt", "p.txt"):
        assert not (workspace / name).exists(), name
    offered = {t["function"]["name"] for t in server.requests[0]["json"]["tools"]}
    assert "write_file" not in offered and "edit_file" not in offered and "exec" in offered
    wrote, touched, python, cat, read = tool_results(server)
    assert wrote["ok"] is False
    assert touched["ok"] is False and python["ok"] is False
    assert cat["ok"] is True and cat["stdout"] == "plans are cheap\n"
    assert read["ok"] is True and "plans are cheap" in read["output"]


@pytest.mark.skipif(not _sandbox_here(), reason="no sandbox on this machine")
def test_plan_puts_a_command_a_person_types_in_the_read_only_sandbox(
    run_agent, workspace, tmp_path
):
    result = run_agent("--mode", "plan", "/term", "touch x.txt", env={"TMPDIR": str(tmp_path)})
    assert result.returncode != 0
    assert not (workspace / "x.txt").exists()
    assert run_agent("/term", "touch x.txt").returncode == 0  # without plan it writes


def test_accept_edits_writes_files_and_still_asks_for_commands(run_agent, server, workspace):
    server.add(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "w.txt", "content": "x"}}]},
        exec_call("touch t.txt"),
        {"text": "ok"},
    )
    result = ask(run_agent, server, "--mode", "accept-edits", "go")
    assert result.returncode == 0, result.stderr
    assert (workspace / "w.txt").read_text() == "x"
    assert not (workspace / "t.txt").exists()
    wrote, touched = tool_results(server)
    assert wrote["ok"] is True and touched["code"] == "DENIED"


def test_accept_edits_never_lifts_a_deny_rule(run_agent, server, workspace):
    settings(workspace, "policy: {deny: ['write_file(secret/**)']}\n")
    server.add(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "secret/a", "content": "x"}}]},
        {"text": "ok"},
    )
    ask(run_agent, server, "--mode", "accept-edits", "go")
    assert not (workspace / "secret" / "a").exists()


def test_a_mode_that_is_not_one_is_a_usage_error(run_agent, server):
    result = ask(run_agent, server, "--mode", "yolo", "go")
    assert result.returncode == 2
    assert "--mode: 'yolo' is not one of ask, accept-edits, plan" in result.stderr


def test_config_show_says_the_mode_and_where_it_came_from(run_agent, workspace):
    shown = run_agent("--mode", "plan", "config", "show")
    assert "mode: plan (--mode)" in shown.stdout
    settings(workspace, "policy: {mode: accept-edits}\n")
    shown = run_agent("config", "show", "--json")
    assert json.loads(shown.stdout)["mode"] == {"mode": "accept-edits", "from": "project"}


# --- @path --------------------------------------------------------------------------------


def test_at_path_sends_a_workspace_file_and_not_one_outside(run_agent, server, workspace):
    write(workspace / "notes.txt", "the meeting moved to Tuesday\n")
    write(workspace.parent / "outside.txt", "a secret outside\n")
    server.add({"text": "summary"})
    result = ask(
        run_agent, server, "summarise @notes.txt and @../outside.txt, mail me@example.org @user"
    )
    assert result.returncode == 0, result.stderr
    sent = server.requests[0]["json"]["messages"][-1]["content"]
    assert "the meeting moved to Tuesday" in sent and "notes.txt" in sent
    assert "a secret outside" not in sent
    assert "me@example.org @user" in sent  # not paths: left as text
    lines = [line for line in result.stderr.splitlines() if "outside.txt" in line]
    assert lines == ["agent: @../outside.txt not sent: path escapes the workspace: ../outside.txt"]


def test_at_path_is_read_through_the_deny_rules(run_agent, server, workspace):
    settings(workspace, "policy: {deny: ['read_file(.env)']}\n")
    write(workspace / ".env", "TOKEN=abc\n")
    server.add({"text": "ok"})
    result = ask(run_agent, server, "look at @.env")
    assert "TOKEN=abc" not in json.dumps(server.requests[0]["json"])
    assert "agent: @.env not sent: denied by policy rule `read_file(.env)`" in result.stderr


def test_at_path_of_a_folder_sends_its_listing_and_stdin_prompts_too(run_agent, server, workspace):
    write(workspace / "src" / "app.py", "print(1)\n")
    server.add({"text": "ok"})
    ask(run_agent, server, input="what is in @src?\n")
    sent = server.requests[0]["json"]["messages"][-1]["content"]
    assert "Listing of the folder src" in sent and "app.py" in sent


def test_plan_fails_closed_where_the_sandbox_cannot_apply(workspace, tmp_path, monkeypatch, capsys):
    """No Landlock and no namespaces (simulated, so the CLI runs in this process): plan
    refuses every command rather than run it unconfined, whatever sandbox.required says."""
    import signal
    import tempfile

    from conftest import trust_as_is
    from mdagent.cli import cli
    from mdagent.core import notices
    from mdagent.safety import landlock, sandboxsettings

    monkeypatch.setenv("AGENT_SANDBOX", "landlock")
    monkeypatch.setattr(landlock, "probe", lambda: (0, "this kernel has no Landlock"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # A fresh run: its own private temp folder, each note told again.
    sandboxsettings.forget_private_tmpdir()
    notices.forget()
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP)}
    settings(workspace, "policy: {mode: full}\nsandbox: {required: false}\n")
    write(workspace / "notes.txt", "hi\n")
    trust_as_is(workspace)
    try:
        with ModelServer(
            [exec_call("touch t.txt"), exec_call("cat notes.txt"), {"text": "ok"}]
        ) as server:
            status = cli.main(
                [
                    "--provider",
                    "openai",
                    "--base-url",
                    server.url,
                    "--mode",
                    "plan",
                    "--yes",
                    "ask",
                    "go",
                ]
            )
            touched, read = tool_results(server)
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
        sandboxsettings.forget_private_tmpdir()
        notices.forget()
    capsys.readouterr()
    assert status == 0
    assert not (workspace / "t.txt").exists()
    for refused in (touched, read):
        assert refused["ok"] is False and refused["code"] == "DENIED"
        assert refused["error"].startswith("not run: sandbox.required is set but")


@pytest.mark.skipif(not _sandbox_here(), reason="no sandbox on this machine")
@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "untrusted"])
def test_plan_from_a_project_s_settings_holds_trusted_or_not(
    run_agent, server, workspace, tmp_path, trusted
):
    settings(workspace, "policy: {mode: plan}\nsandbox: {mode: 'off'}\n")
    server.add(exec_call("touch t.txt"), {"text": "ok"})
    result = ask(run_agent, server, "--yes", "go", env={"TMPDIR": str(tmp_path)}, trusted=trusted)
    assert result.returncode == 0, result.stderr
    assert not (workspace / "t.txt").exists()
    (touched,) = tool_results(server)
    assert touched["ok"] is False
    offered = {t["function"]["name"] for t in server.requests[0]["json"]["tools"]}
    assert "write_file" not in offered
    shown = run_agent("config", "show", trusted=trusted)
    assert "mode: plan (project)" in shown.stdout


def test_output_format_json_as_a_global_option_is_json_for_every_subcommand(run_agent, workspace):
    listing = run_agent("--output-format", "json", "check")
    assert listing.returncode == 0 and json.loads(listing.stdout) == []
    tested = run_agent("--output-format", "json", "test")  # the bundled tools' tests
    assert tested.returncode == 0, tested.stdout + tested.stderr
    outcomes = json.loads(tested.stdout)
    assert outcomes and all(t["passed"] is True for t in outcomes)


def test_stream_json_notes_are_notice_events_after_start(run_agent, server, workspace):
    settings(workspace, "policy: {mode: full}\n")  # ignored until trusted: a note says so
    server.add({"text": "ok"})
    result = ask(run_agent, server, "--output-format", "stream-json", "go", trusted=False)
    got = events(result.stdout)
    assert got[0]["type"] == "start" and got[-1]["type"] == "result"
    notices = [e["message"] for e in got if e["type"] == "notice"]
    assert any("this folder is not trusted" in n for n in notices), notices
    assert "this folder is not trusted" not in result.stderr


def test_stream_json_tool_output_is_redacted_as_the_session_keeps_it(run_agent, server, workspace):
    secret = "sk-live-0123456789abcdef"
    write(workspace / "leak.txt", f"token={secret}\n")
    server.add(exec_call("cat leak.txt", "c1"), {"text": "read it"})
    result = ask(
        run_agent, server, "--output-format", "stream-json", "--yes", "go",
        env={"DEPLOY_API_TOKEN": secret},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (done,) = [e for e in events(result.stdout) if e["type"] == "tool_result"]
    assert done["ok"] is True and secret not in result.stdout
    assert done["output"]["stdout"] == "token=[REDACTED]\n"
