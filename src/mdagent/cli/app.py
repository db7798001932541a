"""The typer app: every ``agent`` subcommand that is not ``/name``.

Kept apart from :mod:`mdagent.cli.cli` so the ``/name`` fast path never imports
typer (nor rich, which typer pulls in).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from mdagent.core.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    MdagentError,
    UsageError,
    unknown_tool,
)
from mdagent.core.text import first_line
from mdagent.runtime.runtime import Options, Runtime
from mdagent.ui.console import say_error, table


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
                command = Runtime(_options(ctx)).registry.command(words[0])
            except Exception:  # completion must never print a traceback
                return []
            if command is None:
                return []
            return [CompletionItem(v) for v in complete_argument(command, incomplete)]
        items = super().shell_complete(ctx, incomplete)
        if incomplete.startswith("/") or not incomplete:
            try:
                registry = Runtime(_options(ctx)).registry
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
        registry = Runtime(_options(ctx)).registry
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
new_app = typer.Typer(help="Create new declarations.", no_args_is_help=True)
app.add_typer(new_app, name="new")
config_app = typer.Typer(
    help="Show configuration (alone: the same as `agent config show`).", no_args_is_help=False
)
app.add_typer(config_app, name="config")


# Options that both the root (`agent --provider x ask`) and `ask` accept
# (`agent ask --provider x`): declared once.
ProviderOption = Annotated[
    str | None, typer.Option("--provider", metavar="NAME", help="openai, anthropic or fake.")
]
ModelOption = Annotated[
    str | None, typer.Option("--model", metavar="NAME", help="The model's name.")
]
BaseUrlOption = Annotated[
    str | None, typer.Option("--base-url", metavar="URL", help="The provider's API base URL.")
]
ScriptOption = Annotated[
    str | None,
    typer.Option("--script", metavar="FILE", help="Scripted conversation (fake provider)."),
]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Approve every call that would ask.")]
OutputFormatOption = Annotated[
    str | None,
    typer.Option(
        "--output-format",
        metavar="FORMAT",
        help="text, json (as --json) or stream-json (one JSON event per line).",
    ),
]
ModeOption = Annotated[
    str | None,
    typer.Option(
        "--mode",
        metavar="MODE",
        help="Permission mode for this run: ask, accept-edits, plan, full, allowlist or deny.",
    ),
]


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


def _options(ctx: typer.Context) -> Options:
    root_ctx = ctx.find_root()
    if isinstance(root_ctx.obj, Options):
        return root_ctx.obj
    params = root_ctx.params or {}
    return Options(
        layers=[str(p) for p in params.get("layer") or []], no_user=bool(params.get("no_user"))
    )


def _runtime(ctx: typer.Context) -> Runtime:
    return Runtime(_options(ctx))


def _wants_json(ctx: typer.Context, local: bool) -> bool:
    return local or _options(ctx).json


def _problem_dict(p: Any) -> dict[str, Any]:
    """A check problem as ``--json`` shows it."""
    return {
        "path": p.path,
        "line": p.line,
        "col": p.col,
        "severity": p.severity,
        "message": p.message,
    }


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


# -- check, tools, commands, skills ----------------------------------------------


@app.command()
def check(
    ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """Report every problem in every layer; exit 1 if any is an error."""
    from mdagent.runtime.trust import check_problems as trust_problems

    runtime = _runtime(ctx)
    runtime.trust_notice = False  # said below, item by item
    registry = runtime.registry
    sandbox = runtime.sandbox_problem()
    problems = [*registry.problems, sandbox] if sandbox else registry.problems
    problems = [*trust_problems(runtime.trust), *problems]  # what an untrusted folder loses
    from mdagent.cli.policycheck import policy_tests

    failed, tests = policy_tests(runtime)  # policy.tests: each failing one at its line
    problems = [*problems, *failed]
    from mdagent.cli.skillinstall import lock_problems

    problems = [*problems, *lock_problems(runtime.layers)]  # installed skills vs skills.lock
    mcp_errors: list = []
    if runtime.settings.get("mcp_servers"):  # each server started: its status, its tools
        from mdagent.mcp.mcptools import check_problems

        found = check_problems(runtime)
        problems = [*problems, *found]
        mcp_errors = [p for p in found if p.severity == "error"]
    if _wants_json(ctx, json_out):
        _print_json([_problem_dict(p) for p in problems])
    else:
        from mdagent.ui.console import problem_line

        for problem in problems:
            typer.echo(problem_line(problem))  # the severity red or yellow on a terminal
        errors = len(registry.errors) + len(failed) + len(mcp_errors)
        warnings = sum(1 for p in problems if p.severity == "warning")
        summary = (
            f"{len(registry.tools)} tools, {len(registry.commands)} commands, "
            f"{len(registry.skills)} skills; {_count(errors, 'error')}, {_count(warnings, 'warning')}"
        )
        if tests:
            summary += f"; {tests - len(failed)} of {_count(tests, 'policy test')} passed"
        typer.echo(summary, err=True)
    raise typer.Exit(1 if registry.errors or failed or mcp_errors else 0)


@app.command("test")
def test_declarations(
    ctx: typer.Context,
    names: list[str] = typer.Argument(
        None, metavar="[NAME]...", help="Only these tools and commands (/name or name)."
    ),
    layer: list[str] = typer.Option(
        [],
        "--layer",
        metavar="LAYER",
        help="Only tests declared in this layer: a kind (project, user, bundled) or a folder.",
    ),
    pattern: str | None = typer.Option(
        None, "-k", metavar="PATTERN", help="Only tests whose label contains PATTERN."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object per test."),
) -> None:
    """Run the tests declared in tools, commands and command skills; exit 1 if any fails."""
    from mdagent.cli.declaredtests import collect, run_tests, select

    runtime = _runtime(ctx)
    runtime.check_settings()
    found = collect(runtime.registry)
    unknown = [
        n
        for n in names or []
        if runtime.registry.tool(n.lstrip("/")) is None
        and runtime.registry.command(n.lstrip("/")) is None
    ]
    if unknown:
        raise UsageError(f"no tool or command called {', '.join(unknown)}")
    outcomes = run_tests(runtime, select(found, names or [], layer, pattern))
    failed = sum(1 for o in outcomes if not o.passed)
    if _wants_json(ctx, json_out):
        _print_json([o.to_dict() for o in outcomes])
    else:
        from mdagent.ui.console import mark

        for outcome in outcomes:
            typer.echo(f"{mark(outcome.passed)} {outcome.test.label}")
            if outcome.passed:
                continue
            for failure in outcome.failures:
                text = failure.replace("\n", "\n    ")
                typer.echo(f"  {outcome.test.where}: {text}")
        if not outcomes:
            typer.echo("no declared tests" + (" matched" if names or layer or pattern else ""))
        typer.echo(f"{len(outcomes) - failed} passed, {failed} failed")
    raise typer.Exit(1 if failed else 0)


@app.command()
def tools(
    ctx: typer.Context,
    name: str | None = typer.Argument(None, metavar="[NAME]", help="Show one tool's parameters."),
    all_: bool = typer.Option(False, "--all", help="Include unavailable tools, with the reason."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    fmt: str | None = typer.Option(
        None, "--format", metavar="FORMAT", help="openai or anthropic: the schema sent to a model."
    ),
) -> None:
    """List tools: name, aliases, category, security, tier, source."""
    runtime = _runtime(ctx)
    registry = runtime.registry
    specs = list(registry.tools.values())
    if registry.settings.get("mcp_servers") and name is None:
        specs += [s for server in runtime.mcp.configs for s in runtime.mcp.specs(server)]
    if name is not None:
        spec = runtime.tool_spec(name)
        if spec is None:
            raise UsageError(unknown_tool(name, registry.tools))
        specs = [spec]
    rows = [(s, runtime.unavailable(s)) for s in sorted(specs, key=lambda s: s.name)]
    if not all_ and name is None:
        rows = [(s, r) for s, r in rows if r is None]
    if fmt is not None:
        if fmt not in ("openai", "anthropic"):
            raise UsageError("--format must be openai or anthropic")
        from mdagent.agent.prompts import model_tools
        from mdagent.tools.toolbox import Toolbox

        box = Toolbox()
        for spec, _ in rows:
            box.add_spec(spec, dict)
        # Exactly what a model is sent: the configured tier, available tools only.
        sent = [t["name"] for t in model_tools(box, runtime.settings)]
        _print_json(box.to_openai(sent) if fmt == "openai" else box.to_anthropic(sent))
        return
    if _wants_json(ctx, json_out):
        _print_json(
            [{**s.to_dict(), "available": r is None, "unavailable_reason": r} for s, r in rows]
        )
        return
    if name is not None:
        spec, reason = rows[0]
        from mdagent.core.escapes import visible

        typer.echo(visible(f"{spec.name} - {spec.description}"))
        if spec.aliases:
            typer.echo(f"aliases: {', '.join(spec.aliases)}")
        typer.echo(
            f"category: {spec.category}  security: {spec.security}  tier: {spec.tier}  kind: {spec.kind}"
        )
        typer.echo(f"source: {spec.source}{':' + str(spec.line) if spec.line else ''}")
        if reason:
            typer.echo(f"unavailable: {reason}")
        typer.echo("parameters:" if spec.params else "parameters: (none)")
        for param, schema in spec.params.items():
            req = " (required)" if param in spec.required else ""
            typer.echo(
                visible(
                    f"  {param:<16} {schema.get('type', 'any')!s:<8} {schema.get('description', '')}{req}".rstrip()
                )
            )
        return
    listing = [
        [
            s.name,
            ",".join(s.aliases),
            s.category,
            s.security,
            s.tier,
            _short_source(s.source, s.line) + (f"  (unavailable: {r})" if r else ""),
        ]
        for s, r in rows
    ]
    typer.echo(
        table(listing, ["NAME", "ALIASES", "CATEGORY", "SECURITY", "TIER", "SOURCE"], fit=True)
    )


def _short_source(source: str, line: int = 0) -> str:
    """A declaration's place, short: relative to here, ``bundled:…`` or ``~/…``."""
    from mdagent.core.layers import bundled_layer_path

    path = Path(source)
    if path.is_relative_to(Path.cwd()):
        shown = str(path.relative_to(Path.cwd()))
    elif path.is_relative_to(bundled := bundled_layer_path()):
        shown = f"bundled:{path.relative_to(bundled)}"
    else:
        shown = source.replace(str(Path.home()), "~")
    return f"{shown}:{line}" if line else shown


@app.command()
def commands(
    ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """List slash commands: name, tool or prompt skill, argument mode, source."""
    registry = _runtime(ctx).registry
    visible = [c for _, c in sorted(registry.commands.items()) if c.user_invocable]
    if _wants_json(ctx, json_out):
        _print_json([c.to_dict() for c in visible])
        return
    rows = [
        [
            f"/{c.name}",
            c.tool if c.kind == "tool" else "(prompt)",
            c.arg_mode if c.kind == "tool" else "",
            _short_source(c.source, c.line if not c.skill else 0),
            first_line(c.description, None),  # the table fits it to the terminal
        ]
        for c in visible
    ]
    typer.echo(table(rows, ["COMMAND", "TOOL", "ARGS", "SOURCE", "DESCRIPTION"], fit=True))


skills_app = typer.Typer(
    help="List skills; add, update and remove shared ones.", invoke_without_command=True
)
app.add_typer(skills_app, name="skills")


@skills_app.callback()
def skills(
    ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """List skills: name, kind, whether a model may load it, layer, source."""
    if ctx.invoked_subcommand is not None:
        return
    _list_skills(ctx, json_out)


def _list_skills(ctx: typer.Context, json_out: bool) -> None:
    from mdagent.core.layers import FOREIGN_KINDS, INTEROP_KINDS
    from mdagent.core.specs import unmet_requirement

    registry = _runtime(ctx).registry
    items = sorted(registry.skills.values(), key=lambda s: s.name)
    if _wants_json(ctx, json_out):
        _print_json(
            [{**s.to_dict(), "unavailable_reason": unmet_requirement(s.requires)} for s in items]
        )
        return
    rows = []
    for s in items:
        kind = f"command -> {s.tool or '?'}" if s.dispatch == "tool" else "prompt"
        flags = []
        if s.command_error:
            flags.append("command-refused")  # agent check says why
        if s.disable_model_invocation:
            flags.append("no-model")
        if not s.user_invocable:
            flags.append("hidden")
        reason = unmet_requirement(s.requires)
        if reason:
            flags.append(f"unavailable: {reason}")
        layer = INTEROP_KINDS.get(s.layer) or FOREIGN_KINDS.get(s.layer, s.layer)
        rows.append([s.name, kind, ",".join(flags), layer, _short_source(s.path)])
    typer.echo(table(rows, ["SKILL", "KIND", "FLAGS", "LAYER", "SOURCE"], fit=True))


# -- sharing skills: add, update, remove (issue 19) ---------------------------------

GlobalOption = Annotated[
    bool, typer.Option("--global", help="The user layer ($AGENT_HOME), not the project's.")
]
ConsentOption = Annotated[
    bool, typer.Option("--yes", "-y", help="Accept without asking (after reading what it shows).")
]


def _install_layer(ctx: typer.Context, global_: bool) -> Path:
    from mdagent.core.layers import user_layer_path

    return user_layer_path() if global_ else _runtime(ctx).project_layer


def _consent(yes: bool, verb: str):
    """Show what is about to be installed; ask on a terminal, or take ``--yes``."""
    import sys

    from mdagent.cli.skillinstall import InstallError

    def confirm(text: str) -> bool:
        typer.echo(text)
        if yes:
            return True
        if not sys.stdin.isatty():
            raise InstallError(
                f"not {verb}: no terminal to ask for consent; read the above and pass --yes"
            )
        question = "Install these skills?" if verb == "installed" else "Update this skill?"
        sys.stderr.write(f"{question} [y/N] ")
        sys.stderr.flush()
        answer = sys.stdin.readline()
        return answer.strip().lower() in ("y", "yes")

    return confirm


@skills_app.command("list")
def skills_list(
    ctx: typer.Context,
    installed: bool = typer.Option(
        False, "--installed", help="Only skills installed by `agent skills add`, from the locks."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List skills (--installed: the installed ones, with source, commit and state)."""
    if not installed:
        _list_skills(ctx, json_out)
        return
    from mdagent.cli.skillinstall import read_lock, verify
    from mdagent.core.layers import user_layer_path

    rows = []
    runtime = _runtime(ctx)
    seen: set[Path] = set()
    for label, layer in (("project", runtime.project_layer), ("user", user_layer_path())):
        if layer in seen:
            continue
        seen.add(layer)
        for name, entry in read_lock(layer).items():
            problem = verify(layer, name, entry)
            state = (
                "ok"
                if problem is None
                else ("missing" if "missing" in problem.message else "modified")
            )
            rows.append({"name": name, "layer": label, "state": state, **entry})
    if _wants_json(ctx, json_out):
        _print_json(rows)
        return
    if not rows:
        typer.echo("(no installed skills)")
        return
    listing = [
        [
            r["name"],
            r["layer"],
            r["state"],
            str(r.get("source")) + (f" {r['path']}" if r.get("path") not in (None, ".") else ""),
            (r.get("ref") or "") + (f"@{r['commit'][:12]}" if r.get("commit") else ""),
        ]
        for r in rows
    ]
    typer.echo(table(listing, ["SKILL", "LAYER", "STATE", "SOURCE", "REF"]))


@skills_app.command("add")
def skills_add(
    ctx: typer.Context,
    source: str = typer.Argument(
        ..., metavar="SOURCE", help="A folder, a git URL (https://, git@, file://) or owner/repo."
    ),
    path: str | None = typer.Option(
        None,
        "--path",
        metavar="SUBDIR",
        help="The skill's folder (or a folder of skills) in SOURCE.",
    ),
    ref: str | None = typer.Option(None, "--ref", metavar="REF", help="Branch, tag or commit."),
    name: str | None = typer.Option(
        None, "--name", metavar="NAME", help="Install under this name."
    ),
    global_: GlobalOption = False,
    take_all: bool = typer.Option(False, "--all", help="Install every skill found, not just one."),
    yes: ConsentOption = False,
) -> None:
    """Install shared skills after showing what they can do and asking for consent."""
    from mdagent.cli.skillinstall import Request, install

    layer = _install_layer(ctx, global_)
    request = Request(source=source, path=path, ref=ref, name=name, take_all=take_all)
    runtime = _runtime(ctx)
    trusted = runtime.trusted
    names = install(request, layer, runtime.layers, _consent(yes, "installed"))
    if trusted and names:
        runtime.keep_trust_current()  # installed with its own consent
    for installed in names:
        typer.echo(f"installed {installed} into {layer / 'skills' / installed}")


@skills_app.command("update")
def skills_update(
    ctx: typer.Context,
    name: str | None = typer.Argument(None, metavar="[NAME]", help="One skill; default: all."),
    global_: GlobalOption = False,
    yes: ConsentOption = False,
) -> None:
    """Fetch installed skills again: show the diff, ask again if scripts or permissions changed."""
    from mdagent.cli.skillinstall import InstallError, read_lock, update

    layer = _install_layer(ctx, global_)
    names = [name] if name else sorted(read_lock(layer))
    if not names:
        typer.echo("(no installed skills)")
        return
    failed = 0
    runtime = _runtime(ctx)
    trusted = runtime.trusted
    try:
        for one in names:
            try:
                typer.echo(update(layer, one, runtime.layers, _consent(yes, "updated"), typer.echo))
            except InstallError as err:
                if len(names) == 1:
                    raise
                failed += 1
                say_error(str(err))
    finally:
        if trusted:
            runtime.keep_trust_current()  # updated with its own consent
    raise typer.Exit(1 if failed else 0)


@skills_app.command("remove")
def skills_remove(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="NAME", help="An installed skill."),
    global_: GlobalOption = False,
) -> None:
    """Remove a skill installed by `agent skills add`, and its lock entry."""
    from mdagent.cli.skillinstall import remove

    runtime = _runtime(ctx)
    trusted = runtime.trusted
    folder = remove(_install_layer(ctx, global_), name)
    if trusted:
        runtime.keep_trust_current()
    typer.echo(f"removed {folder}")


# -- new skill ------------------------------------------------------------------


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
    from mdagent.declarations.skills import name_problem

    _refuse_new_name(name, name_problem(name), arg_mode)
    if run is not None:
        if tool not in (None, "exec") or arg_mode != "raw":
            raise UsageError(
                "--run makes /NAME run a command with exec: leave out --tool and --arg-mode"
            )
        run_template(run)  # a command the templates refuse is refused before anything
        tool = "exec"
    runtime = _runtime(ctx)
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
    runtime = _runtime(ctx)
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
    runtime = _runtime(ctx)
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
    checking = _runtime(ctx)
    checking.trust_notice = False  # `runtime` told it already
    found = [p for p in problems(checking.registry) if (p.severity, p.message) not in known]
    as_json = _wants_json(ctx, False)
    if not as_json:
        for problem in found:
            typer.echo(problem_line(problem, sys.stderr), err=True)
    shown = _shown_path(target)
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
            _print_json(
                {"ok": False, "error": error, "problems": [_problem_dict(p) for p in found]}
            )
        else:
            typer.echo(f"agent: {message}", err=True)
        raise typer.Exit(1)
    if as_json:
        where = {"file": shown, "lines": [added.first, added.last]}
        _print_json(
            {"ok": True, kind: entry.name, **where, "problems": [_problem_dict(p) for p in found]}
        )
        return
    typer.echo(f"added {kind} {entry.name} to {shown} (lines {added.first}-{added.last})")
    warnings = sum(1 for p in found if p.severity == "warning")
    typer.echo(f"check: {_count(warnings, 'warning')}" if warnings else "check: no problems")
    typer.echo(f"try: {hint}")


def _shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it is under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def run_template(run: str) -> str:
    """The ``command-with`` template for ``agent new skill --run COMMAND``.

    The command is kept as written (braces escaped) and the typed words
    follow it, each quoted on its own; a command the template checks refuse
    (a word where the shell reads code) is a usage error, before anything
    is written.
    """
    from mdagent.tools.templates import TemplateError, check_shell

    if not run.strip():
        raise UsageError("--run needs a command, e.g. --run 'du -sh'")
    template = run.strip().replace("{", "{{").replace("}", "}}") + " {ARGUMENTS}"
    try:
        check_shell(template)
    except TemplateError as exc:
        raise UsageError(f"--run: {exc}") from None
    return template


def _example_test(tool: str, arg_mode: str) -> str:
    """One example test for a new command skill: a real one where its outcome is known."""
    if tool in ("exec", "bash", "sh", "shell", "execute") and arg_mode == "raw":
        return (
            "tests:                 # `agent test` runs these in a copy of the workspace\n"
            "  - name: echoes\n"
            "    approve: true\n"
            "    argv: echo hello\n"
            "    expect: {ok: true, contains: hello}\n"
        )
    return (
        "# `agent test` runs these; an example to adapt:\n"
        "# tests:\n"
        "#   - {name: works, approve: true, argv: 'ARGS', expect: {ok: true}}\n"
    )


def skill_skeleton(name: str, tool: str | None, arg_mode: str, run: str | None = None) -> str:
    """The text of a new SKILL.md."""
    if run is not None:
        template = run_template(run)
        return (
            f"---\nname: {name}\n"
            f"description: Describe what /{name} does and when to use it\n"
            f"command-dispatch: tool\ncommand-tool: exec\n"
            f"command-with: {{command: {json.dumps(template)}}}\n"
            f"argument-hint: '[args...]'\n"
            "# `agent test` runs these; an example to adapt:\n"
            "# tests:\n"
            "#   - {name: runs, approve: true, argv: 'ARGS', expect: {ok: true}}\n"
            "---\n"
            f"`agent /{name} ARGS` runs `{run.strip()}` with ARGS, each one quoted.\n"
        )
    if tool:
        return (
            f"---\nname: {name}\n"
            f"description: Describe what /{name} does and when to use it\n"
            f"command-dispatch: tool\ncommand-tool: {tool}\ncommand-arg-mode: {arg_mode}\n"
            + _example_test(tool, arg_mode)
            + "---\n"
            f"`agent /{name} ARGS` runs the `{tool}` tool with ARGS ({arg_mode} arguments).\n"
        )
    return (
        f"---\nname: {name}\n"
        f"description: Describe what this skill does and when a model should use it\n"
        f"argument-hint: <what to pass>\n"
        "tests:                 # `agent test` runs the turn against this scripted model\n"
        "  - argv: an example\n"
        "    model: {script: [Done.]}\n"
        "    expect: {contains: Done., prompt_contains: an example}\n"
        "---\n"
        f"# {name}\n\nInstructions for the model go here.\n\nThe user asked for: $ARGUMENTS\n"
    )


# -- help -----------------------------------------------------------------------


@app.command("help")
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
        typer.echo(command_listing(_runtime(ctx).registry))
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

    typer.echo(command_help(_runtime(ctx), name))


# -- init -----------------------------------------------------------------------


@app.command()
def init(
    ctx: typer.Context,
    model: str | None = typer.Option(
        None,
        "--model",
        metavar="CHOICE",
        help="openai, anthropic or ollama (asked on a terminal when left out).",
    ),
) -> None:
    """Start a project: a commented .agents/config/agent.yaml and an example skill.

    Never overwrites: an existing file is kept and said so.
    """
    from mdagent.runtime.init import EXAMPLE_SKILL, MODEL_CHOICES, write_init

    choices = list(MODEL_CHOICES)
    if model is None:
        if not sys.stdin.isatty():
            raise UsageError(f"init needs a model choice: --model {'|'.join(choices)}")
        for number, name in enumerate(choices, 1):
            typer.echo(f"  {number}. {name:10} {MODEL_CHOICES[name][0]}")
        answer = typer.prompt("Which model", default="1").strip().lower()
        if answer.isdigit() and 1 <= int(answer) <= len(choices):
            answer = choices[int(answer) - 1]
        model = answer
    if model not in MODEL_CHOICES:
        raise UsageError(f"init: --model must be one of {', '.join(choices)}, not {model!r}")
    runtime = _runtime(ctx)
    layer = runtime.project_layer
    trusted = runtime.trusted  # what was here before: an untrusted folder stays untrusted
    try:
        written = write_init(layer, model)
    except OSError as err:
        raise MdagentError(f"cannot write in {layer}: {err.strerror or err}") from None
    for path, fresh in written:
        typer.echo(f"{'wrote' if fresh else 'kept existing'} {path}")
    if written[0][1]:
        typer.echo(f"model: {MODEL_CHOICES[model][0]}")
    else:  # the person's agent.yaml stands; say the choice did not change it
        typer.echo(f"model: unchanged ({written[0][0]} was kept; edit its model: section)")
    if trusted:
        runtime.keep_trust_current()  # agent init in a folder trusts it
        typer.echo("trusted this folder as it is now (see: agent trust --show)")
    typer.echo(f"try: agent /{EXAMPLE_SKILL} world   then: agent check, agent ask 'hi'")


# -- the agent ------------------------------------------------------------------


@app.command()
def ask(
    ctx: typer.Context,
    prompt: list[str] = typer.Argument(
        None, metavar="PROMPT", help="The prompt (read from stdin when absent and piped)."
    ),
    continue_: bool = typer.Option(False, "--continue", "-c", help="Continue the latest session."),
    session: str | None = typer.Option(
        None, "--session", metavar="ID", help="Continue this session (id or prefix)."
    ),
    yes: YesOption = False,
    json_out: bool = typer.Option(
        False, "--json", help="Print the answer and the tool calls as JSON."
    ),
    output_format: OutputFormatOption = None,
    mode: ModeOption = None,
    max_steps: int | None = typer.Option(
        None,
        "--max-steps",
        min=1,
        metavar="N",
        help="Stop after N model calls without an answer (exit status 3).",
    ),
    allow: list[str] = typer.Option(
        [], "--allow", metavar="RULE", help="An allow rule for this run only (repeatable)."
    ),
    deny: list[str] = typer.Option(
        [],
        "--deny",
        metavar="RULE",
        help="A deny rule for this run only (repeatable; beats --yes).",
    ),
    tools: str | None = typer.Option(
        None, "--tools", metavar="NAME,...", help="Offer only these tools to the model."
    ),
    system_prompt: str | None = typer.Option(
        None, "--system-prompt", metavar="TEXT|@FILE", help="Replace the system prompt."
    ),
    append_system_prompt: str | None = typer.Option(
        None,
        "--append-system-prompt",
        metavar="TEXT|@FILE",
        help="Add to the end of the system prompt.",
    ),
    fail_on_refusal: bool = typer.Option(
        False,
        "--fail-on-refusal",
        help="Exit 4 when the model answered but the policy refused a tool call.",
    ),
    provider: ProviderOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    script: ScriptOption = None,
) -> None:
    """Run an agent turn: the model answers, calling the declared tools."""
    values = {k: v for k, v in locals().items() if k != "ctx"}  # the parameters, as named
    from mdagent.cli.askcommand import ask_command

    raise typer.Exit(ask_command(_options(ctx), **values))


sessions_app = typer.Typer(
    help="List, show, export and remove this workspace's sessions.", invoke_without_command=True
)
app.add_typer(sessions_app, name="sessions")


@sessions_app.callback()
def sessions_list(
    ctx: typer.Context,
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    limit: int = typer.Option(20, "-n", metavar="N", help="How many, newest first."),
    every: bool = typer.Option(False, "--all", help="Sessions of every workspace."),
) -> None:
    """List this workspace's recent sessions (--all: every workspace's)."""
    if ctx.invoked_subcommand is not None:
        return
    runtime = _runtime(ctx)
    rows = runtime.store.sessions(limit=limit, cwd=None if every else str(runtime.workdir))
    if _wants_json(ctx, json_out):
        _print_json(rows)
        return
    if not rows:
        typer.echo("(no sessions)")
        return
    listing = [
        [r["id"], str(r["updated"])[:19], str(r.get("messages", "")), (r.get("title") or "")[:60]]
        for r in rows
    ]
    typer.echo(table(listing, ["ID", "UPDATED", "MESSAGES", "TITLE"], fit=True))


@sessions_app.command("show")
def sessions_show(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID", help="Session id or a unique prefix."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print one session's messages."""
    store = _runtime(ctx).store
    found = store.session(session_id)
    if found is None:
        raise UsageError(f"no session {session_id!r} (see: agent sessions)")
    messages = store.messages(found["id"])
    if _wants_json(ctx, json_out):
        _print_json({**found, "messages": messages})
        return
    from mdagent.ui.transcript import message_line

    typer.echo(f"session {found['id']}  {found.get('title') or ''}".rstrip())
    for message in messages:
        typer.echo(message_line(message))


def _found_session(ctx: typer.Context, session_id: str) -> tuple[Any, dict[str, Any]]:
    store = _runtime(ctx).store
    found = store.session(session_id)
    if found is None:
        raise UsageError(f"no session {session_id!r} (see: agent sessions --all)")
    return store, found


@sessions_app.command("export")
def sessions_export(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID", help="Session id or a unique prefix."),
    output: Path | None = typer.Option(
        None, "--output", "-o", metavar="FILE", help="Write to FILE instead of stdout."
    ),
) -> None:
    """Write one session as Markdown: each message, the tool calls and their results."""
    from mdagent.ui.transcript import markdown, save

    store, found = _found_session(ctx, session_id)
    text = markdown(found, store.messages(found["id"]))
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        save(output, text)
    except OSError as err:
        raise UsageError(f"{output}: cannot write: {err.strerror or err}") from None
    typer.echo(f"wrote {output}", err=True)


@sessions_app.command("rm")
def sessions_rm(
    ctx: typer.Context,
    session_ids: list[str] = typer.Argument(
        ..., metavar="ID...", help="Session ids or unique prefixes."
    ),
) -> None:
    """Delete sessions and their messages (the audit log keeps their tool calls)."""
    from mdagent.rewind.checkpoints import remove_session

    found = [_found_session(ctx, sid) for sid in session_ids]  # all known before any goes
    for store, session in found:
        store.delete_session(session["id"])
        removed = remove_session(session["id"])
        also = f" and its {_count(removed, 'checkpoint')}" if removed else ""
        typer.echo(f"removed {session['id']}{also}")


@app.command()
def rewind(
    ctx: typer.Context,
    checkpoint: int | None = typer.Argument(
        None,
        metavar="[N]",
        help="The checkpoint to go back to (see --list); default: before the latest "
        "model turn that changed files.",
    ),
    list_: bool = typer.Option(
        False, "--list", help="List the checkpoints: time, prompt, what each turn changed."
    ),
    diff: bool = typer.Option(
        False, "--diff", help="Show what rewinding to N would do, as a diff; change nothing."
    ),
    files_only: bool = typer.Option(
        False, "--files-only", help="Rewind the files, not the conversation."
    ),
    conversation_only: bool = typer.Option(
        False, "--conversation-only", help="Rewind the conversation, not the files."
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Overwrite files changed after a turn ended (the rewind can be rewound).",
    ),
    prune: bool = typer.Option(
        False, "--prune", help="Remove checkpoints beyond checkpoints.keep_days and keep_mib."
    ),
    json_out: bool = typer.Option(False, "--json", help="With --list: print JSON."),
) -> None:
    """Take back what model turns changed: the files (their commands' changes too) and the
    conversation, to before a turn.

    A file someone changed after a turn ended stops the rewind, named, unless --force.
    Exit status: 0 rewound (or nothing to change), 1 stopped by such a file, nothing to
    rewind, or a file not rewound, 2 no such checkpoint or options that do not go together.
    """
    from mdagent.agent.rewindcommand import (
        Request,
        checked,
        listing,
        listing_json,
        open_checkpoints,
        plan_text,
        prune_text,
        run_rewind,
        target_of,
    )

    actions = [name for name, on in (("--list", list_), ("--diff", diff), ("--prune", prune)) if on]
    if len(actions) > 1:
        raise UsageError(f"{' and '.join(actions)} do not go together")
    runtime = _runtime(ctx)
    if prune:
        typer.echo(prune_text(runtime))
        return
    if list_:
        if _wants_json(ctx, json_out):
            _print_json(listing_json(open_checkpoints(runtime)))
        else:
            typer.echo(listing(open_checkpoints(runtime)))
        return
    if diff:
        from mdagent.rewind.rewind import diff_text, plan

        checkpoints = open_checkpoints(runtime)
        planned = plan(checkpoints, target_of(checkpoints, checkpoint), force=force)
        typer.echo(plan_text(planned))
        text = diff_text(checkpoints, planned)
        if text:
            typer.echo(text, nl=not text.endswith("\n"))
        return
    request = checked(Request(checkpoint, not conversation_only, not files_only, force))
    confirm = _ask_yes if sys.stdin.isatty() and sys.stderr.isatty() else None
    lines, ok = run_rewind(runtime, request, confirm=confirm)
    typer.echo("\n".join(lines))
    if not ok:
        raise typer.Exit(EXIT_FAILED)


def _ask_yes(question: str) -> bool:
    """Ask ``question [y/N]`` on the terminal; whether the answer is yes."""
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


@app.command()
def logs(
    ctx: typer.Context,
    tool: str | None = typer.Option(
        None, "--tool", metavar="NAME", help="Only calls of this tool."
    ),
    session: str | None = typer.Option(
        None, "--session", metavar="ID", help="Only calls of this session (id or prefix)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    limit: int = typer.Option(20, "-n", metavar="N", help="How many, newest first."),
    every: bool = typer.Option(False, "--all", help="Calls of every workspace."),
) -> None:
    """The audit log: this workspace's tool calls (--all: every workspace's), outcome,
    run time, time waited for your answer, approver."""
    runtime = _runtime(ctx)
    store = runtime.store
    session_id = None
    if session is not None:
        found = store.session(session)  # a prefix, as `agent ask --session` takes
        if found is None:
            raise UsageError(f"no session {session!r} (see: agent sessions)")
        session_id = found["id"]
    # A session names its workspace itself: --session shows its calls from anywhere.
    workspace = None if every or session_id else str(runtime.workdir)
    rows = store.calls(tool=tool, limit=limit, session_id=session_id, workspace=workspace)
    if _wants_json(ctx, json_out):
        _print_json(rows)
        return
    if not rows:
        where = "" if every else " in this workspace (--all: every workspace)"
        typer.echo(f"(no calls logged{where})")
        return
    from mdagent.ui.console import terminal_width

    # On a terminal the time drops its year and seconds (the columns are few at 60 wide).
    time_of = (lambda t: t[5:16].replace("T", " ")) if terminal_width() else (lambda t: t[:19])
    listing = [
        [
            time_of(str(r.get("time", ""))),
            _short_workspace(r.get("workspace")),
            str(r.get("caller", "")),
            str(r.get("tool", "")),
            _outcome(r),
            f"{r.get('duration_ms') or 0:.0f}ms",
            f"{r['wait_ms']:.0f}ms" if r.get("wait_ms") else "",
            str(r.get("approved_by") or ""),
            _short_args(r.get("args")),
        ]
        for r in rows
    ]
    # TOOK is the run time; WAITED the time the call waited for the person's answer.
    header = [
        "TIME",
        "WORKSPACE",
        "CALLER",
        "TOOL",
        "OUTCOME",
        "TOOK",
        "WAITED",
        "APPROVED BY",
        "ARGS",
    ]
    typer.echo(table(listing, header, fit=True))


def _short_workspace(path: str | None) -> str:
    """A workspace for the logs' column: ``~/…`` for the home folder; ``?`` for an old row.

    On a terminal a long path is shown by its folder's name, the part that
    tells workspaces apart; piped, it is whole.
    """
    from mdagent.ui.console import terminal_width

    if not path:
        return "?"  # logged before calls carried their workspace
    home = str(Path.home())
    shown = "~" + path[len(home) :] if path == home or path.startswith(home + "/") else path
    if terminal_width() is not None and len(shown) > 16:
        shown = Path(shown).name or shown
    return shown


def _outcome(row: dict[str, Any]) -> str:
    if row.get("status") == "started":  # running, or its process ended mid-call
        return "started, no outcome"
    if row.get("ok"):
        return "ok"
    word = {"DENIED": "denied", "RATE_LIMITED": "rate limited"}.get(row.get("code") or "", "failed")
    return f"{word}: {str(row.get('error') or '')[:40]}"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _short_args(args: Any, limit: int = 60) -> str:
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- policy ---------------------------------------------------------------------

policy_app = typer.Typer(
    help="Inspect the policy: what it decides, its rules, and revoking an allow rule.",
    no_args_is_help=True,
)
app.add_typer(policy_app, name="policy")


@policy_app.command("check")
def policy_check(
    ctx: typer.Context,
    tool: str = typer.Argument(..., metavar="TOOL", help="A tool name, or a call: 'exec(ls)'."),
    words: list[str] = typer.Argument(
        None, metavar="ARGS", help="exec: the command; file tools: the path; fetch: the URL."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show what the policy decides for a model's call, and why.

    Prints the decision (allow, ask or deny), the rule and the layer file:line that
    decided it and, for exec, each segment's own verdict. Nothing runs, no hook either.
    """
    from mdagent.cli.policycheck import (
        cli_call,
        model_context,
        runtime_policy,
        verdict_dict,
        verdict_text,
    )

    runtime = _runtime(ctx)
    runtime.check_settings()
    spec, args = cli_call(runtime.registry, tool, list(words or []))
    verdict = runtime_policy(runtime).explain(spec, args, model_context(runtime))
    if _wants_json(ctx, json_out):
        _print_json(verdict_dict(spec.name, args, verdict))
    else:
        typer.echo(verdict_text(spec.name, args, verdict))


@policy_app.command("rules")
def policy_rules(
    ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """List every deny, ask and allow rule of every layer, with its reason, layer and line."""
    from mdagent.cli.policycheck import rule_rows, shown_path

    runtime = _runtime(ctx)
    runtime.check_settings()
    rows = rule_rows(runtime)
    if _wants_json(ctx, json_out):
        _print_json(rows)
        return
    section = runtime.settings.get("policy") or {}
    typer.echo(
        f"mode: {section.get('mode') or 'ask'}  inline_eval: {section.get('inline_eval') or 'ask'}"
    )
    if not rows:
        typer.echo("(no rules)")
        return
    listing = [
        [
            r["kind"],
            r["rule"],
            r["layer"],
            f"{shown_path(r['path'])}:{r['line']}",
            r["reason"] or "",
        ]
        for r in rows
    ]
    typer.echo(table(listing, ["KIND", "RULE", "LAYER", "WHERE", "REASON"], fit=True))


@policy_app.command("revoke")
def policy_revoke(
    ctx: typer.Context,
    rule: str = typer.Argument(..., metavar="RULE", help="The allow rule, as written: 'exec(ls)'."),
) -> None:
    """Remove an allow rule (one "always" saved) from the project's settings.

    Edits .agents/config/agent.yaml in place, keeping its comments and layout.
    """
    from mdagent.cli.policycheck import revoke

    typer.echo(revoke(_runtime(ctx), rule))


# -- mcp ------------------------------------------------------------------------

mcp_app = typer.Typer(
    help="Serve this registry to other agents over MCP; list the MCP servers it uses.",
    no_args_is_help=True,
)
app.add_typer(mcp_app, name="mcp")


@mcp_app.command("serve")
def mcp_serve(
    ctx: typer.Context,
    http: str | None = typer.Option(
        None,
        "--http",
        metavar="[HOST:]PORT",
        help="Serve Streamable HTTP at http://HOST:PORT/mcp (HOST defaults to 127.0.0.1) "
        "instead of stdio.",
    ),
    yes: YesOption = False,
) -> None:
    """Serve the tools, prompt skills and skill files over MCP (stdio unless --http).

    Calls run as a model's would (caller "mcp"): validation, policy, hooks, sandbox
    and audit log. Nobody is asked: a call that would ask is refused with the rule
    that would allow it, unless --yes. Only protocol messages go to stdout.
    """
    from mdagent.server.mcpserver import serve

    options = _options(ctx)
    options.yes = options.yes or yes
    raise typer.Exit(serve(Runtime(options), http=http))


@mcp_app.command("list")
def mcp_list(
    ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """Start each server of mcp_servers: and show its status, tools and prompts.

    Exits 1 when a server could not be reached.
    """
    from mdagent.mcp.mcptools import server_status
    from mdagent.runtime.trust import untrusted_servers

    runtime = _runtime(ctx)
    runtime.check_settings()
    rows = [server_status(runtime.mcp, name) for name in runtime.mcp.configs]
    runtime.mcp.close()
    for name in untrusted_servers(runtime.trust) if not runtime.trusted else ():
        why = "not started: this folder is not trusted (`agent trust`)"
        rows.append({"name": name, "transport": "-", "target": "-", "status": "untrusted"})
        rows[-1].update({"error": why, "tools": [], "prompts": []})
    if _wants_json(ctx, json_out):
        _print_json(rows)
    elif not rows:
        typer.echo("(no MCP servers: declare them under mcp_servers: in .agents/config/agent.yaml)")
    for row in rows if not _wants_json(ctx, json_out) else ():
        if row["status"] == "ok":
            counts = f"{_count(len(row['tools']), 'tool')}, {_count(len(row['prompts']), 'prompt')}"
            typer.echo(f"{row['name']}  ({row['transport']}: {row['target']})  ok: {counts}")
        elif row["status"] == "untrusted":
            typer.echo(f"{row['name']}  {row['error']}")
        else:
            typer.echo(f"{row['name']}  ({row['transport']}: {row['target']})  {row['error']}")
        from mdagent.core.escapes import visible

        for tool in row["tools"]:  # a third-party server's text
            typer.echo(
                visible(f"  {tool['name']}  [{tool['security']}]  {tool['description'][:70]}")
            )
        for prompt in row["prompts"]:
            typer.echo(visible(f"  {prompt}"))
        for tool in row.get("not_offered") or ():
            typer.echo(visible(f"  {tool['name']}  not offered: {tool['reason']}"))
    raise typer.Exit(1 if any(r["status"] == "failed" for r in rows) else 0)


# -- trust ----------------------------------------------------------------------


@app.command("trust")
def trust_command(
    ctx: typer.Context,
    yes: ConsentOption = False,
    revoke: bool = typer.Option(False, "--revoke", help="Withdraw trust in this folder."),
    show: bool = typer.Option(
        False, "--show", help="Say whether this folder is trusted and what trust covers."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Trust this folder as it is now: its hooks, MCP servers and settings may act.

    Lists what trusting lets run or apply (hooks, MCP servers, handler modules,
    settings that loosen the policy or the sandbox, model settings, its skills'
    allowed-tools and live context) and the files trust is bound to, then asks
    (--yes: without asking). When any of those files changes, trust lapses.
    The record is kept in your state dir, never in the folder.
    """
    from mdagent.runtime.trust import TrustError, snapshot
    from mdagent.runtime.trust import revoke as withdraw

    options = _options(ctx)
    runtime = _runtime(ctx)
    runtime.trust_notice = False  # this command says it
    if revoke and show:
        raise UsageError("--revoke and --show: choose one")
    facts = runtime.compiled.trust
    state = runtime.trust
    workspace = str(facts["workspace"]) if facts else str(runtime.workdir)
    if revoke:
        if withdraw(workspace):
            typer.echo(f"withdrew trust in {workspace}: its hooks, MCP servers and settings that")
            typer.echo("loosen anything are ignored until you run `agent trust` again")
        else:
            typer.echo(f"{workspace} was not trusted: nothing to withdraw")
        return
    as_json = _wants_json(ctx, json_out)
    if show:
        try:
            taken = snapshot(facts) if facts else None
        except TrustError:  # too many files to bind: the state says so
            taken = None
        report = _trust_report(runtime, state, taken)
        if as_json:
            _print_json(report)
        else:
            _print_trust(report)
        return
    taken = snapshot(facts) if facts else None
    if taken is None or (state.needed and state.trusted):
        if as_json:
            _print_json(_trust_report(runtime, state, taken))
        elif taken is None:
            typer.echo(
                f"nothing to trust in {workspace}: it has no hooks, MCP servers, settings that "
                "loosen the policy or the sandbox, model settings or skills that pre-approve tools"
            )
        else:
            typer.echo(f"{workspace} is trusted as it is (since {state.since}); nothing changed")
        return
    if not as_json:
        _print_trust(_trust_report(runtime, state, taken))
    if not (yes or options.yes):
        if not sys.stdin.isatty():
            raise TrustError(
                "not trusted: no terminal to ask on; read what it would trust (above, or "
                "`agent trust --show`) and rerun with `agent trust --yes`"
            )
        sys.stderr.write("Trust this folder as it is now? [y/N] ")
        sys.stderr.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            typer.echo("not trusted")
            raise typer.Exit(1)
    where = taken.write()
    if as_json:
        _print_json(
            {**_trust_report(runtime, state, taken), "state": "trusted", "record": str(where)}
        )
        return
    typer.echo(f"trusted {workspace} (recorded in {where})")


def _trust_report(runtime: Runtime, state: Any, taken: Any) -> dict[str, Any]:
    """What ``agent trust`` shows: the state, what trust covers, the files it is bound to."""
    items = state.items or (taken.items if taken is not None else [])
    return {
        "workspace": state.workspace or str(runtime.workdir),
        "state": state.word,
        "since": state.since or None,
        "changes": list(state.changes),
        "items": [{"key": i.key, "what": i.what, "path": i.path, "line": i.line} for i in items],
        "files": sorted(taken.files) if taken is not None else [],
    }


def _print_trust(report: dict[str, Any]) -> None:
    # The folder's text (commands, descriptions, file names) escaped: a `\r` or an
    # escape sequence in a hook must not hide what is being trusted.
    from mdagent.core.escapes import visible

    def echo(line: str) -> None:
        typer.echo(visible(line))

    state = report["state"]
    if state == "trusted":
        state += f" (since {report['since']})"
    elif state == "lapsed":
        state = "not trusted: trust lapsed: " + "; ".join(report["changes"])
    elif state == "not needed":
        state += ": nothing here runs or loosens anything before you trust it"
    echo(f"folder: {report['workspace']}")
    echo(f"trust:  {state}")
    if report["items"]:
        echo("what trusting it lets run or apply:")
        rows = [
            [f"{_shown_path(Path(i['path']))}:{i['line']}", f"{i['key']} {i['what']}"]
            for i in report["items"]
        ]
        for where, text in rows:
            echo(f"  {where}  {text}")
    if report["files"]:
        echo("bound to these files (a change to any of them withdraws trust):")
        for name in report["files"]:
            echo(f"  {name}")


# -- config ---------------------------------------------------------------------


@config_app.callback(invoke_without_command=True)
def config_root(ctx: typer.Context) -> None:
    """Show configuration (alone: the same as `agent config show`)."""
    if ctx.invoked_subcommand is None:
        config_show(ctx, json_out=False)


@config_app.command("show")
def config_show(
    ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """The merged settings with the layer each came from, the layers, the model and its key.

    Whether the key variable is set is shown; its value never is.
    """
    from mdagent.cli.configshow import config_report, print_config

    runtime = _runtime(ctx)
    runtime.trust_notice = False  # the report says it
    report = config_report(runtime)
    if _wants_json(ctx, json_out):
        _print_json(report)
        return
    print_config(report, echo=typer.echo)


@app.command()
def doctor(
    ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """Check the installation: Python, layers, declarations, ripgrep, state, model endpoint.

    Exits 1 when a check fails. The model endpoint gets one 2 s probe.
    Something optional that is missing is marked ``-`` (``"ok": null``).
    """
    from mdagent.cli.configshow import doctor_checks

    runtime = _runtime(ctx)
    runtime.trust_notice = False  # a check says it
    checks = doctor_checks(runtime)
    if _wants_json(ctx, json_out):
        _print_json([{"ok": ok, "check": what, "detail": detail} for ok, what, detail in checks])
    else:
        from mdagent.ui.console import mark

        for ok, what, detail in checks:
            typer.echo(f"{'-' if ok is None else mark(ok)} {what:<8} {detail}")
    raise typer.Exit(0 if all(ok is not False for ok, _, _ in checks) else 1)


@config_app.command("env")
def config_env(
    ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """Names of the environment variables a child process would get (values hidden)."""
    import os

    runtime = _runtime(ctx)
    passed = sorted(runtime.env)
    dropped = sorted(set(os.environ) - set(passed))
    if _wants_json(ctx, json_out):
        _print_json({"passed": passed, "dropped": dropped})
        return
    for name in passed:
        typer.echo(name)
    if dropped:
        typer.echo(f"# dropped ({len(dropped)}): {', '.join(dropped)}", err=True)


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
