"""The ``exec`` built-in: a shell command in the workspace."""

from __future__ import annotations

import os
import shutil
from typing import Any

from mdagent.builtins import setting
from mdagent.environment import env_for
from mdagent.errors import PolicyDenied
from mdagent.process import result_dict, run_process
from mdagent.workspace import confine, roots_from


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
    cannot be started 126/127 (see :func:`mdagent.process.result_dict`).
    """
    root, extras = roots_from(ctx)
    cwd = root
    if args.get("cwd"):
        try:
            cwd = confine(args["cwd"], root, extras)
        except PolicyDenied as exc:
            return {"error": str(exc), "code": "DENIED"}
        if not cwd.is_dir():
            return {"error": f"not a directory: {args['cwd']}"}
    timeout = float(args.get("timeout") or setting(ctx, "exec", "timeout", 120))
    max_output = int(setting(ctx, "exec", "max_output", 100_000))
    env = env_for(ctx)
    done = run_process(
        shell_argv(args["command"], env),
        cwd=str(cwd),
        env=env,
        timeout=timeout,
        max_output=max_output,
        output=ctx.output,
        cancel=ctx.cancel,
    )
    # streamed: the person already saw the output; the CLI must not print it twice.
    return result_dict(done, streamed=ctx.output is not None, timeout=timeout)
