"""What the policy asks and who answers: :class:`Question`, :class:`Answer`, :class:`Approver`.

The policy (:mod:`mdagent.safety.policy`) never asks anyone itself: a call
it may not decide alone becomes a :class:`Question` for the
:class:`Approver` the runtime handed in (:mod:`mdagent.runtime.approvers`:
a person at the terminal, a script in tests, or :class:`Nobody`, which
refuses), whose reply is read as an :class:`Answer`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from mdagent.core.records import Record


class Question(Record):
    """What the policy asks a person about one call it may not decide alone.

    ``note`` is the line under the call saying why it is asked (None: the
    usual question); ``always`` says "always" may be answered (it saves
    ``suggestion``, the allow rule covering exactly this call); ``protected``:
    the call would change the agent's own configuration, so every value and
    every diff line is shown whole; ``workdir`` is where a file change is
    worked out from; ``cancel`` is the call's cancel event (Ctrl-C drops the
    question at once). ``session`` says "yes for this session" may be
    answered (the same call, the same arguments, then runs unasked until the
    session ends); ``rules`` are the allow rules "always" suggests saving
    (:meth:`mdagent.safety.policy.Policy.suggest_rules`), which the person may edit.
    """

    tool: str
    args: dict[str, Any]
    workdir: str
    note: str | None = None
    always: bool = True
    protected: bool = False
    suggestion: str | None = None
    cancel: Any = None
    session: bool = False
    rules: tuple[str, ...] = ()


#: What a person may answer (:class:`Answer` ``kind``), and the short forms.
ANSWER_KINDS = {
    "y": "yes",
    "yes": "yes",
    "s": "session",
    "session": "session",
    "t": "tell",
    "tell": "tell",
    "n": "no",
    "no": "no",
    "a": "always",
    "always": "always",
}


class Answer(Record):
    """A person's answer to a :class:`Question`, with what goes with it.

    ``kind`` is ``yes`` (this call), ``session`` (this call, and the same
    call again until the session ends: nothing is written), ``always``
    (save ``rules``, default the question's suggestion, in ``layer``:
    ``user`` or ``project``, None the approver's default), ``tell`` (no,
    and ``reason`` goes to the model) or ``no``.
    """

    kind: str
    reason: str = ""
    rules: tuple[str, ...] = ()
    layer: str | None = None

    @classmethod
    def read(cls, answer: Any) -> Answer:
        """An approver's answer as an :class:`Answer`: one already, its fields
        in a mapping, or a word (``y``, ``session``...); anything else is ``no``."""
        if isinstance(answer, Mapping):
            fields = {k: answer[k] for k in cls._fields if k in answer}
            answer = cls(**{"kind": "no", **fields})._replace(
                rules=tuple(answer.get("rules") or ())
            )
        if isinstance(answer, Answer):
            return answer._replace(kind=ANSWER_KINDS.get(str(answer.kind).strip().lower(), "no"))
        return cls(ANSWER_KINDS.get(str(answer).strip().lower(), "no"))


class Approver(Protocol):
    """Who answers the policy's questions; the runtime hands one in.

    ``interactive``: a person can be asked at all (False: every question is
    refused with the reason and how to allow the call). :meth:`ask` returns
    an :class:`Answer` or one of its words (``"yes"``, ``"session"``,
    ``"tell"``, ``"no"``, ``"always"``, any case, ``y``/``s``/``t``/``n``/``a``
    too), or raises ``EOFError`` when nobody can answer after all
    (``"closed"`` in its message: a person was there and ended the input).
    :meth:`remember` keeps an "always" answer's rule beyond this process (in
    the settings of ``layer``: ``user`` or ``project``; None: the approver's
    default) and tells the person what it did. See :mod:`mdagent.runtime.approvers`.
    """

    interactive: bool

    def ask(self, question: Question) -> str | Answer: ...

    def remember(self, rule: str, layer: str | None = None) -> None: ...


class Nobody:
    """No one to ask: every question is refused (the default approver;
    :class:`mdagent.runtime.approvers.RefusingApprover` is this one)."""

    interactive = False

    def ask(self, question: Question) -> str:
        raise EOFError("no terminal to ask on")

    def remember(self, rule: str, layer: str | None = None) -> None:
        return None
