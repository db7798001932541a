"""YAML -> tool and command specs (``config/*.yaml``) and settings (``config/agent.yaml``)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from mdagent.core.defaults import DEFAULT_SETTINGS
from mdagent.core.errors import ConfigError, Problem
from mdagent.core.names import did_you_mean
from mdagent.core.specs import CommandSpec, ToolSpec
from mdagent.core.yamlsource import (
    Located,
    decode,
    load_yaml,
    plain,
    position,
    read_capped,
)
from mdagent.declarations.kinds import IMPLEMENTATION_KEYS

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

# The lists of `policy` whose entries carry provenance (see read_settings).
POLICY_LISTS = ("deny", "ask", "allow", "tests")


def read_yaml_file(path: Path) -> tuple[Any, list[Problem]]:
    """Parse one YAML file; a broken file is a problem, never an exception."""
    where = str(path)
    try:
        text = decode(read_capped(path), where)
    except ConfigError as err:
        return None, [Problem.from_error(err)]
    except OSError as err:
        return None, [Problem(where, 1, 1, "error", f"cannot read: {err.strerror or err}")]
    if not text.strip():
        return None, [Problem(where, 1, 1, "warning", "empty file")]
    try:
        return load_yaml(text, where), []
    except ConfigError as err:
        return None, [Problem.from_error(err)]


def _schema_problems(
    data: Any, schema_name: str, where: str, instance: Any = None
) -> tuple[list[Problem], set[tuple[Any, Any]]]:
    """Schema problems, and which ``(section, name)`` entries they break.

    ``instance`` is ``plain(data)`` when the caller has made it already.
    """
    from mdagent.declarations.schemas import check as schema_check
    from mdagent.declarations.schemas import validator

    problems = []
    broken: set[tuple[Any, Any]] = set()
    if instance is None:
        instance = plain(data)
    check = schema_check(schema_name)
    if check is not None and check(instance):
        return problems, broken  # valid: jsonschema's errors are needed only when it is not
    for err in validator(schema_name).iter_errors(instance):
        pointer = list(err.absolute_path)
        if err.validator == "propertyNames":
            pointer.append(err.instance)
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            # One problem per unknown key, at the key's own line, with the
            # nearest known key: a typo'd `polcy:` must be plain to see.
            known = list(
                (err.schema.get("properties") or {}) if isinstance(err.schema, dict) else ()
            )
            for extra in err.instance:
                if extra in known:
                    continue
                at = [*pointer, extra]
                line, col = position(data, at)
                key = ".".join(str(p) for p in at)
                problems.append(
                    Problem(
                        where, line, col, "error", f"{key}: unknown key{did_you_mean(extra, known)}"
                    )
                )
        else:
            key = ".".join(str(p) for p in pointer) or "top level"
            line, col = position(data, pointer)
            problems.append(Problem(where, line, col, "error", f"{key}: {_message(err)}"))
        if not pointer:  # an unknown top-level key spoils no declaration
            continue
        broken.add((pointer[0] if pointer else None, pointer[1] if len(pointer) > 1 else None))
    return problems, broken


def _message(err: Any) -> str:
    if (
        err.validator in ("oneOf", "not")
        and isinstance(err.schema, dict)
        and "description" in err.schema
    ):
        return f"expected {err.schema['description']}"  # "not valid under any of the given schemas"
    if err.validator == "additionalProperties":
        return err.message.replace("Additional properties are not allowed", "unknown key(s):")
    if err.validator == "propertyNames":
        return f"{err.instance!r} is not a valid name (letters, digits, '-' and '_', up to 64)"
    return err.message


def load_declarations(
    path: Path, layer: str = ""
) -> tuple[list[ToolSpec], list[CommandSpec], list[Problem]]:
    """Tools and commands declared in one ``config/*.yaml`` file.

    A file with a schema error contributes only the entries that are
    themselves valid: one bad tool does not take its neighbours down.
    """
    where = str(path)
    data, problems = read_yaml_file(path)
    if data is None:
        return [], [], problems
    if not isinstance(data, dict):
        return [], [], [Problem(where, 1, 1, "error", "expected a mapping with tools: / commands:")]
    instance = plain(data)
    schema_problems, broken = _schema_problems(data, "declarations", where, instance)
    problems.extend(schema_problems)
    # The plain copy of each entry, made once above, unless two names became
    # one key in it (`1:` and `"1":`): then each entry is copied on its own.
    plain_tools = instance.get("tools")
    if not isinstance(plain_tools, dict) or len(plain_tools) != len(data["tools"]):
        plain_tools = {}

    def is_broken(section: str, name: str) -> bool:
        return (section, name) in broken or (section, None) in broken or (None, None) in broken

    tools: list[ToolSpec] = []
    commands: list[CommandSpec] = []
    base = path.parent
    for name, decl in _entries(data, "tools"):
        # Parameter problems are reported even for a tool the schema faulted:
        # every mistake at once, not one per run of `agent check`.
        copy = plain_tools.get(str(name))
        if not isinstance(copy, dict):
            copy = plain(decl)
        param_problems = _param_problems(data, name, copy, where)
        problems.extend(param_problems)
        if is_broken("tools", name) or param_problems:
            continue
        line = position(data, ["tools", name])[0]
        implementation = {k: copy[k] for k in (*IMPLEMENTATION_KEYS, "with") if k in copy}
        if "handler" in implementation:
            implementation["base_dir"] = str(base)
        params, options = _split_options(copy.get("params") or {})
        if options:
            implementation["options"] = options
        tools.append(
            ToolSpec(
                name=str(name),
                description=decl["description"],
                params=params,
                required=list(decl.get("required") or []),
                aliases=[str(a) for a in decl.get("aliases") or []],
                category=decl.get("category", "custom"),
                security=decl.get("security", "moderate"),
                tier=decl.get("tier", "full"),
                approval=bool(decl.get("approval", False)),
                requires=copy.get("requires") or {},
                rate_limit=copy.get("rate_limit"),
                timeout=decl.get("timeout"),
                implementation=implementation,
                source=where,
                line=line,
                layer=layer,
                lines=_template_lines(data, name, decl),
            )
        )
    for name, decl in _entries(data, "commands"):
        if is_broken("commands", name):
            continue
        commands.append(
            CommandSpec(
                name=str(name),
                description=str(decl.get("description") or ""),
                tool=str(decl["tool"]),
                arg_mode=decl.get("arg-mode", "raw"),
                completions=plain(decl.get("completions")),
                argument_hint=str(decl.get("argument-hint") or ""),
                kind="tool",
                source=where,
                line=position(data, ["commands", name])[0],
                layer=layer,
            )
        )
    return tools, commands, problems


# What providers accept as a property name (Anthropic's rule; OpenAI's is laxer):
# one bad key makes the provider refuse the whole tools array, every turn.
PARAM_NAME = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")
# What authors write for a JSON Schema type, from other languages' names.
_TYPE_NAMES = {
    "str": "string", "text": "string", "int": "integer", "long": "integer",
    "float": "number", "double": "number", "decimal": "number", "bool": "boolean",
    "list": "array", "tuple": "array", "dict": "object", "map": "object", "none": "null",
}  # fmt: skip


def _param_problems(data: Any, name: Any, copy: dict[str, Any], where: str) -> list[Problem]:
    """A tool's parameter names and schemas, checked as the providers and jsonschema will.

    A schema that is not JSON Schema (``type: strng``), a parameter name a
    provider refuses, or a ``$ref`` that leads nowhere would pass the load
    and fail at call time or make a provider reject every request; each is
    an error at its own line now. ``copy`` is the tool's declaration, plain.
    """
    raw = copy.get("params") or {}
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        return []  # not a mapping of schemas: the declarations schema says so
    params, _ = _split_options(raw)
    problems = []

    def add(pointer: list[Any], message: str) -> None:
        line, col = position(data, ["tools", name, "params", *pointer])
        problems.append(Problem(where, line, col, "error", f"tool {name!r}: {message}"))

    for param in params:
        if not PARAM_NAME.match(str(param)):
            add(
                [param],
                f"params: {param!r} is not a parameter name providers accept "
                "(letters, digits, '_', '.' and '-', 1-64 characters)",
            )
    schema = {"type": "object", "properties": params}  # `required`: the declarations schema
    from mdagent.core.fastcheck import plainly_valid_schema

    # The metaschema is jsonschema's slowest check; most parameter schemas
    # are plainly valid, and only the others need it.
    errors = [] if plainly_valid_schema(schema) else _metaschema().iter_errors(schema)
    for err in sorted(errors, key=lambda e: list(map(str, e.absolute_path))):
        path = list(err.absolute_path)
        if path[:1] != ["properties"]:
            continue  # `required` is the declarations schema's to check
        pointer = path[1:]
        key = "params." + ".".join(str(p) for p in pointer)
        if pointer and pointer[-1] == "type":
            add(pointer, f"{key}: {_type_message(err.instance)}")
        else:
            add(pointer, f"{key}: {err.message} (not valid JSON Schema)")
    if not problems:
        for pointer, message in _unresolvable_refs(schema):
            add(pointer[1:], f"params.{'.'.join(map(str, pointer[1:]))}: {message}")
    return problems


@functools.cache
def _metaschema() -> Any:
    """A validator of JSON Schemas themselves (Draft 2020-12), built once."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(Draft202012Validator.META_SCHEMA)


def _type_message(value: Any) -> str:
    """What is wrong with a ``type:`` value, and the type meant."""
    names = value if isinstance(value, list) else [value]
    for item in names:
        if isinstance(item, str) and item not in JSON_TYPES:
            meant = _TYPE_NAMES.get(item.lower())
            hint = f" (did you mean {meant!r}?)" if meant else did_you_mean(item, JSON_TYPES)
            return (
                f"{item!r} is not a JSON Schema type{hint}; the types are {', '.join(JSON_TYPES)}"
            )
    return f"{value!r} is not a JSON Schema type; the types are {', '.join(JSON_TYPES)}"


def _unresolvable_refs(schema: dict[str, Any]) -> list[tuple[list[Any], str]]:
    """``(pointer, message)`` for each ``$ref`` in ``schema`` that cannot be resolved offline."""
    refs: list[tuple[list[Any], str]] = []
    stack: list[tuple[list[Any], Any]] = [([], schema)]
    while stack:
        pointer, node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                refs.append((pointer, node["$ref"]))
            stack.extend(([*pointer, k], v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend(([*pointer, i], v) for i, v in enumerate(node))
    if not refs:
        return []
    # referencing (with attrs) costs ~25 ms to import: only schemas with a $ref need it.
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    resource = DRAFT202012.create_resource(schema)
    resolver = Registry().with_resource("urn:tool", resource).resolver(base_uri="urn:tool")
    out = []
    for pointer, ref in sorted(refs, key=lambda r: list(map(str, r[0]))):
        try:
            resolver.lookup(ref)
            continue
        except Unresolvable:
            why = (
                "a reference must point inside the tool's own schema, such as '#/properties/other'"
            )
        except Exception as exc:  # a malformed reference: the same verdict, in its own words
            why = str(exc)
        out.append(([*pointer, "$ref"], f"{ref!r} cannot be resolved ({why})"))
    return out


def _template_lines(data: Any, name: Any, decl: Any) -> dict[str, int]:
    """The line of each implementation key (``run``, ``with.command``...): problems point there."""
    lines = {}
    for key in (*IMPLEMENTATION_KEYS, "with", "timeout"):
        if key in decl:
            lines[key] = position(data, ["tools", name, key])[0]
            if isinstance(decl[key], dict):
                for sub in decl[key]:
                    lines[f"{key}.{sub}"] = position(data, ["tools", name, key, sub])[0]
    return lines


def _split_options(params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Params without mdagent's own ``option`` keyword, and the names that set it.

    ``option: true`` lets a model's value start with ``-`` (see
    :func:`mdagent.tools.implementations.option_params`); it is not JSON Schema, so
    it stays out of the schema sent to models.
    """
    options = [n for n, s in params.items() if isinstance(s, dict) and s.get("option") is True]
    clean = {
        n: {k: v for k, v in s.items() if k != "option"} if isinstance(s, dict) else s
        for n, s in params.items()
    }
    return clean, options


def _entries(data: dict[str, Any], section: str):
    block = data.get(section)
    if isinstance(block, dict):
        for name, decl in block.items():
            if isinstance(decl, dict):
                yield name, decl


def load_settings(path: Path) -> tuple[dict[str, Any], list[Problem]]:
    """Settings from one ``agent.yaml``; an invalid file contributes nothing."""
    settings, _, problems = read_settings(path)
    return settings, problems


def read_settings(
    path: Path, layer: str = ""
) -> tuple[dict[str, Any], list[dict[str, Any]], list[Problem]]:
    """Settings from one ``agent.yaml``, where its policy rules and tests were written, problems.

    The middle item lists one ``{"section", "entry", "path", "line", "col",
    "layer"}`` per entry of ``policy.deny``, ``ask``, ``allow`` and ``tests``
    (``section`` is the list's name, ``entry`` the item as written): the
    provenance ``agent policy`` shows, and the line a failing test is
    reported at. An invalid file contributes nothing.
    """
    data, problems = read_yaml_file(path)
    if data is None:
        return {}, [], problems
    if not isinstance(data, Located):
        return {}, [], [Problem(str(path), 1, 1, "error", "expected a mapping of settings")]
    schema_problems, broken = _schema_problems(data, "settings", str(path))
    schema_problems += _runtime_problems(data, str(path), broken)
    if schema_problems:
        # Half-applied settings (a policy without its deny list) are worse than
        # none: report and skip the file, loudly.
        return {}, [], problems + schema_problems
    settings = plain(data)
    if layer == "project" and "key_hosts" in settings:
        # Which host may receive a key is the person's to say, never a folder's.
        del settings["key_hosts"]
        line, col = position(data, ["key_hosts"])
        message = (
            "key_hosts: only your user layer ($AGENT_HOME/config/agent.yaml) pairs keys "
            "with hosts; ignored here"
        )
        problems = [*problems, Problem(str(path), line, col, "warning", message)]
    return settings, _policy_sources(data, str(path), layer), problems


def _policy_sources(data: Located, where: str, layer: str) -> list[dict[str, Any]]:
    policy = data.get("policy")
    out: list[dict[str, Any]] = []
    for section in POLICY_LISTS:
        entries = policy.get(section) if isinstance(policy, dict) else None
        for i, entry in enumerate(entries if isinstance(entries, list) else ()):
            line, col = position(data, ["policy", section, i])
            out.append(
                {
                    "section": section,
                    "entry": plain(entry),
                    "path": where,
                    "line": line,
                    "col": col,
                    "layer": layer,
                }
            )
    return out


def _runtime_problems(data: Located, where: str, broken: set[tuple[Any, Any]]) -> list[Problem]:
    """What the runtime would refuse in rules and hooks that fit the schema.

    The checks are the runtime's own (:meth:`mdagent.safety.rules.Rule.parse`,
    :func:`mdagent.declarations.hookspec.check_hook`), so a file ``agent check`` passes is a
    file every command can use. Lists the schema already faulted are skipped:
    one message per mistake.
    """
    problems = _mcp_server_problems(data, where, broken)
    if not isinstance(data.get("policy"), dict) and not isinstance(data.get("hooks"), dict):
        return problems  # most files: the policy module (~10 ms to import) is not needed
    from functools import partial

    from mdagent.declarations.hookspec import EVENTS, check_hook
    from mdagent.safety.rules import Rule

    checks = [("policy", key, Rule.parse) for key in ("allow", "ask", "deny")]
    checks += [("hooks", when, partial(check_hook, event=when)) for when in EVENTS]
    for section, key, check in checks:
        block = data.get(section)
        entries = block.get(key) if isinstance(block, dict) else None
        if (section, key) in broken or (section, None) in broken or not isinstance(entries, list):
            continue
        for i, entry in enumerate(entries):
            try:
                check(entry, f"{section}.{key}[{i}]")
            except ConfigError as err:
                line, col = position(data, [section, key, i])
                problems.append(Problem(where, line, col, "error", err.message))
    return problems


def _mcp_server_problems(data: Located, where: str, broken: set[tuple[Any, Any]]) -> list[Problem]:
    """Server names the schema passes but ``name__tool`` could not split back."""
    servers = data.get("mcp_servers")
    if not isinstance(servers, dict) or ("mcp_servers", None) in broken:
        return []
    problems = []
    for name in servers:
        if "__" in str(name):
            line, col = position(data, ["mcp_servers", name])
            message = (
                f"mcp_servers.{name}: a server name must not contain `__`, "
                "which separates server and tool in `server__tool`"
            )
            problems.append(Problem(where, line, col, "error", message))
    return problems


def merge_settings(layers_high_first: list[dict[str, Any]]) -> dict[str, Any]:
    """Settings merged key by key: higher layers win; lists concatenate (higher first)."""
    merged: dict[str, Any] = _deep_copy(DEFAULT_SETTINGS)
    for settings in reversed(layers_high_first):
        merged = _merge(merged, settings)
    # An MCP server's entry is replaced whole by a higher layer's entry of the
    # same name: half of one layer's server and half of another's (their args
    # concatenated) would start a command nobody wrote.
    servers: dict[str, Any] = {}
    for settings in reversed(layers_high_first):
        block = settings.get("mcp_servers")
        if isinstance(block, dict):
            servers.update({name: _deep_copy(entry) for name, entry in block.items()})
    merged["mcp_servers"] = servers
    return merged


def _merge(low: Any, high: Any) -> Any:
    if isinstance(low, dict) and isinstance(high, dict):
        out = dict(low)
        for key, value in high.items():
            out[key] = _merge(low[key], value) if key in low else _deep_copy(value)
        return out
    if isinstance(low, list) and isinstance(high, list):
        # Deny rules (and every other list) from every layer always apply.
        return [*high, *(v for v in low if v not in high)]
    return _deep_copy(high)


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value
