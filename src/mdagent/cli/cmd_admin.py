"""``agent policy``, ``mcp``, ``config`` and ``doctor``: inspect how mdagent is set up.

What the policy decides and its rules (:mod:`mdagent.cli.policycheck`), the
MCP servers used and serving this registry over MCP, the merged settings
and the environment a child gets, and the installation's health
(:mod:`mdagent.cli.configshow`).
"""

from __future__ import annotations

import typer

from mdagent.cli.common import YesOption, options_of, plural, print_json, runtime_of, wants_json
from mdagent.runtime.runtime import Runtime
from mdagent.ui.console import table

# -- policy ---------------------------------------------------------------------

policy_app = typer.Typer(
    help="Inspect the policy: what it decides, its rules, and revoking an allow rule.",
    no_args_is_help=True,
)


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

    runtime = runtime_of(ctx)
    runtime.check_settings()
    spec, args = cli_call(runtime.registry, tool, list(words or []))
    verdict = runtime_policy(runtime).explain(spec, args, model_context(runtime))
    if wants_json(ctx, json_out):
        print_json(verdict_dict(spec.name, args, verdict))
    else:
        typer.echo(verdict_text(spec.name, args, verdict))


@policy_app.command("rules")
def policy_rules(
    ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """List every deny, ask and allow rule of every layer, with its reason, layer and line."""
    from mdagent.cli.policycheck import rule_rows, shown_path

    runtime = runtime_of(ctx)
    runtime.check_settings()
    rows = rule_rows(runtime)
    if wants_json(ctx, json_out):
        print_json(rows)
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

    typer.echo(revoke(runtime_of(ctx), rule))


# -- mcp ------------------------------------------------------------------------

mcp_app = typer.Typer(
    help="Serve this registry to other agents over MCP; list the MCP servers it uses.",
    no_args_is_help=True,
)


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

    options = options_of(ctx)
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

    runtime = runtime_of(ctx)
    runtime.check_settings()
    rows = [server_status(runtime.mcp, name) for name in runtime.mcp.configs]
    runtime.mcp.close()
    for name in untrusted_servers(runtime.trust) if not runtime.trusted else ():
        why = "not started: this folder is not trusted (`agent trust`)"
        rows.append({"name": name, "transport": "-", "target": "-", "status": "untrusted"})
        rows[-1].update({"error": why, "tools": [], "prompts": []})
    if wants_json(ctx, json_out):
        print_json(rows)
    elif not rows:
        typer.echo("(no MCP servers: declare them under mcp_servers: in .agents/config/agent.yaml)")
    for row in rows if not wants_json(ctx, json_out) else ():
        if row["status"] == "ok":
            counts = f"{plural(len(row['tools']), 'tool')}, {plural(len(row['prompts']), 'prompt')}"
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


# -- config ---------------------------------------------------------------------

config_app = typer.Typer(
    help="Show configuration (alone: the same as `agent config show`).", no_args_is_help=False
)


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

    runtime = runtime_of(ctx)
    runtime.trust_notice = False  # the report says it
    report = config_report(runtime)
    if wants_json(ctx, json_out):
        print_json(report)
        return
    print_config(report, echo=typer.echo)


def doctor(
    ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """Check the installation: Python, layers, declarations, ripgrep, state, model endpoint.

    Exits 1 when a check fails. The model endpoint gets one 2 s probe.
    Something optional that is missing is marked ``-`` (``"ok": null``).
    """
    from mdagent.cli.configshow import doctor_checks

    runtime = runtime_of(ctx)
    runtime.trust_notice = False  # a check says it
    checks = doctor_checks(runtime)
    if wants_json(ctx, json_out):
        print_json([{"ok": ok, "check": what, "detail": detail} for ok, what, detail in checks])
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

    runtime = runtime_of(ctx)
    passed = sorted(runtime.env)
    dropped = sorted(set(os.environ) - set(passed))
    if wants_json(ctx, json_out):
        print_json({"passed": passed, "dropped": dropped})
        return
    for name in passed:
        typer.echo(name)
    if dropped:
        typer.echo(f"# dropped ({len(dropped)}): {', '.join(dropped)}", err=True)
