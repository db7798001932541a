"""Running a command a person typed: the layer the shell path and the session share.

``agent /name args`` (:mod:`mdagent.cli.cli`) and ``/name args`` in the interactive
session (:mod:`mdagent.session.repl`) both come here: resolve the name (with "did you
mean"), build and validate the call, run it as the person, print its result
and return the exit status (DESIGN §6). Nothing here imports the typer app or
the session, so the arrows point one way: the edges down to this layer.
"""

from __future__ import annotations

import json
import os
import sys

from mdagent.core.errors import (
    EXIT_DENIED,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    ToolFailed,
    UsageError,
)

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

    from mdagent.runtime.runtime import Runtime


# The typer subcommands of `agent` (mdagent.cli.app), spelled out here so a
# "did you mean `agent tools`?" never imports typer on the /name fast path;
# tests/test_help_e2e.py checks it against the app.
SUBCOMMANDS = (
    "ask",
    "check",
    "commands",
    "config",
    "doctor",
    "help",
    "init",
    "logs",
    "mcp",
    "new",
    "policy",
    "rewind",
    "sessions",
    "skills",
    "test",
    "tools",
    "trust",
)

#: ``agent /name -h`` and ``--help``, as the only word, show the help in every
#: argument mode; ``agent /name -- -h`` passes ``-h`` to the command.
HELP_WORDS = (["-h"], ["--help"])


def resolve_command(runtime: Runtime, name: str):
    """``(command, tool spec or None)`` for ``/name`` typed by a person.

    Unknown and hidden (``user-invocable: false``) names are a UsageError
    carrying the list of commands and a "did you mean".
    """
    registry = runtime.registry
    command = registry.command(name)
    if command is None or not command.user_invocable:
        _refuse_untrusted_server(runtime, name, name)  # `/server:prompt` of one
        raise UsageError(unknown_command(registry, name))
    if command.kind != "tool" or not command.tool:
        return command, None
    tool_spec = runtime.tool_spec(command.tool)  # an MCP server's tool starts its server
    if tool_spec is None:
        _refuse_untrusted_server(runtime, command.tool, command.name)
        raise ToolFailed(f"/{command.name}: tool {command.tool!r} is not offered by its MCP server")
    return command, tool_spec


def _refuse_untrusted_server(runtime: Runtime, name: str, command: str) -> None:
    """ToolFailed when ``name`` belongs to an MCP server of a folder nobody trusted."""
    server = runtime.untrusted_server(name)
    if server is not None:
        raise ToolFailed(
            f"/{command.lstrip('/')}: mcp server {server} is not started: "
            "this folder is not trusted (`agent trust`)"
        )


def run_tool_command(
    runtime: Runtime,
    command,
    tool_spec,
    *,
    argv: list[str] | None = None,
    text: str | None = None,
    box=None,
    as_json: bool = False,
    skill_runner=None,
) -> int:
    """Run a tool command a person typed (shell words or a typed line); returns the status.

    The one path for the shell and the interactive session: availability
    (the tool's and the skill's requirements), argument mode, validation with
    the usage line, the person's policy, live output, rendering.
    ``skill_runner`` is the edge's (:class:`mdagent.agent.skillrunner.SkillRunner`):
    a command bound to the ``skill`` tool loads skills through it.
    """
    from mdagent.core.specs import unmet_requirement
    from mdagent.tools.dispatch import build_call, usage

    reason = runtime.unavailable(tool_spec) or unmet_requirement(command.requires)
    if reason:
        raise ToolFailed(f"/{command.name} is unavailable: {reason}")
    call = build_call(command, tool_spec, argv=argv, text=text)
    if box is None:
        box = runtime.toolbox(policy=runtime.person_policy())
    problems = box.tool_for(call.tool).validate(call.args)
    if problems:
        raise UsageError(f"/{command.name}: {', '.join(problems)}\n{usage(command, tool_spec)}")
    output = None if as_json else sys.stdout
    ctx = runtime.context(box, caller="person", output=output, skill_runner=skill_runner)
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
        from mdagent.ui.console import say_error

        say_error(f"{label}: {result.error}")
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
        return EXIT_OK
    data = result.data
    if data.get("code") == "DENIED":
        return EXIT_DENIED
    if data.get("timed_out"):
        return EXIT_TIMEOUT
    if data.get("interrupted"):
        return EXIT_INTERRUPTED
    code = data.get("exit_code")
    if isinstance(code, int) and 0 < code < 256:
        return code
    return EXIT_FAILED


def command_help(runtime: Runtime, name: str) -> str:
    """What ``agent /name --help``, ``agent /help name`` and ``agent help name`` print."""
    from mdagent.tools.dispatch import help_text

    return help_text(*resolve_command(runtime, name if name.startswith("/") else f"/{name}"))


def command_listing(registry) -> str:
    """``/name usage  description`` for every user-invocable command.

    The rows are :meth:`mdagent.registry.model.Registry.listing_rows`, cached with
    the registry: a warm ``/help`` with 10,000 skills builds no record, and
    to a pipe or a file (nothing to fit) prints the cached table as it is.
    """
    from mdagent.ui.console import table, terminal_width

    width = terminal_width()
    if width is None:
        return registry.listing_text() or "(no commands)"
    return table(registry.listing_rows(), width=width) or "(no commands)"


def nearest_name(registry, typed: str, *, slash: bool) -> str | None:
    """The name a person most likely meant, as they would type it (``agent /count``).

    Both worlds are searched: the slash commands (``/help`` included) and the
    subcommands. ``slash`` says which world ``typed`` came from; an exact name
    in the other world wins (``agent /tools`` -> ``agent tools``, ``agent count``
    -> ``agent /count``), then the closest spelling, then a name it begins.
    """
    from mdagent.core.names import closest
    from mdagent.core.specs import command_key

    key = command_key(typed)
    commands = {k for k, c in registry.commands.items() if c.user_invocable} if registry else set()
    commands.add("help")
    if slash and key in SUBCOMMANDS and key != "help":
        return f"agent {key}"
    if not slash and key in commands and key != "help":
        return f"agent /{key}"
    # A name in both worlds (help) is offered in the one it was typed in, and
    # the world it was typed in is searched first: `/co` means /commit-message
    # before it means `agent commands`.
    slashed = {f"agent /{n}": n for n in sorted(commands)}
    plain = {f"agent {n}": n for n in SUBCOMMANDS}
    own, other = (slashed, plain) if slash else (plain, slashed)
    other = {full: n for full, n in other.items() if n not in own.values()}
    for names in (own, other):
        near = closest(key, names.values(), prefix=True)
        if near is not None:
            return next(full for full, short in names.items() if short == near)
    return None


def broken_declaration(registry, key: str) -> str | None:
    """``/key is broken: path:line:col: why`` when a file that did not load declares it.

    A command is known to be in a broken file when the file is its skill's
    (``skills/key/SKILL.md``), the problem names it (``/key: ...``), or the
    file's text has it as a key (``key:`` in a commands file that did not
    parse); None otherwise: the command is unknown.
    """
    import re

    def said(problem) -> str:
        return f"/{key} is broken: {problem.path}:{problem.line}:{problem.col}: {problem.message}"

    errors = list(registry.errors)
    for problem in errors:
        path = problem.path.replace(os.sep, "/")
        if f"/{key}/" in path or problem.message.startswith(f"/{key}:"):
            return said(problem)
    declared = re.compile(rf"""^\s*["']?/?{re.escape(key)}["']?\s*:""", re.MULTILINE)
    for problem in errors:
        try:
            with open(problem.path, encoding="utf-8", errors="replace") as file:
                text = file.read(1_000_000)
        except OSError:
            continue
        if declared.search(text):
            return said(problem)
    return None


def unknown_command(registry, name: str) -> str:
    """The unknown-command message: did you mean (either world), and the list."""
    from mdagent.core.specs import command_key

    key = command_key(name)
    broken = broken_declaration(registry, key)
    if broken is not None:
        return broken
    lines = [f"unknown command /{key}"]
    near = nearest_name(registry, key, slash=True)
    if near is not None:
        # A slash command reads as typed in the session too (/count); a
        # subcommand exists only on the shell (`agent tools`).
        lines.append(f"did you mean {near[6:] if near.startswith('agent /') else f'`{near}`'}?")
    names = sorted(k for k, c in registry.commands.items() if c.user_invocable)
    lines.append("commands: " + (", ".join(f"/{n}" for n in names) or "(none)"))
    return "\n".join(lines)
