"""The ``agent`` command line."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agent`` and ``mdagent`` scripts."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["--version"], ["-V"]):
        from mdagent import __version__

        print(f"mdagent {__version__}")
        return 0
    return 0
