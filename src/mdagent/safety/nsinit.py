"""The direct route's helper: new namespaces, read-only binds, Landlock, and an init for one command.

:mod:`mdagent.safety.namespaces` runs it in place of a model's command when
bubblewrap is not installed: ``python -I -S -c "…import nsinit;
nsinit.main(…)" SETUP -- ARGV...`` (imported, so its bytecode is cached;
``python -I -S nsinit.py`` works too).
It imports nothing from mdagent (``-S``: not even site-packages), only the
standard library, and starts as a fresh, single-threaded interpreter: the
system calls that a ``preexec_fn`` would have to make between fork and
exec in the threaded agent run here in a process of their own, where
forking is safe. Its cost (an interpreter start) is measured in
``benchmarks/sandbox.py``.

Three processes, from the agent's view:

- the *outer* helper, the agent's child and the leader of the call's
  process group: it creates a user, mount, PID and IPC namespace (and a
  network namespace for ``network: off``), maps its own user and group id
  to themselves, forks the init, forwards the stop signals it gets to the
  init and exits with the init's status (128 + N for a signal N);
- the *init*, PID 1 of the new PID namespace, in a session of its own (so
  a signal to the call's group reaches it once, through the outer helper):
  it mounts a fresh ``/proc`` and a private ``/dev/shm``, bind-mounts the
  protected paths read-only (and the folders above them onto themselves,
  so that they cannot be moved away), brings loopback up in a new network
  namespace, drops every capability from its bounding set, sets
  ``no_new_privs``, applies the Landlock ruleset the agent built (its
  descriptor is inherited; Landlock comes last because it forbids
  ``mount(2)``), then starts the command in a session of its own, forwards
  signals to its group, reaps every process and exits with the command's
  status as soon as the command ends. The kernel then kills whatever else
  is left in the namespace: nothing the command started outlives it;
- the command.

SETUP is a list of options: ``--anchor PATH`` (repeated: folders to bind
onto themselves, writable, so that they cannot be renamed away from the
read-only paths inside them), ``--read-only PATH`` (repeated: the paths to
bind read-only), ``--network`` (keep the host's network), ``--ruleset FD``
(a Landlock ruleset descriptor), ``--probe`` (set everything up, run
nothing, exit 0), ``--parent PID`` (the agent: when it dies, even by
SIGKILL, the helper dies too, and everything inside with it). When the sandbox cannot be set up nothing runs: one line
on stderr (``agent sandbox: ...``) and exit status 125. ``json`` and
``signal`` are not imported (they pull in ``re`` and ``enum``: 6 ms of
every command); ``_signal`` is what ``signal`` wraps.
"""

import _signal as signal
import ctypes
import os
import sys

SETUP_FAILED = 125

_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000

_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_NOATIME = 1024
_MS_NODIRATIME = 2048
_MS_BIND = 4096
_MS_REC = 16384
_MS_SLAVE = 1 << 19
_MS_RELATIME = 1 << 21
_MS_STRICTATIME = 1 << 24
# statvfs f_flag bits and the mount flags they stand for: a bind remount in a
# user namespace must keep the flags the kernel locked on the original mount.
_ST_FLAGS = {2: _MS_NOSUID, 4: _MS_NODEV, 8: _MS_NOEXEC, 2048: _MS_NODIRATIME}
_ST_NOATIME = 1024
_ST_RELATIME = 4096

_SYS_MOUNT_SETATTR = 442  # the same number on every architecture
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 1

_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_PR_SET_SECUREBITS = 28
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
# SECBIT_NOROOT | SECBIT_NOROOT_LOCKED: uid 0 gains no capability at exec.
_SECBITS = 0b11

_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_RULE_PATH_BENEATH = 1
# What a command may do in the private /dev/shm: every filesystem right
# of Landlock ABI 1-5 (a right the ruleset does not handle is ignored).
_SHM_RIGHTS = (1 << 16) - 1

_SIOCSIFFLAGS = 0x8914
_IFF_UP_LOOPBACK_RUNNING = 0x1 | 0x8 | 0x40

FORWARDED = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)

_libc = ctypes.CDLL(None, use_errno=True)


class SetupError(Exception):
    """The sandbox could not be set up: nothing may run."""


def _prctl(option, value):
    """prctl(option, value, 0, 0, 0): every argument an unsigned long, as the call reads them."""
    args = (ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
    return _libc.prctl(ctypes.c_int(option), *args)


def _check(result, what):
    if result < 0:
        err = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(err)}")
    return result


def _mount(source, target, fstype, flags, data=None):
    def arg(text):
        return None if text is None else os.fsencode(text)

    _check(
        _libc.mount(arg(source), arg(target), arg(fstype), ctypes.c_ulong(flags), arg(data)),
        f"cannot mount {target}",
    )


def _write(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _read_only(path):
    """Bind ``path`` onto itself and make it (and every mount beneath) read-only."""
    _mount(path, path, None, _MS_BIND | _MS_REC)
    # struct mount_attr: attr_set, attr_clr, propagation, userns_fd (u64 each).
    attr = (ctypes.c_uint64 * 4)(_MOUNT_ATTR_RDONLY, 0, 0, 0)
    done = _libc.syscall(
        ctypes.c_long(_SYS_MOUNT_SETATTR),
        ctypes.c_int(_AT_FDCWD),
        os.fsencode(path),
        ctypes.c_uint(_AT_RECURSIVE),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    if done == 0:
        return
    # Before Linux 5.12: remount the top bind read-only, keeping its locked flags.
    flags = os.statvfs(path).f_flag
    keep = sum(ms for st, ms in _ST_FLAGS.items() if flags & st)
    if flags & _ST_NOATIME:
        keep |= _MS_NOATIME
    elif flags & _ST_RELATIME:
        keep |= _MS_RELATIME
    else:
        keep |= _MS_STRICTATIME
    _mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | keep)


def _loopback_up():
    """Bring ``lo`` up in the new network namespace: localhost works, nothing else exists."""
    fd = _check(_libc.socket(2, 2, 0), "cannot open a socket")  # AF_INET, SOCK_DGRAM
    try:
        ifreq = ctypes.create_string_buffer(40)  # struct ifreq: name[16], flags (short)
        ifreq[0:2] = b"lo"
        ctypes.c_short.from_buffer(ifreq, 16).value = _IFF_UP_LOOPBACK_RUNNING
        _check(_libc.ioctl(fd, ctypes.c_ulong(_SIOCSIFFLAGS), ifreq), "cannot bring loopback up")
    finally:
        os.close(fd)


def _drop_privileges():
    """No capability survives the command's exec, whatever its user id; no setuid gain."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        _check(_prctl(_PR_CAPBSET_DROP, cap), "cannot drop a capability")
    _libc.prctl(
        ctypes.c_int(_PR_CAP_AMBIENT),
        *(ctypes.c_ulong(a) for a in (_PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)),
    )
    _check(_prctl(_PR_SET_SECUREBITS, _SECBITS), "cannot set securebits")
    _check(_prctl(_PR_SET_NO_NEW_PRIVS, 1), "cannot set no_new_privs")


def _landlock(ruleset, shm):
    """Apply the agent's ruleset last (it forbids mount(2)); the private /dev/shm is writable."""
    if shm:
        fd = os.open("/dev/shm", os.O_PATH | os.O_CLOEXEC)
        try:
            # struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd.
            attr = ctypes.create_string_buffer(12)
            ctypes.c_uint64.from_buffer(attr, 0).value = _SHM_RIGHTS
            ctypes.c_int32.from_buffer(attr, 8).value = fd
            rule = _libc.syscall(
                ctypes.c_long(_SYS_LANDLOCK_ADD_RULE),
                ctypes.c_int(ruleset),
                ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                attr,
                ctypes.c_uint(0),
            )
            if rule < 0 and ctypes.get_errno() == 22:  # EINVAL: rights this ABI lacks
                ctypes.c_uint64.from_buffer(attr, 0).value = (1 << 13) - 1
                rule = _libc.syscall(
                    ctypes.c_long(_SYS_LANDLOCK_ADD_RULE),
                    ctypes.c_int(ruleset),
                    ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                    attr,
                    ctypes.c_uint(0),
                )
            _check(rule, "cannot allow the private /dev/shm")
        finally:
            os.close(fd)
    restricted = _libc.syscall(
        ctypes.c_long(_SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint(0)
    )
    _check(restricted, "cannot enter the Landlock sandbox")
    os.close(ruleset)


def _exit_status(status):
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


class Setup:
    """What the agent asked for (see the module docstring)."""

    def __init__(self, options):
        self.anchors = []
        self.binds = []
        self.network = False
        self.ruleset = -1
        self.probe = False
        self.parent = 0
        words = iter(options)
        for word in words:
            if word == "--read-only":
                self.binds.append(next(words))
            elif word == "--anchor":
                self.anchors.append(next(words))
            elif word == "--ruleset":
                self.ruleset = int(next(words))
            elif word == "--network":
                self.network = True
            elif word == "--probe":
                self.probe = True
            elif word == "--parent":
                self.parent = int(next(words))
            else:
                raise SetupError(f"unknown option {word!r}")


def _setup_in_init(setup):
    """Everything between the new namespaces and the command, as PID 1 (see the module docstring)."""
    _mount(None, "/", None, _MS_REC | _MS_SLAVE)  # nothing done here reaches the host
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    shm = os.path.isdir("/dev/shm")
    if shm:
        _mount("tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777")
    for folder in setup.anchors:  # a mount point cannot be renamed nor removed
        if os.path.isdir(folder):
            _mount(folder, folder, None, _MS_BIND | _MS_REC)
    for path in setup.binds:
        if os.path.lexists(path):  # gone since the agent looked: nothing to protect
            _read_only(path)
    if not setup.network:
        _loopback_up()
    _drop_privileges()
    if setup.ruleset >= 0:
        _landlock(setup.ruleset, shm)


def _start_command(argv):
    """The command: a session of its own, default signals, nothing blocked (posix_spawn: no copy
    of this interpreter is made). Exits 127/126 when it cannot be started, as a shell would."""
    try:
        return os.posix_spawnp(
            argv[0],
            argv,
            os.environ,
            setsid=True,
            setsigdef=(*FORWARDED, signal.SIGPIPE, signal.SIGXFSZ),
            setsigmask=(),
        )
    except OSError as exc:
        os.write(2, f"cannot run {argv[0]}: {exc.strerror}\n".encode())
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)


def _init(setup, argv, parent_alive):
    """PID 1: set up, start the command, forward signals, reap, exit with its status."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    os.set_blocking(parent_alive, False)
    try:
        if os.read(parent_alive, 1) == b"":
            os._exit(SETUP_FAILED)  # the outer helper died before the death signal was set
    except BlockingIOError:
        pass
    os.close(parent_alive)
    os.setsid()
    try:
        _setup_in_init(setup)
    except (SetupError, OSError) as exc:
        os.write(2, f"agent sandbox: {exc}\n".encode())
        os._exit(SETUP_FAILED)
    if setup.probe:
        os._exit(0)
    command = _start_command(argv)

    def forward(signum, frame):
        # Not contextlib.suppress: importing contextlib costs every command ~2 ms.
        try:  # noqa: SIM105
            os.killpg(command, signum)
        except OSError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(0)
        if pid == command:
            # Leaving now ends the namespace: the kernel kills everything left in it.
            os._exit(_exit_status(status))


def main(args):
    """The outer helper: namespaces, id maps, the init, and the init's status as its own."""
    if "--" not in args or args.index("--") == len(args) - 1:
        os.write(2, b"usage: nsinit.py [SETUP] -- ARGV...\n")
        return 2
    split = args.index("--")
    argv = args[split + 1 :]
    uid, gid = os.getuid(), os.getgid()
    try:
        setup = Setup(args[:split])
        # The agent gone (killed, even with SIGKILL): this helper goes too, and its
        # init with it. Checked after, in case the agent went before.
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if setup.parent and os.getppid() != setup.parent:
            raise SetupError("the agent that started this command is gone")
        flags = _CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWIPC
        if not setup.network:
            flags |= _CLONE_NEWNET
        _check(_libc.unshare(ctypes.c_int(flags)), "cannot create namespaces")
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    except (SetupError, OSError) as exc:
        os.write(2, f"agent sandbox: {exc}\n".encode())
        return SETUP_FAILED
    alive_read, alive_write = os.pipe()
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    init = os.fork()
    if init == 0:
        os.close(alive_write)
        _init(setup, argv, alive_read)
    os.close(alive_read)

    def forward(signum, frame):
        try:  # noqa: SIM105 (see _init)
            os.kill(init, signum)
        except OSError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    _, status = os.waitpid(init, 0)
    return _exit_status(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
