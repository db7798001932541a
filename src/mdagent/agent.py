"""The agent: a model that answers by calling the declared tools.

The loop is small, in the spirit of mini-swe-agent::

    run -> step -> query -> execute

``run`` appends the user's message and steps until something stops it; ``step``
asks the model (``query``) and runs the calls it made (``execute``). Leaving
the loop is an exception carrying its message (:class:`FinalAnswer`,
:class:`StepLimitReached`), never a flag threaded through.

Every call goes through the toolbox (validation, policy, hooks, handler), so a
model gets exactly what a person typing ``/name`` gets, minus what the policy
refuses. Every message is written to the session store as it arrives: Ctrl-C
or a crash loses at most the message in flight.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from mdagent.console import is_terminal
from mdagent.errors import Interrupted, ProviderError, ToolFailed, UsageError
from mdagent.specs import TIERS, setting, unmet_requirement
from mdagent.toolbox import Result, Toolbox, ToolContext, UnknownTool

DEFAULT_MAX_STEPS = 25
#: A result longer than this reaches the model cut down, with a note.
MAX_RESULT_CHARS = 50_000
#: The same call this many times in a row is answered with a notice instead.
REPEAT_LIMIT = 3
#: Safe calls running at once; more would only queue on the same disk.
MAX_WORKERS = 8
#: How long Ctrl-C waits for cancelled tools to finish before leaving them.
CANCEL_GRACE_S = 3.0

BASE_INSTRUCTIONS = """\
You are mdagent, a command-line agent. You work in the workspace {workdir}; \
the current directory is {cwd}.
Use the tools to look at files and run commands instead of guessing, and to make the \
changes you are asked for. When a tool fails, read the error and adjust.
Be concise: answer in plain text, briefly, and stop when the task is done."""


# -- leaving the loop ------------------------------------------------------------


class AgentStop(Exception):
    """Leaves the loop; ``message`` is what the user is told."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message


class FinalAnswer(AgentStop):
    """The model answered without calling a tool: the turn is over."""


class StepLimitReached(AgentStop):
    """``max_steps`` model calls and still no final answer."""


# -- the conversation --------------------------------------------------------------


class Conversation:
    """The messages of one session, each written to the store as it is added.

    The store keeps a copy with secrets redacted (:meth:`Store.add_message
    <mdagent.store.Store.add_message>`); ``messages``, what the model is sent
    during this run, stay as they came. A resumed session is the redacted copy.
    Without a store (tests, benchmarks) the messages live only in memory.
    """

    def __init__(
        self,
        messages: Iterable[dict[str, Any]] = (),
        *,
        store: Any = None,
        session_id: str | None = None,
    ) -> None:
        self.messages: list[dict[str, Any]] = list(messages)
        self.store = store
        self.session_id = session_id

    @classmethod
    def start(cls, store: Any, *, cwd: str | os.PathLike[str], model: str, title: str = ""):
        """A new, empty session in ``store``."""
        return cls(store=store, session_id=store.new_session(cwd, model, title))

    @classmethod
    def resume(cls, store: Any, session_id: str) -> Conversation:
        """A stored session, repaired if it was killed mid-turn (see :func:`repair_history`)."""
        stored = store.messages(session_id)
        messages = repair_history(stored)
        conversation = cls(messages, store=store, session_id=session_id)
        if messages[: len(stored)] == stored:
            # The usual damage is at the end (killed while tools ran): store the
            # repair so `agent sessions show` and the next resume see it too.
            for message in messages[len(stored) :]:
                store.add_message(session_id, message)
        return conversation

    def add(self, message: dict[str, Any]) -> None:
        """Append ``message`` and, with a store, commit it at once."""
        self.messages.append(message)
        if self.store is not None and self.session_id is not None:
            self.store.add_message(self.session_id, message)


def repair_history(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with an "interrupted" result for every tool call that has none.

    A session killed while its tools ran ends with an assistant message whose
    calls have no results; providers reject such a history, so the missing
    results are added right after the results that did arrive.
    """
    out: list[dict[str, Any]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        out.append(message)
        index += 1
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        answered = set()
        while index < len(messages) and messages[index].get("role") == "tool":
            answered.add(messages[index].get("tool_call_id"))
            out.append(messages[index])
            index += 1
        for call in calls:
            if call.get("id") not in answered:
                failure = Result.failure(
                    "interrupted: the session stopped before this call finished"
                )
                out.append(tool_message(call.get("id"), call.get("name", ""), failure))
    return out


def tool_message(call_id: str | None, name: str, result: Result) -> dict[str, Any]:
    """The neutral tool message carrying ``result`` back to the model (capped)."""
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "name": name,
        "content": capped(result.to_json()),
    }


def capped(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """``text``, or its head and tail with a note when longer than ``limit``."""
    if len(text) <= limit:
        return text
    head = limit * 4 // 5
    tail = limit - head
    note = (
        f"\n[... result truncated: {len(text) - limit} of {len(text)} characters left out; "
        "ask for less, e.g. a narrower pattern or a line range ...]\n"
    )
    return text[:head] + note + text[-tail:]


# -- what a person sees -------------------------------------------------------------


class Display:
    """Streamed answer text on stdout, one line per tool call on stderr, a spinner.

    ``out``/``err`` default to the ``sys`` streams of the moment (so tests that
    capture them see the output). ``show_text`` False keeps stdout for the
    ``--json`` object. The spinner runs only while waiting for the model, and
    only when stderr is a terminal.
    """

    SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(
        self,
        out: TextIO | None = None,
        err: TextIO | None = None,
        *,
        show_text: bool = True,
        spinner: bool | None = None,
    ) -> None:
        self._out = out
        self._err = err
        self.show_text = show_text
        self.spinner = is_terminal(self.err) if spinner is None else spinner
        self._line_open = False
        self._spin_stop: threading.Event | None = None
        self._spin_thread: threading.Thread | None = None

    @property
    def out(self) -> TextIO:
        return self._out or sys.stdout

    @property
    def err(self) -> TextIO:
        return self._err or sys.stderr

    def text(self, delta: str) -> None:
        """Show a piece of the model's answer as it arrives."""
        self._stop_spinner()
        if not self.show_text or not delta:
            return
        self.out.write(delta)
        self.out.flush()
        self._line_open = not delta.endswith("\n")

    def end_text(self) -> None:
        """End the answer's last line, if it is open."""
        if self._line_open:
            self.out.write("\n")
            self.out.flush()
            self._line_open = False

    def tool_call(self, name: str, arguments: Any) -> None:
        """One line on stderr for a call: ``→ exec  git status``."""
        self.end_text()
        self.err.write(f"→ {name}  {short_arguments(arguments)}".rstrip() + "\n")
        self.err.flush()

    def note(self, message: str) -> None:
        """A line for the person on stderr (never part of the answer)."""
        self.end_text()
        self.err.write(message.rstrip("\n") + "\n")
        self.err.flush()

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Spin while the model thinks (stopped early by the first text)."""
        if self.spinner:
            self._start_spinner()
        try:
            yield
        finally:
            self._stop_spinner()

    def _start_spinner(self) -> None:
        stop = threading.Event()
        err = self.err

        def spin() -> None:
            frames = self.SPINNER
            i = 0
            while not stop.wait(0.1):
                err.write(f"\r{frames[i % len(frames)]} waiting for the model")
                err.flush()
                i += 1
            err.write("\r\033[K")
            err.flush()

        self._spin_stop = stop
        self._spin_thread = threading.Thread(target=spin, daemon=True)
        self._spin_thread.start()

    def _stop_spinner(self) -> None:
        if self._spin_stop is not None:
            self._spin_stop.set()
            if self._spin_thread is not None:
                self._spin_thread.join()
            self._spin_stop = self._spin_thread = None


def short_arguments(arguments: Any, limit: int = 80) -> str:
    """A call's arguments in a few words: the main value when there is one, else JSON."""
    if isinstance(arguments, Mapping):
        main = [k for k in ("command", "path", "pattern", "url", "name") if k in arguments]
        if len(arguments) == 1 or (main and isinstance(arguments[main[0]], str)):
            key = main[0] if main else next(iter(arguments))
            value = arguments[key]
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        else:
            text = json.dumps(arguments, ensure_ascii=False, default=str) if arguments else ""
    else:
        text = str(arguments or "")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- the loop ---------------------------------------------------------------------------


@dataclass
class Outcome:
    """How a turn ended: the answer (None when there is none) and what it took."""

    answer: str | None
    steps: int
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})
    session: str | None = None
    message: str = ""

    @property
    def exit_status(self) -> int:
        """0 with a final answer, 1 without."""
        return 0 if self.answer is not None else 1

    def to_dict(self) -> dict[str, Any]:
        """The ``agent ask --json`` object."""
        data: dict[str, Any] = {
            "answer": self.answer,
            "tool_calls": self.tool_calls,
            "session": self.session,
            "steps": self.steps,
            "usage": self.usage,
        }
        if self.message:
            data["error"] = self.message
        return data


ContextFactory = Callable[[str | None], ToolContext]


class Agent:
    """One model, one toolbox, one conversation; :meth:`run` does a turn.

    ``tools`` are the tool descriptions sent to the model (``{"name",
    "description", "parameters"}``); a call to any other tool fails as
    unknown. ``context(call_id)`` builds the :class:`ToolContext` of one call
    (default: a bare model context).
    """

    def __init__(
        self,
        provider: Any,
        toolbox: Toolbox,
        *,
        system: str,
        tools: list[dict[str, Any]],
        conversation: Conversation | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        context: ContextFactory | None = None,
        display: Display | None = None,
    ) -> None:
        self.provider = provider
        self.toolbox = toolbox
        self.system = system
        self.tools = tools
        self.tool_names = {t["name"] for t in tools}
        self.conversation = conversation if conversation is not None else Conversation()
        self.max_steps = max_steps
        self.context = context or self._default_context
        self.display = display or Display()
        self.steps = 0
        self.usage = {"input_tokens": 0, "output_tokens": 0}
        self.records: list[dict[str, Any]] = []
        self._last_call: tuple[str, str] | None = None
        self._repeats = 0
        self._slots = threading.BoundedSemaphore(MAX_WORKERS)
        self._calls: list[Any] = []
        self._results: list[Result | None] = []
        self._written = 0

    def _default_context(self, call_id: str | None) -> ToolContext:
        return ToolContext(
            toolbox=self.toolbox,
            caller="model",
            conversation_id=self.conversation.session_id,
            tool_call_id=call_id,
        )

    # -- run -> step -> query -> execute --

    def run(self, message: str | dict[str, Any]) -> Outcome:
        """Add the user's ``message`` and step until a final answer or the step limit.

        Raises :class:`Interrupted` on Ctrl-C (after saving what arrived) and
        lets :class:`ProviderError` through.
        """
        if isinstance(message, str):
            message = {"role": "user", "content": message}
        self.steps = 0
        self.records = []
        self.conversation.add(message)
        answer, why = None, ""
        try:
            while True:
                self.step()
        except FinalAnswer as stop:
            answer = stop.message
        except StepLimitReached as stop:
            why = stop.message
        except KeyboardInterrupt:
            self.display.end_text()
            raise Interrupted(
                "interrupted; the session is saved: continue with `agent ask --continue`"
            ) from None
        finally:
            self.display.end_text()
        return Outcome(
            answer=answer,
            steps=self.steps,
            tool_calls=self.records,
            usage=dict(self.usage),
            session=self.conversation.session_id,
            message=why,
        )

    def step(self) -> None:
        """One model call and the tool calls it asks for."""
        if self.steps >= self.max_steps:
            raise StepLimitReached(
                f"stopped after {self.steps} steps without a final answer; "
                "raise agent.max_steps or continue with `agent ask --continue`"
            )
        self.steps += 1
        reply = self.query()
        self.conversation.add(reply.to_message())
        if not reply.tool_calls:
            raise FinalAnswer(reply.text)
        self.execute(reply.tool_calls)

    def query(self) -> Any:
        """Send the conversation; the answer's text streams to the display."""
        try:
            with self.display.waiting():
                reply = self.provider.complete(
                    self.system, self.conversation.messages, self.tools, on_text=self.display.text
                )
        except ProviderError:
            # Whatever streamed before the failure is not an answer: end its line
            # so the one-line error stands on its own.
            self.display.end_text()
            raise
        for key in self.usage:
            self.usage[key] += int((reply.usage or {}).get(key) or 0)
        return reply

    def execute(self, calls: Iterable[Any]) -> None:
        """Run ``calls`` and add their results, in the model's order.

        Consecutive calls of ``safe`` tools run concurrently; every other call
        runs alone, in order (a write must land before the read after it).
        Each result is stored as soon as those before it are.
        """
        calls = list(calls)
        self._calls = calls
        self._results = [None] * len(calls)
        self._written = 0
        plan: list[tuple[int, Any, str]] = []  # (index, call, real tool name) to run
        for index, call in enumerate(calls):
            tool_name, refusal = self._admit(call)
            shown = call.arguments if call.arguments is not None else call.raw_arguments
            self.display.tool_call(tool_name or call.name, shown)
            if refusal is not None:
                self._results[index] = refusal
            else:
                plan.append((index, call, tool_name))
        self._write_ready()
        for batch in self._batches(plan):
            self._run_batch(batch)
            self._write_ready()

    # -- execute's parts --

    def _admit(self, call: Any) -> tuple[str | None, Result | None]:
        """The real tool name, or the failure the model gets instead of a run."""
        if call.error:
            return None, Result.failure(
                f"{call.error}; the call was not run: send it again with a JSON object as arguments"
            )
        tool = self.toolbox.tool_for(call.name)
        if isinstance(tool, UnknownTool) or tool.name not in self.tool_names:
            listing = ", ".join(sorted(self.tool_names)) or "(none)"
            return None, Result.failure(f"unknown tool: {call.name}. Available: {listing}")
        key = (tool.name, json.dumps(call.arguments, sort_keys=True, default=str))
        self._repeats = self._repeats + 1 if key == self._last_call else 1
        self._last_call = key
        if self._repeats > REPEAT_LIMIT:
            return tool.name, Result.failure(
                f"not run: you made this exact {tool.name} call {REPEAT_LIMIT} times in a row "
                "already and its result will not change; use the results you have, try "
                "something different, or give your final answer",
                code="REPEATED",
            )
        return tool.name, None

    def _batches(self, plan: list[tuple[int, Any, str]]) -> Iterator[list[tuple[int, Any, str]]]:
        batch: list[tuple[int, Any, str]] = []
        for item in plan:
            if self._is_safe(item[2]):
                batch.append(item)
                continue
            if batch:
                yield batch
                batch = []
            yield [item]
        if batch:
            yield batch

    def _is_safe(self, tool_name: str) -> bool:
        tool = self.toolbox.tool_for(tool_name)
        return str(tool.meta.get("security") or "moderate") == "safe"

    def _run_batch(self, batch: list[tuple[int, Any, str]]) -> None:
        # Even a lone call runs in a worker: the main thread stays free to take
        # Ctrl-C and set the call's cancel event, which stops exec's process group.
        contexts = [self.context(call.id) for _, call, _ in batch]
        futures = [
            self._in_thread(self.toolbox.run, name, call.arguments, ctx)
            for (_, call, name), ctx in zip(batch, contexts, strict=True)
        ]
        try:
            wait(futures)
        except KeyboardInterrupt:
            for ctx in contexts:
                ctx.cancel.set()
            wait(futures, timeout=CANCEL_GRACE_S)
            self._collect(batch, futures)
            self._write_ready(missing="interrupted by the user")
            raise
        self._collect(batch, futures)

    def _in_thread(self, fn: Callable[..., Result], *args: Any) -> Future[Result]:
        """Run ``fn`` in a daemon thread: a tool that ignores its cancel event
        must not keep the process alive after Ctrl-C (a pool's threads would)."""
        future: Future[Result] = Future()

        def work() -> None:
            with self._slots:
                if not future.set_running_or_notify_cancel():
                    return
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # handed to the waiting thread
                    future.set_exception(exc)

        threading.Thread(target=work, name="mdagent-tool", daemon=True).start()
        return future

    def _collect(self, batch: list[tuple[int, Any, str]], futures: list[Future[Result]]) -> None:
        for (index, _, _), future in zip(batch, futures, strict=True):
            if not future.done():
                continue
            error = future.exception()
            if error is None:
                result = self._results[index] = future.result()
                if result.data.get("code") in ("DENIED", "RATE_LIMITED"):
                    # The model reads the refusal; the person should see it too.
                    self.display.note(f"  ✗ {result.error}")
            else:  # the toolbox turns handler errors into results; this is a bug
                self._results[index] = Result.failure(f"{type(error).__name__}: {error}")

    def _write_ready(self, missing: str | None = None) -> None:
        """Store the results that are in, in order; with ``missing``, fill the rest."""
        calls, results = self._calls, self._results
        while self._written < len(calls):
            call, result = calls[self._written], results[self._written]
            if result is None:
                if missing is None:
                    return
                result = Result.failure(missing, interrupted=True)
            self.conversation.add(tool_message(call.id, call.name, result))
            self.records.append(
                {
                    "name": call.name,
                    "arguments": call.arguments
                    if call.arguments is not None
                    else call.raw_arguments,
                    "ok": result.ok,
                    "result": result.to_dict(),
                }
            )
            self._written += 1


# -- what the model is told ---------------------------------------------------------------


def model_tools(toolbox: Toolbox, settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tools sent to the model: of the configured tier or below, and available.

    ``settings["agent"]["tier"]`` is essential < standard < full (default
    full); a tool whose ``requires`` is unmet here is left out. Aliases are
    never sent.
    """
    tier = str(setting(settings, "agent", "tier", "full"))
    ceiling = TIERS.index(tier) if tier in TIERS else len(TIERS) - 1
    out = []
    for tool in toolbox:
        tool_tier = str(tool.meta.get("tier") or "full")
        rank = TIERS.index(tool_tier) if tool_tier in TIERS else len(TIERS) - 1
        if rank > ceiling or unmet_requirement(tool.meta.get("requires")) is not None:
            continue
        out.append({"name": tool.name, "description": tool.description, "parameters": tool.schema})
    return out


def system_prompt(
    *,
    workdir: str | os.PathLike[str],
    cwd: str | os.PathLike[str],
    settings: Mapping[str, Any],
    registry: Any = None,
    tool_names: Iterable[str] = (),
) -> str:
    """Base instructions + ``agent.instructions`` + the nearest AGENTS.md + the skill index."""
    parts = [BASE_INSTRUCTIONS.format(workdir=workdir, cwd=cwd)]
    extra = setting(settings, "agent", "instructions", "")
    if extra:
        parts.append(str(extra).strip())
    agents_md = find_agents_md(Path(cwd), Path(workdir))
    if agents_md is not None:
        text = agents_md.read_text(encoding="utf-8", errors="replace").strip()
        if text:
            parts.append(f"Instructions from {agents_md}:\n\n{text}")
    if registry is not None and "skill" in set(tool_names):
        index = skill_index(registry)
        if index:
            parts.append(index)
    return "\n\n".join(parts) + "\n"


def find_agents_md(cwd: Path, workdir: Path) -> Path | None:
    """The nearest ``AGENTS.md`` from ``cwd`` upwards.

    The walk stops at the workspace root when ``cwd`` is inside a real project
    (one with ``.agents/`` or ``.git``), so a stray file above it does not leak
    in; outside a project it goes up to the filesystem root.
    """
    cwd = cwd.resolve()
    workdir = workdir.resolve()
    is_project = (workdir / ".agents").is_dir() or (workdir / ".git").exists()
    inside = cwd == workdir or workdir in cwd.parents
    for folder in (cwd, *cwd.parents):
        candidate = folder / "AGENTS.md"
        if candidate.is_file():
            return candidate
        if inside and is_project and folder == workdir:
            return None
    return None


def skill_index(registry: Any) -> str:
    """The skills a model may load: name and description, or "" when there are none.

    Skills with ``disable-model-invocation`` or unmet requirements are left out.
    """
    lines = [
        f"- {skill.name}: {' '.join((skill.description or '').split())}"
        for name, skill in sorted(registry.skills.items())
        if not skill.disable_model_invocation and unmet_requirement(skill.requires) is None
    ]
    if not lines:
        return ""
    return (
        "Skills hold instructions for particular tasks. Before doing a task one of them "
        "covers, use the `skill` tool to load it:\n" + "\n".join(lines)
    )


# -- entry points ---------------------------------------------------------------------------


def make_provider(runtime: Any) -> tuple[Any, Any]:
    """``(provider, config)`` from agent.yaml, the command-line overrides and the environment."""
    from mdagent.providers import ProviderConfig, get_provider

    config = ProviderConfig.from_settings(
        runtime.settings, runtime.options.model_overrides, os.environ
    )
    return get_provider(config), config


def open_conversation(
    runtime: Any,
    model: str,
    *,
    continue_: bool = False,
    session: str | None = None,
    title: str = "",
) -> Conversation:
    """The session to add to: ``session`` (id or prefix), the latest one, or a new one.

    ``continue_`` takes the latest session of this workspace, else the latest
    of all. An unknown ``session`` is a :class:`UsageError`.
    """
    store = runtime.store
    if session:
        found = store.session(session)
        if found is None:
            raise UsageError(f"no session {session!r} (see: agent sessions)")
        return Conversation.resume(store, found["id"])
    if continue_:
        latest = store.latest_session(str(runtime.workdir)) or store.latest_session()
        if latest is not None:
            return Conversation.resume(store, latest)
        print("agent: no session to continue; starting a new one", file=sys.stderr)
    return Conversation.start(store, cwd=str(runtime.workdir), model=model, title=title)


def build_agent(
    runtime: Any,
    provider: Any,
    conversation: Conversation,
    *,
    allow: Iterable[str] = (),
    display: Display | None = None,
    toolbox: Toolbox | None = None,
) -> Agent:
    """An :class:`Agent` wired to ``runtime``: its toolbox, policy, settings and prompt.

    ``allow`` pre-approves tools for this agent only (a prompt skill's
    ``allowed-tools``). ``toolbox`` reuses one built by ``runtime.toolbox``
    (an interactive session keeps one, so "always" answers last all session).
    """
    box = toolbox
    if box is None:
        policy = runtime.policy(allow=list(allow))
        box = runtime.toolbox(policy=policy, session_id=conversation.session_id)
    tools = model_tools(box, runtime.settings)
    system = system_prompt(
        workdir=runtime.workdir,
        cwd=runtime.cwd,
        settings=runtime.settings,
        registry=runtime.registry,
        tool_names=[t["name"] for t in tools],
    )

    def context(call_id: str | None) -> ToolContext:
        return runtime.context(
            box, caller="model", conversation_id=conversation.session_id, tool_call_id=call_id
        )

    return Agent(
        provider,
        box,
        system=system,
        tools=tools,
        conversation=conversation,
        max_steps=int(setting(runtime.settings, "agent", "max_steps", DEFAULT_MAX_STEPS)),
        context=context,
        display=display or Display(show_text=not runtime.options.json),
    )


def finish(runtime: Any, outcome: Outcome) -> int:
    """Print how the turn ended (the JSON object with ``--json``); the exit status."""
    if runtime.options.json:
        print(json.dumps(outcome.to_dict(), ensure_ascii=False, default=str))
    if outcome.message:
        print(f"agent: {outcome.message}", file=sys.stderr)
    return outcome.exit_status


def run_ask(runtime: Any, text: str, *, continue_: bool = False, session: str | None = None) -> int:
    """``agent ask TEXT``: one agent turn; returns the exit status.

    ``continue_`` resumes the latest session, ``session`` a given one.
    Provider errors propagate (the CLI prints one line and exits 1); Ctrl-C
    raises :class:`Interrupted` (exit 130) after saving the session.
    """
    runtime.check_settings()
    provider, config = make_provider(runtime)
    try:
        conversation = open_conversation(
            runtime, config.model, continue_=continue_, session=session
        )
        agent = build_agent(runtime, provider, conversation)
        return finish(runtime, agent.run(text))
    finally:
        _close(provider)


def run_prompt_skill(runtime: Any, command: Any, argv: list[str]) -> int:
    """``agent /name args`` for a prompt skill: an agent turn on the skill's body.

    The body gets ``$ARGUMENTS`` and friends substituted (the arguments are
    the single word verbatim, or the words joined with ``shlex.join``); the
    skill's ``allowed-tools`` are pre-approved for this turn only.
    """
    skill = prompt_skill(runtime, command)
    arguments = argv[0] if len(argv) == 1 else shlex.join(argv)
    provider, config = make_provider(runtime)
    try:
        title = f"/{command.name} {arguments}".strip()
        conversation = Conversation.start(
            runtime.store, cwd=str(runtime.workdir), model=config.model, title=title
        )
        agent = build_agent(runtime, provider, conversation, allow=skill_allow_rules(skill))
        return finish(runtime, agent.run(skill_message(skill, arguments)))
    finally:
        _close(provider)


def prompt_skill(runtime: Any, command: Any) -> Any:
    """The skill behind a prompt command; :class:`ToolFailed` when it cannot run here."""
    skill = runtime.registry.skills.get(command.skill or command.name)
    if skill is None:
        raise UsageError(f"/{command.name}: no skill {command.skill or command.name!r}")
    reason = unmet_requirement(skill.requires)
    if reason:
        raise ToolFailed(f"/{command.name} is unavailable: {reason}")
    return skill


def skill_message(skill: Any, arguments: str) -> dict[str, Any]:
    """The user message of a prompt-skill turn: the body with the arguments substituted."""
    from mdagent.skills import read_body, substitute

    return {"role": "user", "content": substitute(read_body(skill.path), arguments, skill.dir)}


def skill_allow_rules(skill: Any) -> list[str]:
    """The policy rules a skill's ``allowed-tools`` grant for its turn (see :mod:`mdagent.skills`).

    Loading already turned the entries into rules and reported bad ones
    (``agent check``); converting again is a no-op for those and keeps a
    registry cached by an older version from granting more than it names.
    """
    from mdagent.errors import ConfigError
    from mdagent.skills import allowed_tool_rules

    rules: list[str] = []
    for text in skill.allowed_tools:
        try:
            granted = allowed_tool_rules(text)
        except ConfigError:
            continue  # reported by `agent check` at its line
        rules += [r for r in granted if r not in rules]
    return rules


def _close(provider: Any) -> None:
    close = getattr(provider, "close", None)
    if callable(close):
        close()
