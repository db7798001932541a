"""The agent's original environment block is blanked: /proc/PID/environ shows no secret.

Each test runs a fresh interpreter (the block is the process's own), with a
secret of its own in the environment, and reads what the kernel shows.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys

from conftest import command_skill

SECRET = f"sekrit-{random.randrange(10**9):09d}"

PROBE = r"""
import ctypes, os, subprocess, sys
from mdagent.safety import envblock

def shown():
    with open("/proc/self/environ", "rb") as fh:
        return fh.read()

before = shown()
bounds = envblock.block_bounds()
done = envblock.scrub()
again = envblock.scrub()
after = shown()
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
child = subprocess.run(["sh", "-c", "echo $MDTEST_API_KEY"], capture_output=True, text=True)
print(SECRET in before.decode(), bounds is not None and bounds[1] - bounds[0] == len(before))
print(done, again, SECRET in after.decode(), set(after) <= {0})
print(os.environ["MDTEST_API_KEY"] == SECRET, libc.getenv(b"MDTEST_API_KEY").decode() == SECRET)
print(child.stdout.strip() == SECRET, os.environ["MDTEST_PLAIN"])
""".replace("SECRET", repr(SECRET))


def test_the_block_is_blank_and_everything_else_still_sees_the_variables():
    env = {**os.environ, "MDTEST_API_KEY": SECRET, "MDTEST_PLAIN": "plain"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "True True",  # the kernel showed it, and the bounds are the block's
        "True True False True",  # blanked (twice is fine): nothing but zero bytes
        "True True",  # os.environ and C's getenv() still have it
        "True plain",  # and so does a child started with the inherited environment
    ]


def test_a_typed_command_reading_the_agents_environ_finds_nothing(workspace, run_agent):
    # A typed command runs unconfined, as the agent's child: $PPID is the agent.
    command_skill(workspace)
    env = {"MDTEST_API_KEY": SECRET, "MDTEST_PLAIN": "plain"}
    result = run_agent(
        "/t", "tr -d '\\0' < /proc/$PPID/environ | wc -c; echo $MDTEST_PLAIN", env=env
    )
    assert result.returncode == 0, result.stderr
    count, plain = result.stdout.split()
    assert count == "0"  # not one byte but zeros
    assert plain == "plain"  # the command's own environment is the usual, scrubbed one
    assert SECRET not in result.stdout
