"""Who answers the policy's questions: a person at the terminal, nobody, or a script.

The policy (:mod:`mdagent.safety.policy`) decides and hands each question it may
not answer alone to the approver the runtime gave it
(:class:`mdagent.safety.policy.Approver`):

- :class:`TerminalApprover` asks a person on the terminal (the command line
  and the interactive session, when a terminal is there);
- :class:`RefusingApprover` asks nobody (``agent mcp serve``, runs without a
  terminal): every question is refused with the reason and how to allow it;
- :class:`ScriptedApprover` answers from a script (tests).

An "always" answer is kept by :meth:`SettingsApprover.remember`: the allow
rule goes into the project layer's ``config/agent.yaml`` through
:mod:`mdagent.declarations.edit`, the one module that edits settings files, and the
person is told what happened.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from mdagent.core.defaults import PROJECT_DIR, settings_path
from mdagent.core.errors import ConfigError, logger
from mdagent.safety.policy import Nobody, Question

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

log = logger("mdagent.runtime.approvers")


class RefusingApprover(Nobody):
    """Nobody to ask: the policy refuses every question, saying how to allow the call.

    The policy's own default (:class:`mdagent.safety.policy.Nobody`), named for the
    runtime to hand in where nobody can answer.
    """


class SettingsApprover:
    """An approver that keeps "always" answers in the project's settings file.

    ``project_layer`` is the ``.agents`` folder whose ``config/agent.yaml``
    gets the rule (None: no project layer, the rule holds for this process
    only); ``workdir`` is where the file is named from in messages.
    ``saved()`` is called after a rule was written (the runtime keeps the
    workspace's trust current, :mod:`mdagent.runtime.trust`). ``tell(message)`` shows
    what an answer did (default: one ``agent: …`` line on stderr).
    """

    interactive = True

    def __init__(
        self,
        project_layer: str | Path | None,
        *,
        workdir: str | Path | None = None,
        saved: Callable[[], None] | None = None,
        tell: Callable[[str], None] | None = None,
    ) -> None:
        self.project_layer = Path(project_layer) if project_layer is not None else None
        self.workdir = Path(workdir) if workdir is not None else None
        self.saved = saved
        self.tell = tell if tell is not None else _tell

    def ask(self, question: Question) -> str:
        raise NotImplementedError

    def remember(self, rule: str) -> None:
        """Add ``rule`` to ``policy.allow`` of the project's settings and say so."""
        from mdagent.declarations.edit import add_allow_rule

        if self.project_layer is None:
            self.tell(
                f"note: no project layer ({PROJECT_DIR}/); `{rule}` is allowed for this session only"
            )
            return
        target = settings_path(self.project_layer)
        try:
            add_allow_rule(target, rule)
        except (OSError, ConfigError) as exc:
            log.warning("could not save allow rule %r: %s", rule, exc)
            self.tell(
                f"warning: could not add `{rule}` to {target}: {exc}; allowed for this session only"
            )
            return
        if self.saved is not None:
            self.saved()
        self.tell(f"added allow rule `{rule}` to {self._shown(target)}")

    def _shown(self, target: Path) -> str:
        try:
            return str(target.relative_to(self.workdir)) if self.workdir else str(target)
        except ValueError:
            return str(target)


class TerminalApprover(SettingsApprover):
    """Asks a person on the terminal (:func:`mdagent.ui.approval.ask_terminal`).

    ``ask`` replaces the terminal question (same signature), as tests do.
    """

    def __init__(self, project_layer: str | Path | None, *, ask: Any = None, **kwargs: Any):
        super().__init__(project_layer, **kwargs)
        self.ask_terminal = ask

    def ask(self, question: Question) -> str:
        ask = self.ask_terminal
        if ask is None:
            from mdagent.ui.approval import ask_terminal as ask
        # The call's cancel event: Ctrl-C must drop the question at once, not
        # leave it waiting to swallow the person's next line. `protected`: the
        # agent's own configuration, shown whole.
        return ask(
            question.tool,
            question.args,
            cancel=question.cancel,
            always=question.always,
            note=question.note,
            workdir=question.workdir,
            protected=question.protected,
        )


class ScriptedApprover(SettingsApprover):
    """Answers from a script: ``answers`` is a list taken in order (then "no"), or
    ``answer(question) -> str``. The questions asked are kept in :attr:`asked`."""

    def __init__(
        self,
        answers: Iterable[str] | Callable[[Question], str] = (),
        project_layer: str | Path | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(project_layer, **kwargs)
        self.asked: list[Question] = []
        if callable(answers):
            self._answer = answers
        else:
            script = iter(list(answers))
            self._answer = lambda question: next(script, "no")

    def ask(self, question: Question) -> str:
        self.asked.append(question)
        return self._answer(question)


def _tell(message: str) -> None:
    from mdagent.ui.approval import tell

    tell(message)
