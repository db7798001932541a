"""File tools under attack, through the real ``agent`` executable (issue 9, items 10 and 14).

- a folder swapped for a symlink while the model writes and reads never puts
  a file outside the workspace nor shows one from there;
- a 200 MB file without a newline costs the agent process a few MiB in
  ``read_file`` and ``grep`` (VmHWM of the agent itself, read while it waits
  for the model's next answer);
- a backtracking regex in ``grep``'s Python engine ends at the timeout.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import (
    ask,
    provider_args,
    scripted_model,
    settings,
    start_agent,
    tool_results,
    write,
)
from model_server import ModelServer

MIB = 1024 * 1024


# -- item 10: no symlink race ---------------------------------------------------------


def _exchanger():
    """``exchange(a, b)``: swap two names atomically (renameat2 RENAME_EXCHANGE), or None."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return None

    def exchange(a: Path, b: Path) -> bool:
        return renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) == 0

    return exchange


def test_a_folder_swapped_for_a_symlink_never_lets_a_file_out(workspace, run_agent, tmp_path):
    exchange = _exchanger()
    outside = tmp_path / "outside"
    outside.mkdir()
    write(outside / "secret.txt", "TOP SECRET\n")
    folder, link = workspace / "d", workspace / "swap"
    write(folder / "secret.txt", "harmless\n")
    link.symlink_to(outside)
    if exchange is None or not exchange(folder, link) or not exchange(folder, link):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    settings(workspace, "agent:\n  max_steps: 100\npolicy:\n  mode: full\n")
    # The swapper flips d between the real folder and a symlink pointing out,
    # atomically, as fast as it can, while the model writes and reads in d.
    stop = threading.Event()
    flips = [0]

    def swap() -> None:
        while not stop.is_set():
            flips[0] += exchange(folder, link)

    steps = []
    for step in range(30):
        calls = []
        for i in range(5):
            n = step * 5 + i
            calls.append(
                {"name": "write_file", "arguments": {"path": f"d/f{n}.txt", "content": "x"}}
            )
            calls.append({"name": "read_file", "arguments": {"path": "d/secret.txt"}})
        steps.append({"tool_calls": calls})
    with ModelServer([*steps, {"text": "done"}]) as server:
        swapper = threading.Thread(target=swap, daemon=True)
        swapper.start()
        try:
            done = ask(run_agent, server, timeout=120)
        finally:
            stop.set()
            swapper.join()
        results = tool_results(server)
    assert done.returncode == 0, done.stderr
    assert flips[0] > 100
    assert sorted(os.listdir(outside)) == ["secret.txt"], "a write landed outside the workspace"
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"
    assert len(results) == 300
    assert not any("TOP SECRET" in json.dumps(r) for r in results)
    # Refused at the check (a symlink pointing out) or at the open (a swap after it).
    refused = [r for r in results if r.get("code") == "DENIED"]
    assert refused
    written = [r for r in results if r.get("bytes") == 1]
    real = folder if not folder.is_symlink() else link
    assert len(list(real.glob("f*.txt"))) == len(written)


# -- item 14: bounded read_file and grep -------------------------------------------------


def _hwm_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))


def _path_without_rg() -> str:
    keep = [
        d for d in os.environ.get("PATH", "").split(os.pathsep) if not (Path(d) / "rg").exists()
    ]
    return os.pathsep.join(keep)


@pytest.mark.parametrize("engine", ["python", "ripgrep"])
def test_a_200_mb_line_costs_the_agent_a_few_mib(workspace, tmp_path, engine):
    if engine == "ripgrep" and shutil.which("rg") is None:
        pytest.skip("ripgrep is not installed")
    big = workspace / "big.min.js"
    block = b"a" * MIB
    with big.open("wb") as fh:
        for _ in range(200):
            fh.write(block)
        fh.write(b"NEEDLE")
    proc: list[subprocess.Popen] = []
    marks: list[int] = []

    def measure_then(entry):
        def reply(_request):
            marks.append(_hwm_kib(proc[0].pid))
            return entry

        return reply

    script = [
        measure_then({"tool_calls": [{"name": "read_file", "arguments": {"path": big.name}}]}),
        measure_then({"tool_calls": [{"name": "grep", "arguments": {"pattern": "NEEDLE"}}]}),
        measure_then({"text": "done"}),
    ]
    env = dict(os.environ)
    if engine == "python":
        env["PATH"] = _path_without_rg()
    try:
        with ModelServer(script) as server:
            proc.append(start_agent(workspace, *provider_args(server), "ask", "go", env=env))
            out, err = proc[0].communicate(timeout=300)
            results = tool_results(server)
    finally:
        big.unlink()
        if proc and proc[0].poll() is None:
            proc[0].kill()
    assert proc[0].returncode == 0, err
    base, after_read, after_grep = marks
    growth_mib = (max(after_read, after_grep) - base) / 1024
    print(f"{engine}: VmHWM {base / 1024:.1f} MiB before, +{growth_mib:.1f} MiB after both tools")
    assert growth_mib < 50
    read, grep = results
    assert read["total_lines"] == 1 and read["truncated"] is True
    assert f"{200 * MIB + 6 - 2000} chars cut" in read["output"]
    assert "column=2001" in read["output"]
    assert len(read["output"]) < 2300
    assert grep["matches"] == [{"path": big.name, "line": 1, "text": "a" * 500 + " [...]"}]


def test_a_backtracking_regex_ends_at_the_grep_timeout(workspace, run_agent):
    write(workspace / "a.txt", "x" + "a" * 60 + "!\n")
    settings(workspace, "grep:\n  timeout: 2\n")
    # Look-behind is outside ripgrep's dialect, so this runs on Python's re
    # with or without ripgrep; (a+)+$ on a's then "!" backtracks for ages.
    with scripted_model(("grep", {"pattern": "(?<=x)(a+)+$"})) as server:
        done = ask(run_agent, server, timeout=90)
        (result,) = tool_results(server)
    assert done.returncode == 0, done.stderr
    assert result["ok"] is False
    assert result["error"] == "grep timed out after 2 s"
