"""The audit log as a toolbox sees it: a call's row before it runs, its outcome after.

:class:`AuditLog` is the :attr:`Toolbox.audit <mdagent.tools.toolbox.Toolbox.audit>`
of a runtime; the rows are written by the
:class:`~mdagent.store.store.Store` it is given (redacted there).
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

    from mdagent.store.store import Store


class AuditLog:
    """The :attr:`Toolbox.audit <mdagent.tools.toolbox.Toolbox.audit>` of a runtime.

    :meth:`start` writes a call's row before it runs and raises
    :class:`StateError` when it cannot (the toolbox then refuses the call);
    :meth:`finish` adds the outcome, or writes the whole row of a call that
    never ran (invalid, denied). Rows carry the caller (``ctx.caller``), tool,
    arguments, outcome, code, run time (``duration_s``, without the wait), the
    time waited for a person's answer (``decision.waited_s``) and
    ``decision.approved_by``, under ``session_id`` (default:
    ``ctx.conversation_id``), redacted by the store.
    """

    def __init__(self, store: Store, session_id: str | None = None) -> None:
        self.store = store
        self.session_id = session_id

    def start(self, tool_name: str, args: Mapping[str, Any], decision: Any, ctx: Any) -> int:
        """Put the call on the record before it runs; the row's id."""
        return self.store.start_call(
            caller=getattr(ctx, "caller", None),
            tool=tool_name,
            args=args,
            approved_by=_approved_by(decision, ctx),
            session_id=self.session_id or getattr(ctx, "conversation_id", None),
            workspace=getattr(ctx, "workdir", None),
            wait_ms=_wait_ms(decision),
        )

    def finish(
        self,
        row: int | None,
        tool_name: str,
        args: Mapping[str, Any],
        result: Any,
        decision: Any,
        duration_s: float,
        ctx: Any,
    ) -> None:
        """The call's outcome: completes row ``row``, or writes a whole row when None."""
        data = getattr(result, "data", {}) or {}
        ok = bool(getattr(result, "ok", False))
        error = getattr(result, "error", None)
        code = data.get("code") if isinstance(data.get("code"), str) else None
        duration_ms = int(round(duration_s * 1000))
        if row is not None:
            self.store.finish_call(
                row, ok, error, code, duration_ms, interrupted=bool(data.get("interrupted"))
            )
            return
        self.store.record_call(
            caller=getattr(ctx, "caller", None),
            tool=tool_name,
            args=args,
            ok=ok,
            error=error,
            code=code,
            duration_ms=duration_ms,
            approved_by=_approved_by(decision, ctx),
            session_id=self.session_id or getattr(ctx, "conversation_id", None),
            workspace=getattr(ctx, "workdir", None),
            wait_ms=_wait_ms(decision),
        )


def _wait_ms(decision: Any) -> int | None:
    """How long the call waited for a person's answer, in ms (None: nobody was asked)."""
    waited = getattr(decision, "waited_s", 0.0) or 0.0
    return int(round(waited * 1000)) if waited else None


def _approved_by(decision: Any, ctx: Any) -> str | None:
    # No policy at all (a typed command with nothing to refuse it): the
    # person who typed it is who approved it.
    if getattr(decision, "approved_by", None):
        return decision.approved_by
    person = getattr(ctx, "caller", None) == "person"
    return "person" if person and getattr(decision, "allowed", True) else None
