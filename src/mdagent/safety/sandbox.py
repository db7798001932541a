"""A kernel sandbox for the processes a model starts: namespaces and Linux Landlock, for children only.

How a command is confined depends on the route :mod:`mdagent.safety.namespaces`
finds on this machine: ``bwrap`` or ``direct`` (new user, mount, PID, IPC
and, for ``network: off``, network namespaces; the agent's configuration
bound read-only) or, where neither works, ``landlock`` (Landlock alone).
This module holds :class:`Sandbox`, which turns a command line into one
that runs confined, and :func:`prepare`, which builds one for a call from
its ``sandbox:`` settings (:mod:`mdagent.safety.sandboxsettings`) with the
Landlock ruleset (:mod:`mdagent.safety.landlock`) the ``direct`` and
``landlock`` routes apply.

What every route guarantees, where it works:

- a confined child, and everything it starts (grandchildren, background
  jobs, a script it wrote), may read and execute anything but write only
  beneath the workspace, this run's private temp folder (its ``$TMPDIR``;
  the host's ``/tmp`` is not writable), ``/dev/shm``, the user's cache
  dir, the ``sandbox.writable`` paths and a few character devices
  (``workspace-write``), or only the private temp folder, the devices and
  listed paths (``read-only``);
- setuid programs (``sudo``) do not gain privileges (``no_new_privs``);
- the agent itself is never confined.

What the namespace routes add: the agent's configuration inside the
writable places (:meth:`mdagent.safety.protected.Protected.read_only_binds`) is
read-only; ``network: off`` leaves only a loopback of the command's own
(TCP, UDP, DNS, MPTCP, raw sockets and the host's abstract Unix sockets
are all out of reach); the command sees only its own processes and every
one of them ends with the call; ``/dev/shm`` is private; no capability.

What the Landlock route alone gives instead: ``network: off`` denies TCP
connect and bind (ABI 4, Linux 6.7); on ABI 6 (Linux 6.12) a confined
child cannot signal processes outside its sandbox nor connect to their
abstract Unix sockets; a denied write fails with ``EACCES``.

What no route covers: reads (secrets readable by the user stay readable),
Unix-socket paths with the network on (a D-Bus session bus,
``docker.sock``, an ssh agent), and anything on a system with neither
namespaces nor Landlock, where :func:`available` says why. Devices other
than those listed can be read but not written (a GPU under ``/dev/dri``
needs ``sandbox.writable``).

How it is applied: :func:`prepare` builds the ruleset in the parent (opening
paths, adding rules: everything that may allocate, take locks or fail
with a useful message). On the ``direct`` route its descriptor is handed
to :mod:`mdagent.safety.nsinit`, which applies it last, inside the namespaces. On
the ``landlock`` route :attr:`Sandbox.preexec_fn` is given to
``subprocess.Popen``: in the child it makes two foreign calls through
function pointers resolved in the parent, with arguments built in the
parent: no import, no ``dlsym``, no logging, no lock another thread could
hold across ``fork``. That is the thread-safety concern the ``preexec_fn``
documentation warns about, and it is why the child does nothing else
(namespaces need far more than two calls, hence the helper of the
``direct`` route). If the child cannot restrict itself, ``Popen`` raises
``SubprocessError`` and nothing runs: the sandbox fails closed.
:func:`mdagent.tools.process.run_tool_process` (``exec``, ``run:``, ``shell:``)
prepares one per call; hooks and mdagent's own helpers (``rg`` for
``grep``) do not go through it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mdagent.core.errors import MdagentError
from mdagent.safety import landlock
from mdagent.safety.sandboxsettings import (
    SandboxSettings,
    cache_dir,
    private_tmpdir,
    writable_paths,
)

# What a denied call prints, in the words of libc, Python and Node.
_DENIAL_WORDS = (
    "permission denied",
    "operation not permitted",
    "read-only file system",
    "eacces",
    "eperm",
    "erofs",
)
# What a connection refused by a closed network looks like (with network: off).
_NETWORK_WORDS = (
    "connection refused",
    "network is unreachable",
    "no route to host",
    "name resolution",
    "name or service not known",
    "could not resolve",
)


class SandboxUnavailable(MdagentError):
    """``sandbox.required`` is set and the sandbox cannot be enforced here."""

    exit_code = 126


def _route(route: Any) -> Any:
    if route is not None:
        return route
    from mdagent.safety.namespaces import route as current

    return current()


def available(settings: SandboxSettings | None = None, route: Any = None) -> str | None:
    """None when the sandbox ``settings`` ask for is fully enforced here; else why not.

    With ``mode: off`` there is nothing to enforce (None). ``route`` is
    :func:`mdagent.safety.namespaces.route`'s (default: this run's). Full means a
    namespace route; on the Landlock route the reason says why there are no
    namespaces (and ``network: off`` also needs Landlock ABI 4); without
    Landlock either, why there is no sandbox at all. Raises
    :class:`mdagent.core.errors.UsageError` for a wrong ``AGENT_SANDBOX``.
    """
    settings = settings or SandboxSettings()
    if settings.mode == "off":
        return None
    route = _route(route)
    if route.namespaces:
        return None
    abi, reason = landlock.probe()
    if not abi:
        return reason
    why = f"there are no namespaces here ({route.why})"
    if not settings.network and abi < 4:
        why += f"; network: off needs Landlock ABI 4 (Linux 6.7); this kernel has ABI {abi}"
    return why


def unavailable_note(reason: str) -> str:
    """The once-per-run note for model commands the sandbox cannot fully confine.

    ``reason`` is :func:`available`'s. Where Landlock works (the fallback
    route) writes outside the writable places are still refused: the note
    says what is not held.
    """
    instead = "(sandbox.required: true refuses them instead)"
    if landlock.abi_version():
        network = "; they can connect over TCP" if "network: off needs" in reason else ""
        return (
            f"sandbox with Landlock alone: {reason}; model commands may write anywhere in the "
            f"workspace, and only the command parser guards the agent's configuration there"
            f"{network} {instead}"
        )
    return f"no sandbox for model commands: {reason}; they run with your user's rights {instead}"


def describe(
    settings: SandboxSettings,
    workspace: Path,
    extra_writable: Iterable[str | Path] = (),
    *,
    route: str = "landlock",
    tmpdir: Path | None = None,
    binds: Iterable[str] = (),
) -> str:
    """One line: what the sandbox lets a command do and which setting widens it."""
    if settings.mode == "off":
        return "no sandbox (sandbox.mode: off)"
    home = str(Path.home())
    workspace = Path(workspace).resolve()

    def short(path: Path | str) -> str:
        text = str(path)
        if tmpdir is not None and text == str(tmpdir):
            return "$TMPDIR (private to this run)"
        if text == str(workspace) or text.startswith(str(workspace) + "/"):
            return os.path.relpath(text, workspace) if text != str(workspace) else text
        return "~" + text[len(home) :] if text == home or text.startswith(home + "/") else text

    places = [short(p) for p in writable_paths(settings, workspace, extra_writable, tmpdir)]
    where = ", ".join([*places, "/dev/null and terminals"])
    held = [short(b) for b in binds]
    if len(held) > 4:
        held = [*held[:4], f"{len(held) - 4} more"]
    kept = f" (not {', '.join(held)}: the agent's configuration)" if held else ""
    if settings.network:
        network = ""
    elif route in ("bwrap", "direct"):
        network = "; they have no network (loopback only)"
    else:
        network = "; TCP connect and bind are denied"
    ways = ["add the path to sandbox.writable"]
    if settings.mode == "read-only":
        ways.append("set sandbox.mode: workspace-write")
    if not settings.network:
        ways.append("set sandbox.network: on")
    widen = ", ".join(ways) + " or set sandbox.mode: off"
    how = f"{settings.mode}, namespaces via {route}" if route != "landlock" else settings.mode
    return (
        f"sandbox ({how}): commands may read everything but write only in "
        f"{where}{kept}{network}; to allow more, {widen} in agent.yaml"
    )


class Sandbox:
    """How one call's children are confined: a command line to run them with, or a ruleset.

    :meth:`command` turns ``argv`` into what to start: bwrap's or the
    helper's command line on the namespace routes, ``argv`` itself on the
    Landlock route, where :attr:`preexec_fn` goes to ``subprocess.Popen``
    (None when nothing is to be enforced, so Popen keeps its fast path) and
    :attr:`pass_fds` must be passed along (the ruleset, on the ``direct``
    route). :attr:`env` holds what the child's environment needs (its
    private ``TMPDIR``). One sandbox can confine any number of children,
    from any thread; :meth:`close` (or ``with``) releases its file
    descriptor once no Popen is being started with it.
    """

    def __init__(
        self,
        settings: SandboxSettings,
        workspace: Path,
        extra_writable: Iterable[str | Path] = (),
        *,
        fd: int = -1,
        abi: int = 0,
        unavailable: str = "",
        route: str = "landlock",
        program: str = "",
        binds: Iterable[str] = (),
        tmpdir: Path | None = None,
    ) -> None:
        self.settings = settings
        self.workspace = Path(workspace)
        self.extra_writable = tuple(extra_writable)
        self.abi = abi
        self.unavailable = unavailable
        self.route = route
        self.program = program
        self.binds = tuple(binds)
        self.tmpdir = tmpdir
        self._fd = fd
        self._calls: tuple[Any, ...] = ()
        self._drops: tuple[Any, ...] = ()
        if fd >= 0 and route == "landlock":
            self._calls = landlock.child_calls(fd)
            # Run as root (or with capabilities), the child would keep them all:
            # raw sockets past `network: off`, other processes' memory and
            # environments. The namespace routes drop them; so does this one.
            self._drops = landlock.capability_drops() if landlock.has_capabilities() else ()

    @property
    def active(self) -> bool:
        """Whether children started through this sandbox are confined."""
        if self.route == "bwrap":
            return bool(self.program) and self.settings.mode != "off"
        return self._fd >= 0

    @property
    def namespaces(self) -> bool:
        """Whether children run in namespaces (the configuration held read-only)."""
        return self.active and self.route in ("bwrap", "direct")

    @property
    def preexec_fn(self) -> Any:
        """The function for ``Popen(preexec_fn=...)`` (the Landlock route), or None."""
        return self._restrict_child if self._calls else None

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """Descriptors the started program must inherit (the ruleset, for the helper)."""
        return (self._fd,) if self._fd >= 0 and self.route == "direct" else ()

    @property
    def env(self) -> dict[str, str]:
        """What a confined child's environment gets: its private ``TMPDIR``."""
        return {"TMPDIR": str(self.tmpdir)} if self.active and self.tmpdir is not None else {}

    def command(self, argv: list[str]) -> list[str]:
        """The command line that runs ``argv`` confined (``argv`` itself on the Landlock route)."""
        if not self.active or self.route == "landlock":
            return list(argv)
        from mdagent.safety import namespaces

        places = writable_paths(self.settings, self.workspace, self.extra_writable, self.tmpdir)
        writable = [str(p) for p in places]
        if self.route == "bwrap":
            return namespaces.bwrap_command(
                self.program,
                argv,
                # bwrap's --dev makes a private /dev/shm: the host's is not bound over it.
                writable=[p for p in writable if p != "/dev/shm"],
                binds=self.binds,
                network=self.settings.network,
            )
        return namespaces.helper_command(
            argv,
            binds=self.binds,
            network=self.settings.network,
            ruleset=self._fd,
            writable=writable,
        )

    def _restrict_child(self) -> None:
        # Runs in the child between fork and exec: only the two calls, with
        # everything built in the parent (see the module docstring).
        for call, args in self._drops:
            if call(*args) != 0:
                raise OSError("cannot drop the capabilities before the Landlock sandbox")
        prctl, prctl_args, syscall, restrict_args = self._calls
        if prctl(*prctl_args) != 0 or syscall(*restrict_args) != 0:
            raise OSError("cannot enter the Landlock sandbox")

    def describe(self) -> str:
        """What the sandbox allows and which setting widens it (see :func:`describe`)."""
        return describe(
            self.settings,
            self.workspace,
            self.extra_writable,
            route=self.route if self.namespaces else "landlock",
            tmpdir=self.tmpdir,
            binds=self.binds,
        )

    def violation_note(self, output: str, exit_code: int) -> str:
        """A note for a failed command whose output reads like a denial, else "".

        The child's own error text says what failed; this says the sandbox may
        be why, and how to widen it.
        """
        if not self.active or exit_code == 0:
            return ""
        lowered = output.lower()
        words = _DENIAL_WORDS if self.settings.network else _DENIAL_WORDS + _NETWORK_WORDS
        if not any(word in lowered for word in words):
            return ""
        return f"the command may have been stopped by mdagent's {self.describe()}"

    def close(self) -> None:
        """Release the ruleset's file descriptor. Safe to call twice."""
        if self._fd >= 0:
            fd, self._fd, self._calls = self._fd, -1, ()
            os.close(fd)
        self.program = ""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def prepare(
    settings: SandboxSettings,
    workspace: Path,
    extra_writable: Iterable[str | Path] = (),
    *,
    route: Any = None,
    binds: Iterable[str] = (),
    tmpdir: Path | None = None,
) -> Sandbox:
    """The sandbox for ``settings`` on ``route``, built in this (the parent) process.

    ``route`` is :func:`mdagent.safety.namespaces.route`'s (default: this run's);
    ``binds`` the protected paths to hold read-only on a namespace route
    (:meth:`mdagent.safety.protected.Protected.read_only_binds`); ``tmpdir`` the
    private temp folder (default: :func:`private_tmpdir`). Returns an
    inactive :class:`Sandbox` for ``mode: off``. Where the settings cannot
    be fully enforced, raises :class:`SandboxUnavailable` if ``required``;
    otherwise returns what can be enforced (Landlock alone without
    namespaces, filesystem rules without network ones on ABI < 4, nothing
    without Landlock) with the reason in :attr:`Sandbox.unavailable`.
    """
    if settings.mode == "off":
        return Sandbox(settings, workspace, extra_writable)
    route = _route(route)
    reason = available(settings, route) or ""
    if reason and settings.required:
        raise SandboxUnavailable(f"sandbox.required is set but {reason}")
    # pip, uv and friends keep their caches there; a fresh home may lack it.
    with contextlib.suppress(OSError):
        cache_dir().mkdir(exist_ok=True)
    tmpdir = tmpdir if tmpdir is not None else private_tmpdir()
    binds = tuple(binds) if route.namespaces else ()
    if route.name == "bwrap":
        return Sandbox(
            settings, workspace, extra_writable, route="bwrap", program=route.program,
            binds=binds, tmpdir=tmpdir,
        )  # fmt: skip
    abi = landlock.abi_version()
    if not abi:
        return Sandbox(settings, workspace, extra_writable, unavailable=reason, tmpdir=tmpdir)
    # On the direct route the network namespace closes the network, not TCP rules.
    fd = landlock.create_ruleset(
        abi,
        writable_paths(settings, workspace, extra_writable, tmpdir),
        close_tcp=not settings.network and not route.namespaces,
    )
    return Sandbox(
        settings, workspace, extra_writable, fd=fd, abi=abi, unavailable=reason,
        route=route.name, binds=binds, tmpdir=tmpdir,
    )  # fmt: skip
