"""``agent skills``: list skills; add, update and remove shared ones (issue 19).

Installing is :mod:`mdagent.cli.skillinstall`'s job; this module parses the
options, asks for consent on a terminal (or takes ``--yes``) and keeps a
trusted folder trusted after a change the person asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mdagent.cli.common import (
    ConsentOption,
    ask_yes,
    print_json,
    runtime_of,
    short_source,
    wants_json,
)
from mdagent.ui.console import say_error, table

skills_app = typer.Typer(
    help="List skills; add, update and remove shared ones.", invoke_without_command=True
)


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

    registry = runtime_of(ctx).registry
    items = sorted(registry.skills.values(), key=lambda s: s.name)
    if wants_json(ctx, json_out):
        print_json(
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
        rows.append([s.name, kind, ",".join(flags), layer, short_source(s.path)])
    typer.echo(table(rows, ["SKILL", "KIND", "FLAGS", "LAYER", "SOURCE"], fit=True))


# -- sharing skills: add, update, remove (issue 19) ---------------------------------

GlobalOption = Annotated[
    bool, typer.Option("--global", help="The user layer ($AGENT_HOME), not the project's.")
]


def _install_layer(ctx: typer.Context, global_: bool) -> Path:
    from mdagent.core.layers import user_layer_path

    return user_layer_path() if global_ else runtime_of(ctx).project_layer


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
        return ask_yes(question)

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
    runtime = runtime_of(ctx)
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
    if wants_json(ctx, json_out):
        print_json(rows)
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
    runtime = runtime_of(ctx)
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
    runtime = runtime_of(ctx)
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

    runtime = runtime_of(ctx)
    trusted = runtime.trusted
    folder = remove(_install_layer(ctx, global_), name)
    if trusted:
        runtime.keep_trust_current()
    typer.echo(f"removed {folder}")
