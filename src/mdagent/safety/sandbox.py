"""A kernel sandbox for the processes a model starts: namespaces and Linux Landlock, for children only.

How a command is confined depends on the route :mod:`mdagent.safety.namespaces`
finds on this machine: ``bwrap`` or ``direct`` (new user, mount, PID, IPC
and, for ``network: off``, network namespaces; the agent's configuration
bound read-only) or, where neither works, ``landlock`` (Landlock alone).
This module holds the ``sandbox:`` settings, the Landlock ruleset the
``direct`` and ``landlock`` routes apply, and :class:`Sandbox`, which turns
a command line into one that runs confined.

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

Landlock mechanism: a ctypes module of the three Landlock syscalls
(``landlock_create_ruleset`` 444, ``landlock_add_rule`` 445,
``landlock_restrict_self`` 446; the same numbers on every architecture)
and ``prctl(PR_SET_NO_NEW_PRIVS)``, rather than a binding. ``landlockpy``
0.2.0 was evaluated and would fit technically (0BSD, pure ctypes, a
``py3-none-any`` wheel, ABI 1-11 with network rules, a ``fileno()`` usable
after fork), but: it is a young 0.x release from one vendor sitting inside
a security boundary, where an update could change what is enforced; its
``restrict()`` does enum arithmetic and state changes in the child, where
we want two calls and nothing else; and it would be one more optional
import with a second code path for "binding missing", for what is here
about 100 lines of stdlib code covered by tests that run real children.
(``landlock`` has no network rules.)

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

ABI differences: only rights the running kernel knows are handled
(``REFER`` from ABI 2, ``TRUNCATE`` from 3, ``IOCTL_DEV`` from 5; TCP from
4; scopes from 6). Rights newer than ABI 7 are not handled, so they stay
allowed, as on a kernel that does not know them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from mdagent.core.defaults import DEFAULT_SETTINGS
from mdagent.core.errors import ConfigError, MdagentError

MODES = ("workspace-write", "read-only", "off")
APPLIES_TO = ("model", "all")

# Syscall numbers: Landlock is one of the few syscalls with one number everywhere.
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAPABILITY_VERSION_3 = 0x20080522

# Filesystem rights (LANDLOCK_ACCESS_FS_*).
_EXECUTE = 1 << 0
_WRITE_FILE = 1 << 1
_READ_FILE = 1 << 2
_READ_DIR = 1 << 3
_ABI1_FS = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3
_IOCTL_DEV = 1 << 15  # ABI 5
# Rights that apply to a file (a rule on a file may grant only these).
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV
_READ_EXECUTE = _EXECUTE | _READ_FILE | _READ_DIR
# Network rights (LANDLOCK_ACCESS_NET_*), ABI 4.
_NET_TCP = (1 << 0) | (1 << 1)  # BIND_TCP | CONNECT_TCP
# Scopes (LANDLOCK_SCOPE_*), ABI 6: abstract Unix sockets and signals.
_SCOPES = (1 << 0) | (1 << 1)

# Character devices every confined child may open for writing.
DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
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


_DEFAULTS = DEFAULT_SETTINGS["sandbox"]


@dataclass(frozen=True)
class SandboxSettings:
    """The ``sandbox:`` settings: how the processes of a call are confined
    (defaults: ``DEFAULT_SETTINGS["sandbox"]``)."""

    mode: str = _DEFAULTS["mode"]
    network: bool = _DEFAULTS["network"]
    writable: tuple[str, ...] = tuple(_DEFAULTS["writable"])
    applies_to: str = _DEFAULTS["applies_to"]
    required: bool = _DEFAULTS["required"]

    @classmethod
    def from_mapping(cls, data: Any, path: str | None = None) -> SandboxSettings:
        """Settings from the ``sandbox:`` mapping (None: the defaults).

        YAML 1.1 reads ``off``/``on`` as booleans, so ``mode: off`` arrives as
        False and ``network: off`` as False: both are accepted. A wrong value
        is a :class:`ConfigError` of one line naming the key.
        """
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ConfigError("sandbox: expected a mapping", path)
        unknown = sorted(set(data) - {"mode", "network", "writable", "applies_to", "required"})
        if unknown:
            raise ConfigError(
                f"sandbox: unknown key {unknown[0]!r} "
                "(known: mode, network, writable, applies_to, required)",
                path,
            )
        mode = data.get("mode", cls.mode)
        if mode is False:
            mode = "off"
        if mode not in MODES:
            raise ConfigError(
                f"sandbox.mode: expected workspace-write, read-only or off, got {mode!r}", path
            )
        network = data.get("network", cls.network)
        network = {"on": True, "off": False}.get(network, network)
        if not isinstance(network, bool):
            raise ConfigError(f"sandbox.network: expected on or off, got {network!r}", path)
        writable = data.get("writable") or ()
        if isinstance(writable, str):
            writable = (writable,)
        if not isinstance(writable, list | tuple) or not all(
            isinstance(p, str) and p for p in writable
        ):
            raise ConfigError("sandbox.writable: expected a list of paths", path)
        applies_to = data.get("applies_to", cls.applies_to)
        if applies_to not in APPLIES_TO:
            raise ConfigError(
                f"sandbox.applies_to: expected model or all, got {applies_to!r}", path
            )
        required = data.get("required", cls.required)
        if not isinstance(required, bool):
            raise ConfigError(f"sandbox.required: expected true or false, got {required!r}", path)
        return cls(mode, network, tuple(writable), applies_to, required)

    def applies(self, caller: str) -> bool:
        """Whether a process started for ``caller`` ("model" or "person") is confined."""
        # Anyone but a person (a model, another agent) is confined: fail closed.
        return self.mode != "off" and (self.applies_to == "all" or caller != "person")


@cache
def _libc() -> Any:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    # Resolve both symbols now: the child must not call dlsym after fork.
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc


def _has_capabilities() -> bool:
    """Whether this process holds any capability (root, or granted some): a child
    would inherit them. Unreadable: assume it does (fail closed)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(("CapPrm:", "CapEff:", "CapAmb:")) and int(line.split()[1], 16):
                    return True
    except (OSError, ValueError):
        return True
    return False


def _capability_drops(libc: Any) -> tuple[Any, ...]:
    """The calls a child makes (between fork and exec, built here) to hold no capability:
    every one out of the bounding set, the ambient set cleared, then ``capset`` to none."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]

    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as fh:
            last = int(fh.read())
    except (OSError, ValueError):
        last = 63
    zero = (ctypes.c_ulong(0),) * 3
    drops: list[Any] = [
        (libc.prctl, (ctypes.c_int(_PR_CAPBSET_DROP), ctypes.c_ulong(cap), *zero))
        for cap in range(last + 1)
    ]
    drops.append(
        (
            libc.prctl,
            (ctypes.c_int(_PR_CAP_AMBIENT), ctypes.c_ulong(_PR_CAP_AMBIENT_CLEAR_ALL), *zero),
        )
    )
    header = Header(_CAPABILITY_VERSION_3, 0)
    data = (Data * 2)()  # all zero: no capability, effective, permitted or inheritable
    libc.capset.restype = ctypes.c_int
    # byref keeps its structure alive: they live as long as the sandbox's calls.
    drops.append((libc.capset, (ctypes.byref(header), ctypes.byref(data))))
    return tuple(drops)


def _syscall(*args: Any) -> int:
    """A raw syscall; raises OSError with the errno on failure."""
    import ctypes

    ret = _libc().syscall(*(ctypes.c_long(a) if isinstance(a, int) else a for a in args))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


@cache
def _probe() -> tuple[int, str]:
    """The kernel's Landlock ABI version, or 0 and why there is none."""
    if sys.platform != "linux":
        return 0, f"Landlock needs Linux; this is {sys.platform}"
    try:
        return _syscall(_SYS_CREATE_RULESET, 0, 0, _CREATE_RULESET_VERSION), ""
    except OSError as exc:
        if exc.errno == errno.ENOSYS:
            return 0, "this kernel has no Landlock (it needs Linux 5.13 or newer built with it)"
        if exc.errno == errno.EOPNOTSUPP:
            return 0, "Landlock is disabled in this kernel (it is not in the lsm= boot parameter)"
        return 0, f"the Landlock syscalls are blocked here ({os.strerror(exc.errno or 0)})"


def abi_version() -> int:
    """The running kernel's Landlock ABI version; 0 when it has none."""
    return _probe()[0]


def landlock_reason() -> str:
    """Why this kernel has no Landlock ("" when it has)."""
    return _probe()[1]


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
    abi, reason = _probe()
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
    if abi_version():
        network = "; they can connect over TCP" if "network: off needs" in reason else ""
        return (
            f"sandbox with Landlock alone: {reason}; model commands may write anywhere in the "
            f"workspace, and only the command parser guards the agent's configuration there"
            f"{network} {instead}"
        )
    return f"no sandbox for model commands: {reason}; they run with your user's rights {instead}"


def _handled_fs(abi: int) -> int:
    rights = _ABI1_FS
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


def _cache_dir() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"


# This run's private temp folder (made on first use; removed at exit).
_PRIVATE_TMP: list[Path] = []
_PRIVATE_TMP_LOCK = threading.Lock()


def private_tmpdir() -> Path:
    """This run's private temp folder for confined commands: their ``$TMPDIR``.

    Made on first use in the host's temp dir (mode 0700), shared by the
    run's calls (a file one command leaves there the next can read), and
    removed when the agent exits. The host's temp dir itself is not
    writable for them.
    """
    with _PRIVATE_TMP_LOCK:
        if not _PRIVATE_TMP or not _PRIVATE_TMP[0].is_dir():
            import atexit
            import shutil

            made = Path(tempfile.mkdtemp(prefix="agent-tmp-")).resolve()
            atexit.register(shutil.rmtree, made, ignore_errors=True)
            _PRIVATE_TMP[:] = [made]
        return _PRIVATE_TMP[0]


def writable_paths(
    settings: SandboxSettings,
    workspace: Path,
    extra_writable: Iterable[str | Path] = (),
    tmpdir: Path | None = None,
) -> list[Path]:
    """Where a confined child may write (devices apart), in order, as absolute paths.

    ``tmpdir`` is the run's private temp folder (:func:`private_tmpdir`),
    writable in both modes. Relative ``writable`` entries are taken from
    the workspace, ``~`` is expanded; paths that do not exist are left out.
    """
    workspace = Path(workspace).resolve()
    listed = [*settings.writable, *extra_writable]
    base: list[Path] = [tmpdir] if tmpdir is not None else []
    if settings.mode == "workspace-write":
        base = [workspace, *base, Path("/dev/shm"), _cache_dir()]
    paths: list[Path] = []
    for entry in [*base, *listed]:
        path = workspace / Path(entry).expanduser()
        if path.exists():
            path = path.resolve()
            if path not in paths:
                paths.append(path)
    return paths


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
            import ctypes

            libc = _libc()
            self._calls = (
                libc.prctl,
                (ctypes.c_int(_PR_SET_NO_NEW_PRIVS), *(ctypes.c_ulong(a) for a in (1, 0, 0, 0))),
                libc.syscall,
                tuple(ctypes.c_long(a) for a in (_SYS_RESTRICT_SELF, fd, 0)),
            )
            # Run as root (or with capabilities), the child would keep them all:
            # raw sockets past `network: off`, other processes' memory and
            # environments. The namespace routes drop them; so does this one.
            self._drops = _capability_drops(libc) if _has_capabilities() else ()

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
        _cache_dir().mkdir(exist_ok=True)
    tmpdir = tmpdir if tmpdir is not None else private_tmpdir()
    binds = tuple(binds) if route.namespaces else ()
    if route.name == "bwrap":
        return Sandbox(
            settings, workspace, extra_writable, route="bwrap", program=route.program,
            binds=binds, tmpdir=tmpdir,
        )  # fmt: skip
    abi = abi_version()
    if not abi:
        return Sandbox(settings, workspace, extra_writable, unavailable=reason, tmpdir=tmpdir)
    handled = _handled_fs(abi)
    # On the direct route the network namespace closes the network, not TCP rules.
    net = _NET_TCP if abi >= 4 and not settings.network and not route.namespaces else 0
    scoped = _SCOPES if abi >= 6 else 0
    import ctypes
    import struct

    size = 8 if abi < 4 else 16 if abi < 6 else 24
    attr = ctypes.create_string_buffer(struct.pack("=QQQ", handled, net, scoped)[:size], size)
    fd = _syscall(_SYS_CREATE_RULESET, ctypes.addressof(attr), size, 0)
    try:
        os.set_inheritable(fd, False)
        _add_path(fd, Path("/"), _READ_EXECUTE)
        for device in DEVICES:
            if os.path.exists(device):
                _add_path(fd, Path(device), handled & _FILE_RIGHTS & ~_EXECUTE)
        for path in writable_paths(settings, workspace, extra_writable, tmpdir):
            _add_path(fd, path, handled)
    except BaseException:
        os.close(fd)
        raise
    return Sandbox(
        settings, workspace, extra_writable, fd=fd, abi=abi, unavailable=reason,
        route=route.name, binds=binds, tmpdir=tmpdir,
    )  # fmt: skip


def _add_path(ruleset_fd: int, path: Path, rights: int) -> None:
    """Allow ``rights`` beneath ``path`` (only file rights when it is not a directory)."""
    import ctypes
    import struct

    parent = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not stat.S_ISDIR(os.fstat(parent).st_mode):
            rights &= _FILE_RIGHTS
        # struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd.
        attr = ctypes.create_string_buffer(struct.pack("=Qi", rights, parent), 12)
        _syscall(_SYS_ADD_RULE, ruleset_fd, _RULE_PATH_BENEATH, ctypes.addressof(attr), 0)
    finally:
        os.close(parent)
