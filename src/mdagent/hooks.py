"""Hooks declared in ``agent.yaml``: shell commands run before or after tool calls.

::

    hooks:
      before: [{tool: exec, run: ./scripts/guard.sh}]
      after:  [{run: "jq -c . >> .agents/calls.log", timeout: 5}]

Each hook runs with ``sh -c`` in the workspace, with the scrubbed environment
(never this process's own), and gets ``{"tool", "args"}`` as JSON on stdin
(after hooks also ``"result"``, the handler's raw dict). ``tool`` filters by
tool name the way policy rules name tools: the real name or an alias
(``bash`` is ``exec``), ignoring case, possibly a glob (``read_*``); absent
or ``*``: every tool.

Exit status of a before hook: 0 lets the call go on; 2 blocks it, with the
hook's stderr (stripped) as the reason; anything else, or running past its
``timeout`` (default 30 s, then it is killed), is a warning (logged and one
line on stderr) and the call goes on. After hooks cannot block: every
non-zero status is a warning.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mdagent.errors import ConfigError, MdagentError, logger
from mdagent.policy import names_for, names_match

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
    # Real name -> the tool's declared aliases (the toolbox's, when installed).
    aliases: Callable[[str], Iterable[str]] | None = field(default=None, repr=False, compare=False)

    def applies_to(self, tool_name: str) -> bool:
        """Whether this hook runs for the tool whose real name is ``tool_name``.

        The filter matches like a policy rule's tool: any of the tool's names
        (:func:`mdagent.policy.names_for`), ignoring case.
        """
        if self.tool is None:
            return True
        declared = self.aliases(tool_name) if self.aliases is not None else ()
        return names_match(self.tool, names_for(tool_name, declared))

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
            ["sh", "-c", "--", self.run],
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
        print(f"agent: warning: {message}", file=sys.stderr)


def check_hook(entry: Any, where: str) -> tuple[str, str | None, float]:
    """``(run, tool, timeout)`` of one ``hooks.before`` / ``hooks.after`` entry.

    ``tool`` is ``None`` when the hook is for every tool. Raises
    :class:`ConfigError` naming ``where`` for an entry the runtime could not
    use; ``agent check`` runs the same function, so the two never disagree.
    """
    if not isinstance(entry, Mapping) or not isinstance(entry.get("run"), str):
        raise ConfigError(f"{where}: expected {{run: command, tool: name}}")
    if not entry["run"].strip():
        raise ConfigError(f"{where}: `run` is empty")
    timeout = entry.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ConfigError(f"{where}: `timeout` must be a positive number of seconds")
    tool = entry.get("tool")
    if tool in (None, "", "*"):
        return entry["run"], None, float(timeout)
    if not isinstance(tool, str) or not re.fullmatch(r"[^()\s]+", tool):
        # `exec(git *)` would never match: a filter names tools, it is not a rule.
        raise ConfigError(
            f"{where}: `tool` must be a tool name or glob (exec, read_*), got {tool!r}"
        )
    return entry["run"], tool, float(timeout)


def hooks_from_settings(
    settings: Mapping[str, Any],
    *,
    workdir: str,
    env: Mapping[str, str] | None = None,
    aliases: Callable[[str], Iterable[str]] | None = None,
) -> list[CommandHook]:
    """The hooks ``settings["hooks"]`` declares; raises :class:`ConfigError` for a bad entry.

    ``env`` is the environment the hooks get (``None``: scrubbed from
    ``settings`` with :func:`mdagent.environment.child_env`). ``aliases``
    gives a tool's declared aliases by real name, for the ``tool`` filters.
    """
    section = (settings or {}).get("hooks") or {}
    if not isinstance(section, Mapping):
        raise ConfigError("hooks: expected a mapping with `before` and/or `after`")
    if env is None:
        from mdagent.environment import child_env

        env = child_env(settings)
    out = []
    for when in ("before", "after"):
        entries = section.get(when) or []
        if not isinstance(entries, list):
            raise ConfigError(f"hooks.{when}: expected a list")
        for i, entry in enumerate(entries):
            run, tool, timeout = check_hook(entry, f"hooks.{when}[{i}]")
            out.append(
                CommandHook(
                    when=when,
                    run=run,
                    workdir=str(workdir),
                    env=dict(env),
                    tool=tool,
                    timeout=timeout,
                    aliases=aliases,
                )
            )
    return out


def install_hooks(
    toolbox: Any,
    settings: Mapping[str, Any],
    *,
    workdir: str,
    env: Mapping[str, str] | None = None,
) -> list[CommandHook]:
    """Register the hooks of ``settings`` on ``toolbox``; returns them.

    They are registered as global hooks that filter by tool name themselves,
    so they run in the order declared, before (or after) any per-tool hook.
    ``env`` is the scrubbed environment the hooks get (see
    :func:`hooks_from_settings`).
    """

    def aliases(tool_name: str) -> Iterable[str]:
        return getattr(toolbox.tool_for(tool_name), "aliases", ())

    hooks = hooks_from_settings(settings, workdir=workdir, env=env, aliases=aliases)
    for hook in hooks:
        if hook.when == "before":
            toolbox.before()(hook.before)
        else:
            toolbox.after()(hook.after)
    return hooks
