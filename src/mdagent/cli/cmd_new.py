"""``agent new skill``, ``new tool`` and ``new command``: write a new declaration.

The text written and how it is added to a file are :mod:`mdagent.cli.scaffold`'s
job; this module checks the name, refuses what would clash, writes, then
checks the result the way ``agent check`` would (and undoes a new entry
that brought an error).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from mdagent.cli.common import plural, print_json, problem_dict, runtime_of, shown_path, wants_json
from mdagent.core.errors import MdagentError, UsageError, unknown_tool
from mdagent.runtime.runtime import Runtime

new_app = typer.Typer(help="Create new declarations.", no_args_is_help=True)


def _refuse_new_name(name: str, problem: str | None, arg_mode: str | None) -> None:
    """UsageError for a new command's bad name (``problem``), a built-in name or a bad mode."""
    from mdagent.core.specs import ARG_MODES, command_key
    from mdagent.registry.compile import RESERVED_NAMES

    if problem:
        raise UsageError(problem)
    if command_key(name) in RESERVED_NAMES:  # names match without case or -/_: /Help is /help
        raise UsageError(f"{name!r} is a built-in command name; choose another")
    if arg_mode is not None and arg_mode not in ARG_MODES:
        raise UsageError(f"--arg-mode must be one of {', '.join(ARG_MODES)}")


@new_app.command("skill")
def new_skill(
    ctx: typer.Context,
    name: str = typer.Argument(
        ..., metavar="NAME", help="The skill's name (a-z, 0-9, single hyphens)."
    ),
    tool: str | None = typer.Option(
        None, "--tool", metavar="NAME", help="Dispatch /NAME straight to this tool."
    ),
    arg_mode: str = typer.Option(
        "raw", "--arg-mode", metavar="MODE", help="raw, parsed or json (with --tool)."
    ),
    run: str | None = typer.Option(
        None,
        "--run",
        metavar="COMMAND",
        help="Wrap a program: /NAME ARGS runs COMMAND with ARGS, each quoted (exec).",
    ),
) -> None:
    """Write a valid SKILL.md skeleton into the project layer (never overwrites)."""
    from mdagent.cli.scaffold import run_template, skill_skeleton
    from mdagent.declarations.skills import name_problem

    _refuse_new_name(name, name_problem(name), arg_mode)
    if run is not None:
        if tool not in (None, "exec") or arg_mode != "raw":
            raise UsageError(
                "--run makes /NAME run a command with exec: leave out --tool and --arg-mode"
            )
        run_template(run)  # a command the templates refuse is refused before anything
        tool = "exec"
    runtime = runtime_of(ctx)
    if tool is not None and runtime.registry.tool(tool) is None:
        raise UsageError(unknown_tool(tool, runtime.registry.tools))
    folder = runtime.project_layer / "skills" / name
    target = folder / "SKILL.md"
    if target.exists():
        raise MdagentError(f"{target} already exists; not overwriting it")
    taken = runtime.registry.command(name)
    if taken is not None and taken.layer == "project":
        # Two declarations of one name in a layer is an error: don't write one.
        raise MdagentError(f"/{name} is already declared in {taken.source}; choose another name")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(target, "x", encoding="utf-8") as fh:
            fh.write(skill_skeleton(name, tool, arg_mode, run=run))
    except FileExistsError:
        raise MdagentError(f"{target} already exists; not overwriting it") from None
    except OSError as err:
        raise MdagentError(f"cannot write {target}: {err.strerror or err}") from None
    runtime.keep_trust_current()
    typer.echo(f"wrote {target}")
    typer.echo(f"try: agent /{name} --help")


@new_app.command("tool")
def new_tool(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="NAME", help="The tool's name."),
    run: str = typer.Option(
        ...,
        "--run",
        metavar="COMMAND",
        help="What it runs, e.g. 'wc -l {path}': each {placeholder} is a required parameter.",
    ),
) -> None:
    """Append a tool declaration to .agents/config/tools.yaml, then check it."""
    from mdagent.cli.scaffold import name_problem, tool_entry

    problem = name_problem(name)
    if problem:
        raise UsageError(problem)
    runtime = runtime_of(ctx)
    taken = runtime.registry.tool(name)
    if taken is not None:
        raise UsageError(
            f"a tool called {name!r} already exists ({_declared_where(taken)}); choose another name"
        )
    _add_declaration(
        ctx,
        runtime,
        "tools.yaml",
        tool_entry(name, run),
        f"agent tools {name}; to type it as /{name}: agent new command {name} --tool {name}",
    )


@new_app.command("command")
def new_command(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="NAME", help="The command's name: /NAME."),
    tool: str = typer.Option(..., "--tool", metavar="TOOL", help="The tool /NAME runs."),
    arg_mode: str | None = typer.Option(
        None,
        "--arg-mode",
        metavar="MODE",
        help="raw, parsed or json (default: raw for a tool taking a command, else parsed).",
    ),
) -> None:
    """Append a command declaration to .agents/config/commands.yaml, then check it."""
    from mdagent.cli.scaffold import command_entry, name_problem

    _refuse_new_name(name, name_problem(name), arg_mode)
    runtime = runtime_of(ctx)
    taken = runtime.registry.command(name)
    if taken is not None:
        raise UsageError(
            f"a command called /{name} already exists ({_declared_where(taken)}); "
            "choose another name"
        )
    spec = runtime.registry.tool(tool)
    if spec is None:
        raise UsageError(unknown_tool(tool, runtime.registry.tools))
    mode = arg_mode or ("raw" if "command" in spec.params else "parsed")
    entry = command_entry(name, spec.name, mode)
    _add_declaration(ctx, runtime, "commands.yaml", entry, f"agent /{name} --help")


def _declared_where(spec: Any) -> str:
    source = getattr(spec, "source", "") or ""
    if source.startswith("("):  # "(built-in)"
        return "built in"
    line = getattr(spec, "line", 0)
    return f"{spec.layer} layer, {source}:{line}" if line else f"{spec.layer} layer, {source}"


def _add_declaration(
    ctx: typer.Context, runtime: Runtime, file: str, entry: Any, hint: str
) -> None:
    """Append ``entry`` to the project layer's ``config/FILE``, run check on it, report.

    The problems shown are those the new entry brought (the file's older
    ones are not repeated). An error puts the file back as it was (it was
    locked, so nothing else changed in between is lost): exit 1.
    """
    from mdagent.cli.scaffold import add_entry, undo
    from mdagent.ui.console import problem_line

    target = runtime.project_layer / "config" / file
    kind = entry.section[:-1]

    def problems(registry: Any) -> list[Any]:
        resolved = target.resolve()
        return [p for p in registry.problems if p.path and Path(p.path).resolve() == resolved]

    known = {(p.severity, p.message) for p in problems(runtime.registry)}
    added = add_entry(target, entry)
    runtime.keep_trust_current()  # a file the person asked for: trusted as before
    checking = runtime_of(ctx)
    checking.trust_notice = False  # `runtime` told it already
    found = [p for p in problems(checking.registry) if (p.severity, p.message) not in known]
    as_json = wants_json(ctx, False)
    if not as_json:
        for problem in found:
            typer.echo(problem_line(problem, sys.stderr), err=True)
    shown = shown_path(target)
    if any(p.severity == "error" for p in found):
        undone = undo(added)
        runtime.keep_trust_current()
        if undone:
            message = f"check failed on the new {kind} {entry.name}; {shown} is unchanged"
        else:
            message = (
                f"check failed on the new {kind} {entry.name} at {shown}:{added.first}; "
                "the file changed since, so it was left as it is: fix or remove the entry"
            )
        if as_json:
            error = {"code": "CHECK_FAILED", "message": message}
            print_json({"ok": False, "error": error, "problems": [problem_dict(p) for p in found]})
        else:
            typer.echo(f"agent: {message}", err=True)
        raise typer.Exit(1)
    if as_json:
        where = {"file": shown, "lines": [added.first, added.last]}
        print_json(
            {"ok": True, kind: entry.name, **where, "problems": [problem_dict(p) for p in found]}
        )
        return
    typer.echo(f"added {kind} {entry.name} to {shown} (lines {added.first}-{added.last})")
    warnings = sum(1 for p in found if p.severity == "warning")
    typer.echo(f"check: {plural(warnings, 'warning')}" if warnings else "check: no problems")
    typer.echo(f"try: {hint}")
