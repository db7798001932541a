"""The ``{param}`` template language of declared tools, and the checks a template passes.

A template (``run:``, ``shell:``, ``http:``, ``with:``, a skill's
``command-with``) is literal text and ``{name}`` slots, ``{{``/``}}`` for
literal braces: :func:`parse_template` reads one, :func:`placeholders` names
the parameters a template (or a list or mapping of them) refers to. Before a
template is used, the registry checks it: :func:`check_shell` refuses the
places in a ``shell:`` script where the shell would read a value again as
code (read by :mod:`mdagent.safety.shell.slots`), :func:`check_argv` the
argv positions a program runs as code. Expanding a template with a call's
arguments is :mod:`mdagent.tools.templates`' job; both read the same parse,
so what is checked is what is expanded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Slot",
    "TemplateError",
    "as_text",
    "check_argv",
    "check_shell",
    "parse_template",
    "placeholders",
    "scalar_text",
    "shell_plan",
]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


class TemplateError(ValueError):
    """A malformed template, or a value a template cannot be expanded with."""


# The classes here are plain ones (no dataclasses): this module is on the
# path of every `agent /name` of a `run:` tool, where importing dataclasses
# would cost ~4 ms. For the same reason the shell scanner
# (mdagent.safety.shell.slots, ~4 ms of compiled patterns) is imported by the
# functions that read a shell template or check an argv one, never here.


class Slot:
    """A ``{name}`` placeholder in a parsed template."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return type(other) is Slot and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Slot({self.name!r})"


@lru_cache(maxsize=1024)
def parse_template(template: str) -> tuple[str | Slot, ...]:
    """Literal text and placeholders, in order (``{{``/``}}`` already unescaped)."""
    parts: list[str | Slot] = []
    text: list[str] = []
    i, n = 0, len(template)
    while i < n:
        char = template[i]
        if char == "{" and template.startswith("{{", i):
            text.append("{")
            i += 2
        elif char == "}" and template.startswith("}}", i):
            text.append("}")
            i += 2
        elif char == "{":
            end = template.find("}", i + 1)
            if end < 0:
                raise TemplateError(f"unclosed '{{' at column {i + 1} in {template!r}")
            name = template[i + 1 : end]
            if not name:
                raise TemplateError(
                    f"empty placeholder '{{}}' at column {i + 1} in {template!r}"
                    " (write {{}} for literal braces)"
                )
            if not _NAME.fullmatch(name):
                raise TemplateError(
                    f"invalid placeholder '{{{name}}}' at column {i + 1} in {template!r}"
                    " (a placeholder is {param}; write {{ and }} for literal braces)"
                )
            if text:
                parts.append("".join(text))
                text = []
            parts.append(Slot(name))
            i = end + 1
        elif char == "}":
            raise TemplateError(
                f"stray '}}' at column {i + 1} in {template!r} (write }}}} for a literal brace)"
            )
        else:
            text.append(char)
            i += 1
    if text:
        parts.append("".join(text))
    return tuple(parts)


def placeholders(template: Any) -> set[str]:
    """The parameter names a template refers to.

    ``template`` may be a string, or a list or mapping of templates (searched
    recursively; mapping keys are not templates). Other values (numbers,
    ``None``) have none. Raises :class:`TemplateError` (a ``ValueError``)
    for a malformed template: an unclosed ``{``, an empty ``{}``, a stray
    ``}`` or a name that is not a parameter name.
    """
    if isinstance(template, str):
        return {p.name for p in parse_template(template) if isinstance(p, Slot)}
    if isinstance(template, Mapping):
        template = list(template.values())
    if isinstance(template, list | tuple):
        names: set[str] = set()
        for item in template:
            names |= placeholders(item)
        return names
    return set()


def scalar_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def as_text(value: Any) -> str:
    """A value as template text: strings as they are, arrays space-joined, the rest as JSON."""
    if isinstance(value, list | tuple):
        return " ".join(scalar_text(v) for v in value)
    return scalar_text(value)


@lru_cache(maxsize=256)
def shell_plan(
    template: str,
) -> tuple[str | tuple[str, str, bool, bool, tuple[str, ...]], ...]:
    """Literal text and ``(name, context, first, rest, before)`` slots, or TemplateError.

    ``first``: the value starts a word a program may read as an option, if
    the values of ``before`` (the placeholders earlier in the same word,
    with no text between) are empty; ``rest``: each further array item
    starts a word (see :func:`_check_option`).
    """
    from mdagent.safety.shell.slots import ShellScanner, ShellTemplateError

    scanner = ShellScanner(template)
    try:
        for part in parse_template(template):
            if isinstance(part, Slot):
                scanner.slot(part.name)
            else:
                scanner.text(part)
        return scanner.finish()
    except ShellTemplateError as exc:
        raise TemplateError(str(exc)) from None


def check_shell(template: str) -> None:
    """Raise :class:`TemplateError` if ``template`` cannot be expanded safely.

    Beyond :func:`placeholders`' checks, every position where the shell
    would read a value again as code, arithmetic or a variable name is
    refused (see the comment above :class:`mdagent.safety.shell.slots.ShellScanner`
    for the list): no quoting of the value is right there.
    """
    shell_plan(template)


def check_argv(template: list[Any]) -> None:
    """Raise :class:`TemplateError` if a ``run:`` template pastes a value into code.

    An argv never meets a shell, except where the program itself runs a word
    as code: ``[sh, -c, "echo {x}"]`` (pass values as arguments after the
    script instead: ``[sh, -c, 'echo "$1"', sh, "{x}"]``), ssh's remote
    command.
    """
    from mdagent.safety.shell.slots import code_position, glued_option

    words: list[str | None] = []
    for item in template:
        if isinstance(item, str):
            parts = parse_template(item)
            names = [p.name for p in parts if isinstance(p, Slot)]
            if names:
                # `--command={x}`, `-c{x}`: the value of the option it is glued to
                option = glued_option("".join(p for p in parts if isinstance(p, str)))
                problem = code_position(words) or (
                    code_position([*words, option]) if option else None
                )
                if problem:
                    raise TemplateError(
                        f"placeholder {{{names[0]}}} cannot be used {problem} in run template"
                        f" {template!r}"
                    )
                words.append(None)
                continue
            words.append("".join(parse_template(item)))  # no placeholders: all text
        else:
            words.append(scalar_text(item))
