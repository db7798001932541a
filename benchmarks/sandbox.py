"""Per-command cost of the sandbox's routes: namespaces via bwrap, via mdagent's helper,
Landlock alone, and no sandbox.

Run by hand: ``python benchmarks/sandbox.py [RUNS]`` (default 41). Each run
starts ``true`` through :func:`mdagent.tools.process.run_tool_process` (the path of
every ``exec``, ``run:`` and ``shell:`` call) as a model's call, in a
temporary workspace that is a git repository with a project layer (so there
is something to bind read-only), with ``AGENT_SANDBOX`` set to each route in
turn and ``sandbox.mode: off`` for "none"; the routes are interleaved, so a
change in the machine's speed touches them alike. It prints each route's
median and its overhead over "none", and what probing a route costs once
per run. Goal (issue 29): at most 10 ms per command, on these machines.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mdagent.core import notices
from mdagent.core.calls import ToolContext
from mdagent.safety import namespaces
from mdagent.safety.policy import Policy
from mdagent.tools.process import run_tool_process

ROUTES = ("none", "landlock", "bwrap", "direct")


def workspace(base: Path) -> Path:
    root = base / "ws"
    (root / ".agents" / "config").mkdir(parents=True)
    (root / ".agents" / "config" / "agent.yaml").write_text("policy: {mode: full}\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


_CONTEXTS: dict[str, ToolContext] = {}


def context(root: Path, route: str) -> ToolContext:
    """A model's call context for ``route``, made once: its policy keeps the protected
    paths between calls, as in a real run."""
    if route not in _CONTEXTS:
        settings = {"sandbox": {"mode": "off"}} if route == "none" else {}
        policy = Policy(settings, workdir=root)
        _CONTEXTS[route] = ToolContext(
            workdir=str(root), caller="model", settings=settings, policy=policy
        )
    return _CONTEXTS[route]


def one_call(root: Path, route: str) -> float:
    """Seconds for one ``true`` through ``route``."""
    if route != "none":
        os.environ[namespaces.ROUTE_VARIABLE] = route
    ctx = context(root, route)
    started = time.perf_counter()
    result = run_tool_process(["true"], ctx)
    took = time.perf_counter() - started
    if result.get("exit_code") != 0:
        raise SystemExit(f"{route}: {result}")
    return took


def main(runs: int) -> None:
    notices.show_with(lambda message, warning: None)  # the Landlock route's note, once per run
    available = ["none"]
    for route in ROUTES[1:]:
        started = time.perf_counter()
        taken = namespaces.route_for(route)
        probe_ms = (time.perf_counter() - started) * 1000
        if taken.name == route:
            available.append(route)
            print(f"probe {route:9} {probe_ms:6.1f} ms (once per run)")
        else:
            print(f"skip  {route:9} {taken.why}")
    with tempfile.TemporaryDirectory() as base:
        root = workspace(Path(base))
        times: dict[str, list[float]] = {route: [] for route in available}
        for route in available:  # warm-up: imports, caches, the private temp folder
            one_call(root, route)
        for _ in range(runs):
            for route in available:
                times[route].append(one_call(root, route))
    none = statistics.median(times["none"]) * 1000
    print(
        f"\n{'route':9} {'median':>9} {'overhead':>9}   ({runs} runs, load {os.getloadavg()[0]:.1f})"
    )
    for route in available:
        median = statistics.median(times[route]) * 1000
        print(f"{route:9} {median:7.1f} ms {median - none:+7.1f} ms")
    # The floors, started bare (no mdagent around them), to read the figures above by.
    floors = {
        "true": ["true"],
        "bwrap true": namespaces.bwrap_command(
            namespaces.route_for("bwrap").program or "bwrap", ["true"], writable=[], binds=[],
            network=True,
        ),
        "python -I -S -c pass": [sys.executable, "-I", "-S", "-c", "pass"],
    }  # fmt: skip
    print()
    for name, argv in floors.items():
        if name == "bwrap true" and "bwrap" not in available:
            continue
        took = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run(argv, check=True)
            took.append(time.perf_counter() - started)
        print(f"floor {name:22} {statistics.median(took) * 1000:6.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 41)
