"""How a command's arguments are written: its usage words, and a skill's ``command-with``.

What ``/help`` lists and a usage error shows for ``/name`` (:func:`arguments_usage`),
which typed words a ``command-with`` template takes (:func:`word_slots`), and
what is wrong with one (:func:`check_command_with`: checked when the registry
compiles, so ``agent check`` finds it). Turning typed words into a call is
:mod:`mdagent.tools.dispatch`'s job.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

    from mdagent.core.specs import CommandSpec, ToolSpec

#: The placeholder of a ``command-with`` template that stands for every typed word.
ALL_WORDS = "ARGUMENTS"
_POSITIONAL = re.compile(r"\{\{|\}\}|\{(\d+)\}")


def positional_names(template: Any) -> Any:
    """``template`` with ``{0}``, ``{1}``... spelled ``{_0}``, ``{_1}``: template names
    cannot start with a digit, and these cannot collide with ``arguments:`` names."""
    if isinstance(template, str):
        return _POSITIONAL.sub(
            lambda m: f"{{_{m.group(1)}}}" if m.group(1) else m.group(0), template
        )
    if isinstance(template, dict):
        return {k: positional_names(v) for k, v in template.items()}
    if isinstance(template, list):
        return [positional_names(v) for v in template]
    return template


def word_slots(command: CommandSpec) -> tuple[set[str], int, bool]:
    """``(placeholders, words needed, takes every word)`` of a command's templates."""
    from mdagent.declarations.placeholders import placeholders

    used = placeholders(positional_names(command.command_with))
    positions = [int(n[1:]) for n in used if re.fullmatch(r"_\d+", n)]
    positions += [i for i, n in enumerate(command.arguments) if n in used]
    return used, max(positions, default=-1) + 1, ALL_WORDS in used


def check_command_with(command: CommandSpec, tool: ToolSpec) -> list[tuple[str, str]]:
    """``(key, message)`` for each way a skill's ``command-with`` cannot fill ``tool``'s call.

    Checked when the registry compiles, so ``agent check`` finds them: keys
    the tool has no parameter for, parameters it requires and is not given,
    placeholders that are no typed word, and templates for ``exec``'s
    ``command`` that would put a word where the shell reads code.
    """
    from mdagent.core.names import did_you_mean
    from mdagent.declarations.kinds import shell_argument
    from mdagent.declarations.placeholders import check_shell, placeholders

    with_ = command.command_with or {}
    problems: list[tuple[str, str]] = []
    names = {ALL_WORDS, *command.arguments}
    for key, template in with_.items():
        if tool.params and key not in tool.params:
            hint = did_you_mean(key, tool.params)
            problems.append((key, f"command-with: {tool.name!r} has no parameter {key!r}{hint}"))
            continue
        try:
            used = placeholders(positional_names(template))
            if key == "command" and shell_argument(tool.name, with_) is not None:
                check_shell(positional_names(template))
        except ValueError as exc:
            problems.append((key, f"command-with.{key}: {exc}"))
            continue
        for name in sorted(used - names):
            if not re.fullmatch(r"_\d+", name):
                problems.append(
                    (
                        key,
                        f"command-with.{key}: {{{name}}} is not a typed word: use {{ARGUMENTS}}, "
                        "{0}, {1}... or a name from `arguments:`",
                    )
                )
    missing = [r for r in tool.required if r not in with_]
    if missing:
        problems.append(
            ("", f"command-with gives {tool.name!r} no {', '.join(missing)}, which it requires")
        )
    return problems


def arguments_usage(command: CommandSpec, tool: ToolSpec | None) -> str:
    """The arguments part of the usage line (``<name> [--times N] [--loud]``), or ``""``.

    Written as a person types them: ``<x>`` must be given, ``[...]`` may be,
    ``--flag VALUE`` names an option, ``...`` takes several words. The
    ``argument-hint`` an author wrote wins over what is generated.
    """
    if command.argument_hint:
        return command.argument_hint
    if command.kind == "prompt" or tool is None:
        return "[text...]"
    if command.command_with is not None:
        _, needed, takes_all = word_slots(command)
        words = [
            f"<{command.arguments[i] if i < len(command.arguments) else i}>" for i in range(needed)
        ]
        return " ".join([*words, *(["[args...]"] if takes_all else [])])
    if command.arg_mode == "raw":
        return "<text...>"
    if command.arg_mode == "json":
        return "'<json object>'"
    return _parsed_usage(tool)


def _parsed_usage(tool: ToolSpec) -> str:
    parts = []
    required = set(tool.required)
    names = list(tool.params)
    # Words fill the parameters in declared order: a required parameter is
    # shown as a bare word only while every one before it is required too.
    positional = True
    for i, param in enumerate(names):
        schema = tool.params[param]
        kind = schema_type(schema)
        if kind == "boolean":
            if param in required:
                parts.append(f"--{param}|--no-{param}")
            elif schema.get("default") is True:
                parts.append(f"[--no-{param}]")
            else:
                parts.append(f"[--{param}]")
            continue
        value = _placeholder(param, schema)
        if kind == "array" and i == len(names) - 1:
            parts.append(f"<{param}...>" if param in required else f"[{param}...]")
        elif param in required:
            parts.append(f"<{param}>" if positional else f"--{param} {value}")
        else:
            parts.append(f"[--{param} {value}]")
        positional = positional and param in required
    return " ".join(parts)


def _placeholder(param: str, schema: dict[str, Any]) -> str:
    """The value word after ``--param``: ``N``, ``a|b`` for an enum, else the name in capitals."""
    kind = schema_type(schema)
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "|".join(str(v) for v in schema["enum"])
    fixed = {"integer": "N", "number": "X", "object": "JSON"}.get(kind or "")
    if fixed:
        return fixed
    word = param.upper().replace("-", "_")
    return f"{word}..." if kind == "array" else word


def schema_type(schema: dict[str, Any]) -> str | None:
    """A JSON Schema's ``type`` (the first that is not ``null`` of a list), or None."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind
