"""Registry compile cost: 10, 100 and 1,000 generated skills, cold then warm.

Run by hand: ``python benchmarks/registry.py``. Cold = no cache (parse every
SKILL.md); warm = the JSON cache is fresh (re-stat every source, read JSON).
Targets: cold <= 2 ms per skill; warm 1,000 within 15 ms of warm 10.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

SIZES = (10, 100, 1000)


def make_layer(root: Path, count: int) -> Path:
    layer = root / f"layer-{count}"
    for i in range(count):
        folder = layer / "skills" / f"skill-{i:04d}"
        folder.mkdir(parents=True)
        dispatch = "command-dispatch: tool\ncommand-tool: exec\n" if i % 2 else ""
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:04d}\ndescription: Generated skill number {i} for the benchmark\n"
            f'{dispatch}metadata: {{"openclaw": {{"requires": {{"bins": ["sh"]}}}}}}\n---\n'
            + "Some instructions.\n"
            * 20
        )
    return layer


# Each measurement runs in a fresh interpreter, as `agent` would: no module is
# warm that a real process would not have warm.
PROBE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    t0 = time.perf_counter()
    from mdagent.layers import Layer
    from mdagent.registry import load_registry
    r = load_registry([Layer(Path(sys.argv[1]), "option")], Path(sys.argv[2]))
    t1 = time.perf_counter()
    assert len(r.skills) == int(sys.argv[3]), len(r.skills)
    print((t1 - t0) * 1000, r.from_cache)
    """
)


def measure(layer: Path, state: Path, count: int) -> tuple[float, bool]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(layer), str(state), str(count)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return float(out[0]), out[1] == "True"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        warm_medians = {}
        print(f"{'skills':>7} {'cold ms':>9} {'per skill':>10} {'warm ms':>9}")
        for count in SIZES:
            layer = make_layer(root, count)
            colds = []
            for attempt in range(3):
                state = root / f"state-{count}-{attempt}"
                ms, cached = measure(layer, state, count)
                assert not cached
                colds.append(ms)
            warms = []
            for _ in range(7):
                ms, cached = measure(layer, state, count)
                assert cached
                warms.append(ms)
            cold, warm = statistics.median(colds), statistics.median(warms)
            warm_medians[count] = warm
            print(f"{count:>7} {cold:>9.1f} {cold / count:>10.2f} {warm:>9.1f}")
        gap = warm_medians[1000] - warm_medians[10]
        print(f"warm 1,000 - warm 10 = {gap:.1f} ms (target <= 15 ms)")


if __name__ == "__main__":
    main()
