"""mdagent: a command-line agent whose tools and commands are declared in YAML and SKILL.md.

The public API: ``from mdagent import Toolbox, Result, ToolContext, Commands``.
Names are imported on first use, so ``agent /name`` loads only what it runs.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Commands", "Result", "Tool", "ToolContext", "Toolbox", "__version__"]

_HOMES = {
    "Commands": "mdagent.commands",
    "Result": "mdagent.toolbox",
    "Tool": "mdagent.toolbox",
    "ToolContext": "mdagent.toolbox",
    "Toolbox": "mdagent.toolbox",
}

TYPE_CHECKING = False  # not typing's: see mdagent.records
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from mdagent.commands import Commands
    from mdagent.toolbox import Result, Tool, Toolbox, ToolContext


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'mdagent' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
