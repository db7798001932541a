"""What a declared tool's implementation may say, and where a problem with it is in its file.

A tool in ``config/*.yaml`` does its work in one of :data:`IMPLEMENTATION_KEYS`
(``run``, ``shell``, ``handler``, ``http``, ``tool``); an ``http:`` takes
:data:`HTTP_KEYS` and one of :data:`HTTP_METHODS`; a ``tool:`` that calls
``exec`` gives it shell code (:func:`shell_argument`). The loader
(:mod:`mdagent.declarations.declarations`) keeps these keys and the line of
each; :func:`message_line` finds the line a problem with one belongs to, so
``agent check`` points at the template, not just the tool. Checking and
running an implementation are :mod:`mdagent.tools.implementations`'.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from collections.abc import Mapping
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
