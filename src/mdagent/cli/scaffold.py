"""The declarations ``agent new`` writes, and how they are added.

``agent new skill`` writes a whole new SKILL.md (:func:`skill_skeleton`).
For ``agent new tool`` and ``agent new command`` an entry is appended to a
YAML file as text — under the file's ``tools:`` (or ``commands:``) mapping,
or as a new such section at the end — so what the file held before stays
byte for byte, comments included. Every edit is checked by parsing the
result: the old declarations plus the new entry, nothing else; a layout
where no such edit is possible (``tools: {…}`` in flow style) is refused
with the entry to add by hand.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mdagent.core.errors import ConfigError, UsageError
from mdagent.declarations.edit import (
    is_empty_scalar,
    last_line,
    locked_file,
    replace_file,
    value_of,
)

#: The declarations schema's name rule (``$defs/name``).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
#: Characters that make a ``--run`` command need ``sh -c`` (operators,
#: expansions, globs, quoting the shell would read differently).
SHELL_CHARS = frozenset("|&;<>()$`*?[]~!#\\\n")


@dataclass(frozen=True)
class Entry:
    """One declaration: its name, its data (as YAML would load it) and its text at indent 0."""

    section: str  # "tools" or "commands"
    name: str
    data: dict[str, Any]
    text: str


@dataclass(frozen=True)
class Added:
    """Where an entry went: the file, its first and last line (1-based), the text before."""

    path: Path
    first: int
    last: int
    before: str | None  # None: the file did not exist
    after: str


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a declared tool or command, or None."""
    if not NAME.fullmatch(name):
        return (
            f"name {name!r} must be 1-64 letters, digits, '-' or '_', starting with a letter "
            "or digit"
        )
    return None


def tool_entry(name: str, run: str) -> Entry:
    """A tool that runs ``run``: a required string parameter per ``{placeholder}``.

    A plain command becomes ``run: [argv]`` (never a shell); one with shell
    syntax (a pipe, a redirection, ``$``, a glob) becomes ``shell:``, where
    each value is quoted for where it stands. ``agent check`` judges the
    template (a placeholder where a shell would run it as code is refused).
    """
    from mdagent.declarations.placeholders import TemplateError, placeholders

    command = run.strip()
    if not command:
        raise UsageError("--run needs a command, e.g. --run 'wc -l {path}'")
    try:
        names = sorted(placeholders(command), key=lambda n: command.index(f"{{{n}}}"))
    except (TemplateError, ValueError) as exc:
        raise UsageError(f"--run: {exc}") from None
    words = _argv(command)
    data: dict[str, Any] = {"description": f"Runs {command} (say what it does and when to use it)"}
    lines = [f"{_key(name)}:", f"  description: {_scalar(data['description'])}"]
    if names:
        data["params"] = {n: {"type": "string", "description": n} for n in names}
        data["required"] = list(names)
        lines.append("  params:")
        lines += [f"    {_key(n)}: {{type: string, description: {_scalar(n)}}}" for n in names]
        lines.append(f"  required: [{', '.join(_scalar(n) for n in names)}]")
    if words is None:
        data["shell"] = command
        lines.append(f"  shell: {_scalar(command)}     # sh -c; each value quoted where it stands")
    else:
        data["run"] = words
        lines.append(f"  run: [{', '.join(_scalar(w) for w in words)}]     # argv, never a shell")
    return Entry("tools", name, data, "\n".join(lines) + "\n")


def command_entry(name: str, tool: str, arg_mode: str) -> Entry:
    """A command ``/name`` that runs ``tool`` with its words read the ``arg_mode`` way."""
    data = {"description": f"Runs the {tool} tool", "tool": tool, "arg-mode": arg_mode}
    text = (
        f"{_key(name)}:\n"
        f"  description: {_scalar(data['description'])}\n"
        f"  tool: {_scalar(tool)}\n"
        f"  arg-mode: {arg_mode}\n"
    )
    return Entry("commands", name, data, text)


def run_template(run: str) -> str:
    """The ``command-with`` template for ``agent new skill --run COMMAND``.

    The command is kept as written (braces escaped) and the typed words
    follow it, each quoted on its own; a command the template checks refuse
    (a word where the shell reads code) is a usage error, before anything
    is written.
    """
    from mdagent.declarations.placeholders import TemplateError, check_shell

    if not run.strip():
        raise UsageError("--run needs a command, e.g. --run 'du -sh'")
    template = run.strip().replace("{", "{{").replace("}", "}}") + " {ARGUMENTS}"
    try:
        check_shell(template)
    except TemplateError as exc:
        raise UsageError(f"--run: {exc}") from None
    return template


def _example_test(tool: str, arg_mode: str) -> str:
    """One example test for a new command skill: a real one where its outcome is known."""
    if tool in ("exec", "bash", "sh", "shell", "execute") and arg_mode == "raw":
        return (
            "tests:                 # `agent test` runs these in a copy of the workspace\n"
            "  - name: echoes\n"
            "    approve: true\n"
            "    argv: echo hello\n"
            "    expect: {ok: true, contains: hello}\n"
        )
    return (
        "# `agent test` runs these; an example to adapt:\n"
        "# tests:\n"
        "#   - {name: works, approve: true, argv: 'ARGS', expect: {ok: true}}\n"
    )


def skill_skeleton(name: str, tool: str | None, arg_mode: str, run: str | None = None) -> str:
    """The text of a new SKILL.md."""
    if run is not None:
        template = run_template(run)
        return (
            f"---\nname: {name}\n"
            f"description: Describe what /{name} does and when to use it\n"
            f"command-dispatch: tool\ncommand-tool: exec\n"
            f"command-with: {{command: {json.dumps(template)}}}\n"
            f"argument-hint: '[args...]'\n"
            "# `agent test` runs these; an example to adapt:\n"
            "# tests:\n"
            "#   - {name: runs, approve: true, argv: 'ARGS', expect: {ok: true}}\n"
            "---\n"
            f"`agent /{name} ARGS` runs `{run.strip()}` with ARGS, each one quoted.\n"
        )
    if tool:
        return (
            f"---\nname: {name}\n"
            f"description: Describe what /{name} does and when to use it\n"
            f"command-dispatch: tool\ncommand-tool: {tool}\ncommand-arg-mode: {arg_mode}\n"
            + _example_test(tool, arg_mode)
            + "---\n"
            f"`agent /{name} ARGS` runs the `{tool}` tool with ARGS ({arg_mode} arguments).\n"
        )
    return (
        f"---\nname: {name}\n"
        f"description: Describe what this skill does and when a model should use it\n"
        f"argument-hint: <what to pass>\n"
        "tests:                 # `agent test` runs the turn against this scripted model\n"
        "  - argv: an example\n"
        "    model: {script: [Done.]}\n"
        "    expect: {contains: Done., prompt_contains: an example}\n"
        "---\n"
        f"# {name}\n\nInstructions for the model go here.\n\nThe user asked for: $ARGUMENTS\n"
    )


def add_entry(path: str | Path, entry: Entry) -> Added:
    """Append ``entry`` to the declarations file ``path`` (created when missing).

    :class:`UsageError` when the file already declares the name;
    :class:`ConfigError` when the file cannot be read as declarations or
    its layout allows no textual edit. Concurrent writers are serialised
    with a lock on the file.
    """
    target = Path(path)
    existed = target.exists()
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        return _add(target, entry, existed)
    except Exception:
        if not existed and target.exists() and not target.stat().st_size:
            target.unlink()  # the lock created it: leave no empty file behind
        raise


def _add(target: Path, entry: Entry, existed: bool) -> Added:
    with locked_file(target) as handle:
        try:
            text = handle.read()
        except UnicodeDecodeError:
            raise ConfigError("cannot add to it: the file is not UTF-8 text", str(target)) from None
        before = _load(text, target)
        section = before.get(entry.section)
        if section is not None and not isinstance(section, dict):
            raise ConfigError(f"`{entry.section}:` is not a mapping", str(target))
        if section and entry.name in section:
            raise UsageError(f"{target} already declares {entry.section[:-1]} {entry.name!r}")
        expected = {**before, entry.section: {**(section or {}), entry.name: entry.data}}
        edit = _appended(text, entry)
        if edit is None or _load(edit[0], target, strict=False) != expected:
            raise ConfigError(
                f"cannot add {entry.section[:-1]} {entry.name!r} as text to this layout; "
                f"add it under `{entry.section}:` by hand:\n{entry.text}",
                str(target),
            )
        new_text, first, last = edit
        replace_file(target, new_text)
    return Added(target, first, last, text if existed else None, new_text)


def undo(added: Added) -> bool:
    """Put the file back as it was before ``added``, if nobody changed it since.

    Returns False (and leaves the file) when it no longer holds what was written.
    """
    with locked_file(added.path) as handle:
        if handle.read() != added.after:
            return False
        if added.before is None:
            added.path.unlink()
        else:
            replace_file(added.path, added.before)
    return True


def _argv(command: str) -> list[str] | None:
    """``command`` as argv words, or None when it needs a shell to mean what it says."""
    if any(char in SHELL_CHARS for char in command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:  # an unclosed quote: let the shell (and `agent check`) say so
        return None
    if not words or "=" in words[0]:  # `NAME=value cmd`: an assignment only a shell makes
        return None
    return words


def _load(text: str, target: Path, *, strict: bool = True) -> Any:
    """``text`` as plain data the way the registry reads it; {} when empty."""
    from mdagent.core.yamlsource import load_yaml, plain

    try:
        data = plain(load_yaml(text, target)) if text.strip() else {}
    except ConfigError as exc:
        if not strict:
            return None
        raise ConfigError(
            f"cannot add to it: {exc.message}", str(target), exc.line, exc.col
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        if not strict:
            return None
        raise ConfigError("cannot add to it: the file is not a mapping", str(target))
    return data


def _appended(text: str, entry: Entry) -> tuple[str, int, int] | None:
    """``text`` with ``entry`` added, and the entry's first and last line; None: no such edit."""
    import yaml

    newline = "\r\n" if "\r\n" in text else "\n"
    if text and not text.endswith("\n"):
        text += newline
    try:
        root = yaml.compose(text) if text.strip() else None
    except yaml.YAMLError:
        return None
    lines = text.splitlines(keepends=True)
    if root is None or (isinstance(root, yaml.MappingNode) and not root.flow_style):
        found = value_of(root, entry.section) if root is not None else None
        if found is None:  # a new section at the end
            column = root.value[0][0].start_mark.column if root is not None and root.value else 0
            block = f"{' ' * column}{entry.section}:\n" + _indented(entry.text, column + 2)
            return _spliced(lines, len(lines), block, newline, skip=1)
        key, value = found
        if is_empty_scalar(value):  # `tools:` with nothing under it yet
            block = _indented(entry.text, key.start_mark.column + 2)
            return _spliced(lines, key.start_mark.line + 1, block, newline)
        if isinstance(value, yaml.MappingNode) and not value.flow_style and value.value:
            column = value.value[0][0].start_mark.column
            block = _indented(entry.text, column)
            return _spliced(lines, last_line(value) + 1, block, newline)
    return None


def _spliced(
    lines: list[str], at: int, block: str, newline: str, skip: int = 0
) -> tuple[str, int, int]:
    """``block`` inserted before line ``at`` (0-based); the block's lines after ``skip``."""
    new = block.replace("\n", newline)
    count = block.count("\n")
    text = "".join(lines[:at]) + new + "".join(lines[at:])
    return text, at + 1 + skip, at + count


def _indented(text: str, column: int) -> str:
    pad = " " * column
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))


def _key(name: str) -> str:
    """``name`` as a key: bare unless YAML would read it as something else (``on``, ``1``)."""
    return name if _reads_as_text(name) else json.dumps(name)


def _scalar(value: str) -> str:
    """``value`` as a YAML scalar in a flow context: bare when that reads back the same."""
    if (
        _reads_as_text(value)
        and not any(c in value for c in ",[]{}#:'\"")
        and value == value.strip()
    ):
        return value
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def _reads_as_text(value: str) -> bool:
    import yaml

    try:
        return yaml.safe_load(value) == value
    except yaml.YAMLError:
        return False
