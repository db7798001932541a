"""SKILL.md -> :class:`Skill` plus the problems found on the way.

Strict where a mistake changes behaviour (dispatch keys, names), lenient where
a limit is cosmetic: published skills exceed some of the Agent Skills limits
and must still load, with a warning.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mdagent.errors import ConfigError, Problem
from mdagent.specs import ARG_MODES, Skill
from mdagent.yamlsource import Located, decode, load_yaml, plain, position

NAME_RULE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024

KNOWN_KEYS = {
    "name",
    "description",
    "command-dispatch",
    "command_dispatch",
    "command-tool",
    "command_tool",
    "command-arg-mode",
    "command_arg_mode",
    "user-invocable",
    "disable-model-invocation",
    "argument-hint",
    "allowed-tools",
    "metadata",
    "license",
    "homepage",
}


def name_problem(name: str) -> str | None:
    """Why ``name`` breaks the Agent Skills name rules, or None."""
    if not 1 <= len(name) <= MAX_NAME:
        return f"name {name!r} must be 1-{MAX_NAME} characters"
    if not NAME_RULE.match(name):
        return f"name {name!r} may hold only a-z, 0-9 and single hyphens, not at the start or end"
    return None


def split_front_matter(text: str, path: str) -> tuple[str, str, int]:
    """(front-matter YAML, body, line where the body starts) of a SKILL.md."""
    import frontmatter

    lines = text.splitlines(keepends=True)
    if not lines or not re.match(r"^-{3,}\s*$", lines[0]):
        raise ConfigError("no front-matter: a SKILL.md starts with a '---' line", path, 1, 1)
    for index in range(1, len(lines)):
        if re.match(r"^-{3,}\s*$", lines[index]):
            break
    else:
        raise ConfigError("front-matter never closes: no second '---' line", path, 1, 1)
    # python-frontmatter does the split itself once we know it will succeed.
    handler = frontmatter.default_handlers.YAMLHandler()
    fm, body = handler.split(text)
    return fm, body, index + 2


def _first(meta: dict[str, Any], *keys: str) -> tuple[str | None, Any]:
    for key in keys:
        if key in meta:
            return key, meta[key]
    return None, None


def _requirements(meta: dict[str, Any]) -> dict[str, Any]:
    """``metadata.requires`` / ``metadata.openclaw.requires`` (+ ``openclaw.os``)."""
    metadata = meta.get("metadata")
    if not isinstance(metadata, dict):
        return {}
    found: dict[str, Any] = {}
    for block in (metadata, metadata.get("openclaw")):
        if not isinstance(block, dict):
            continue
        requires = block.get("requires")
        if isinstance(requires, dict):
            for key in ("bins", "anyBins", "env", "os"):
                value = _as_list(requires.get(key))
                if value:
                    found[key] = value
        if _as_list(block.get("os")):
            found.setdefault("os", _as_list(block["os"]))
    return found


def _as_list(value: Any) -> list[str]:
    # `bins: pandoc` means `bins: [pandoc]`: dropping it would leave the skill
    # available on a machine that cannot run it, without a word.
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def load_skill(path: Path, layer: str = "") -> tuple[Skill | None, list[Problem]]:
    """Parse one SKILL.md. Returns the skill (None when it cannot load) and problems."""
    where = str(path)
    problems: list[Problem] = []

    def problem(severity: str, message: str, line: int = 1, col: int = 1) -> None:
        problems.append(Problem(where, line, col, severity, message))

    try:
        raw = path.read_bytes()
        text = decode(raw, where)
        if not text.strip():
            raise ConfigError("empty file: a SKILL.md needs front-matter", where, 1, 1)
        fm_text, _body, _ = split_front_matter(text, where)
        meta = load_yaml(fm_text, where)  # fm_text keeps the newline after "---"
    except ConfigError as err:
        return None, [Problem.from_error(err)]
    except OSError as err:
        return None, [Problem(where, 1, 1, "error", f"cannot read: {err.strerror or err}")]
    if meta is None:
        meta = Located()
    if not isinstance(meta, dict):
        return None, [Problem(where, 2, 1, "error", "front-matter must be a YAML mapping")]

    def at(*pointer: Any) -> tuple[int, int]:
        return position(meta, pointer)

    _check_schema(meta, where, at, problems)
    if any(p.severity == "error" for p in problems):
        return None, problems

    folder = path.parent.name
    name = meta.get("name")
    if name is None:
        name = folder
    name = str(name)
    bad_name = name_problem(name)
    if bad_name:
        problem("error", bad_name, *at("name"))
        return None, problems
    if name != folder:
        problem("warning", f"name {name!r} differs from its folder name {folder!r}", *at("name"))

    description = meta.get("description")
    if not description:
        problem("warning", "no description: the model cannot tell when to use this skill")
        description = ""
    elif len(description) > MAX_DESCRIPTION:
        problem(
            "warning",
            f"description is {len(description)} characters (the Agent Skills limit is {MAX_DESCRIPTION})",
            *at("description"),
        )

    dispatch_key, dispatch = _first(meta, "command-dispatch", "command_dispatch")
    tool_key, tool = _first(meta, "command-tool", "command_tool")
    mode_key, mode = _first(meta, "command-arg-mode", "command_arg_mode")
    if dispatch == "tool" and not tool:
        problem("error", "command-dispatch: tool needs command-tool", *at(dispatch_key))
        return None, problems
    if tool and dispatch != "tool":
        problem("warning", "command-tool is ignored without command-dispatch: tool", *at(tool_key))
    if mode is not None and mode not in ARG_MODES:  # the schema catches this; belt and braces
        problem("error", f"unknown command-arg-mode {mode!r}", *at(mode_key))
        return None, problems

    allowed: list[str] = []
    search_from = at("allowed-tools")
    for entry in split_allowed_tools(meta.get("allowed-tools")):
        where_at = search_from = _text_position(fm_text, entry, search_from)
        try:
            rules = allowed_tool_rules(entry)
        except ConfigError as err:
            problem("warning", f"allowed-tools: {err.message}; ignored", *where_at)
            continue
        if any(_covers_every_command(r) for r in rules):
            problem(
                "warning",
                f"allowed-tools: `{entry}` pre-approves every command for this skill's turn; "
                "name the commands instead, e.g. `Bash(git diff:*)`",
                *where_at,
            )
        allowed += [r for r in rules if r not in allowed]

    extra = {k: plain(v) for k, v in meta.items() if k not in KNOWN_KEYS}
    skill = Skill(
        name=name,
        description=str(description),
        path=where,
        dispatch="tool" if dispatch == "tool" else None,
        tool=str(tool) if dispatch == "tool" else None,
        arg_mode=str(mode or "raw"),
        user_invocable=bool(meta.get("user-invocable", True)),
        disable_model_invocation=bool(meta.get("disable-model-invocation", False)),
        argument_hint=str(meta.get("argument-hint") or ""),
        allowed_tools=allowed,
        requires=_requirements(meta),
        license=None if meta.get("license") is None else str(meta["license"]),
        homepage=None if meta.get("homepage") is None else str(meta["homepage"]),
        extra=extra,
        line=1,
        layer=layer,
    )
    return skill, problems


# Claude Code's tool names (``Bash``, ``Read``...) as the built-in tools they mean.
_TOOL_NAMES = {
    "exec": "exec", "bash": "exec", "sh": "exec", "shell": "exec", "execute": "exec",
    "read_file": "read_file", "read": "read_file", "open": "read_file",
    "write_file": "write_file", "write": "write_file",
    "edit_file": "edit_file", "edit": "edit_file", "multiedit": "edit_file",
    "glob": "glob", "grep": "grep", "fetch": "fetch", "webfetch": "fetch", "skill": "skill",
}  # fmt: skip


def split_allowed_tools(value: Any) -> list[str]:
    """The entries of ``allowed-tools``: a list as is, a string split on blanks and commas.

    Parentheses are kept whole: ``Bash(git diff *) Read`` is two entries.
    """
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    entries: list[str] = []
    current, depth = "", 0
    for ch in str(value):
        if depth == 0 and (ch.isspace() or ch == ","):
            if current:
                entries.append(current)
            current = ""
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        depth = max(depth, 0)
        current += ch
    if current:
        entries.append(current)
    return entries


def allowed_tool_rules(entry: str) -> list[str]:
    """The policy rules one ``allowed-tools`` entry grants; :class:`ConfigError` if none.

    Claude Code's names become mdagent's (``Read(src/**)`` ->
    ``read_file(src/**)``), and its prefix form ``Bash(git diff:*)`` becomes
    ``exec(git diff)`` plus ``exec(git diff *)``: the command alone or with
    arguments, never anything else.
    """
    from mdagent.policy import Rule

    match = re.fullmatch(r"([^()\s]+)(?:\((.*)\))?", entry.strip(), re.S)
    if not match:
        raise ConfigError(f"`{entry}` is not a tool name or `Tool(pattern)`")
    name = _TOOL_NAMES.get(match.group(1).lower(), match.group(1))
    pattern = match.group(2)
    if pattern is None:
        rules = [name]
    else:
        pattern = pattern.strip()
        if name == "exec" and pattern.endswith(":*"):
            prefix = pattern[:-2].rstrip()
            rules = [f"exec({prefix})", f"exec({prefix} *)"] if prefix else ["exec(*)"]
        else:
            rules = [f"{name}({pattern})"]
    for rule in rules:
        Rule.parse(rule, "allowed-tools")
    return rules


def _text_position(text: str, entry: str, start: tuple[int, int]) -> tuple[int, int]:
    """(line, col) of ``entry`` in ``text`` at or after ``start``; ``start`` if not found.

    The YAML loader locates keys, not the items of a list or the words of a
    string, and a warning belongs at the entry it is about.
    """
    lines = text.splitlines()
    line, col = start
    for number in range(line, len(lines) + 1):
        found = lines[number - 1].find(entry, col - 1 if number == line else 0)
        if found >= 0:
            return number, found + 1
    return start


def _covers_every_command(rule: str) -> bool:
    """Whether an allow rule lets every ``exec`` command run (``exec``, ``exec(*)``)."""
    match = re.fullmatch(r"exec(?:\((.*)\))?", rule, re.S)
    return bool(match) and (match.group(1) is None or not match.group(1).strip("* "))


def _check_schema(meta: dict[str, Any], where: str, at, problems: list[Problem]) -> None:
    from mdagent.schemas import validator

    for err in validator("skill").iter_errors(plain(meta)):
        key = ".".join(str(p) for p in err.absolute_path) or "front-matter"
        problems.append(Problem(where, *at(*err.absolute_path), "error", f"{key}: {err.message}"))


def read_body(path: str | Path) -> str:
    """The Markdown body of a SKILL.md (what the model or a prompt turn reads)."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    try:
        _, body, _ = split_front_matter(text, str(path))
    except ConfigError:
        return text
    return body.strip("\n") + "\n"


def substitute(body: str, arguments: str, skill_dir: str) -> str:
    """A prompt skill's body with ``$ARGUMENTS``, ``$N`` and ``${SKILL_DIR}`` filled in.

    With no ``$ARGUMENTS`` in the body, ``ARGUMENTS: <args>`` is appended.
    """
    import shlex

    try:
        words = shlex.split(arguments)
    except ValueError:
        words = arguments.split()
    uses_arguments = "$ARGUMENTS" in body

    def word(match: re.Match[str]) -> str:
        index = int(match.group(1) or match.group(2))
        return words[index] if index < len(words) else ""

    text = body.replace("${SKILL_DIR}", skill_dir).replace("{baseDir}", skill_dir)
    text = re.sub(r"\$ARGUMENTS\[(\d+)\]|\$(\d+)(?!\d)", word, text)
    text = text.replace("$ARGUMENTS", arguments)
    if not uses_arguments and arguments:
        text = text.rstrip("\n") + f"\n\nARGUMENTS: {arguments}\n"
    return text
