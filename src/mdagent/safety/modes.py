"""The permission modes: which one is in force, and what each lets through.

The mode in force is decided in one place, :func:`effective_mode`
(``--mode``, ``/mode``, then ``policy.mode``): ``plan`` refuses every tool
that could change something outside the read-only sandbox (:func:`plan_refusal`,
for every caller) and the runtime runs every command in that sandbox
(:func:`run_settings`); ``accept-edits`` approves the file tools' writes
inside the workspace (:class:`mdagent.safety.policy.Policy`). No mode lifts a
deny rule, a protected file or the sandbox.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mdagent.core.catalog import EXEC_TOOLS, READ_TOOLS, WRITE_TOOLS
from mdagent.core.errors import ConfigError

MODES = ("ask", "accept-edits", "plan", "allowlist", "deny", "full")
#: The modes a person cycles through in the session (Shift+Tab), in order.
CYCLE = ("ask", "accept-edits", "plan", "full")


class ModeInForce(tuple):
    """``(mode, source)``: the permission mode a run is in, and what chose it.

    ``source`` is ``--mode`` (the command line), ``/mode`` (the session),
    ``policy.mode`` (the settings; ``agent config show`` names the layer) or
    ``default``.
    """

    __slots__ = ()

    def __new__(cls, mode: str, source: str) -> ModeInForce:
        return super().__new__(cls, (mode, source))

    @property
    def mode(self) -> str:
        return self[0]

    @property
    def source(self) -> str:
        return self[1]

    @property
    def plan(self) -> bool:
        """Whether nothing may change (checkpoints, for one, have nothing to keep)."""
        return self[0] == "plan"


def effective_mode(
    settings: Mapping[str, Any] | None, requested: str | None = None, source: str | None = None
) -> ModeInForce:
    """The permission mode in force: the one function that decides it.

    ``requested`` is the person's choice for this run or session (``--mode``,
    ``/mode``; ``source`` says which); without one, the settings'
    ``policy.mode`` (already judged by workspace trust: an untrusted folder's
    looser mode never gets here), else ``ask``. Everything that acts on the
    mode (the policy, the tools offered, the sandbox of ``plan``, the status
    bar, ``agent config show``, checkpoints) asks this function.
    A word that is not a mode is a :class:`ConfigError`.
    """
    if requested:
        if requested not in MODES:
            raise ConfigError(
                f"{source or '--mode'}: {requested!r} is not one of {', '.join(MODES)}"
            )
        return ModeInForce(requested, source or "--mode")
    section = (settings or {}).get("policy") or {}
    mode = section.get("mode") if isinstance(section, Mapping) else None
    if mode:
        return ModeInForce(str(mode), "policy.mode")
    return ModeInForce("ask", "default")


def plan_refusal(tool: Any) -> str | None:
    """Why ``tool`` may not run in plan mode (None: it may, its processes read-only).

    Kept: the built-in tools that only read, ``exec`` and the ``run:`` and
    ``shell:`` tools (their processes run in the read-only sandbox). Refused:
    ``write_file`` and ``edit_file``, and every tool the sandbox cannot hold
    (a Python ``handler:``, ``http:``, a ``tool:`` wrapper, an MCP server's
    tool), whatever it says it does: plan mode is enforced, not requested.
    """
    kind = tool.meta.get("kind") or "builtin"
    if kind == "builtin" and (tool.name in READ_TOOLS or tool.name in EXEC_TOOLS):
        return None
    if kind in ("run", "shell"):
        return None
    if kind == "builtin" and tool.name in WRITE_TOOLS:
        return f"{tool.name} is refused in plan mode: nothing changes (policy.mode is plan)"
    how = {
        "handler": "its Python handler: runs",
        "http": "its http: request goes",
        "tool": "the tool it wraps runs",
        "builtin": "it runs",
    }.get(kind, "its server (MCP) runs it")
    return (
        f"{tool.name} is refused in plan mode: {how} outside the read-only sandbox, "
        "so nothing could hold it to changing nothing"
    )


def run_settings(
    settings: Mapping[str, Any],
    *,
    mode: str | None = None,
    allow: Iterable[str] = (),
    deny: Iterable[str] = (),
) -> dict[str, Any]:
    """``settings`` with this run's own mode and rules (``--mode``, ``--allow``, ``--deny``).

    Nothing is written anywhere: the rules live as long as the process.
    In plan mode every command (a model's or a person's) runs in the
    read-only sandbox, required: where it cannot be applied, commands are
    refused rather than run unconfined.
    """
    section = dict(settings.get("policy") or {})
    if mode:
        section["mode"] = mode
    for key, extra in (("allow", list(allow)), ("deny", list(deny))):
        if extra:
            existing = section.get(key) or []
            existing = [existing] if isinstance(existing, str) else list(existing)
            section[key] = [*existing, *extra]
    out = {**settings, "policy": section}
    if str(section.get("mode") or "") == "plan":
        sandbox = settings.get("sandbox")
        sandbox = dict(sandbox) if isinstance(sandbox, Mapping) else {}
        out["sandbox"] = {**sandbox, "mode": "read-only", "required": True, "applies_to": "all"}
    return out
