"""The sandbox through the real ``agent``: a model's commands, a person's, hooks, settings.

Each test that needs a sandbox runs once per route (``route`` fixture:
bwrap, direct, landlock), skipped with the reason where the machine cannot
take it; tests/test_sandbox_routes_e2e.py has what only the namespace
routes hold. The agent runs with TMPDIR and XDG_CACHE_HOME pointed at
folders of their own: pytest's tmp_path lies under the system temp dir.
The fallback tests simulate a missing Landlock (and no namespaces) and run
everywhere, with the CLI in this process (a monkeypatch cannot reach the
real executable).
"""

from __future__ import annotations

import json
import signal
import socket
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import take_route, trust_as_is, write
from mdagent.core import notices
from mdagent.safety import landlock, sandboxsettings
from model_server import ModelServer


@pytest.fixture
def places(tmp_path, workspace):
    """A folder outside the workspace, and the agent's own temp and cache dirs."""
    made = {name: tmp_path / name for name in ("outside", "agent-tmp", "agent-cache")}
    for path in made.values():
        path.mkdir()
    env = {"TMPDIR": str(made["agent-tmp"]), "XDG_CACHE_HOME": str(made["agent-cache"])}
    return SimpleNamespace(outside=made["outside"], env=env, ws=workspace)


def settings(ws: Path, text: str) -> None:
    write(ws / ".agents" / "config" / "agent.yaml", text)


def term(ws: Path) -> None:
    """``/term``: a command skill that hands its text to ``exec``."""
    write(
        ws / ".agents" / "skills" / "term" / "SKILL.md",
        "---\nname: term\ndescription: run\ncommand-dispatch: tool\ncommand-tool: exec\n---\n",
    )


def model(*commands: str, answer: str = "done") -> ModelServer:
    """A model that runs each of ``commands`` with ``exec``, one per step."""
    script = [{"tool_calls": [{"name": "exec", "arguments": {"command": c}}]} for c in commands]
    return ModelServer([*script, {"text": answer}])


def tool_results(server: ModelServer) -> list[dict]:
    """Every tool result the model was sent, in order (the last request holds them all)."""
    last = server.requests[-1]["json"]["messages"]
    return [json.loads(m["content"]) for m in last if m.get("role") == "tool"]


def ask(run_agent, server, places, *extra):
    return run_agent(
        "--provider", "openai", "--base-url", server.url, "ask", *extra, "go", env=places.env
    )


def py(code: str) -> str:
    """A shell command running ``code`` with python3, as a model would write it."""
    return f'python3 -c "{code}"'


def write_code(path: Path) -> str:
    return f"open('{path}', 'w').write('x')"


def refused(result: dict, route: str) -> bool:
    """Whether a tool result is a write the sandbox refused, in the route's words: bwrap's
    read-only mounts say "Read-only file system", Landlock "Permission denied"."""
    words = "Read-only file system" if route == "bwrap" else "Permission denied"
    return result["ok"] is False and words in result["stderr"]


# --- a model's commands --------------------------------------------------------


def test_full_mode_and_yes_do_not_lift_the_sandbox(run_agent, places, route):
    settings(places.ws, "policy: {mode: full}\n")
    target = places.outside / "x"
    with model(py(write_code(target)), py(write_code(places.ws / "inside.txt"))) as server:
        result = ask(run_agent, server, places, "--yes")
        outside, inside = tool_results(server)
    assert result.returncode == 0, result.stderr
    assert not target.exists()
    assert refused(outside, route), outside
    assert "sandbox" in outside["sandbox"] and "sandbox.writable" in outside["sandbox"]
    assert str(places.ws) in outside["sandbox"]
    # The person is told too, once.
    assert result.stderr.count("may have been stopped by mdagent's sandbox") == 1
    assert inside["ok"] is True, inside
    assert (places.ws / "inside.txt").read_text() == "x"


def test_the_user_layer_and_the_audit_log_are_out_of_reach(run_agent, places, hermetic, route):
    # A script the model wrote earlier: the policy sees `python3 tamper.py`,
    # not the paths inside, yet the person's own layer and mdagent's record
    # of what the model did stay as they were.
    settings(places.ws, "policy: {mode: full}\n")
    user_settings = hermetic["home"] / "config" / "agent.yaml"
    database = hermetic["state"] / "mdagent.db"
    write(
        places.ws / "tamper.py",
        "import os\n"
        f"os.makedirs({str(user_settings.parent)!r}, exist_ok=True)\n"
        f"open({str(user_settings)!r}, 'w').write('sandbox: {{mode: off}}')\n",
    )
    write(places.ws / "scribble.py", f"open({str(database)!r}, 'ab').write(b'garbage')\n")
    with model("python3 tamper.py", "python3 scribble.py") as server:
        ask(run_agent, server, places)
        layer, audit = tool_results(server)
    assert refused(layer, route) and refused(audit, route), (layer, audit)
    assert not user_settings.exists()
    assert not database.read_bytes().endswith(b"garbage")
    assert run_agent("logs", env=places.env).returncode == 0


def test_a_background_grandchild_that_left_the_group_is_confined_too(
    run_agent, places, monkeypatch
):
    # Without namespaces: the grandchild starts a session of its own, so
    # stopping the command's process group does not reach it: it outlives
    # the call, and still cannot write outside. (In a namespace it ends with
    # the call: tests/test_sandbox_routes_e2e.py.)
    take_route("landlock", monkeypatch)
    done = places.ws / "done"
    script = f"sleep 0.3; if echo x > {places.outside}/f 2>/dev/null; then echo wrote; else echo denied; fi > {done}"
    spawn = (
        "import subprocess; subprocess.Popen(['sh', '-c', " + repr(script) + "], "
        "start_new_session=True, stdin=subprocess.DEVNULL, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"
    )
    settings(places.ws, "policy: {mode: full}\n")
    with model(py(spawn)) as server:
        result = ask(run_agent, server, places)
        (started,) = tool_results(server)
    assert result.returncode == 0 and started["ok"] is True, started
    deadline = time.monotonic() + 20
    while not done.exists() or not done.read_text():
        assert time.monotonic() < deadline, "the grandchild never reported"
        time.sleep(0.05)
    assert done.read_text() == "denied\n"
    assert not (places.outside / "f").exists()


@pytest.fixture
def tcp_port():
    """A listening socket on 127.0.0.1 (connections wait in its backlog); yields its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


@pytest.mark.parametrize("network", ["off", "on"])
def test_network_off_denies_a_models_connection(run_agent, places, tcp_port, network, route):
    if route == "landlock" and landlock.abi_version() < 4:
        pytest.skip("Landlock network rules need ABI 4 (Linux 6.7)")
    settings(places.ws, f"policy: {{mode: full}}\nsandbox: {{network: {network}}}\n")
    connect = f"import socket; socket.create_connection(('127.0.0.1', {tcp_port}), timeout=10)"
    with model(py(connect)) as server:
        result = ask(run_agent, server, places)
        (done,) = tool_results(server)
    assert result.returncode == 0, result.stderr
    if network == "on":
        assert done["ok"] is True, done
        return
    assert done["ok"] is False
    if route == "landlock":
        assert "PermissionError" in done["stderr"]
        assert "TCP connect and bind are denied" in done["sandbox"]
    else:  # its own empty network: nothing listens on its loopback
        assert "ConnectionRefusedError" in done["stderr"]
        assert "they have no network (loopback only)" in done["sandbox"]
    assert "sandbox.network: on" in done["sandbox"]


def test_mode_off_restores_unconfined_commands(run_agent, places, route):
    settings(places.ws, "policy: {mode: full}\nsandbox: {mode: off}\n")
    with model(py(write_code(places.outside / "x"))) as server:
        ask(run_agent, server, places)
        (done,) = tool_results(server)
    assert done["ok"] is True, done
    assert "sandbox" not in done
    assert (places.outside / "x").read_text() == "x"


def test_writable_widens_the_sandbox(run_agent, places, route):
    settings(places.ws, f"policy: {{mode: full}}\nsandbox: {{writable: ['{places.outside}']}}\n")
    with model(py(write_code(places.outside / "x"))) as server:
        ask(run_agent, server, places)
        (done,) = tool_results(server)
    assert done["ok"] is True, done
    assert (places.outside / "x").exists()


def test_read_only_mode_keeps_the_workspace_unchanged(run_agent, places, route):
    settings(places.ws, "policy: {mode: full}\nsandbox: {mode: read-only}\n")
    with model(py(write_code(places.ws / "new.txt")), "ls .agents") as server:
        ask(run_agent, server, places)
        written, listed = tool_results(server)
    assert written["ok"] is False and "sandbox.mode: workspace-write" in written["sandbox"]
    assert not (places.ws / "new.txt").exists()
    assert listed["ok"] is True and "config" in listed["stdout"]


# --- a person's commands, hooks ------------------------------------------------


def test_a_typed_command_is_unconfined_unless_applies_to_all(run_agent, places, route):
    term(places.ws)
    target = places.outside / "typed"
    typed = run_agent("/term", py(write_code(target)), env=places.env)
    assert typed.returncode == 0, typed.stderr
    assert target.read_text() == "x"

    target.unlink()
    settings(places.ws, "sandbox: {applies_to: all}\n")
    typed = run_agent("/term", py(write_code(target)), env=places.env)
    assert typed.returncode == 1
    assert ("Read-only file system" if route == "bwrap" else "Permission denied") in typed.stderr
    assert "agent: the command may have been stopped by mdagent's sandbox (workspace-write" in (
        typed.stderr
    )
    assert not target.exists()


def test_hooks_run_unconfined(run_agent, places, route):
    marker = places.outside / "hook-ran"
    settings(
        places.ws,
        f"policy: {{mode: full}}\nhooks:\n  before:\n    - {{tool: exec, run: 'touch {marker}'}}\n",
    )
    with model(py(write_code(places.outside / "x"))) as server:
        ask(run_agent, server, places)
        (done,) = tool_results(server)
    assert marker.exists()
    assert done["ok"] is False and not (places.outside / "x").exists()


# --- settings ------------------------------------------------------------------


def test_a_bad_sandbox_block_is_reported_and_stops_runs(run_agent, places):
    settings(places.ws, "policy: {mode: full}\nsandbox:\n  mode: strict\n  network: maybe\n")
    check = run_agent("check")
    assert check.returncode == 1
    lines = check.stdout.splitlines()
    assert any(".agents/config/agent.yaml:3:3: error: sandbox.mode:" in line for line in lines)
    assert any(".agents/config/agent.yaml:4:3: error: sandbox.network:" in line for line in lines)
    with model(py(write_code(places.outside / "x"))) as server:
        result = ask(run_agent, server, places)
        assert server.requests == []
    assert result.returncode == 2
    assert "sandbox.mode" in result.stderr and "Traceback" not in result.stderr
    assert not (places.outside / "x").exists()


def test_yaml_on_and_off_are_accepted(run_agent, places):
    settings(places.ws, "sandbox:\n  mode: off\n  network: off\n  applies_to: all\n")
    check = run_agent("check")
    assert check.returncode == 0, check.stdout


# --- where Landlock is missing (simulated, in this process) ----------------------


@pytest.fixture
def in_process(places, monkeypatch, capsys):
    """Run the CLI in this process, as if the kernel had no Landlock; returns a runner."""
    from mdagent.cli import cli

    monkeypatch.setenv("AGENT_SANDBOX", "landlock")  # no namespaces either
    monkeypatch.setattr(landlock, "probe", lambda: (0, "this kernel has no Landlock"))
    # The run's private temp folder, in this test's own temp dir.
    monkeypatch.setattr(tempfile, "tempdir", places.env["TMPDIR"])
    # A fresh run: its own private temp folder, and the note may be said again.
    sandboxsettings.forget_private_tmpdir()
    notices.forget()
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP)}

    def run(*argv: str) -> SimpleNamespace:
        trust_as_is(Path.cwd())  # the person's own project, as run_agent has it
        capsys.readouterr()
        status = cli.main(list(argv))
        captured = capsys.readouterr()
        return SimpleNamespace(returncode=status, stdout=captured.out, stderr=captured.err)

    try:
        yield run
    finally:
        for signum, handler in saved.items():  # cli.main installs SIGTERM/SIGHUP handlers
            signal.signal(signum, handler)
        sandboxsettings.forget_private_tmpdir()
        notices.forget()


def ask_here(run, server, *extra):
    return run("--provider", "openai", "--base-url", server.url, "ask", *extra, "go")


def test_without_landlock_model_commands_run_and_the_person_is_told_once(in_process, places):
    settings(places.ws, "policy: {mode: full}\n")
    with model("echo one", "echo two") as server:
        result = ask_here(in_process, server)
        one, two = tool_results(server)
    assert result.returncode == 0
    assert one["stdout"] == "one\n" and two["stdout"] == "two\n"
    note = (
        "agent: no sandbox for model commands: this kernel has no Landlock; "
        "they run with your user's rights (sandbox.required: true refuses them instead)"
    )
    assert result.stderr.count(note) == 1, result.stderr


def test_without_landlock_required_fails_closed(in_process, places):
    settings(places.ws, "policy: {mode: full}\nsandbox: {required: true}\n")
    target = places.outside / "x"
    with model(py(write_code(target))) as server:
        result = ask_here(in_process, server, "--yes")
        (refused,) = tool_results(server)
    assert result.returncode == 0
    assert refused["ok"] is False and refused["code"] == "DENIED"
    assert refused["error"] == ("not run: sandbox.required is set but this kernel has no Landlock")
    assert "not run: sandbox.required is set but this kernel has no Landlock" in result.stderr
    assert not target.exists()


def test_without_landlock_check_says_so(in_process, places):
    result = in_process("check")
    assert result.returncode == 0
    line = next(line for line in result.stdout.splitlines() if ": info: " in line)
    assert line.startswith(str(places.ws / ".agents" / "config" / "agent.yaml") + ":1:1: info: ")
    assert "no sandbox for model commands: this kernel has no Landlock" in line

    settings(places.ws, "sandbox: {required: true}\n")
    result = in_process("check", "--json")
    infos = [p for p in json.loads(result.stdout) if p["severity"] == "info"]
    assert [p["message"] for p in infos] == [
        "sandbox.required is set but this kernel has no Landlock: model commands will be refused"
    ]

    settings(places.ws, "sandbox: {mode: off}\n")
    assert ": info: " not in in_process("check").stdout


def test_without_landlock_typed_commands_say_nothing(in_process, places):
    term(places.ws)
    result = in_process("/term", "echo hi")
    assert result.returncode == 0 and result.stdout == "hi\n"
    assert result.stderr == ""
