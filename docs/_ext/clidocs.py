"""The CLI reference, read from the click command the typer app builds.

Every command, group and option is read with click's own calls (the usage
pieces, each parameter's help record), so the page says what ``--help``
says; hidden commands and options are left out as ``--help`` leaves them.
"""

from __future__ import annotations

import inspect
from typing import Any


def reference(command: Any, program: str = "agent") -> str:
    """The reference of ``command`` and every subcommand below it, as Markdown.

    click's classes are not imported: typer vendors its own click, so a
    command's own ``context_class`` makes its contexts, and groups and
    arguments are told apart by what they have, not by class.
    """
    settings = command.context_settings or {}
    root = command.context_class(command, info_name=program, **settings)
    return "".join(_sections(command, root, depth=2))


def _subcommands(command: Any, ctx: Any) -> list[tuple[str, Any]]:
    """A group's visible subcommands, in the order ``--help`` lists them."""
    if not hasattr(command, "list_commands"):
        return []
    found = [(name, command.get_command(ctx, name)) for name in command.list_commands(ctx)]
    return [(name, sub) for name, sub in found if sub is not None and not sub.hidden]


def _sections(command: Any, ctx: Any, depth: int) -> list[str]:
    parts = [_section(command, ctx, depth)]
    for name, sub in _subcommands(command, ctx):
        sub_ctx = sub.context_class(sub, info_name=name, parent=ctx)
        parts.extend(_sections(sub, sub_ctx, min(depth + 1, 4)))
    return parts


def _section(command: Any, ctx: Any, depth: int) -> str:
    lines = [f"{'#' * depth} `{ctx.command_path}`", ""]
    usage = " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])
    lines += ["```text", usage, "```", ""]
    if command.help:
        lines += [_escape(inspect.cleandoc(command.help)), ""]
    arguments, options = [], []
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, text = record
        is_argument = param.param_type_name == "argument"
        (arguments if is_argument else options).append((names, text))
    if arguments:
        lines += _table("argument", arguments)
    if options:
        lines += _table("option", options)
    subs = _subcommands(command, ctx)
    if subs:
        lines += ["| command | what it does |", "|---|---|"]
        for name, sub in subs:
            title = f"{ctx.command_path} {name}"
            summary = _cell(sub.get_short_help_str(200))
            lines.append(f"| [`{title}`](#{_anchor(title)}) | {summary} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def _table(kind: str, records: list[tuple[str, str]]) -> list[str]:
    rows = [f"| {kind} | what it does |", "|---|---|"]
    rows += [f"| `{names}` | {_cell(text)} |" for names, text in records]
    return [*rows, ""]


def _anchor(title: str) -> str:
    """The anchor MyST gives a heading (``agent skills add`` -> ``agent-skills-add``)."""
    return "-".join(title.lower().split())


def _cell(text: str) -> str:
    return _escape(" ".join((text or "").split())).replace("|", "\\|")


def _escape(text: str) -> str:
    """Help text as Markdown shows it: ``$`` and ``*`` stay literal, backticks stay code."""
    return text.replace("*", "\\*").replace("<", "\\<")
