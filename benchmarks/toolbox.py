"""Toolbox.run overhead: a no-op tool with one string parameter vs the bare handler.

Run by hand: ``python benchmarks/toolbox.py``. Prints microseconds per call
and the ratio; the target is <= 100 us of overhead per call.
"""

from __future__ import annotations

import time

from mdagent import Toolbox


def noop(args):
    return {"echo": args["text"]}


def per_call_us(fn, n: int) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e6


def main() -> None:
    tb = Toolbox()
    tb.add(
        "noop",
        description="Do nothing",
        params={"text": {"type": "string"}},
        required=["text"],
        handler=noop,
    )
    args = {"text": "hello"}
    tb.run("noop", args)  # compile the validator outside the timing
    n = 20_000
    direct = per_call_us(lambda: noop(args), n)
    through = per_call_us(lambda: tb.run("noop", args), n)
    print(f"handler called directly : {direct:8.2f} us/call")
    print(f"Toolbox.run             : {through:8.2f} us/call")
    print(f"overhead                : {through - direct:8.2f} us/call (target <= 100)")
    print(f"ratio                   : {through / direct:8.1f}x")


if __name__ == "__main__":
    main()
