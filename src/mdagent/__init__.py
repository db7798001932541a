"""mdagent: a command-line agent whose tools and commands are declared in YAML and SKILL.md.

The public API: ``from mdagent import Toolbox, Result, ToolContext, Commands``.
Names are imported on first use, so ``agent /name`` loads only what it runs.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Commands", "Result", "Tool", "ToolContext", "Toolbox", "__version__"]

#: Public name -> "module:attribute" (mdagent.core.lazy), imported on first use.
_HOMES = {
    "Commands": "mdagent.session.commands:Commands",
    "Result": "mdagent.core.calls:Result",
    "Tool": "mdagent.tools.toolbox:Tool",
    "ToolContext": "mdagent.core.calls:ToolContext",
    "Toolbox": "mdagent.tools.toolbox:Toolbox",
}

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from mdagent.core.calls import Result, ToolContext
    from mdagent.session.commands import Commands
    from mdagent.tools.toolbox import Tool, Toolbox


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'mdagent' has no attribute {name!r}")
    from mdagent.core.lazy import load

    value = load(home)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
