"""The ``sandbox:`` settings, and the places they let a confined command write.

:class:`SandboxSettings` reads the ``sandbox:`` mapping (its defaults are
``DEFAULT_SETTINGS["sandbox"]``); :func:`writable_paths` turns settings and
a workspace into the places a confined child may write, one list for every
route: :mod:`mdagent.safety.sandbox` builds its rules and command lines from
it, :func:`mdagent.safety.namespaces.held_places` tells the policy where a
namespace sandbox lets a command write. :func:`private_tmpdir` is the run's
private temp folder, the ``$TMPDIR`` of confined commands.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mdagent.core.defaults import DEFAULT_SETTINGS
from mdagent.core.errors import ConfigError

MODES = ("workspace-write", "read-only", "off")
APPLIES_TO = ("model", "all")

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


def cache_dir() -> Path:
    """The user's cache folder (``$XDG_CACHE_HOME``, else ``~/.cache``): writable when confined."""
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


def forget_private_tmpdir() -> None:
    """Forget this run's private temp folder: the next :func:`private_tmpdir` makes a new one.

    For a new run in this process; the old folder is still removed at exit.
    """
    with _PRIVATE_TMP_LOCK:
        _PRIVATE_TMP.clear()


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
        base = [workspace, *base, Path("/dev/shm"), cache_dir()]
    paths: list[Path] = []
    for entry in [*base, *listed]:
        path = workspace / Path(entry).expanduser()
        if path.exists():
            path = path.resolve()
            if path not in paths:
                paths.append(path)
    return paths
