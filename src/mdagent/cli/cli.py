"""The ``agent`` command line.

``agent [OPTIONS] /NAME [ARGS...]`` takes a fast path that never builds the
typer app (typer and rich cost more start-up time than the command itself);
every other subcommand goes through typer. Errors are caught once, at the one
edge both paths share (:mod:`mdagent.cli.edge`), and become one line on stderr and
an exit status (DESIGN §6).
"""

from __future__ import annotations

import contextlib
import os
import sys

from mdagent.cli.edge import program_name, show_notices
from mdagent.core.errors import EXIT_FAILED

# "Run a typed command for a person" lives in mdagent.runtime.person, shared with the
# interactive session; these names stay importable from here.
from mdagent.runtime.person import (
    command_listing,
    exit_status,
    render,
    resolve_command,
    run_tool_command,
    unknown_command,
)
from mdagent.runtime.runtime import Options, Runtime, check_run_options

_FLAGS = {"--no-user": "no_user", "--json": "json", "--yes": "yes", "-y": "yes"}
_VERBOSE = {"-v", "--verbose"}
_VALUED = {
    "--provider": "provider",
    "--model": "model",
    "--base-url": "base_url",
    "--script": "script",
    "--output-format": "output_format",
    "--mode": "mode",
}
_COMPLETE_VARS = ("_AGENT_COMPLETE", "_MDAGENT_COMPLETE")


def _completion_variable() -> None:
    """Answer a completion request made under the other name's variable too.

    A script installed for ``agent`` and reused for ``mdagent`` (or the
    reverse) sets the other variable; click reads only its own, and without
    it would run the program instead of completing.
    """
    wanted = f"_{program_name().upper()}_COMPLETE"
    if wanted in os.environ:
        return
    for var in _COMPLETE_VARS:
        if var in os.environ:
            os.environ[wanted] = os.environ[var]
            return


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agent`` and ``mdagent`` scripts."""
    from mdagent.core import signals
    from mdagent.safety import envblock

    # /proc/<this pid>/environ would show the API keys to any process of the
    # user (a model's command run unconfined, or as root): blank it.
    envblock.scrub()

    # SIGTERM and SIGHUP unwind like Ctrl-C: the child's group is stopped,
    # the call recorded as interrupted; the status says which signal (143, 129).
    signals.install()
    try:
        status = _main(argv)
    except BaseException:
        if signals.received() is None:
            raise
        status = EXIT_FAILED  # whatever broke while stopping, the signal is why we end
    if signals.received() is not None:
        _quiet_dead_terminal()
    return signals.exit_status(status)


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    options, rest = _global_options(argv)
    _configure_logging(options.verbose)
    show_notices()
    slash = rest is not None and rest[:1] and rest[0].startswith("/")
    completing = any(v in os.environ for v in _COMPLETE_VARS)
    if slash and not completing:
        return _guarded(options, lambda: run_slash(check_run_options(options), rest[0], rest[1:]))
    if rest and rest[0] == "ask" and not completing:
        parsed = ask_words(rest[1:])
        if parsed is not None:  # anything it does not know (--help, a typo) goes to typer
            from mdagent.cli.askcommand import ask_command

            return _guarded(options, lambda: ask_command(options, **parsed))
    if completing:
        _completion_variable()
    if argv[:1] in (["--version"], ["-V"]):
        from mdagent import __version__

        print(f"mdagent {__version__}")
        return 0
    from mdagent.cli.app import run_app

    return run_app(argv)


# `agent ask`'s options, parsed here so that a script's run skips typer (~45 ms):
# flags, then options taking a value, then those that may repeat.
_ASK_FLAGS = {
    "--continue": "continue_",
    "-c": "continue_",
    "--yes": "yes",
    "-y": "yes",
    "--json": "json_out",
    "--fail-on-refusal": "fail_on_refusal",
}
_ASK_VALUED = {
    "--session": "session",
    "--output-format": "output_format",
    "--mode": "mode",
    "--max-steps": "max_steps",
    "--tools": "tools",
    "--system-prompt": "system_prompt",
    "--append-system-prompt": "append_system_prompt",
    "--provider": "provider",
    "--model": "model",
    "--base-url": "base_url",
    "--script": "script",
}
_ASK_REPEATED = {"--allow": "allow", "--deny": "deny"}


def ask_words(words: list[str]) -> dict | None:
    """``agent ask``'s options and prompt words, or None when typer should parse them.

    None for anything this small parser does not take exactly as typer would:
    ``--help``, an unknown option, ``--``, a missing value, a step count that
    is not a positive whole number. Options and prompt words may mix, as
    with click.
    """
    parsed: dict = {"prompt": [], "allow": [], "deny": []}
    index = 0
    while index < len(words):
        word = words[index]
        if not word.startswith("-") or word == "-":
            parsed["prompt"].append(word)
        elif word in _ASK_FLAGS:
            parsed[_ASK_FLAGS[word]] = True
        else:
            name, has_value, value = word.partition("=")
            key = _ASK_VALUED.get(name) or _ASK_REPEATED.get(name)
            if key is None:
                return None
            if not has_value:
                if index + 1 >= len(words):
                    return None
                index += 1
                value = words[index]
            if key in ("allow", "deny"):
                parsed[key].append(value)
            elif key == "max_steps":
                if not value.isdigit() or int(value) < 1:
                    return None
                parsed[key] = int(value)
            else:
                parsed[key] = value
        index += 1
    return parsed


def _quiet_dead_terminal() -> None:
    """After SIGHUP the terminal may be gone: flushing at exit must not fail (status 120)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def _global_options(argv: list[str]) -> tuple[Options, list[str] | None]:
    """Options before the first other word, and the words from there on."""
    options = Options()
    index = 0
    while index < len(argv):
        word = argv[index]
        if word in _FLAGS:
            setattr(options, _FLAGS[word], True)
        elif word in _VERBOSE:
            options.verbose = True
        elif word == "--layer" and index + 1 < len(argv):
            options.layers.append(argv[index + 1])
            index += 1
        elif word.startswith("--layer="):
            options.layers.append(word.split("=", 1)[1])
        elif word in _VALUED and index + 1 < len(argv):
            setattr(options, _VALUED[word], argv[index + 1])
            index += 1
        elif word.split("=", 1)[0] in _VALUED and "=" in word:
            key, value = word.split("=", 1)
            setattr(options, _VALUED[key], value)
        else:
            return _settled(options), argv[index:]
        index += 1
    return _settled(options), []


def _settled(options: Options) -> Options:
    """``--output-format json`` is ``--json``; a ``--mode`` given says where it came from."""
    if options.output_format == "json":
        options.json = True
    elif options.json and options.output_format == "text":
        options.output_format = "json"
    if options.mode:
        options.mode_source = "--mode"
    return options


def _configure_logging(verbose: bool) -> None:
    # Without -v nothing is configured (and logging is not even imported):
    # mdagent's loggers carry a NullHandler (errors.logger), so tracebacks
    # already in a result never reach stderr twice.
    if verbose:
        import logging

        logging.basicConfig(
            level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s"
        )


def _guarded(options: Options, action) -> int:
    """Run ``action`` at the one error edge (:func:`mdagent.cli.edge.guarded`).

    The format of a failure is read when it fails: ``ask`` sets its own as it runs.
    """
    from mdagent.cli.edge import guarded

    def as_json() -> bool | str:
        return "stream" if options.output_format == "stream-json" else options.json

    return guarded(action, as_json=as_json, verbose=options.verbose)


# -- the fast path -------------------------------------------------------------


def run_slash(options: Options, name: str, argv: list[str]) -> int:
    """Run ``/name`` with shell words ``argv``; returns the exit status.

    ``-h`` or ``--help`` as the only word shows the command's help whatever
    its argument mode; ``agent /name -- -h`` passes ``-h`` on.
    """
    from mdagent.core.errors import UsageError
    from mdagent.core.specs import command_key
    from mdagent.runtime.person import HELP_WORDS, command_help
    from mdagent.tools.dispatch import help_text

    runtime = Runtime(options)
    registry = runtime.registry
    if command_key(name) in ("help", ""):  # `agent /` lists the commands too
        if argv in HELP_WORDS:
            print("usage: /help [NAME]\nThe slash commands; with NAME, that command's help.")
            return 0
        if len(argv) > 1 or (argv and argv[0].startswith("-")):
            raise UsageError("usage: /help [NAME]")
        print(command_help(runtime, argv[0]) if argv else command_listing(registry))
        return 0
    wants_help = argv in HELP_WORDS
    if ":" in name and registry.settings.get("mcp_servers"):
        from mdagent.agent.ask import run_server_prompt
        from mdagent.mcp.mcptools import prompt_target

        target = prompt_target(runtime, name)  # `/server:prompt` of a declared MCP server
        if target is not None:
            return run_server_prompt(runtime, *target, ["--help"] if wants_help else argv)
    command, tool_spec = resolve_command(runtime, name)
    if wants_help:
        print(help_text(command, tool_spec))
        return 0
    runtime.check_settings()
    if command.kind == "prompt":
        from mdagent.agent.ask import run_prompt_skill

        return run_prompt_skill(runtime, command, argv)
    from mdagent.agent.skillrunner import SkillRunner

    return run_tool_command(
        runtime, command, tool_spec, argv=argv, as_json=options.json, skill_runner=SkillRunner()
    )


__all__ = [
    "command_listing",
    "exit_status",
    "main",
    "render",
    "resolve_command",
    "run_slash",
    "run_tool_command",
    "unknown_command",
]
