"""The ``skill`` built-in: a skill's full instructions, loaded when the model asks.

Only skill names and descriptions go into the system prompt; the body comes
through this tool when a task needs it (progressive disclosure). With it
come the skill's folder and the files in it, so the model can read a
``references/`` file or run a ``scripts/`` one the body names: ``read_file``,
``glob`` and ``grep`` may read inside the folders of the skills this tool
returns, even outside the workspace (see :func:`mdagent.declarations.skills.skill_read_roots`).
Skills marked ``disable-model-invocation: true`` are not returned.

Rendering the body (its live context, its includes) and running a
``context: fork`` skill are the agent's: the tool uses the runner its caller
put on the context (``ctx.skill_runner``, :class:`mdagent.agent.skillrunner.SkillRunner`)
and, given none, says that no skill can be loaded for this call.
"""

from __future__ import annotations

import os

from mdagent.core.specs import command_key

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

#: At most this many of a skill's files are listed (the listing says when it stops).
MAX_FILES = 50
_SKIPPED = {"node_modules", "__pycache__"}


def skill_tool(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """The skill ``args["name"]``: its body, folder and files; or a failure listing the others."""
    from mdagent.core.errors import MdagentError
    from mdagent.declarations.skills import model_refusal

    registry = getattr(ctx, "registry", None)
    name = str(args["name"]).strip().lstrip("/")
    skills = getattr(registry, "skills", None)
    if registry is None or skills is None:
        return {"error": "no skills are loaded"}
    # As for commands: case and "_"/"-" are not significant.
    for candidate in dict.fromkeys([name, command_key(name)]):
        skill = skills.get(candidate)
        if skill is None or skill.disable_model_invocation:
            continue
        refusal = model_refusal(skill)
        if refusal:
            return {"error": f"skill {candidate} cannot be used: {refusal}"}
        runner = getattr(ctx, "skill_runner", None)
        if runner is None:
            return {"error": f"cannot load skill {candidate}: nothing runs skills for this call"}
        # Its live context runs as the model's calls; its includes are confined.
        try:
            body = runner.body(skill, ctx)
        except MdagentError as exc:
            return {"error": f"cannot load skill {candidate}: {exc}"}
        if skill.context == "fork":
            forked = runner.fork(skill, body, ctx)
            if forked is not None:
                return forked  # a sub-conversation; only its answer comes back
        folder = skill.dir
        files, total = skill_files(folder)
        output = body.rstrip("\n") + (
            f"\n\nSkill folder: {folder} (relative paths in this skill start there; "
            "read its files with read_file)\n"
        )
        result: dict[str, Any] = {"name": candidate, "path": folder, "output": output}
        result["files"] = files
        if total > len(files):
            result["files_truncated"] = True
            result["files_total"] = total
        return result
    visible = sorted(n for n, s in skills.items() if not s.disable_model_invocation)
    return {"error": f"unknown skill: {name}. Available: {', '.join(visible) or '(none)'}"}


def skill_files(folder: str, limit: int = MAX_FILES) -> tuple[list[str], int]:
    """``(the first `limit` files, how many there are)`` in a skill's folder, relative, sorted.

    ``SKILL.md`` itself, hidden entries and ``node_modules`` are left out;
    symlinked folders are not entered. Counting stops at ten times the
    limit: the model needs to know the list is partial, not by how much.
    """
    found: list[str] = []
    total = 0
    for here, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED)
        rel = os.path.relpath(here, folder)
        for entry in sorted(names):
            if entry.startswith(".") or (rel == "." and entry == "SKILL.md"):
                continue
            total += 1
            if len(found) < limit:
                found.append(entry if rel == "." else f"{rel}/{entry}")
        if total >= limit * 10:
            break
    return found, total
