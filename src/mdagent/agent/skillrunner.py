"""The agent's way of running a prompt skill, handed down to the ``skill`` tool.

The ``skill`` built-in (:mod:`mdagent.tools.builtins.skill`) loads a skill's
body when the model asks for it; rendering that body (its live context run
as the caller's calls, its includes confined) and running a ``context: fork``
skill as a sub-conversation are the agent's work (:mod:`mdagent.agent.promptskills`).
Tools sit below the agent and never import it: whoever makes a call that may
reach the tool (the agent's turn, a person's ``/name``, ``agent mcp serve``,
``agent test``) puts a :class:`SkillRunner` on its context
(:attr:`mdagent.core.calls.ToolContext.skill_runner`), as the policy's approver
is handed in. Cheap to make: :mod:`mdagent.agent.promptskills` is imported when
a skill is loaded, not before (``agent /name`` makes one).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

    from mdagent.core.calls import ToolContext
    from mdagent.core.specs import Skill


class SkillRunner:
    """Renders a prompt skill for the ``skill`` tool and runs it forked inside an agent turn."""

    def body(self, skill: Skill, ctx: ToolContext) -> str:
        """``skill``'s body as the model reads it, its commands run as ``ctx``'s calls.

        Its arguments stay as written (the model reads them); raises
        :class:`mdagent.core.errors.MdagentError` when an include or a command
        cannot be had (see :func:`mdagent.agent.promptskills.render`).
        """
        from mdagent.agent.promptskills import render

        return render(skill, None, ctx, strict=False)

    def fork(self, skill: Skill, body: str, ctx: ToolContext) -> dict[str, Any] | None:
        """The result of running ``skill`` (its ``body``) as a sub-conversation of ``ctx``'s.

        None outside an agent turn (no conversation runs forked skills): the
        body is then returned as for any skill.
        """
        from mdagent.agent.promptskills import fork_runner

        run = fork_runner(getattr(ctx, "conversation_id", None))
        return None if run is None else run(skill, body, ctx)
