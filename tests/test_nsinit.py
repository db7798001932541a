"""mdagent's own namespace helper (the direct route), run for real.

Each test starts ``nsinit.py`` the way the agent does (``python -I -S``,
its own session, output piped) and checks what the command inside could
do, what status came out and what was left behind. Skipped, with the
reason, where this machine cannot create the namespaces.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import gone_soon, none_running, processes_running, route_unavailable, write
from mdagent.safety import landlock, namespaces, sandbox
from mdagent.safety.namespaces import Route
from mdagent.safety.sandboxsettings import SandboxSettings

WHY = route_unavailable("direct")
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"no direct route here: {WHY}")


def helper(*argv: str, binds=(), network=True, ruleset=-1, **popen) -> subprocess.Popen:
    """Start ``argv`` through the helper, as the agent would; the caller waits."""
    line = namespaces.helper_command(list(argv), binds=binds, network=network, ruleset=ruleset)
    options = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True} | popen
    return subprocess.Popen(line, start_new_session=True, **options)


def run(*argv: str, **kw) -> subprocess.CompletedProcess:
    proc = helper(*argv, **kw)
    out, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def sh(script: str, **kw) -> subprocess.CompletedProcess:
    return run("sh", "-c", script, **kw)


def mark() -> str:
    return f"97.{random.randrange(10**6):06d}"


# --- statuses --------------------------------------------------------------------------


def test_the_commands_own_status_comes_out():
    assert sh("exit 3").returncode == 3
    done = sh("echo out; echo err >&2")
    assert (done.returncode, done.stdout, done.stderr) == (0, "out\n", "err\n")


def test_a_command_killed_by_a_signal_reports_128_plus_it():
    assert sh("kill -USR1 $$").returncode == 128 + signal.SIGUSR1


@pytest.mark.parametrize(
    ("program", "status", "said"),
    [
        ("no-such-program-x", 127, "No such file or directory"),
        ("/etc/passwd", 126, "Permission denied"),
    ],
)
def test_a_program_that_cannot_start_is_127_or_126(program, status, said):
    done = run(program)
    assert done.returncode == status
    assert done.stderr == f"cannot run {program}: {said}\n"


@pytest.mark.parametrize("started_as", ["module", "script"])
def test_a_setup_it_cannot_do_runs_nothing_with_125(tmp_path, started_as):
    marker = tmp_path / "ran"
    if started_as == "module":  # as the agent starts it
        start = namespaces.helper_command(["true"], binds=[], network=True)[:5]
    else:
        start = [sys.executable, "-I", "-S", str(namespaces.HELPER)]
    line = [*start, "--bogus", "--", "touch", str(marker)]
    done = subprocess.run(line, capture_output=True, text=True, timeout=30)
    assert done.returncode == 125
    assert done.stderr == "agent sandbox: unknown option '--bogus'\n"
    assert not marker.exists()
    usage = subprocess.run(start, capture_output=True, text=True, timeout=30)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: nsinit.py")


def test_a_helper_whose_agent_is_already_gone_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    line = namespaces.helper_command(["touch", str(marker)], binds=[], network=True)
    line[line.index("--parent") + 1] = "1"  # not its parent: as if the agent had died
    done = subprocess.run(line, capture_output=True, text=True, timeout=30)
    assert done.returncode == 125 and not marker.exists()
    assert done.stderr == "agent sandbox: the agent that started this command is gone\n"


# --- signals and what is left behind ----------------------------------------------------------


def test_sigterm_reaches_the_command_once_and_its_trap_decides_the_status(tmp_path):
    log = tmp_path / "log"
    script = f"trap 'echo trapped >> {log}; exit 9' TERM; echo up > {log}; sleep 60 & wait"
    proc = helper("sh", "-c", script)
    end = time.monotonic() + 20
    while not log.exists() and time.monotonic() < end:
        time.sleep(0.02)
    time.sleep(0.1)  # the trap is set before "up" is written; let wait begin
    os.killpg(proc.pid, signal.SIGTERM)  # what the agent does on a timeout
    proc.communicate(timeout=20)
    assert proc.returncode == 9
    assert log.read_text() == "up\ntrapped\n"


def test_escapes_end_with_the_command():
    m = mark()
    script = (
        f"setsid sleep {m}1 & nohup sleep {m}2 >/dev/null 2>&1 & (sleep {m}3 &); "
        "sleep 0.2; echo done"
    )
    done = sh(script)
    assert done.stdout == "done\n"
    for n in "123":
        assert none_running(f"sleep {m}{n}")


def test_killing_the_helper_ends_everything_inside():
    m = mark()
    proc = helper("sh", "-c", f"setsid sleep {m} & echo started; sleep 60")
    assert proc.stdout.readline() == "started\n"
    end = time.monotonic() + 20
    while not (found := processes_running(f"sleep {m}")) and time.monotonic() < end:
        time.sleep(0.02)
    (escaped,) = found
    os.killpg(proc.pid, signal.SIGKILL)  # what the agent does after the grace, or on Ctrl-C
    proc.communicate(timeout=20)  # the output closes: nothing inside holds it
    assert gone_soon(escaped)


# --- what the command finds inside --------------------------------------------------------


def test_it_sees_only_its_own_processes_and_has_no_privilege():
    done = sh(
        "echo $$ $PPID; ls /proc | grep -c '^[0-9]'; grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status"
    )
    first, count, *status = done.stdout.splitlines()
    assert first == "2 1"  # the command is PID 2, under the helper's init
    assert int(count) <= 4
    assert status == [
        "CapEff:\t0000000000000000",
        "CapBnd:\t0000000000000000",
        "NoNewPrivs:\t1",
    ]


def test_binds_are_read_only_and_stay_put(tmp_path):
    layer = write(tmp_path / ".agents" / "config" / "agent.yaml", "policy: {mode: ask}\n").parents[
        1
    ]
    script = (
        f"echo x >> {layer}/config/agent.yaml; "
        f"mv {layer} {tmp_path}/moved; umount {layer}; "
        f"mount -o remount,rw {layer}; echo y > {layer}/new; echo finished"
    )
    done = sh(script, binds=[str(layer)])
    assert done.stdout == "finished\n"
    assert done.stderr.count("Read-only file system") >= 2, done.stderr
    assert (layer / "config" / "agent.yaml").read_text() == "policy: {mode: ask}\n"
    assert not (layer / "new").exists() and not (tmp_path / "moved").exists()


def test_the_folders_above_a_bind_cannot_be_moved_away_from_it(tmp_path):
    hook = write(tmp_path / "scripts" / "ci" / "guard.sh", "#!/bin/sh\nexit 0\n")
    line = namespaces.helper_command(
        [
            "sh",
            "-c",
            "mv scripts s2; mv scripts/ci scripts/c2; echo x > scripts/ci/other; echo done",
        ],
        binds=[str(hook)],
        network=True,
        writable=[str(tmp_path)],
    )
    done = subprocess.run(line, cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert done.stdout == "done\n" and done.stderr.count("Device or resource busy") == 2
    assert hook.read_text() == "#!/bin/sh\nexit 0\n" and not (tmp_path / "s2").exists()
    assert (tmp_path / "scripts" / "ci" / "other").read_text() == "x\n"  # still writable


def test_network_off_leaves_only_its_own_loopback():
    code = "import socket; print(sorted(n for _, n in socket.if_nameindex()))"
    assert run(sys.executable, "-c", code, network=False).stdout == "['lo']\n"
    assert run(sys.executable, "-c", code, network=True).stdout != "['lo']\n"


def test_dev_shm_is_private(tmp_path):
    name = f"mdagent-test-{random.randrange(10**9)}"
    done = sh(f"echo x > /dev/shm/{name} && cat /dev/shm/{name}")
    assert done.stdout == "x\n", done.stderr
    assert not Path("/dev/shm", name).exists()


def test_the_landlock_ruleset_is_applied_last(tmp_path, monkeypatch):
    if landlock.abi_version() == 0:
        pytest.skip("no Landlock")
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    for folder in (ws, outside, tmp_path / "tmp"):
        folder.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    layer = write(ws / ".agents" / "x", "kept\n").parent
    box = sandbox.prepare(
        SandboxSettings(), ws, route=Route("direct"), binds=[str(layer)], tmpdir=tmp_path / "tmp"
    )
    with box:
        assert box.active and box.namespaces and box.preexec_fn is None
        script = (
            f"echo in > {ws}/in; echo out > {outside}/out; echo held > {layer}/x; "
            f'echo t > "$TMPDIR/t"; echo shm > /dev/shm/s && echo shm-ok'
        )
        done = subprocess.run(
            box.command(["sh", "-c", script]),
            pass_fds=box.pass_fds,
            env={**os.environ, **box.env},
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert (ws / "in").read_text() == "in\n"
    assert not (outside / "out").exists() and "Permission denied" in done.stderr
    assert (layer / "x").read_text() == "kept\n" and "Read-only file system" in done.stderr
    assert (tmp_path / "tmp" / "t").read_text() == "t\n"
    assert done.stdout == "shm-ok\n"
