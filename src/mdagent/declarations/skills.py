"""SKILL.md -> :class:`Skill` plus the problems found on the way.

Strict where a mistake changes behaviour (dispatch keys, names), lenient where
the Agent Skills client guide and OpenClaw are: published skills exceed some
of the spec's limits, write ``"true"`` for true, leave a ``: `` unquoted in a
one-line description or give ``metadata`` as a JSON string, and must still
load, with a warning where the author can do better.

One broken part never costs the whole skill: when only what ``/name`` runs
is wrong (``command-tool`` missing or unknown, a bad ``command-arg-mode`` or
``command-with``), the skill still loads for the model, ``agent check``
reports the error and ``/name`` is refused with it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from mdagent.core.errors import ConfigError, Problem
from mdagent.core.names import did_you_mean
from mdagent.core.specs import ARG_MODES, Skill
from mdagent.core.yamlsource import (
    Located,
    decode,
    load_yaml,
    plain,
    position,
    read_capped,
)

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

NAME_RULE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
#: The largest SKILL.md read, and the largest front-matter in it.
MAX_SKILL_BYTES = 1 << 20
MAX_FRONT_MATTER = 64 << 10

# What ``/name`` runs: a mistake here refuses the command, never the skill.
COMMAND_KEYS = frozenset(
    {
        "command-dispatch",
        "command_dispatch",
        "command-tool",
        "command_tool",
        "command-arg-mode",
        "command_arg_mode",
        "command-with",
        "command_with",
        # Declared tests (`agent test`): a malformed one refuses /name, at its line.
        "tests",
    }
)
KNOWN_KEYS = frozenset(
    {
        *COMMAND_KEYS,
        "name",
        "description",
        "user-invocable",
        "disable-model-invocation",
        "argument-hint",
        "arguments",
        "allowed-tools",
        "metadata",
        "license",
        "homepage",
        "compatibility",
        # What a prompt turn runs with (mdagent.agent.promptskills).
        "model",
        "max_steps",
        "context",
        "disallowed-tools",
    }
)
# Read as YAML reads true/false, also when they come quoted (as OpenClaw does).
#: Keys whose wrong value is a warning, the skill loading without them (the Agent
#: Skills client guide: don't block a skill on them).
LENIENT_KEYS = frozenset({"allowed-tools", "disallowed-tools"})
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_BOOLEAN_WORDS = _TRUE | _FALSE
_BOOLEAN_KEYS = ("user-invocable", "disable-model-invocation")
_ENUM_KEYS = (
    "command-dispatch",
    "command_dispatch",
    "command-arg-mode",
    "command_arg_mode",
    "context",
)


def name_problem(name: str) -> str | None:
    """Why ``name`` breaks the Agent Skills name rules, or None.

    A name over :data:`MAX_NAME` characters is a problem here (``agent new
    skill`` refuses it); a SKILL.md that has one still loads, with a warning.
    """
    if not 1 <= len(name) <= MAX_NAME:
        return f"name {name!r} must be 1-{MAX_NAME} characters"
    return _character_problem(name)


def _character_problem(name: str) -> str | None:
    if not NAME_RULE.match(name):
        return f"name {name!r} may hold only a-z, 0-9 and single hyphens, not at the start or end"
    return None


def normalise_text(text: str) -> str:
    """``text`` without a byte-order mark and with ``\\n`` line ends (CRLF and CR files load too)."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


# A line of three or more dashes, as python-frontmatter and the Agent Skills
# clients find it (`\s*$` in MULTILINE mode also takes blank lines after it).
#: A prompt skill's live context in its body: ``!`cmd` `` runs ``cmd`` before the
#: model sees the prompt (:mod:`mdagent.agent.promptskills` runs it).
LIVE_CONTEXT = re.compile(r"!`([^`\n]+)`")


def live_commands(body: str) -> list[str]:
    """The commands of a body's live context, in order (``!`git diff` `` gives ``git diff``)."""
    return LIVE_CONTEXT.findall(body) if "!`" in body else []


# Exactly three dashes (**Changed**: four or more were taken too), as both Agent
# Skills references (skills-ref and the client guide) read a boundary.
_BOUNDARY = re.compile(r"^---\s*$", re.MULTILINE)


def split_front_matter(text: str, path: str) -> tuple[str, str, int]:
    """(front-matter YAML, body, line where the body starts) of a SKILL.md."""
    text = normalise_text(text)
    boundaries = _BOUNDARY.finditer(text)  # what python-frontmatter's split(text, 2) splits at
    opening = next(boundaries, None)
    if not text or opening is None or opening.start() != 0:
        first = text.split("\n", 1)[0].rstrip()
        if len(first) > 3 and not first.strip("-"):
            raise ConfigError(
                f"front-matter opens with {first!r}: its boundaries are exactly '---' lines",
                path,
                1,
                1,
            )
        raise ConfigError("no front-matter: a SKILL.md starts with a '---' line", path, 1, 1)
    closing = next(boundaries, None)
    if closing is None:
        raise ConfigError("front-matter never closes: no second '---' line", path, 1, 1)
    body_line = text.count("\n", 0, closing.start()) + 2
    return text[opening.end() : closing.start()], text[closing.end() :], body_line


# A top-level `key: value` line whose one-line value YAML may refuse.
_ONE_LINE = re.compile(r"^([A-Za-z0-9_-]+):[ \t]+([^\s\"'|>&*!{#].*?)[ \t]*$")


def _load_front_matter(fm_text: str, where: str, problems: list[Problem]) -> Any:
    """The front-matter as data, with the fallback of the client guide and OpenClaw.

    Skills written for other clients carry one-line values YAML refuses,
    most often a description with an unquoted ``: `` in it. When the line
    YAML stops at is such a ``key: value`` line, its value is read as text
    (as if quoted) and parsing resumes, with a warning at that line.
    """
    try:
        return load_yaml(fm_text, where)
    except ConfigError as first:
        error = first
        lines = fm_text.split("\n")
        fixed: list[Problem] = []
        for _ in range(20):  # each round fixes one line; more means the file is broken
            index = (error.line or 1) - 1
            match = _ONE_LINE.match(lines[index]) if 0 <= index < len(lines) else None
            if match is None or "duplicate key" in error.message or "tab" in error.message:
                raise first from None
            key, value = match.groups()
            lines[index] = f"{key}: '{value.replace(chr(39), chr(39) * 2)}'"
            why = "an unquoted ': ' in it" if ": " in value else "text YAML cannot read"
            fixed.append(
                Problem(
                    where,
                    index + 1,
                    len(key) + 3,
                    "warning",
                    f"{key}: the value has {why}; read as text (put it in quotes to say so)",
                )
            )
            try:
                data = load_yaml("\n".join(lines), where)
            except ConfigError as again:
                error = again
                continue
            problems.extend(fixed)
            return data
        raise first from None


def _first(meta: dict[str, Any], *keys: str) -> tuple[str | None, Any]:
    for key in keys:
        if key in meta:
            return key, meta[key]
    return None, None


def _as_list(value: Any) -> list[str]:
    """A requirement list: ``bins: pandoc`` and OpenClaw's ``bins: "git, gh"`` too.

    Dropping a string would leave the skill available on a machine that
    cannot run it, without a word.
    """
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return []


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in _TRUE)


def gating(metadata: Any) -> tuple[dict[str, Any], bool]:
    """``(requires, always)`` from ``metadata`` as OpenClaw reads it.

    Requirements come from ``metadata.requires`` and from
    ``metadata.openclaw`` (or the legacy ``metadata.clawdbot`` when there is
    no ``openclaw`` block): ``requires.bins`` / ``anyBins`` / ``env`` /
    ``config`` (lists, or comma-separated strings) and ``os``. ``always:
    true`` drops every requirement but ``os``.
    """
    if not isinstance(metadata, dict):
        return {}, False
    vendor = metadata.get("openclaw")
    if vendor is None:
        vendor = metadata.get("clawdbot")
    found: dict[str, Any] = {}
    always = False
    for block in (metadata, vendor):
        if not isinstance(block, dict):
            continue
        always = always or _truthy(block.get("always"))
        requires = block.get("requires")
        if isinstance(requires, dict):
            for key in ("bins", "anyBins", "env", "config", "os"):
                value = requires.get(key)
                if value is not None and (value := _as_list(value)):
                    found[key] = value
        if _as_list(block.get("os")):
            found.setdefault("os", _as_list(block["os"]))
    if always:
        found = {k: v for k, v in found.items() if k == "os"}
    return found, always


def _metadata(meta: dict[str, Any], where: str, at, problems: list[Problem]) -> dict[str, Any]:
    """``metadata`` as a mapping: OpenClaw's JSON string parsed, a type slip ignored."""
    value = meta.get("metadata")
    if value is None:
        return {}
    if isinstance(value, str) and value.strip():
        try:
            value = json.loads(value)
        except ValueError:
            try:  # JSON5 as OpenClaw writes it (trailing commas): YAML reads it
                value = load_yaml(value, where)
            except ConfigError:
                value = None
    if isinstance(value, dict):
        return plain(value)
    problems.append(
        Problem(
            where,
            *at("metadata"),
            "warning",
            "metadata: expected a mapping (or a JSON object in a string); ignored",
        )
    )
    return {}


def _text_field(
    meta: dict[str, Any], key: str, where: str, at, problems: list[Problem], limit: int = 0
) -> str | None:
    """A free-text key (``license``, ``homepage``, ``compatibility``): a type slip
    or an overlong value warns and loads as text."""
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        problems.append(
            Problem(where, *at(key), "warning", f"{key}: expected text; {value!r} read as text")
        )
        value = plain(value)
        value = (
            json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value)
        )
    if limit and len(value) > limit:
        problems.append(
            Problem(
                where,
                *at(key),
                "warning",
                f"{key} is {len(value)} characters (the Agent Skills limit is {limit})",
            )
        )
    return value


def _lenient_types(meta: dict[str, Any]) -> None:
    """Read ``"true"``/``"no"`` as booleans and ``Tool``/``RAW`` as ``tool``/``raw``, in place."""
    for key in _BOOLEAN_KEYS:
        value = meta.get(key)
        if isinstance(value, str) and value.strip().lower() in _BOOLEAN_WORDS:
            meta[key] = value.strip().lower() in _TRUE
    for key in _ENUM_KEYS:
        if isinstance(meta.get(key), str):
            meta[key] = meta[key].strip().lower()
    hint = meta.get("argument-hint")
    if isinstance(hint, list):  # `argument-hint: [file]` is a YAML list
        meta["argument-hint"] = "[" + ", ".join(str(v) for v in plain(hint)) + "]"
    elif hint is not None and not isinstance(hint, str):
        meta["argument-hint"] = str(plain(hint))


def argument_names(value: Any) -> list[str]:
    """The names of ``arguments:`` (a space-separated string or a list), in order.

    A list entry is a name or ``{name, description, default}``.
    """
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [str(v.get("name")) if isinstance(v, dict) else str(v) for v in value]
    return []


def argument_details(value: Any) -> tuple[dict[str, str], dict[str, str]]:
    """``(defaults, descriptions)`` of the ``{name, description, default}`` entries of ``arguments:``."""
    defaults: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    for entry in value if isinstance(value, list) else []:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("name"))
        if entry.get("default") is not None:
            default = plain(entry["default"])
            defaults[name] = default if isinstance(default, str) else json.dumps(default)
        if entry.get("description"):
            descriptions[name] = str(entry["description"])
    return defaults, descriptions


def generated_hint(names: list[str], defaults: dict[str, str]) -> str:
    """The ``argument-hint`` of a skill that declares ``arguments:`` but no hint:
    ``<name>`` for one a person must give, ``[name]`` for one with a default."""
    return " ".join(f"[{n}]" if n in defaults else f"<{n}>" for n in names)


def skill_model(value: Any) -> Any:
    """``model:`` as a provider override: None (``inherit`` or absent), or a mapping.

    A name is ``{"model": name}``; a mapping keeps ``provider``, ``base_url``
    and its ``name`` as ``model`` (the keys of :class:`ProviderConfig`).
    """
    if isinstance(value, str):
        value = value.strip()
        return None if value.lower() in ("", "inherit") else {"model": value}
    if isinstance(value, dict):
        out = {k: str(value[k]) for k in ("provider", "base_url") if value.get(k)}
        if value.get("name"):
            out["model"] = str(value["name"])
        return out or None
    return None


def load_skill(path: Path | str, layer: str = "") -> tuple[Skill | None, list[Problem]]:  # noqa: C901
    """Parse one SKILL.md. Returns the skill (None when it cannot load) and problems.

    A skill whose only errors are in its command part loads, with
    ``command_error`` saying why ``/name`` is refused.
    """
    where = str(path)
    problems: list[Problem] = []

    def problem(severity: str, message: str, line: int = 1, col: int = 1) -> None:
        problems.append(Problem(where, line, col, severity, message))

    try:
        text = decode(read_capped(where, MAX_SKILL_BYTES, "a SKILL.md"), where)
        if not text.strip():
            raise ConfigError("empty file: a SKILL.md needs front-matter", where, 1, 1)
        fm_text, body, _ = split_front_matter(text, where)
        if len(fm_text.encode()) > MAX_FRONT_MATTER:
            raise ConfigError(
                f"front-matter too large: {len(fm_text.encode()) >> 10} KiB"
                f" (at most {MAX_FRONT_MATTER >> 10} KiB; long text belongs in the body)",
                where,
                2,
                1,
            )
        meta = _load_front_matter(fm_text, where, problems)  # keeps the newline after "---"
    except ConfigError as err:
        return None, [*problems, Problem.from_error(err)]
    except OSError as err:
        return None, [Problem(where, 1, 1, "error", f"cannot read: {err.strerror or err}")]
    if meta is None:
        meta = Located()
    if not isinstance(meta, dict):
        return None, [
            *problems,
            Problem(where, 2, 1, "error", "front-matter must be a YAML mapping"),
        ]

    def at(*pointer: Any) -> tuple[int, int]:
        return position(meta, pointer)

    _lenient_types(meta)
    metadata = _metadata(meta, where, at, problems)
    license_ = _text_field(meta, "license", where, at, problems)
    homepage = _text_field(meta, "homepage", where, at, problems)
    compatibility = _text_field(meta, "compatibility", where, at, problems, MAX_COMPATIBILITY)
    command_problems = _check_schema(meta, where, at, problems)
    if any(p.severity == "error" for p in problems):
        return None, problems
    for key in meta:
        if key not in KNOWN_KEYS and (hint := did_you_mean(key, KNOWN_KEYS)):
            problem("warning", f"unknown key {key!r}{hint}; ignored", *at(key))

    folder = os.path.basename(os.path.dirname(where))
    name = meta.get("name")
    if name is None:
        name = folder
        problem("info", f"no name: loaded as {name!r}, the folder's name")
    name = str(name)
    bad_name = _character_problem(name)
    if bad_name:
        problem("error", bad_name, *at("name"))
        return None, problems
    if len(name) > MAX_NAME:
        problem(
            "warning",
            f"name is {len(name)} characters (the Agent Skills limit is {MAX_NAME})",
            *at("name"),
        )
    if name != folder and "name" in meta:
        problem("warning", f"name {name!r} differs from its folder name {folder!r}", *at("name"))

    description = meta.get("description")
    if not description:
        # The client guide: skip a skill with no description, with a warning (**Changed**).
        problem(
            "warning",
            f"no description: skill {name!r} is not loaded (the model could not tell when to "
            "use it); add `description:` to its front-matter",
        )
        return None, problems
    elif len(description) > MAX_DESCRIPTION:
        problem(
            "warning",
            f"description is {len(description)} characters (the Agent Skills limit is {MAX_DESCRIPTION})",
            *at("description"),
        )

    command = _command_part(meta, name, where, at, problems, command_problems)

    allowed: list[str] = []
    search_from = at("allowed-tools") if "allowed-tools" in meta else (1, 1)
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

    requires, _always = gating(metadata)
    if requires.get("config"):
        problem(
            "info",
            f"requires.config ({', '.join(requires['config'])}) names OpenClaw settings mdagent "
            "cannot check, so the skill is unavailable (metadata.openclaw.always: true loads it)",
            *at("metadata"),
        )

    extra = {k: plain(v) for k, v in meta.items() if k not in KNOWN_KEYS}
    names = argument_names(meta.get("arguments"))
    defaults, argument_help = argument_details(plain(meta.get("arguments")))
    hint = str(meta.get("argument-hint") or "")
    if not hint and names and command.get("dispatch") != "tool":
        hint = generated_hint(names, defaults)
    skill = Skill(
        name=name,
        description=str(description),
        path=where,
        user_invocable=bool(meta.get("user-invocable", True)),
        disable_model_invocation=bool(meta.get("disable-model-invocation", False)),
        argument_hint=hint,
        allowed_tools=allowed,
        requires=requires,
        license=license_,
        homepage=homepage,
        extra=extra,
        line=1,
        layer=layer,
        metadata=metadata,
        compatibility=compatibility,
        arguments=names,
        model=skill_model(plain(meta.get("model"))),
        max_steps=meta.get("max_steps"),
        context=str(meta.get("context") or ""),
        disallowed_tools=split_allowed_tools(meta.get("disallowed-tools")),
        argument_defaults=defaults,
        argument_help=argument_help,
        live_context=[] if command.get("dispatch") == "tool" else live_commands(body),
        **command,
    )
    problems.sort(key=lambda p: (p.line, p.col))  # in the order the author reads the file
    return skill, problems


def _command_part(
    meta: dict[str, Any],
    name: str,
    where: str,
    at,
    problems: list[Problem],
    schema_problems: list[Problem],
) -> dict[str, Any]:
    """The Skill fields of what ``/name`` runs; an error here refuses the command only.

    Each error message starts with ``/name:``, so a ``/name`` attempt can
    say why it is refused.
    """
    dispatch_key, dispatch = _first(meta, "command-dispatch", "command_dispatch")
    tool_key, tool = _first(meta, "command-tool", "command_tool")
    mode_key, mode = _first(meta, "command-arg-mode", "command_arg_mode")
    with_key, with_ = _first(meta, "command-with", "command_with")
    errors = [Problem(*p[:4], refused(name, p.message)) for p in schema_problems]
    if dispatch == "tool" and not tool and tool_key is None:
        errors.append(
            Problem(
                where,
                *at(dispatch_key),
                "error",
                refused(name, f"command-dispatch: tool needs command-tool, the tool /{name} runs"),
            )
        )
    if tool is not None and dispatch_key is None:
        problems.append(
            Problem(
                where,
                *at(tool_key),
                "warning",
                "command-tool is ignored without command-dispatch: tool",
            )
        )
    if with_ is not None and dispatch_key is None:
        problems.append(
            Problem(
                where,
                *at(with_key),
                "warning",
                "command-with is ignored without command-dispatch: tool",
            )
        )
    elif with_ is not None and dispatch == "tool" and mode not in (None, "raw"):
        problems.append(
            Problem(
                where,
                *at(mode_key),
                "warning",
                "command-arg-mode is ignored with command-with: the typed words fill its templates",
            )
        )
    errors.sort(key=lambda p: (p.line, p.col))
    problems.extend(errors)
    lines = {k: at(k)[0] for k in meta if k in COMMAND_KEYS}
    if isinstance(with_, dict):
        lines.update({f"command-with.{k}": at(with_key, k)[0] for k in with_})
    if dispatch != "tool":
        return {"lines": lines, "command_error": errors[0].message if errors else ""}
    return {
        "dispatch": "tool",
        "tool": str(tool) if isinstance(tool, str) and tool else None,
        "arg_mode": str(mode) if mode in ARG_MODES else "raw",
        "command_with": plain(with_) if isinstance(with_, dict) else None,
        "command_error": errors[0].message if errors else "",
        "lines": lines,
    }


def refused(name: str, message: str) -> str:
    """A command-part error: why ``/name`` is refused while the skill still loads."""
    return f"/{name}: {message}; the skill still loads for the model, /{name} is refused"


# Claude Code's tool names (``Bash``, ``Read``...) as the built-in tools they mean.
TOOL_NAMES = {
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
    from mdagent.safety.rules import Rule

    match = re.fullmatch(r"([^()\s]+)(?:\((.*)\))?", entry.strip(), re.S)
    if not match:
        raise ConfigError(f"`{entry}` is not a tool name or `Tool(pattern)`")
    name = TOOL_NAMES.get(match.group(1).lower(), match.group(1))
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


def _check_schema(meta: dict[str, Any], where: str, at, problems: list[Problem]) -> list[Problem]:
    """Schema errors: the command part's are returned, the others added to ``problems``."""
    from mdagent.declarations.schemas import check as schema_check

    data = plain(meta)
    check = schema_check("skill")
    if check is not None and check(data):
        return []  # plainly valid: jsonschema only runs to explain a problem
    from mdagent.declarations.declarations import _message as schema_message
    from mdagent.declarations.schemas import validator

    command: list[Problem] = []
    for err in validator("skill").iter_errors(data):
        key = ".".join(str(p) for p in err.absolute_path) or "front-matter"
        top = err.absolute_path[0] if err.absolute_path else None
        if top in LENIENT_KEYS:
            # The client guide: don't block loading on it; warn, and go without it.
            if top in meta:
                line_col = at(top)
                meta.pop(top)
                message = f"{key}: {schema_message(err)}; ignored, the skill loads without it"
                problems.append(Problem(where, *line_col, "warning", message))
            continue
        found = Problem(where, *at(*err.absolute_path), "error", f"{key}: {schema_message(err)}")
        is_command = bool(err.absolute_path) and err.absolute_path[0] in COMMAND_KEYS
        (command if is_command else problems).append(found)
    return command


def model_refusal(skill: Skill) -> str | None:
    """Why the model may not load ``skill`` here, or None when it may.

    The same test decides what the ``skill`` tool returns and which skill
    folders the read-only file tools may read outside the workspace.
    """
    from mdagent.core.specs import unmet_requirement

    if skill.disable_model_invocation:
        return "it is for a person to run only (disable-model-invocation: true)"
    reason = unmet_requirement(skill.requires)
    return f"it is unavailable here: {reason}" if reason else None


def skill_read_roots(ctx: Any, path: str | os.PathLike[str], root: Path) -> tuple[Path, ...]:
    """The skill folders that admit ``path`` for reading, beyond the workspace ``root``.

    For the read-only tools (``read_file``, ``glob``, ``grep``) only: a path
    :func:`mdagent.safety.workspace.confine` refused may still lie inside the folder
    of a skill the model may load, where its ``references/`` and ``scripts/``
    live even outside the workspace. Pass what this returns as extra roots to
    ``confine`` and ``open_parent``; writing tools and ``exec`` never use it.
    """
    skills = getattr(getattr(ctx, "registry", None), "skills", None)
    if not skills:
        return ()
    candidate = Path(os.fspath(path)).expanduser()
    try:
        near = (candidate if candidate.is_absolute() else root / candidate).resolve()
    except (OSError, RuntimeError):
        return ()
    return tuple(model_skill_folders(skills, near))


def model_skill_folders(skills: Any, near: Path) -> list[Path]:
    """The resolved folders of the skills the model may load that hold ``near``.

    Only skills whose folder holds the path are judged, so a read outside
    the workspace costs one path comparison per skill, not a requirement
    check per skill.
    """
    folders = []
    for skill in skills.values():
        try:
            folder = Path(skill.dir).resolve()
        except (OSError, RuntimeError):
            continue
        if (near == folder or near.is_relative_to(folder)) and model_refusal(skill) is None:
            folders.append(folder)
    return folders
