"""One exception hierarchy for the whole package.

Every error a user can cause is an :class:`MdagentError`; the CLI catches it
once, prints one line and exits with the error's ``exit_code``. With
``--json`` the line is a JSON object naming the error's ``code`` instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

TYPE_CHECKING = False  # not typing's: see mdagent.records
if TYPE_CHECKING:
    from typing import Any


class MdagentError(Exception):
    """Base class of every error mdagent raises on purpose.

    ``code`` is the stable name ``--json`` reports (``{"ok": false, "error":
    {"code", "message"}}``). A subclass that names none gets one from its
    class name (``InstallError`` -> ``INSTALL``), so every error has one; a
    subclass of a class with a code shares it (``HookBlocked`` is ``DENIED``).
    """

    exit_code = 1
    code = "ERROR"
    #: The saved session a failed turn belongs to: ``--json`` reports it
    #: beside the error, so a script can continue or inspect that session.
    session: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.code == MdagentError.code:
            name = re.sub(r"Error$", "", cls.__name__) or cls.__name__
            cls.code = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


class ConfigError(MdagentError):
    """A declaration file is wrong; carries where (``path``, ``line``, ``col``)."""

    exit_code = 2
    code = "CONFIG"

    def __init__(self, message: str, path: str | None = None, line: int = 0, col: int = 0):
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.col = col

    def __str__(self) -> str:
        if not self.path:
            return self.message
        where = f"{self.path}:{self.line}" if self.line else self.path
        if self.line and self.col:
            where += f":{self.col}"
        return f"{where}: {self.message}"


class UsageError(MdagentError):
    """The user called something the wrong way (unknown command, bad arguments)."""

    exit_code = 2
    code = "USAGE"


class ToolFailed(MdagentError):
    """A tool ran and failed; ``exit_code`` is what the shell should see."""

    code = "TOOL_FAILED"

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


class PolicyDenied(MdagentError):
    """The policy refused a call."""

    exit_code = 126
    code = "DENIED"


class Interrupted(MdagentError):
    """The user pressed Ctrl-C."""

    exit_code = 130
    code = "INTERRUPTED"


class StateError(MdagentError):
    """The state database (sessions, audit log, rate limits) cannot be read or written.

    The message names the file and what to do; a tool call that cannot be
    put on the record fails with it instead of running.
    """

    exit_code = 1
    code = "STATE"


class ProviderError(MdagentError):
    """A model provider could not be reached or answered with an error."""

    exit_code = 1
    code = "PROVIDER"


def unknown_tool(name: str, available: Iterable[str]) -> str:
    """The one message for a tool name that matches none: ``unknown tool: x. Available: a, b``."""
    return f"unknown tool: {name}. Available: {', '.join(sorted(available)) or '(none)'}"


class Problem(tuple):
    """One finding of ``agent check``: ``(path, line, col, severity, message)``."""

    __slots__ = ()

    def __new__(cls, path: str, line: int, col: int, severity: str, message: str):
        return super().__new__(cls, (str(path), int(line), int(col), severity, message))

    path = property(lambda self: self[0])
    line = property(lambda self: self[1])
    col = property(lambda self: self[2])
    severity = property(lambda self: self[3])
    message = property(lambda self: self[4])

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.severity}: {self.message}"

    @classmethod
    def from_error(cls, err: ConfigError, severity: str = "error") -> Problem:
        """The problem a :class:`ConfigError` describes."""
        return cls(err.path or "?", err.line or 1, err.col or 1, severity, err.message)


def logger(name: str) -> Any:
    """A logger under ``mdagent``, which carries a NullHandler as a library's should.

    Nothing reaches stderr unless the application configures logging (the
    CLI does with ``-v``): tracebacks of failing tools are in their results.
    ``logging`` is imported here, on first use, not at start-up.
    """
    import logging

    root = logging.getLogger("mdagent")
    if not any(isinstance(h, logging.NullHandler) for h in root.handlers):
        root.addHandler(logging.NullHandler())
    return logging.getLogger(name)
