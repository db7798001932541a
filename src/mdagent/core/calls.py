"""What one tool call carries in and out: its context, the policy's decision, its result.

Leaf records every layer shares: a handler receives a :class:`ToolContext`,
the policy answers with a :class:`Decision`, a before hook may return a
:class:`HookDecision`, and every call ends as a :class:`Result`. Kept apart
from the toolbox that runs calls, so the policy and the hooks can speak of
calls without importing what runs them. Their annotations resolve at run
time (``typing.get_type_hints(mdagent.Result)`` works) without importing
:mod:`typing`, which a warm ``agent /name`` never loads (a cold compile does,
through the policy's dataclasses).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping

from mdagent.core.records import Record

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any, TextIO

    from mdagent.tools.toolbox import Toolbox


class ToolContext:
    """What a handler may know about the call it serves.

    A handler that accepts a second parameter receives one of these.
    ``toolbox`` lets a tool call another tool (validation, policy and hooks
    apply); ``cancel`` is set when the user interrupts; ``output`` is where a
    tool may stream progress (``None`` when nobody is watching). ``cwd`` is
    the folder a person typed the command in, when it is not the workspace
    root ``workdir``: a person's relative paths start there and their
    commands run there (:func:`mdagent.safety.workspace.base_for`); a model's
    calls always start at the root. ``trusted`` is False in a workspace
    the person has not trusted (:mod:`mdagent.runtime.trust`): its own skills then
    ask before their live context runs, as a foreign skill's do.
    ``skill_runner`` runs the prompt skills the ``skill`` tool loads (their
    live context, a forked run): the agent's, handed down by whoever makes
    the call (:class:`mdagent.agent.skillrunner.SkillRunner`), as the
    policy's approver is; ``None`` where nothing can run them.
    Immutable: :meth:`replace` gives a copy with some fields changed.
    """

    # A plain class rather than a frozen dataclass: importing dataclasses
    # (and inspect, which it needs) costs ~4 ms of every `agent /name`.
    # Annotations that resolve at run time (typing.get_type_hints works on the
    # public API): ``object`` where the type is a duck type from another layer
    # (the policy, the toolbox, a text stream, the registry).
    tool_call_id: str | None
    conversation_id: str | None
    workdir: str | None
    env: Mapping[str, str] | None
    policy: object
    cancel: threading.Event
    toolbox: object
    output: object
    caller: str
    settings: Mapping[str, object]
    registry: object
    approve_all: bool
    cwd: str | None
    trusted: bool
    skill_runner: object

    def __init__(
        self,
        tool_call_id: str | None = None,
        conversation_id: str | None = None,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
        policy: Any = None,
        cancel: threading.Event | None = None,
        toolbox: Toolbox | None = None,
        output: TextIO | None = None,
        caller: str = "person",
        settings: Mapping[str, Any] | None = None,
        registry: Any = None,
        approve_all: bool = False,
        cwd: str | None = None,
        trusted: bool = True,
        skill_runner: Any = None,
    ) -> None:
        self.__dict__.update(
            tool_call_id=tool_call_id,
            conversation_id=conversation_id,
            workdir=workdir,
            env=env,
            policy=policy,
            cancel=threading.Event() if cancel is None else cancel,
            toolbox=toolbox,
            output=output,
            caller=caller,
            settings={} if settings is None else settings,
            registry=registry,
            approve_all=approve_all,
            cwd=cwd,
            trusted=trusted,
            skill_runner=skill_runner,
        )

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ToolContext is immutable (use .replace({name}=...))")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"ToolContext is immutable (cannot delete {name})")

    def replace(self, **changes: Any) -> ToolContext:
        """A copy with ``changes`` applied (the same cancel event unless one is given)."""
        return ToolContext(**{**self.__dict__, **changes})

    def __eq__(self, other: object) -> bool:
        return type(other) is ToolContext and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # it holds dicts and events

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"ToolContext({fields})"


class Decision(Record):
    """A policy's verdict on one call.

    ``approved_by`` says why an allowed call may run ("safe", "rule:exec(git *)",
    "user", "session", "--yes", "mode:full", "person"); it goes to the audit log. A refused
    call becomes a failed :class:`Result` carrying ``code`` and ``extra``.
    ``waited_s`` is how long the call waited for a person's answer (not its run time).
    """

    allowed: bool
    reason: str = ""
    approved_by: str | None = None
    code: str = "DENIED"
    extra: Mapping[str, object] = {}
    waited_s: float = 0.0

    def to_result(self) -> Result:
        """The failure a refused call returns."""
        return Result.failure(self.reason or "denied by policy", code=self.code, **self.extra)


ALLOWED = Decision(True)


class HookDecision(Record):
    """What a before hook may return to decide a call; any other return value is ignored.

    ``decision``: ``"deny"`` refuses the call with ``reason``; ``"allow"``
    lets a model's call run without the ask/allow rules (never past a deny
    rule, nor past the question about the agent's own configuration);
    ``"ask"`` has a person asked, whatever the mode; None leaves it to the
    policy. ``arguments`` replace the call's arguments: they are validated and
    meet the deny rules again. ``hook`` names the hook in messages and the
    audit log.
    """

    decision: str | None = None
    reason: str = ""
    arguments: Mapping[str, object] | None = None
    hook: str = "hook"


class Result(Record):
    """The outcome of one tool call: a dict plus whether it succeeded."""

    data: dict[str, object]
    ok: bool

    @property
    def error(self) -> str | None:
        """The error message of a failure, ``None`` on success."""
        err = self.data.get("error")
        return None if err is None else str(err)

    @classmethod
    def failure(cls, message: str, **extra: Any) -> Result:
        """A failed result carrying ``message`` as its error."""
        return cls({"error": message, **extra}, False)

    def to_dict(self) -> dict[str, Any]:
        """The result as a plain dict with ``ok`` added."""
        return {**self.data, "ok": self.ok}

    def to_json(self) -> str:
        """The result as one line of JSON (non-JSON values become strings)."""
        return json.dumps(self.to_dict(), default=str, ensure_ascii=False)
