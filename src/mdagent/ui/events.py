"""``--output-format stream-json``: a run as one JSON object per line on stdout.

Each line is written and flushed as it happens, and carries a ``type``:

- ``start``: ``session``, ``model``, ``provider``, ``workspace``, ``mode``
  (the permission mode in force) and ``mode_source``;
- ``text``: ``text``, a piece of the answer as it arrives;
- ``tool_call``: ``id``, ``name``, ``arguments``;
- ``ask``: ``id``, ``name``, ``decision`` (``approved`` or ``refused``) and
  ``by`` (``--yes``, ``person``, ``always``, ``rule``, ``no terminal``,
  ``declined``), plus ``rule`` or ``message`` where one says more: a
  question the run had to answer, and how;
- ``tool_result``: ``id``, ``name``, ``ok``, ``exit_code`` (a process) or
  ``code`` (an error code such as ``DENIED``), ``output`` (the result,
  redacted as the session store keeps it) and ``duration_s``;
- ``notice``: ``message``, a note that goes to stderr in text mode (sandbox,
  trust, retries, files a prompt's ``@path`` left out);
- ``result``, exactly once and last: ``ok``, ``answer``, ``session``,
  ``steps``, ``usage``, ``cost`` (when priced), ``exit_status``,
  ``stopped`` (``answered``, ``max_steps``, ``error``, or why an answer was
  cut short) and ``refused`` (how many tool calls the policy refused); a
  failed run has ``error`` (``{"code", "message"}``, as ``--json`` has it).

The writer is shared by threads (tool calls run concurrently): a lock keeps
each line whole.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from mdagent.agent.loop import Outcome
    from mdagent.tools.toolbox import Result

_LOCK = threading.Lock()
#: Where ``agent: …`` notes go instead of stderr while a stream-json run is on
#: (:func:`notice_sink`); read by :func:`mdagent.runtime.trust.tell` and
#: :func:`mdagent.ui.approval.tell` through ``sys.modules`` (no import on their path).
sink: Callable[[str], None] | None = None
_held: list[str] | None = None


def capture_notices() -> None:
    """From now on, notes become ``notice`` events; held until :func:`started` (``start`` first)."""
    global sink, _held
    _held = []
    sink = _note


def started() -> None:
    """The ``start`` event is out: the notes held so far follow it."""
    global _held
    held, _held = _held or [], None
    for message in held:
        emit("notice", message=message)


def release_notices() -> None:
    """The run is over: the notes held go out as events, later ones to stderr again."""
    global sink
    started()
    sink = None


def _note(message: str) -> None:
    if _held is not None:
        _held.append(message)
    else:
        emit("notice", message=message)


def emit(kind: str, out: TextIO | None = None, **fields: Any) -> None:
    """Write one event line (``{"type": kind, ...fields}``) and flush it."""
    line = json.dumps({"type": kind, **fields}, ensure_ascii=False, default=str)
    stream = out or sys.stdout
    with _LOCK:
        stream.write(line + "\n")
        stream.flush()


def error_result(
    code: str, message: str, exit_status: int, session: str | None = None
) -> dict[str, Any]:
    """The final ``result`` event of a run that failed before or instead of an answer."""
    data: dict[str, Any] = {
        "ok": False,
        "answer": None,
        "exit_status": exit_status,
        "stopped": "error",
        "error": {"code": code, "message": message},
    }
    if session is not None:
        data["session"] = session
    return data


def outcome_result(outcome: Outcome, exit_status: int) -> dict[str, Any]:
    """The final ``result`` event of a turn that ran to its end (answered or not)."""
    data: dict[str, Any] = {
        "ok": exit_status == 0,
        "answer": outcome.answer,
        "session": outcome.session,
        "steps": outcome.steps,
        "usage": outcome.usage,
        "exit_status": exit_status,
        "stopped": outcome.stopped,
        "refused": len(outcome.refusals),
    }
    if outcome.cost is not None:
        data["cost"] = round(outcome.cost, 8)
    if outcome.message:
        data["error"] = {"code": _code(outcome), "message": outcome.message}
    return data


def _code(outcome: Outcome) -> str:
    if outcome.step_limited:
        return "MAX_STEPS"
    if outcome.stop_reason:
        return outcome.stop_reason.upper()
    return "ERROR"


class EventDisplay:
    """The loop's :class:`~mdagent.agent.loop.Screen` for ``stream-json``: every happening is a line.

    ``redact(value)`` is what the session store does to a value before it
    keeps it (:meth:`mdagent.store.store.Store.redacted`): a tool's output goes
    out exactly as it is kept at rest.
    """

    def __init__(
        self, out: TextIO | None = None, *, redact: Callable[[Any], Any] | None = None
    ) -> None:
        self._out = out
        self._redact = redact or (lambda value: value)
        self.show_text = False  # nothing else may write the answer to stdout

    def text(self, delta: str) -> None:
        if delta:
            emit("text", self._out, text=delta)

    def reasoning(self, delta: str) -> None:
        """Reasoning is not part of the answer, and not an event."""

    def end_text(self) -> None:
        """Events need no line ends."""

    def retrying(self, message: str) -> None:
        self.note(f"agent: {message}")

    def note(self, message: str) -> None:
        emit("notice", self._out, message=message.rstrip("\n"))

    @contextmanager
    def waiting(self) -> Iterator[None]:
        yield

    @contextmanager
    def running(self, names: list[str]) -> Iterator[None]:
        yield

    def tool_call(self, name: str, arguments: Any, *, call_id: str | None = None) -> None:
        emit("tool_call", self._out, id=call_id, name=name, arguments=self._redact(arguments))

    def tool_outcome(
        self,
        name: str,
        result: Result,
        seconds: float | None = None,
        *,
        call_id: str | None = None,
        waited: float = 0.0,
    ) -> None:
        data = result.data
        fields: dict[str, Any] = {"id": call_id, "name": name, "ok": result.ok}
        exit_code = data.get("exit_code")
        if isinstance(exit_code, int) and not isinstance(exit_code, bool):
            fields["exit_code"] = exit_code
        if data.get("code"):
            fields["code"] = str(data["code"])
        fields["output"] = self._redact(result.to_dict())
        fields["duration_s"] = None if seconds is None else round(seconds, 3)
        if waited:
            fields["waited_s"] = round(waited, 3)
        emit("tool_result", self._out, **fields)

    def asked(self, name: str, decision: Any, result: Result, call_id: str | None) -> None:
        """An ``ask`` event when the policy had a question for this call (a toolbox observer)."""
        by = getattr(decision, "approved_by", None) or ""
        data = result.data
        if getattr(decision, "allowed", False):
            how = {
                "--yes": "--yes",
                "user": "person",
                "always": "always",
                "session": "session",
            }.get(by)
            if how is None and by.startswith("rule:"):
                how = "rule"
            if how is None:
                return  # safe, full mode, a hook: nobody was asked
            extra = {"rule": by.removeprefix("rule:")} if how == "rule" else {}
            emit("ask", self._out, id=call_id, name=name, decision="approved", by=how, **extra)
        elif (
            data.get("needs_approval")
            or "closed the approval prompt" in str(data.get("error") or "")
            or str(data.get("error") or "").startswith("the user declined")
        ):
            how = "no terminal" if data.get("needs_approval") else "declined"
            emit(
                "ask",
                self._out,
                id=call_id,
                name=name,
                decision="refused",
                by=how,
                message=str(data.get("error") or ""),
            )
