"""The ``agent`` command line.

``agent [OPTIONS] /NAME [ARGS...]`` takes a fast path that never builds the
typer app (typer and rich cost more start-up time than the command itself);
every other subcommand goes through typer. Errors are caught once, here, and
become one line on stderr and an exit status (DESIGN §6).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any

from mdagent.errors import MdagentError, ToolFailed, UsageError
from mdagent.runtime import Options, Runtime

_FLAGS = {"--no-user": "no_user", "--json": "json", "--yes": "yes", "-y": "yes"}
_VERBOSE = {"-v", "--verbose"}
_VALUED = {
    "--provider": "provider",
    "--model": "model",
    "--base-url": "base_url",
    "--script": "script",
}
_COMPLETE_VARS = ("_AGENT_COMPLETE", "_MDAGENT_COMPLETE")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agent`` and ``mdagent`` scripts."""
    from mdagent import signals

    # SIGTERM and SIGHUP unwind like Ctrl-C: the child's group is stopped,
    # the call recorded as interrupted; the status says which signal (143, 129).
    signals.install()
    try:
        status = _main(argv)
    except BaseException:
        if signals.received() is None:
            raise
        status = 1  # whatever broke while stopping, the signal is why we end
    if signals.received() is not None:
        _quiet_dead_terminal()
    return signals.exit_status(status)


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    options, rest = _global_options(argv)
    _configure_logging(options.verbose)
    slash = rest is not None and rest[:1] and rest[0].startswith("/")
    if slash and not any(v in os.environ for v in _COMPLETE_VARS):
        return _guarded(options, lambda: run_slash(options, rest[0], rest[1:]))
    if argv[:1] in (["--version"], ["-V"]):
        from mdagent import __version__

        print(f"mdagent {__version__}")
        return 0
    from mdagent.app import run_app

    return run_app(argv)


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
            return options, argv[index:]
        index += 1
    return options, []


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
    """Run ``action``; any error becomes one line on stderr and an exit status."""
    try:
        return action()
    except MdagentError as err:
        print(f"agent: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        from mdagent import signals

        with contextlib.suppress(OSError):  # SIGHUP: the terminal may be gone
            print(f"agent: {signals.message()}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`agent /x | head -1`): point stdout at
        # /dev/null so flushing at exit cannot raise again (Python's advice).
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as err:  # a bug: still one line unless -v
        if options.verbose:
            raise
        print(
            f"agent: internal error: {type(err).__name__}: {err} (rerun with -v)", file=sys.stderr
        )
        return 1


# -- the fast path -------------------------------------------------------------


def run_slash(options: Options, name: str, argv: list[str]) -> int:
    """Run ``/name`` with shell words ``argv``; returns the exit status."""
    from mdagent.dispatch import help_text
    from mdagent.specs import command_key

    runtime = Runtime(options)
    registry = runtime.registry
    if command_key(name) in ("help", ""):  # `agent /` lists the commands too
        print(command_listing(registry))
        return 0
    command, tool_spec = resolve_command(runtime, name)
    if argv == ["--help"]:
        print(help_text(command, tool_spec))
        return 0
    runtime.check_settings()
    if command.kind == "prompt":
        from mdagent.agent import run_prompt_skill

        return run_prompt_skill(runtime, command, argv)
    return run_tool_command(runtime, command, tool_spec, argv=argv, as_json=options.json)


def resolve_command(runtime: Runtime, name: str):
    """``(command, tool spec or None)`` for ``/name`` typed by a person.

    Unknown and hidden (``user-invocable: false``) names are a UsageError
    carrying the list of commands and a "did you mean".
    """
    registry = runtime.registry
    command = registry.command(name)
    if command is None or not command.user_invocable:
        raise UsageError(unknown_command(registry, name))
    tool_spec = registry.tool(command.tool) if command.kind == "tool" and command.tool else None
    return command, tool_spec


def run_tool_command(
    runtime: Runtime,
    command,
    tool_spec,
    *,
    argv: list[str] | None = None,
    text: str | None = None,
    box=None,
    as_json: bool = False,
) -> int:
    """Run a tool command a person typed (shell words or a typed line); returns the status.

    The one path for the shell and the interactive session: availability
    (the tool's and the skill's requirements), argument mode, validation with
    the usage line, the person's policy, live output, rendering.
    """
    from mdagent.dispatch import build_call, usage
    from mdagent.specs import unmet_requirement

    reason = runtime.unavailable(tool_spec) or unmet_requirement(command.requires)
    if reason:
        raise ToolFailed(f"/{command.name} is unavailable: {reason}")
    call = build_call(command, tool_spec, argv=argv, text=text)
    if box is None:
        box = runtime.toolbox(policy=runtime.person_policy())
    problems = box.tool_for(call.tool).validate(call.args)
    if problems:
        raise UsageError(f"/{command.name}: {', '.join(problems)}\n{usage(command, tool_spec)}")
    ctx = runtime.context(box, caller="person", output=None if as_json else sys.stdout)
    result = box.run(call.tool, call.args, ctx)
    return render(result, as_json=as_json, label=f"/{command.name}")


def render(result, *, as_json: bool, label: str) -> int:
    """Print a result the way DESIGN §6 says and return its exit status."""
    data = result.data
    if as_json:
        print(result.to_json())
        return exit_status(result)
    if not data.get("streamed"):
        if "output" in data and data["output"] is not None:
            _write(sys.stdout, str(data["output"]))
        elif "stdout" in data or "stderr" in data:
            _write(sys.stdout, data.get("stdout") or "")
            _write(sys.stderr, data.get("stderr") or "")
        elif result.ok:
            print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    if not result.ok and not _is_exit_status(data):
        print(f"agent: {label}: {result.error}", file=sys.stderr)
    return exit_status(result)


def _write(stream, text: str) -> None:
    if text:
        stream.write(text if text.endswith("\n") else text + "\n")
        stream.flush()


def _is_exit_status(data: dict[str, Any]) -> bool:
    """A process that ran and said no: its own status speaks, no extra line."""
    return isinstance(data.get("exit_code"), int) and str(data.get("error", "")).startswith(
        "exit status"
    )


def exit_status(result) -> int:
    """0 ok; 1 failure (a process: its own status); 124 timeout; 126 denied; 130 interrupted."""
    if result.ok:
        return 0
    data = result.data
    if data.get("code") == "DENIED":
        return 126
    if data.get("timed_out"):
        return 124
    if data.get("interrupted"):
        return 130
    code = data.get("exit_code")
    if isinstance(code, int) and 0 < code < 256:
        return code
    return 1


def command_listing(registry) -> str:
    """``/name  description`` for every user-invocable command."""
    from mdagent.console import described

    rows = sorted(
        (f"/{key} {command.argument_hint}".rstrip(), command.description)
        for key, command in registry.commands.items()
        if command.user_invocable
    )
    return described(rows) or "(no commands)"


def unknown_command(registry, name: str) -> str:
    """The unknown-command message: did you mean, and the list."""
    from mdagent.specs import command_key

    key = command_key(name)
    lines = [f"unknown command /{key}"]
    for problem in registry.errors:
        if f"/{key}/" in problem.path.replace(os.sep, "/") or problem.message.startswith(
            f"/{key}:"
        ):
            lines[0] += f" (it did not load: {problem})"
            break
    similar = registry.similar_commands(key)
    if similar:
        lines.append(f"did you mean /{similar[0]}?")
    names = sorted(k for k, c in registry.commands.items() if c.user_invocable)
    lines.append("commands: " + (", ".join(f"/{n}" for n in names) or "(none)"))
    return "\n".join(lines)
