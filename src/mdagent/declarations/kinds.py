"""What a declared tool's implementation may say, and where a problem with it is in its file.

A tool in ``config/*.yaml`` does its work in one of :data:`IMPLEMENTATION_KEYS`
(``run``, ``shell``, ``handler``, ``http``, ``tool``); an ``http:`` takes
:data:`HTTP_KEYS` and one of :data:`HTTP_METHODS`; a ``tool:`` that calls
``exec`` gives it shell code (:func:`shell_argument`). The loader
(:mod:`mdagent.declarations.declarations`) keeps these keys and the line of
each; :func:`check_implementation` says what is wrong with one (its
templates checked by :mod:`mdagent.declarations.placeholders`) and
:func:`message_line` finds the line a problem with it belongs to, so ``agent
check`` points at the template, not just the tool. Running an implementation
is :mod:`mdagent.tools.implementations`' job.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Mapping
from pathlib import Path

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

IMPLEMENTATION_KEYS = ("run", "shell", "handler", "http", "tool")
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
HTTP_KEYS = ("method", "url", "headers", "json", "body", "timeout")


def message_line(message: str, lines: Mapping[str, int], default: int) -> int:
    """The line a problem with an implementation belongs to.

    Messages start with the key they are about (``shell: ...``,
    ``with.command: ...``); ``lines`` maps keys to their line in the YAML
    file (:attr:`mdagent.core.specs.ToolSpec.lines`), so ``agent check``
    points at the template, not just the tool; ``default`` (the tool's own
    line) for a message about no key.
    """
    key = message.partition(":")[0]
    return lines.get(key) or lines.get(key.partition(".")[0]) or default


def shell_argument(target: Any, with_: Mapping[str, Any]) -> str | None:
    """The ``command`` template of a composition that calls ``exec``, if any.

    exec's ``command`` is shell code, so its template is expanded like a
    ``shell:`` one (every value quoted), never pasted in as raw text.
    """
    from mdagent.core.catalog import real_name

    command = with_.get("command")
    if not isinstance(target, str) or not isinstance(command, str):
        return None
    try:
        return command if real_name(target) == "exec" else None
    except KeyError:  # a declared tool, not a built-in
        return None


def check_implementation(  # noqa: C901
    spec: Mapping[str, Any],
    params: Mapping[str, Any],
    tool_names: Container[str],
    base_dir: Path | str,
    *,
    name: str | None = None,
) -> list[str]:
    """What is wrong with a declaration's implementation (empty when nothing).

    ``spec`` is the tool's declaration (or the part of it holding the
    implementation keys, ``with`` and ``timeout``); ``params`` its JSON
    Schema properties; ``tool_names`` every tool (and alias) a ``tool:`` may
    name; ``base_dir`` the folder of the YAML file, against which a
    ``handler:`` path is resolved. ``name`` (the tool's own name) lets a
    tool that calls itself be reported.
    """
    from mdagent.declarations.placeholders import check_argv, check_shell, placeholders

    kinds = [k for k in IMPLEMENTATION_KEYS if k in spec]
    errors: list[str] = []
    if not kinds:
        errors.append(f"no implementation: give one of {', '.join(IMPLEMENTATION_KEYS)}")
    elif len(kinds) > 1:
        errors.append(f"more than one implementation ({', '.join(kinds)}): give exactly one")
    if "with" in spec and "tool" not in spec:
        errors.append("`with` is only used with `tool`")
    timeout = spec.get("timeout")
    if timeout is not None and (not _is_number(timeout) or timeout <= 0):
        errors.append(f"timeout: must be a positive number of seconds, not {timeout!r}")

    def check_template(where: str, template: Any, shell: bool = False) -> None:
        try:
            names = placeholders(template)
            if shell:
                check_shell(template)
            elif where == "run":
                check_argv(template)
        except ValueError as exc:
            errors.append(f"{where}: {exc}")
            return
        for unknown in sorted(names - set(params)):
            known = ", ".join(params) or "none declared"
            errors.append(f"{where}: {{{unknown}}} names no parameter (params: {known})")

    if "run" in spec:
        argv = spec["run"]
        if not isinstance(argv, list) or not argv:
            errors.append("run: must be a non-empty list (an argv template)")
        elif not all(isinstance(a, str | int | float) and not isinstance(a, bool) for a in argv):
            errors.append("run: every element must be a string")
        else:
            check_template("run", argv)
    if "shell" in spec:
        if not isinstance(spec["shell"], str) or not spec["shell"].strip():
            errors.append("shell: must be a non-empty string (an sh -c script)")
        else:
            check_template("shell", spec["shell"], shell=True)
    if "handler" in spec:
        errors.extend(_check_handler(spec["handler"], Path(base_dir)))
    if "http" in spec:
        errors.extend(_check_http(spec["http"], check_template))
    if "tool" in spec:
        target = spec["tool"]
        if not isinstance(target, str) or not target:
            errors.append("tool: must name a tool")
        elif target == name:
            errors.append(f"tool: {target} calls itself")
        elif target not in tool_names:
            errors.append(f"tool: {target} names no tool")
        if "with" in spec:
            if isinstance(spec["with"], Mapping):
                check_template("with", spec["with"])
                command = shell_argument(target, spec["with"])
                if command is not None:
                    check_template("with.command", command, shell=True)
            else:
                errors.append("with: must be a mapping of arguments")
    return errors


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def split_handler(ref: str) -> tuple[str, str]:
    """``"handlers/wc.py:count"`` -> ``("handlers/wc.py", "count")``; function defaults to run."""
    path, sep, func = ref.rpartition(":")
    # A colon followed by a path ("C:\\x.py") belongs to the path, not a function.
    if not sep or "/" in func or "\\" in func:
        return ref, "run"
    return path, func


def _check_handler(ref: Any, base_dir: Path) -> list[str]:
    if not isinstance(ref, str) or not ref.strip():
        return ["handler: must be path/to/file.py or path/to/file.py:function"]
    path, func = split_handler(ref)
    if not func.isidentifier():
        return [f"handler: {func!r} is not a function name"]
    file = base_dir / path
    if not file.is_file():
        return [f"handler: file not found: {path} (looked in {base_dir})"]
    return []


def _check_http(http: Any, check_template: Callable[..., None]) -> list[str]:
    if not isinstance(http, Mapping):
        return ["http: must be a mapping with at least url"]
    errors = [f"http: unknown key {k!r}" for k in http if k not in HTTP_KEYS]
    method = http.get("method", "GET")
    if not isinstance(method, str) or method.upper() not in HTTP_METHODS:
        errors.append(f"http.method: {method!r} is not one of {', '.join(HTTP_METHODS)}")
    url = http.get("url")
    if not isinstance(url, str):
        errors.append("http.url: required (a string)")
    elif not re.match(r"https?://[^/{]", url, re.IGNORECASE):
        # The scheme and the start of the host must be literal: a value must
        # not be able to turn a web call into file:// or another scheme.
        errors.append(f"http.url: must start with http:// or https:// and a host, not {url!r}")
    else:
        check_template("http.url", url)
    headers = http.get("headers")
    if headers is not None:
        if isinstance(headers, Mapping):
            check_template("http.headers", headers)
        else:
            errors.append("http.headers: must be a mapping of header names to values")
    if http.get("json") is not None and http.get("body") is not None:
        errors.append("http: give json or body, not both")
    if http.get("json") is not None:
        check_template("http.json", http["json"])
    if http.get("body") is not None:
        if isinstance(http["body"], str):
            check_template("http.body", http["body"])
        else:
            errors.append("http.body: must be a string (use json for structured data)")
    timeout = http.get("timeout")
    if timeout is not None and (not _is_number(timeout) or timeout <= 0):
        errors.append(f"http.timeout: must be a positive number of seconds, not {timeout!r}")
    return errors
