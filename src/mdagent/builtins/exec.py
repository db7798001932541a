"""The ``exec`` built-in: a shell command in the workspace."""

from __future__ import annotations

import os
import shutil
from typing import Any

from mdagent.builtins import setting
from mdagent.environment import child_env
from mdagent.errors import PolicyDenied
from mdagent.process import run_process
from mdagent.workspace import confine, roots_from


def shell_argv(command: str, env: dict[str, str] | None = None) -> list[str]:
    """``["bash", "-c", command]``, or ``sh`` where bash is not installed."""
    path = (env or {}).get("PATH") or os.environ.get("PATH") or os.defpath
    # Looked up on the child's PATH: that is where the child would find it.
    shell = shutil.which("bash", path=path) or "sh"
    return [shell, "-c", command]


def exec_tool(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Run ``args["command"]`` with ``bash -c`` and report its output and status.

    A non-zero exit is a failure (``error: "exit status N"``) that still
    carries the output; a timeout reports 124 and a cancel 130.
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
    env = dict(ctx.env) if ctx.env is not None else child_env(ctx.settings)
    done = run_process(
        shell_argv(args["command"], env),
        cwd=str(cwd),
        env=env,
        timeout=timeout,
        max_output=max_output,
        output=ctx.output,
        cancel=ctx.cancel,
    )
    result: dict[str, Any] = {
        "stdout": done.stdout,
        "stderr": done.stderr,
        "exit_code": done.exit_code,
        "duration_ms": done.duration_ms,
        "truncated": done.truncated,
    }
    if ctx.output is not None:
        # The person already saw the output; the CLI must not print it twice.
        result["streamed"] = True
    if done.timed_out:
        result["error"] = f"timed out after {timeout:g} s"
        result["timed_out"] = True
    elif done.interrupted:
        result["error"] = "interrupted"
        result["interrupted"] = True
    elif done.exit_code != 0:
        result["error"] = f"exit status {done.exit_code}"
    return result
