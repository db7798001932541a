"""Who answers the policy's questions: a person at the terminal, nobody, or a script.

The policy (:mod:`mdagent.safety.policy`) decides and hands each question it may
not answer alone to the approver the runtime gave it
(:class:`mdagent.safety.questions.Approver`):

- :class:`TerminalApprover` asks a person on the terminal (the command line
  and the interactive session, when a terminal is there);
- :class:`RefusingApprover` asks nobody (``agent mcp serve``, runs without a
  terminal): every question is refused with the reason and how to allow it;
- :class:`ScriptedApprover` answers from a script (tests).

An "always" answer is kept by :meth:`SettingsApprover.remember`: the allow
rule the person kept or edited goes into the ``config/agent.yaml`` of the
layer they chose (the user layer by default in a folder they have not
trusted, else the project layer) through :mod:`mdagent.declarations.edit`, the one
module that edits settings files, and the person is told what happened.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from mdagent.core.defaults import PROJECT_DIR, settings_path
from mdagent.core.errors import ConfigError, logger
from mdagent.safety.questions import Answer, Nobody, Question
from mdagent.safety.rules import Rule

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

log = logger("mdagent.runtime.approvers")


class RefusingApprover(Nobody):
    """Nobody to ask: the policy refuses every question, saying how to allow the call.

    The policy's own default (:class:`mdagent.safety.questions.Nobody`), named for the
    runtime to hand in where nobody can answer.
    """


class SettingsApprover:
    """An approver that keeps "always" answers in a layer's settings file.

    ``project_layer`` is the ``.agents`` folder whose ``config/agent.yaml``
    gets a rule saved in the project layer (None: no project layer);
    ``user_layer`` the user's (``~/.agents``; None: none); ``workdir`` is
    where files are named from in messages. ``untrusted()`` says whether the
    person has not trusted the workspace: the user layer is then the default
    layer for a rule, since the project's rules would not apply (default:
    trusted). ``saved()`` is called after a rule was written into the
    project layer (the runtime keeps the workspace's trust current,
    :mod:`mdagent.runtime.trust`). ``tell(message)`` shows what an answer did
    (default: one ``agent: …`` line on stderr).
    """

    interactive = True

    def __init__(
        self,
        project_layer: str | Path | None,
        *,
        user_layer: str | Path | None = None,
        workdir: str | Path | None = None,
        untrusted: Callable[[], bool] | None = None,
        saved: Callable[[], None] | None = None,
        tell: Callable[[str], None] | None = None,
    ) -> None:
        self.project_layer = Path(project_layer) if project_layer is not None else None
        self.user_layer = Path(user_layer) if user_layer is not None else None
        self.workdir = Path(workdir) if workdir is not None else None
        self.untrusted = untrusted
        self.saved = saved
        self.tell = tell if tell is not None else _tell

    def ask(self, question: Question) -> str | Answer:
        raise NotImplementedError

    def layers(self) -> tuple[str, ...]:
        """The layers an "always" rule may go to, the default first."""
        there = {"project": self.project_layer, "user": self.user_layer}
        order = ("user", "project") if self.untrusted and self.untrusted() else ("project", "user")
        return tuple(name for name in order if there[name] is not None)

    def remember(self, rule: str, layer: str | None = None) -> None:
        """Add ``rule`` to ``policy.allow`` of ``layer``'s settings (None: the
        default layer, :meth:`layers`) and say so."""
        from mdagent.declarations.edit import add_allow_rule

        offered = self.layers()
        layer = layer if layer in offered else (offered[0] if offered and layer is None else None)
        folder = {"project": self.project_layer, "user": self.user_layer}.get(layer or "")
        if folder is None:
            self.tell(
                f"note: no project layer ({PROJECT_DIR}/); `{rule}` is allowed for this session only"
            )
            return
        target = settings_path(folder)
        try:
            add_allow_rule(target, rule)
        except (OSError, ConfigError) as exc:
            log.warning("could not save allow rule %r: %s", rule, exc)
            self.tell(
                f"warning: could not add `{rule}` to {target}: {exc}; allowed for this session only"
            )
            return
        if self.saved is not None and layer == "project":
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
        answer = ask(
            question.tool,
            question.args,
            cancel=question.cancel,
            always=question.always,
            note=question.note,
            workdir=question.workdir,
            protected=question.protected,
            session=question.session,
            rules=question.rules,
            layers=self.layers(),
            check_rule=_rule_problem,
        )
        return Answer.read(answer)


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


def _rule_problem(text: str) -> str | None:
    """What is wrong with a rule a person typed (None: nothing)."""
    try:
        Rule.parse(text)
    except ConfigError as exc:
        return f"{text}: {exc.message}"
    return None


def _tell(message: str) -> None:
    from mdagent.ui.approval import tell

    tell(message)
