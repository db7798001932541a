"""Which tool calls may run: deny/ask/allow rules, modes, approval and rate limits.

The policy decides and never asks: a call is allowed, refused, or put as a
:class:`~mdagent.safety.questions.Question` to the
:class:`~mdagent.safety.questions.Approver` the runtime handed in (a person
at the terminal, a script in tests, or nobody, which refuses). It prints
nothing, reads no input and edits no file: remembering an "always" answer
is the approver's (through :mod:`mdagent.declarations.edit`).

Settings (``agent.yaml``)::

    policy:
      mode: ask            # ask | accept-edits | plan | allowlist | deny | full
      allow: ["exec(git *)", "read_file", "write_file(src/**)"]
      ask:   [{rule: "exec(git push*)", reason: "others see what you push"}]
      deny:  ["exec(rm -rf *)", "read_file(**/.env)", "fetch(domain:evil.example)"]
      inline_eval: ask     # ask | allow: may allow patterns cover `python -c ...`?

Deny rules, then ask rules, then allow rules: an ``ask`` match asks a person
(in every mode; no terminal: refused; ``--yes`` answers it) even where an
allow rule covers the call. Any rule may be a mapping ``{rule: ..., reason:
...}``; the reason is shown to the person and returned to the model with the
refusal. With ``inline_eval: ask`` (the default) an allow pattern never
covers an interpreter running code from its command line
(:mod:`mdagent.safety.shell.interpreters`: ``python3 -c``, ``node -e``...).

What a rule's pattern is matched against (a command's segments, a path, a
URL's domain, the arguments) is :mod:`mdagent.safety.rules`, on the views of
a call of :mod:`mdagent.safety.views`. The permission mode in force is
:func:`mdagent.safety.modes.effective_mode`; no mode lifts a deny rule, a
protected file or the sandbox.

Who is asking matters (``ctx.caller``): a command a person typed runs as
typed, only deny rules (and rate limits) apply. For a model (``"model"``,
``"mcp"``, anything but ``"person"``), see :meth:`Policy.check`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from mdagent.core.calls import Decision, ToolContext
from mdagent.core.catalog import EXEC_TOOLS, WRITE_TOOLS
from mdagent.core.defaults import PROJECT_DIR, settings_path
from mdagent.core.errors import ConfigError
from mdagent.safety.modes import MODES, effective_mode, plan_refusal
from mdagent.safety.questions import Answer, Approver, Nobody, Question
from mdagent.safety.rules import (
    Rule,
    command_matches,
    covering_rules,
    first_match,
    parse_rules,
    prefix_pattern,
    render_args,
    rule_for,
    rule_sources,
    tool_names,
)
from mdagent.safety.verdicts import (
    ALLOW,
    ASK,
    DENY,
    SCOPED_ASKS,
    SegmentVerdict,
    Verdict,
    asked_extra,
    declined,
    denial,
    question_note,
    refusal,
    unanswered,
)
from mdagent.safety.views import exec_view, segment_candidates

INLINE_EVAL = ("ask", "allow")


class Policy:
    """Decides whether a call may run: allow, deny, or a question for its approver.

    ``settings`` is the merged settings mapping (its ``policy`` key is read).
    ``workdir`` is the workspace root path rules are relative to. ``store``
    holds rate-limit windows (``rate_limit(tool, max_calls, window_ms)`` ->
    milliseconds to wait or None: :class:`mdagent.store.store.Store`); without one,
    a call of a rate-limited tool is refused, never let through unchecked.
    ``approver`` answers the questions an "ask" verdict puts
    (:class:`Approver`; None: nobody, every question refused); the policy
    itself never prints, reads input or edits a file. ``approve_all``
    (``--yes``) approves every question but those about the agent's own
    configuration. ``project_layer`` is the ``.agents`` folder whose
    ``config/agent.yaml`` messages point to (and whose files are protected).
    ``sources`` (:attr:`mdagent.registry.model.Registry.sources`) says where each
    rule was written; rules carry it as :attr:`Rule.source`. ``session``
    holds the calls answered "yes for this session" (:meth:`_call_key`: the
    tool and its exact arguments); the session owns it, so it outlives a
    policy rebuilt on reload or ``/mode`` and ends with the session.

    ``policy.paths`` (extra workspace roots) is not read here: file tools
    confine paths with :func:`mdagent.safety.workspace.roots_from`, its one reader.
    """

    def __init__(
        self,
        settings: Mapping[str, Any],
        *,
        workdir: str | os.PathLike[str],
        store: Any = None,
        approver: Approver | None = None,
        approve_all: bool = False,
        project_layer: Path | None = None,
        sources: Iterable[Mapping[str, Any]] = (),
        session: set[str] | None = None,
    ) -> None:
        section = (settings or {}).get("policy") or {}
        if not isinstance(section, Mapping):
            raise ConfigError("policy: expected a mapping")
        self.mode = str(section.get("mode") or "ask")
        if self.mode not in MODES:
            raise ConfigError(f"policy.mode: {self.mode!r} is not one of {', '.join(MODES)}")
        self.inline_eval = str(section.get("inline_eval") or "ask")
        if self.inline_eval not in INLINE_EVAL:
            raise ConfigError(f"policy.inline_eval: {self.inline_eval!r} is not ask or allow")
        sources = list(sources)

        def rules(key: str) -> tuple[Rule, ...]:
            return parse_rules(section.get(key), f"policy.{key}", rule_sources(sources, key))

        self.allow = list(rules("allow"))
        self.ask = rules("ask")
        self.deny = rules("deny")
        self.workdir = Path(workdir)
        self.approver: Approver = approver if approver is not None else Nobody()
        self.approve_all = approve_all
        self.project_layer = Path(project_layer) if project_layer is not None else None
        self.store = store
        # One question at a time; the agent may run calls concurrently, and a
        # call waiting for the question must see an "always" given meanwhile.
        self._asking = threading.Lock()
        self._always: set[str] = set()
        self.session_approved: set[str] = session if session is not None else set()

    # -- the verdict -------------------------------------------------------------

    def screen(self, tool: Any, args: Mapping[str, Any], ctx: Any) -> Decision | None:
        """The deny rules' refusal of this call, or None; they apply to every caller.

        The toolbox calls this before the before hooks, and again on
        arguments a hook rewrote.
        """
        args = dict(args or {})
        view = self._view(tool.name, args, ctx)
        denied = first_match(self.deny, tool_names(tool), tool.name, args, self._workdir(ctx), view)
        if denied is not None:
            return denial(*denied)
        if self.mode == "plan" and plan_refusal(tool):
            return refusal(tool, self._plan_verdict(tool), self.mode, self._settings_file())
        return None

    def check(
        self, tool: Any, args: Mapping[str, Any], ctx: ToolContext, hook: Any = None
    ) -> Decision:
        """The decision for one call of ``tool`` with (validated) ``args``.

        :meth:`evaluate` says what the rules want; "ask" is then put to a
        person at a terminal, answered by ``--yes`` (never for the agent's own
        configuration), or refused when nobody can answer. ``hook`` is what
        the before hooks said (:class:`mdagent.tools.toolbox.HookDecision`). An
        allowed call then passes the tool's rate limit.
        """
        verdict = self.evaluate(tool, args, ctx, hook=hook)
        if verdict.decision == DENY:
            decision = refusal(tool, verdict, self.mode, self._settings_file())
        elif verdict.decision == ALLOW:
            decision = Decision(True, approved_by=verdict.approved_by)
        else:
            decision = self._put_question(tool, dict(args or {}), ctx, verdict)
        if decision.allowed:
            return self._rate_limited(tool) or decision
        return decision

    def evaluate(
        self, tool: Any, args: Mapping[str, Any], ctx: Any = None, *, hook: Any = None
    ) -> Verdict:
        """What the rules say about a call, asking nobody and running nothing.

        Deny rules first, for everyone. A person's call then runs as typed
        (``ctx.caller == "person"``; no ``ctx``: a model's call). A model's
        call that would change the agent's own configuration
        (:mod:`mdagent.safety.protected`) asks, whatever the mode, the rules, a hook
        or "always" say (``allowlist`` and ``deny`` still refuse what they
        would refuse anyway). Then a before hook's ``allow`` or ``ask``
        decides; then ``policy.ask`` rules ask, in every mode; then the mode:
        ``full`` runs everything; ``allowlist`` and ``deny`` run only what an
        allow rule covers and never ask; ``ask`` runs ``safe`` tools and what
        an allow rule covers, and asks for the rest and for every tool
        declared ``approval: true``.
        """
        args = dict(args or {})
        names = tool_names(tool)
        workdir = self._workdir(ctx)
        view = self._view(tool.name, args, ctx)
        denied = first_match(self.deny, names, tool.name, args, workdir, view)
        if denied is not None:
            rule, what = denied
            return Verdict(DENY, f"denied by policy rule `{rule}`", (rule,), matched=what)
        if self.mode == "plan" and plan_refusal(tool):
            return self._plan_verdict(tool)
        if ctx is not None and getattr(ctx, "caller", None) == "person":
            return Verdict(ALLOW, "a person's command runs as typed", approved_by="person")
        target, held = self._protected_target(tool.name, args, ctx, workdir)
        if target is not None:
            if self.mode in ("allowlist", "deny"):
                base = self._by_rules(tool, args, names, workdir, view)
                if base.decision == DENY:
                    return base
            why = f"it would change {target}, part of the agent's own configuration"
            if held:  # the sandbox would refuse the write: no question, the reason
                why += ", which the sandbox keeps read-only for a model's commands"
                return Verdict(DENY, why, protected=target)
            return Verdict(ASK, why, asks="protected", protected=target)
        decided = getattr(hook, "decision", None)
        if decided == ALLOW:
            return Verdict(
                ALLOW, f"allowed by hook {hook.hook}", hook=hook, approved_by=f"hook:{hook.hook}"
            )
        if decided == ASK:
            return Verdict(ASK, f"hook {hook.hook} asks for it", asks="hook", hook=hook)
        verdict = self._by_rules(tool, args, names, workdir, view)
        if (
            verdict.decision == ASK
            and verdict.asks in SCOPED_ASKS
            and self._call_key(tool.name, args) in self.session_approved
        ):
            # Only where the very same question would be put again: an ask
            # rule, a hook, the agent's own files or a stricter mode still decide.
            return Verdict(ALLOW, 'answered "yes for this session"', approved_by="session")
        return verdict

    @staticmethod
    def _plan_verdict(tool: Any) -> Verdict:
        return Verdict(DENY, str(plan_refusal(tool)), by_mode=True)

    def explain(self, tool: Any, args: Mapping[str, Any], ctx: Any = None) -> Verdict:
        """:meth:`evaluate`, plus each segment's own verdict for ``exec`` (``agent policy check``)."""
        verdict = self.evaluate(tool, args, ctx)
        if tool.name in EXEC_TOOLS:
            view = self._view(tool.name, dict(args or {}), ctx)
            names = tool_names(tool)
            segments = tuple(self._segment_verdict(s, names) for s in view.segments or ())
            verdict = replace(verdict, segments=segments)
        return verdict

    def _by_rules(
        self, tool: Any, args: dict[str, Any], names: tuple[str, ...], workdir: str, view: Any
    ) -> Verdict:
        """A model's call after the deny rules: ask rules, mode, "always", allow rules."""
        asked = first_match(self.ask, names, tool.name, args, workdir, view)
        if asked is not None:
            rule, what = asked
            return Verdict(ASK, f"policy rule `{rule}` asks for it", (rule,), "rule", what)
        if self.mode == "full":
            return Verdict(ALLOW, "policy.mode is full", approved_by="mode:full")
        if self._call_key(tool.name, args) in self._always:
            return Verdict(ALLOW, 'answered "always" in this session', approved_by="always")
        if (
            self.mode == "accept-edits"
            and tool.name in WRITE_TOOLS
            and self._in_workspace(args, workdir)
        ):
            return Verdict(
                ALLOW,
                "policy.mode is accept-edits: a file edit inside the workspace",
                approved_by="mode:accept-edits",
            )
        rules = tuple(
            covering_rules(self.allow, names, tool.name, args, workdir, view, self._segment_blocker)
        )
        allowed = Verdict(
            ALLOW,
            "allowed by policy rule " + ", ".join(f"`{r}`" for r in rules),
            rules,
            approved_by="rule:" + ",".join(r.text for r in rules),
        )
        suggestion = rule_for(tool, args, workdir)
        if self.mode in ("allowlist", "deny"):
            if rules:
                return allowed
            why = f"policy.mode is {self.mode} and no rule in policy.allow covers it"
            return Verdict(DENY, why, suggestion=suggestion)
        if tool.meta.get("approval"):
            why = f"{tool.name} is declared `approval: true`"
            return Verdict(ASK, why, asks="approval", suggestion=suggestion)
        if rules:
            return allowed
        if str(tool.meta.get("security") or "moderate") == "safe":
            return Verdict(ALLOW, f"{tool.name} is a safe tool", approved_by="safe")
        why = "no rule in policy.allow covers it"
        blocker = self._uncoverable(view)
        return Verdict(
            ASK, f"{why}: {blocker}" if blocker else why, asks="unmatched", suggestion=suggestion
        )

    @staticmethod
    def _in_workspace(args: Mapping[str, Any], workdir: str) -> bool:
        """Whether a file tool's ``path`` lies inside the workspace itself (not ``policy.paths``)."""
        from mdagent.core.errors import PolicyDenied
        from mdagent.safety.workspace import confine

        try:
            confine(str(args.get("path") or "."), workdir)
        except PolicyDenied:
            return False
        return True

    def _segment_verdict(self, seg: Any, names: tuple[str, ...]) -> SegmentVerdict:
        """One segment as if it were the whole command (deny, ask, mode, allow)."""
        candidates = segment_candidates(seg)
        for decision, pool in ((DENY, self.deny), (ASK, self.ask)):
            rules = [r for r in pool if r.names(names)]
            for rule in rules:
                if rule.pattern is None or any(
                    command_matches(c, rule.pattern) for c in candidates
                ):
                    return SegmentVerdict(seg.text, decision, f"policy rule `{rule}`", rule)
            if rules and seg.unchecked:
                why = f"could not be checked ({seg.unchecked})"
                return SegmentVerdict(seg.text, decision, why, rules[0])
        if self.mode == "full":
            return SegmentVerdict(seg.text, ALLOW, "policy.mode is full")
        rules = [r for r in self.allow if r.names(names)]
        bare = next((r for r in rules if r.pattern is None), None)
        if bare is not None:
            return SegmentVerdict(seg.text, ALLOW, f"policy rule `{bare}`", bare)
        blocker = self._segment_blocker(seg)
        if blocker is None:
            for rule in rules:
                if command_matches(seg.text, rule.pattern):
                    return SegmentVerdict(seg.text, ALLOW, f"policy rule `{rule}`", rule)
        fallback = DENY if self.mode in ("allowlist", "deny") else ASK
        return SegmentVerdict(seg.text, fallback, blocker or "no rule in policy.allow covers it")

    def _segment_blocker(self, seg: Any) -> str | None:
        """Why no allow pattern may cover ``seg`` (None: a pattern may)."""
        if seg.dynamic:
            return seg.dynamic
        if self.inline_eval == "ask":
            from mdagent.safety.shell.interpreters import inline_code, inline_environment

            inline = inline_code(seg.core) or inline_environment(seg.argv, seg.core)
            if inline:
                return f"`{inline}` runs inline code, which allow rules do not cover (policy.inline_eval: ask)"
        return None

    def _uncoverable(self, view: Any) -> str | None:
        """Why an allow pattern could not cover this exec command, if that is why."""
        if view is None:
            return None
        if not view.parsed:
            return view.unchecked
        return next(filter(None, map(self._segment_blocker, view.segments or ())), None)

    # -- acting on it ------------------------------------------------------------

    def _put_question(
        self, tool: Any, args: dict[str, Any], ctx: Any, verdict: Verdict
    ) -> Decision:
        """An "ask" verdict, answered: by ``--yes``, a person, or nobody (refused).

        The decision carries how long the call waited for the answer
        (``waited_s``), which is not its run time.
        """
        if verdict.asks == "protected":
            return self._ask_protected(tool, args, ctx, verdict.protected or "")
        if self.approve_all or getattr(ctx, "approve_all", False):
            return Decision(True, approved_by="--yes")
        refused = Decision(
            False,
            unanswered(tool, verdict, self._settings_file()),
            code="DENIED",
            extra=asked_extra(verdict),
        )
        if not self.approver.interactive:
            return refused
        # "always" saves an allow rule and "session" remembers the call: no use
        # where an ask rule or a hook asks (they want a person every time).
        scoped = verdict.asks in SCOPED_ASKS
        key = self._call_key(tool.name, args)
        started = time.perf_counter()
        with self._asking:
            # Answered while this call waited its turn.
            if scoped and key in self._always:
                return Decision(True, approved_by="always")
            if scoped and key in self.session_approved:
                return Decision(True, approved_by="session")
            rules = self.suggest_rules(tool, args, self._workdir(ctx)) if scoped else ()
            question = self._question_for(tool, args, ctx, verdict.suggestion)
            question = question._replace(
                always=scoped and bool(rules),
                session=scoped,
                rules=rules,
                note=question_note(verdict),
            )
            answer = self._answer(question, refused)
            if isinstance(answer, Answer):
                answer = self._act_on(tool.name, key, question, answer)
        return answer._replace(waited_s=time.perf_counter() - started)

    def _act_on(self, tool_name: str, key: str, question: Question, answer: Answer) -> Decision:
        """The decision a person's answer makes; "always" and "session" remembered."""
        if answer.kind == "session" and question.session:
            self.session_approved.add(key)
            return Decision(True, approved_by="session")
        if answer.kind == "always" and question.always:
            self._always.add(key)
            for text in answer.rules or question.rules:
                try:
                    Rule.parse(text)
                except ConfigError:  # the approver checks what a person typed; never saved broken
                    continue
                self._allow_for_this_process(text)
                self.approver.remember(text, answer.layer)
            return Decision(True, approved_by="always")
        if answer.kind in ("yes", "always", "session"):  # a scope not offered: this call only
            return Decision(True, approved_by="user")
        if answer.kind == "tell" and answer.reason.strip():
            reason = " ".join(answer.reason.split())
            return Decision(
                False,
                f"the user declined this {tool_name} call and says: {reason}",
                code="DENIED",
                extra={"user_reason": reason},
            )
        return declined(tool_name)

    def _ask_protected(self, tool: Any, args: dict[str, Any], ctx: Any, target: str) -> Decision:
        """A model's call that would change ``target``, a file of the agent's own policy.

        Only a person at a terminal may let it run, one call at a time: no
        allow rule, mode, hook, "always" or ``--yes`` covers it.
        """
        refused = Decision(
            False,
            f"{tool.name} would change {target}, part of the agent's own configuration: "
            "a model may do that only with a person's approval at a terminal "
            '(allow rules, policy.mode, hooks, "always" and --yes do not cover it)',
            code="DENIED",
            extra={"protected": target, "needs_approval": True},
        )
        if not self.approver.interactive:
            return refused
        note = f"This changes {target}, part of the agent's own configuration."
        question = self._question_for(tool, args, ctx, None)
        question = question._replace(always=False, note=note, protected=True)
        started = time.perf_counter()
        with self._asking:
            answer = self._answer(question, refused)
        if isinstance(answer, Answer):
            # Neither "always" nor "session" is offered (nor kept) for these: this call only.
            answer = self._act_on(tool.name, "", question, answer)
        return answer._replace(waited_s=time.perf_counter() - started)

    def _question_for(
        self, tool: Any, args: dict[str, Any], ctx: Any, suggestion: str | None
    ) -> Question:
        return Question(
            tool.name,
            args,
            self._workdir(ctx),
            suggestion=suggestion,
            cancel=getattr(ctx, "cancel", None),
        )

    def _answer(self, question: Question, refused: Decision) -> Answer | Decision:
        """The approver's :class:`Answer`, or the decision when nobody could answer."""
        try:
            answer = Answer.read(self.approver.ask(question))
        except EOFError as closed:
            if "closed" in str(closed):  # a person was there and ended the input
                return Decision(
                    False,
                    f"the user closed the approval prompt for this {question.tool} call; "
                    "do not retry it",
                    code="DENIED",
                )
            return refused
        return answer

    def _protected_target(
        self, real: str, args: Mapping[str, Any], ctx: Any, workdir: str
    ) -> tuple[str | None, bool]:
        """What protected file a model's call would change (see :mod:`mdagent.safety.protected`),
        and whether a namespace sandbox holds it read-only (a plain write to refuse).

        A command such a sandbox runs is judged only on what the kernel does
        not hold (:func:`mdagent.safety.namespaces.held_places`); file tools, which
        write from the agent itself, always on everything.
        """
        if real not in WRITE_TOOLS and real not in EXEC_TOOLS:
            return None, False
        protected = self._protected_files(ctx, workdir)
        if real in WRITE_TOOLS:
            return protected.file_target(str(args.get("path") or "."), workdir), False
        cwd = workdir
        if args.get("cwd"):
            cwd = os.path.join(workdir, os.path.expanduser(str(args["cwd"])))
        env = getattr(ctx, "env", None)
        command = str(args.get("command", ""))
        from mdagent.safety.namespaces import held_places

        places = held_places(ctx)
        if places is not None:
            protected = protected.held_by_kernel(places)
            refused = protected.kernel_refusal(command, cwd, env)
            if refused is not None:
                return refused, True
        return protected.exec_target(command, cwd, env), False

    def protected_files(self, ctx: Any) -> Any:
        """The :class:`mdagent.safety.protected.Protected` of ``ctx``'s workspace (cached per registry):
        what the guard judges, and what a namespace sandbox binds read-only."""
        return self._protected_files(ctx, self._workdir(ctx))

    def _protected_files(self, ctx: Any, workdir: str) -> Any:
        from mdagent.safety.protectedfiles import protected_files

        registry = getattr(ctx, "registry", None)
        # An untrusted workspace's view drops its hooks and handlers, but the
        # files they name stay protected: a script rewritten now would run
        # once the person trusts the folder. Protecting more only tightens.
        source = getattr(registry, "compiled", None) or registry
        key = (id(registry), workdir)
        cache = self.__dict__.setdefault("_protected_cache", {})
        if key not in cache:
            settings = getattr(source, "settings", None) if source is not registry else None
            cache[key] = protected_files(
                workdir=workdir,
                project_layer=self.project_layer,
                layers=getattr(registry, "layers", ()) or (),
                settings=settings
                or getattr(ctx, "settings", None)
                or getattr(registry, "settings", None),
                tools=getattr(source, "tools", {}).values() if source is not None else (),
            )
        return cache[key]

    def _allow_for_this_process(self, rule_text: str) -> None:
        """An "always" answer's rule, allowed from now on (the approver keeps it beyond)."""
        rule = Rule.parse(rule_text)
        if rule not in self.allow:
            self.allow.append(rule)

    def _rate_limited(self, tool: Any) -> Decision | None:
        limit = tool.meta.get("rate_limit")
        if not isinstance(limit, Mapping) or not limit.get("max_calls"):
            return None
        max_calls = int(limit["max_calls"])
        window_ms = int(limit.get("window_ms") or 60_000)
        try:
            if self.store is None:
                raise LookupError("no store of rate-limit windows was given")
            wait_ms = self.store.rate_limit(tool.name, max_calls, window_ms)
        except Exception as exc:  # a limit that cannot be checked must not switch itself off
            return Decision(
                False,
                f"not run: the rate limit of {tool.name} cannot be checked: {exc}",
                code="UNRECORDED",
            )
        if wait_ms is None:
            return None
        return Decision(
            False,
            f"rate limited: {tool.name} allows {max_calls} calls per {window_ms} ms; "
            f"retry in {wait_ms} ms",
            code="RATE_LIMITED",
            extra={"retryable": True, "retry_after_ms": wait_ms},
        )

    # -- matching ----------------------------------------------------------------

    def _view(self, tool_name: str, args: Mapping[str, Any], ctx: Any = None) -> Any:
        if tool_name not in EXEC_TOOLS:
            return None
        view = exec_view(str(args.get("command", "")))
        workdir = base = self._workdir(ctx)
        if getattr(ctx, "cwd", None) and getattr(ctx, "caller", None) == "person":
            from mdagent.safety.workspace import base_for

            base = str(base_for(ctx))  # a person's command starts where it was typed
        cwd = os.path.join(base, os.path.expanduser(str(args["cwd"]))) if args.get("cwd") else base
        return view.placed(workdir, cwd)

    def _workdir(self, ctx: Any) -> str:
        return str(getattr(ctx, "workdir", None) or self.workdir)

    # -- suggestions ---------------------------------------------------------------

    def suggest_rules(
        self, tool: Any, args: Mapping[str, Any], workdir: str | None = None
    ) -> tuple[str, ...]:
        """The allow rules an "always" answer suggests saving (the person may edit them).

        ``exec``: a prefix rule for each part of the command line that no
        allow rule covers yet: the program and its subcommand, if it has
        one (``exec(git status:*)`` for ``ls -1 && git status --short`` when
        ``ls`` is allowed), never the whole literal line. A part no prefix
        fits (a redirection, an assignment first) is suggested as written;
        a part no pattern may cover (``$x``, inline code) leaves nothing to
        suggest, since no saved rule would spare the question. Other tools:
        :func:`mdagent.safety.rules.rule_for`.
        """
        if tool.name not in EXEC_TOOLS:
            return (rule_for(tool, args, str(workdir or self.workdir)),)
        view = exec_view(str(args.get("command", "")))
        if not view.parsed or not view.segments:
            return ()
        allowing = [r for r in self.allow if r.names(tool_names(tool)) and r.pattern is not None]
        suggested: list[str] = []
        for seg in view.segments:
            if self._segment_blocker(seg):
                return ()
            if any(command_matches(seg.text, r.pattern) for r in allowing):
                continue
            rule = f"{tool.name}({prefix_pattern(seg.text)})"
            if rule not in suggested:
                suggested.append(rule)
        return tuple(suggested)

    def _settings_file(self) -> str:
        if self.project_layer is None:
            return str(settings_path(PROJECT_DIR))
        target = settings_path(self.project_layer)
        try:
            return str(target.relative_to(self.workdir))
        except ValueError:
            return str(target)

    @staticmethod
    def _call_key(tool_name: str, args: Mapping[str, Any]) -> str:
        return tool_name + "\x00" + render_args(args)


def withheld(settings: Mapping[str, Any]) -> Callable[[Any], bool]:
    """Whether a tool is never offered to a model: a deny rule without a pattern covers it,
    or plan mode would refuse it.

    ``deny: [fetch]`` refuses every call of ``fetch``; sending its
    description would only invite calls that cannot run.
    """
    section = (settings or {}).get("policy") or {}
    deny = section.get("deny") if isinstance(section, Mapping) else None
    bare = [r for r in parse_rules(deny, "policy.deny") if r.pattern is None]
    plan = effective_mode(settings).plan  # plan mode: the tools it would refuse are not offered
    return lambda tool: (
        any(r.names(tool_names(tool)) for r in bare) or bool(plan and plan_refusal(tool))
    )
