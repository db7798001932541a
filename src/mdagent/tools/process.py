"""Running a child process: the one subprocess runner behind ``exec`` and ``run:``/``shell:`` tools.

:func:`run_tool_process` is the one path from a tool call to a process
(the scrubbed environment, the working directory confined to the workspace,
the limits from the settings, the result shape); :func:`start_child` the
one place a child is started, where a sandbox applies.

What it guarantees, whatever the child does:

- the child runs in its own process group (its own session), so a timeout,
  a cancel or Ctrl-C stops the whole tree, grandchildren included, and no
  process is left behind after the call returns (background jobs a command
  started are stopped when it exits); a sandboxed child also runs in a PID
  namespace (:mod:`mdagent.safety.namespaces`), which takes with it the processes
  that left its group;
- memory stays flat however much the child prints: each stream keeps only
  its first and last ``max_output // 2`` bytes;
- the call never hangs on a pipe that a grandchild still holds open;
- when a person is watching (``output`` given) the output is also written
  there live, as it arrives, byte for byte (never decoded on the way: a
  binary file comes out identical) — or, for a person's file or pipe, the
  child writes there itself (``pass_through``); when that pipe closes
  (``agent /t yes | head``) the child is stopped as a shell pipeline would
  stop it, with status 141;
- text is decoded only for the result (what a model or ``--json`` reads):
  UTF-8, with bytes that are not shown as U+FFFD and the result saying so.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping

from mdagent.core.records import Record
from mdagent.core.signals import hold

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any, TextIO

TIMEOUT_EXIT = 124
INTERRUPTED_EXIT = 130
# 128 + SIGPIPE: what a shell reports for a writer whose reader went away.
BROKEN_PIPE_EXIT = 141

# After SIGTERM, how long the group gets to exit before SIGKILL.
KILL_GRACE = 1.0
# After the group is gone, how long to keep draining pipes that someone who
# escaped the group (setsid) may still hold; beyond that the output is cut.
DRAIN_LIMIT = 2.0
_CHUNK = 65536
_POLL = 0.05


class ProcessResult(Record):
    """What a finished child left: its (capped) output, status and timing.

    ``exit_code`` follows the shell: a child killed by signal N reports
    128+N, a timeout 124, a cancel 130, a closed ``output`` pipe 141, a
    missing program 127. ``not_started`` is why the program could not be
    started (empty when it ran). ``replaced`` names the streams ("stdout",
    "stderr") whose bytes were not all UTF-8: their text shows U+FFFD there.
    ``passed_through``: the child wrote its stdout straight to the person's
    file or pipe, so ``stdout`` holds nothing.
    """

    stdout: str
    stderr: str
    exit_code: int
    duration_ms: int
    truncated: bool = False
    timed_out: bool = False
    interrupted: bool = False
    not_started: str = ""
    replaced: tuple[str, ...] = ()
    passed_through: bool = False


def result_dict(result: ProcessResult, *, streamed: bool, timeout: float | None) -> dict[str, Any]:
    """The tool result for a finished process: what ``exec``, ``run:`` and ``shell:`` return.

    Output, status and timing always; ``streamed`` when a person already saw
    the output live (the CLI must not print it twice); ``stdout_passed_through``
    when the child wrote to the person's file or pipe itself (its stdout is
    not in the result); ``undecodable`` when output was not UTF-8 (binary
    data): the text shows U+FFFD for those bytes; ``error`` when it did
    not succeed: ``"exit status N"``, ``"timed out after N s"`` (``timeout``
    is the limit that was applied), ``"interrupted"``, ``"command not found:
    X"`` or why it could not be started.
    """
    data: dict[str, Any] = {
        "stdout": result.stdout,
        "stderr": result.stderr,
        "exit_code": result.exit_code,
        "duration_ms": result.duration_ms,
        "truncated": result.truncated,
    }
    if streamed:
        data["streamed"] = True
    if result.passed_through:
        data["stdout_passed_through"] = True
    if result.replaced:
        data["undecodable"] = (
            f"{' and '.join(result.replaced)} had bytes that are not UTF-8 (binary data?); "
            "each is shown as U+FFFD"
        )
    if result.timed_out:
        data.update(error=f"timed out after {timeout or 0:g} s", timed_out=True)
    elif result.interrupted:
        data.update(error="interrupted", interrupted=True)
    elif result.not_started:
        data["error"] = result.not_started
    elif result.exit_code != 0:
        data["error"] = f"exit status {result.exit_code}"
    return data


class _Stream:
    """One stream's bytes, head + tail capped, optionally echoed live.

    The echo goes to the watcher's file descriptor as bytes when it has one
    (a terminal, a file, a pipe): exactly what the child wrote. Only a
    watcher without one (an in-memory stream) gets decoded text.
    """

    def __init__(self, limit: int, live: TextIO | None) -> None:
        self.half = max(limit, 0) // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.live = live
        # Set when the watcher's pipe closed: the run loop then stops the child.
        self.broken_pipe = False
        self._fd = _descriptor(live)
        self._decoder = None
        if live is not None and self._fd is None:
            self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def add(self, chunk: bytes) -> None:
        """Keep what fits in the head, the rest in the tail, and echo it live."""
        self.total += len(chunk)
        piece = chunk
        room = self.half - len(self.head)
        if room > 0:
            self.head += piece[:room]
            piece = piece[room:]
        if piece:
            self.tail += piece
            # Trim only when the tail is twice its size: amortised O(1) per byte.
            if len(self.tail) > 2 * self.half:
                del self.tail[: len(self.tail) - self.half]
        if self.live is not None:
            if self._decoder is None:
                self._echo(self._write_bytes, chunk)
            else:
                self._echo(self._write_text, self._decoder.decode(chunk))

    def finish(self) -> None:
        """Flush what the live decoder still holds (a split character at EOF)."""
        if self.live is not None and self._decoder is not None:
            self._echo(self._write_text, self._decoder.decode(b"", True))

    def _write_text(self, text: str) -> None:
        self.live.write(text)
        self.live.flush()

    def _write_bytes(self, chunk: bytes) -> None:
        self.live.flush()  # what Python printed before comes first
        view = memoryview(chunk)
        while view:
            view = view[os.write(self._fd, view) :]

    def _echo(self, write: Callable[[Any], None], piece: bytes | str) -> None:
        if not piece or self.live is None:
            return
        try:
            write(piece)
        except BrokenPipeError:
            # The reader of the person's pipe is gone (`| head -1`). The child
            # is in its own session and will never see SIGPIPE, so it would
            # run on to the timeout: stop it, as a shell pipeline would.
            self.live = None
            self.broken_pipe = True
        except (OSError, ValueError):
            # The watcher went away otherwise (a closed file, a full disk):
            # keep capturing for the result, stop echoing.
            self.live = None

    def text(self) -> tuple[str, bool, bool]:
        """The captured text, whether anything was left out, whether bytes were replaced."""
        if len(self.tail) > self.half:
            del self.tail[: len(self.tail) - self.half]
        if self.total <= len(self.head) + len(self.tail):
            text, replaced = _decode(bytes(self.head) + bytes(self.tail))
            return text, False, replaced
        head, tail = _cut_utf8(bytes(self.head), bytes(self.tail))
        omitted = self.total - len(head) - len(tail)
        marker = f"\n[... {omitted} bytes omitted ...]\n"
        head_text, head_replaced = _decode(head)
        tail_text, tail_replaced = _decode(tail)
        return head_text + marker + tail_text, True, head_replaced or tail_replaced


def _descriptor(live: TextIO | None) -> int | None:
    """The watcher's file descriptor, when it has a real one, its text layer flushed."""
    if live is None:
        return None
    try:
        fd = live.fileno()
        live.flush()
    except (AttributeError, OSError, ValueError):  # StringIO, a closed or odd stream
        return None
    return fd


def _decode(data: bytes) -> tuple[str, bool]:
    """UTF-8 text for the result, and whether some bytes were not UTF-8 (shown as U+FFFD)."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace"), True


def _cut_utf8(head: bytes, tail: bytes) -> tuple[bytes, bytes]:
    """Move the cut points to character boundaries so no character is split."""
    # A UTF-8 continuation byte looks like 0b10xxxxxx; at most 3 follow a lead byte.
    end = len(head)
    for back in range(1, min(4, end) + 1):
        byte = head[end - back]
        if byte & 0xC0 == 0x80:
            continue
        if byte >= 0xC0:  # a lead byte: keep it only if its sequence is whole
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            if back < need:
                head = head[: end - back]
        break
    start = 0
    while start < min(4, len(tail)) and tail[start] & 0xC0 == 0x80:
        start += 1
    return head, tail[start:]


def run_tool_process(
    argv: list[str],
    ctx: Any,
    *,
    timeout: float | None = None,
    cwd: str | None = None,
) -> dict[str, Any]:
    """Run ``argv`` for a tool call and return the tool result: ``exec``, ``run:`` and ``shell:``.

    The child gets the call's scrubbed environment
    (:func:`mdagent.safety.environment.env_for`) and runs in ``cwd`` — relative to
    the workspace, which it must not leave (default: the workspace root, or
    for a person's command the folder it was typed in, :func:`mdagent.safety.workspace.base_for`).
    ``timeout`` (seconds; default the ``exec.timeout`` setting) and the
    ``exec.max_output`` setting limit it; its output streams live to
    ``ctx.output`` when a person watches; ``ctx.cancel`` stops it. The
    result is :func:`result_dict`'s; a ``cwd`` outside the workspace is a
    refusal (``code: DENIED``), one that is no folder a failure.

    The child is confined by the ``sandbox:`` settings (:mod:`mdagent.safety.sandbox`)
    when they apply to ``ctx.caller`` (by default: a model's calls, not a
    person's); ``--yes`` and ``policy.mode`` play no part. A failure that
    reads like a denial gets a ``sandbox`` note (what is allowed, which
    setting widens it). A call that cannot be confined as ``sandbox.required``
    demands, or whose child cannot enter the sandbox, is refused
    (``code: DENIED``) and nothing runs.
    """
    from mdagent.core.defaults import setting
    from mdagent.core.errors import MdagentError, PolicyDenied
    from mdagent.safety.environment import env_for
    from mdagent.safety.workspace import base_for, confine, roots_from

    root, extras = roots_from(ctx)
    # A person's command runs where it was typed (inside the workspace), a model's at the root.
    where = base_for(ctx)
    if cwd:
        try:
            where = confine(cwd, root, extras)
        except PolicyDenied as exc:
            return {"error": str(exc), "code": "DENIED"}
        if not where.is_dir():
            return {"error": f"not a directory: {cwd}"}
    settings = getattr(ctx, "settings", None)
    limit = float(timeout or setting(settings, "exec", "timeout"))
    try:
        box = sandbox_for(ctx, settings, root, extras)
    except MdagentError as exc:  # sandbox.required unmet, a broken sandbox: block
        return {"error": f"not run: {exc}", "code": "DENIED"}
    except OSError as exc:  # the kernel refused the ruleset: fail closed
        return {
            "error": f"not run: cannot build the sandbox: {exc.strerror or exc}",
            "code": "DENIED",
        }
    output = getattr(ctx, "output", None)
    # AGENT_WORKSPACE: a tool's own files, named from the root wherever
    # a person typed the command (`sh "$AGENT_WORKSPACE/scripts/x.sh"`).
    env = {**env_for(ctx), "AGENT_WORKSPACE": str(root)}
    if box is not None:
        env.update(box.env)  # its private TMPDIR
    git_watch = None
    if box is not None:  # confined: what it changes of git's files is put back
        from mdagent.safety import gitguard

        git_watch = gitguard.watch_git(ctx)
    try:
        result = run_process(
            argv,
            cwd=str(where),
            env=env,
            timeout=limit,
            max_output=int(setting(settings, "exec", "max_output")),
            output=output,
            # A watcher may take stderr itself (the spinner's tail of a model's call).
            error_output=getattr(output, "error_output", None),
            cancel=getattr(ctx, "cancel", None),
            # Landlock alone: runs in the child between fork and exec, the rules built above.
            preexec=box.preexec_fn if box is not None else None,
            # Namespaces: bwrap or mdagent's helper starts the command instead.
            wrap=box.command if box is not None and box.namespaces else None,
            pass_fds=box.pass_fds if box is not None else (),
            # A person's `agent /t cmd > file`: the child writes the file itself.
            # Confined calls keep the pipe: their output is read for the sandbox note.
            pass_through=box is None and getattr(ctx, "caller", None) == "person",
        )
        note = ""
        if box is not None:
            note = box.violation_note(result.stderr + result.stdout, result.exit_code)
    except subprocess.SubprocessError:
        if box is None:
            raise
        # The child could not restrict itself and exited before exec: nothing ran.
        return {
            "error": "not run: the command could not enter the sandbox "
            "(Landlock refused the ruleset); set sandbox.mode: off to run it unconfined",
            "code": "DENIED",
        }
    finally:
        if box is not None:
            box.close()
        put_back = gitguard.put_back_git(git_watch) if git_watch is not None else ""
    # streamed: the person already saw the output; the CLI must not print it twice.
    # (Not a watcher that shows only a tail: the spinner's, for a model's call.)
    streamed = output is not None and getattr(output, "shows_all", True)
    data = result_dict(result, streamed=streamed, timeout=limit)
    from mdagent.core import notices

    if put_back:
        data["git"] = put_back
        notices.tell_once(put_back)
    if note:
        # The child's own error text is in stderr; this says the sandbox may be why.
        data["sandbox"] = note
        notices.tell_once(note)
    return data


def sandbox_for(ctx: Any, settings: Any, root: Any, extras: tuple[Any, ...]) -> Any:
    """The :class:`mdagent.safety.sandbox.Sandbox` for one call's processes, or None when unconfined.

    Prepared per call (a few stats, a ruleset of about ten syscalls; 0.2-0.5 ms): each
    call owns its ruleset, so calls in threads never share a descriptor, and paths made
    since the last call (a new cache dir, a protected folder to bind read-only) are
    covered. The route (:func:`mdagent.safety.namespaces.route`) is probed once per run.
    Raises :class:`mdagent.safety.sandbox.SandboxUnavailable` under ``sandbox.required``
    where it cannot be fully enforced. Without namespaces the call runs under Landlock
    alone, without Landlock either unconfined; the person is told once per run.
    """
    caller = getattr(ctx, "caller", None)  # no caller: judged as a model (fail closed)
    section = settings.get("sandbox") if isinstance(settings, Mapping) else None
    everyone = isinstance(section, Mapping) and section.get("applies_to") == "all"
    if caller == "person" and not everyone:
        return None  # the common typed command: not even the sandbox module is imported
    from mdagent.safety.namespaces import route
    from mdagent.safety.sandbox import prepare, unavailable_note
    from mdagent.safety.sandboxsettings import SandboxSettings, writable_paths

    sandbox_settings = SandboxSettings.from_mapping(section)
    if not sandbox_settings.applies(caller):
        return None
    current = route()
    binds: list[str] = []
    if current.namespaces:
        from mdagent.safety.protectedfiles import protected_for

        places = writable_paths(sandbox_settings, root, extras)
        binds = list(protected_for(ctx).read_only_binds(places))
    box = prepare(sandbox_settings, root, extras, route=current, binds=binds)
    if box.unavailable:
        from mdagent.core import notices

        notices.tell_once(unavailable_note(box.unavailable))
    return box


def start_child(
    argv: list[str],
    *,
    cwd: str | None,
    env: Mapping[str, str] | None,
    stdin: int,
    preexec: Callable[[], None] | None = None,
    stdout: int = subprocess.PIPE,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.Popen:
    """Start ``argv`` as the leader of a new session (its own process group), pipes for output.

    Every child mdagent runs starts here. ``preexec`` runs in the child
    between fork and exec (where a sandbox restricts it); ``stdout`` may
    name a descriptor the child writes to itself instead of a pipe;
    ``pass_fds`` are descriptors it inherits. Raises ``OSError`` when the
    program cannot be started.
    """
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        start_new_session=True,
        bufsize=0,
        preexec_fn=preexec,
        pass_fds=pass_fds,
    )


def run_process(
    argv: list[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    max_output: int = 100_000,
    output: TextIO | None = None,
    error_output: TextIO | None = None,
    cancel: threading.Event | None = None,
    stdin_data: bytes | None = None,
    preexec: Callable[[], None] | None = None,
    pass_through: bool = False,
    wrap: Callable[[list[str]], list[str]] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> ProcessResult:
    """Run ``argv`` to completion and return its capped output and status.

    ``env`` is passed as is (callers pass the scrubbed environment; ``None``
    inherits this process's). ``timeout`` in seconds (``None`` or ``0``: no
    limit) stops the whole process group and reports exit code 124;
    ``cancel`` being set stops it and reports 130. ``max_output`` bounds each
    stream (in bytes, before decoding): its first and last halves are kept
    with a ``[... N bytes omitted ...]`` marker in between.
    When ``output`` is given, stdout is also echoed there live and stderr to
    ``error_output`` (default ``sys.stderr``). ``stdin_data`` is fed to the
    child's stdin, which is otherwise ``/dev/null``. A ``KeyboardInterrupt``
    stops the group and propagates. A program that cannot be started gives
    exit code 127 (not found) or 126 (not executable) with the reason in
    ``stderr``. ``preexec`` and ``pass_fds`` are :func:`start_child`'s.
    ``wrap`` turns ``argv`` into the command line actually started (a
    sandbox's, :meth:`mdagent.safety.sandbox.Sandbox.command`); the program is
    looked up first, so a missing one is still 127 with its own name.

    ``pass_through``: when ``output`` is a file or a pipe (not a terminal),
    the child writes its stdout there itself, as ``cmd > file`` would: the
    bytes are the child's and nothing slows them down, but they are not
    captured (the result's ``stdout`` is empty, ``passed_through`` set). A
    terminal is still fed through a pipe, so programs behave as they do when
    their output is read by another program (no pager, no colours).
    """
    if not argv:
        raise ValueError("run_process needs a program to run (argv is empty)")
    started = time.monotonic()
    direct = _pass_through_fd(output) if pass_through else None
    held = hold()  # a Ctrl-C now is raised once the child's group can be stopped
    try:
        if wrap is not None:
            _look_up(argv[0], cwd, env)
        proc = start_child(
            wrap(argv) if wrap is not None else argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            preexec=preexec,
            stdout=subprocess.PIPE if direct is None else direct,
            pass_fds=pass_fds,
        )
    except BaseException as exc:
        held.release()
        if not isinstance(exc, OSError):
            raise
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        where = f" (in {cwd})" if cwd and not os.path.isdir(cwd) else ""
        why = f"cannot run {argv[0]}{where}: {exc.strerror or exc}"
        return ProcessResult(
            stdout="",
            stderr=why + "\n",
            exit_code=code,
            duration_ms=_ms_since(started),
            not_started=f"command not found: {argv[0]}" if code == 127 and not where else why,
        )

    live_err = (error_output or sys.stderr) if output is not None else None
    out = _Stream(max_output, output if direct is None else None)
    err = _Stream(max_output, live_err)
    streams = {proc.stderr.fileno(): err}
    if proc.stdout is not None:
        streams[proc.stdout.fileno()] = out
    runner = _Runner(proc, streams)
    writer = None
    deadline = started + timeout if timeout else None
    reason = None
    try:
        writer = _feed_stdin(proc, stdin_data) if stdin_data is not None else None
        held.release()  # a Ctrl-C that came while the child started is raised here
        reason = runner.wait_for_leader(deadline, cancel)
        if reason is None and wrap is not None:
            # A sandbox's leader ended with its PID namespace: the kernel is
            # killing whatever is left in it, so there is nothing to wait for.
            runner.kill_now()
        else:
            runner.end_group()
        runner.drain(time.monotonic() + DRAIN_LIMIT)
    except BaseException:
        # Ctrl-C (or anything else) while waiting: nothing may outlive us.
        runner.kill_now()
        held.release()
        raise
    finally:
        runner.close()
        if writer is not None:
            writer.join(timeout=1.0)

    out_text, out_cut, out_replaced = out.text()
    err_text, err_cut, err_replaced = err.text()
    if reason == "timeout":
        code = TIMEOUT_EXIT
    elif reason == "cancel":
        code = INTERRUPTED_EXIT
    elif reason == "broken_pipe" or out.broken_pipe or err.broken_pipe:
        # Also when the child had already exited and only the echo of what
        # it left in the pipe broke: a writer whose reader left gets SIGPIPE.
        code = BROKEN_PIPE_EXIT
    else:
        code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    return ProcessResult(
        stdout=out_text,
        stderr=err_text,
        exit_code=code,
        duration_ms=_ms_since(started),
        truncated=out_cut or err_cut,
        timed_out=reason == "timeout",
        interrupted=reason == "cancel",
        replaced=("stdout",) * out_replaced + ("stderr",) * err_replaced,
        passed_through=direct is not None,
    )


def _look_up(program: str, cwd: str | None, env: Mapping[str, str] | None) -> None:
    """Raise what starting ``program`` would: a wrapper (bwrap, the sandbox helper) starts it
    itself, and its failure would otherwise be the wrapper's status, not 127 or 126."""
    import errno
    import shutil

    if os.sep in program:
        path = os.path.join(cwd or os.getcwd(), program)
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
        return
    search = (env if env is not None else os.environ).get("PATH", os.defpath)
    if shutil.which(program, path=search) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def _pass_through_fd(output: TextIO | None) -> int | None:
    """``output``'s descriptor when a child may write to it directly: a file or a pipe."""
    fd = _descriptor(output)
    try:
        if fd is None or os.isatty(fd):
            return None
        os.fstat(fd)  # a descriptor closed under the stream: keep the pipe
    except OSError:
        return None
    return fd


class _Runner:
    """The waiting, pumping and killing of one child and its process group."""

    def __init__(self, proc: subprocess.Popen, streams: dict[int, _Stream]) -> None:
        self.proc = proc
        self.pgid = proc.pid  # start_new_session: the child leads its own group
        self.streams = streams
        self.selector = selectors.DefaultSelector()
        for fd in streams:
            self.selector.register(fd, selectors.EVENT_READ)
        self.open = set(streams)
        self.exited = False
        # On Linux a pidfd becomes readable when the child exits, so the
        # select below wakes at once instead of at the next poll tick.
        self.pidfd: int | None = None
        if hasattr(os, "pidfd_open"):
            try:
                self.pidfd = os.pidfd_open(proc.pid)
                self.selector.register(self.pidfd, selectors.EVENT_READ)
            except OSError:
                self.pidfd = None

    # -- pumping output ------------------------------------------------------

    def pump(self, wait: float) -> None:
        """Move whatever the pipes hold into the captures; wait up to ``wait`` s."""
        if not self.selector.get_map():
            time.sleep(max(wait, 0))
            return
        for key, _ in self.selector.select(max(wait, 0)):
            fd = key.fd
            if fd == self.pidfd:
                self.exited = True
                self.selector.unregister(fd)  # stays readable: stop watching it
                continue
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                self.streams[fd].add(chunk)
            else:
                self._close_stream(fd)

    def _close_stream(self, fd: int) -> None:
        self.selector.unregister(fd)
        self.open.discard(fd)
        self.streams[fd].finish()

    def drain(self, until: float) -> None:
        """Read to EOF, but give up at ``until`` (an escaped process holds a pipe)."""
        while self.open and time.monotonic() < until:
            self.pump(min(_POLL, until - time.monotonic()))

    # -- waiting -------------------------------------------------------------

    def wait_for_leader(self, deadline: float | None, cancel: threading.Event | None) -> str | None:
        """Pump output until the child exits.

        ``"timeout"``, ``"cancel"`` or ``"broken_pipe"`` (the watcher's pipe
        closed) when the child must be stopped first.
        """
        idle = 0.001
        while True:
            if cancel is not None and cancel.is_set():
                return "cancel"
            if any(stream.broken_pipe for stream in self.streams.values()):
                return "broken_pipe"
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return "timeout"
            if self._leader_exited():
                return None
            wait = _POLL if deadline is None else min(_POLL, deadline - now)
            if self.open or self.pidfd is not None:
                self.pump(wait)
            else:
                # No pidfd and the pipes are closed: poll with a growing pause
                # so quick commands return quickly and long ones cost nothing.
                idle = min(idle * 2, wait)
                if cancel is not None:
                    cancel.wait(idle)
                else:
                    time.sleep(idle)

    def _leader_exited(self) -> bool:
        if self.exited:
            return True
        # WNOWAIT leaves the exited child a zombie, so its pid — which is the
        # group id — cannot be reused before end_group() signals the group.
        if hasattr(os, "waitid"):
            try:
                info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return True
            return info is not None
        return self.proc.poll() is not None

    # -- stopping ------------------------------------------------------------

    def end_group(self, grace: float = KILL_GRACE) -> None:
        """SIGTERM the group, give it ``grace`` seconds, then SIGKILL what is left."""
        if not self._signal(signal.SIGTERM):
            self.proc.wait()
            return
        until = time.monotonic() + grace
        # Short pauses first: a group usually ends within a millisecond or two
        # (a sandbox's namespace is torn down as its leader goes).
        pause = 0.001
        while time.monotonic() < until:
            # Reap the leader first: while it is a zombie the group "exists".
            if self.proc.poll() is not None and not _group_alive(self.pgid):
                return
            self.pump(min(pause, max(until - time.monotonic(), 0)))
            pause = min(pause * 2, 0.02)
        self._signal(signal.SIGKILL)
        self.proc.wait()

    def kill_now(self) -> None:
        """SIGKILL the group without grace and reap the child (error paths)."""
        self._signal(signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)

    def _signal(self, sig: int) -> bool:
        """Send ``sig`` to the group; ``False`` when no member is left."""
        try:
            os.killpg(self.pgid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:
            # A member changed identity (setuid); nothing more we may do.
            return False
        return True

    def close(self) -> None:
        """Release the pipes, the pidfd and the selector."""
        self.selector.close()
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
        for pipe in (self.proc.stdout, self.proc.stderr, self.proc.stdin):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def _group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` still runs (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    if not os.path.isdir("/proc/self"):
        return True  # no /proc (macOS): a zombie counts as alive, SIGKILL is harmless
    # Orphaned grandchildren are reparented to init, which may reap them late
    # (some container inits poll once a second); their zombies hold the group
    # id but are gone for every purpose that matters here.
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _feed_stdin(proc: subprocess.Popen, data: bytes) -> threading.Thread:
    """Write ``data`` to the child's stdin from a thread, so a full pipe cannot deadlock."""

    def feed() -> None:
        try:
            proc.stdin.write(data)
        except (BrokenPipeError, OSError, ValueError):
            pass  # the child stopped reading (or was stopped): not our failure
        finally:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.close()

    thread = threading.Thread(target=feed, name="mdagent-stdin", daemon=True)
    thread.start()
    return thread


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def signal_name(exit_code: int) -> str | None:
    """``"SIGKILL"`` for exit code 137 and so on; ``None`` below 129."""
    if exit_code <= 128:
        return None
    try:
        return signal.Signals(exit_code - 128).name
    except ValueError:
        return None
