"""The ``skill`` built-in: a skill's full instructions, loaded when the model asks.

Only skill names and descriptions go into the system prompt; the body comes
through this tool when a task needs it (progressive disclosure).
"""

from __future__ import annotations

from typing import Any

from mdagent.specs import command_key


def skill_tool(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """The body of the skill ``args["name"]``, or a failure listing the skills there are."""
    registry = getattr(ctx, "registry", None)
    name = str(args["name"]).strip().lstrip("/")
    if registry is None:
        return {"error": "no skills are loaded"}
    # As for commands: case and "_"/"-" are not significant.
    for candidate in dict.fromkeys([name, command_key(name)]):
        try:
            body = registry.skill_body(candidate)
        except KeyError:
            continue
        return {"name": candidate, "output": body}
    available = ", ".join(sorted(getattr(registry, "skills", None) or ())) or "(none)"
    return {"error": f"unknown skill: {name}. Available: {available}"}
