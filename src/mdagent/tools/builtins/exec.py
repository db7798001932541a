"""The ``exec`` built-in: a shell command in the workspace."""

from __future__ import annotations

import os
import shutil

from mdagent.safety.environment import env_for
from mdagent.tools.process import run_tool_process

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any


def shell_argv(command: str, env: dict[str, str] | None = None) -> list[str]:
    """``["bash", "-c", "--", command]``, or ``sh`` where bash is not installed."""
    path = (env or {}).get("PATH") or os.environ.get("PATH") or os.defpath
    # Looked up on the child's PATH: that is where the child would find it.
    shell = shutil.which("bash", path=path) or "sh"
    # "--": a command that starts with "-" is the command, not an option of bash.
    return [shell, "-c", "--", command]


def exec_tool(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Run ``args["command"]`` with ``bash -c`` and report its output and status.

    A non-zero exit is a failure (``error: "exit status N"``) that still
    carries the output; a timeout reports 124, a cancel 130 and a shell that
    cannot be started 126/127 (see :func:`mdagent.tools.process.run_tool_process`).
    """
    return run_tool_process(
        shell_argv(args["command"], env_for(ctx)),
        ctx,
        timeout=args.get("timeout"),
        cwd=args.get("cwd"),
    )
