"""Checkpoints of a 10,000-file workspace: the first one, then one after a few files changed.

Run by hand: ``python benchmarks/checkpoints.py [--files 10000] [--runs 15] [--no-git]``.
The workspace (100 folders of 100 files, ~300 bytes each, a git repository
with one commit unless ``--no-git``) and the state dir are temporary folders.
Each run is a turn: a checkpoint before it, three files changed, one
created and one deleted, a checkpoint after it; the figure is the median (and the best) over the runs, wall and CPU
time (this process and git), beside a bare ``git status`` of the same
workspace for scale: the ratios move less than the times on a busy machine. Target: under 100 ms
after the first checkpoint. Also prints the cost of planning a rewind of the
last turn and of the store on disk.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def make_workspace(root: Path, files: int, with_git: bool) -> None:
    per_folder = 100
    for i in range(files):
        folder = root / f"pkg{i // per_folder:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"module{i % per_folder:03d}.py").write_text(
            f"# module {i}\n" + "def f(x):\n    return x + 1\n" * 10
        )
    if with_git:
        git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.com"]
        subprocess.run([*git, "init", "-q", "."], cwd=root, check=True)
        subprocess.run([*git, "add", "-A"], cwd=root, check=True)
        subprocess.run([*git, "commit", "-qm", "files"], cwd=root, check=True)


def ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def cpu_ms() -> float:
    """CPU time of this process and its finished children (git), in ms: moves less under load."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-git", action="store_true", help="the workspace is not a repository")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="mdagent-bench-") as temp:
        root = Path(temp)
        ws, state = root / "ws", root / "state"
        ws.mkdir()
        make_workspace(ws, options.files, not options.no_git)
        os.environ["AGENT_STATE_DIR"] = str(state)
        from mdagent.rewind import rewind
        from mdagent.rewind.checkpoints import Checkpoints

        cps = Checkpoints(ws)
        start = time.perf_counter()
        first = cps.record("bench", 0, "first", "before")
        first_ms = ms(start)
        print(f"workspace: {first.files} files, git repository: {not options.no_git}")
        print(f"first checkpoint               : {first_ms:8.1f} ms")

        times, cpu, status = [], [], []
        for run in range(1, options.runs + 1):
            start, used = time.perf_counter(), cpu_ms()
            cps.record("bench", run, f"turn {run}", "before")
            times.append(ms(start))
            cpu.append(cpu_ms() - used)
            for n in (1, 2, 3):
                path = ws / f"pkg{(run * n) % 100:03d}" / f"module{n:03d}.py"
                path.write_text(path.read_text() + f"# run {run}\n")
            (ws / f"pkg{run % 100:03d}" / f"new{run}.py").write_text("x = 1\n")
            gone = ws / f"pkg{(run + 50) % 100:03d}" / f"module{run % 100:03d}.py"
            gone.unlink(missing_ok=True)
            start, used = time.perf_counter(), cpu_ms()
            cps.record("bench", run, f"turn {run}", "after")
            times.append(ms(start))
            cpu.append(cpu_ms() - used)
            if not options.no_git:
                start, used = time.perf_counter(), cpu_ms()
                subprocess.run(
                    ["git", "--no-optional-locks", "status", "--porcelain"],
                    cwd=ws,
                    capture_output=True,
                    check=True,
                )
                status.append((ms(start), cpu_ms() - used))

        print(
            f"checkpoint after a few changes : {statistics.median(times):8.1f} ms median, "
            f"{min(times):.1f} best, {max(times):.1f} worst ({len(times)} checkpoints; target < 100)"
        )
        print(f"  CPU time (mdagent + git)     : {statistics.median(cpu):8.1f} ms median")
        if status:
            wall = statistics.median(w for w, _ in status)
            used = statistics.median(c for _, c in status)
            print(f"git status, for scale          : {wall:8.1f} ms median, CPU {used:.1f} ms")
            print(
                f"checkpoint / git status       : {statistics.median(times) / wall:8.1f}x wall, "
                f"{statistics.median(cpu) / used:.1f}x CPU"
            )
        start = time.perf_counter()
        plan = rewind.plan(cps, cps.default_target())
        print(f"planning a rewind of one turn  : {ms(start):8.1f} ms ({len(plan.paths)} paths)")
        start = time.perf_counter()
        cps.turns()
        print(f"listing {len(cps.list())} checkpoints' turns  : {ms(start):8.1f} ms")
        print(f"store on disk                  : {cps.store.size() / 2**20:8.1f} MiB (loose)")
        cps.store.gc()
        print(f"store on disk after gc         : {cps.store.size() / 2**20:8.1f} MiB")


if __name__ == "__main__":
    main()
