"""mdagent: a command-line agent whose tools and commands are declared in YAML and SKILL.md.

The public API: ``from mdagent import Toolbox, Result, ToolContext, Commands``.
Names are imported on first use, so ``agent /name`` loads only what it runs.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Commands", "Result", "Tool", "ToolContext", "Toolbox", "__version__"]

#: Public name -> "module:attribute" (mdagent.lazy), imported on first use.
_HOMES = {
    "Commands": "mdagent.commands:Commands",
    "Result": "mdagent.calls:Result",
    "Tool": "mdagent.toolbox:Tool",
    "ToolContext": "mdagent.calls:ToolContext",
    "Toolbox": "mdagent.toolbox:Toolbox",
}

TYPE_CHECKING = False  # not typing's: see mdagent.records
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from mdagent.calls import Result, ToolContext
    from mdagent.commands import Commands
    from mdagent.toolbox import Tool, Toolbox


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'mdagent' has no attribute {name!r}")
    from mdagent.lazy import load

    value = load(home)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
