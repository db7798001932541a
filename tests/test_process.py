"""run_process: real children, real pipes, real process groups."""

from __future__ import annotations

import _thread
import io
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from conftest import gone_soon
from mdagent.tools.process import ProcessResult, result_dict, run_process, signal_name


def sh(command: str, **kw) -> ProcessResult:
    kw.setdefault("cwd", None)
    kw.setdefault("env", None)
    kw.setdefault("timeout", 10)
    return run_process(["bash", "-c", command], **kw)


def test_captures_stdout_stderr_and_status():
    result = sh("echo out; echo err >&2; exit 3")
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert not (result.truncated or result.timed_out or result.interrupted)
    assert result.duration_ms >= 0


def test_runs_in_cwd_with_the_given_environment(tmp_path):
    env = {"PATH": os.environ["PATH"], "GREETING": "hello"}
    result = sh('echo "$GREETING from $(pwd)"', cwd=str(tmp_path), env=env)
    assert result.stdout == f"hello from {tmp_path}\n"


def test_stdin_is_empty_unless_data_is_given():
    assert sh("cat").stdout == ""
    data = b"line\n" * 200_000  # larger than a pipe buffer: needs a concurrent writer
    result = run_process(["cat"], cwd=None, env=None, timeout=10, stdin_data=data, max_output=10**7)
    assert result.stdout.encode() == data


def test_missing_program_reports_127():
    result = run_process(["no-such-program-xyz"], cwd=None, env=None, timeout=5)
    assert result.exit_code == 127
    assert "no-such-program-xyz" in result.stderr


def test_killed_by_a_signal_reports_128_plus_n():
    result = sh("kill -9 $$")
    assert result.exit_code == 137
    assert signal_name(result.exit_code) == "SIGKILL"
    assert signal_name(1) is None


def test_timeout_kills_the_grandchild_holding_the_pipe():
    # The grandchild keeps stdout open: a naive reader would wait 30 s for EOF,
    # and read "late".
    result = sh("(sleep 30; echo late) & echo $!; sleep 30", timeout=1)
    assert result.exit_code == 124 and result.timed_out
    grandchild = int(result.stdout.split()[0])
    assert gone_soon(grandchild)
    assert "late" not in result.stdout


def test_timeout_kills_a_child_that_ignores_sigterm():
    # Waiting for the child to end by itself would bring "late".
    result = sh("trap '' TERM; (sleep 30; echo late) & echo $!; trap '' TERM; wait", timeout=0.5)
    assert result.exit_code == 124 and "late" not in result.stdout
    assert gone_soon(int(result.stdout.split()[0]))


def test_background_job_neither_hangs_nor_survives_the_command():
    # Waiting for the job, which holds the pipe, would bring "late".
    result = sh("(sleep 30; echo late) & echo $!", timeout=None)
    assert result.exit_code == 0 and "late" not in result.stdout
    assert gone_soon(int(result.stdout.split()[0]))


def test_cancel_stops_the_group_with_130():
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    result = sh("(sleep 30; echo late) & echo $!; sleep 30; echo late", timeout=None, cancel=cancel)
    assert result.exit_code == 130 and result.interrupted
    assert "late" not in result.stdout  # stopped at once, not when the commands ended
    assert gone_soon(int(result.stdout.split()[0]))


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="main only")
def test_keyboard_interrupt_kills_the_group_and_propagates(tmp_path):
    pidfile = tmp_path / "pid"
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        sh(f"sleep 30 & echo $! > {pidfile}; sleep 30", timeout=None)
    assert gone_soon(int(pidfile.read_text()))


def test_output_is_kept_head_and_tail():
    result = sh("seq 1 100000", max_output=1000)
    full = "".join(f"{i}\n" for i in range(1, 100001))
    assert result.truncated
    assert result.stdout.startswith("1\n2\n3\n")
    assert result.stdout.endswith("99999\n100000\n")
    omitted = len(full) - 1000
    assert f"\n[... {omitted} bytes omitted ...]\n" in result.stdout
    assert len(result.stdout) < 1100


def test_head_and_tail_cut_between_characters():
    result = sh("for i in $(seq 1 3000); do printf 'é€'; done", max_output=101)
    assert result.truncated
    assert "\ufffd" not in result.stdout


def test_live_output_arrives_while_the_command_runs(tmp_path):
    # The command goes on only once "first" was shown: output held back until
    # the end would leave it waiting for the gate, into its timeout.
    gate = tmp_path / "shown"

    class Watcher(io.StringIO):
        def write(self, text):
            if "first" in text:
                gate.touch()
            return super().write(text)

    out, err = Watcher(), io.StringIO()
    result = sh(
        f"echo first; echo oops >&2; while [ ! -e {gate} ]; do sleep 0.05; done; echo second",
        timeout=60,
        output=out,
        error_output=err,
    )
    assert not result.timed_out
    assert out.getvalue() == "first\nsecond\n" == result.stdout
    assert err.getvalue() == "oops\n" == result.stderr


def test_live_output_survives_a_closed_watcher():
    out = io.StringIO()
    out.close()
    result = sh("echo still captured", output=out, error_output=io.StringIO())
    assert result.stdout == "still captured\n"


def test_a_flood_of_output_keeps_memory_flat():
    # 1 GiB through the pipes; the parent must hold only head + tail.
    script = textwrap.dedent(
        """
        from mdagent.tools.process import run_process
        r = run_process(["bash", "-c", "head -c 1073741824 /dev/zero | tr '\\\\0' a"],
                        cwd=None, env=None, timeout=60)
        # VmHWM, not ru_maxrss: ru_maxrss keeps the RSS this process had
        # before exec, i.e. that of the (large) pytest process it forked from.
        with open("/proc/self/status") as fh:
            hwm_kib = next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:"))
        rss_mib = hwm_kib / 1024
        print(r.exit_code, r.truncated, len(r.stdout), int(rss_mib))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=90
    )
    assert done.returncode == 0, done.stderr
    exit_code, truncated, length, rss_mib = done.stdout.split()
    assert (exit_code, truncated) == ("0", "True")
    assert int(length) < 100_100
    assert int(rss_mib) < 100


class ClosingPipe(io.StringIO):
    """A person's stdout whose reader leaves after the first write (``| head -1``)."""

    def write(self, text):
        if self.getvalue():
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(text)


def test_a_closed_output_pipe_stops_the_group_with_141(tmp_path):
    pidfile = tmp_path / "pid"
    # `yes` never ends by itself (not stopped, it would run into its timeout:
    # 124); the one in the background shares the group.
    result = sh(
        f"yes > /dev/null & echo $! > {pidfile}; exec yes",
        timeout=30,
        output=ClosingPipe(),
        error_output=io.StringIO(),
    )
    assert result.exit_code == 141 and signal_name(141) == "SIGPIPE"
    assert not (result.timed_out or result.interrupted)
    assert result.stdout.startswith("y\ny\n")  # still captured for the result
    assert gone_soon(int(pidfile.read_text()))


def test_other_output_errors_only_stop_the_echo():
    class FullDisk(io.StringIO):
        def write(self, text):
            raise OSError(28, "No space left on device")

    result = sh("echo one; sleep 0.2; echo two", output=FullDisk(), error_output=io.StringIO())
    assert result.exit_code == 0 and result.stdout == "one\ntwo\n"


# -- bytes out, text only for the result ------------------------------------------


def test_output_that_is_not_utf8_is_replaced_in_the_text_and_said():
    result = sh(r"printf 'caf\xc3\xa9 \xff'; printf '\xfe' >&2")
    assert (result.stdout, result.stderr) == ("caf\u00e9 \ufffd", "\ufffd")
    assert result.replaced == ("stdout", "stderr")
    note = result_dict(result, streamed=False, timeout=10)["undecodable"]
    assert note.startswith("stdout and stderr had bytes that are not UTF-8")
    clean = sh("printf 'caf\\303\\251'")
    assert clean.stdout == "caf\u00e9" and clean.replaced == ()
    assert "undecodable" not in result_dict(clean, streamed=False, timeout=10)


def test_a_cut_in_binary_output_is_said_too():
    result = sh("head -c 100000 /dev/urandom", max_output=1000)
    assert result.truncated and result.replaced == ("stdout",)


def test_live_output_to_a_descriptor_is_the_childs_bytes(tmp_path):
    path = tmp_path / "live.bin"
    data = bytes(range(256)) * 64 + b"\xe2\x82"  # a character cut at the end, too
    (tmp_path / "data.bin").write_bytes(data)
    with open(path, "w") as watcher, open(os.devnull, "w") as errors:
        watcher.write("before:")  # what Python printed first stays first
        result = run_process(
            ["cat", str(tmp_path / "data.bin")], output=watcher, error_output=errors, timeout=10
        )
    assert path.read_bytes() == b"before:" + data
    assert not result.passed_through and result.stdout.startswith("\x00\x01")


def test_pass_through_lets_the_child_write_the_file_itself(tmp_path):
    path = tmp_path / "out.bin"
    with open(path, "w") as watcher:
        result = run_process(
            ["bash", "-c", r"readlink /proc/self/fd/1; printf '\xff'; echo err >&2"],
            output=watcher,
            error_output=io.StringIO(),
            pass_through=True,
            timeout=10,
        )
    assert path.read_bytes() == f"{path}\n".encode() + b"\xff"
    assert result.passed_through and result.stdout == "" and result.stderr == "err\n"
    assert result_dict(result, streamed=True, timeout=10)["stdout_passed_through"] is True


def test_pass_through_never_hands_over_a_terminal():
    # A program that sees a terminal may start a pager or ask questions.
    master, slave = os.openpty()
    with os.fdopen(slave, "w") as terminal:
        result = run_process(
            ["bash", "-c", "if [ -t 1 ]; then echo terminal; else echo pipe; fi"],
            output=terminal,
            error_output=io.StringIO(),
            pass_through=True,
            timeout=10,
        )
    shown = os.read(master, 1024)
    os.close(master)
    assert not result.passed_through and result.stdout == "pipe\n"
    assert shown.replace(b"\r", b"") == b"pipe\n"


# -- result_dict: the one tool result for a process ----------------------------


def test_result_dict_of_a_run_that_failed():
    data = result_dict(sh("echo out; exit 3"), streamed=False, timeout=10)
    assert data["stdout"] == "out\n" and data["exit_code"] == 3 and data["truncated"] is False
    assert data["error"] == "exit status 3" and "streamed" not in data
    assert set(data) == {"stdout", "stderr", "exit_code", "duration_ms", "truncated", "error"}


def test_result_dict_of_a_success_has_no_error():
    data = result_dict(sh("true"), streamed=True, timeout=10)
    assert "error" not in data and data["streamed"] is True


def test_result_dict_of_a_timeout_and_a_cancel():
    timed_out = result_dict(sh("sleep 5", timeout=0.2), streamed=False, timeout=0.2)
    assert timed_out["error"] == "timed out after 0.2 s" and timed_out["timed_out"] is True
    cancel = threading.Event()
    cancel.set()
    interrupted = result_dict(sh("sleep 5", cancel=cancel), streamed=False, timeout=10)
    assert interrupted["error"] == "interrupted" and interrupted["interrupted"] is True


def test_result_dict_of_a_program_that_cannot_start(tmp_path):
    missing = run_process(["no-such-program-xyz"], timeout=5)
    assert result_dict(missing, streamed=False, timeout=5)["error"] == (
        "command not found: no-such-program-xyz"
    )
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\necho hi\n")  # not executable
    denied = result_dict(run_process([str(script)], timeout=5), streamed=False, timeout=5)
    assert denied["exit_code"] == 126
    assert denied["error"] == f"cannot run {script}: Permission denied"
    nowhere = run_process(["true"], cwd=str(tmp_path / "gone"), timeout=5)
    assert result_dict(nowhere, streamed=False, timeout=5)["error"] == (
        f"cannot run true (in {tmp_path / 'gone'}): No such file or directory"
    )


# -- one path from a tool to a process -------------------------------------------------


def test_every_child_starts_in_start_child_with_the_preexec_hook(tmp_path):
    marker = tmp_path / "preexec.txt"

    def preexec():  # runs in the child, between fork and exec
        marker.write_text(str(os.getpid()))

    result = run_process(["sh", "-c", "echo $$"], timeout=5, preexec=preexec)
    assert result.exit_code == 0
    assert marker.read_text() == result.stdout.strip()  # the child's pid, not ours


def test_exec_run_and_shell_tools_share_run_tool_process(tmp_path, monkeypatch):
    """Scrubbed environment, workspace cwd, own session: one code path for all three."""
    from mdagent.core.calls import ToolContext
    from mdagent.tools import process
    from mdagent.tools.builtins import register_builtins
    from mdagent.tools.implementations import make_handler
    from mdagent.tools.toolbox import Toolbox

    started = []
    real = process.start_child

    def spy(argv, **kw):
        started.append((argv, kw))
        return real(argv, **kw)

    monkeypatch.setattr(process, "start_child", spy)
    monkeypatch.setenv("MY_API_KEY", "sk-secret")
    box = Toolbox()
    register_builtins(box, ["exec"])
    for name, spec in (("r", {"run": ["pwd"]}), ("s", {"shell": "pwd"})):
        box.add(
            name, description=name, handler=make_handler(spec, name=name, params={}, base_dir=".")
        )
    ctx = ToolContext(workdir=str(tmp_path))
    outputs = [
        box.run(n, a, ctx).data for n, a in (("exec", {"command": "pwd"}), ("r", {}), ("s", {}))
    ]
    assert [o["stdout"] for o in outputs] == [f"{tmp_path}\n"] * 3
    assert all(
        set(o) >= {"stdout", "stderr", "exit_code", "duration_ms", "truncated"} for o in outputs
    )
    assert len(started) == 3
    for _, kw in started:
        assert kw["cwd"] == str(tmp_path) and "MY_API_KEY" not in kw["env"]


def test_run_tool_process_confines_cwd_and_reads_the_settings(tmp_path):
    from mdagent.core.calls import ToolContext
    from mdagent.tools.process import run_tool_process

    (tmp_path / "sub").mkdir()
    ctx = ToolContext(workdir=str(tmp_path), settings={"exec": {"timeout": 0.5}})
    assert run_tool_process(["pwd"], ctx, cwd="sub")["stdout"] == f"{tmp_path / 'sub'}\n"
    outside = run_tool_process(["pwd"], ctx, cwd="..")
    assert outside["code"] == "DENIED" and "escapes the workspace" in outside["error"]
    assert run_tool_process(["pwd"], ctx, cwd="nope")["error"] == "not a directory: nope"
    slow = run_tool_process(["sleep", "10"], ctx)
    assert slow["timed_out"] is True and slow["error"] == "timed out after 0.5 s"
    assert run_tool_process(["sleep", "10"], ctx, timeout=0.2)["error"] == "timed out after 0.2 s"


def test_ctrl_c_while_the_child_starts_still_stops_it(tmp_path, monkeypatch):
    # A busy machine lets the child run before run_process knows it: a Ctrl-C
    # in that window once left `sleep` running, holding the agent's output pipe.
    import signal

    import mdagent.tools.process as process

    real_start = process.start_child
    pidfile = tmp_path / "pid"

    def start_then_interrupt(*args, **kwargs):
        proc = real_start(*args, **kwargs)
        while not pidfile.exists() or not pidfile.read_text().strip():
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)  # arrives before run_process's try
        return proc

    monkeypatch.setattr(process, "start_child", start_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_process(["sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"])
    assert gone_soon(int(pidfile.read_text()))
