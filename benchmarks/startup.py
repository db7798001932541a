"""Start-up cost of ``agent /NAME`` with a warm registry cache.

Run by hand: ``python benchmarks/startup.py``. Times, in one run and with the
same number of repetitions each: ``agent /hello`` (a ``run`` tool printing one
line) with 10 and with 1,000 skills installed, ``python -c pass``,
``sh -c true`` and ``python -c 'import jsonschema'`` (the floor that validating
with jsonschema sets). Prints medians, ratios and peak RSS.

Targets: median <= 250 ms and <= 1.25x the jsonschema floor; the 1,000-skill
case within 15% of the 10-skill case; peak RSS <= 40 MiB.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 25


def agent_executable() -> str:
    candidate = Path(sys.executable).with_name("agent")
    return str(candidate) if candidate.exists() else shutil.which("agent") or "agent"


def make_project(root: Path, skills: int) -> Path:
    project = root / f"project-{skills}"
    layer = project / ".agents"
    (layer / "config").mkdir(parents=True)
    (layer / "config" / "hello.yaml").write_text(
        "tools:\n  hello:\n    description: Say hello\n    run: [echo, hello]\n"
        "commands:\n  hello: {tool: hello}\n"
    )
    for i in range(skills):
        folder = layer / "skills" / f"skill-{i:04d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:04d}\ndescription: Generated skill {i}\n"
            "command-dispatch: tool\ncommand-tool: exec\n---\nBody.\n"
        )
    return project


def run_once(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int]:
    """Wall time (s) and peak RSS (KiB) of one run of ``argv``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} exited {proc.returncode}")
    return elapsed, usage.ru_maxrss


def measure(name: str, argv: list[str], cwd: Path, env: dict[str, str]) -> dict[str, float]:
    run_once(argv, cwd, env)  # warm the cache and the OS page cache
    times, peaks = [], []
    for _ in range(RUNS):
        elapsed, peak = run_once(argv, cwd, env)
        times.append(elapsed)
        peaks.append(peak)
    return {
        "name": name,
        "median_ms": statistics.median(times) * 1000,
        "peak_mib": max(peaks) / 1024,
    }


def main() -> None:
    agent = agent_executable()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {
            **os.environ,
            "AGENT_HOME": str(root / "home"),
            "AGENT_STATE_DIR": str(root / "state"),
        }
        rows = [
            measure("sh -c true", ["sh", "-c", "true"], root, env),
            measure("python -c pass", [sys.executable, "-c", "pass"], root, env),
            measure(
                "python -c 'import jsonschema'",
                [sys.executable, "-c", "import jsonschema"],
                root,
                env,
            ),
        ]
        for skills in (10, 1000):
            project = make_project(root, skills)
            rows.append(measure(f"agent /hello ({skills} skills)", [agent, "/hello"], project, env))
    floor = rows[2]["median_ms"]
    print(f"{'command':<32} {'median ms':>10} {'x floor':>8} {'peak MiB':>9}")
    for row in rows:
        ratio = row["median_ms"] / floor
        print(f"{row['name']:<32} {row['median_ms']:>10.1f} {ratio:>8.2f} {row['peak_mib']:>9.1f}")
    small, large = rows[3]["median_ms"], rows[4]["median_ms"]
    print(f"1,000 skills vs 10 skills: {100 * (large / small - 1):+.1f}% (target within 15%)")
    print("targets: median <= 250 ms and <= 1.25x the jsonschema floor; peak RSS <= 40 MiB")


if __name__ == "__main__":
    main()
