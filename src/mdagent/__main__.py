"""``python -m mdagent``: the same entry point as the ``agent`` command."""

from mdagent.cli.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
