"""What the rules say about a call (:class:`Verdict`), and the words of what it decides.

:meth:`mdagent.safety.policy.Policy.evaluate` returns a :class:`Verdict`
(``agent policy check`` shows it, with each segment's own
:class:`SegmentVerdict`); the functions below turn one into what the model
and the person read: a refusal and how to allow the call (:func:`refusal`,
:func:`denial`), the line under a question (:func:`question_note`), the
refusal of a call nobody could be asked about (:func:`unanswered`,
:func:`asked_extra`), a person's "no" (:func:`declined`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mdagent.core.calls import Decision
from mdagent.safety.rules import Rule

ALLOW, ASK, DENY = "allow", "ask", "deny"


@dataclass(frozen=True)
class SegmentVerdict:
    """What the rules say about one segment of an ``exec`` command on its own."""

    text: str
    decision: str
    why: str
    rule: Rule | None = None


@dataclass(frozen=True)
class Verdict:
    """What the rules say about one call, before anyone is asked
    (:meth:`mdagent.safety.policy.Policy.evaluate`).

    ``decision`` is ``allow``, ``ask`` or ``deny``; ``why`` says what decided
    in a few words; ``rules`` are the rules that decided (none: a mode, the
    tool's security level, a hook). For ``ask``, ``asks`` says what wants the
    question: ``rule`` (``policy.ask``), ``hook``, ``protected`` (the agent's
    own configuration: only a person at a terminal may answer), ``approval``
    (declared ``approval: true``) or ``unmatched`` (no allow rule covers the
    call). ``matched`` is what a deny or ask rule matched (a segment, a
    path); ``suggestion`` the allow rule that would cover exactly this call;
    ``segments`` each segment's own verdict (``exec``, see
    :meth:`mdagent.safety.policy.Policy.explain`).
    """

    decision: str
    why: str
    rules: tuple[Rule, ...] = ()
    asks: str | None = None
    matched: str = ""
    suggestion: str | None = None
    protected: str | None = None
    hook: Any = None
    approved_by: str | None = None
    segments: tuple[SegmentVerdict, ...] = ()
    by_mode: bool = False  # refused by the permission mode itself (plan)

    @property
    def rule(self) -> Rule | None:
        """The (first) rule that decided, if a rule did."""
        return self.rules[0] if self.rules else None

    @property
    def reason(self) -> str | None:
        """The deciding rule's or hook's reason, shown to the person and the model."""
        if self.hook is not None:
            return getattr(self.hook, "reason", None) or None
        return self.rule.reason if self.rule is not None else None


#: What asks for a person where "yes for this session" and "always" are offered:
#: no allow rule covers the call, or its tool is declared ``approval: true``.
SCOPED_ASKS = ("unmatched", "approval")


# -- the words of a decision ---------------------------------------------------


def denial(rule: Rule, what: str) -> Decision:
    """A deny rule's refusal of a call; ``what`` is what it matched (a segment, a path)."""
    shown = f" ({_shorten(what)})" if what else ""
    reason = f": {rule.reason}" if rule.reason else ""
    extra = {"rule": rule.text, **({"reason": rule.reason} if rule.reason else {})}
    return Decision(
        False, f"denied by policy rule `{rule}`{shown}{reason}", code="DENIED", extra=extra
    )


def refusal(tool: Any, verdict: Verdict, mode: str, settings_file: str) -> Decision:
    """The refusal a ``deny`` verdict makes, in policy ``mode``; ``settings_file`` is
    where the allow rule it suggests would go."""
    if verdict.by_mode:
        return Decision(False, verdict.why, code="DENIED", extra={"mode": mode})
    if verdict.protected is not None:  # a write the sandbox would refuse anyway
        return Decision(
            False,
            f"{tool.name} would change {verdict.protected}, part of the agent's own "
            "configuration, which the sandbox keeps read-only for a model's commands "
            "(write_file and edit_file can change it, with a person's approval at a terminal)",
            code="DENIED",
            extra={"protected": verdict.protected},
        )
    if verdict.rule is not None:
        return denial(verdict.rule, verdict.matched)
    return Decision(
        False,
        f"{tool.name} is not allowed: policy.mode is {mode} and no rule in "
        f"policy.allow covers this call; add `{verdict.suggestion}` to policy.allow in "
        f"{settings_file}",
        code="DENIED",
        extra={"allow_rule": verdict.suggestion},
    )


def unanswered(tool: Any, verdict: Verdict, settings_file: str) -> str:
    """Why the call is refused when nobody can be asked, and how to allow it."""
    reason = f": {verdict.reason}" if verdict.reason else ""
    if verdict.asks == "rule":
        return (
            f"{tool.name} needs approval: policy rule `{verdict.rule}` asks for it{reason}; "
            "no terminal to ask on; rerun with --yes (allow rules do not cover a call an "
            "ask rule matches)"
        )
    if verdict.asks == "hook":
        return (
            f"{tool.name} needs approval: hook {verdict.hook.hook} asks for it{reason}; "
            "no terminal to ask on; rerun with --yes"
        )
    if verdict.asks == "approval":
        how = "rerun with --yes (it is declared `approval: true`, so allow rules do not skip the question)"
    else:
        how = f"rerun with --yes or add `{verdict.suggestion}` to policy.allow in {settings_file}"
    blocker = verdict.why.partition(": ")[2] if verdict.asks == "unmatched" else ""
    detail = f" ({blocker})" if blocker else ""
    return f"{tool.name} needs approval{detail}: no terminal to ask on; {how}"


def asked_extra(verdict: Verdict) -> dict[str, Any]:
    """The extras of an "ask" verdict's refusal: how to allow the call, the rule, the reason."""
    extra: dict[str, Any] = {"needs_approval": True}
    if verdict.asks in ("unmatched", "approval"):
        extra["allow_rule"] = verdict.suggestion
    if verdict.asks == "rule" and verdict.rule is not None:
        extra["rule"] = verdict.rule.text
    if verdict.reason:
        extra["reason"] = verdict.reason
    return extra


def question_note(verdict: Verdict) -> str | None:
    """The line under the question saying why it is asked (None: the usual question)."""
    reason = f": {verdict.reason}" if verdict.reason else ""
    if verdict.asks == "rule":
        return f"Asked because of policy rule `{verdict.rule}`{reason}"
    if verdict.asks == "hook":
        return f"Asked because hook {verdict.hook.hook} asks{reason}"
    return None


def declined(tool_name: str) -> Decision:
    """A person's "no" to a call of ``tool_name``."""
    return Decision(
        False, f"the user declined this {tool_name} call; do not retry it", code="DENIED"
    )


def _shorten(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
