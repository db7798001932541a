"""What a ``hooks:`` entry of ``agent.yaml`` may say: its events, and one entry checked.

The declaration side of hooks: ``agent check`` (:mod:`mdagent.declarations.declarations`)
and the runtime (:mod:`mdagent.tools.hooks`, which runs them) read an entry through
the same :func:`check_hook`, so a file ``agent check`` passes is one every command can use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from mdagent.core.defaults import HOOK_TIMEOUT
from mdagent.core.errors import ConfigError

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

EVENTS = ("before", "after", "session_start", "prompt", "stop")
# The events whose hooks guard something, and so may refuse it.
GUARDS = frozenset({"before", "session_start", "prompt"})
ON_ERROR = ("block", "warn")


def check_hook(
    entry: Any, where: str, event: str = "before"
) -> tuple[str | tuple[str, ...], str | None, float, str]:
    """``(run, tool, timeout, on_error)`` of one entry of ``hooks.<event>``.

    ``run`` is a string (for ``sh -c``) or a tuple (the argv); ``tool`` is
    ``None`` when the hook is for every tool. Raises :class:`ConfigError`
    naming ``where`` for an entry the runtime could not use; ``agent check``
    runs the same function, so the two never disagree.
    """
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: expected {{run: command, tool: name}}")
    run = entry.get("run")
    if isinstance(run, list) and run and all(isinstance(w, str) and w for w in run):
        run = tuple(run)
    elif not isinstance(run, str):
        raise ConfigError(f"{where}: `run` must be a command string or a list of words")
    elif not run.strip():
        raise ConfigError(f"{where}: `run` is empty")
    timeout = entry.get("timeout", HOOK_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ConfigError(f"{where}: `timeout` must be a positive number of seconds")
    on_error = entry.get("on_error", "block")
    if on_error not in ON_ERROR:
        raise ConfigError(f"{where}: `on_error` must be block or warn, got {on_error!r}")
    if "on_error" in entry and event not in GUARDS:
        # A setting that could do nothing would only mislead.
        raise ConfigError(f"{where}: `on_error` does not apply: {event} hooks never block")
    tool = entry.get("tool")
    if tool in (None, "", "*"):
        return run, None, float(timeout), on_error
    if event not in ("before", "after"):
        raise ConfigError(f"{where}: `tool` applies to before and after hooks only")
    if not isinstance(tool, str) or not re.fullmatch(r"[^()\s]+", tool):
        # `exec(git *)` would never match: a filter names tools, it is not a rule.
        raise ConfigError(
            f"{where}: `tool` must be a tool name or glob (exec, read_*), got {tool!r}"
        )
    return run, tool, float(timeout), on_error
