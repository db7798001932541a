"""What the model is told: the system prompt and the tools it may call.

The system prompt is the base instructions, ``agent.instructions`` from
agent.yaml, the nearest AGENTS.md and the index of skills a model may load;
the tool list is the toolbox cut down to the configured tier, to what is
available here, and to what no plain deny rule withholds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdagent.core.defaults import PROJECT_DIR, setting
from mdagent.core.specs import TIERS, unmet_requirement

if TYPE_CHECKING:
    from mdagent.registry.model import Registry
    from mdagent.tools.toolbox import Tool, Toolbox

BASE_INSTRUCTIONS = """\
You are mdagent, a command-line agent. You work in the workspace {workdir}; \
the current directory is {cwd}.
Use the tools to look at files and run commands instead of guessing, and to make the \
changes you are asked for. When a tool fails, read the error and adjust.
Be concise: answer in plain text, briefly, and stop when the task is done."""


def model_tools(
    toolbox: Toolbox, settings: Mapping[str, Any], without: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """The tools sent to the model: of the configured tier or below, and available.

    ``settings["agent"]["tier"]`` is essential < standard < full (default
    full); a tool whose ``requires`` is unmet here is left out. Aliases are
    never sent, nor is a tool a deny rule without a pattern covers (``deny: [fetch]``),
    nor one named in ``without`` (a prompt skill's ``disallowed-tools``; names
    or aliases). The loop refuses a call to a tool it did not offer.
    """
    withheld = {toolbox.tool_for(name).name for name in without}
    tier = str(setting(settings, "agent", "tier", "full"))
    ceiling = TIERS.index(tier) if tier in TIERS else len(TIERS) - 1
    denied = _withheld(settings)
    out = []
    for tool in toolbox:
        tool_tier = str(tool.meta.get("tier") or "full")
        rank = TIERS.index(tool_tier) if tool_tier in TIERS else len(TIERS) - 1
        if rank > ceiling or unmet_requirement(tool.meta.get("requires")) is not None:
            continue
        if denied(tool) or tool.name in withheld:
            continue
        out.append({"name": tool.name, "description": tool.description, "parameters": tool.schema})
    return out


def _withheld(settings: Mapping[str, Any]) -> Callable[[Tool], bool]:
    if (
        not setting(settings, "policy", "deny", None)
        and setting(settings, "policy", "mode", None) != "plan"
    ):
        return lambda tool: False
    from mdagent.safety.policy import withheld

    return withheld(settings)


def system_prompt(
    *,
    workdir: str | os.PathLike[str],
    cwd: str | os.PathLike[str],
    settings: Mapping[str, Any],
    registry: Registry | None = None,
    tool_names: Iterable[str] = (),
    read_denied: Callable[[str], str | None] | None = None,
) -> str:
    """Base instructions + ``agent.instructions`` + memory files + the skill index.

    The memory files are ``AGENTS.md``, ``CLAUDE.md``, ``GEMINI.md`` and
    ``CLAUDE.local.md`` (:mod:`mdagent.declarations.memory`), with their ``@imports``;
    ``read_denied`` applies ``read_file``'s deny rules to what they import.
    """
    from mdagent.declarations.memory import read_memory

    parts = [BASE_INSTRUCTIONS.format(workdir=workdir, cwd=cwd)]
    extra = setting(settings, "agent", "instructions", "")
    if extra:
        parts.append(str(extra).strip())
    for memory in read_memory(Path(cwd), Path(workdir), settings, denied=read_denied):
        parts.append(f"Instructions from {memory.path}:\n\n{memory.text}")
    if registry is not None and "skill" in set(tool_names):
        index = skill_index(registry)
        if index:
            parts.append(index)
    return "\n\n".join(parts) + "\n"


def find_agents_md(cwd: Path, workdir: Path) -> Path | None:
    """The nearest ``AGENTS.md`` from ``cwd`` upwards.

    The walk stops at the workspace root when ``cwd`` is inside a real project
    (one with ``.agents/`` or ``.git``), so a stray file above it does not leak
    in; outside a project it goes up to the filesystem root.
    """
    cwd = cwd.resolve()
    workdir = workdir.resolve()
    is_project = (workdir / PROJECT_DIR).is_dir() or (workdir / ".git").exists()
    inside = cwd == workdir or workdir in cwd.parents
    for folder in (cwd, *cwd.parents):
        candidate = folder / "AGENTS.md"
        if candidate.is_file():
            return candidate
        if inside and is_project and folder == workdir:
            return None
    return None


def skill_index(registry: Registry) -> str:
    """The skills a model may load: name and description, or "" when there are none.

    Skills with ``disable-model-invocation`` or unmet requirements are left out.
    """
    lines = [
        f"- {skill.name}: {' '.join((skill.description or '').split())}"
        for name, skill in sorted(registry.skills.items())
        if not skill.disable_model_invocation and unmet_requirement(skill.requires) is None
    ]
    if not lines:
        return ""
    return (
        "Skills hold instructions for particular tasks. Before doing a task one of them "
        "covers, use the `skill` tool to load it:\n" + "\n".join(lines)
    )
