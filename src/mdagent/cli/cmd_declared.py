"""``agent check``, ``test``, ``tools`` and ``commands``: what the layers declare.

Each reads the compiled registry and shows it: the problems in every layer
(``check``), the declared tests run (``test``), the tools and the slash
commands listed. Registered on the root by :mod:`mdagent.cli.app`.
"""

from __future__ import annotations

import typer

from mdagent.cli.common import (
    plural,
    print_json,
    problem_dict,
    runtime_of,
    short_source,
    wants_json,
)
from mdagent.core.errors import UsageError, unknown_tool
from mdagent.core.text import first_line
from mdagent.ui.console import table


def check(
    ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """Report every problem in every layer; exit 1 if any is an error."""
    from mdagent.runtime.trust import check_problems as trust_problems

    runtime = runtime_of(ctx)
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
    if wants_json(ctx, json_out):
        print_json([problem_dict(p) for p in problems])
    else:
        from mdagent.ui.console import problem_line

        for problem in problems:
            typer.echo(problem_line(problem))  # the severity red or yellow on a terminal
        errors = len(registry.errors) + len(failed) + len(mcp_errors)
        warnings = sum(1 for p in problems if p.severity == "warning")
        summary = (
            f"{len(registry.tools)} tools, {len(registry.commands)} commands, "
            f"{len(registry.skills)} skills; {plural(errors, 'error')}, {plural(warnings, 'warning')}"
        )
        if tests:
            summary += f"; {tests - len(failed)} of {plural(tests, 'policy test')} passed"
        typer.echo(summary, err=True)
    raise typer.Exit(1 if registry.errors or failed or mcp_errors else 0)


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

    runtime = runtime_of(ctx)
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
    if wants_json(ctx, json_out):
        print_json([o.to_dict() for o in outcomes])
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
    runtime = runtime_of(ctx)
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
        print_json(box.to_openai(sent) if fmt == "openai" else box.to_anthropic(sent))
        return
    if wants_json(ctx, json_out):
        print_json(
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
            short_source(s.source, s.line) + (f"  (unavailable: {r})" if r else ""),
        ]
        for s, r in rows
    ]
    typer.echo(
        table(listing, ["NAME", "ALIASES", "CATEGORY", "SECURITY", "TIER", "SOURCE"], fit=True)
    )


def commands(
    ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """List slash commands: name, tool or prompt skill, argument mode, source."""
    registry = runtime_of(ctx).registry
    visible = [c for _, c in sorted(registry.commands.items()) if c.user_invocable]
    if wants_json(ctx, json_out):
        print_json([c.to_dict() for c in visible])
        return
    rows = [
        [
            f"/{c.name}",
            c.tool if c.kind == "tool" else "(prompt)",
            c.arg_mode if c.kind == "tool" else "",
            short_source(c.source, c.line if not c.skill else 0),
            first_line(c.description, None),  # the table fits it to the terminal
        ]
        for c in visible
    ]
    typer.echo(table(rows, ["COMMAND", "TOOL", "ARGS", "SOURCE", "DESCRIPTION"], fit=True))
