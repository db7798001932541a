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
  Positions where the shell reads a value again (a comment, ``$``, ``[[ -eq
  ]]``, arithmetic, subscripts, ``eval``, ``sh -c`` scripts...) are refused
  when the template is checked (:mod:`mdagent.declarations.placeholders`:
  ``check_shell``; ``check_argv`` refuses the few argv positions that are
  code, ``[sh, -c, "..{x}.."]``, ssh's remote command).

Option values: quoting cannot stop a value that starts with ``-`` from
being read as an option. Given ``allow_options``, :func:`expand_argv` and
:func:`expand_shell` refuse such a value where it would start an argument
(not the program, not after a ``--``) unless its parameter is listed.
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

import re
import shlex
from collections.abc import Callable, Collection, Iterable, Mapping
from urllib.parse import quote

from mdagent.declarations.placeholders import (
    Slot,
    TemplateError,
    as_text,
    parse_template,
    scalar_text,
    shell_plan,
)

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "OptionValueError",
    "expand_argv",
    "expand_shell",
    "expand_url",
    "expand_value",
]

_ABSENT = object()


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


def expand_argv(
    template: list[Any],
    args: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    required: Collection[str] = (),
    allow_options: Collection[str] | None = None,
) -> list[str]:
    """The argv a ``run:`` template gives for ``args``; never goes through a shell.

    See the module docstring for the rules. Non-string template items
    (``5`` in YAML) become their text.

    ``allow_options``: ``None`` takes every value as meant (a person's);
    otherwise a value that starts an element with ``-`` — after the program
    (the first element), before any ``--`` element, and after only empty
    values in the same element (``{prefix}{name}``, prefix ``""``) — raises
    :class:`OptionValueError` unless its parameter is in ``allow_options``.
    """
    argv: list[str] = []
    after_dashes = False  # a literal "--" element came earlier
    for index, item in enumerate(template):
        if not isinstance(item, str):
            argv.append(scalar_text(item))
            continue
        parts = parse_template(item)
        if len(parts) == 1 and isinstance(parts[0], Slot):
            name = parts[0].name
            value = _lookup(name, args, params, required)
            if value is _ABSENT:
                continue
            guard = not after_dashes
            _check_option(name, value, guard and index > 0, guard, True, allow_options)
            if isinstance(value, list | tuple):
                argv.extend(scalar_text(v) for v in value)
            else:
                argv.append(scalar_text(value))
            continue
        after_dashes = after_dashes or item == "--"
        pieces = []
        for part in parts:
            if isinstance(part, str):
                pieces.append(part)
                continue
            value = _lookup(part.name, args, params, required)
            if value is _ABSENT:
                break
            # The value starts the element when nothing before it in the
            # element is text: `{prefix}{name}` with an empty prefix.
            first = not "".join(pieces) and index > 0 and not after_dashes
            _check_option(part.name, value, first, False, False, allow_options)
            pieces.append(as_text(value))
        else:
            argv.append("".join(pieces))
    return argv


# -- options -------------------------------------------------------------------
#
# Quoting makes a value one literal word, but a word that starts with "-" is
# still read as an option by most programs (`grep {pattern} f` with "-r", `git
# {ref}` with "--upload-pack=…"). Where that can happen is known from the
# template alone; whether to refuse is the caller's choice (a person's typed
# value is taken as meant, a model's is not), so expansion takes the set of
# parameters allowed to start with "-" and refuses the others.


class OptionValueError(TemplateError):
    """A value that starts with ``-`` where the program would read it as an option."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"the value of {name!r} starts with '-', so the program would read it as an"
            " option; refused for a model's call. The tool's declaration can allow it with"
            f" `option: true` on the parameter {name!r}, or by putting `--` before"
            f" {{{name}}} in its template"
        )
        self.name = name


def _check_option(
    name: str, value: Any, first: bool, rest: bool, split: bool, allow: Collection[str] | None
) -> None:
    """Refuse ``value`` if it would start an option word (see :class:`OptionValueError`).

    ``first``: the value's first item starts a word; ``rest``: further array
    items are words of their own (``split``) and start words too.
    """
    if allow is None or name in allow or not (first or rest):
        return
    if split and isinstance(value, list | tuple):
        items = [scalar_text(v) for v in value]
        risky = (items[:1] if first else []) + (items[1:] if rest else [])
    else:
        risky = [as_text(value)] if first else []
    if any(item.startswith("-") for item in risky):
        raise OptionValueError(name)


# -- shell -------------------------------------------------------------------
#
# Quoting a value is only safe if we know the quoting context it lands in:
# the template's literal text is read by mdagent.safety.shell.slots, which
# gives each placeholder its context (bare, '...' or "...") and refuses the
# positions where the shell reads a value again.

_GLUED_NAME = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*\Z")  # text a bare value would lengthen


def _quote(text: str) -> str:
    """``text`` as one literal shell word, quoted even where shlex would leave it
    bare but ``[[ ... ]]`` would read an operator (``-L``, ``==``)."""
    word = shlex.quote(text)
    return f"'{text}'" if word == text and text[:1] in "-=" else word


def _shell_word(value: Any, context: str) -> str:
    from mdagent.safety.shell.slots import DQ, SQ, TOP

    if isinstance(value, list | tuple):
        if context == TOP:
            return " ".join(_quote(scalar_text(v)) for v in value)
        value = as_text(value)  # inside quotes the author asked for one word
    word = _quote(scalar_text(value))
    if context == SQ:  # close the author's '...', add the quoted value, reopen
        return f"'{word}'"
    if context == DQ:
        return f'"{word}"'
    return word


def expand_shell(
    template: str,
    args: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    required: Collection[str] = (),
    allow_options: Collection[str] | None = None,
) -> str:
    """The ``sh -c`` script a ``shell:`` template gives for ``args``.

    Every value is shell-quoted for the context it lands in, so the command
    sees it as one literal word (or, inside the author's quotes, literal
    text within that word). An absent optional value expands to nothing.
    Don't wrap placeholders in your own quotes to protect them: they are
    protected already; quotes around them only join them with the text
    around (``"Hello, {name}!"`` is one word).

    ``allow_options``: ``None`` takes every value as meant (a person's);
    otherwise a value that starts a word with ``-`` — outside the program
    name, ``[[ ... ]]`` and redirections, and with no ``--`` word earlier in
    its command — raises :class:`OptionValueError` unless its parameter is
    in ``allow_options``.
    """
    from mdagent.safety.shell.slots import TOP

    plan = shell_plan(template)
    if allow_options is not None:
        for step in plan:
            if not isinstance(step, str):
                name, context, first, rest, before = step
                value = _lookup(name, args, params, required)
                if value is _ABSENT:
                    continue
                values = (_lookup(b, args, params, required) for b in before)
                first = first and all(v is _ABSENT or as_text(v) == "" for v in values)
                _check_option(name, value, first, rest, context == TOP, allow_options)
    out: list[str] = []
    for step in plan:
        if isinstance(step, str):
            out.append(step)
            continue
        value = _lookup(step[0], args, params, required)
        if value is _ABSENT:
            continue
        word = _shell_word(value, step[1])
        if word[:1] not in ("'", '"') and _GLUED_NAME.search("".join(out)):
            # Right after `$name` a bare value would lengthen the name (`$x`
            # then `a-b` is `$xa-b`: another variable, maybe a secret's); an
            # empty '' ends the name and leaves the value a word of its own.
            word = "''" + word
        out.append(word)
    return "".join(out)


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
    steps = [p if isinstance(p, str) else (p.name, None) for p in parse_template(template)]
    return _fill(steps, args, params, required, _url_part)


def _url_part(value: Any, _context: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(quote(scalar_text(v), safe="") for v in value)
    return quote(scalar_text(value), safe="")


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
        name, context = step[0], step[1]
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
        parts = parse_template(template)
        if len(parts) == 1 and isinstance(parts[0], Slot):
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
