"""Hooks from agent.yaml: commands that see each call (and each turn) and may decide it."""

from __future__ import annotations

import json
import sys

import pytest

from mdagent.core.calls import HookDecision, ToolContext
from mdagent.core.errors import ConfigError
from mdagent.declarations.hookspec import check_hook
from mdagent.runtime.approvers import ScriptedApprover
from mdagent.safety.environment import child_env
from mdagent.safety.policy import Policy
from mdagent.tools.hooks import (
    HookBlocked,
    hooks_from_settings,
    install_hooks,
    session_hooks,
)
from mdagent.tools.toolbox import Toolbox


@pytest.fixture
def box():
    box = Toolbox()
    calls = []
    box.calls = calls
    box.add(
        "exec",
        description="run",
        params={"command": {"type": "string"}},
        handler=lambda a: calls.append(a) or {"stdout": "done"},
    )
    box.add("read_file", description="read", handler=lambda a: calls.append(a) or {"text": "x"})
    return box


def install(box, tmp_path, before=(), after=(), settings=None):
    settings = {**(settings or {}), "hooks": {"before": list(before), "after": list(after)}}
    return install_hooks(box, settings, workdir=str(tmp_path), env=child_env(settings))


def test_exit_2_blocks_with_stderr_as_the_reason(box, tmp_path):
    install(
        box, tmp_path, before=[{"tool": "exec", "run": "echo '  no pushing today ' >&2; exit 2"}]
    )
    result = box.run("exec", {"command": "git push"})
    assert not result.ok and result.error == "no pushing today"
    assert result.data["blocked_by"] == "hook"
    assert box.calls == []
    assert box.run("read_file", {}).ok  # the filter: other tools are not hooked


def test_exit_2_without_stderr_names_the_hook(box, tmp_path):
    install(box, tmp_path, before=[{"run": "exit 2"}])
    assert box.run("exec", {"command": "ls"}).error == "blocked by hook exit 2"


def test_a_failing_hook_blocks_the_call(box, tmp_path, capsys):
    install(box, tmp_path, before=[{"run": "echo oops >&2; exit 1"}])
    result = box.run("exec", {"command": "ls"})
    assert not result.ok and box.calls == []
    assert result.data["code"] == "DENIED" and result.data["blocked_by"] == "hook"
    assert result.error.startswith(
        "before hook `echo oops >&2; exit 1` for exec exited with status 1: oops; "
        "the call is blocked"
    )
    assert "on_error: warn" in result.error
    assert capsys.readouterr().err == ""  # the refusal says it all


def test_on_error_warn_keeps_the_old_warning_and_the_call_goes_on(box, tmp_path, capsys, caplog):
    install(box, tmp_path, before=[{"run": "echo oops >&2; exit 1", "on_error": "warn"}])
    result = box.run("exec", {"command": "ls"})
    assert result.ok and box.calls == [{"command": "ls"}]
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "agent: warning: before hook `echo oops >&2; exit 1` for exec exited with status 1: oops"
    ]
    assert "exited with status 1" in caplog.text


def test_a_hanging_hook_is_killed_at_its_timeout_and_blocks(box, tmp_path):
    late = tmp_path / "late"
    install(box, tmp_path, before=[{"run": f"sleep 30; touch {late}", "timeout": 1}])
    result = box.run("exec", {"command": "ls"})
    assert not result.ok and box.calls == []
    assert not late.exists()  # killed at its timeout, not waited for
    assert "timed out after 1 s; the call is blocked" in result.error


def test_a_hanging_hook_with_on_error_warn_lets_the_call_go_on(box, tmp_path, capsys):
    install(box, tmp_path, before=[{"run": "sleep 30", "timeout": 1, "on_error": "warn"}])
    assert box.run("exec", {"command": "ls"}).ok
    assert "timed out after 1 s" in capsys.readouterr().err


def test_a_hook_that_cannot_start_blocks(box, tmp_path):
    install(box, tmp_path, before=[{"run": ["./no-such-guard", "x"]}])
    result = box.run("exec", {"command": "ls"})
    assert not result.ok and box.calls == []
    assert "could not start: command not found: ./no-such-guard" in result.error


def test_hooks_get_the_call_as_json_in_the_workspace(box, tmp_path):
    log = tmp_path / "log.jsonl"
    install(
        box,
        tmp_path,
        before=[{"run": "cat >> log.jsonl; echo >> log.jsonl"}],
        after=[{"tool": "exec", "run": "cat >> log.jsonl; echo >> log.jsonl"}],
    )
    box.run("exec", {"command": "ls"})
    before, after = [json.loads(line) for line in log.read_text().splitlines()]
    assert before == {"event": "before", "tool": "exec", "args": {"command": "ls"}}
    assert after == {
        "event": "after",
        "tool": "exec",
        "args": {"command": "ls"},
        "result": {"stdout": "done"},
    }


def test_after_hooks_cannot_block(box, tmp_path, capsys):
    install(box, tmp_path, after=[{"run": "echo no >&2; exit 2"}])
    result = box.run("exec", {"command": "ls"})
    assert result.ok and result.data == {"stdout": "done"}
    assert "after hook" in capsys.readouterr().err


def test_the_hook_does_not_see_secrets(box, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "sk-123456")
    monkeypatch.setenv("HARMLESS_VAR", "visible")
    install(box, tmp_path, before=[{"run": "env > seen.txt"}])
    box.run("exec", {"command": "ls"})
    seen = (tmp_path / "seen.txt").read_text()
    assert "HARMLESS_VAR=visible" in seen
    assert "MY_API_KEY" not in seen and "sk-123456" not in seen


def test_env_none_means_the_scrubbed_environment(box, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "sk-123456")
    settings = {"hooks": {"before": [{"run": "env > seen.txt"}]}}
    install_hooks(box, settings, workdir=str(tmp_path), env=None)
    box.run("exec", {"command": "ls"})
    assert "MY_API_KEY" not in (tmp_path / "seen.txt").read_text()


def test_hooks_run_in_declared_order_and_match_real_names_by_glob(box, tmp_path):
    box.add("read", description="alias clash", handler=dict)
    install(
        box,
        tmp_path,
        before=[
            {"tool": "read_*", "run": "echo first >> order.txt"},
            {"run": "echo second >> order.txt"},
        ],
    )
    box.run("read_file", {})
    assert (tmp_path / "order.txt").read_text() == "first\nsecond\n"


@pytest.mark.parametrize("spelling", ["bash", "BASH", "Exec", "sh*"])
def test_a_filter_may_name_the_tool_by_alias_in_any_case(box, tmp_path, spelling):
    install(box, tmp_path, before=[{"tool": spelling, "run": "echo hooked >> seen.txt"}])
    box.run("exec", {"command": "ls"})
    box.run("read_file", {})
    assert (tmp_path / "seen.txt").read_text() == "hooked\n"  # once: exec, not read_file


def test_a_filter_may_use_a_declared_alias(box, tmp_path):
    box.add("wc", description="count", aliases=("count",), handler=lambda a: {"n": 1})
    install(box, tmp_path, after=[{"tool": "count", "run": "echo counted >> seen.txt"}])
    box.run("wc", {})
    box.run("exec", {"command": "ls"})
    assert (tmp_path / "seen.txt").read_text() == "counted\n"


def test_builtin_aliases_apply_without_a_toolbox(tmp_path):
    (hook,) = hooks_from_settings(
        {"hooks": {"before": [{"tool": "read", "run": "true"}]}}, workdir=str(tmp_path)
    )
    assert hook.applies_to("read_file") and not hook.applies_to("write_file")


def test_hooks_from_settings_scrubs_the_environment_itself(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "sk-123456")
    monkeypatch.setenv("HARMLESS_VAR", "visible")
    (hook,) = hooks_from_settings({"hooks": {"after": [{"run": "true"}]}}, workdir=str(tmp_path))
    assert "MY_API_KEY" not in hook.env and hook.env["HARMLESS_VAR"] == "visible"


def test_check_hook_normalises_an_entry():
    assert check_hook({"run": "x"}, "hooks.before[0]") == ("x", None, 30.0, "block")
    assert check_hook({"run": "x", "tool": "*", "timeout": 2}, "w") == ("x", None, 2.0, "block")
    assert check_hook({"run": "x", "tool": "bash"}, "w") == ("x", "bash", 30.0, "block")
    assert check_hook({"run": ["a", "b c"], "on_error": "warn"}, "w", "prompt") == (
        ("a", "b c"),
        None,
        30.0,
        "warn",
    )
    with pytest.raises(ConfigError, match=r"^hooks.after\[1\]: `run` is empty$"):
        check_hook({"run": " "}, "hooks.after[1]")


@pytest.mark.parametrize(
    "hooks",
    [
        {"before": [{"tool": "exec"}]},
        {"before": [{"run": "  "}]},
        {"before": [{"run": "x", "tool": "exec(git push*)"}]},
        {"before": [{"run": "x", "timeout": True}]},
        {"after": [{"run": "x", "timeout": 0}]},
        {"before": "echo"},
        {"before": [{"run": []}]},
        {"before": [{"run": ["ok", ""]}]},
        {"before": [{"run": "x", "on_error": "ignore"}]},
        {"after": [{"run": "x", "on_error": "warn"}]},
        {"stop": [{"run": "x", "on_error": "block"}]},
        {"prompt": [{"run": "x", "tool": "exec"}]},
    ],
)
def test_bad_hook_settings(tmp_path, hooks):
    with pytest.raises(ConfigError):
        hooks_from_settings({"hooks": hooks}, workdir=str(tmp_path), env={})


def test_hooks_module_imports_nothing_heavy():
    import subprocess
    import sys

    code = (
        "import sys, mdagent.tools.hooks; print(sorted(m for m in "
        "('tree_sitter', 'httpx', 'jsonschema', 'yaml', 'mdagent.tools.process') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- hooks v2: a before hook may decide ----------------------------------------------


def answer(payload: dict) -> str:
    """A hook command that prints ``payload`` as its JSON answer."""
    return f"echo '{json.dumps(payload)}'"


def printing(tmp_path, stdout: str) -> list[str]:
    """A hook (argv) that writes exactly ``stdout``, byte-order marks and all, as UTF-8."""
    script = tmp_path / "answer.py"
    script.write_text(f"import sys\nsys.stdout.buffer.write({stdout.encode()!r})\n")
    return [sys.executable, str(script)]


def model_box(tmp_path, policy=None, before=(), **policy_kw):
    """A toolbox with the real policy, as a model's calls meet it."""
    box = Toolbox(
        policy=Policy(
            {"policy": policy or {}},
            workdir=tmp_path,
            project_layer=tmp_path / ".agents",
            **policy_kw,
        )
    )
    calls = []
    box.calls = calls
    box.add(
        "exec",
        description="run",
        params={"command": {"type": "string"}},
        required=["command"],
        handler=lambda a: calls.append(a) or {"stdout": "done"},
        security="dangerous",
    )
    box.add(
        "write_file",
        description="write",
        params={"path": {"type": "string"}, "content": {"type": "string"}},
        handler=lambda a: calls.append(a) or {"ok": True},
    )
    install(box, tmp_path, before=before)
    return box


def as_model(box, tmp_path, tool, args, **kw):
    return box.run(tool, args, ToolContext(caller="model", workdir=str(tmp_path), **kw))


def test_a_deny_answer_refuses_with_its_reason(tmp_path):
    box = model_box(
        tmp_path,
        {"mode": "full"},
        [{"run": answer({"decision": "deny", "reason": "not on Fridays"})}],
    )
    result = as_model(box, tmp_path, "exec", {"command": "ls"})
    assert not result.ok and result.error == "not on Fridays"
    assert result.data["blocked_by"] == "hook" and box.calls == []


def test_an_allow_answer_skips_the_question(tmp_path):
    box = model_box(tmp_path, {}, [{"run": answer({"decision": "allow"})}])
    result = as_model(box, tmp_path, "exec", {"command": "make"})
    assert result.ok and box.calls == [{"command": "make"}]
    plain = model_box(tmp_path, {})
    assert "needs approval" in as_model(plain, tmp_path, "exec", {"command": "make"}).error


def test_an_allow_answer_never_lifts_a_deny_rule(tmp_path):
    seen = tmp_path / "seen"
    box = model_box(
        tmp_path,
        {"deny": ["exec(rm *)"]},
        [{"run": f"cat > {seen}; " + answer({"decision": "allow"})}],
    )
    result = as_model(box, tmp_path, "exec", {"command": "rm -rf x"})
    assert not result.ok and "denied by policy rule `exec(rm *)`" in result.error
    assert not seen.exists()  # deny rules come first: the hook was not even asked


def test_an_allow_answer_does_not_lift_the_question_about_the_agents_configuration(tmp_path):
    (tmp_path / ".agents" / "config").mkdir(parents=True)
    box = model_box(tmp_path, {"mode": "full"}, [{"run": answer({"decision": "allow"})}])
    result = as_model(
        box, tmp_path, "write_file", {"path": ".agents/config/agent.yaml", "content": "x"}
    )
    assert not result.ok and "agent's own configuration" in result.error
    assert box.calls == []


def test_an_ask_answer_asks_even_in_full_mode(tmp_path):
    box = model_box(
        tmp_path, {"mode": "full"}, [{"run": answer({"decision": "ask", "reason": "big change"})}]
    )
    refused = as_model(box, tmp_path, "exec", {"command": "ls"})
    assert not refused.ok and box.calls == []
    assert refused.error == (
        "exec needs approval: hook "
        + answer({"decision": "ask", "reason": "big change"})
        + " asks for it: big change; no terminal to ask on; rerun with --yes"
    )
    assert refused.data["reason"] == "big change"
    assert as_model(box, tmp_path, "exec", {"command": "ls"}, approve_all=True).ok


def test_a_person_is_asked_what_a_hook_asks_without_always(tmp_path):
    asked = []

    def prompt(tool_name, args):
        asked.append((tool_name, args))
        return "yes"

    person = ScriptedApprover(lambda question: prompt(question.tool, question.args))
    box = model_box(
        tmp_path, {"mode": "full"}, [{"run": answer({"decision": "ask"})}], approver=person
    )
    assert as_model(box, tmp_path, "exec", {"command": "ls"}).ok
    assert asked == [("exec", {"command": "ls"})]


def test_ask_wins_over_allow_across_hooks(tmp_path):
    box = model_box(
        tmp_path,
        {},
        [{"run": answer({"decision": "ask"})}, {"run": answer({"decision": "allow"})}],
    )
    assert "needs approval: hook" in as_model(box, tmp_path, "exec", {"command": "ls"}).error


def test_new_arguments_are_used_validated_and_denied_again(tmp_path):
    rewrite = answer({"arguments": {"command": "ls -la"}})
    box = model_box(tmp_path, {"allow": ["exec(ls*)"]}, [{"run": rewrite}])
    assert as_model(box, tmp_path, "exec", {"command": "ls"}).ok
    assert box.calls == [{"command": "ls -la"}]
    invalid = model_box(
        tmp_path, {"mode": "full"}, [{"run": answer({"arguments": {"command": 5}})}]
    )
    result = as_model(invalid, tmp_path, "exec", {"command": "ls"})
    assert not result.ok and "gave invalid arguments: value at `/command`" in result.error
    sneaky = answer({"decision": "allow", "arguments": {"command": "rm -rf /"}})
    denied = model_box(tmp_path, {"mode": "full", "deny": ["exec(rm *)"]}, [{"run": sneaky}])
    result = as_model(denied, tmp_path, "exec", {"command": "ls"})
    assert not result.ok and "denied by policy rule `exec(rm *)`" in result.error
    assert invalid.calls == [] and denied.calls == []


def test_the_next_hook_sees_the_new_arguments(tmp_path):
    seen = tmp_path / "seen.json"
    box = model_box(
        tmp_path,
        {"mode": "full"},
        [{"run": answer({"arguments": {"command": "pwd"}})}, {"run": f"cat > {seen}"}],
    )
    as_model(box, tmp_path, "exec", {"command": "ls"})
    assert json.loads(seen.read_text())["args"] == {"command": "pwd"}


@pytest.mark.parametrize(
    ("stdout", "problem"),
    [
        ("{not json", "printed an answer that is not one JSON object"),
        ('{"decision": "maybe"}', 'answered decision "maybe"; expected "allow", "ask", "deny"'),
        ('{"arguments": [1]}', 'answered "arguments" that are not a JSON object'),
        ('{"reason": 3}', 'answered a "reason" that is not a string'),
    ],
)
def test_a_broken_answer_blocks(tmp_path, stdout, problem):
    box = model_box(tmp_path, {"mode": "full"}, [{"run": f"printf '%s' '{stdout}'"}])
    result = as_model(box, tmp_path, "exec", {"command": "ls"})
    assert not result.ok and problem in result.error and box.calls == []


@pytest.mark.parametrize(
    ("stdout", "problem"),
    [
        # Issue 28: each of these hid a deny; any output but one object blocks.
        ('guard: checking\n{"decision": "deny"}', "not one JSON object"),
        ('\ufeff{"decision": "deny"}', "byte-order mark"),
        ('[{"decision": "deny"}]', "not a JSON object"),
        ('{"decision": "deny"}\n{"decision": "allow"}', "Extra data"),
        ('{"decision": "deny"} ok', "Extra data"),
        ('{"decision": "deny", "decision": "allow"}', 'the key "decision" twice'),
        ("checking...\ndone", "not one JSON object"),
        ('\x0c{"decision": "allow"}', "not one JSON object"),
        ('\u00a0{"decision": "allow"}', "not one JSON object"),
        ('"deny"', "not a JSON object"),
    ],
)
def test_anything_but_one_json_object_blocks(tmp_path, stdout, problem):
    box = model_box(tmp_path, {"mode": "full"}, [{"run": printing(tmp_path, stdout)}])
    result = as_model(box, tmp_path, "exec", {"command": "ls"})
    assert not result.ok and problem in result.error and box.calls == []


@pytest.mark.parametrize("stdout", ["", "\n \n", ' \r\n\t{"decision": "allow"}\n\n', "{}"])
def test_nothing_or_one_object_with_blanks_around_it_is_an_answer(tmp_path, stdout):
    box = model_box(tmp_path, {"mode": "full"}, [{"run": printing(tmp_path, stdout)}])
    assert as_model(box, tmp_path, "exec", {"command": "ls"}).ok


def test_run_as_a_list_uses_no_shell(box, tmp_path):
    install(
        box,
        tmp_path,
        before=[{"run": ["sh", "-c", 'printf "%s|" "$@" > argv.txt', "hook", "$HOME", "a;b"]}],
    )
    box.run("exec", {"command": "ls"})
    assert (tmp_path / "argv.txt").read_text() == "$HOME|a;b|"


def test_a_python_hook_may_return_a_decision():
    box = Toolbox()
    box.add(
        "t", description="d", params={"n": {"type": "integer"}}, handler=lambda a: {"n": a["n"]}
    )
    box.before("t")(lambda args: HookDecision(arguments={"n": args["n"] + 1}, hook="inc"))
    assert box.run("t", {"n": 1}).data == {"n": 2}
    box.before()(lambda args, tool_name: HookDecision("deny", "no", hook="py"))
    assert box.run("t", {"n": 1}).error == "no"


def test_a_hook_ask_without_a_policy_refuses_a_model_but_not_a_person():
    box = Toolbox()
    box.add("t", description="d", handler=lambda a: {"ok": True})
    box.before()(lambda args, tool_name: HookDecision("ask", "sure?", hook="py"))
    assert box.run("t", {}, ToolContext(caller="person")).ok
    refused = box.run("t", {}, ToolContext(caller="model"))
    assert not refused.ok and "hook py asks for it: sure?" in refused.error


# -- session events -------------------------------------------------------------------


class FakeConversation:
    def __init__(self, messages=(), session_id="s1"):
        self.messages = list(messages)
        self.session_id = session_id
        self.started = False


def hooks_for(tmp_path, **events):
    return session_hooks({"hooks": events}, workdir=str(tmp_path), env=child_env({}))


def test_no_session_hooks_costs_nothing(tmp_path):
    assert hooks_for(tmp_path, before=[{"run": "true"}]) is None


def test_session_start_runs_once_per_conversation_and_may_refuse(tmp_path):
    log = tmp_path / "log.jsonl"
    hooks = hooks_for(tmp_path, session_start=[{"run": f"cat >> {log}; echo >> {log}"}])
    conversation = FakeConversation()
    message = {"role": "user", "content": "hi"}
    assert hooks.open_turn(conversation, message) == message
    hooks.open_turn(conversation, message)
    resumed = FakeConversation([message], session_id="s2")
    hooks.open_turn(resumed, message)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert events == [
        {"event": "session_start", "session": "s1", "source": "new", "cwd": str(tmp_path)},
        {"event": "session_start", "session": "s2", "source": "resume", "cwd": str(tmp_path)},
    ]
    refusing = hooks_for(
        tmp_path, session_start=[{"run": answer({"decision": "deny", "reason": "quota"})}]
    )
    with pytest.raises(HookBlocked, match="^quota$"):
        refusing.open_turn(FakeConversation(), message)


def test_a_prompt_hook_sees_the_prompt_and_may_extend_or_refuse_it(tmp_path):
    hooks = hooks_for(
        tmp_path,
        prompt=[
            {"run": "cat > seen.json; " + answer({"context": "Branch: main"})},
            {"run": answer({"context": "Be brief."})},
        ],
    )
    out = hooks.open_turn(FakeConversation(), {"role": "user", "content": "fix it"})
    assert out == {"role": "user", "content": "fix it\n\nBranch: main\n\nBe brief."}
    assert json.loads((tmp_path / "seen.json").read_text()) == {
        "event": "prompt",
        "session": "s1",
        "prompt": "fix it",
    }
    refusing = hooks_for(tmp_path, prompt=[{"run": "echo 'no secrets in prompts' >&2; exit 2"}])
    with pytest.raises(HookBlocked, match="^no secrets in prompts$") as caught:
        refusing.open_turn(FakeConversation(), {"role": "user", "content": "x"})
    assert caught.value.exit_code == 126


def test_a_failing_prompt_hook_blocks_unless_told_to_warn(tmp_path, capsys):
    failing = hooks_for(tmp_path, prompt=[{"run": "exit 3"}])
    with pytest.raises(
        HookBlocked, match="prompt hook `exit 3` exited with status 3; the prompt is not sent"
    ):
        failing.open_turn(FakeConversation(), {"role": "user", "content": "x"})
    warning = hooks_for(tmp_path, prompt=[{"run": "exit 3", "on_error": "warn"}])
    out = warning.open_turn(FakeConversation(), {"role": "user", "content": "x"})
    assert out["content"] == "x"
    assert "agent: warning: prompt hook `exit 3` exited with status 3" in capsys.readouterr().err


def test_stop_hooks_see_how_the_turn_ended_and_cannot_block(tmp_path, capsys):
    from mdagent.agent.loop import Outcome

    hooks = hooks_for(tmp_path, stop=[{"run": "cat > stop.json"}, {"run": "echo no >&2; exit 2"}])
    hooks.close_turn(Outcome(answer="done", steps=2, session="s1"))
    assert json.loads((tmp_path / "stop.json").read_text()) == {
        "event": "stop",
        "session": "s1",
        "answer": "done",
        "steps": 2,
        "reason": "answer",
    }
    assert "stop hooks cannot block" in capsys.readouterr().err


def test_a_hook_whose_trust_lapsed_is_not_run_and_blocks_whatever_on_error_says(box, tmp_path):
    # Red team 21: trust is checked again before each hook runs.
    marker = tmp_path / "ran"
    settings = {"hooks": {"before": [{"run": f"touch {marker}", "on_error": "warn"}]}}
    lapsed = ["trust in this folder lapsed during this run (scripts/guard.sh changed)"]
    install_hooks(
        box, settings, workdir=str(tmp_path), env=child_env(settings), trust_check=lambda: lapsed[0]
    )
    result = box.run("exec", {"command": "ls"})
    assert not result.ok and "not run: trust in this folder lapsed" in result.error
    assert "the call is blocked" in result.error and not marker.exists() and box.calls == []
    lapsed[0] = None  # trusted again: it runs
    assert box.run("exec", {"command": "ls"}).ok and marker.exists()


def test_a_session_hook_whose_trust_lapsed_is_not_run(tmp_path, capsys):
    marker = tmp_path / "ran"
    settings = {"hooks": {"stop": [{"run": f"touch {marker}"}], "prompt": [{"run": "true"}]}}
    hooks = session_hooks(
        settings, workdir=str(tmp_path), env=child_env(settings), trust_check=lambda: "lapsed"
    )
    hooks.stop("s", "answer", 1, "answer")
    assert not marker.exists() and "not run: lapsed" in capsys.readouterr().err
    with pytest.raises(HookBlocked, match="the prompt is not sent"):
        hooks.prompt("hi", "s")


@pytest.mark.parametrize(
    ("event", "answer"),
    [
        ("before", '{"Decision": "deny"}'),
        ("before", '{"decision": null}'),
        ("before", '{"decision": "allow", "context": "x"}'),  # prompt's key
        ("prompt", '{"arguments": {}}'),  # before's key
        ("session_start", '{"context": "x"}'),
    ],
)
def test_a_key_the_event_does_not_read_is_an_invalid_answer(tmp_path, event, answer):
    from mdagent.tools.hooks import CommandHook

    hook = CommandHook(
        when=event, run=tuple(printing(tmp_path, answer)), workdir=str(tmp_path), env=child_env({})
    )
    # A guard that answers what its event does not read blocks.
    with pytest.raises(HookBlocked, match=r' answered (the key "|"decision": null)'):
        hook.consult({"event": event})
