"""``agent ask`` at the command line: its options onto the run's, then one turn.

Both ways in call it: typer's ``ask`` subcommand (:mod:`mdagent.cli.cmd_sessions`) and
the fast path that skips typer (:func:`mdagent.cli.cli.ask_words`). It sits at
the edge, above :mod:`mdagent.agent.ask`, which runs turns for every caller.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from mdagent.core.errors import UsageError


def ask_command(
    options: Any,
    *,
    prompt: list[str] | None = None,
    continue_: bool = False,
    session: str | None = None,
    yes: bool = False,
    json_out: bool = False,
    output_format: str | None = None,
    mode: str | None = None,
    max_steps: int | None = None,
    allow: Iterable[str] = (),
    deny: Iterable[str] = (),
    tools: str | None = None,
    system_prompt: str | None = None,
    append_system_prompt: str | None = None,
    fail_on_refusal: bool = False,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    script: str | None = None,
) -> int:
    """``agent ask`` with its options parsed (by typer, or the CLI's fast path): the exit status.

    ``options`` are the global ones; this run's own are added to them. The
    prompt is the words, else stdin when it is not a terminal.
    """
    from mdagent.agent.ask import run_ask
    from mdagent.runtime.runtime import Runtime, check_run_options

    options.yes = options.yes or yes
    options.json = options.json or json_out
    if output_format is not None:
        options.output_format = output_format
    if options.json and options.output_format == "text":
        options.output_format = "json"
    options.json = options.output_format == "json"
    if mode is not None:
        options.mode, options.mode_source = mode, "--mode"
    options.allow = [*options.allow, *allow]
    options.deny = [*options.deny, *deny]
    options.max_steps = max_steps or options.max_steps
    if tools is not None:
        options.tools = [name.strip() for name in tools.split(",") if name.strip()]
    options.system_prompt = system_prompt
    options.append_system_prompt = append_system_prompt
    options.fail_on_refusal = fail_on_refusal
    check_run_options(options)
    _check_rules(options.allow, "--allow")
    _check_rules(options.deny, "--deny")
    for key, value in {
        "provider": provider,
        "model": model,
        "base_url": base_url,
        "script": script,
    }.items():
        if value is not None:
            setattr(options, key, value)
    text = " ".join(prompt or [])
    if not text and not sys.stdin.isatty():
        text = sys.stdin.read()
    if not text.strip():
        raise UsageError("no prompt: agent ask PROMPT... (or pipe it on stdin)")
    return run_ask(Runtime(options), text, continue_=continue_, session=session)


def _check_rules(rules: list[str], option: str) -> None:
    """A rule given on the command line that the policy cannot read is a usage error."""
    if not rules:
        return
    from mdagent.core.errors import ConfigError
    from mdagent.safety.rules import parse_rules

    try:
        parse_rules(rules, option)
    except ConfigError as err:
        raise UsageError(f"{option}: {err}") from None
