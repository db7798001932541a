"""The session's prompt on a terminal: prompt_toolkit with history, completion and paste.

Imported only by the interactive session (prompt_toolkit costs start-up time
``agent /name`` never pays). What it gives a person:

- Enter sends; Esc Enter or a line ending in ``\\`` starts a new line;
  a bracketed paste is inserted as it is, so a pasted block is one message;
- Emacs keys; Up/Down walk the history and Ctrl-R searches it; the history is
  kept per workspace in the state dir (private: it holds what was typed);
- Tab shows a menu: ``/names`` with their descriptions while a ``/`` word is
  typed, a command's arguments after it, file paths relative to the working
  directory otherwise;
- Ctrl-C clears a typed line; at an empty prompt it ends the read with
  :class:`~mdagent.session.session_commands.EmptyInterrupt` (twice in a row leaves); Ctrl-D on
  an empty line leaves;
- ``@`` opens a menu of the files under the working directory (``@path``
  sends the file with the message, :mod:`mdagent.agent.mentions`);
- Shift+Tab cycles the permission mode (ask, accept-edits, plan, full) when
  no completion menu is open;
- a bottom toolbar with the model, the permission mode and where it came
  from, the session id and the tokens used.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings

if TYPE_CHECKING:
    from mdagent.session.repl import Repl


def history_file(workdir: Path, state: Path | None = None) -> Path:
    """Where the typed lines of workspace ``workdir`` are kept (created private)."""
    from mdagent.core.layers import state_dir

    key = f"{zlib.crc32(str(workdir).encode()):08x}"
    folder = (state or state_dir()) / "history"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{workdir.name or 'root'}-{key}.txt"
    if not path.exists():
        # What a person types may hold secrets: only they may read it.
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    return path


class SessionCompleter(Completer):
    """``/names`` with descriptions, a command's arguments, and paths under the working directory."""

    def __init__(self, repl: Repl) -> None:
        self.repl = repl

    def get_completions(self, document: Document, event: CompleteEvent) -> Iterator[Completion]:
        text = document.text_before_cursor
        stripped = text.lstrip()
        word = text.split()[-1] if text and not text[-1].isspace() else ""
        if stripped.startswith("/") and not any(c.isspace() for c in stripped):
            for name, description in self.repl.command_names():
                if name.startswith(stripped):
                    yield Completion(name, -len(stripped), display_meta=first_line(description))
            return
        if word.startswith("@") and "\n" not in word:  # @path: the workspace's files, as typed
            from mdagent.tools.dispatch import complete_path

            for value in complete_path(word[1:], str(self.repl.runtime.cwd)):
                yield Completion("@" + value, -len(word))
            return
        if not event.completion_requested:
            return  # arguments and paths on Tab only, never while typing a message
        found: list[str] = []
        if stripped.startswith("/") and "\n" not in stripped:
            found = self.repl.argument_completions(stripped, word)
        if not found and not word.startswith("-"):
            from mdagent.tools.dispatch import complete_path

            found = complete_path(word, str(self.repl.runtime.cwd))
        for value in found:
            yield Completion(value, -len(word))


def first_line(text: str | None) -> str:
    from mdagent.core.text import first_line as first

    return first(text, 60)


def key_bindings(repl: Repl | None = None) -> KeyBindings:
    """Enter sends, Esc Enter and a trailing backslash continue, Ctrl-C as a shell does;
    Esc leaves shell mode (``!`` alone entered it); Shift+Tab cycles ``repl``'s
    permission mode when no completion menu is open."""
    from prompt_toolkit.filters import Condition

    from mdagent.session.session_commands import EmptyInterrupt

    keys = KeyBindings()

    # Eager: at once, not after the pause that tells Esc from Esc Enter (a
    # newline, which shell mode gives up), so the next key typed is not lost.
    @keys.add("escape", filter=Condition(lambda: repl is not None and repl.shell_mode), eager=True)
    def _leave_shell_mode(event: Any) -> None:
        repl.shell_mode = False  # type: ignore[union-attr]
        event.app.invalidate()  # the prompt is drawn again as ›

    @keys.add("enter")
    def _enter(event: Any) -> None:
        buffer = event.current_buffer
        if buffer.complete_state is not None:
            buffer.complete_state = None  # Enter on a menu takes the entry shown
        before = buffer.document.text_before_cursor
        if before.endswith("\\") and buffer.document.is_cursor_at_the_end:
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
            return
        buffer.validate_and_handle()

    @keys.add("c-o", filter=Condition(lambda: repl is not None))
    def _open_last(event: Any) -> None:
        from prompt_toolkit.application import run_in_terminal

        # Above the prompt, in the terminal's normal mode (the pager reads keys).
        run_in_terminal(repl.open_last)  # type: ignore[union-attr]

    @keys.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("s-tab")
    def _cycle_mode(event: Any) -> None:
        buffer = event.current_buffer
        if buffer.complete_state is not None:  # a menu is open: Shift+Tab walks it back
            buffer.complete_previous()
            return
        if repl is not None:
            repl.cycle_mode()
            event.app.invalidate()  # the toolbar shows the new mode

    @keys.add("c-c")
    def _interrupt(event: Any) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()  # drop the typed text, stay at the prompt
            return
        event.app.exit(exception=EmptyInterrupt())

    return keys


class TerminalInput:
    """Reads one message at a time from the person at the terminal."""

    def __init__(self, repl: Repl) -> None:
        from mdagent.session.session_commands import PROMPT, SHELL_PROMPT

        self.repl = repl
        self.interrupted = False  # a Ctrl-C the last read saw after its own
        self.session: PromptSession[str] = PromptSession(
            lambda: SHELL_PROMPT if repl.shell_mode else PROMPT,
            history=FileHistory(str(history_file(repl.runtime.workdir))),
            completer=SessionCompleter(repl),
            complete_while_typing=True,
            key_bindings=key_bindings(repl),
            bottom_toolbar=self.toolbar,
            prompt_continuation=lambda width, line, soft: "… ".rjust(width),
            enable_history_search=False,  # Up walks the history; Ctrl-R searches it
            mouse_support=False,
        )

    def toolbar(self) -> str:
        """``model · mode · session id · tokens``, shortened to the terminal's width."""
        try:
            width = self.session.app.output.get_size().columns
        except Exception:  # no size to be had: the usual terminal's
            width = 80
        return status_bar(status_parts(self.repl), width, STATUS_SHRINK)

    def read(self) -> str:
        """The next message; EOFError on Ctrl-D, EmptyInterrupt on Ctrl-C at an empty prompt.

        SIGTERM or SIGHUP at the prompt ends the read with
        :class:`~mdagent.core.signals.Terminated`, whenever in the prompt's event
        loop it arrives (even while the history is still loading).
        """
        import asyncio

        from mdagent.core import signals
        from mdagent.session.session_commands import EmptyInterrupt

        if self.interrupted:
            self.interrupted = False
            raise EmptyInterrupt()
        app = self.session.app
        arrived: list[int] = []
        loops: list[asyncio.AbstractEventLoop] = []

        def stop() -> None:
            if app.future is not None and not app.future.done():
                app.exit(exception=signals.Terminated(arrived[0]))

        def on_signal(signum: int) -> None:
            arrived.append(signum)
            if loops:
                # Safe from a signal handler: it only writes to the loop's wake-up
                # pipe. RuntimeError: the loop has closed; the check after prompt() raises.
                with contextlib.suppress(RuntimeError):
                    loops[0].call_soon_threadsafe(stop)

        def started() -> None:
            loops.append(asyncio.get_running_loop())
            if arrived:  # came before the loop was running
                stop()
            elif interrupts:
                interrupt()

        def interrupt() -> None:
            if app.future is not None and not app.future.done():
                app.exit(exception=EmptyInterrupt())

        def on_interrupt(signum: int, frame: Any) -> None:
            # A SIGINT comes only while the terminal is not in raw mode: just
            # before the prompt takes the keys or as it gives them back. Left to
            # asyncio it cancels the prompt's task, and the Ctrl-C is lost or
            # ends the session with a CancelledError; here it is a Ctrl-C at
            # an empty prompt, like the key itself.
            interrupts.append(signum)
            if loops:
                with contextlib.suppress(RuntimeError):
                    loops[0].call_soon_threadsafe(interrupt)

        interrupts: list[int] = []
        previous = _take_sigint(on_interrupt)
        try:
            with signals.deferred(on_signal):
                text = self.session.prompt(pre_run=started, handle_sigint=False)
        except EmptyInterrupt:
            # The key ended the prompt and a second Ctrl-C came as it closed:
            # the next read answers with it at once (twice in a row leaves).
            self.interrupted = bool(interrupts)
            raise
        finally:
            _give_back_sigint(previous)
        if arrived:  # came as the prompt was returning a line
            raise signals.Terminated(arrived[0])
        if interrupts:  # came as the prompt was returning: Ctrl-C wins over the line
            raise EmptyInterrupt()
        return text


def status_parts(repl: Repl) -> list[list[str]]:
    """What the bottom bar shows, left to right; each part's forms, longest first.

    The one place the bar is composed: a new part is one more list here.
    An empty form drops the part when the terminal is narrow.
    """
    from mdagent.core.text import shorten

    try:
        model = repl.config().model or "(no model)"
    except Exception:  # a broken setting is reported when a turn needs it
        model = "(no model configured)"
    usage = repl.usage
    tokens_in, tokens_out = usage["input_tokens"], usage["output_tokens"]
    session = repl.session_id or "(new)"
    try:
        in_force = repl.runtime.mode
        mode = [f"mode {in_force.mode} ({in_force.source})", in_force.mode]
    except Exception:  # a broken policy.mode is reported when a turn needs it
        mode = ["mode ?", "?"]
    return [
        [model, *([short] if (short := shorten(model, 16)) != model else [])],
        mode,
        [f"session {session}", session[:6] if repl.session_id else "new", ""],
        [
            f"tokens {tokens_in:,} in / {tokens_out:,} out",
            f"{_count(tokens_in)} in / {_count(tokens_out)} out",
            f"{_count(tokens_in)}/{_count(tokens_out)}",
        ],
    ]


#: How the bar gives up room, one step of one part at a time (indices into
#: :func:`status_parts`): the mode's source, then the tokens' long form, the
#: session id, the mode's word, the tokens' short form, the model.
STATUS_SHRINK = (1, 3, 2, 2, 1, 3, 0)


def status_bar(parts: list[list[str]], width: int, shrink: tuple[int, ...] = ()) -> str:
    """``parts`` joined with `` · `` in ``width`` columns: parts step to shorter forms,
    one step at a time in the order ``shrink`` gives (else the rightmost part first),
    until the line fits; never cut by the terminal."""
    from mdagent.core.text import display_width, shorten

    chosen = [0] * len(parts)

    def line() -> str:
        shown = [forms[i] for forms, i in zip(parts, chosen, strict=True) if forms[i]]
        return f" {' · '.join(shown)} "

    for index in shrink:
        if display_width(line()) <= width:
            break
        if index < len(parts) and chosen[index] + 1 < len(parts[index]):
            chosen[index] += 1
    while display_width(line()) > width:
        for index in reversed(range(len(parts))):
            if chosen[index] + 1 < len(parts[index]):
                chosen[index] += 1
                break
        else:
            break
    while display_width(line()) > width and len(parts) > 1:
        parts, chosen = parts[:-1], chosen[:-1]  # still too wide: the last parts go
    text = line()
    return text if display_width(text) <= width else shorten(text, max(width, 1))


def _count(n: int) -> str:
    """``987``, ``12k``, ``3.4M``: a token count in a few characters."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k" if n < 10_000 else f"{n // 1000}k"
    return f"{n / 1_000_000:.1f}M"


def _take_sigint(handler: Any) -> Any:
    """Install ``handler`` for SIGINT; the one it replaced (None: left alone)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN or previous is None:
        return None
    signal.signal(signal.SIGINT, handler)
    return previous


def _give_back_sigint(previous: Any) -> None:
    import signal

    if previous is not None:
        signal.signal(signal.SIGINT, previous)
