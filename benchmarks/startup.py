"""Start-up, output and subcommand costs of the ``agent`` executable, each target with its ratio.

Run by hand: ``python benchmarks/startup.py``. By default it makes a regular
install (``pip install .`` into a temporary virtual environment, never an
editable one, whose import hook adds start-up time); ``--python PATH`` reuses
the interpreter of an existing regular install instead. Every timed command
runs ``--runs`` times, interleaved with the others so that a busy machine
slows all of them alike; the figures are medians and the peak RSS the
largest seen. CPU time (user + system) is shown beside wall time, with its
own ratios: it moves less with the load of other processes on the machine.

Targets (issue 15):

1. ``agent /hi world`` (a YAML ``run:`` tool with one required string
   parameter, parsed arguments, warm cache) <= 0.6x ``python -c "import
   jsonschema"`` and <= 6x ``python -c pass``, peak RSS <= 18 MiB; the same
   with 1,000 skills installed within 15 % of 10 skills.
2. Warm start-up independent of the number of skills: ``agent /hi world``
   with 10,000 skills within 1.10x of 10 skills, ``agent /help`` (which
   reads and checks every skill) within 2x (``--no-10000`` skips these).
4. ``agent /term cat F > out`` gives F byte for byte (20 MiB of random
   bytes); throughput to /dev/null >= 0.6x ``sh -c`` running the same
   command (net of start-up: 1 GiB minus an empty run).
5. ``agent check`` and ``agent ask`` (the scripted fake provider) do not
   import pydantic; their time and RSS are shown.
6. Workspace trust (issue 27): ``agent /hi world`` in a folder with
   something trust covers (``policy.mode: full``), trusted and not, beside
   the 10-skill folder that holds nothing trust covers.

Also reported: which expensive modules each command imported.

``--only TEXT`` (repeatable) times only the commands whose name contains
TEXT, besides the ``python`` floors, and reports only the targets those
rows allow: ``--only /help`` is target 2's /help ratio alone.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GIB = 1 << 30
# Modules the /name path must not need: their presence in a run is reported.
WATCHED = ("jsonschema", "pydantic", "typer", "yaml", "dataclasses", "tempfile", "sqlite3")


def regular_install(root: Path) -> Path:
    """A fresh virtual environment with this checkout installed (not editable); its python."""
    venv = root / "venv"
    print(f"installing {REPO} into {venv} (pip install ., not editable) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(REPO)],
        check=True,
    )
    return python


def editable(python: Path) -> bool:
    probe = (
        "import importlib.metadata as m, json\n"
        "t = m.distribution('mdagent').read_text('direct_url.json') or '{}'\n"
        "print(json.loads(t).get('dir_info', {}).get('editable', False))"
    )
    out = subprocess.run([str(python), "-c", probe], capture_output=True, text=True)
    return out.stdout.strip() == "True"


def make_project(root: Path, skills: int) -> Path:
    """A workspace with the ``hi`` tool and command and ``skills`` generated skills."""
    project = root / f"project-{skills}"
    layer = project / ".agents"
    (layer / "config").mkdir(parents=True)
    (layer / "config" / "hi.yaml").write_text(
        "tools:\n"
        "  hi:\n"
        "    description: Say hi\n"
        "    params:\n"
        "      name: {type: string, description: Who to greet}\n"
        "    required: [name]\n"
        '    run: [echo, "hi {name}"]\n'
        "commands:\n"
        "  hi: {tool: hi, arg-mode: parsed}\n"
    )
    for i in range(skills):
        folder = layer / "skills" / f"skill-{i:05d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:05d}\ndescription: Generated skill {i}\n"
            "command-dispatch: tool\ncommand-tool: exec\n---\nBody.\n"
        )
    return project


def make_covered_project(root: Path, agent: str, env: dict[str, str], trusted: bool) -> Path:
    """The 10-skill project plus ``policy.mode: full`` (trust covers it), trusted or not."""
    project = make_project(root / ("trusted" if trusted else "untrusted"), 10)
    (project / ".agents" / "config" / "agent.yaml").write_text("policy:\n  mode: full\n")
    if trusted:
        subprocess.run(
            [agent, "trust", "--yes"], cwd=project, env=env, check=True, capture_output=True
        )
    return project


def run_once(argv: list[str], cwd: Path, env: dict[str, str], stdout=subprocess.DEVNULL):
    """Wall time (s), peak RSS (KiB) and CPU time (s, user + system) of one run of ``argv``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{argv} exited {code}")
    return elapsed, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


def measure(rows: dict[str, tuple[list[str], Path]], env: dict[str, str], runs: int):
    """``{name: (median ms, peak MiB, median CPU ms)}``, the commands interleaved run by run.

    CPU time (user + system) is shown beside wall time: on a shared machine
    it moves less with the other processes' load.
    """
    for argv, cwd in rows.values():
        run_once(argv, cwd, env)  # warm caches: the registry's, the OS's
    times: dict[str, list[float]] = {name: [] for name in rows}
    cpus: dict[str, list[float]] = {name: [] for name in rows}
    peaks: dict[str, int] = dict.fromkeys(rows, 0)
    for _ in range(runs):
        for name, (argv, cwd) in rows.items():
            elapsed, peak, cpu = run_once(argv, cwd, env)
            times[name].append(elapsed)
            cpus[name].append(cpu)
            peaks[name] = max(peaks[name], peak)
    return {
        name: (
            statistics.median(times[name]) * 1000,
            peaks[name] / 1024,
            statistics.median(cpus[name]) * 1000,
        )
        for name in rows
    }


def imported(python: Path, args: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
    """Which WATCHED modules ``agent ARGS`` imports."""
    probe = (
        "import sys\n"
        f"sys.argv = ['agent', *{args!r}]\n"
        "from mdagent.cli.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(' '.join(m for m in {WATCHED!r} if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [str(python), "-c", probe], cwd=cwd, env=env, capture_output=True, text=True
    )
    return done.stderr.strip().splitlines()[-1].split() if done.stderr.strip() else []


def throughput(agent: str, cwd: Path, env: dict[str, str], runs: int) -> tuple[float, float]:
    """MB/s of ``sh -c`` and of ``agent /term`` writing 1 GiB to /dev/null, net of start-up."""

    def best(argv: list[str]) -> float:
        with open(os.devnull, "wb") as null:
            return min(run_once(argv, cwd, env, stdout=null)[0] for _ in range(runs))

    rates = []
    for runner in (["sh", "-c"], [agent, "/term"]):
        full = best([*runner, f"head -c {GIB} /dev/zero"])
        empty = best([*runner, "head -c 0 /dev/zero"])
        rates.append(GIB / 1e6 / max(full - empty, 1e-6))
    return rates[0], rates[1]


def identical_output(agent: str, cwd: Path, env: dict[str, str], root: Path) -> bool:
    """Whether 20 MiB of random bytes come through ``agent /term cat F > out`` unchanged."""
    source, copy = root / "random.bin", root / "copy.bin"
    source.write_bytes(os.urandom(20 << 20))
    with copy.open("wb") as out:
        run_once([agent, "/term", f"cat {source}"], cwd, env, stdout=out)
    return filecmp.cmp(source, copy, shallow=False)


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", type=Path, help="interpreter of an existing regular install")
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--no-10000", action="store_true", help="skip the 10,000-skill rows")
    parser.add_argument(
        "--only",
        action="append",
        metavar="TEXT",
        help="time only the commands whose name contains TEXT (and the python floors); "
        "repeatable, e.g. --only /help",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        python = args.python or regular_install(root)
        if editable(python):
            print("warning: mdagent is an editable install there; figures include its import hook")
        agent = str(python.with_name("agent"))
        env = {
            **os.environ,
            "AGENT_HOME": str(root / "home"),
            "AGENT_STATE_DIR": str(root / "state"),
        }
        wanted = args.only or [""]
        floors = ("python -c pass", "python -c 'import jsonschema'")

        def timed(name: str) -> bool:
            return name in floors or any(text in name for text in wanted)

        small = make_project(root, 10)
        large = make_project(root, 1000) if timed("agent /hi world (1,000 skills)") else small
        huge_rows = ("agent /hi world (10,000 skills)", "agent /help (10,000 skills)")
        needed = not args.no_10000 and any(timed(name) for name in huge_rows)
        huge = make_project(root, 10000) if needed else None
        script = root / "script.yaml"
        script.write_text("- Hello.\n")
        ask = [agent, "--provider", "fake", "--script", str(script), "ask", "hi"]
        rows = {
            "sh -c true": (["sh", "-c", "true"], root),
            "python -c pass": ([str(python), "-c", "pass"], root),
            "python -c 'import jsonschema'": ([str(python), "-c", "import jsonschema"], root),
            "agent /hi world (10 skills)": ([agent, "/hi", "world"], small),
            "agent /hi world (1,000 skills)": ([agent, "/hi", "world"], large),
            "agent check": ([agent, "check"], small),
            "agent ask (fake provider)": (ask, small),
        }
        for trusted in (True, False):
            name = f"agent /hi world ({'trusted' if trusted else 'untrusted'} folder)"
            if timed(name):
                rows[name] = (
                    [agent, "/hi", "world"],
                    make_covered_project(root, agent, env, trusted),
                )
        if huge is not None:
            rows["agent /hi world (10,000 skills)"] = ([agent, "/hi", "world"], huge)
            rows["agent /help (10 skills)"] = ([agent, "/help"], small)
            rows["agent /help (10,000 skills)"] = ([agent, "/help"], huge)
        rows = {name: row for name, row in rows.items() if timed(name)}
        print(f"timing {len(rows)} commands x {args.runs} runs, interleaved ...", flush=True)
        figures = measure(rows, env, args.runs)
        floor, _, floor_cpu = figures["python -c pass"]
        schema, _, schema_cpu = figures["python -c 'import jsonschema'"]
        print(
            f"\n{'command':<32} {'median ms':>9} {'x jsonschema':>12} {'x pass':>6}"
            f" {'peak MiB':>8} {'CPU ms':>7} {'x jsonschema':>12} {'x pass':>6}"
        )
        for name, (ms, mib, cpu) in figures.items():
            print(
                f"{name:<32} {ms:>9.1f} {ms / schema:>12.2f} {ms / floor:>6.2f} {mib:>8.1f}"
                f" {cpu:>7.1f} {cpu / schema_cpu:>12.2f} {cpu / floor_cpu:>6.2f}"
            )

        # The machine's load: figures from a busy machine are ratios first.
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print("\ntargets")
        if "agent /hi world (10 skills)" in figures:
            hi_ms, hi_mib, _ = figures["agent /hi world (10 skills)"]
            print(
                f"  1. /hi: {hi_ms / schema:.2f}x import jsonschema (<= 0.6) "
                f"{verdict(hi_ms <= 0.6 * schema)}; {hi_ms / floor:.2f}x python -c pass (<= 6) "
                f"{verdict(hi_ms <= 6 * floor)}; {hi_mib:.1f} MiB (<= 18) {verdict(hi_mib <= 18)}"
            )
            if "agent /hi world (1,000 skills)" in figures:
                big_ms = figures["agent /hi world (1,000 skills)"][0]
                print(
                    f"     1,000 skills vs 10: {100 * (big_ms / hi_ms - 1):+.1f}% (within 15%) "
                    f"{verdict(big_ms <= 1.15 * hi_ms)}"
                )
            print(
                f"     /hi imports: {' '.join(imported(python, ['/hi', 'world'], small, env)) or '-'}"
            )
        if (
            "agent /hi world (10,000 skills)" in figures
            and "agent /hi world (10 skills)" in figures
        ):
            hi_huge = figures["agent /hi world (10,000 skills)"][0]
            hi_ms = figures["agent /hi world (10 skills)"][0]
            print(
                f"  2. /hi, 10,000 skills vs 10: {hi_huge / hi_ms:.2f}x (<= 1.10) "
                f"{verdict(hi_huge <= 1.10 * hi_ms)}"
            )
        if "agent /help (10,000 skills)" in figures and "agent /help (10 skills)" in figures:
            help_small = figures["agent /help (10 skills)"][0]
            help_huge = figures["agent /help (10,000 skills)"][0]
            help_small_cpu = figures["agent /help (10 skills)"][2]
            help_huge_cpu = figures["agent /help (10,000 skills)"][2]
            print(
                f"  2. /help, 10,000 skills vs 10: {help_huge / help_small:.2f}x (<= 2) "
                f"{verdict(help_huge <= 2 * help_small)} (CPU {help_huge_cpu / help_small_cpu:.2f}x)"
            )
        if "agent /hi world (10 skills)" in figures:
            hi_ms, _, hi_cpu = figures["agent /hi world (10 skills)"]
            for which in ("trusted", "untrusted"):
                name = f"agent /hi world ({which} folder)"
                if name in figures:
                    ms, _, cpu = figures[name]
                    print(
                        f"  6. /hi in the {which} folder vs one with nothing trust covers: "
                        f"{ms / hi_ms:.2f}x (CPU {cpu / hi_cpu:.2f}x)"
                    )
        if args.only:
            return

        same = identical_output(agent, small, env, root)
        sh_rate, agent_rate = throughput(agent, small, env, max(3, args.runs // 5))
        print(f"  4. 20 MiB random through `agent /term cat F > out`: identical {verdict(same)}")
        print(
            f"     1 GiB to /dev/null: sh -c {sh_rate:,.0f} MB/s, agent /term {agent_rate:,.0f} MB/s"
            f" = {agent_rate / sh_rate:.2f}x (>= 0.6) {verdict(agent_rate >= 0.6 * sh_rate)}"
        )
        for name, argv in (("check", ["check"]), ("ask", ask[1:])):
            mods = imported(python, argv, small, env)
            ms, mib, _ = figures["agent check" if name == "check" else "agent ask (fake provider)"]
            print(
                f"  5. agent {name}: {ms:.1f} ms, {mib:.1f} MiB; pydantic imported: "
                f"{'yes' if 'pydantic' in mods else 'no'} {verdict('pydantic' not in mods)}"
            )


if __name__ == "__main__":
    main()
