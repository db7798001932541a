"""Linux Landlock through ctypes: the kernel's ABI probe, a ruleset, and the calls a child makes.

:func:`probe` asks the kernel once which Landlock ABI it has (or why none);
:func:`create_ruleset` builds, in the parent, the ruleset of a confined
child: read and execute everything, write only the listed places and
:data:`DEVICES`; :func:`child_calls` and :func:`capability_drops` are the
foreign calls, built in the parent, that the child makes between fork and
exec (:class:`mdagent.safety.sandbox.Sandbox` on the ``landlock`` route;
:mod:`mdagent.safety.nsinit` applies the ruleset itself on the ``direct``
route).

Mechanism: a ctypes module of the three Landlock syscalls
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

ABI differences: only rights the running kernel knows are handled
(``REFER`` from ABI 2, ``TRUNCATE`` from 3, ``IOCTL_DEV`` from 5; TCP from
4; scopes from 6). Rights newer than ABI 7 are not handled, so they stay
allowed, as on a kernel that does not know them.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

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


@cache
def _libc() -> Any:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    # Resolve both symbols now: the child must not call dlsym after fork.
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc


def has_capabilities() -> bool:
    """Whether this process holds any capability (root, or granted some): a child
    would inherit them. Unreadable: assume it does (fail closed)."""
    try:
        # Bytes: the `Name:` line holds the process name as the kernel has it, which
        # may be any bytes (an executable named `agënt`); only the Cap lines are read.
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith((b"CapPrm:", b"CapEff:", b"CapAmb:")) and int(
                    line.split()[1], 16
                ):
                    return True
    except (OSError, ValueError):
        return True
    return False


def capability_drops() -> tuple[Any, ...]:
    """The calls a child makes (between fork and exec, built here) to hold no capability:
    every one out of the bounding set, the ambient set cleared, then ``capset`` to none."""
    import ctypes

    libc = _libc()

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


def child_calls(ruleset_fd: int) -> tuple[Any, ...]:
    """The two calls that confine a child to the ruleset ``ruleset_fd``, built here:
    ``(prctl, its arguments, syscall, its arguments)`` for ``no_new_privs`` then
    ``landlock_restrict_self``."""
    import ctypes

    libc = _libc()
    return (
        libc.prctl,
        (ctypes.c_int(_PR_SET_NO_NEW_PRIVS), *(ctypes.c_ulong(a) for a in (1, 0, 0, 0))),
        libc.syscall,
        tuple(ctypes.c_long(a) for a in (_SYS_RESTRICT_SELF, ruleset_fd, 0)),
    )


def _syscall(*args: Any) -> int:
    """A raw syscall; raises OSError with the errno on failure."""
    import ctypes

    ret = _libc().syscall(*(ctypes.c_long(a) if isinstance(a, int) else a for a in args))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


@cache
def probe() -> tuple[int, str]:
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
    return probe()[0]


def landlock_reason() -> str:
    """Why this kernel has no Landlock ("" when it has)."""
    return probe()[1]


def handled_fs(abi: int) -> int:
    """The filesystem rights a ruleset handles on Landlock ABI ``abi`` (the ones it knows)."""
    rights = _ABI1_FS
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


def create_ruleset(abi: int, writable: Iterable[Path], *, close_tcp: bool) -> int:
    """A ruleset for ABI ``abi`` (its descriptor, not inheritable): read and execute
    everything, write :data:`DEVICES` and beneath each of ``writable``.

    ``close_tcp`` also denies TCP connect and bind (ABI 4 and newer); on ABI 6
    a confined child may neither signal processes outside its sandbox nor
    connect to their abstract Unix sockets. Raises OSError when the kernel
    refuses a rule (the descriptor is closed then).
    """
    handled = handled_fs(abi)
    net = _NET_TCP if abi >= 4 and close_tcp else 0
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
        for path in writable:
            _add_path(fd, path, handled)
    except BaseException:
        os.close(fd)
        raise
    return fd


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
