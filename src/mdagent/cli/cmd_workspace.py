"""``agent init`` and ``agent trust``: start a project in this folder, and trust it.

``init`` writes the project's first files (:mod:`mdagent.runtime.init`);
``trust`` shows what trusting the folder lets run or apply and records the
person's consent (:mod:`mdagent.runtime.trust`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from mdagent.cli.common import (
    ConsentOption,
    ask_yes,
    options_of,
    print_json,
    runtime_of,
    shown_path,
    wants_json,
)
from mdagent.core.errors import MdagentError, UsageError
from mdagent.runtime.runtime import Runtime

# -- init -----------------------------------------------------------------------


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
    runtime = runtime_of(ctx)
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


# -- trust ----------------------------------------------------------------------


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

    options = options_of(ctx)
    runtime = runtime_of(ctx)
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
    as_json = wants_json(ctx, json_out)
    if show:
        try:
            taken = snapshot(facts) if facts else None
        except TrustError:  # too many files to bind: the state says so
            taken = None
        report = _trust_report(runtime, state, taken)
        if as_json:
            print_json(report)
        else:
            _print_trust(report)
        return
    taken = snapshot(facts) if facts else None
    if taken is None or (state.needed and state.trusted):
        if as_json:
            print_json(_trust_report(runtime, state, taken))
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
        if not ask_yes("Trust this folder as it is now?"):
            typer.echo("not trusted")
            raise typer.Exit(1)
    where = taken.write()
    if as_json:
        print_json(
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
            [f"{shown_path(Path(i['path']))}:{i['line']}", f"{i['key']} {i['what']}"]
            for i in report["items"]
        ]
        for where, text in rows:
            echo(f"  {where}  {text}")
    if report["files"]:
        echo("bound to these files (a change to any of them withdraws trust):")
        for name in report["files"]:
            echo(f"  {name}")
