"""What the ``agent`` subcommands share: their options, their runtime, their output.

The root (:mod:`mdagent.cli.app`) and every command module (``cmd_*.py``)
import from here, never from each other, so the root can list the command
modules without an import cycle. Here: the options both the root and
``ask`` accept (declared once), the run's :class:`Options` and
:class:`Runtime` from typer's context, ``--json`` output, and the short
forms of counts, paths and declaration sources the listings print.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from mdagent.runtime.runtime import Options, Runtime

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
# `--yes` where it means consent to what was shown (skills add/update, trust).
ConsentOption = Annotated[
    bool, typer.Option("--yes", "-y", help="Accept without asking (after reading what it shows).")
]


def options_of(ctx: typer.Context) -> Options:
    """The run's options, as the root callback set them (or as far as click parsed them)."""
    root_ctx = ctx.find_root()
    if isinstance(root_ctx.obj, Options):
        return root_ctx.obj
    params = root_ctx.params or {}
    return Options(
        layers=[str(p) for p in params.get("layer") or []], no_user=bool(params.get("no_user"))
    )


def runtime_of(ctx: typer.Context) -> Runtime:
    """A fresh :class:`Runtime` on the run's options."""
    return Runtime(options_of(ctx))


def wants_json(ctx: typer.Context, local: bool) -> bool:
    """Whether to print JSON: the command's own ``--json`` (``local``) or the root's."""
    return local or options_of(ctx).json


def problem_dict(p: Any) -> dict[str, Any]:
    """A check problem as ``--json`` shows it."""
    return {
        "path": p.path,
        "line": p.line,
        "col": p.col,
        "severity": p.severity,
        "message": p.message,
    }


def print_json(value: Any) -> None:
    """``value`` as indented JSON on stdout."""
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def ask_yes(question: str) -> bool:
    """Ask ``question [y/N]`` on the terminal; whether the answer is yes."""
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def plural(n: int, word: str) -> str:
    """``1 error``, ``2 errors``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it is under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def short_source(source: str, line: int = 0) -> str:
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
