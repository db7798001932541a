"""Mutation testing of the safety modules: one command, one score per module.

    pip install -e '.[mutation]'
    python tools/mutation.py [MODULE ...] [--jobs N] [--show] [--again]

MODULE is a module of ``[tool.mutmut].only_mutate`` in pyproject.toml, given
as ``policy`` or ``policy.py``; without one, all of them. The run works on a
fresh snapshot of src/, tests/, skills/, config/ and pyproject.toml in
``.mutation/<modules>/`` (gitignored), so other edits in the work tree during a long run
neither disturb it nor are disturbed, and (without ``--again``) no result is
reused from an earlier run. mutmut runs each mutant against the
unit tests of ``pytest_add_cli_args_test_selection`` that executed the mutated
function in a clean run.

Prints, per module, the mutants killed (a timeout counts as killed: the tests
noticed), the total, the score, and the survivors that docs/mutation.md does
not list as equivalent; ``--show`` prints their diffs. Inspect one with
``cd .mutation/<modules> && python -m mutmut show NAME``.

``--report`` prints the scores of the last run of the selection (also one
still going on, or cut short: its mutants not run yet count as not killed)
and runs nothing.

``--sample N`` runs N mutants of each module drawn at random (``--seed``,
default 30, makes the draw repeatable) instead of all of them, and scores
those: a quick estimate for a module changed by a branch. mutmut first
generates every mutant and records which tests run each function, running
the mutants of one small function to get there (they are not scored unless
drawn); the names drawn are kept in ``sample.json`` for ``--report`` and
``--again``.

``--again`` reruns only the mutants the last run of the same selection did
not kill, against the current tests (copied in anew), and prints the score
of the whole run: a quick way to check that new tests kill what they aim at.
It assumes tests were only added since that run. When a module changed,
mutmut regenerates its mutants and forgets the results of every function it
judges affected (a changed one and, through its dependency tracking, every
function calling one: for policy or shellparse nearly all of them); those
mutants are run anew, so the score is that of the current code, at close to
the cost of a full run.

Exit status: 0 when the run completed, 1 when mutmut failed (its log is
``.mutation/<modules>/mutmut.log``), 2 for bad usage or a missing mutmut.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / ".mutation"
DOC = REPO / "docs" / "mutation.md"
# What the tests import and read: the package, the tests, and the bundled layer.
SNAPSHOT = ("src", "tests", "skills", "config", "pyproject.toml")
# A mutant the tests noticed: they failed, errored, or ran past the time limit.
DETECTED = {"killed", "timeout", "segfault", "caught by type check"}
# `| `name` | why |`; a `*` in the name stands for every mutant of a function.
EQUIVALENT_ROW = re.compile(r"^\|\s*`(mdagent\.[\wǁ.]+__mutmut_(?:\d+|\*))`")


def _modules() -> list[str]:
    """The mutated modules, as configured in pyproject.toml: ``safety/policy.py`` …"""
    with open(REPO / "pyproject.toml", "rb") as f:
        config = tomllib.load(f)["tool"]["mutmut"]
    return [Path(p).relative_to("src/mdagent").as_posix() for p in config["only_mutate"]]


def _dotted(module: str) -> str:
    """The module's import name: ``safety/policy.py`` -> ``mdagent.safety.policy``."""
    return "mdagent." + module.removesuffix(".py").replace("/", ".")


def _equivalents() -> list[str]:
    """Mutant names (or ``*`` patterns) listed as equivalent in docs/mutation.md."""
    if not DOC.exists():
        return []
    lines = DOC.read_text().splitlines()
    return [m.group(1) for line in lines if (m := EQUIVALENT_ROW.match(line))]


def _is_listed(name: str, listed: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in listed)


def _snapshot(work: Path, modules: list[str]) -> None:
    """A fresh copy of what the tests need, without caches or old results.

    Its pyproject.toml mutates only ``modules``: generating mutants of the
    others would cost minutes for nothing.
    """
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".hypothesis")
    for name in SNAPSHOT:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, work / name, ignore=ignore)
        elif source.exists():
            shutil.copy2(source, work / name)
    _only_mutate(work, modules)


def _only_mutate(work: Path, modules: list[str]) -> None:
    config = work / "pyproject.toml"
    only = ", ".join(f'"src/mdagent/{m}"' for m in modules)
    text = re.sub(r"(?ms)^only_mutate = \[.*?\]", f"only_mutate = [{only}]", config.read_text())
    config.write_text(text)


def _refresh(work: Path, modules: list[str]) -> str | None:
    """Bring an earlier run's folder up to date but for ``modules``' mutants; a problem, if any.

    The tests and pyproject.toml are copied anew, and so is the rest of the
    package (the new tests may use it), as plain code: mutmut takes a file whose copy is newer
    than its source as already mutated, and the snapshot now mutates only
    ``modules``, whose mutants (and results) are kept.
    """
    for module in modules:
        now = REPO / "src" / "mdagent" / module
        then = work / "src" / "mdagent" / module
        if not then.exists():
            return f"{module} was not in the last run: run without --again"
        if now.read_bytes() != then.read_bytes():
            # mutmut regenerates the module's mutants (the source is newer than
            # them) and forgets the results of the functions it judges affected;
            # those mutants are run below.
            print(f"{module} changed since the last run: its affected mutants run anew")
            shutil.copy2(now, then)
    chosen = {Path("mdagent") / m for m in modules}
    for source in (REPO / "src").rglob("*.py"):
        relative = source.relative_to(REPO / "src")
        if relative in chosen or "__pycache__" in relative.parts:
            continue
        for target, copy in (
            (work / "src", shutil.copy2),
            (work / "mutants" / "src", shutil.copyfile),
        ):
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            copy(source, target / relative)
    # The configuration too: new test files join the selection mutmut runs.
    shutil.copy2(REPO / "pyproject.toml", work / "pyproject.toml")
    _only_mutate(work, modules)
    for tests in (work / "tests", work / "mutants" / "tests"):
        if tests.exists():
            shutil.rmtree(tests)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    shutil.copytree(REPO / "tests", work / "tests", ignore=ignore)
    return None


def _run_mutmut(work: Path, names: list[str], jobs: int) -> int:
    log = work / "mutmut.log"
    # The snapshot's src/ must be the one imported: mutmut puts mutants/src
    # first on sys.path; PYTHONPATH would put the work tree's src/ before it.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with open(log, "w") as out:
        return subprocess.run(
            [sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs), *names],
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        ).returncode


def _statuses(work: Path, module: str) -> dict[str, str]:
    """Mutant name -> mutmut status for one module of the last run."""
    from mutmut.stats import status_by_exit_code

    meta = work / "mutants" / "src" / "mdagent" / f"{module}.meta"
    if not meta.exists():
        return {}
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    return {name: status_by_exit_code[code] for name, code in codes.items()}


def _warm_up_pattern(module: str) -> list[str]:
    """Patterns for the mutants of a module's smallest functions, smallest first:
    running one makes mutmut generate every mutant and collect its stats."""
    import ast

    tree = ast.parse((REPO / "src" / "mdagent" / module).read_text())
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    functions.sort(key=lambda n: sum(1 for _ in ast.walk(n)))
    return [f"{_dotted(module)}.x_{f.name}__mutmut_*" for f in functions]


def _draw(
    work: Path, modules: list[str], size: int, seed: int, jobs: int, pooled: bool = False
) -> list[str] | None:
    """Generate every mutant of ``modules`` and draw ``size`` of each; None if mutmut failed.

    ``pooled``: draw ``size`` from all of them together (the parts of a module
    that was split are scored as the one module they were).
    """
    import random

    for module in modules:
        if not _statuses(work, module):
            for pattern in _warm_up_pattern(module):
                if _run_mutmut(work, [pattern], jobs) == 0:
                    break
            else:
                return None
    drawn: list[str] = []
    generator = random.Random(seed)
    pools = [modules] if pooled else [[module] for module in modules]
    for pool in pools:
        names = sorted(name for module in pool for name in _statuses(work, module))
        drawn += generator.sample(names, min(size, len(names)))
    (work / "sample.json").write_text(json.dumps(drawn, indent=0))
    return drawn


def _sampled(work: Path) -> set[str] | None:
    """The mutants a sample run drew (None: the run took them all)."""
    path = work / "sample.json"
    return set(json.loads(path.read_text())) if path.exists() else None


def _diff(work: Path, name: str) -> str:
    shown = subprocess.run(
        [sys.executable, "-m", "mutmut", "show", name],
        cwd=work,
        capture_output=True,
        text=True,
    )
    return shown.stdout.strip()


def _report(work: Path, chosen: list[str], show: bool) -> None:
    """Print each module's score (and the selection's together), then the unexplained survivors."""
    equivalent = _equivalents()
    # "other" counts survivors not listed as equivalent, and mutants not run yet.
    print(f"\n{'module':<16}{'killed':>8}{'total':>8}{'score':>8}{'equiv':>7}{'other':>7}")
    unexplained: list[str] = []
    sampled = _sampled(work)
    if sampled is not None:
        print(f"(a sample: {len(sampled)} mutants drawn, scored alone)")
    together = [0, 0]  # killed, total: the selection as one module (a split one's parts)
    for module in chosen:
        statuses = _statuses(work, module)
        if sampled is not None:
            statuses = {n: s for n, s in statuses.items() if n in sampled}
        total = len(statuses)
        killed = sum(status in DETECTED for status in statuses.values())
        missed = sorted(n for n, status in statuses.items() if status not in DETECTED)
        equiv = [n for n in missed if _is_listed(n, equivalent)]
        others = [n for n in missed if not _is_listed(n, equivalent)]
        unexplained += [f"{n} ({statuses[n]})" for n in others]
        score = f"{100 * killed / total:.1f}%" if total else "-"
        print(f"{module:<16}{killed:>8}{total:>8}{score:>8}{len(equiv):>7}{len(others):>7}")
        together[0] += killed
        together[1] += total
    if len(chosen) > 1 and together[1]:
        print(
            f"{'together':<16}{together[0]:>8}{together[1]:>8}{100 * together[0] / together[1]:>7.1f}%"
        )
    if unexplained:
        print(
            f"\n{len(unexplained)} mutant(s) not killed and not listed as equivalent in docs/mutation.md:"
        )
        for line in unexplained:
            print(f"  {line}")
            if show:
                print(_diff(work, line.split()[0]), "\n")


def main(argv: list[str] | None = None) -> int:
    known = _modules()
    parser = argparse.ArgumentParser(
        prog="python tools/mutation.py",
        description="Mutation-test the safety modules and print the score per module.",
    )
    parser.add_argument("modules", nargs="*", metavar="MODULE", help=f"one of: {' '.join(known)}")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="mutants run at once")
    parser.add_argument("--show", action="store_true", help="print the diff of each survivor")
    parser.add_argument(
        "--again", action="store_true", help="rerun the last run's survivors with the current tests"
    )
    parser.add_argument(
        "--report", action="store_true", help="print the last run's scores; run nothing"
    )
    parser.add_argument(
        "--sample", type=int, metavar="N", help="run N mutants of each module, drawn at random"
    )
    parser.add_argument("--seed", type=int, default=30, help="the draw of --sample")
    parser.add_argument(
        "--pooled",
        action="store_true",
        help="with --sample: draw N from the modules together (a split module's parts)",
    )
    args = parser.parse_args(argv)

    chosen = []
    for name in args.modules:
        module = name if name.endswith(".py") else f"{name}.py"
        # A module is named by its path below src/mdagent/ or by its file name alone.
        module = next((m for m in known if m == module or Path(m).name == module), module)
        if module not in known:
            parser.error(f"{name}: not a mutated module (one of: {' '.join(known)})")
        chosen.append(module)
    chosen = chosen or known

    try:
        import mutmut
    except ImportError:
        print("mutmut is not installed: pip install -e '.[mutation]'", file=sys.stderr)
        return 2

    # One folder per selection: runs of different modules can go on side by side.
    work = RESULTS / ("all" if chosen == known else "+".join(Path(m).stem for m in chosen))
    if (args.again or args.report) and not work.exists():
        work = RESULTS / "all"  # the full run holds every module's results
    print(f"mutmut {mutmut.__version__}, {date.today()}: {' '.join(chosen)} in {work}", flush=True)
    if args.report:
        names = []
    elif args.again:
        problem = _refresh(work, chosen)
        if problem:
            print(problem, file=sys.stderr)
            return 2
        drawn = _sampled(work)
        names = [
            name
            for module in chosen
            for name, status in _statuses(work, module).items()
            if status not in DETECTED and (drawn is None or name in drawn)
        ]
        if not names:
            print("no survivor to run again")
    else:
        _snapshot(work, chosen)
        names = [f"{_dotted(m)}.*" for m in chosen]
        if args.sample:
            drawn = _draw(work, chosen, args.sample, args.seed, args.jobs, args.pooled)
            if drawn is None:
                print(f"mutmut failed: see {work / 'mutmut.log'}", file=sys.stderr)
                return 1
            names = drawn
    if names and _run_mutmut(work, names, args.jobs) != 0:
        print(f"mutmut failed: see {work / 'mutmut.log'}", file=sys.stderr)
        return 1
    if args.again:  # the mutants of functions changed since the run, reset by mutmut
        drawn = _sampled(work)
        fresh = [
            n
            for m in chosen
            for n, s in _statuses(work, m).items()
            if s == "not checked" and (drawn is None or n in drawn)
        ]
        if fresh and _run_mutmut(work, fresh, args.jobs) != 0:
            print(f"mutmut failed: see {work / 'mutmut.log'}", file=sys.stderr)
            return 1

    _report(work, chosen, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
