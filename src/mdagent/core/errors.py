"""One exception hierarchy for the whole package.

Every error a user can cause is an :class:`MdagentError`; the CLI catches it
once, prints one line and exits with the error's ``exit_code``. With
``--json`` the line is a JSON object naming the error's ``code`` instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any


# -- exit statuses ----------------------------------------------------------------
# What `agent` exits with. The error classes below, the CLI edges
# (mdagent.cli.edge, mdagent.cli.app) and the person's command runner (mdagent.runtime.person)
# take their numbers from here, and the docs' table is generated from
# EXIT_STATUSES, so the two cannot disagree.

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_STEP_LIMIT = 3  # agent ask: the run reached --max-steps / agent.max_steps unanswered
EXIT_REFUSED = 4  # agent ask --fail-on-refusal: answered, but a tool call was refused
EXIT_TIMEOUT = 124
EXIT_DENIED = 126
EXIT_HANGUP = 129  # 128 + SIGHUP, as a shell reports it (mdagent.core.signals)
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE
EXIT_TERMINATED = 143  # 128 + SIGTERM

#: ``(status, meaning)`` for every status above, in the order the docs list them.
EXIT_STATUSES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "ok"),
    (EXIT_FAILED, "the tool failed (a process: its own exit status, passed through unchanged)"),
    (
        EXIT_USAGE,
        'usage: unknown command (with the list and "did you mean", across slash commands '
        "and subcommands: `agent /tools` → `agent tools`), a required argument left out or "
        "invalid arguments (with the usage line), broken configuration",
    ),
    (
        EXIT_STEP_LIMIT,
        "`agent ask`, a prompt skill: the run reached its step limit (`--max-steps`, "
        "`agent.max_steps`) without a final answer",
    ),
    (
        EXIT_REFUSED,
        "`agent ask --fail-on-refusal`: the model answered, but the policy refused a tool call",
    ),
    (EXIT_TIMEOUT, "timed out (the whole process group is killed)"),
    (EXIT_DENIED, "denied by policy"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C stops the tool and its process group)"),
    (EXIT_HANGUP, "hang-up (SIGHUP): as 130; the call is recorded as interrupted"),
    (EXIT_TERMINATED, "terminated (SIGTERM): as 130; the call is recorded as interrupted"),
    (
        EXIT_BROKEN_PIPE,
        "the reader of the output went away (`agent /x | head -1`), as a shell reports SIGPIPE",
    ),
)


class MdagentError(Exception):
    """Base class of every error mdagent raises on purpose.

    ``code`` is the stable name ``--json`` reports (``{"ok": false, "error":
    {"code", "message"}}``). A subclass that names none gets one from its
    class name (``InstallError`` -> ``INSTALL``), so every error has one; a
    subclass of a class with a code shares it (``HookBlocked`` is ``DENIED``).
    """

    exit_code = EXIT_FAILED
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

    exit_code = EXIT_USAGE
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

    exit_code = EXIT_USAGE
    code = "USAGE"


class ToolFailed(MdagentError):
    """A tool ran and failed; ``exit_code`` is what the shell should see."""

    code = "TOOL_FAILED"

    def __init__(self, message: str, exit_code: int = EXIT_FAILED):
        super().__init__(message)
        self.exit_code = exit_code


class PolicyDenied(MdagentError):
    """The policy refused a call."""

    exit_code = EXIT_DENIED
    code = "DENIED"


class Interrupted(MdagentError):
    """The user pressed Ctrl-C."""

    exit_code = EXIT_INTERRUPTED
    code = "INTERRUPTED"


class StateError(MdagentError):
    """The state database (sessions, audit log, rate limits) cannot be read or written.

    The message names the file and what to do; a tool call that cannot be
    put on the record fails with it instead of running.
    """

    exit_code = EXIT_FAILED
    code = "STATE"


class ProviderError(MdagentError):
    """A model provider could not be reached or answered with an error."""

    exit_code = EXIT_FAILED
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
