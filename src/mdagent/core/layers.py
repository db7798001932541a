"""Finding the layers declarations come from, highest precedence first.

A layer is a folder shaped like this repository's root: ``skills/<name>/SKILL.md``,
``config/agent.yaml``, ``config/*.yaml`` and ``config/handlers/*.py``.

Other agents' skill folders are layers too, so skills people already have
just work: the project's ``.claude/skills`` below the project layer, and
``~/.claude/skills``, ``~/.codex/skills`` (``$CODEX_HOME/skills``) and
OpenClaw's managed ``~/.openclaw/skills`` (``$OPENCLAW_STATE_DIR/skills``)
below the user layer; ``.github/skills`` and (opt-in) OpenClaw's top-level
``skills/`` of the workspace. They hold skills only. Other agents' other
files are read by :mod:`mdagent.declarations.interop` through a ``project-foreign`` and
a ``user-foreign`` layer (``skills.interop`` turns each source off).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from stat import S_ISREG

from mdagent.core.defaults import PROJECT_DIR
from mdagent.core.errors import UsageError
from mdagent.core.records import Record

#: Other agents' skill folders, by layer kind: (where they are, what to call them).
INTEROP_KINDS = {
    "project-claude": "project .claude/skills",
    "project-github": "project .github/skills",
    "project-openclaw": "project skills/ (OpenClaw)",
    "user-claude": "~/.claude/skills",
    "user-codex": "~/.codex/skills",
    "user-openclaw": "~/.openclaw/skills",
}
#: Other agents' files that are not skill folders (commands, MCP lists,
#: permissions: :mod:`mdagent.declarations.interop`), as a layer whose ``path`` is the
#: workspace root or the home folder.
FOREIGN_KINDS = {
    "project-foreign": "project, other agents' files",
    "user-foreign": "~, other agents' files",
}
#: Where each project skill folder sits below the workspace root.
_PROJECT_INTEROP = {
    "project-claude": (".claude", "skills"),
    "project-github": (".github", "skills"),
    "project-openclaw": ("skills",),
}


class Layer(Record):
    """One folder of declarations and where it came from.

    ``kind`` is "option", "env", "project", "user", "bundled", or one of
    :data:`INTEROP_KINDS` for another agent's skill folder, whose ``path`` is
    the skills folder itself (it has no ``config/``).
    """

    path: Path
    kind: str
    #: For the workspace's layers: the real folder they were found in. ``path``
    #: is resolved, and ``.agents`` may be a link to a folder elsewhere (even
    #: another project's): trust belongs to this folder, not to where it leads.
    root: Path | None = None

    @property
    def skills_only(self) -> bool:
        """Whether this is another agent's skill folder: skills, no settings or tools."""
        return self.kind in INTEROP_KINDS

    @property
    def foreign(self) -> bool:
        """Whether this stands for other agents' files in the workspace root or the home folder."""
        return self.kind in FOREIGN_KINDS

    @property
    def skills_dir(self) -> Path:
        if self.foreign:
            return self.path / ".agents-no-skills"  # never a folder: no skills of its own
        return self.path if self.skills_only else self.path / "skills"

    @property
    def config_dir(self) -> Path | None:
        return None if self.skills_only or self.foreign else self.path / "config"

    @property
    def label(self) -> str:
        """How listings name the layer: ``project``, ``user``, ``~/.claude/skills``..."""
        return INTEROP_KINDS.get(self.kind) or FOREIGN_KINDS.get(self.kind, self.kind)

    @property
    def scope(self) -> str:
        """``project`` for layers that come with the working folder (maybe a cloned
        repository someone else wrote), ``user`` for the user's own and mdagent's."""
        return "project" if self.kind == "project" or self.kind in _WORKSPACE_KINDS else "user"

    def __str__(self) -> str:
        return f"{self.kind}:{self.path}"


_WORKSPACE_KINDS = frozenset({*_PROJECT_INTEROP, "project-foreign"})


def workspace_of(layer: Layer) -> Path | None:
    """The workspace root a workspace layer belongs to (None for the person's own layers).

    The folder the layer was found in (``Layer.root``) when known, never where a
    linked ``.agents`` or skills folder leads: another project's trust must not
    carry over.
    """
    if layer.root is not None and layer.kind in (*_WORKSPACE_KINDS, "project"):
        return layer.root
    if layer.kind == "project":
        return layer.path.parent
    if layer.kind == "project-foreign":
        return layer.path
    parts = _PROJECT_INTEROP.get(layer.kind)
    if parts is None:
        return None
    path = layer.path
    for _ in parts:
        path = path.parent
    return path


def _found_in(kind: str, path: Path) -> Path | None:
    """The workspace folder a project skill folder at ``path`` (as found, links
    unresolved) sits in; None for the person's own."""
    parts = _PROJECT_INTEROP.get(kind)
    if parts is None:
        return None
    for _ in parts:
        path = path.parent
    return path.resolve()


def state_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """Where caches, sessions and the audit log live (not created here)."""
    configured = environ.get("AGENT_STATE_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".local" / "state" / "mdagent"


def _home(environ: Mapping[str, str]) -> Path:
    home = environ.get("HOME")
    return Path(home) if home else Path.home()


def interop_paths(
    cwd: Path,
    environ: Mapping[str, str] = os.environ,
    *,
    no_user: bool = False,
    existing_only: bool = True,
    root: Path | None = None,
) -> list[tuple[str, Path]]:
    """``(kind, skills folder)`` of the other agents' skill folders that exist, in order.

    The project's ``.claude/skills`` (in the workspace root), then the user's
    ``~/.claude/skills``, ``$CODEX_HOME/skills`` (default ``~/.codex``) and
    ``$OPENCLAW_STATE_DIR/skills`` (default ``~/.openclaw``); ``no_user``
    leaves out the user's. ``existing_only=False`` gives them all: a folder
    created later becomes a layer then, so it is protected already.
    ``root`` is the workspace root when the caller knows it (default: found
    from ``cwd``).
    """
    home = _home(environ)
    user = [
        ("user-claude", home / ".claude" / "skills"),
        ("user-codex", Path(environ.get("CODEX_HOME") or home / ".codex").expanduser() / "skills"),
        (
            "user-openclaw",
            Path(environ.get("OPENCLAW_STATE_DIR") or home / ".openclaw").expanduser() / "skills",
        ),
    ]
    base = root or project_root(cwd, environ)
    found = []
    for kind, parts in _PROJECT_INTEROP.items():
        project = base.joinpath(*parts)
        if project not in (path for _, path in user):
            found.append((kind, project))
    found += [] if no_user else user
    return [(kind, path) for kind, path in found if not existing_only or path.is_dir()]


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
    here = Path(__file__).resolve().parents[1]  # the package: mdagent/ (this is mdagent/core/)
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
    A folder named twice is kept once, at its highest place. Other agents'
    skill folders (:func:`interop_paths`) sit below the project and the user
    layer they belong with.
    """
    cwd = (cwd or Path.cwd()).resolve()
    found: list[Layer] = [Layer(_folder(p, "--layer"), "option") for p in options]
    for entry in environ.get("AGENT_PATH", "").split(os.pathsep):
        if entry.strip():
            found.append(Layer(_folder(entry, "AGENT_PATH"), "env"))
    user = user_layer_path(environ)
    project = find_project_layer(cwd, exclude=[user])
    if project is not None:
        found.append(Layer(project.resolve(), "project", project.parent.resolve()))
    root = project.parent if project is not None else None  # else found from cwd
    interop = [
        Layer(path.resolve(), kind, _found_in(kind, path))
        for kind, path in interop_paths(cwd, environ, no_user=no_user, root=root)
    ]
    found += [layer for layer in interop if layer.scope == "project"]
    home = _home(environ).resolve()
    workspace = (root or project_root(cwd, environ)).resolve()
    if workspace != home:  # the home folder's files are the person's own (user-foreign)
        found.append(Layer(workspace, "project-foreign", workspace))
    if not no_user:
        found.append(Layer(user.resolve(), "user"))
    found += [layer for layer in interop if layer.scope == "user"]
    if not no_user:
        found.append(Layer(home, "user-foreign"))
    found.append(Layer(bundled_layer_path(), "bundled"))
    unique: list[Layer] = []
    seen: set[tuple[Path, bool]] = set()
    for layer in found:
        key = (layer.path, layer.foreign)  # a foreign layer shares its folder with others
        if key not in seen:
            seen.add(key)
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


# -- finding the skills of a layer ----------------------------------------------

#: How deep skills may sit below a skills folder (``skills/group/name/SKILL.md``
#: is 2), as OpenClaw; and how many folders one layer's walk may enter.
MAX_SKILL_DEPTH = 6
#: 20,000: a layer of 10,000 skills is supported (issue 15) with room for
#: group folders; the bound still stops a walk of a huge tree.
MAX_SKILL_FOLDERS = 20_000
SKILL_FILE = "SKILL.md"
# Folders that hold no skills however deep they go.
_NOT_SKILLS = {"node_modules", "__pycache__"}


class Found(Record):
    """What :func:`walk_skills` met: a skill folder, a folder without one, or a problem."""

    kind: str  # "skill" | "folder" | "problem"
    path: Path
    severity: str = ""
    message: str = ""
    #: A skill's SKILL.md, as text, and its ``os.stat`` result, taken before it is read
    #: (the registry's cache stamps it from that: one ``stat`` per skill).
    file: str = ""
    stat: os.stat_result | None = None


def trust_root(layer: Layer, cwd: Path | None = None) -> Path | None:
    """Where a layer's symlinked skill folders may lead, or None for anywhere.

    A project's layers come with the working folder, which may be a
    repository someone else wrote: their links may not lead out of the
    workspace (a link to ``~/.ssh`` must not become a skill folder the model
    may read). The user's own layers, ``--layer``/``AGENT_PATH`` folders and
    mdagent's own are trusted as their owner set them up.
    """
    root = workspace_of(layer)
    return root.resolve() if root is not None else None


def walk_skills(skills_dir: Path, confine_to: Path | None = None) -> Iterator[Found]:
    """Every skill folder under ``skills_dir``, name-sorted, depth first.

    A folder holding a ``SKILL.md`` is a skill and is not looked into further;
    other folders are searched up to :data:`MAX_SKILL_DEPTH` levels (grouped
    layouts: ``skills/research/web/SKILL.md``). Hidden folders and
    ``node_modules`` are skipped; symlinked folders are followed, once each,
    and only inside ``confine_to`` when given. Folders searched without a
    skill are yielded too (a compile watches them for a ``SKILL.md`` to
    appear); what cannot be read or is refused is a problem, never a silent skip.
    """
    seen: set[str] = set()  # real paths, as text
    budget = [MAX_SKILL_FOLDERS]
    try:
        top = skills_dir.resolve()
    except OSError:
        return
    seen.add(str(top))
    if (skills_dir / SKILL_FILE).is_file():
        yield Found(
            "problem",
            skills_dir / SKILL_FILE,
            "warning",
            "a SKILL.md directly in a skills folder is not loaded: give the skill a folder of its own",
        )
    yield from _walk_folder(skills_dir, 1, seen, budget, confine_to, top)


def _walk_folder(
    folder: Path,
    depth: int,
    seen: set[str],
    budget: list[int],
    confine_to: Path | None,
    real_folder: Path,
) -> Iterator[Found]:
    """Walk ``folder``, whose real (resolved) path is ``real_folder``."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as err:
        yield Found("problem", folder, "error", f"cannot list: {err.strerror or err}")
        return
    # A plain folder is inside confine_to exactly when the folder holding it
    # is, and its real path is its parent's plus its name: only links need
    # the path operations of their own (a cold compile walks every skill).
    inside = confine_to is None or real_folder.is_relative_to(confine_to)
    real_text = str(real_folder)
    for entry in entries:
        name = entry.name
        if name.startswith(".") or name in _NOT_SKILLS:
            continue
        path = folder / name
        try:
            link = entry.is_symlink()
            if link:
                os.stat(entry.path)  # a dangling link or a loop raises here
            if not entry.is_dir():
                continue
            real = path.resolve(strict=True) if link else None
        except (OSError, RuntimeError) as err:
            errno = getattr(err, "errno", None)
            reason = "symlink loop" if errno == 40 or isinstance(err, RuntimeError) else err
            reason = getattr(reason, "strerror", None) or str(reason)
            yield Found("problem", path, "error", f"cannot open skill folder: {reason}")
            continue
        if (link or not inside) and confine_to is not None:
            real = real or real_folder / name
            if not real.is_relative_to(confine_to):
                yield Found(
                    "problem",
                    path,
                    "warning",
                    f"not followed: this link leads out of the project to {real}; a project's "
                    "skill folders must stay inside it (link it from your user layer instead)",
                )
                continue
        real_key = str(real) if real is not None else os.path.join(real_text, name)
        if real_key in seen:
            continue  # reached twice through links: loaded once
        seen.add(real_key)
        budget[0] -= 1
        if budget[0] < 0:
            if budget[0] == -1:
                yield Found(
                    "problem",
                    path,
                    "warning",
                    f"more than {MAX_SKILL_FOLDERS} folders in this skills folder; "
                    "the rest are not searched",
                )
            return
        file_name = os.path.join(str(path), SKILL_FILE)
        try:
            # One stat says it is a file and stamps it for the cache's freshness.
            st = os.stat(file_name)
        except (OSError, ValueError):
            st = None
        if st is not None and S_ISREG(st.st_mode):
            yield Found("skill", path, file=file_name, stat=st)
            continue
        skill_file = path / SKILL_FILE
        real = real or real_folder / name
        yield Found("folder", path)
        if depth >= MAX_SKILL_DEPTH and _has_folders(path):
            yield Found(
                "problem",
                path,
                "warning",
                f"folders below this one are not searched: skills sit at most "
                f"{MAX_SKILL_DEPTH} levels deep",
            )
        if depth < MAX_SKILL_DEPTH:
            found_any = False
            for found in _walk_folder(path, depth + 1, seen, budget, confine_to, real):
                found_any = found_any or found.kind == "skill"
                yield found
            if depth == 1 and not found_any:
                yield Found("problem", skill_file, "warning", "skill folder has no SKILL.md")


def _has_folders(path: Path) -> bool:
    try:
        return any(e.is_dir() and not e.name.startswith(".") for e in os.scandir(path))
    except OSError:
        return False
