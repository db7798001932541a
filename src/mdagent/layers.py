"""Finding the layers declarations come from, highest precedence first.

A layer is a folder shaped like this repository's root: ``skills/<name>/SKILL.md``,
``config/agent.yaml``, ``config/*.yaml`` and ``config/handlers/*.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mdagent.errors import UsageError

PROJECT_DIR = ".agents"


@dataclass(frozen=True)
class Layer:
    """One folder of declarations and where it came from."""

    path: Path
    kind: str  # "option" | "env" | "project" | "user" | "bundled"

    @property
    def skills_dir(self) -> Path:
        return self.path / "skills"

    @property
    def config_dir(self) -> Path:
        return self.path / "config"

    def __str__(self) -> str:
        return f"{self.kind}:{self.path}"


def state_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """Where caches, sessions and the audit log live (not created here)."""
    configured = environ.get("AGENT_STATE_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".local" / "state" / "mdagent"


def user_layer_path(environ: Mapping[str, str] = os.environ) -> Path:
    """``$AGENT_HOME``, default ``~/.agents``."""
    configured = environ.get("AGENT_HOME")
    return Path(configured).expanduser() if configured else Path.home() / PROJECT_DIR


def bundled_layer_path() -> Path:
    """The layer shipped with mdagent.

    In a wheel, the repository's ``skills/`` and ``config/`` are installed as
    ``mdagent/bundled/``; in a source checkout (editable install) they are
    the repository root's own folders.
    """
    here = Path(__file__).resolve().parent
    packaged = here / "bundled"
    if (packaged / "skills").is_dir() or (packaged / "config").is_dir():
        return packaged
    return here.parent.parent


def find_project_layer(cwd: Path, exclude: Iterable[Path] = ()) -> Path | None:
    """The ``.agents/`` folder of the nearest ancestor of ``cwd`` that has one.

    ``exclude`` holds folders that are layers of another kind (the user layer
    is ``~/.agents``, which every folder under ``~`` would otherwise find).
    """
    skip = {p.resolve() for p in exclude}
    for folder in (cwd, *cwd.parents):
        candidate = folder / PROJECT_DIR
        if candidate.is_dir() and candidate.resolve() not in skip:
            return candidate
    return None


def project_root(cwd: Path | None = None, environ: Mapping[str, str] = os.environ) -> Path:
    """The workspace: the folder holding the project layer, else the git root, else cwd."""
    cwd = (cwd or Path.cwd()).resolve()
    layer = find_project_layer(cwd, exclude=[user_layer_path(environ)])
    if layer is not None:
        return layer.parent.resolve()
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


def _folder(text: str, origin: str) -> Path:
    try:
        return Path(text).expanduser().resolve()
    except (RuntimeError, OSError) as err:  # "~nobody/x": no such user
        raise UsageError(f"{origin}: cannot use {text!r}: {err}") from None


def find_layers(
    options: Iterable[str] = (),
    *,
    no_user: bool = False,
    cwd: Path | None = None,
    environ: Mapping[str, str] = os.environ,
) -> list[Layer]:
    """Every layer, highest precedence first (DESIGN §1).

    ``--layer`` options come first (first given wins), then ``AGENT_PATH``,
    the project layer, the user layer (unless ``no_user``) and the bundled layer.
    A folder named twice is kept once, at its highest place.
    """
    cwd = (cwd or Path.cwd()).resolve()
    found: list[Layer] = [Layer(_folder(p, "--layer"), "option") for p in options]
    for entry in environ.get("AGENT_PATH", "").split(os.pathsep):
        if entry.strip():
            found.append(Layer(_folder(entry, "AGENT_PATH"), "env"))
    user = user_layer_path(environ)
    project = find_project_layer(cwd, exclude=[user])
    if project is not None:
        found.append(Layer(project.resolve(), "project"))
    if not no_user:
        found.append(Layer(user.resolve(), "user"))
    found.append(Layer(bundled_layer_path(), "bundled"))
    unique: list[Layer] = []
    seen: set[Path] = set()
    for layer in found:
        if layer.path not in seen:
            seen.add(layer.path)
            unique.append(layer)
    return unique


def project_layer(layers: Iterable[Layer], cwd: Path | None = None) -> Path:
    """The project layer to write into (``agent new skill``, "always" approvals).

    The existing one when there is one, else ``.agents/`` in the workspace.
    """
    for layer in layers:
        if layer.kind == "project":
            return layer.path
    return project_root(cwd) / PROJECT_DIR
