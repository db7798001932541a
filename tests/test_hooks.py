"""Hooks from agent.yaml: shell commands that see each call and may block it."""

from __future__ import annotations

import json
import time

import pytest

from mdagent.environment import child_env
from mdagent.errors import ConfigError
from mdagent.hooks import check_hook, hooks_from_settings, install_hooks
from mdagent.toolbox import Toolbox


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


def test_other_status_warns_and_the_call_goes_on(box, tmp_path, capsys, caplog):
    install(box, tmp_path, before=[{"run": "echo oops >&2; exit 1"}])
    result = box.run("exec", {"command": "ls"})
    assert result.ok and box.calls == [{"command": "ls"}]
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "agent: warning: before hook `echo oops >&2; exit 1` for exec exited with status 1: oops"
    ]
    assert "exited with status 1" in caplog.text


def test_a_hanging_hook_is_killed_at_its_timeout(box, tmp_path, capsys):
    install(box, tmp_path, before=[{"run": "sleep 30", "timeout": 1}])
    started = time.monotonic()
    result = box.run("exec", {"command": "ls"})
    assert time.monotonic() - started < 10
    assert result.ok
    assert "timed out after 1 s" in capsys.readouterr().err


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
    assert before == {"tool": "exec", "args": {"command": "ls"}}
    assert after == {"tool": "exec", "args": {"command": "ls"}, "result": {"stdout": "done"}}


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
    assert check_hook({"run": "x"}, "hooks.before[0]") == ("x", None, 30.0)
    assert check_hook({"run": "x", "tool": "*", "timeout": 2}, "w") == ("x", None, 2.0)
    assert check_hook({"run": "x", "tool": "bash"}, "w") == ("x", "bash", 30.0)
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
    ],
)
def test_bad_hook_settings(box, tmp_path, hooks):
    with pytest.raises(ConfigError):
        install_hooks(box, {"hooks": hooks}, workdir=str(tmp_path), env={})


def test_hooks_module_imports_nothing_heavy():
    import subprocess
    import sys

    code = (
        "import sys, mdagent.hooks; print(sorted(m for m in "
        "('tree_sitter', 'httpx', 'jsonschema', 'yaml', 'mdagent.process') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
