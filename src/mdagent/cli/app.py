"""The typer app: the root of every ``agent`` subcommand that is not ``/name``.

Kept apart from :mod:`mdagent.cli.cli` so the ``/name`` fast path never imports
typer (nor rich, which typer pulls in). Here: the root group (its global
options, completion of ``/NAME`` and "did you mean"), ``agent help``, the
list of subcommands in the order ``agent --help`` shows them, each taken
from its command module (``cmd_*.py``), and :func:`run_app`, which runs the
app behind the one error edge (:mod:`mdagent.cli.edge`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from mdagent.cli import cmd_admin, cmd_declared, cmd_new, cmd_sessions, cmd_skills, cmd_workspace
from mdagent.cli.common import (
    BaseUrlOption,
    ModelOption,
    ModeOption,
    OutputFormatOption,
    ProviderOption,
    ScriptOption,
    YesOption,
    options_of,
    runtime_of,
)
from mdagent.core.errors import EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from mdagent.runtime.runtime import Options, Runtime


def _click_module(name: str):
    """A click submodule: typer >= 0.20 vendors click as ``typer._click``."""
    import importlib

    try:
        return importlib.import_module(f"typer._click.{name}")
    except ImportError:
        return importlib.import_module(f"click.{name}")


class AgentGroup(TyperGroup):
    """Completes ``agent /<TAB>`` with the registry's commands."""

    def shell_complete(self, ctx, incomplete):  # noqa: D102 - click API
        CompletionItem = _click_module("shell_completion").CompletionItem  # noqa: N806

        # click keeps the words it could not resolve in _protected_args
        # (protected_args before click 8.2).
        held = getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", None)
        words = [*(held or []), *ctx.args]
        if words and words[0].startswith("/"):
            # `agent /count <TAB>`: the command's own completions (files, a list).
            from mdagent.tools.dispatch import complete_argument

            try:
                command = Runtime(options_of(ctx)).registry.command(words[0])
            except Exception:  # completion must never print a traceback
                return []
            if command is None:
                return []
            return [CompletionItem(v) for v in complete_argument(command, incomplete)]
        items = super().shell_complete(ctx, incomplete)
        if incomplete.startswith("/") or not incomplete:
            try:
                registry = Runtime(options_of(ctx)).registry
            except Exception:  # completion must never print a traceback
                return items
            for key, command in sorted(registry.commands.items()):
                name = f"/{key}"
                if command.user_invocable and name.startswith(incomplete or "/"):
                    items.append(CompletionItem(name, help=command.description))
        return items

    def resolve_command(self, ctx, args):  # noqa: D102 - click API
        # `agent count` for `agent /count`: the nearest name among subcommands
        # and slash commands both, so a person who mixes the two is told.
        try:
            return super().resolve_command(ctx, args)
        except _click_module("exceptions").UsageError as err:
            if args and not args[0].startswith("-"):
                hint = _nearest_name(ctx, self, args[0])
                if hint:
                    err.message = f"No such command '{args[0]}'. Did you mean `{hint}`?"
            raise


def _nearest_name(ctx, group, typed: str) -> str | None:
    """``agent NAME`` or ``agent /NAME`` nearest to ``typed``: the subcommands and slash commands."""
    from mdagent.runtime.person import nearest_name

    try:
        registry = Runtime(options_of(ctx)).registry
    except Exception:  # a broken layer must not hide the usage error itself
        registry = None
    return nearest_name(registry, typed, slash=False)


app = typer.Typer(
    rich_markup_mode=None,  # plain help: no "<bool>" after flags, no rich import
    cls=AgentGroup,
    help="A command-line agent whose tools and slash commands are declared in YAML and SKILL.md.\n\n"
    "Run a declared command with: agent /NAME [ARGS...]",
    no_args_is_help=False,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _plain_metavar(make_metavar):
    """typer writes a required argument as ``{NAME}`` in usage lines; people read ``NAME``."""

    def metavar(self, ctx, *, usage: bool = False) -> str:
        var = make_metavar(self, ctx, usage=usage)
        return var[1:-1] if usage and var.startswith("{") and var.endswith("}") else var

    return metavar


# typer is pinned (<0.29), so this one method is known; see test_help_e2e.
typer.core.TyperArgument.make_metavar = _plain_metavar(typer.core.TyperArgument.make_metavar)


def _version(value: bool) -> None:
    if value:
        from mdagent import __version__

        typer.echo(f"mdagent {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    layer: list[Path] = typer.Option(
        [], "--layer", metavar="DIR", help="Extra layer folder (repeatable; first wins)."
    ),
    no_user: bool = typer.Option(False, "--no-user", help="Skip the user layer ($AGENT_HOME)."),
    json_out: bool = typer.Option(False, "--json", help="Print results as JSON."),
    yes: YesOption = False,
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show tracebacks and debug logs."),
    provider: ProviderOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    script: ScriptOption = None,
    output_format: OutputFormatOption = None,
    mode: ModeOption = None,
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True, help="Show the version."
    ),
    continue_: bool = typer.Option(
        False,
        "--continue",
        "-c",
        help="Open the session on the latest conversation of this workspace.",
    ),
) -> None:
    """Global options go before the subcommand or /NAME."""
    ctx.obj = Options(
        layers=[str(p) for p in layer],
        no_user=no_user,
        json=json_out,
        yes=yes,
        verbose=verbose,
        provider=provider,
        model=model,
        base_url=base_url,
        script=script,
        output_format=output_format or "text",
        mode=mode,
    )
    from mdagent.runtime.runtime import check_run_options

    check_run_options(ctx.obj)
    if ctx.invoked_subcommand is None:
        from mdagent.session.repl import run_repl

        raise typer.Exit(run_repl(Runtime(ctx.obj), continue_=continue_))


# -- help -----------------------------------------------------------------------


def help_command(
    ctx: typer.Context,
    names: list[str] | None = typer.Argument(
        None,
        metavar="[NAME...]",
        help="A subcommand (tools, new tool) or a slash command (/count or count).",
    ),
) -> None:
    """Help: alone, every subcommand and slash command; with NAME, that one's help."""
    from mdagent.runtime.person import command_listing

    root_ctx = ctx.find_root()
    group = root_ctx.command
    if not names:
        typer.echo(group.get_help(root_ctx))
        typer.echo("\nSlash commands (agent /NAME --help for one):")
        typer.echo(command_listing(runtime_of(ctx).registry))
        return
    name = names[0]
    # `agent help new tool`: walk down the subcommand groups word by word.
    sub, sub_ctx, words = None, root_ctx, list(names)
    while words and not words[0].startswith("/"):
        found = getattr(sub_ctx.command, "get_command", lambda *_: None)(sub_ctx, words[0])
        if found is None:
            break
        sub = found
        sub_ctx = sub.make_context(words.pop(0), [], parent=sub_ctx, resilient_parsing=True)
    if sub is not None and not words:
        typer.echo(sub.get_help(sub_ctx))
        return
    if len(names) > 1:
        raise UsageError(f"no help for {' '.join(names)!r} (see: agent help)")
    from mdagent.runtime.person import command_help

    typer.echo(command_help(runtime_of(ctx), name))


# The subcommands, in the order `agent --help` lists them: commands first, then groups.
app.command()(cmd_declared.check)
app.command("test")(cmd_declared.test_declarations)
app.command()(cmd_declared.tools)
app.command()(cmd_declared.commands)
app.command("help")(help_command)
app.command()(cmd_workspace.init)
app.command()(cmd_sessions.ask)
app.command()(cmd_sessions.rewind)
app.command()(cmd_sessions.logs)
app.command("trust")(cmd_workspace.trust_command)
app.command()(cmd_admin.doctor)
app.add_typer(cmd_new.new_app, name="new")
app.add_typer(cmd_admin.config_app, name="config")
app.add_typer(cmd_skills.skills_app, name="skills")
app.add_typer(cmd_sessions.sessions_app, name="sessions")
app.add_typer(cmd_admin.policy_app, name="policy")
app.add_typer(cmd_admin.mcp_app, name="mcp")


def _json_requested(command: Any, argv: list[str]) -> bool:
    """Whether ``--json`` is among ``argv``'s options (not an option's value, not after ``--``).

    Decided from the words, not the parsed options: a usage error stops
    click before the options exist.
    """
    valued: set[str] = set()
    pending = [command]
    while pending:  # every option of every (sub)command that takes a value
        group = pending.pop()
        for param in group.params:
            if getattr(param, "is_flag", True) is False and not getattr(param, "count", False):
                valued.update(param.opts)
        pending.extend(getattr(group, "commands", {}).values())
    words = iter(argv)
    for word in words:
        if word == "--":
            return False
        if word == "--json":
            return True
        if word in valued:
            next(words, None)  # `--run --json`: the value of --run
    return False


def _stream_requested(argv: list[str]) -> bool:
    """Whether ``--output-format stream-json`` is among ``argv``'s words (before ``--``)."""
    words = iter(argv)
    for word in words:
        if word == "--":
            return False
        if word == "--output-format=stream-json":
            return True
        if word == "--output-format" and next(words, None) == "stream-json":
            return True
    return False


def run_app(argv: list[str]) -> int:
    """Run the typer app on ``argv``; errors become one line and an exit status
    (:func:`mdagent.cli.edge.guarded`).

    With ``--json`` (global or the command's own) the line is one
    ``{"ok": false, "error": {"code", "message"}}`` object on stdout instead.
    """
    from typer.main import get_command

    from mdagent.cli.edge import guarded

    command = get_command(app)
    as_json = _json_requested(command, argv)
    if _stream_requested(argv):
        as_json = "stream"  # report_error writes the final `result` event

    def run() -> int:
        # `mdagent` or `agent`: click names the completion variable and script after it.
        from mdagent.cli.edge import program_name

        returned = command.main(args=argv, prog_name=program_name(), standalone_mode=False)
        return returned if isinstance(returned, int) else 0

    return guarded(
        run,
        as_json=as_json,
        verbose=any(a in ("-v", "--verbose") for a in argv),
        translate=_click_status,
    )


def _click_status(err: Exception, as_json: bool | str) -> int | None:
    """The exit status of click's own exceptions, said the way click says them (None: not one)."""
    from mdagent.cli.edge import interrupted
    from mdagent.ui.console import report_error

    click = _click_module("exceptions")
    if isinstance(err, typer.Exit):
        return err.exit_code
    if isinstance(err, click.ClickException):
        usage = isinstance(err, click.UsageError)
        status = EXIT_USAGE if usage else err.exit_code
        if as_json:
            report_error(
                err.format_message(),
                "USAGE" if usage else "ERROR",
                as_json=as_json,
                exit_status=status,
            )
        else:
            err.show()
        return status
    if isinstance(err, typer.Abort):  # click's word for Ctrl-C (and SIGTERM, SIGHUP)
        interrupted(as_json)
        return EXIT_INTERRUPTED
    return None


if __name__ == "__main__":  # pragma: no cover
    from mdagent.cli.edge import show_notices

    show_notices()
    sys.exit(run_app(sys.argv[1:]))
