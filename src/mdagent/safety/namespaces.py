"""Which kernel sandbox confines a model's commands here, and the command line that starts one.

Three routes, the first that works on this machine is taken (once per run):

- ``bwrap``: `bubblewrap <https://github.com/containers/bubblewrap>`_
  (``/usr/bin/bwrap``, Debian/Ubuntu package ``bubblewrap``; Ubuntu 24.04's
  AppArmor lets it create namespaces where it forbids other programs to).
  The command runs in new user, mount, PID and IPC namespaces (and a new,
  empty network namespace for ``network: off``) with no capability, under
  bwrap's own init. The whole file system is mounted read-only, then the
  places a command may write (the workspace, the run's private temp folder,
  the cache folder, ``sandbox.writable``, ``policy.paths``) are bound
  writable, then the agent's configuration inside them read-only again; a
  fresh ``/proc`` and a small ``/dev`` of its own (a private ``/dev/shm``).
  bwrap passes no signal on: a timeout's SIGTERM to the call's process
  group reaches the command and ends bwrap, whose init then dies with it
  (``--die-with-parent``), so what is left ends at once, with no grace.
  A denied write fails with "Read-only file system". No Landlock here:
  the read-only mounts already hold what its rules would, and applying it
  would need a second program in every command (Landlock forbids
  ``mount(2)``, so it cannot come before bwrap).
- ``direct``: the same namespaces made by mdagent itself, through
  :mod:`mdagent.safety.nsinit` run by this Python (no new dependency). The host's
  file system stays as it is; the protected paths are bound read-only,
  ``/proc`` and ``/dev/shm`` are fresh, and the Landlock ruleset of
  :mod:`mdagent.safety.landlock` is applied last, in the namespace (writes outside
  the writable places fail with "Permission denied"). Needs Landlock.
- ``landlock``: Landlock alone (no namespaces), as before this module
  existed: writes outside the writable places are refused, but the
  workspace is writable as a whole, so the agent's configuration inside it
  is guarded by the parser (:mod:`mdagent.safety.protected`) only, the network is
  closed to TCP only, and processes that leave the call's process group
  outlive it. Taken where neither of the others works, and said once per
  run; ``sandbox.required: true`` refuses model commands then.

``AGENT_SANDBOX`` (``auto`` when unset, ``bwrap``, ``direct``,
``landlock``) picks a route instead: for tests, and for a person who wants
one. It is read from the agent's own environment, which a model's command
cannot change. A route it names that cannot work here falls back to
``landlock``, with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

from mdagent.core.errors import UsageError
from mdagent.core.records import Record

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

ROUTE_VARIABLE = "AGENT_SANDBOX"
CHOICES = ("auto", "bwrap", "direct", "landlock")
#: The routes that run a command in namespaces (the kernel holds the configuration).
NAMESPACE_ROUTES = ("bwrap", "direct")
HELPER = Path(__file__).with_name("nsinit.py")
# The helper is imported as a module, not run as a script: a script is compiled
# on every start (2-3 ms), a module's bytecode is cached. Appended to the path,
# so no module of this folder can stand in for one of the standard library.
_HELPER_START = (
    f"import sys; sys.path.append({str(HELPER.parent)!r}); import nsinit; "
    "sys.exit(nsinit.main(sys.argv[1:]))"
)
# How long a probe may take before the route counts as broken.
_PROBE_TIMEOUT = 20.0


class Route(Record):
    """The route model commands take: ``name``; ``why`` namespaces are not used (``landlock``);
    ``program``: bwrap's path (``bwrap``)."""

    name: str
    why: str = ""
    program: str = ""

    @property
    def namespaces(self) -> bool:
        """Whether commands run in namespaces (``bwrap`` or ``direct``)."""
        return self.name in NAMESPACE_ROUTES


def wanted_route() -> str:
    """The route ``AGENT_SANDBOX`` asks for (``auto`` when unset); a wrong value is a UsageError."""
    wanted = os.environ.get(ROUTE_VARIABLE, "").strip().lower() or "auto"
    if wanted not in CHOICES:
        raise UsageError(
            f"{ROUTE_VARIABLE}={os.environ[ROUTE_VARIABLE]!r}: expected auto, bwrap, direct "
            "or landlock"
        )
    return wanted


def route() -> Route:
    """The route model commands take in this run (probed once per wanted route)."""
    return route_for(wanted_route())


@cache
def route_for(wanted: str) -> Route:
    """The route taken when ``AGENT_SANDBOX`` asks for ``wanted`` (one of ``CHOICES``).

    The first of ``wanted``'s routes whose probe works here, else ``landlock``
    saying why not; probed once per process (``route_for.__wrapped__`` probes again).
    """
    if sys.platform != "linux":
        return Route("landlock", f"namespaces need Linux; this is {sys.platform}")
    reasons = []
    if wanted in ("auto", "bwrap"):
        program = shutil.which("bwrap")
        why = _probe_bwrap(program) if program else "bubblewrap (bwrap) is not installed"
        if not why:
            return Route("bwrap", "", program or "")
        reasons.append(why)
    if wanted in ("auto", "direct"):
        why = _probe_direct()
        if not why:
            return Route("direct")
        reasons.append(why)
    if wanted == "landlock":
        reasons.append(f"{ROUTE_VARIABLE}=landlock")
    return Route("landlock", "; ".join(reasons))


def _probe(argv: list[str], what: str) -> str:
    """Run ``argv`` once: "" when it worked, else why ``what`` cannot be used here."""
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{what} cannot start: {exc}"
    if done.returncode == 0:
        return ""
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return f"{what} fails here: {said[-1] if said else f'exit status {done.returncode}'}"


def _true_program() -> list[str]:
    found = shutil.which("true")
    return [found] if found else [sys.executable, "-I", "-S", "-c", ""]


def _probe_bwrap(program: str) -> str:
    argv = bwrap_command(program, _true_program(), writable=(), binds=(), network=False)
    return _probe(argv, "bubblewrap")


def _probe_direct() -> str:
    from mdagent.safety.landlock import abi_version, landlock_reason

    if not abi_version():
        return f"the direct route needs Landlock ({landlock_reason()})"
    if not sys.executable:
        return "the direct route needs the path of this Python, which is unknown"
    return _probe(
        helper_command(["true"], binds=(), network=False, probe=True), "mdagent's namespace helper"
    )


def anchors(binds: Iterable[str], writable: Iterable[str]) -> list[str]:
    """The folders above ``binds`` a command could rename or remove, shallowest first.

    A read-only bind holds a path, not the folder it sits in: a script could
    ``rename(".git", ".git-old")`` and make a ``.git`` of its own, or move
    ``scripts/`` away from under a hook script. A folder that is a mount
    point cannot be renamed or removed (``EBUSY``), so each folder between a
    bind and the first folder whose parent the command cannot write is bound
    onto itself, writable: its files stay the command's to change.
    """
    places = [p.rstrip(os.sep) or os.sep for p in writable]

    def writable_here(path: str) -> bool:
        return any(path == p or path.startswith(p.rstrip(os.sep) + os.sep) for p in places)

    found: set[str] = set()
    for bind in binds:
        folder = os.path.dirname(bind)
        while folder != os.path.dirname(folder) and writable_here(os.path.dirname(folder)):
            found.add(folder)
            folder = os.path.dirname(folder)
    return sorted(found, key=lambda p: (p.count(os.sep), p))


def bwrap_command(
    program: str,
    argv: list[str],
    *,
    writable: Iterable[str],
    binds: Iterable[str],
    network: bool,
) -> list[str]:
    """The bwrap command line running ``argv`` (see the module docstring).

    ``writable`` are bound writable over the read-only root, the folders
    above ``binds`` bound onto themselves (:func:`anchors`), and ``binds``
    read-only after them (protected paths inside writable places).
    ``--die-with-parent``: when bwrap ends (the call's end, its timeout,
    the agent's exit) its init dies and the kernel kills what is left.
    """
    writable = list(writable)
    binds = list(binds)
    line = [
        program,
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
    ]
    if not network:
        line.append("--unshare-net")
    line += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for place in writable:
        device = place == "/dev" or place.startswith("/dev/")
        line += ["--dev-bind-try" if device else "--bind-try", place, place]
    for folder in anchors(binds, writable):
        line += ["--bind-try", folder, folder]
    for path in binds:
        line += ["--ro-bind-try", path, path]
    return [*line, "--", *argv]


def helper_command(
    argv: list[str],
    *,
    binds: Iterable[str],
    network: bool,
    ruleset: int = -1,
    probe: bool = False,
    writable: Iterable[str] = (),
) -> list[str]:
    """The command line running ``argv`` through :mod:`mdagent.safety.nsinit` (the direct route);
    ``writable``: where the command may write (for :func:`anchors`)."""
    binds = list(binds)
    line = [sys.executable, "-I", "-S", "-c", _HELPER_START]
    for folder in anchors(binds, writable):
        line += ["--anchor", folder]
    for path in binds:
        line += ["--read-only", path]
    if network:
        line.append("--network")
    if ruleset >= 0:
        line += ["--ruleset", str(ruleset)]
    if probe:
        line.append("--probe")
    line += ["--parent", str(os.getpid())]  # it dies with the agent
    return [*line, "--", *argv]


def held_places(ctx: Any) -> list[str] | None:
    """Where a model's command may write, when a namespace sandbox will run it; else None.

    Everything else (the protected paths inside these places included) the
    kernel holds read-only for such a command, so :mod:`mdagent.safety.policy`
    judges its ``exec`` with :meth:`mdagent.safety.protected.Protected.held_by_kernel`.
    None (the parser's guard in full) when the call is not confined, the
    settings cannot be read, or no namespace route works here.
    """
    from mdagent.core.errors import MdagentError
    from mdagent.safety.sandboxsettings import SandboxSettings, writable_paths
    from mdagent.safety.workspace import roots_from

    if ctx is None:
        return None
    settings = getattr(ctx, "settings", None)
    section = settings.get("sandbox") if hasattr(settings, "get") else None
    try:
        sandbox_settings = SandboxSettings.from_mapping(section)
        if not sandbox_settings.applies(getattr(ctx, "caller", None)):
            return None
        if not route().namespaces:
            return None
        root, extras = roots_from(ctx)
    except MdagentError:
        return None
    return [str(p) for p in writable_paths(sandbox_settings, root, extras)]
