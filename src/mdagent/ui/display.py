"""What a person sees of a turn: the answer, the reasoning, each tool call and its outcome.

The answer streams to stdout; everything about it — reasoning (dimmed), one
line per tool call, one line per outcome, notes, the spinners — goes to
stderr, so ``agent ask > file`` keeps only the answer. The entry points build
a :class:`Display` and hand it to the loop (:class:`mdagent.agent.loop.Agent`),
which only calls it: the loop itself never writes to a stream.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from mdagent.ui.console import is_terminal

if TYPE_CHECKING:
    from mdagent.core.calls import Result


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
        self._tail: LiveTail | None = None

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
        if is_terminal(self.out):
            # The model's text: its escapes must not act on the person's terminal
            # (clear it, set the title, hide what follows). A pipe gets it as sent.
            from mdagent.core.escapes import visible_lines

            delta = visible_lines(delta)
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
        from mdagent.core.escapes import visible_lines

        self.err.write(f"{self.DIM}{visible_lines(delta)}{self.PLAIN}")
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

    def tool_call(self, name: str, arguments: Any, *, call_id: str | None = None) -> None:
        """One line on stderr for a call: ``→ exec  git status``."""
        self.end_text()
        from mdagent.core.escapes import visible

        line = f"→ {visible(name)}  {short_arguments(arguments)}".rstrip()
        self.err.write(self.fitted(line) + "\n")
        self.err.flush()

    def fitted(self, line: str) -> str:
        """``line`` cut with ``…`` to the terminal's width when stderr is one (never wrapped)."""
        if not self.spinner:
            return line
        import shutil

        from mdagent.core.text import shorten

        return shorten(line, shutil.get_terminal_size().columns)

    def tool_outcome(
        self,
        name: str,
        result: Result,
        seconds: float | None = None,
        *,
        call_id: str | None = None,
        waited: float = 0.0,
    ) -> None:
        """One line on stderr for how a call ended: ``  ✓ exec · exit 0 · 0.3 s``
        (``… (waited 2.6 s for you)`` when it waited for the person's answer)."""
        self.note(self.fitted("  " + outcome_line(name, result, seconds, waited)))

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

    def live_output(self) -> LiveTail | None:
        """Where the calls about to run write their output as it comes (None: nobody watches).

        On a terminal, the last lines of it show under the spinner while they
        run (:meth:`running`); the result keeps all of it, as without.
        """
        if not self.spinner:
            return None
        if self._tail is None:
            self._tail = LiveTail()
        return self._tail

    @contextmanager
    def running(self, names: list[str]) -> Iterator[None]:
        """Spin with the time taken while tool calls run, once they take a moment,
        and the last lines of their output (:meth:`live_output`) under it.

        The spinner holds the approval prompt's lock while its lines are on the
        screen and lets go of it twice a second, so a question to the person
        (:func:`mdagent.ui.approval.ask_terminal`) never lands on a spinner line.
        """
        tail, self._tail = self._tail, None  # the next calls get a tail of their own
        if not self.spinner:
            yield
            return
        from mdagent.ui.approval import prompt_lock

        what = names[0] if len(names) == 1 else f"{len(names)} calls"

        def label(spent: float) -> str | None:
            if spent < self.RUNNING_AFTER_S:
                return None
            return f"running {what} · {format_seconds(spent)}"

        self._start_spinner(label, lock=prompt_lock, below=tail.last if tail else None)
        try:
            yield
        finally:
            self._stop_spinner()

    def _start_spinner(
        self,
        label: Callable[[float], str | None],
        lock: threading.Lock | None = None,
        below: Callable[[], list[str]] | None = None,
    ) -> None:
        """Spin on stderr with ``label(seconds)`` (None: not yet) until stopped.

        The seconds count from the start, or from the last time ``lock`` was
        held by someone else (a question was asked: the time after it is what
        the call itself takes, and "agent: added allow rule" may follow it).
        ``below()``: lines to show under the spinner's (a running command's
        last lines), each cut to the terminal's width so none wraps.
        """
        stop = threading.Event()
        err = self.err
        drawn = [0]  # lines shown under the spinner's own

        def frame(mark: str, text: str) -> str:
            lines = below() if below is not None else []
            if not lines and not drawn[0]:
                return f"\r{mark} {text}\033[K"
            import shutil

            from mdagent.core.text import shorten

            width = shutil.get_terminal_size().columns
            shown = "".join(f"\n  {shorten(line, max(width - 3, 1))}" for line in lines)
            drawn[0] = len(lines)
            up = f"\033[{len(lines)}A\r" if lines else "\r"
            return f"\r\033[J{mark} {text}{shown}{up}"

        def clear() -> None:
            # Erase below too when lines were shown there.
            err.write("\r\033[J" if drawn[0] else "\r\033[K")
            err.flush()
            drawn[0] = 0

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
                        err.write(frame(frames[i % len(frames)], text))
                        err.flush()
                        shown = True
                        i += 1
                        if lock is None or stop.wait(0.1):
                            break
                    if shown and (lock is not None or stop.is_set()):
                        clear()
                finally:
                    if lock is not None:
                        lock.release()
            if lock is None and i:
                clear()

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


class LiveTail:
    """A running call's output as it comes: the last few lines kept, to show under the spinner.

    Written to by the process runner (a watcher without a file descriptor:
    it gets decoded text), stdout and stderr alike (``error_output``), from
    the call's thread; read by the spinner's. Escapes and carriage-return
    progress are reduced to what the line finally says.
    """

    def __init__(self, keep: int = 3) -> None:
        from collections import deque

        self.keep = keep
        self._lines: deque[str] = deque(maxlen=keep)
        self._partial = ""
        self._lock = threading.Lock()
        self.error_output = self  # a process's stderr comes here too
        self.shows_all = False  # the result is not "streamed": nobody saw all of it

    def write(self, text: str) -> int:
        with self._lock:
            pieces = (self._partial + text).split("\n")
            self._partial = pieces.pop()[-4096:]
            for piece in pieces:
                line = _visible(piece)
                if line.strip():
                    self._lines.append(line)
        return len(text)

    def flush(self) -> None:
        pass

    def last(self) -> list[str]:
        """The last lines (the one still being written included)."""
        with self._lock:
            lines = list(self._lines)
            partial = _visible(self._partial)
        if partial.strip():
            lines.append(partial)
        return lines[-self.keep :]


def _visible(line: str) -> str:
    """What a terminal line shows in the end: after its last ``\r``, escapes and controls gone."""
    import re

    line = line.rsplit("\r", 1)[-1] if "\r" in line.rstrip("\r") else line.rstrip("\r")
    line = re.sub(
        r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[ -/]*[0-~])", "", line
    )
    return "".join(c if c.isprintable() else " " for c in line.expandtabs(4)).rstrip()


def format_seconds(seconds: float) -> str:
    """``0.3 s``, ``12 s``, ``2 min 5 s``: a duration for a person."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest} s"


def outcome_line(
    name: str, result: Result, seconds: float | None = None, waited: float = 0.0
) -> str:
    """How a call ended, in one line: ``✓``/``✗``, exit status or error code, duration.

    ``✓ exec · exit 0 · 0.3 s``, ``✗ exec · exit 1 · 0.3 s``, ``✗ exec · timed
    out · 120 s``, ``✗ write_file needs approval: … · DENIED · 0.0 s``; another
    failure shows the first line of its error. ``seconds`` is the run time;
    the time the call ``waited`` for a person's answer is said apart:
    ``✓ exec · exit 0 · 0.01 s (waited 2.6 s for you)``.
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
        shown = format_seconds(seconds)
        parts.append(f"{shown} (waited {format_seconds(waited)} for you)" if waited else shown)
    mark = "✓" if result.ok else "✗"
    from mdagent.core.escapes import visible

    return " · ".join([f"{mark} {visible(head)}", *parts])  # an error may quote the model


def usage_line(usage: Mapping[str, Any], cost: float | None = None) -> str:
    """What a turn took: ``tokens: 1,234 in · 56 out · $0.0012`` ("" when nothing was counted).

    The cost is shown when the model's price is known (``model.price``),
    to two significant digits below a cent.
    """
    tokens_in = int(usage.get("input_tokens") or 0)
    tokens_out = int(usage.get("output_tokens") or 0)
    if not (tokens_in or tokens_out):
        return ""  # a server that reports no usage: 0 would be a claim, not a count
    line = f"tokens: {tokens_in:,} in · {tokens_out:,} out"
    if cost is not None:
        line += f" · {format_cost(cost)}"
    return line


def format_cost(cost: float) -> str:
    """``$1.23``, ``$0.0012``: enough decimals for two significant digits, at least two."""
    import math

    if 0 < cost < 0.00005:
        return "< $0.0001"  # more decimals would be noise, none would read as free
    decimals = 2 if cost <= 0 else max(2, 1 - math.floor(math.log10(cost)))
    shown = f"{cost:,.{decimals}f}"
    if decimals > 2 and len(shown.rstrip("0").split(".")[1]) < decimals - 1:
        decimals -= 1  # 0.00999 rounds to 0.010: keep two significant digits, not three
        shown = f"{cost:,.{decimals}f}"
    return f"${shown}"


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
    from mdagent.core.escapes import visible

    # Escaped first: `\x1b[2K\x1b[1A` must not erase the line above, nor U+202E turn it.
    text = visible(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"
