"""``agent ask``, ``sessions``, ``rewind`` and ``logs``: model turns and what they leave.

``ask`` runs one turn (:mod:`mdagent.cli.askcommand`); ``sessions`` lists,
shows, exports and removes the conversations kept; ``rewind`` takes back
what turns changed (:mod:`mdagent.agent.rewindcommand`); ``logs`` shows the
audit log of tool calls, with the helpers that format its rows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from mdagent.cli.common import (
    BaseUrlOption,
    ModelOption,
    ModeOption,
    OutputFormatOption,
    ProviderOption,
    ScriptOption,
    YesOption,
    ask_yes,
    options_of,
    plural,
    print_json,
    runtime_of,
    wants_json,
)
from mdagent.core.errors import EXIT_FAILED, UsageError
from mdagent.ui.console import table

# -- the agent ------------------------------------------------------------------


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

    raise typer.Exit(ask_command(options_of(ctx), **values))


sessions_app = typer.Typer(
    help="List, show, export and remove this workspace's sessions.", invoke_without_command=True
)


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
    runtime = runtime_of(ctx)
    rows = runtime.store.sessions(limit=limit, cwd=None if every else str(runtime.workdir))
    if wants_json(ctx, json_out):
        print_json(rows)
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
    store = runtime_of(ctx).store
    found = store.session(session_id)
    if found is None:
        raise UsageError(f"no session {session_id!r} (see: agent sessions)")
    messages = store.messages(found["id"])
    if wants_json(ctx, json_out):
        print_json({**found, "messages": messages})
        return
    from mdagent.ui.transcript import message_line

    typer.echo(f"session {found['id']}  {found.get('title') or ''}".rstrip())
    for message in messages:
        typer.echo(message_line(message))


def _found_session(ctx: typer.Context, session_id: str) -> tuple[Any, dict[str, Any]]:
    store = runtime_of(ctx).store
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
        also = f" and its {plural(removed, 'checkpoint')}" if removed else ""
        typer.echo(f"removed {session['id']}{also}")


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
    runtime = runtime_of(ctx)
    if prune:
        typer.echo(prune_text(runtime))
        return
    if list_:
        if wants_json(ctx, json_out):
            print_json(listing_json(open_checkpoints(runtime)))
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
    confirm = ask_yes if sys.stdin.isatty() and sys.stderr.isatty() else None
    lines, ok = run_rewind(runtime, request, confirm=confirm)
    typer.echo("\n".join(lines))
    if not ok:
        raise typer.Exit(EXIT_FAILED)


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
    runtime = runtime_of(ctx)
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
    if wants_json(ctx, json_out):
        print_json(rows)
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


def _short_args(args: Any, limit: int = 60) -> str:
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
