"""Hooks declared in ``agent.yaml``: commands run around tool calls and sessions.

::

    hooks:
      before:        [{tool: exec, run: ./scripts/guard.sh}]
      after:         [{run: "jq -c . >> .agents/calls.log", timeout: 5}]
      session_start: [{run: [./scripts/log.py, start]}]
      prompt:        [{run: ./scripts/context.sh}]
      stop:          [{run: "notify-send 'agent: done'"}]

Each hook gets one JSON object on stdin, with ``"event"`` naming the event:

- ``before`` (every tool call, after the deny rules and before the ask/allow
  rules, see :meth:`mdagent.tools.toolbox.Toolbox.run`): ``tool``, ``args``;
- ``after`` (after the handler): also ``result``, the handler's raw dict;
- ``session_start`` (the first turn of a session in this process):
  ``session``, ``source`` (``new`` or ``resume``), ``cwd``;
- ``prompt`` (the person's message, before the model sees it): ``session``,
  ``prompt``;
- ``stop`` (a turn ended): ``session``, ``answer`` (None at the step limit),
  ``steps``, ``reason`` (``answer``, ``step_limit``, or why the answer was
  cut short).

A hook answers by its exit status and, optionally, one JSON object on stdout.
The answer is exactly one JSON object, with nothing around it but blanks and
line ends; a guard's stdout that is anything else and not empty (a line of
progress before the object, a byte-order mark, an array, two objects, a key
written twice) is an invalid answer:

- exit 0 goes on; a ``before`` hook may print
  ``{"decision": "allow"|"ask"|"deny", "reason": "…", "arguments": {…}}``
  (``arguments`` replace the call's; they are validated and meet the deny
  rules again; ``allow`` never lifts a deny rule nor the question about the
  agent's own configuration); a ``prompt`` hook may print
  ``{"context": "…"}`` (appended to the prompt) or
  ``{"decision": "deny", "reason": "…"}``; a ``session_start`` hook may
  print ``{"decision": "deny", "reason": "…"}``;
- exit 2 refuses what the hook guards, with its stderr (stripped) as the
  reason;
- a hook that cannot start, exits with any other status, runs past its
  ``timeout`` (default 30 s; it is then killed) or prints an answer that is
  not valid **blocks** what it guards: a broken guard fails closed.
  ``on_error: warn`` makes such a failure a warning (logged and one line on
  stderr) and lets things go on. ``after`` and ``stop`` hooks cannot block:
  their failures are always warnings.

``run`` as a string runs with ``sh -c``; as a list it is the program and its
arguments, no shell. Hooks run in the workspace with the scrubbed environment
through :func:`mdagent.tools.process.run_process`, outside any tool sandbox: they
are the user's own guards. ``tool`` (``before`` and ``after`` only) filters
by tool name the way policy rules name tools: the real name or an alias
(``bash`` is ``exec``), ignoring case, possibly a glob (``read_*``); absent
or ``*``: every tool.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mdagent.core import notices
from mdagent.core.calls import HookDecision
from mdagent.core.defaults import HOOK_TIMEOUT
from mdagent.core.errors import ConfigError, PolicyDenied, logger
from mdagent.declarations.hookspec import EVENTS, GUARDS, check_hook
from mdagent.safety.rules import names_for, names_match

log = logger("mdagent.tools.hooks")

DECISIONS = ("allow", "ask", "deny")
BLOCK_STATUS = 2
# Hook output is only read for an answer, a reason or a warning; keep it small.
MAX_OUTPUT = 20_000
# What a failing guard stops, for its message.
_STOPS = {
    "before": "the call is blocked",
    "session_start": "the session does not start",
    "prompt": "the prompt is not sent",
}


class HookBlocked(PolicyDenied):
    """A hook refused (exit 2, a ``deny`` answer, or a failure while failing closed)."""


@dataclass(frozen=True)
class CommandHook:
    """One entry of a ``hooks`` list: ``{run, tool, timeout, on_error}`` for one event."""

    when: str  # one of EVENTS
    run: str | tuple[str, ...]
    workdir: str
    env: Mapping[str, str] = field(repr=False)
    tool: str | None = None
    timeout: float = HOOK_TIMEOUT
    on_error: str = "block"
    # Real name -> the tool's declared aliases (the toolbox's, when installed).
    aliases: Callable[[str], Iterable[str]] | None = field(default=None, repr=False, compare=False)
    # Why the hook may not run now (the workspace's trust lapsed during the run), or None.
    trust_check: Callable[[], str | None] | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        """The command as shown in messages."""
        return self.run if isinstance(self.run, str) else shlex.join(self.run)

    def applies_to(self, tool_name: str) -> bool:
        """Whether this hook runs for the tool whose real name is ``tool_name``.

        The filter matches like a policy rule's tool: any of the tool's names
        (:func:`mdagent.safety.rules.names_for`), ignoring case.
        """
        if self.tool is None:
            return True
        declared = self.aliases(tool_name) if self.aliases is not None else ()
        return names_match(self.tool, names_for(tool_name, declared))

    def before(self, args: Mapping[str, Any], tool_name: str) -> HookDecision | None:
        """Toolbox global before hook: the hook's decision, if it made one.

        Raises :class:`HookBlocked` on exit 2 and on a failure (unless
        ``on_error: warn``).
        """
        if not self.applies_to(tool_name):
            return None
        answer = self.consult(
            {"event": "before", "tool": tool_name, "args": dict(args)}, f"for {tool_name}"
        )
        if answer.get("decision") is None and answer.get("arguments") is None:
            return None
        return HookDecision(
            answer.get("decision"), answer.get("reason") or "", answer.get("arguments"), self.name
        )

    def after(self, args: Mapping[str, Any], result: Any, tool_name: str) -> None:
        """Toolbox global after hook: never blocks, warns when the hook fails."""
        if self.applies_to(tool_name):
            payload = {"event": "after", "tool": tool_name, "args": dict(args), "result": result}
            self.notify(payload, f"for {tool_name}")

    def consult(self, payload: Mapping[str, Any], subject: str = "") -> dict[str, Any]:
        """Run the hook on ``payload``; its answer (``{}`` when it printed none).

        Raises :class:`HookBlocked` on exit 2 and, unless ``on_error: warn``,
        on a failure; ``subject`` ("for exec") goes into the messages.
        """
        lapsed = self.trust_check() if self.trust_check is not None else None
        if lapsed:
            # Whatever on_error says: the hook's files are no longer what was trusted.
            what = " ".join(filter(None, [f"{self.when} hook `{self.name}`", subject]))
            raise HookBlocked(f"{what} not run: {lapsed}; {_STOPS.get(self.when, 'blocked')}")
        result = self._execute(payload)
        if result.exit_code == BLOCK_STATUS and not result.timed_out:
            raise HookBlocked(result.stderr.strip() or f"blocked by hook {self.name}")
        problem = _failure(result, self.timeout)
        answer: dict[str, Any] = {}
        if problem is None:
            answer, problem = _answer(result.stdout, self.when)
        if problem is None:
            return answer
        message = " ".join(filter(None, [f"{self.when} hook `{self.name}`", subject, problem]))
        if self.on_error == "block" and self.when in GUARDS:
            raise HookBlocked(
                f"{message}; {_STOPS[self.when]} (a failing hook blocks; "
                "`on_error: warn` in its entry only warns)"
            )
        _warn(message)
        return {}

    def notify(self, payload: Mapping[str, Any], subject: str = "") -> None:
        """Run the hook on ``payload`` where it cannot block: a failure is a warning."""
        lapsed = self.trust_check() if self.trust_check is not None else None
        if lapsed:
            what = " ".join(filter(None, [f"{self.when} hook `{self.name}`", subject]))
            _warn(f"{what} not run: {lapsed}")
            return
        result = self._execute(payload)
        problem = _failure(result, self.timeout) or (
            f"exited with status {BLOCK_STATUS}, but {self.when} hooks cannot block"
            if result.exit_code == BLOCK_STATUS and not result.timed_out
            else None
        )
        if problem:
            _warn(" ".join(filter(None, [f"{self.when} hook `{self.name}`", subject, problem])))

    def _execute(self, payload: Mapping[str, Any]) -> Any:
        from mdagent.tools.process import run_process

        argv = ["sh", "-c", "--", self.run] if isinstance(self.run, str) else list(self.run)
        data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
        # run_process, never the tool runner: a hook is the user's own guard and
        # runs outside any sandbox a tool call gets.
        return run_process(
            argv,
            cwd=self.workdir,
            env=dict(self.env),
            timeout=self.timeout,
            max_output=MAX_OUTPUT,
            stdin_data=data,
        )


def _failure(result: Any, timeout: float) -> str | None:
    """What went wrong running the hook (exit 2 aside), or None."""
    if result.not_started:
        return f"could not start: {result.not_started}"
    if result.timed_out:
        return f"timed out after {timeout:g} s"
    if result.exit_code not in (0, BLOCK_STATUS):
        detail = result.stderr.strip().splitlines()
        suffix = f": {detail[0]}" if detail else ""
        return f"exited with status {result.exit_code}{suffix}"
    return None


def _answer(stdout: str, event: str) -> tuple[dict[str, Any], str | None]:
    """The JSON answer a hook printed (``{}`` for none), or what is wrong with it.

    A guard's stdout is its answer: empty, or exactly one JSON object with
    only JSON's blanks around it. Anything else is refused rather than
    searched for an object: a deny after a line of progress, behind a
    byte-order mark or inside an array must never read as no answer.
    """
    if event not in GUARDS:
        return {}, None
    text = stdout.strip(_JSON_BLANKS)
    if not text:
        return {}, None
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        return {}, f"printed an answer with the key {json.dumps(str(exc))} twice"
    except ValueError as exc:
        return {}, f"printed an answer that is not one JSON object ({_invalid(text, exc)})"
    if not isinstance(data, dict):
        return {}, "printed an answer that is not a JSON object"
    decisions = DECISIONS if event == "before" else ("allow", "deny")
    # A key this event does not read (`"Decision"`, a misspelling) is not understood:
    # the guard may have meant to refuse. Fail closed, as for any invalid answer.
    unknown = sorted(set(data) - set(_ANSWER_KEYS[event]))
    if unknown:
        expected = ", ".join(f'"{k}"' for k in _ANSWER_KEYS[event])
        return {}, f"answered the key {json.dumps(unknown[0])}, which it does not read ({expected})"
    if "decision" in data and data["decision"] is None:
        return {}, 'answered "decision": null'
    decision = data.get("decision")
    if decision is not None and decision not in decisions:
        expected = ", ".join(f'"{d}"' for d in decisions)
        return {}, f"answered decision {json.dumps(decision)}; expected {expected}"
    if data.get("reason") is not None and not isinstance(data["reason"], str):
        return {}, 'answered a "reason" that is not a string'
    arguments, context = data.get("arguments"), data.get("context")
    if event == "before" and arguments is not None and not isinstance(arguments, dict):
        return {}, 'answered "arguments" that are not a JSON object'
    if event == "prompt" and context is not None and not isinstance(context, str):
        return {}, 'answered a "context" that is not a string'
    return data, None


# The keys each answering event reads.
_ANSWER_KEYS = {
    "before": ("decision", "reason", "arguments"),
    "prompt": ("decision", "reason", "context"),
    "session_start": ("decision", "reason"),
}

# JSON's own blanks (RFC 8259): str.strip() would also drop characters JSON
# does not allow around a value, so an answer JSON refuses would pass.
_JSON_BLANKS = " \t\r\n"


class _DuplicateKey(ValueError):
    """A key written twice in one object: which of the two counts is anyone's guess."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _DuplicateKey(key)
        data[key] = value
    return data


def _invalid(text: str, exc: ValueError) -> str:
    """What is wrong with ``text`` as one JSON object, in a few words."""
    if text.startswith("\ufeff"):
        return "it starts with a byte-order mark"
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    return str(exc)


def _warn(message: str) -> None:
    log.warning("%s", message)
    notices.warn(message)


class SessionHooks:
    """The hooks of the session events: ``session_start``, ``prompt`` and ``stop``.

    The agent calls them around each turn (:meth:`mdagent.agent.loop.Agent.run`).
    """

    def __init__(self, hooks: Iterable[CommandHook], workdir: str) -> None:
        self.hooks = [h for h in hooks if h.when in ("session_start", "prompt", "stop")]
        self.workdir = workdir

    def _of(self, event: str) -> list[CommandHook]:
        return [h for h in self.hooks if h.when == event]

    def open_turn(self, conversation: Any, message: dict[str, Any]) -> dict[str, Any]:
        """The person's ``message`` after the hooks: ``session_start`` (once per
        conversation), then ``prompt``. Raises :class:`HookBlocked` when one refuses."""
        if not getattr(conversation, "started", False):
            source = "resume" if conversation.messages else "new"
            self.session_start(conversation.session_id, source, self.workdir)
            conversation.started = True
        content = message.get("content")
        if isinstance(content, str) and self._of("prompt"):
            message = {**message, "content": self.prompt(content, conversation.session_id)}
        return message

    def close_turn(self, outcome: Any) -> None:
        """Run the ``stop`` hooks for a finished turn (:class:`mdagent.agent.loop.Outcome`)."""
        if self._of("stop"):
            reason = getattr(outcome, "stop_reason", None) or (
                "answer" if outcome.answer is not None else "step_limit"
            )
            self.stop(outcome.session, outcome.answer, outcome.steps, reason)

    def session_start(self, session: str | None, source: str, cwd: str) -> None:
        """Run the ``session_start`` hooks; raises :class:`HookBlocked` when one refuses."""
        payload = {"event": "session_start", "session": session, "source": source, "cwd": cwd}
        for hook in self._of("session_start"):
            answer = hook.consult(payload)
            if answer.get("decision") == "deny":
                raise HookBlocked(answer.get("reason") or f"session refused by hook {hook.name}")

    def prompt(self, text: str, session: str | None) -> str:
        """The prompt after the ``prompt`` hooks, each one's ``context`` appended.

        Raises :class:`HookBlocked` when one refuses it.
        """
        for hook in self._of("prompt"):
            answer = hook.consult({"event": "prompt", "session": session, "prompt": text})
            if answer.get("decision") == "deny":
                raise HookBlocked(answer.get("reason") or f"prompt refused by hook {hook.name}")
            context = (answer.get("context") or "").strip()
            if context:
                text = f"{text}\n\n{context}"
        return text

    def stop(self, session: str | None, answer: str | None, steps: int, reason: str) -> None:
        """Run the ``stop`` hooks; a failure is a warning (the turn is over)."""
        payload = {
            "event": "stop",
            "session": session,
            "answer": answer,
            "steps": steps,
            "reason": reason,
        }
        for hook in self._of("stop"):
            hook.notify(payload)


def hooks_from_settings(
    settings: Mapping[str, Any],
    *,
    workdir: str,
    env: Mapping[str, str] | None = None,
    aliases: Callable[[str], Iterable[str]] | None = None,
    events: Iterable[str] = EVENTS,
    trust_check: Callable[[], str | None] | None = None,
) -> list[CommandHook]:
    """The hooks ``settings["hooks"]`` declares for ``events``; :class:`ConfigError` for a bad entry.

    ``env`` is the environment the hooks get (``None``: scrubbed from
    ``settings`` with :func:`mdagent.safety.environment.child_env`). ``aliases``
    gives a tool's declared aliases by real name, for the ``tool`` filters.
    """
    section = (settings or {}).get("hooks") or {}
    if not isinstance(section, Mapping):
        raise ConfigError("hooks: expected a mapping of events (before, after, ...)")
    if env is None:
        from mdagent.safety.environment import child_env

        env = child_env(settings)
    out = []
    for when in events:
        entries = section.get(when) or []
        if not isinstance(entries, list):
            raise ConfigError(f"hooks.{when}: expected a list")
        for i, entry in enumerate(entries):
            run, tool, timeout, on_error = check_hook(entry, f"hooks.{when}[{i}]", when)
            out.append(
                CommandHook(
                    when=when,
                    run=run,
                    workdir=str(workdir),
                    env=dict(env),
                    tool=tool,
                    timeout=timeout,
                    on_error=on_error,
                    aliases=aliases,
                    trust_check=trust_check,
                )
            )
    return out


def install_hooks(
    toolbox: Any,
    settings: Mapping[str, Any],
    *,
    workdir: str,
    env: Mapping[str, str] | None = None,
    trust_check: Callable[[], str | None] | None = None,
) -> list[CommandHook]:
    """Register the ``before`` and ``after`` hooks of ``settings`` on ``toolbox``; returns them.

    They are registered as global hooks that filter by tool name themselves,
    so they run in the order declared, before (or after) any per-tool hook.
    ``env`` is the scrubbed environment the hooks get (see
    :func:`hooks_from_settings`).
    """

    def aliases(tool_name: str) -> Iterable[str]:
        return getattr(toolbox.tool_for(tool_name), "aliases", ())

    hooks = hooks_from_settings(
        settings,
        workdir=workdir,
        env=env,
        aliases=aliases,
        events=("before", "after"),
        trust_check=trust_check,
    )
    for hook in hooks:
        if hook.when == "before":
            toolbox.before()(hook.before)
        else:
            toolbox.after()(hook.after)
    return hooks


def session_hooks(
    settings: Mapping[str, Any],
    *,
    workdir: str,
    env: Mapping[str, str] | None = None,
    trust_check: Callable[[], str | None] | None = None,
) -> SessionHooks | None:
    """The ``session_start``, ``prompt`` and ``stop`` hooks of ``settings``; None when none."""
    section = (settings or {}).get("hooks") or {}
    events = ("session_start", "prompt", "stop")
    if not isinstance(section, Mapping) or not any(section.get(e) for e in events):
        return None
    hooks = hooks_from_settings(
        settings, workdir=workdir, env=env, events=events, trust_check=trust_check
    )
    return SessionHooks(hooks, str(workdir))
