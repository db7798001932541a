"""The exec built-in, and how the built-ins register themselves."""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import sys
import threading

import pytest

from conftest import agent_executable, gone_soon
from mdagent.core.calls import ToolContext
from mdagent.core.catalog import NAMES_AND_ALIASES as BUILTIN_NAMES
from mdagent.core.catalog import SPECS
from mdagent.tools.builtins import register_builtins
from mdagent.tools.toolbox import Toolbox


@pytest.fixture
def box():
    tb = Toolbox()
    register_builtins(tb)
    return tb


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    return root


def run(box, ws, settings=None, **kw):
    ctx_kw = {k: kw.pop(k) for k in ("output", "cancel", "env") if k in kw}
    ctx = ToolContext(workdir=str(ws), settings=settings or {}, **ctx_kw)
    return box.run("exec", kw, ctx)


# -- registration --------------------------------------------------------------


def test_every_builtin_is_registered_with_its_metadata(box):
    assert sorted(t.name for t in box) == sorted(SPECS)
    exec_tool = box.tool_for("bash")
    assert exec_tool.name == "exec"
    assert exec_tool.meta == {"category": "execution", "security": "dangerous", "tier": "essential"}
    assert box.tool_for("read").meta["security"] == "safe"
    assert {
        "exec",
        "bash",
        "sh",
        "shell",
        "execute",
        "read",
        "open",
        "write",
        "edit",
    } <= BUILTIN_NAMES
    names = [t["function"]["name"] for t in box.to_openai()]
    assert "bash" not in names and "exec" in names


def test_only_the_named_builtins_can_be_registered():
    tb = Toolbox()
    register_builtins(tb, ["read", "glob"])
    assert sorted(t.name for t in tb) == ["glob", "read_file"]
    with pytest.raises(KeyError):
        register_builtins(tb, ["nope"])


def test_importing_and_registering_stays_cheap():
    script = (
        "import sys\n"
        "from mdagent.tools.toolbox import Toolbox\n"
        "from mdagent.tools.builtins import register_builtins\n"
        "register_builtins(Toolbox())\n"
        "heavy = [m for m in ('httpx', 'mdagent.tools.builtins.web', 'mdagent.tools.builtins.search',"
        " 'mdagent.tools.process') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stderr


# -- exec ----------------------------------------------------------------------


def test_runs_in_the_workspace_and_reports_output(box, ws):
    result = run(box, ws, command="pwd; echo err >&2")
    assert result.ok
    data = result.to_dict()
    assert data["stdout"] == f"{ws}\n" and data["stderr"] == "err\n"
    assert data["exit_code"] == 0 and data["truncated"] is False
    assert isinstance(data["duration_ms"], int)
    assert "streamed" not in data


def test_an_alias_runs_the_same_tool(box, ws):
    assert (
        box.run("sh", {"command": "echo hi"}, ToolContext(workdir=str(ws))).data["stdout"] == "hi\n"
    )


def test_non_zero_exit_is_a_failure_that_keeps_the_output(box, ws):
    result = run(box, ws, command="echo partial; exit 3")
    assert not result.ok
    assert result.error == "exit status 3"
    assert result.data["stdout"] == "partial\n" and result.data["exit_code"] == 3


def test_timeout_kills_the_whole_group(box, ws):
    # The background job holds the pipe: waiting for it would bring "late".
    result = run(box, ws, command="(sleep 30; echo late) & echo $!; sleep 30", timeout=1)
    assert not result.ok and "late" not in result.data["stdout"]
    assert result.error == "timed out after 1 s"
    assert result.data["exit_code"] == 124 and result.data["timed_out"] is True
    assert gone_soon(int(result.data["stdout"].split()[0]))


def test_timeout_defaults_to_the_settings(box, ws):
    result = run(box, ws, {"exec": {"timeout": 0.5}}, command="sleep 10")
    assert result.data["exit_code"] == 124
    assert result.error == "timed out after 0.5 s"


def test_cancel_interrupts_with_130(box, ws):
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    result = run(box, ws, command="sleep 30", cancel=cancel)
    assert result.data["exit_code"] == 130 and result.error == "interrupted"


def test_secrets_never_reach_the_child(box, ws, monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "sk-secret")
    monkeypatch.setenv("HARMLESS", "visible")
    result = run(box, ws, command='echo "[${MY_API_KEY:-unset}] [$HARMLESS]"')
    assert result.data["stdout"] == "[unset] [visible]\n"


def test_policy_env_include_lets_one_through(box, ws, monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "sk-secret")
    monkeypatch.setenv("OTHER_TOKEN", "tok")
    settings = {"policy": {"env": {"include": ["MY_API_KEY"]}}}
    result = run(box, ws, settings, command='echo "$MY_API_KEY ${OTHER_TOKEN:-unset}"')
    assert result.data["stdout"] == "sk-secret unset\n"


def test_an_explicit_context_env_is_used_as_is(box, ws):
    env = {"PATH": os.environ["PATH"], "ONLY": "this"}
    result = run(box, ws, command='echo "$ONLY ${HOME:-nohome}"', env=env)
    assert result.data["stdout"] == "this nohome\n"


def test_output_streams_live_when_someone_watches(box, ws):
    out = io.StringIO()
    result = run(box, ws, command="echo one; echo two", output=out)
    assert out.getvalue() == "one\ntwo\n"
    assert result.data["streamed"] is True and result.data["stdout"] == "one\ntwo\n"


def test_output_is_capped_by_the_settings(box, ws):
    result = run(box, ws, {"exec": {"max_output": 200}}, command="seq 1 10000")
    assert result.data["truncated"] is True
    assert result.data["stdout"].startswith("1\n2\n") and result.data["stdout"].endswith("10000\n")
    assert "bytes omitted" in result.data["stdout"]


def test_cwd_is_confined_to_the_workspace(box, ws):
    assert run(box, ws, command="pwd", cwd="sub").data["stdout"] == f"{ws / 'sub'}\n"
    denied = run(box, ws, command="pwd", cwd="..")
    assert not denied.ok and denied.data["code"] == "DENIED"
    assert denied.error == "path escapes the workspace: .."
    missing = run(box, ws, command="pwd", cwd="nope")
    assert missing.error == "not a directory: nope"


def test_sh_is_used_when_bash_is_missing(box, ws, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "echo"):
        real = subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip()
        if real:
            (bin_dir / tool).symlink_to(real)
    result = run(box, ws, command="echo $0", env={"PATH": str(bin_dir)})
    assert result.ok, result.data
    assert result.data["stdout"] == "sh\n"


def test_a_shell_that_cannot_start_is_command_not_found(box, ws, tmp_path):
    empty = tmp_path / "empty-bin"  # neither bash nor sh on the child's PATH
    empty.mkdir()
    result = run(box, ws, command="echo hi", env={"PATH": str(empty)})
    assert not result.ok
    assert result.error == "command not found: sh" and result.data["exit_code"] == 127


def test_a_closed_stdout_stops_the_command_with_141(box, ws, tmp_path):
    class ClosingPipe(io.StringIO):
        def write(self, text):
            if self.getvalue():
                raise BrokenPipeError(32, "Broken pipe")
            return super().write(text)

    # Not stopped by the closed pipe, `yes` would run into its timeout (124).
    result = run(box, ws, command="yes", timeout=30, output=ClosingPipe())
    assert result.data["exit_code"] == 141 and result.error == "exit status 141"


def test_agent_piped_into_head_stops_the_command(workspace):
    # `agent /t yes | head -1`: the child is in its own session and never gets
    # SIGPIPE itself; without help it would run until the 120 s exec timeout.
    skill = workspace / ".agents" / "skills" / "t" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: t\ndescription: t\ncommand-dispatch: tool\ncommand-tool: exec\n"
        "command-arg-mode: raw\n---\nRuns exec.\n"
    )
    pidfile = workspace / "pid"
    command = shlex.quote(f"echo $$ > {pidfile}; exec yes")
    script = (
        f"{shlex.quote(agent_executable())} /t {command} 2>err.txt | head -1;"
        ' echo "status=${PIPESTATUS[0]}"'
    )
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=90,  # a hang guard, well below the 120 s exec timeout
        start_new_session=True,
    )
    assert done.stdout == "y\nstatus=141\n", done.stderr
    assert (workspace / "err.txt").read_text() == ""  # no "Exception ignored ... BrokenPipeError"
    assert gone_soon(int(pidfile.read_text()))
