"""The Landlock sandbox: real children, real writes, a real TCP server on 127.0.0.1.

These are the tests of the Landlock layer and of the route without
namespaces (``AGENT_SANDBOX=landlock``, set for every test here); the
namespace routes have tests/test_namespaces.py and
tests/test_sandbox_routes_e2e.py. Tests run as root on some machines, and
Landlock confines root too, so the "outside" target is a temporary folder
of the test, not a system path. The temp dir and cache dir are pointed at
folders of their own, because pytest's tmp_path is itself under the system
temp dir; the run's private temp folder is made afresh in each test's.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest
import yaml

from mdagent.core.errors import ConfigError
from mdagent.safety import landlock, sandbox, sandboxsettings
from mdagent.safety.sandbox import SandboxUnavailable, prepare
from mdagent.safety.sandboxsettings import SandboxSettings

REASON = landlock.landlock_reason()
needs_landlock = pytest.mark.skipif(bool(REASON), reason=f"no Landlock: {REASON}")
needs_network_rules = pytest.mark.skipif(
    landlock.abi_version() < 4, reason="Landlock network rules need ABI 4 (Linux 6.7)"
)
needs_scopes = pytest.mark.skipif(
    landlock.abi_version() < 6, reason="Landlock signal scoping needs ABI 6 (Linux 6.12)"
)


@pytest.fixture(autouse=True)
def landlock_route(monkeypatch):
    """The route without namespaces: Landlock alone."""
    monkeypatch.setenv("AGENT_SANDBOX", "landlock")


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """A workspace, an outside folder, the host's temp dir and the cache dir the sandbox allows."""
    made = {name: tmp_path / name for name in ("ws", "outside", "tmp", "cache")}
    for path in made.values():
        path.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(made["tmp"]))
    # A fresh run: its own private temp folder.
    sandboxsettings.forget_private_tmpdir()
    monkeypatch.setenv("TMPDIR", str(made["tmp"]))
    monkeypatch.setenv("XDG_CACHE_HOME", str(made["cache"]))
    yield made
    sandboxsettings.forget_private_tmpdir()  # not this test's folder for the next one


def py(code: str, box: sandbox.Sandbox, *args: str, **kw) -> subprocess.CompletedProcess:
    """Run ``python -c code ARGS`` in the sandbox, as a tool's child would be run."""
    return subprocess.run(
        box.command([sys.executable, "-c", code, *args]),
        preexec_fn=box.preexec_fn,
        pass_fds=box.pass_fds,
        env={**os.environ, **box.env},
        capture_output=True,
        text=True,
        timeout=30,
        **kw,
    )


def write(path) -> str:
    return f"open({str(path)!r}, 'w').write('x')"


@pytest.fixture
def tcp_server():
    """A listening socket on 127.0.0.1 (connections wait in its backlog); yields the port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


# --- confinement -------------------------------------------------------------


@needs_landlock
def test_write_outside_the_workspace_fails_and_leaves_no_file(dirs):
    with prepare(SandboxSettings(), dirs["ws"]) as box:
        result = py(write(dirs["outside"] / "x"), box)
    assert result.returncode != 0
    assert "PermissionError" in result.stderr and "Permission denied" in result.stderr
    assert not (dirs["outside"] / "x").exists()


@needs_landlock
def test_the_workspace_is_writable_files_and_folders(dirs):
    code = (
        "import os, shutil\n"
        "os.makedirs('a/b')\n"
        "open('a/b/f', 'w').write('hi')\n"
        "os.rename('a/b/f', 'g')\n"
        "os.truncate('g', 1)\n"
        "os.symlink('g', 'link')\n"
        "shutil.rmtree('a')\n"
    )
    with prepare(SandboxSettings(), dirs["ws"]) as box:
        result = py(code, box, cwd=dirs["ws"])
    assert result.returncode == 0, result.stderr
    assert (dirs["ws"] / "g").read_text() == "h"
    assert (dirs["ws"] / "link").is_symlink()
    assert not (dirs["ws"] / "a").exists()


@needs_landlock
def test_private_temp_dir_cache_dir_shm_and_devices_are_writable(dirs):
    code = (
        "import os, tempfile\n"
        "with tempfile.NamedTemporaryFile(dir='/dev/shm') as f: f.write(b'x')\n"
        "with tempfile.TemporaryDirectory() as d: open(d + '/f', 'w').write('x')\n"
        "open(os.path.join(os.environ['TMPDIR'], 'kept'), 'w').write('x')\n"
        f"os.makedirs({str(dirs['cache'] / 'pip' / 'http')!r})\n"
        "open('/dev/null', 'w').write('x')\n"
        "open('/dev/zero', 'rb').read(4)\n"
        "print(tempfile.gettempdir())\n"
    )
    with prepare(SandboxSettings(), dirs["ws"]) as box:
        result = py(code, box)
        host_tmp = py(write(dirs["tmp"] / "shared"), box)
    assert result.returncode == 0, result.stderr
    # $TMPDIR is a folder of this run's own inside the host's temp dir, which stays unwritable.
    private = sandboxsettings.private_tmpdir()
    assert result.stdout.strip() == str(private) and private.parent == dirs["tmp"].resolve()
    assert (private / "kept").read_text() == "x"
    assert host_tmp.returncode != 0 and "Permission denied" in host_tmp.stderr
    assert not (dirs["tmp"] / "shared").exists()
    assert (dirs["cache"] / "pip" / "http").is_dir()


def test_a_run_keeps_its_private_temp_folder_until_it_is_forgotten(dirs):
    first = sandboxsettings.private_tmpdir()
    assert sandboxsettings.private_tmpdir() == first and first.is_dir()
    assert first.parent == dirs["tmp"].resolve() and first.stat().st_mode & 0o777 == 0o700
    sandboxsettings.forget_private_tmpdir()  # a new run in this process: a folder of its own
    second = sandboxsettings.private_tmpdir()
    assert second != first and second.is_dir() and first.is_dir()  # the old one goes at exit


@needs_landlock
def test_a_background_grandchild_is_confined_too(dirs):
    done = dirs["ws"] / "done"
    script = (
        f"(sleep 0.2; if echo x > '{dirs['outside']}/f' 2>/dev/null; "
        f"then echo wrote > '{done}'; else echo denied > '{done}'; fi) &"
    )
    with prepare(SandboxSettings(), dirs["ws"]) as box:
        result = subprocess.run(["sh", "-c", script], preexec_fn=box.preexec_fn, timeout=10)
    assert result.returncode == 0
    deadline = time.monotonic() + 10
    while not done.exists() or not done.read_text():
        assert time.monotonic() < deadline, "the background job never reported"
        time.sleep(0.05)
    assert done.read_text() == "denied\n"
    assert not (dirs["outside"] / "f").exists()


@needs_landlock
def test_the_agent_itself_stays_unconfined(dirs):
    with prepare(SandboxSettings(mode="read-only"), dirs["ws"]) as box:
        assert py(write(dirs["outside"] / "x"), box).returncode != 0
        (dirs["outside"] / "mine").write_text("the parent may write anywhere")
    assert (dirs["outside"] / "mine").exists()


@needs_landlock
def test_read_only_mode_reads_the_workspace_but_writes_nothing(dirs):
    (dirs["ws"] / "src.py").write_text("print('hi')")
    with prepare(SandboxSettings(mode="read-only"), dirs["ws"]) as box:
        reading = py(f"print(open({str(dirs['ws'] / 'src.py')!r}).read())", box)
        writing = py(write(dirs["ws"] / "new"), box)
        temp = py(write(dirs["tmp"] / "new"), box)
        null = py("open('/dev/null', 'w').write('x')", box)
    assert reading.returncode == 0 and "print('hi')" in reading.stdout
    assert writing.returncode != 0 and "Permission denied" in writing.stderr
    assert temp.returncode != 0
    assert null.returncode == 0, null.stderr
    assert not (dirs["ws"] / "new").exists()


@needs_landlock
def test_writable_adds_folders_and_single_files(dirs):
    (dirs["outside"] / "open").mkdir()
    (dirs["outside"] / "one.txt").write_text("")
    settings = SandboxSettings(
        writable=(str(dirs["outside"] / "open"), "../outside/one.txt", "does/not/exist")
    )
    with prepare(settings, dirs["ws"]) as box:
        folder = py(write(dirs["outside"] / "open" / "f"), box)
        single = py(write(dirs["outside"] / "one.txt"), box)
        beside = py(write(dirs["outside"] / "two.txt"), box)
    assert folder.returncode == 0, folder.stderr
    assert single.returncode == 0, single.stderr
    assert beside.returncode != 0
    assert (dirs["outside"] / "one.txt").read_text() == "x"


@needs_landlock
def test_extra_writable_paths_from_the_caller(dirs):
    with prepare(SandboxSettings(), dirs["ws"], extra_writable=[dirs["outside"]]) as box:
        result = py(write(dirs["outside"] / "x"), box)
    assert result.returncode == 0, result.stderr


def test_mode_off_confines_nothing(dirs):
    with prepare(SandboxSettings(mode="off"), dirs["ws"]) as box:
        assert not box.active and box.preexec_fn is None and box.unavailable == ""
        result = py(write(dirs["outside"] / "x"), box)
    assert result.returncode == 0, result.stderr
    assert (dirs["outside"] / "x").exists()


@needs_landlock
@pytest.mark.parametrize("abi", [1, 2, 3, 4, 5, 6])
def test_older_abis_still_confine_writes(dirs, monkeypatch, abi):
    # A ruleset for an older ABI is valid on a newer kernel: this exercises
    # the rights and struct sizes each older kernel would be given.
    monkeypatch.setattr(landlock, "probe", lambda: (abi, ""))
    with prepare(SandboxSettings(), dirs["ws"]) as box:
        inside = py(write(dirs["ws"] / "x"), box)
        outside = py(write(dirs["outside"] / "x"), box)
    assert inside.returncode == 0, inside.stderr
    assert outside.returncode != 0
    assert not (dirs["outside"] / "x").exists()


# --- network -----------------------------------------------------------------

CONNECT = "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5)"
BIND = "import socket; socket.socket().bind(('127.0.0.1', 0))"


@needs_landlock
@pytest.mark.parametrize(
    "network",
    [pytest.param(False, marks=needs_network_rules, id="off"), pytest.param(True, id="on")],
)
def test_the_network_setting_decides_tcp_connect_and_bind(dirs, tcp_server, network):
    with prepare(SandboxSettings(network=network), dirs["ws"]) as box:
        connect = py(CONNECT, box, str(tcp_server))
        bind = py(BIND, box)
    for result in (connect, bind):
        if network:
            assert result.returncode == 0, result.stderr
        else:
            assert result.returncode != 0 and "PermissionError" in result.stderr


@needs_landlock
@needs_network_rules
@pytest.mark.parametrize("abi", [4, 5, 6])
def test_network_off_closes_tcp_from_abi_4_on(dirs, monkeypatch, tcp_server, abi):
    # Each ABI's ruleset (its size and rights) as that kernel would get it.
    monkeypatch.setattr(landlock, "probe", lambda: (abi, ""))
    with prepare(SandboxSettings(network=False), dirs["ws"]) as box:
        assert box.unavailable == "there are no namespaces here (AGENT_SANDBOX=landlock)"
        connect = py(CONNECT, box, str(tcp_server))
        bind = py(BIND, box)
    for result in (connect, bind):
        assert result.returncode != 0 and "PermissionError" in result.stderr


# --- signals, descriptors, threads ------------------------------------------


@needs_landlock
@needs_scopes
def test_children_cannot_signal_processes_outside_the_sandbox(dirs):
    code = (
        "import os, subprocess, sys\n"
        "own = subprocess.Popen(['sleep', '5'])\n"
        "os.kill(own.pid, 15); own.wait()\n"  # its own child: allowed
        "try:\n"
        "    os.kill(int(sys.argv[1]), 0)\n"
        "except PermissionError:\n"
        "    print('denied')\n"
    )
    with prepare(SandboxSettings(), dirs["ws"]) as box:
        result = py(code, box, str(os.getpid()))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "denied\n"


@needs_landlock
def test_the_ruleset_descriptor_stays_in_the_parent(dirs):
    box = prepare(SandboxSettings(), dirs["ws"])
    fd = box._fd
    fds = (
        "import os\n"
        "for n in os.listdir('/proc/self/fd'):\n"
        "    try: print(os.readlink('/proc/self/fd/' + n))\n"
        "    except FileNotFoundError: pass\n"  # the listing's own descriptor
    )
    result = py(fds, box)
    assert result.returncode == 0, result.stderr
    assert "landlock" not in result.stdout
    assert "landlock" in os.readlink(f"/proc/self/fd/{fd}")
    box.close()
    box.close()
    assert not box.active and box.preexec_fn is None
    with pytest.raises(OSError):
        os.fstat(fd)


@needs_landlock
def test_children_started_from_many_threads_are_all_confined(dirs):
    results: list[int] = []

    def start(n: int) -> None:
        code = f"{write(dirs['ws'] / str(n))}; {write(dirs['outside'] / str(n))}"
        results.append(py(code, box).returncode)

    with prepare(SandboxSettings(), dirs["ws"]) as box:
        threads = [threading.Thread(target=start, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert len(results) == 6 and all(code != 0 for code in results)
    assert sorted(p.name for p in dirs["ws"].iterdir()) == [str(n) for n in range(6)]
    assert list(dirs["outside"].iterdir()) == []


# --- availability ------------------------------------------------------------


def test_unavailable_landlock_gives_the_reason_and_an_unconfined_sandbox(dirs, monkeypatch):
    monkeypatch.setattr(landlock, "probe", lambda: (0, "this kernel has no Landlock"))
    assert sandbox.available() == "this kernel has no Landlock"
    assert sandbox.available(SandboxSettings(mode="off")) is None
    box = prepare(SandboxSettings(), dirs["ws"])
    assert not box.active and box.preexec_fn is None
    assert box.unavailable == "this kernel has no Landlock"
    note = sandbox.unavailable_note(box.unavailable)
    assert "this kernel has no Landlock" in note and "sandbox.required" in note


def test_required_sandbox_fails_closed_when_unavailable(dirs, monkeypatch):
    monkeypatch.setattr(landlock, "probe", lambda: (0, "this kernel has no Landlock"))
    with pytest.raises(SandboxUnavailable, match="sandbox.required is set but this kernel"):
        prepare(SandboxSettings(required=True), dirs["ws"])


def test_not_linux_is_a_reason(monkeypatch):
    landlock.probe.cache_clear()
    monkeypatch.setattr(sys, "platform", "darwin")
    try:
        assert sandbox.available() == "Landlock needs Linux; this is darwin"
    finally:
        monkeypatch.undo()
        landlock.probe.cache_clear()


@needs_landlock
def test_network_off_without_network_rules_keeps_the_file_rules(dirs, monkeypatch, tcp_server):
    monkeypatch.setattr(landlock, "probe", lambda: (3, ""))
    reason = sandbox.available(SandboxSettings(network=False))
    assert reason == (
        "there are no namespaces here (AGENT_SANDBOX=landlock); "
        "network: off needs Landlock ABI 4 (Linux 6.7); this kernel has ABI 3"
    )
    with pytest.raises(SandboxUnavailable):
        prepare(SandboxSettings(network=False, required=True), dirs["ws"])
    with prepare(SandboxSettings(network=False), dirs["ws"]) as box:
        assert box.active and box.unavailable == reason
        assert py(write(dirs["outside"] / "x"), box).returncode != 0


def test_handled_rights_follow_the_abi():
    assert landlock.handled_fs(1) == (1 << 13) - 1
    assert landlock.handled_fs(2) == (1 << 14) - 1
    assert landlock.handled_fs(4) == (1 << 15) - 1
    assert landlock.handled_fs(5) == landlock.handled_fs(7) == (1 << 16) - 1


# --- settings, notes ---------------------------------------------------------


def test_settings_defaults_and_yaml_booleans():
    assert SandboxSettings.from_mapping(None) == SandboxSettings(
        "workspace-write", True, (), "model", False
    )
    data = yaml.safe_load("mode: off\nnetwork: off\nwritable: [~/x]\napplies_to: all")
    settings = SandboxSettings.from_mapping(data)
    assert (settings.mode, settings.network, settings.writable) == ("off", False, ("~/x",))
    assert SandboxSettings.from_mapping({"network": "on", "required": True}).required


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"mode": "strict"}, "sandbox.mode: expected workspace-write, read-only or off"),
        ({"network": "maybe"}, "sandbox.network: expected on or off"),
        ({"writable": [1]}, "sandbox.writable: expected a list of paths"),
        ({"applies_to": "person"}, "sandbox.applies_to: expected model or all"),
        ({"required": "yes"}, "sandbox.required: expected true or false"),
        ({"mdoe": "off"}, "sandbox: unknown key 'mdoe'"),
        (["off"], "sandbox: expected a mapping"),
    ],
)
def test_settings_errors_are_one_line(data, message):
    with pytest.raises(ConfigError) as caught:
        SandboxSettings.from_mapping(data, "agent.yaml")
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith("agent.yaml: ")


def test_who_is_confined():
    assert SandboxSettings().applies("model")
    assert SandboxSettings().applies("another agent")  # anyone but a person: fail closed
    assert not SandboxSettings().applies("person")
    assert SandboxSettings(applies_to="all").applies("person")
    assert not SandboxSettings(mode="off", applies_to="all").applies("model")


def test_describe_says_what_is_allowed_and_what_widens_it(dirs):
    private = dirs["tmp"] / "agent-tmp-x"
    line = sandbox.describe(SandboxSettings(network=False), dirs["ws"], tmpdir=private)
    assert str(dirs["ws"]) in line and "/dev/null" in line
    private.mkdir()
    line = sandbox.describe(SandboxSettings(network=False), dirs["ws"], tmpdir=private)
    assert "$TMPDIR (private to this run)" in line and str(private) not in line
    assert "TCP connect and bind are denied" in line
    assert "sandbox.writable" in line and "sandbox.network: on" in line
    assert "\n" not in line
    read_only = sandbox.describe(SandboxSettings(mode="read-only"), dirs["ws"])
    assert str(dirs["ws"]) not in read_only and "sandbox.mode: workspace-write" in read_only


def test_describe_names_the_route_and_what_stays_read_only(dirs):
    names = (".agents", ".git/config", ".git/hooks", ".git/info", "scripts/guard.sh")
    binds = [str(dirs["ws"] / name) for name in names]
    line = sandbox.describe(SandboxSettings(network=False), dirs["ws"], route="bwrap", binds=binds)
    assert line.startswith("sandbox (workspace-write, namespaces via bwrap): ")
    assert (
        "(not .agents, .git/config, .git/hooks, .git/info, 1 more: the agent's configuration)"
        in (line)
    )
    assert "they have no network (loopback only)" in line and "TCP" not in line


@needs_landlock
def test_violation_note_only_for_denials_in_an_active_sandbox(dirs):
    with prepare(SandboxSettings(), dirs["ws"]) as box:
        result = py(write(dirs["outside"] / "x"), box)
        note = box.violation_note(result.stderr, result.returncode)
        assert "sandbox" in note and "sandbox.writable" in note
        assert box.violation_note("No such file or directory", 1) == ""
        assert box.violation_note("Permission denied", 0) == ""
    with prepare(SandboxSettings(mode="off"), dirs["ws"]) as off:
        assert off.violation_note("Permission denied", 1) == ""


@needs_landlock
def test_a_child_that_cannot_enter_the_sandbox_never_runs(dirs):
    # Not a ruleset: landlock_restrict_self fails in the child, so Popen
    # raises and the command does not run unconfined.
    not_a_ruleset = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    box = sandbox.Sandbox(SandboxSettings(), dirs["ws"], fd=not_a_ruleset, abi=7)
    with box, pytest.raises(subprocess.SubprocessError, match="preexec_fn"):
        py(write(dirs["outside"] / "x"), box)
    assert not (dirs["outside"] / "x").exists()


def test_the_dataclass_defaults_are_the_settings_defaults():
    from mdagent.core.defaults import DEFAULT_SETTINGS

    assert SandboxSettings.from_mapping(DEFAULT_SETTINGS["sandbox"]) == SandboxSettings()


@pytest.mark.parametrize(
    "data",
    [
        {"mode": "strict"},
        {"mode": True},
        {"network": "maybe"},
        {"writable": [1]},
        {"writable": [""]},
        {"applies_to": "person"},
        {"required": "yes"},
        {"mdoe": "off"},
        ["off"],
    ],
)
def test_the_settings_schema_refuses_what_the_runtime_refuses(data):
    # `agent check` judges agent.yaml by the schema, runs by from_mapping: they must agree.
    from mdagent.declarations.schemas import validator

    with pytest.raises(ConfigError):
        SandboxSettings.from_mapping(data)
    assert list(validator("settings").iter_errors({"sandbox": data}))


@pytest.mark.parametrize(
    "text",
    [
        "mode: off\nnetwork: off",
        "mode: read-only\nnetwork: on\nwritable: [~/x, build]\napplies_to: all\nrequired: true",
        "{}",
    ],
)
def test_the_settings_schema_accepts_what_the_runtime_accepts(text):
    from mdagent.declarations.schemas import validator

    data = yaml.safe_load(text)
    SandboxSettings.from_mapping(data)
    assert not list(validator("settings").iter_errors({"sandbox": data}))


def test_the_note_without_network_rules_says_the_file_rules_hold(monkeypatch):
    monkeypatch.setattr(landlock, "probe", lambda: (3, ""))
    note = sandbox.unavailable_note(sandbox.available(SandboxSettings(network=False)))
    assert note.startswith(
        "sandbox with Landlock alone: there are no namespaces here (AGENT_SANDBOX=landlock); "
        "network: off needs Landlock ABI 4"
    )
    assert "only the command parser guards the agent's configuration" in note
    assert "they can connect over TCP" in note


# --- the one path from a tool call to a process -------------------------------


def tool_run(dirs, code: str, *, caller: str = "model", **sandbox_settings):
    """``python -c code`` through :func:`run_tool_process`, as a tool call of ``caller``."""
    from mdagent.core.calls import ToolContext
    from mdagent.tools.process import run_tool_process

    settings = {"sandbox": sandbox_settings} if sandbox_settings else {}
    ctx = ToolContext(workdir=str(dirs["ws"]), caller=caller, settings=settings)
    return run_tool_process([sys.executable, "-c", code], ctx)


@pytest.fixture
def told(monkeypatch):
    """What run_tool_process told the person, this run."""
    from mdagent.core import notices

    said: list[str] = []
    notices.forget()  # a fresh run: each note may be told again
    previous = notices.show_with(lambda message, warning: said.append(message))
    yield said
    notices.show_with(previous)
    notices.forget()


@needs_landlock
def test_a_models_call_is_confined_and_a_persons_is_not(dirs, told):
    model = tool_run(dirs, write(dirs["outside"] / "model"))
    assert model["exit_code"] == 1 and "PermissionError" in model["stderr"]
    assert model["sandbox"].startswith("the command may have been stopped by mdagent's sandbox")
    assert not (dirs["outside"] / "model").exists()
    person = tool_run(dirs, write(dirs["outside"] / "person"), caller="person")
    assert person["exit_code"] == 0 and "sandbox" not in person
    everyone = tool_run(dirs, write(dirs["outside"] / "all"), caller="person", applies_to="all")
    assert everyone["exit_code"] == 1 and not (dirs["outside"] / "all").exists()
    # Once each: the route has no namespaces, and the command may have met the sandbox.
    assert told == [sandbox.unavailable_note(sandbox.available()), model["sandbox"]]


@needs_landlock
def test_a_failure_that_is_no_denial_gets_no_note(dirs, told):
    result = tool_run(dirs, "import sys; sys.exit('no such thing')")
    assert result["exit_code"] == 1 and "sandbox" not in result
    assert told == [sandbox.unavailable_note(sandbox.available())]  # only the route's


def test_required_without_landlock_runs_nothing(dirs, monkeypatch, told):
    monkeypatch.setattr(landlock, "probe", lambda: (0, "this kernel has no Landlock"))
    result = tool_run(dirs, write(dirs["outside"] / "x"), required=True)
    assert result == {
        "error": "not run: sandbox.required is set but this kernel has no Landlock",
        "code": "DENIED",
    }
    assert not (dirs["outside"] / "x").exists()
    assert told == []


def test_without_landlock_the_call_runs_and_the_person_is_told_once(dirs, monkeypatch, told):
    monkeypatch.setattr(landlock, "probe", lambda: (0, "this kernel has no Landlock"))
    for name in ("a", "b"):
        assert tool_run(dirs, write(dirs["outside"] / name))["exit_code"] == 0
    assert told == [sandbox.unavailable_note("this kernel has no Landlock")]
    assert tool_run(dirs, "pass", caller="person")["exit_code"] == 0
    assert len(told) == 1


def test_a_broken_sandbox_setting_runs_nothing(dirs, told):
    result = tool_run(dirs, write(dirs["outside"] / "x"), mode="strict")
    assert result["code"] == "DENIED"
    assert result["error"].startswith("not run: sandbox.mode: expected workspace-write")
    assert not (dirs["outside"] / "x").exists()


@needs_landlock
def test_a_call_whose_child_cannot_enter_the_sandbox_runs_nothing(dirs, monkeypatch, told):
    def bogus(settings, workspace, extra_writable=(), **route):
        not_a_ruleset = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        return sandbox.Sandbox(settings, workspace, fd=not_a_ruleset, abi=7)

    monkeypatch.setattr(sandbox, "prepare", bogus)
    result = tool_run(dirs, write(dirs["outside"] / "x"))
    assert result["code"] == "DENIED"
    assert result["error"].startswith("not run: the command could not enter the sandbox")
    assert not (dirs["outside"] / "x").exists()
    assert told == []


@needs_landlock
def test_policy_paths_are_writable_like_the_workspace(dirs, told):
    from mdagent.core.calls import ToolContext
    from mdagent.tools.process import run_tool_process

    settings = {"policy": {"paths": [str(dirs["outside"])]}}
    ctx = ToolContext(workdir=str(dirs["ws"]), caller="model", settings=settings)
    result = run_tool_process([sys.executable, "-c", write(dirs["outside"] / "x")], ctx)
    assert result["exit_code"] == 0, result
