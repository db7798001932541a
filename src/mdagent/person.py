"""Running a command a person typed: the layer the shell path and the session share.

``agent /name args`` (:mod:`mdagent.cli`) and ``/name args`` in the interactive
session (:mod:`mdagent.repl`) both come here: resolve the name (with "did you
mean"), build and validate the call, run it as the person, print its result
and return the exit status (DESIGN §6). Nothing here imports the typer app or
the session, so the arrows point one way: the edges down to this layer.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from mdagent.errors import ToolFailed, UsageError

if TYPE_CHECKING:
    from mdagent.runtime import Runtime


def resolve_command(runtime: Runtime, name: str):
    """``(command, tool spec or None)`` for ``/name`` typed by a person.

    Unknown and hidden (``user-invocable: false``) names are a UsageError
    carrying the list of commands and a "did you mean".
    """
    registry = runtime.registry
    command = registry.command(name)
    if command is None or not command.user_invocable:
        raise UsageError(unknown_command(registry, name))
    if command.kind != "tool" or not command.tool:
        return command, None
    tool_spec = runtime.tool_spec(command.tool)  # an MCP server's tool starts its server
    if tool_spec is None:
        raise ToolFailed(f"/{command.name}: tool {command.tool!r} is not offered by its MCP server")
    return command, tool_spec


def run_tool_command(
    runtime: Runtime,
    command,
    tool_spec,
    *,
    argv: list[str] | None = None,
    text: str | None = None,
    box=None,
    as_json: bool = False,
) -> int:
    """Run a tool command a person typed (shell words or a typed line); returns the status.

    The one path for the shell and the interactive session: availability
    (the tool's and the skill's requirements), argument mode, validation with
    the usage line, the person's policy, live output, rendering.
    """
    from mdagent.dispatch import build_call, usage
    from mdagent.specs import unmet_requirement

    reason = runtime.unavailable(tool_spec) or unmet_requirement(command.requires)
    if reason:
        raise ToolFailed(f"/{command.name} is unavailable: {reason}")
    call = build_call(command, tool_spec, argv=argv, text=text)
    if box is None:
        box = runtime.toolbox(policy=runtime.person_policy())
    problems = box.tool_for(call.tool).validate(call.args)
    if problems:
        raise UsageError(f"/{command.name}: {', '.join(problems)}\n{usage(command, tool_spec)}")
    ctx = runtime.context(box, caller="person", output=None if as_json else sys.stdout)
    result = box.run(call.tool, call.args, ctx)
    return render(result, as_json=as_json, label=f"/{command.name}")


def render(result, *, as_json: bool, label: str) -> int:
    """Print a result the way DESIGN §6 says and return its exit status."""
    data = result.data
    if as_json:
        print(result.to_json())
        return exit_status(result)
    if not data.get("streamed"):
        if "output" in data and data["output"] is not None:
            _write(sys.stdout, str(data["output"]))
        elif "stdout" in data or "stderr" in data:
            _write(sys.stdout, data.get("stdout") or "")
            _write(sys.stderr, data.get("stderr") or "")
        elif result.ok:
            print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    if not result.ok and not _is_exit_status(data):
        print(f"agent: {label}: {result.error}", file=sys.stderr)
    return exit_status(result)


def _write(stream, text: str) -> None:
    if text:
        stream.write(text if text.endswith("\n") else text + "\n")
        stream.flush()


def _is_exit_status(data: dict[str, Any]) -> bool:
    """A process that ran and said no: its own status speaks, no extra line."""
    return isinstance(data.get("exit_code"), int) and str(data.get("error", "")).startswith(
        "exit status"
    )


def exit_status(result) -> int:
    """0 ok; 1 failure (a process: its own status); 124 timeout; 126 denied; 130 interrupted."""
    if result.ok:
        return 0
    data = result.data
    if data.get("code") == "DENIED":
        return 126
    if data.get("timed_out"):
        return 124
    if data.get("interrupted"):
        return 130
    code = data.get("exit_code")
    if isinstance(code, int) and 0 < code < 256:
        return code
    return 1


def command_listing(registry) -> str:
    """``/name  description`` for every user-invocable command."""
    from mdagent.console import described

    rows = sorted(
        (f"/{key} {command.argument_hint}".rstrip(), command.description)
        for key, command in registry.commands.items()
        if command.user_invocable
    )
    return described(rows) or "(no commands)"


def unknown_command(registry, name: str) -> str:
    """The unknown-command message: did you mean, and the list."""
    from mdagent.specs import command_key

    key = command_key(name)
    lines = [f"unknown command /{key}"]
    for problem in registry.errors:
        if f"/{key}/" in problem.path.replace(os.sep, "/") or problem.message.startswith(
            f"/{key}:"
        ):
            lines[0] += f" (it did not load: {problem})"
            break
    similar = registry.similar_commands(key)
    if similar:
        lines.append(f"did you mean /{similar[0]}?")
    names = sorted(k for k, c in registry.commands.items() if c.user_invocable)
    lines.append("commands: " + (", ".join(f"/{n}" for n in names) or "(none)"))
    return "\n".join(lines)
