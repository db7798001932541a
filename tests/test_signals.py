"""signals: stop signals unwind like Ctrl-C, or go to a callback inside ``deferred``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    # A child process: the handlers and the "first signal" record are process-wide.
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=30
    )


def test_a_stop_signal_raises_terminated_with_the_shell_status():
    done = run_python(
        """
        import os, signal
        from mdagent.core import signals
        signals.install()
        try:
            os.kill(os.getpid(), signal.SIGHUP)
        except signals.Terminated as stop:
            print(stop.exit_code, signals.received(), signals.exit_status(0), signals.message())
        """
    )
    assert done.stdout.split(maxsplit=3) == [
        "129",
        "1",
        "129",
        "interrupted: terminated by SIGHUP\n",
    ]


def test_inside_deferred_the_callback_gets_the_signal_and_nothing_is_raised():
    done = run_python(
        """
        import os, signal
        from mdagent.core import signals
        signals.install()
        got = []
        with signals.deferred(got.append):
            os.kill(os.getpid(), signal.SIGTERM)
            print("still running", got)
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        except signals.Terminated:
            print("raised after the block")
        """
    )
    assert done.stdout.splitlines() == ["still running [15]", "raised after the block"]


def test_a_signal_ignored_at_start_stays_ignored():
    done = run_python(
        """
        import os, signal
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        from mdagent.core import signals
        signals.install()
        os.kill(os.getpid(), signal.SIGHUP)
        print("kept running", signals.received())
        """
    )
    assert done.stdout == "kept running None\n"


def test_a_held_ctrl_c_is_raised_at_release_not_before():
    import os
    import signal

    from mdagent.core.signals import hold

    held = hold()
    os.kill(os.getpid(), signal.SIGINT)
    reached = True  # nothing raised while held
    with pytest.raises(KeyboardInterrupt):
        held.release()
        for _ in range(1000):  # the restored handler runs at the next instruction
            pass
    assert reached
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    held.release()  # twice: harmless
