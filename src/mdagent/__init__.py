"""mdagent: a command-line agent whose tools and commands are declared in YAML and SKILL.md."""

from mdagent.commands import Commands
from mdagent.toolbox import Result, Tool, Toolbox, ToolContext

__version__ = "0.1.0"
__all__ = ["Commands", "Result", "Tool", "ToolContext", "Toolbox", "__version__"]
