"""What the docs read from mdagent itself, imported here and nowhere else.

The generated parts of the docs (key tables, the CLI reference, the
exit-status table) come from the objects the program runs with: the JSON
Schemas it validates declarations and settings with, the typer app, the
exit-status table in ``mdagent.core.errors`` and the default settings. When a
module moves (the package layout will change), only this file follows it.
"""

from __future__ import annotations

from typing import Any

#: The schemas the program validates with, by the name ``mdagent`` loads them under.
SCHEMAS = ("settings", "skill", "declarations")


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema ``name`` exactly as the program loads it (from its package)."""
    from mdagent.declarations.schemas import schema as load

    return load(name)


def default_settings() -> dict[str, Any]:
    """The settings a run has when no layer sets them."""
    from mdagent.core.defaults import DEFAULT_SETTINGS

    return DEFAULT_SETTINGS


def exit_statuses() -> tuple[tuple[int, str], ...]:
    """``(status, meaning)`` for every status ``agent`` exits with."""
    from mdagent.core.errors import EXIT_STATUSES

    return EXIT_STATUSES


def cli_command() -> Any:
    """The click command behind ``agent`` (the typer app every subcommand runs in)."""
    from typer.main import get_command

    from mdagent.cli.app import app

    return get_command(app)


def version() -> str:
    """The package's version, as ``agent --version`` prints it."""
    from mdagent import __version__

    return __version__
