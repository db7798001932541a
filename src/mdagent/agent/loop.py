"""The tool loop: a model that answers by calling the declared tools.

The loop is small, in the spirit of mini-swe-agent::

    run -> step -> query -> execute

``run`` appends the user's message and steps until something stops it; ``step``
asks the model (``query``) and runs the calls it made (``execute``), whose
results go back to the model on the next step. Leaving the loop is an
exception carrying its message (:class:`FinalAnswer`, :class:`CutShort`,
:class:`StepLimitReached`), never a flag threaded through.

Every call goes through the toolbox (validation, policy, hooks, handler), so a
model gets exactly what a person typing ``/name`` gets, minus what the policy
refuses. Every message goes to the :class:`~mdagent.agent.conversation.Conversation`
as it arrives. The loop writes nothing itself: what a person sees goes through
the :class:`Screen` it is handed (:class:`mdagent.ui.display.Display`), how the
turn ended comes back as an :class:`Outcome` for the caller to render.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, wait
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from mdagent.agent.conversation import Conversation, tool_message
from mdagent.agent.skillrunner import SkillRunner
from mdagent.core.calls import Result, ToolContext
from mdagent.core.defaults import DEFAULT_SETTINGS
from mdagent.core.errors import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STEP_LIMIT,
    Interrupted,
    ProviderError,
    unknown_tool,
)
from mdagent.tools.toolbox import Toolbox, UnknownTool

if TYPE_CHECKING:
    from mdagent.agent.checkpointing import TurnCheckpoints
    from mdagent.providers.config import Provider
    from mdagent.providers.reply import Reply, ToolCall
    from mdagent.tools.hooks import SessionHooks

#: The same call this many times in a row is answered with a notice instead.
REPEAT_LIMIT = 3
#: Safe calls running at once; more would only queue on the same disk.
MAX_WORKERS = 8
#: How long Ctrl-C waits for cancelled tools to finish before leaving them.
CANCEL_GRACE_S = 3.0


class Screen(Protocol):
    """What the loop shows a person while a turn runs (:class:`mdagent.ui.display.Display`)."""

    def text(self, delta: str) -> None:
        """A piece of the answer, as it arrives."""

    def reasoning(self, delta: str) -> None:
        """A piece of the model's reasoning, never part of the answer."""

    def end_text(self) -> None:
        """The answer (or reasoning) stopped: end its open line."""

    def retrying(self, message: str) -> None:
        """A failed model request is being tried again."""

    def waiting(self) -> AbstractContextManager[None]:
        """Around a model request."""

    def running(self, names: list[str]) -> AbstractContextManager[None]:
        """Around tool calls running (``names``: their tools)."""

    def tool_call(self, name: str, arguments: Any, *, call_id: str | None = None) -> None:
        """A call about to run (or refused); ``call_id`` is the model's id of it."""

    def tool_outcome(
        self,
        name: str,
        result: Result,
        seconds: float | None = None,
        *,
        call_id: str | None = None,
        waited: float = 0.0,
    ) -> None:
        """How a call ended, how long it ran, and how long it waited for a person."""


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
    neutral word (see :attr:`Reply.cut_short <mdagent.providers.reply.Reply.cut_short>`).
    """

    def __init__(self, message: str, answer: str, reason: str) -> None:
        super().__init__(message)
        self.answer = answer
        self.reason = reason


@dataclass
class Outcome:
    """How a turn ended: the answer (None when there is none) and what it took.

    ``stop_reason`` says why an answer that arrived is not complete
    (``max_tokens``, ``context_window``, ``refusal``, ``content_filter``).
    ``cost`` is what ``usage`` cost at ``model.price`` (None: price unknown).
    ``step_limited``: the turn reached its step limit without an answer.
    """

    answer: str | None
    steps: int
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})
    session: str | None = None
    message: str = ""
    stop_reason: str | None = None
    cost: float | None = None
    step_limited: bool = False

    @property
    def exit_status(self) -> int:
        """0 with a complete final answer; 3 at the step limit; 1 otherwise (none, or cut short)."""
        if self.step_limited:
            return EXIT_STEP_LIMIT
        return EXIT_OK if self.answer is not None and not self.stop_reason else EXIT_FAILED

    @property
    def stopped(self) -> str:
        """Why the turn ended, in one word: ``answered``, ``max_steps`` or the stop reason."""
        if self.step_limited:
            return "max_steps"
        if self.answer is None:
            return "error"
        return self.stop_reason or "answered"

    @property
    def refusals(self) -> list[dict[str, Any]]:
        """The tool calls the policy refused (``code: DENIED``), in order."""
        return [c for c in self.tool_calls if (c.get("result") or {}).get("code") == "DENIED"]

    def to_dict(self) -> dict[str, Any]:
        """The ``agent ask --json`` object."""
        data: dict[str, Any] = {
            "answer": self.answer,
            "tool_calls": self.tool_calls,
            "session": self.session,
            "steps": self.steps,
            "usage": self.usage,
        }
        if self.cost is not None:
            data["cost"] = round(self.cost, 8)  # no float noise (0.0011770000000000001)
        if self.message:
            data["error"] = self.message
        if self.stop_reason:
            data["stop_reason"] = self.stop_reason
        return data


def _prompt_text(message: dict[str, Any]) -> str:
    """A user message's text (a list of parts: its text parts), for a checkpoint's label."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("text")
        )
    return ""


ContextFactory = Callable[[str | None], ToolContext]
#: A call about to run: its index in the model's reply, the call, the real tool name.
Planned = tuple[int, "ToolCall", str]


class Agent:
    """One model, one toolbox, one conversation; :meth:`run` does a turn.

    ``tools`` are the tool descriptions sent to the model (``{"name",
    "description", "parameters"}``); a call to any other tool fails as
    unknown. ``context(call_id)`` builds the :class:`ToolContext` of one call
    (default: a bare model context). ``display`` is told what happens as it
    happens; ``hooks`` run around each turn. ``checkpoints`` records the
    workspace before a turn's first call that can write, and at its end.
    """

    def __init__(
        self,
        provider: Provider,
        toolbox: Toolbox,
        *,
        system: str,
        tools: list[dict[str, Any]],
        conversation: Conversation | None = None,
        display: Screen,
        max_steps: int = DEFAULT_SETTINGS["agent"]["max_steps"],
        context: ContextFactory | None = None,
        hooks: SessionHooks | None = None,
        checkpoints: TurnCheckpoints | None = None,
        limit_name: str = "agent.max_steps",
    ) -> None:
        self.provider = provider
        self.checkpoints = checkpoints
        self.toolbox = toolbox
        self.hooks = hooks  # session_start, prompt and stop
        self.system = system
        self.tools = tools
        self.tool_names = {t["name"] for t in tools}
        self.conversation = conversation if conversation is not None else Conversation()
        self.max_steps = max_steps
        self.limit_name = limit_name  # what the step-limit message tells the person to raise
        self.context = context or self._default_context
        self.display = display
        self.steps = 0
        self.usage = {"input_tokens": 0, "output_tokens": 0}
        self.records: list[dict[str, Any]] = []
        self._last_call: tuple[str, str] | None = None
        self._repeats = 0
        self._slots = threading.BoundedSemaphore(MAX_WORKERS)
        self._calls: list[ToolCall] = []
        self._results: list[Result | None] = []
        self._durations: list[float | None] = []
        self._waits: list[float] = []
        self._written = 0
        self._paused_text = ""

    def _default_context(self, call_id: str | None) -> ToolContext:
        return ToolContext(
            toolbox=self.toolbox,
            caller="model",
            conversation_id=self.conversation.session_id,
            tool_call_id=call_id,
            skill_runner=SkillRunner(),
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
        self._paused_text = ""
        if self.checkpoints is not None:
            # Turns are counted by the person's messages: rewinding the conversation to
            # before turn N keeps the messages before the Nth.
            number = sum(1 for m in self.conversation.messages if m.get("role") == "user") + 1
            self.checkpoints.start_turn(number, _prompt_text(message))
        self.conversation.add(message)
        answer, why, short, limited = None, "", None, False
        try:
            while True:
                self.step()
        except FinalAnswer as stop:
            answer = stop.message
        except CutShort as stop:
            answer, why, short = stop.answer, stop.message, stop.reason
        except StepLimitReached as stop:
            why, limited = stop.message, True
        except ProviderError as err:
            err.session = self.conversation.session_id  # saved: what ran so far is kept
            raise
        except KeyboardInterrupt:
            self.display.end_text()
            raise Interrupted(
                "interrupted; the session is saved: continue with `agent ask --continue`"
            ) from None
        finally:
            self.display.end_text()
            if self.checkpoints is not None:
                self.checkpoints.end_turn()
        outcome = Outcome(
            answer=answer,
            steps=self.steps,
            tool_calls=self.records,
            usage=dict(self.usage),
            session=self.conversation.session_id,
            message=why,
            stop_reason=short,
            cost=self._cost(),
            step_limited=limited,
        )
        if self.hooks is not None:
            self.hooks.close_turn(outcome)
        return outcome

    def _cost(self) -> float | None:
        # A provider built by hand (tests, benchmarks) may have no config, or no price.
        cost = getattr(getattr(self.provider, "config", None), "cost", None)
        return cost(self.usage) if callable(cost) else None

    def step(self) -> None:
        """One model call and the tool calls it asks for."""
        if self.steps >= self.max_steps:
            raise StepLimitReached(
                f"stopped after {self.steps} steps without a final answer; "
                f"raise {self.limit_name} or continue with `agent ask --continue`"
            )
        self.steps += 1
        reply = self.query()
        self.conversation.add(reply.to_message())
        # A paused turn's text is the start of the answer the next step finishes.
        text, self._paused_text = self._paused_text + reply.text, ""
        if reply.cut_short:
            self.decline(reply.tool_calls, "the answer was cut off before this call was complete")
            raise CutShort(self.cut_short_message(reply), text, reply.cut_short)
        if reply.paused:
            # The server paused its own tool loop (Anthropic pause_turn): the
            # next request sends this reply back as it is, and the model goes on.
            self._paused_text = text
            return
        if not reply.tool_calls:
            raise FinalAnswer(text)
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

    def decline(self, calls: Iterable[ToolCall], why: str) -> None:
        """Answer ``calls`` with "not run" results, so the history stays valid for --continue."""
        self._calls = list(calls)
        self._results = [Result.failure(f"not run: {why}") for _ in self._calls]
        self._durations = [None] * len(self._calls)
        self._waits = [0.0] * len(self._calls)
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

    def execute(self, calls: Iterable[ToolCall]) -> None:
        """Run ``calls`` and add their results, in the model's order.

        Consecutive calls of ``safe`` tools run concurrently; every other call
        runs alone, in order (a write must land before the read after it).
        Each result is stored as soon as those before it are.
        """
        calls = list(calls)
        self._calls = calls
        self._results = [None] * len(calls)
        self._durations = [None] * len(calls)
        self._waits = [0.0] * len(calls)
        self._written = 0
        plan: list[Planned] = []
        for index, call in enumerate(calls):
            tool_name, refusal = self._admit(call)
            if refusal is not None:
                self._results[index] = refusal
                self._show_call(tool_name or call.name, call)
                self.display.tool_outcome(tool_name or call.name, refusal, call_id=call.id)
            else:
                plan.append((index, call, tool_name))
        self._write_ready()
        for batch in self._batches(plan):
            if self.checkpoints is not None:
                self.checkpoints.before_calls(name for _, _, name in batch)
            self._run_batch(batch)
            self._write_ready()

    # -- execute's parts --

    def _admit(self, call: ToolCall) -> tuple[str | None, Result | None]:
        """The real tool name, or the failure the model gets instead of a run."""
        if call.error:
            return None, Result.failure(
                f"{call.error}; the call was not run: send it again with a JSON object as arguments"
            )
        tool = self.toolbox.tool_for(call.name)
        if isinstance(tool, UnknownTool) or tool.name not in self.tool_names:
            return None, Result.failure(unknown_tool(call.name, self.tool_names))
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

    def _batches(self, plan: list[Planned]) -> Iterator[list[Planned]]:
        batch: list[Planned] = []
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

    def _run_batch(self, batch: list[Planned]) -> None:
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

    def _show_call(self, name: str, call: ToolCall) -> None:
        shown = call.arguments if call.arguments is not None else call.raw_arguments
        self.display.tool_call(name, shown, call_id=call.id)

    def _timed(self, index: int) -> Callable[..., Result]:
        """``toolbox.run`` that notes how long call ``index`` ran and how long it
        waited for a person's answer (both shown with its outcome)."""

        def run(*args: Any) -> Result:
            start = time.monotonic()
            try:
                return self.toolbox.run(*args)
            finally:
                waited = getattr(self.toolbox, "waited", lambda: 0.0)()
                self._waits[index] = waited
                self._durations[index] = max(0.0, time.monotonic() - start - waited)

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

    def _collect(self, batch: list[Planned], futures: list[Future[Result]]) -> None:
        for (index, call, name), future in zip(batch, futures, strict=True):
            if not future.done():
                continue
            error = future.exception()
            if error is None:
                result = self._results[index] = future.result()
            else:  # the toolbox turns handler errors into results; this is a bug
                result = Result.failure(f"{type(error).__name__}: {error}")
                self._results[index] = result
            # The model reads the outcome; the person sees it too, refusals included.
            self.display.tool_outcome(
                name, result, self._durations[index], call_id=call.id, waited=self._waits[index]
            )

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
