"""The shell edge: ``agent`` and ``mdagent`` (entry point ``mdagent.cli:main``).

Nothing is imported here: :func:`main` loads :mod:`mdagent.cli.cli` when called,
so the ``/name`` fast path pays for one small module more.
"""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agent`` and ``mdagent`` scripts (:func:`mdagent.cli.cli.main`)."""
    from mdagent.cli.cli import main as run

    return run(argv)
