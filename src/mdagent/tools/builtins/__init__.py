"""The built-in tools: exec, files, search, web and skill (DESIGN §5).

Importing this package is cheap: it holds only where each handler is
(:data:`HANDLERS`; the tools' declarations are :data:`mdagent.core.catalog.SPECS`).
Each handler module is imported on the tool's first call, so ``agent
/my-command`` never pays for httpx or the gitignore matcher.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

from mdagent.core.catalog import SPECS, real_name
from mdagent.core.lazy import load

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

#: Tool name -> "module:function" of its handler; the module is imported on first call.
HANDLERS: dict[str, str] = {
    "exec": f"{__name__}.exec:exec_tool",
    "read_file": f"{__name__}.files:read_file",
    "write_file": f"{__name__}.files:write_file",
    "edit_file": f"{__name__}.files:edit_file",
    "glob": f"{__name__}.search:glob_tool",
    "grep": f"{__name__}.search:grep_tool",
    "fetch": f"{__name__}.web:fetch",
    "skill": f"{__name__}.skill:skill_tool",
}


def handler_for(name: str):
    """A handler for the built-in ``name`` that imports its module on first call."""
    target = HANDLERS[real_name(name)]
    function_name = target.rpartition(":")[2]
    resolved = []

    def handler(args: dict[str, Any], ctx: Any) -> Any:
        if not resolved:
            resolved.append(load(target))
        return resolved[0](args, ctx)

    handler.__name__ = function_name
    handler.__qualname__ = f"builtin:{name}"
    return handler


def register_builtins(toolbox: Any, names: Iterable[str] | None = None) -> None:
    """Add the built-in tools (all, or only ``names``, aliases accepted) to ``toolbox``."""
    chosen = list(SPECS) if names is None else [real_name(n) for n in names]
    for name in dict.fromkeys(chosen):
        spec = SPECS[name]
        toolbox.add(
            name,
            description=spec["description"],
            params=copy.deepcopy(spec["params"]),
            required=spec["required"],
            aliases=spec["aliases"],
            handler=handler_for(name),
            category=spec["category"],
            security=spec["security"],
            tier=spec["tier"],
        )
