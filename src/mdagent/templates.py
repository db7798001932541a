"""Templates of declared tools: ``{param}`` placeholders in argv, shell, http and ``with``.

``{name}`` stands for the argument ``name``, or its schema ``default`` when
the call leaves it out; ``{{`` and ``}}`` are literal braces. What a value
becomes depends on where it lands:

- **argv** (``run:``): an element that is exactly ``"{name}"`` becomes one
  element, an array becomes one element per item, and an absent optional
  value removes the element. An element with more around the placeholder
  (``"--limit={limit}"``) is string-substituted, and is removed as a whole
  when any value it names is absent, so optional flags disappear cleanly.
- **shell** (``shell:``): every value is quoted with :func:`shlex.quote`
  for the quoting context it lands in (bare, ``'...'`` or ``"..."``), so
  it reaches the command as literal text, never as syntax. An array is one
  quoted word per item (one word inside quotes); an absent value is nothing.
- **url** (``http.url``): values are percent-encoded (nothing kept safe, so
  a value cannot add a path segment or a query parameter); array items are
  encoded one by one and joined by ``,``; an absent value is empty.
- **values** (``http.json``/``headers``/``body``, ``with``): a string that
  is exactly ``"{name}"`` becomes the typed value (a number stays a number,
  an array an array) and an absent value removes its key or list item;
  other strings are string-substituted.

String substitution writes strings as they are, arrays as their items
joined by spaces and everything else as JSON (``true``, ``3``, ``{"a": 1}``).
A ``null`` argument counts as absent (models send ``null`` for "not given").
Mapping keys are never templates.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote

__all__ = [
    "TemplateError",
    "as_text",
    "check_shell",
    "expand_argv",
    "expand_shell",
    "expand_url",
    "expand_value",
    "placeholders",
]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


class TemplateError(ValueError):
    """A malformed template, or a value a template cannot be expanded with."""


@dataclass(frozen=True)
class _Slot:
    """A ``{name}`` placeholder in a parsed template."""

    name: str


_ABSENT = object()


@lru_cache(maxsize=1024)
def _parse(template: str) -> tuple[str | _Slot, ...]:
    """Literal text and placeholders, in order (``{{``/``}}`` already unescaped)."""
    parts: list[str | _Slot] = []
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
            parts.append(_Slot(name))
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
        return {p.name for p in _parse(template) if isinstance(p, _Slot)}
    if isinstance(template, Mapping):
        template = list(template.values())
    if isinstance(template, list | tuple):
        names: set[str] = set()
        for item in template:
            names |= placeholders(item)
        return names
    return set()


def _lookup(
    name: str, args: Mapping[str, Any], params: Mapping[str, Any], required: Collection[str]
) -> Any:
    """The value for ``{name}``: the argument, else the default, else ``_ABSENT``."""
    value = args.get(name)
    if value is not None:
        return value
    schema = params.get(name)
    if schema is None and name not in args:
        raise TemplateError(f"placeholder {{{name}}} names no parameter")
    if isinstance(schema, Mapping) and schema.get("default") is not None:
        return schema["default"]
    if name in required:
        # Validation rejects such a call before any template is expanded;
        # reaching here means a caller skipped it.
        raise TemplateError(f"missing required argument: {name}")
    return _ABSENT


def _scalar_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def as_text(value: Any) -> str:
    """A value as template text: strings as they are, arrays space-joined, the rest as JSON."""
    if isinstance(value, list | tuple):
        return " ".join(_scalar_text(v) for v in value)
    return _scalar_text(value)


def expand_argv(
    template: list[Any],
    args: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    required: Collection[str] = (),
) -> list[str]:
    """The argv a ``run:`` template gives for ``args``; never goes through a shell.

    See the module docstring for the rules. Non-string template items
    (``5`` in YAML) become their text.
    """
    argv: list[str] = []
    for item in template:
        if not isinstance(item, str):
            argv.append(_scalar_text(item))
            continue
        parts = _parse(item)
        if len(parts) == 1 and isinstance(parts[0], _Slot):
            value = _lookup(parts[0].name, args, params, required)
            if value is _ABSENT:
                continue
            if isinstance(value, list | tuple):
                argv.extend(_scalar_text(v) for v in value)
            else:
                argv.append(_scalar_text(value))
            continue
        pieces = []
        for part in parts:
            if isinstance(part, str):
                pieces.append(part)
                continue
            value = _lookup(part.name, args, params, required)
            if value is _ABSENT:
                break
            pieces.append(as_text(value))
        else:
            argv.append("".join(pieces))
    return argv


# -- shell -------------------------------------------------------------------
#
# Quoting a value is only safe if we know the quoting context it lands in:
# shlex.quote's '...' pasted inside '...' would *close* the user's quotes and
# leave the value bare. So the literal text is scanned with a small model of
# sh's quoting, and each placeholder gets the quoting its context needs.
# Contexts it cannot reason about (here-documents, ${...}, $'...', after a
# backslash) are refused rather than guessed.

_TOP, _SQ, _DQ, _BRACE, _ANSI = "top", "sq", "dq", "brace", "ansi"
# Backticks re-read their text (backslashes, a backtick in a value ends them)
# and arithmetic evaluates it: no quoting of a value is safe in either.
_TICK, _ARITH = "backtick", "arith"
_WORD_BREAK = set(" \t\n;&|()<>")


@lru_cache(maxsize=256)
def _shell_plan(template: str) -> tuple[str | tuple[str, str], ...]:
    """Literal text and ``(name, context)`` pairs, or TemplateError."""
    plan: list[str | tuple[str, str]] = []
    # Each frame is (state, closer): closer ends a $(...), `...` or ${...}.
    stack: list[tuple[str, str | None]] = [(_TOP, None)]
    escaped = False  # the previous character was an unquoted backslash
    comment = False
    heredoc = False
    prev = " "
    for part in _parse(template):
        if isinstance(part, _Slot):
            state, _ = stack[-1]
            problem = (
                "after a backslash"
                if escaped
                else "after a here-document (<<)"
                if heredoc
                else "inside ${...}"
                if state == _BRACE
                else "inside $'...'"
                if state == _ANSI
                else "inside backticks (use $(...) instead)"
                if state == _TICK
                else "inside arithmetic ((...))"
                if state == _ARITH
                else None
            )
            if problem:
                raise TemplateError(
                    f"placeholder {{{part.name}}} cannot be used {problem} in shell template"
                    f" {template!r}"
                )
            plan.append((part.name, _DQ if state == _DQ else _SQ if state == _SQ else _TOP))
            prev = "x"
            continue
        plan.append(part)
        i = 0
        # After a here-document starts, its body is not shell syntax; no
        # placeholder may follow, so there is nothing left to track.
        while i < len(part) and not heredoc:
            char = part[i]
            nxt = part[i + 1] if i + 1 < len(part) else ""
            state, closer = stack[-1]
            if escaped:
                escaped = False
            elif comment:
                comment = char != "\n"
            elif state == _SQ:
                if char == "'":
                    stack.pop()
            elif state == _ANSI:
                if char == "\\":
                    escaped = True
                elif char == "'":
                    stack.pop()
            elif state == _DQ:
                if char == "\\":
                    escaped = True
                elif char == '"':
                    stack.pop()
                elif char == "`":
                    stack.append((_TICK, "`"))
                elif char == "$" and part[i + 1 : i + 3] == "((":
                    stack += [(_ARITH, ")"), (_ARITH, ")")]
                    i += 2
                elif char == "$" and nxt in ("(", "{"):
                    stack.append((_TOP, ")") if nxt == "(" else (_BRACE, "}"))
                    i += 1
            else:  # unquoted shell text (top level, ${...}, `...`, arithmetic)
                if char == "\\":
                    escaped = True
                elif char == "'":
                    stack.append((_SQ, None))
                elif char == '"':
                    stack.append((_DQ, None))
                elif char == closer:
                    stack.pop()
                elif char == "`":
                    stack.append((_TICK, "`"))
                elif char == "$" and part[i + 1 : i + 3] == "((":
                    stack += [(_ARITH, ")"), (_ARITH, ")")]
                    i += 2
                elif char == "(" and nxt == "(":  # the (( ... )) command
                    stack += [(_ARITH, ")"), (_ARITH, ")")]
                    i += 1
                elif char == "$" and nxt == "'":
                    stack.append((_ANSI, None))
                    i += 1
                elif char == "$" and nxt in ("(", "{"):
                    stack.append((_TOP, ")") if nxt == "(" else (_BRACE, "}"))
                    i += 1
                elif char == "(":
                    stack.append((state, ")"))
                elif char == "{" and state == _BRACE:
                    stack.append((_BRACE, "}"))
                elif char == "#" and prev in _WORD_BREAK:
                    comment = True
                elif char == "<" and nxt == "<":
                    heredoc = True
            prev = char
            i += 1
    if len(stack) > 1 and any(not isinstance(step, str) for step in plan):
        # Either the script is broken or our model of it is: in both cases
        # we cannot tell which quoting a value needs.
        raise TemplateError(f"unbalanced quotes or brackets in shell template {template!r}")
    return tuple(plan)


def check_shell(template: str) -> None:
    """Raise :class:`TemplateError` if ``template`` cannot be expanded safely.

    Beyond :func:`placeholders`' checks: a placeholder after a backslash,
    after a here-document, inside ``${...}`` or inside ``$'...'`` is refused,
    because no quoting of the value is right in all of those places.
    """
    _shell_plan(template)


def _shell_word(value: Any, context: str) -> str:
    if isinstance(value, list | tuple):
        if context == _TOP:
            return " ".join(shlex.quote(_scalar_text(v)) for v in value)
        value = as_text(value)  # inside quotes the author asked for one word
    word = shlex.quote(_scalar_text(value))
    if context == _SQ:  # close the author's '...', add the quoted value, reopen
        return f"'{word}'"
    if context == _DQ:
        return f'"{word}"'
    return word


def expand_shell(
    template: str,
    args: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    required: Collection[str] = (),
) -> str:
    """The ``sh -c`` script a ``shell:`` template gives for ``args``.

    Every value is shell-quoted for the context it lands in, so the command
    sees it as one literal word (or, inside the author's quotes, literal
    text within that word). An absent optional value expands to nothing.
    Don't wrap placeholders in your own quotes to protect them: they are
    protected already; quotes around them only join them with the text
    around (``"Hello, {name}!"`` is one word).
    """
    return _fill(_shell_plan(template), args, params, required, _shell_word)


def expand_url(
    template: str,
    args: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    required: Collection[str] = (),
) -> str:
    """The URL an ``http.url`` template gives: every value percent-encoded.

    Nothing in a value is kept safe (``/``, ``?``, ``&``, ``#`` are encoded
    too), so a value stays inside the path segment or query value it was put
    in. Array items are encoded one by one and joined with ``,``; an absent
    optional value is empty.
    """
    steps = [p if isinstance(p, str) else (p.name, None) for p in _parse(template)]
    return _fill(steps, args, params, required, _url_part)


def _url_part(value: Any, _context: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(quote(_scalar_text(v), safe="") for v in value)
    return quote(_scalar_text(value), safe="")


def _fill(
    steps: Iterable[str | tuple[str, Any]],
    args: Mapping[str, Any],
    params: Mapping[str, Any],
    required: Collection[str],
    render: Callable[[Any, Any], str],
) -> str:
    """Literal text kept, each ``(name, context)`` rendered; absent values vanish."""
    out = []
    for step in steps:
        if isinstance(step, str):
            out.append(step)
            continue
        name, context = step
        value = _lookup(name, args, params, required)
        if value is not _ABSENT:
            out.append(render(value, context))
    return "".join(out)


def expand_value(
    template: Any,
    args: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    required: Collection[str] = (),
) -> Any:
    """A JSON-like template (``http.json``, ``headers``, ``body``, ``with``) expanded.

    A string that is exactly ``"{name}"`` becomes the typed value; inside a
    mapping or list, an absent optional value removes its key or item (a
    whole template that is an absent value gives ``None``). Other strings are
    string-substituted; an absent value in them is empty. Numbers, booleans
    and ``None`` pass through.
    """
    value = _expand(template, args, params, required)
    return None if value is _ABSENT else value


def _expand(template: Any, args: Mapping[str, Any], params: Mapping[str, Any], required) -> Any:
    if isinstance(template, str):
        parts = _parse(template)
        if len(parts) == 1 and isinstance(parts[0], _Slot):
            return _lookup(parts[0].name, args, params, required)
        out = []
        for part in parts:
            if isinstance(part, str):
                out.append(part)
                continue
            value = _lookup(part.name, args, params, required)
            if value is not _ABSENT:
                out.append(as_text(value))
        return "".join(out)
    if isinstance(template, Mapping):
        expanded = {k: _expand(v, args, params, required) for k, v in template.items()}
        return {k: v for k, v in expanded.items() if v is not _ABSENT}
    if isinstance(template, list | tuple):
        items = [_expand(v, args, params, required) for v in template]
        return [v for v in items if v is not _ABSENT]
    return template
