"""When an agent turn records checkpoints: before its first call that can write, and at its end.

:mod:`mdagent.rewind.checkpoints` records and reads them; this module decides when,
for one agent's turns. The loop (:class:`mdagent.agent.loop.Agent`) calls
:meth:`TurnCheckpoints.start_turn` as a turn opens, :meth:`before_calls`
before each batch of tool calls (the first batch holding a call that can
write records "before"), and :meth:`end_turn` when the turn ends, however it
ends (an answer, the step limit, an error, Ctrl-C): the "after" that tells
the turn's changes from the person's later ones.

A checkpoint that cannot be made never stops a turn: the reason is said once
on stderr (``agent: no checkpoints: ...``), and the turn goes on unrecorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mdagent.rewind.checkpoints import Checkpoints
    from mdagent.runtime.runtime import Runtime

#: The built-in tools that change files: the file tools and ``exec``.
WRITING_BUILTINS = frozenset({"write_file", "edit_file", "exec"})
#: Declared implementations that run a process or Python code of their own:
#: whatever they do in the workspace is the turn's (``http`` changes nothing here).
WRITING_KINDS = frozenset({"run", "shell", "handler"})
#: Workspaces where no checkpoint can be made (no git, too many files), found in this process.
_UNAVAILABLE: set[Path] = set()


def plan_mode_in_force(runtime: Runtime) -> bool:
    """Whether the permission mode in force is ``plan`` (nothing changes: no checkpoints).

    Asked when a checkpoint would be taken, not once per run: ``/mode`` and
    Shift+Tab change the mode during a session. The mode itself is decided
    by :func:`mdagent.safety.modes.effective_mode` alone.
    """
    from mdagent.safety.modes import effective_mode

    options = runtime.options
    requested = getattr(options, "mode", None)
    return effective_mode(runtime.settings, requested, getattr(options, "mode_source", None)).plan


def can_write(registry: Any, name: str) -> bool:
    """Whether a model's call of tool ``name`` can change files in the workspace.

    The file tools and ``exec``, and declared ``run:``, ``shell:`` and
    ``handler:`` tools; a ``tool:`` tool as the tool it calls. MCP tools are
    not (what a server does is on its side: not covered).
    """
    seen: set[str] = set()
    while name not in seen:
        seen.add(name)
        spec = registry.tool(name) if registry is not None else None
        if spec is None:
            return name in WRITING_BUILTINS
        kind = spec.kind
        if kind == "builtin":
            return str(spec.implementation.get("builtin")) in WRITING_BUILTINS
        if kind in WRITING_KINDS:
            return True
        if kind != "tool":
            return False
        name = str(spec.implementation.get("tool") or "")
    return False


class TurnCheckpoints:
    """One agent's checkpoints: "before" once per turn that can write, "after" at its end."""

    def __init__(
        self,
        checkpoints: Checkpoints,
        registry: Any,
        session_id: str | None,
        in_plan: Callable[[], bool] = lambda: False,
    ) -> None:
        self.checkpoints = checkpoints
        self.in_plan = in_plan  # plan mode: nothing changes, nothing to record
        self.registry = registry
        self.session_id = session_id or ""
        self.turn = 0
        self.prompt = ""
        self.recorded = False  # this turn has its "before"
        self.off = False  # unavailable here (said once): no more tries this run

    def start_turn(self, turn: int, prompt: str) -> None:
        """A turn opens: the session's ``turn``-th message of the person, ``prompt``."""
        self.turn, self.prompt, self.recorded = turn, prompt, False

    def before_calls(self, names: Iterable[str]) -> None:
        """Record "before", once per turn, when one of the tools ``names`` can write."""
        if self.recorded or self.off or self.in_plan():
            return
        if not any(can_write(self.registry, name) for name in names):
            return
        self.recorded = self._record("before")

    def end_turn(self) -> None:
        """Record "after" when the turn recorded a "before" (also after Ctrl-C or an error)."""
        if self.recorded and not self.off:
            self._record("after")
        self.recorded = False

    def _record(self, phase: str) -> bool:
        from mdagent.rewind.checkpoints import CheckpointError, CheckpointsUnavailable
        from mdagent.runtime.trust import tell

        try:
            done = self.checkpoints.record(self.session_id, self.turn, self.prompt, phase)
        except CheckpointsUnavailable as exc:
            # Said once per process: a session's later turns do not look again.
            self.off = True
            _UNAVAILABLE.add(self.checkpoints.workspace)
            tell(f"{exc}; a rewind cannot take back what this run changes")
            return False
        except CheckpointError as exc:
            self.off = True
            tell(f"no checkpoint for this turn: {exc}")
            return False
        return done is not None


def turn_checkpoints(runtime: Runtime, session_id: str | None) -> TurnCheckpoints | None:
    """The checkpoints of an agent in ``runtime``'s workspace, or None (off); none are
    recorded while the mode in force is ``plan``."""
    from mdagent.rewind.checkpoints import CheckpointError, Checkpoints, CheckpointSettings
    from mdagent.runtime.trust import tell

    settings = CheckpointSettings.from_settings(runtime.settings)
    if not settings.enabled:
        return None
    if Path(runtime.workdir).resolve() in _UNAVAILABLE:
        return None
    try:
        checkpoints = Checkpoints(runtime.workdir, settings)
    except CheckpointError as exc:
        tell(f"no checkpoints: {exc}")
        return None
    return TurnCheckpoints(
        checkpoints, runtime.registry, session_id, in_plan=lambda: plan_mode_in_force(runtime)
    )
