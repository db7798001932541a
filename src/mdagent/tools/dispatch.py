"""``/name`` + arguments -> one tool call, by the command's argument mode (DESIGN §3).

Input is either an argv list (from the shell) or a string (typed in the
interactive session or sent by a model); ``raw`` keeps the text as typed,
``parsed`` maps words onto the tool's parameters, ``json`` takes one object.
A skill's ``command-with`` fills the tool's arguments from templates over the
typed words instead (:func:`template_arguments`).
"""

from __future__ import annotations

import json
import shlex

from mdagent.core.errors import UsageError
from mdagent.core.records import Record
from mdagent.core.specs import CommandSpec, ToolSpec
from mdagent.declarations.commandargs import (
    ALL_WORDS,
    arguments_usage,
    positional_names,
    schema_type,
    word_slots,
)

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

_TRUE = {"true", "yes", "y", "1", "on"}
_GLOBAL_OPTIONS = {"json", "yes", "no-user", "layer", "verbose", "provider", "model", "base-url"}
_FALSE = {"false", "no", "n", "0", "off"}


class Call(Record):
    """What a command line turned into: which tool, with which arguments."""

    command: CommandSpec
    tool: str
    args: dict[str, Any]


def build_call(
    command: CommandSpec, tool: ToolSpec, argv: list[str] | None = None, text: str | None = None
) -> Call:
    """Turn ``argv`` (shell) or ``text`` (typed / from a model) into a tool call.

    Raises :class:`UsageError` (exit 2, with the usage line) when the words do
    not fit the tool's parameters.
    """
    mode = command.arg_mode
    if mode != "parsed" or command.command_with is not None:
        # `agent /term -- -h`: what follows `--` is the command's own, even
        # `-h`; parsed mode reads `--` itself (the end of the options). The
        # same typed in the session: `/term -- -h`.
        if argv and argv[0] == "--":
            argv = argv[1:]
        elif text is not None and (text.strip() == "--" or text.lstrip().startswith("-- ")):
            text = text.lstrip()[2:].lstrip()
    if command.command_with is not None:
        args = template_arguments(command, tool, argv, text)
    elif mode == "raw":
        args = raw_arguments(command, argv, text)
    elif mode == "parsed":
        words = argv if argv is not None else _split(text or "", command, tool)
        args = parse_words(words, tool, command)
    elif mode == "json":
        args = json_arguments(argv, text, command, tool)
    else:  # the registry rejects other modes; never guess
        raise UsageError(f"/{command.name}: unknown argument mode {mode!r}")
    missing = missing_arguments(command, tool, args)
    if missing:
        raise UsageError(
            f"/{command.name}: missing argument: {', '.join(missing)}\n{usage(command, tool)}"
        )
    return Call(command, tool.name, args)


def missing_arguments(command: CommandSpec, tool: ToolSpec, args: dict[str, Any]) -> list[str]:
    """What a person left out that the command needs (exit 2 with the usage line).

    parsed and json: a parameter the tool requires and the words did not
    set. raw: a blank line, when the tool requires its ``command`` (``agent
    /term`` alone would otherwise run nothing and succeed silently); a raw
    tool that does not require it may be run with nothing. command-with:
    the word counts are checked where the templates are filled.
    """
    if command.command_with is not None:
        return []
    if command.arg_mode == "raw":
        blank = "command" in tool.required and not str(args.get("command") or "").strip()
        return [command.argument_hint or "<text...>"] if blank else []
    return [name for name in tool.required if name not in args]


def raw_arguments(command: CommandSpec, argv: list[str] | None, text: str | None) -> dict[str, Any]:
    """``{"command", "commandName", "skillName"}`` with the text as typed."""
    if text is None:
        words = argv or []
        text = words[0] if len(words) == 1 else shlex.join(words)
    return {"command": text, "commandName": command.name, "skillName": command.skill}


# -- command-with: templates over the typed words -----------------------------------


def template_arguments(
    command: CommandSpec, tool: ToolSpec, argv: list[str] | None, text: str | None
) -> dict[str, Any]:
    """The tool's arguments from a skill's ``command-with`` and the typed words.

    ``{ARGUMENTS}`` is every word (from the shell as given, a typed line
    shell-split), ``{0}``, ``{1}``... one word each, 0-based, and the names of
    ``arguments:`` the words in that order. Values are expanded exactly as a
    ``tool`` + ``with`` declaration expands them: into ``exec``'s ``command``
    each word is shell-quoted on its own, so what was typed stays literal.
    """
    from mdagent.declarations.kinds import shell_argument
    from mdagent.tools import templates

    words = list(argv) if argv is not None else _split(text or "", command, tool)
    used, needed, takes_all = word_slots(command)
    if len(words) < needed:
        raise UsageError(
            f"/{command.name}: needs {needed} argument{'s' if needed > 1 else ''}, "
            f"got {len(words)}\n{usage(command, tool)}"
        )
    if not takes_all and len(words) > needed:
        extra = " ".join(words[needed:])
        raise UsageError(f"/{command.name}: too many arguments: {extra}\n{usage(command, tool)}")
    values: dict[str, Any] = {ALL_WORDS: words}
    values.update({f"_{i}": word for i, word in enumerate(words)})
    values.update({name: words[i] for i, name in enumerate(command.arguments) if i < len(words)})
    params = {name: {} for name in values}
    with_ = positional_names(command.command_with or {})
    inner = templates.expand_value(with_, values, params)
    shell = shell_argument(tool.name, with_)
    if shell is not None:
        # A person's words are taken as meant (`/disk -h`), but always as words.
        inner["command"] = templates.expand_shell(shell, values, params)
    return inner


def _split(text: str, command: CommandSpec, tool: ToolSpec) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as err:
        raise UsageError(f"{err}\n{usage(command, tool)}") from None


def json_arguments(
    argv: list[str] | None, text: str | None, command: CommandSpec, tool: ToolSpec
) -> dict[str, Any]:
    """One JSON object, given as one string or as several shell words."""
    source = text if text is not None else " ".join(argv or [])
    if not source.strip():
        source = "{}"
    try:
        value = json.loads(source)
    except ValueError as err:
        raise UsageError(f"arguments are not valid JSON ({err})\n{usage(command, tool)}") from None
    if not isinstance(value, dict):
        raise UsageError(f"arguments must be a JSON object\n{usage(command, tool)}")
    return value


def parse_words(words: list[str], tool: ToolSpec, command: CommandSpec) -> dict[str, Any]:
    """Map words onto ``tool``'s parameters (``parsed`` mode).

    ``key=value``, ``--key value``, ``--key=value`` and ``--flag`` set named
    parameters; other words fill the parameters in declared order and a
    trailing array parameter takes the rest; ``--`` ends the options.
    """
    params = tool.params
    named: dict[str, Any] = {}
    positional: list[str] = []
    index = 0
    options_done = False

    def fail(message: str) -> UsageError:
        return UsageError(f"/{command.name}: {message}\n{usage(command, tool)}")

    while index < len(words):
        word = words[index]
        index += 1
        if options_done:
            positional.append(word)
            continue
        if word == "--":
            options_done = True
            continue
        if word.startswith("--") and len(word) > 2:
            key, has_value, value = word[2:].partition("=")
            name = _param_name(key, params)
            if name is None and key.startswith("no-") and has_value == "":
                negated = _param_name(key[3:], params)
                if negated is not None and schema_type(params[negated]) == "boolean":
                    named[negated] = False
                    continue
            if name is None:
                hint = (
                    " (global options such as --json go before /NAME)"
                    if key in _GLOBAL_OPTIONS
                    else ""
                )
                raise fail(f"unknown option --{key}{hint}")
            if not has_value:
                if schema_type(params[name]) == "boolean":
                    named[name] = True
                    continue
                if index >= len(words):
                    raise fail(f"--{key} needs a value")
                value = words[index]
                index += 1
            _set(named, name, value, params[name], fail)
            continue
        key, eq, value = word.partition("=")
        if eq and _param_name(key, params) is not None:
            name = _param_name(key, params)
            _set(named, name, value, params[name], fail)
            continue
        positional.append(word)

    free = [p for p in params if p not in named]
    for i, name in enumerate(free):
        if not positional:
            break
        schema = params[name]
        if schema_type(schema) == "array" and i == len(free) - 1:
            named[name] = [_coerce(w, schema.get("items", {}), fail) for w in positional]
            positional = []
            break
        _set(named, name, positional.pop(0), schema, fail)
    if positional:
        raise fail(f"too many arguments: {' '.join(positional)}")
    return named


def _param_name(key: str, params: dict[str, Any]) -> str | None:
    if key in params:
        return key
    alt = key.replace("-", "_")
    if alt in params:
        return alt
    alt = key.replace("_", "-")
    return alt if alt in params else None


def _set(named: dict[str, Any], name: str, value: str, schema: dict[str, Any], fail) -> None:
    if schema_type(schema) == "array" and not value.startswith("["):
        named.setdefault(name, []).append(_coerce(value, schema.get("items", {}), fail))
    else:
        named[name] = _coerce(value, schema, fail)


def _coerce(value: str, schema: dict[str, Any], fail) -> Any:
    kind = schema_type(schema)
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            number = float(value)
            return int(number) if number.is_integer() and "." not in value else number
        if kind == "boolean":
            lowered = value.lower()
            if lowered in _TRUE:
                return True
            if lowered in _FALSE:
                return False
            raise ValueError(value)
        if kind in ("array", "object"):
            parsed = json.loads(value)
            expected = list if kind == "array" else dict
            if not isinstance(parsed, expected):
                raise ValueError(value)
            return parsed
    except ValueError:
        raise fail(f"{value!r} is not a valid {kind}") from None
    return value


def usage(command: CommandSpec, tool: ToolSpec | None) -> str:
    """A one-line usage generated from the argument mode and the tool's schema."""
    return f"usage: {f'/{command.name} {arguments_usage(command, tool)}'.rstrip()}"


def _kind_word(schema: dict[str, Any]) -> str:
    """A parameter's type as a person reads it: ``integer``, ``list of strings``, ``one of a, b``."""
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    kind = schema_type(schema) or "any"
    if kind == "array":
        items = schema.get("items")
        item = schema_type(items) if isinstance(items, dict) else None
        return f"list of {item}s" if item else "list"
    return kind


def _default_note(schema: dict[str, Any]) -> str:
    """`` (default: 10)``; nothing for a flag that is off unless given."""
    if "default" not in schema or (schema_type(schema) == "boolean" and schema["default"] is False):
        return ""
    value = schema["default"]
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f" (default: {shown})"


def help_text(command: CommandSpec, tool: ToolSpec | None) -> str:
    """What ``agent /name --help`` (and ``-h``, ``agent help name``, ``/help name``) prints."""
    lines = [f"/{command.name} - {command.description or '(no description)'}", usage(command, tool)]
    if command.kind == "prompt":
        lines.append("Runs an agent turn with this skill's instructions.")
    elif tool is not None and command.command_with is not None:
        lines.append(f"Runs tool {tool.name} with:")
        lines += [f"  {k}: {v}" for k, v in command.command_with.items()]
    elif tool is not None:
        lines.append(f"Runs tool {tool.name} ({command.arg_mode} arguments).")
        if command.arg_mode in ("parsed", "json") and tool.params:
            rows = [
                (
                    param,
                    _kind_word(schema),
                    f"{schema.get('description', '')}{_default_note(schema)}"
                    + (" (required)" if param in tool.required else ""),
                )
                for param, schema in tool.params.items()
            ]
            width = max(16, *(len(r[0]) + 1 for r in rows))
            kinds = max(8, *(len(r[1]) + 1 for r in rows))
            lines += ["", "Parameters:"]
            lines += [f"  {p:<{width}} {k:<{kinds}} {d.strip()}".rstrip() for p, k, d in rows]
    if command.source:
        lines.append(f"Declared in {command.source}")
    return "\n".join(lines)


def complete_argument(command: CommandSpec, partial: str, cwd: str = ".") -> list[str]:
    """Completions for an argument of ``/name`` from its ``completions:`` declaration.

    ``files`` completes paths under ``cwd`` (folders end in ``/``); a list
    completes its own entries; no declaration completes nothing. A prompt
    skill's named arguments complete as ``--name``.
    """
    if command.kind == "prompt" and partial.startswith("--") and command.arguments:
        return [f"--{n}" for n in command.arguments if f"--{n}".startswith(partial)]
    if isinstance(command.completions, list):
        return [str(c) for c in command.completions if str(c).startswith(partial)]
    if command.completions != "files":
        return []
    return complete_path(partial, cwd)


def complete_path(partial: str, cwd: str = ".") -> list[str]:
    """Paths under ``cwd`` that start with ``partial`` (folders end in ``/``; dot files on ``.``)."""
    import os

    folder, _, stem = partial.rpartition("/")
    base = os.path.join(cwd, folder) if folder else cwd
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return []
    prefix = f"{folder}/" if folder else ""
    return [
        f"{prefix}{e.name}/" if e.is_dir() else f"{prefix}{e.name}"
        for e in entries
        if e.name.startswith(stem) and (stem.startswith(".") or not e.name.startswith("."))
    ]
