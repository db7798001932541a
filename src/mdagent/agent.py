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
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mdagent.console import is_terminal
from mdagent.errors import Interrupted, ProviderError, ToolFailed, UsageError
from mdagent.specs import TIERS, setting, unmet_requirement
from mdagent.toolbox import Result, Toolbox, ToolContext, UnknownTool

if TYPE_CHECKING:
    from mdagent.providers.base import Provider, Reply

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


class CutShort(AgentStop):
    """The model's answer stopped short: token limit, refusal, content filter.

    ``answer`` is the text that did arrive (kept, and shown), ``reason`` the
    neutral word (see :attr:`Reply.cut_short <mdagent.providers.base.Reply.cut_short>`).
    """

    def __init__(self, message: str, answer: str, reason: str) -> None:
        super().__init__(message)
        self.answer = answer
        self.reason = reason


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
        self.started = False  # its session_start hooks ran (mdagent.hooks.SessionHooks)

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
    """The neutral tool message carrying ``result`` back to the model (capped).

    A failed call's message says so (``is_error``): Anthropic's API takes it as
    the tool_result's ``is_error``, so the model knows without parsing the JSON.
    """
    message: dict[str, Any] = {
        "role": "tool",
        "tool_call_id": call_id,
        "name": name,
        "content": capped(result.to_json()),
    }
    if not result.ok:
        message["is_error"] = True
    return message


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
    """Streamed answer text on stdout; reasoning, tool calls and their outcomes on stderr.

    ``out``/``err`` default to the ``sys`` streams of the moment (so tests that
    capture them see the output). ``show_text`` False keeps stdout for the
    ``--json`` object. The model's reasoning (thinking) is shown dimmed on
    stderr when ``reasoning`` is true (default: stderr is a terminal), never on
    stdout, never mixed into the answer. The spinners — while waiting for the
    model, while a tool call runs for more than a moment — run only when
    stderr is a terminal.
    """

    SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    DIM, PLAIN = "\033[2m", "\033[0m"
    #: A tool call running longer than this shows a spinner with its time.
    RUNNING_AFTER_S = 1.0

    def __init__(
        self,
        out: TextIO | None = None,
        err: TextIO | None = None,
        *,
        show_text: bool = True,
        spinner: bool | None = None,
        reasoning: bool | None = None,
    ) -> None:
        self._out = out
        self._err = err
        self.show_text = show_text
        self.spinner = is_terminal(self.err) if spinner is None else spinner
        self.show_reasoning = is_terminal(self.err) if reasoning is None else reasoning
        self._line_open = False
        self._reasoning_open = False
        self._spin_stop: threading.Event | None = None
        self._spin_thread: threading.Thread | None = None
        self._spin_label: Callable[[float], str | None] | None = None

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
        self._end_reasoning()
        self.out.write(delta)
        self.out.flush()
        self._line_open = not delta.endswith("\n")

    def reasoning(self, delta: str) -> None:
        """Show a piece of the model's reasoning, dimmed on stderr (or nothing)."""
        self._stop_spinner()
        if not (self.show_text and self.show_reasoning) or not delta:
            return
        if self._line_open:  # reasoning after answer text starts on a line of its own
            self.end_text()
        self.err.write(f"{self.DIM}{delta}{self.PLAIN}")
        self.err.flush()
        self._reasoning_open = not delta.endswith("\n")

    def end_text(self) -> None:
        """End the answer's (or the reasoning's) last line, if it is open."""
        self._end_reasoning()
        if self._line_open:
            self.out.write("\n")
            self.out.flush()
            self._line_open = False

    def _end_reasoning(self) -> None:
        if self._reasoning_open:
            self.err.write("\n")
            self.err.flush()
            self._reasoning_open = False

    def tool_call(self, name: str, arguments: Any) -> None:
        """One line on stderr for a call: ``→ exec  git status``."""
        self.end_text()
        self.err.write(f"→ {name}  {short_arguments(arguments)}".rstrip() + "\n")
        self.err.flush()

    def tool_outcome(self, name: str, result: Result, seconds: float | None = None) -> None:
        """One line on stderr for how a call ended: ``  ✓ exec · exit 0 · 0.3 s``."""
        self.note("  " + outcome_line(name, result, seconds))

    def retrying(self, message: str) -> None:
        """Tell a person watching that a failed model request is tried again.

        Progress, like the spinner: only on a terminal. A script's stderr gets
        the one-line error if the retries do not help, and nothing if they do.
        """
        if not self.spinner:
            return
        label = self._spin_label
        self._stop_spinner()
        self.note(f"agent: {message}")
        if label is not None:
            self._start_spinner(label)

    def note(self, message: str) -> None:
        """A line for the person on stderr (never part of the answer)."""
        self.end_text()
        self.err.write(message.rstrip("\n") + "\n")
        self.err.flush()

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Spin while the model thinks (stopped early by the first text)."""
        if self.spinner:
            self._start_spinner(lambda _spent: "waiting for the model")
        try:
            yield
        finally:
            self._stop_spinner()

    @contextmanager
    def running(self, names: list[str]) -> Iterator[None]:
        """Spin with the time taken while tool calls run, once they take a moment.

        The spinner holds the approval prompt's lock while its line is on the
        screen and lets go of it twice a second, so a question to the person
        (:func:`mdagent.approval.ask_terminal`) never lands on a spinner line.
        """
        if not self.spinner:
            yield
            return
        from mdagent.approval import _prompt_lock

        what = names[0] if len(names) == 1 else f"{len(names)} calls"

        def label(spent: float) -> str | None:
            if spent < self.RUNNING_AFTER_S:
                return None
            return f"running {what} · {format_seconds(spent)}"

        self._start_spinner(label, lock=_prompt_lock)
        try:
            yield
        finally:
            self._stop_spinner()

    def _start_spinner(
        self, label: Callable[[float], str | None], lock: threading.Lock | None = None
    ) -> None:
        """Spin on stderr with ``label(seconds)`` (None: not yet) until stopped.

        The seconds count from the start, or from the last time ``lock`` was
        held by someone else (a question was asked: the time after it is what
        the call itself takes, and "agent: added allow rule" may follow it).
        """
        stop = threading.Event()
        err = self.err

        def spin() -> None:
            frames = self.SPINNER
            since = time.monotonic()
            i = 0
            while not stop.wait(0.1):
                if lock is not None and not lock.acquire(blocking=False):
                    since = time.monotonic()  # a question is on the screen: keep off it
                    continue
                try:
                    shown = False
                    # With a lock, show for half a second, then clear and let go.
                    for _ in range(5 if lock is not None else 1):
                        text = label(time.monotonic() - since)
                        if text is None:
                            break
                        err.write(f"\r{frames[i % len(frames)]} {text}\033[K")
                        err.flush()
                        shown = True
                        i += 1
                        if lock is None or stop.wait(0.1):
                            break
                    if shown and (lock is not None or stop.is_set()):
                        err.write("\r\033[K")
                        err.flush()
                finally:
                    if lock is not None:
                        lock.release()
            if lock is None and i:
                err.write("\r\033[K")
                err.flush()

        self._spin_stop = stop
        self._spin_label = label
        self._spin_thread = threading.Thread(target=spin, daemon=True)
        self._spin_thread.start()

    def _stop_spinner(self) -> None:
        if self._spin_stop is not None:
            self._spin_stop.set()
            if self._spin_thread is not None:
                self._spin_thread.join()
            self._spin_stop = self._spin_thread = self._spin_label = None


def format_seconds(seconds: float) -> str:
    """``0.3 s``, ``12 s``, ``2 min 5 s``: a duration for a person."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest} s"


def outcome_line(name: str, result: Result, seconds: float | None = None) -> str:
    """How a call ended, in one line: ``✓``/``✗``, exit status or error code, duration.

    ``✓ exec · exit 0 · 0.3 s``, ``✗ exec · exit 1 · 0.3 s``, ``✗ exec · timed
    out · 120 s``, ``✗ write_file needs approval: … · DENIED · 0.0 s``; another
    failure shows the first line of its error.
    """
    data = result.data
    parts: list[str] = []
    if data.get("timed_out"):
        parts.append("timed out")
    elif isinstance(data.get("exit_code"), int) and not isinstance(data.get("exit_code"), bool):
        parts.append(f"exit {data['exit_code']}")
    head = name
    if not result.ok and not parts:
        error = (result.error or "failed").strip().splitlines()[0] if result.error else "failed"
        error = error if len(error) <= 300 else error[:299] + "…"
        head = error if error.startswith(f"{name} ") else f"{name}: {error}"
    if not result.ok and data.get("code"):
        parts.append(str(data["code"]))
    if seconds is not None:
        parts.append(format_seconds(seconds))
    mark = "✓" if result.ok else "✗"
    return " · ".join([f"{mark} {head}", *parts])


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
    """How a turn ended: the answer (None when there is none) and what it took.

    ``stop_reason`` says why an answer that arrived is not complete
    (``max_tokens``, ``context_window``, ``refusal``, ``content_filter``).
    """

    answer: str | None
    steps: int
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})
    session: str | None = None
    message: str = ""
    stop_reason: str | None = None

    @property
    def exit_status(self) -> int:
        """0 with a complete final answer; 1 without one, or with one cut short."""
        return 0 if self.answer is not None and not self.stop_reason else 1

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
        if self.stop_reason:
            data["stop_reason"] = self.stop_reason
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
        provider: Provider,
        toolbox: Toolbox,
        *,
        system: str,
        tools: list[dict[str, Any]],
        conversation: Conversation | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        context: ContextFactory | None = None,
        display: Display | None = None,
        hooks: Any = None,
    ) -> None:
        self.provider = provider
        self.toolbox = toolbox
        self.hooks = hooks  # session_start, prompt and stop (mdagent.hooks.SessionHooks)
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
        self._durations: list[float | None] = []
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
        if self.hooks is not None:  # may refuse (HookBlocked) or extend the prompt
            message = self.hooks.open_turn(self.conversation, message)
        self.steps = 0
        self.records = []
        self.conversation.add(message)
        answer, why, short = None, "", None
        try:
            while True:
                self.step()
        except FinalAnswer as stop:
            answer = stop.message
        except CutShort as stop:
            answer, why, short = stop.answer, stop.message, stop.reason
        except StepLimitReached as stop:
            why = stop.message
        except KeyboardInterrupt:
            self.display.end_text()
            raise Interrupted(
                "interrupted; the session is saved: continue with `agent ask --continue`"
            ) from None
        finally:
            self.display.end_text()
        outcome = Outcome(
            answer=answer,
            steps=self.steps,
            tool_calls=self.records,
            usage=dict(self.usage),
            session=self.conversation.session_id,
            message=why,
            stop_reason=short,
        )
        if self.hooks is not None:
            self.hooks.close_turn(outcome)
        return outcome

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
        if reply.cut_short:
            self.decline(reply.tool_calls, "the answer was cut off before this call was complete")
            raise CutShort(self.cut_short_message(reply), reply.text, reply.cut_short)
        if not reply.tool_calls:
            raise FinalAnswer(reply.text)
        self.execute(reply.tool_calls)

    def cut_short_message(self, reply: Reply) -> str:
        """What the person is told when an answer stopped short, naming what to change."""
        reason = reply.cut_short
        if reason == "max_tokens":
            limit = getattr(getattr(self.provider, "config", None), "max_tokens", None)
            where = f" (model.max_tokens: {limit})" if limit else ""
            message = (
                f"the answer was cut off at the token limit{where}; raise model.max_tokens "
                "in agent.yaml, or continue with `agent ask --continue`"
            )
        elif reason == "context_window":
            message = (
                "the answer was cut off: the conversation fills the model's context window; "
                "start a new session"
            )
        elif reason == "refusal":
            message = "the model refused to answer" + ("" if reply.text else " (it gave no reason)")
        else:
            message = (
                f"the provider's content filter stopped the answer (stop reason: "
                f"{reply.stop_reason})"
            )
        if reply.tool_calls:
            n = len(reply.tool_calls)
            message += f"; {'its tool call was' if n == 1 else f'its {n} tool calls were'} not run"
        return message

    def decline(self, calls: Iterable[Any], why: str) -> None:
        """Answer ``calls`` with "not run" results, so the history stays valid for --continue."""
        self._calls = list(calls)
        self._results = [Result.failure(f"not run: {why}") for _ in self._calls]
        self._durations = [None] * len(self._calls)
        self._written = 0
        self._write_ready()

    def query(self) -> Reply:
        """Send the conversation; the answer's text streams to the display."""
        try:
            with self.display.waiting():
                reply = self.provider.complete(
                    self.system,
                    self.conversation.messages,
                    self.tools,
                    on_text=self.display.text,
                    on_reasoning=self.display.reasoning,
                    on_retry=self.display.retrying,
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
        self._durations = [None] * len(calls)
        self._written = 0
        plan: list[tuple[int, Any, str]] = []  # (index, call, real tool name) to run
        for index, call in enumerate(calls):
            tool_name, refusal = self._admit(call)
            if refusal is not None:
                self._results[index] = refusal
                self._show_call(tool_name or call.name, call)
                self.display.tool_outcome(tool_name or call.name, refusal)
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
        for _, call, name in batch:  # shown as they start, so each outcome follows its call
            self._show_call(name, call)
        contexts = [self.context(call.id) for _, call, _ in batch]
        futures = [
            self._in_thread(self._timed(index), name, call.arguments, ctx)
            for (index, call, name), ctx in zip(batch, contexts, strict=True)
        ]
        try:
            with self.display.running([name for _, _, name in batch]):
                wait(futures)
        except KeyboardInterrupt:
            for ctx in contexts:
                ctx.cancel.set()
            wait(futures, timeout=CANCEL_GRACE_S)
            self._collect(batch, futures)
            self._write_ready(missing="interrupted by the user")
            raise
        self._collect(batch, futures)

    def _show_call(self, name: str, call: Any) -> None:
        shown = call.arguments if call.arguments is not None else call.raw_arguments
        self.display.tool_call(name, shown)

    def _timed(self, index: int) -> Callable[..., Result]:
        """``toolbox.run`` that notes how long call ``index`` took (shown with its outcome)."""

        def run(*args: Any) -> Result:
            start = time.monotonic()
            try:
                return self.toolbox.run(*args)
            finally:
                self._durations[index] = time.monotonic() - start

        return run

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
        for (index, _, name), future in zip(batch, futures, strict=True):
            if not future.done():
                continue
            error = future.exception()
            if error is None:
                result = self._results[index] = future.result()
            else:  # the toolbox turns handler errors into results; this is a bug
                result = Result.failure(f"{type(error).__name__}: {error}")
                self._results[index] = result
            # The model reads the outcome; the person sees it too, refusals included.
            self.display.tool_outcome(name, result, self._durations[index])

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
    never sent, nor is a tool a deny rule without a pattern covers (``deny: [fetch]``).
    """
    tier = str(setting(settings, "agent", "tier", "full"))
    ceiling = TIERS.index(tier) if tier in TIERS else len(TIERS) - 1
    denied = _withheld(settings)
    out = []
    for tool in toolbox:
        tool_tier = str(tool.meta.get("tier") or "full")
        rank = TIERS.index(tool_tier) if tool_tier in TIERS else len(TIERS) - 1
        if rank > ceiling or unmet_requirement(tool.meta.get("requires")) is not None:
            continue
        if denied(tool):
            continue
        out.append({"name": tool.name, "description": tool.description, "parameters": tool.schema})
    return out


def _withheld(settings: Mapping[str, Any]) -> Callable[[Any], bool]:
    if not setting(settings, "policy", "deny", None):
        return lambda tool: False
    from mdagent.policy import withheld

    return withheld(settings)


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


def make_provider(runtime: Any) -> tuple[Provider, Any]:
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
    provider: Provider,
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
    from mdagent.hooks import session_hooks

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
        hooks=session_hooks(runtime.settings, workdir=str(runtime.workdir), env=runtime.env),
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


def _close(provider: Provider) -> None:
    close = getattr(provider, "close", None)
    if callable(close):
        close()
