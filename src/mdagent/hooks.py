"""Hooks declared in ``agent.yaml``: shell commands run before or after tool calls.

::

    hooks:
      before: [{tool: exec, run: ./scripts/guard.sh}]
      after:  [{run: "jq -c . >> .agents/calls.log", timeout: 5}]

Each hook runs with ``sh -c`` in the workspace, with the scrubbed environment
(never this process's own), and gets ``{"tool", "args"}`` as JSON on stdin
(after hooks also ``"result"``, the handler's raw dict). ``tool`` filters by
the tool's real name (an fnmatch glob; absent: every tool).

Exit status of a before hook: 0 lets the call go on; 2 blocks it, with the
hook's stderr (stripped) as the reason; anything else, or running past its
``timeout`` (default 30 s, then it is killed), is a warning (logged and one
line on stderr) and the call goes on. After hooks cannot block: every
non-zero status is a warning.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from mdagent.errors import ConfigError, MdagentError, logger

log = logger("mdagent.hooks")

DEFAULT_TIMEOUT = 30.0
BLOCK_STATUS = 2
# Hook output is only read for a reason or a warning; keep it small.
MAX_OUTPUT = 20_000


class HookBlocked(MdagentError):
    """A before hook exited with status 2; the message is its reason."""


@dataclass(frozen=True)
class CommandHook:
    """One ``{tool, run, timeout}`` entry of ``hooks.before`` or ``hooks.after``."""

    when: str  # "before" | "after"
    run: str
    workdir: str
    env: Mapping[str, str] = field(repr=False)
    tool: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    def applies_to(self, tool_name: str) -> bool:
        """Whether this hook runs for ``tool_name`` (a real name, never an alias)."""
        return self.tool is None or fnmatchcase(tool_name, self.tool)

    def before(self, args: Mapping[str, Any], tool_name: str) -> None:
        """Toolbox global before hook: raises :class:`HookBlocked` on status 2."""
        if not self.applies_to(tool_name):
            return
        result = self._execute({"tool": tool_name, "args": dict(args)})
        if result is None:
            return
        if result.exit_code == BLOCK_STATUS and not result.timed_out:
            reason = result.stderr.strip() or f"blocked by hook {self.run}"
            raise HookBlocked(reason)
        self._check(result, tool_name)

    def after(self, args: Mapping[str, Any], result: Any, tool_name: str) -> None:
        """Toolbox global after hook: never blocks, warns on a non-zero status."""
        if not self.applies_to(tool_name):
            return
        outcome = self._execute({"tool": tool_name, "args": dict(args), "result": result})
        if outcome is not None:
            self._check(outcome, tool_name)

    def _execute(self, payload: Mapping[str, Any]) -> Any:
        from mdagent.process import run_process

        data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
        return run_process(
            ["sh", "-c", self.run],
            cwd=self.workdir,
            env=dict(self.env),
            timeout=self.timeout,
            max_output=MAX_OUTPUT,
            stdin_data=data,
        )

    def _check(self, result: Any, tool_name: str) -> None:
        if result.timed_out:
            _warn(
                f"{self.when} hook `{self.run}` for {tool_name} timed out after {self.timeout:g} s"
            )
        elif result.exit_code != 0:
            detail = result.stderr.strip().splitlines()
            suffix = f": {detail[0]}" if detail else ""
            _warn(
                f"{self.when} hook `{self.run}` for {tool_name} exited with status "
                f"{result.exit_code}{suffix}"
            )


def _warn(message: str) -> None:
    log.warning("%s", message)
    with contextlib.suppress(OSError, ValueError):  # stderr closed: the log has it
        print(f"mdagent: warning: {message}", file=sys.stderr)


def hooks_from_settings(
    settings: Mapping[str, Any], *, workdir: str, env: Mapping[str, str]
) -> list[CommandHook]:
    """The hooks ``settings["hooks"]`` declares; raises :class:`ConfigError` for a bad entry."""
    section = (settings or {}).get("hooks") or {}
    if not isinstance(section, Mapping):
        raise ConfigError("hooks: expected a mapping with `before` and/or `after`")
    out = []
    for when in ("before", "after"):
        entries = section.get(when) or []
        if not isinstance(entries, list):
            raise ConfigError(f"hooks.{when}: expected a list")
        for i, entry in enumerate(entries):
            where = f"hooks.{when}[{i}]"
            if not isinstance(entry, Mapping) or not isinstance(entry.get("run"), str):
                raise ConfigError(f"{where}: expected {{run: command, tool: name}}")
            if not entry["run"].strip():
                raise ConfigError(f"{where}: `run` is empty")
            timeout = entry.get("timeout", DEFAULT_TIMEOUT)
            if not isinstance(timeout, (int, float)) or timeout <= 0:
                raise ConfigError(f"{where}: `timeout` must be a positive number of seconds")
            tool = entry.get("tool")
            out.append(
                CommandHook(
                    when=when,
                    run=entry["run"],
                    workdir=str(workdir),
                    env=dict(env),
                    tool=None if tool in (None, "", "*") else str(tool),
                    timeout=float(timeout),
                )
            )
    return out


def install_hooks(
    toolbox: Any,
    settings: Mapping[str, Any],
    *,
    workdir: str,
    env: Mapping[str, str] | None,
) -> list[CommandHook]:
    """Register the hooks of ``settings`` on ``toolbox``; returns them.

    They are registered as global hooks that filter by tool name themselves,
    so they run in the order declared, before (or after) any per-tool hook.
    ``env`` is the scrubbed environment the hooks get (``None``: computed
    from ``settings`` with :func:`mdagent.environment.child_env`).
    """
    if env is None:
        from mdagent.environment import child_env

        env = child_env(settings)
    hooks = hooks_from_settings(settings, workdir=workdir, env=env)
    for hook in hooks:
        if hook.when == "before":
            toolbox.before()(hook.before)
        else:
            toolbox.after()(hook.after)
    return hooks
