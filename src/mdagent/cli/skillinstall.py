"""Installing shared skills: ``agent skills add / update / remove`` and ``skills.lock``.

A shared skill is code a model may run, so an install is consented to (the
person sees every skill's name, description, permissions, its ``model:``,
the live-context commands of its body and the scripts it brings), checked
the way ``agent check`` checks it, and atomic: the skill is assembled in a
hidden folder of the target layer, then renamed into ``skills/``.
``skills.lock`` in the layer records, per skill, where it came from and a
SHA-256 of each file (:mod:`mdagent.safety.skillfolder`), so ``agent check``
notices a hand edit or tampering and ``agent skills update`` knows what
changed: any change to any file asks for consent again.

The lock is YAML (``skills:`` mapping each name to its entry), which is the
shape :func:`mdagent.agent.promptskills.installed` reads to mark a skill foreign.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mdagent.core.errors import MdagentError, Problem
from mdagent.core.layers import SKILL_FILE, Layer
from mdagent.safety import skillfolder

LOCK_FILE = "skills.lock"
LOCK_HEADER = (
    "# Written by `agent skills add`: where each installed skill came from and a SHA-256\n"
    "# of each of its files. `agent check` warns when the files no longer match.\n"
)
#: Files a skill may run although they are not marked executable.
SCRIPT_SUFFIXES = {
    ".sh", ".bash", ".zsh", ".fish", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl",
    ".php", ".ps1", ".bat", ".cmd", ".lua", ".go", ".jar", ".exe",
}  # fmt: skip
#: Only these transports: never ``ext::`` (runs a command) or plain ``http``.
GIT_PROTOCOLS = "file:https:ssh:git"
GIT_TIMEOUT = 300.0
_OWNER_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_NAME_LINE = re.compile(r"^name:[^\n]*$", re.MULTILINE)

Confirm = Callable[[str], bool]


class InstallError(MdagentError):
    """An install, update or removal that did not happen; nothing was changed."""

    exit_code = 1


@dataclass
class Fetched:
    """A source on disk: ``root`` (a temporary clone or the local folder) and its commit."""

    root: Path
    commit: str | None = None
    cleanup: list[Path] = field(default_factory=list)

    def close(self) -> None:
        for path in self.cleanup:
            shutil.rmtree(path, ignore_errors=True)


# -- sources ----------------------------------------------------------------------


def source_url(source: str) -> str | None:
    """The git URL of ``source``, or None when it is a local folder."""
    if source.startswith(("https://", "file://", "ssh://", "git://", "git@")):
        return source
    if Path(source).expanduser().exists():
        return None
    if _OWNER_REPO.match(source):
        return f"https://github.com/{source}.git"
    if "://" in source or "::" in source:
        raise InstallError(f"{source}: unsupported source (https://, git@, file:// or a folder)")
    raise InstallError(f"{source}: no such folder, and not a git URL or owner/repo")


def fetch(source: str, ref: str | None) -> Fetched:
    """``source`` on disk: a local folder as is, a git URL shallow-cloned at ``ref``."""
    url = source_url(source)
    if url is None:
        if ref:
            raise InstallError(f"{source}: --ref needs a git source, this is a folder")
        folder = Path(source).expanduser().resolve()
        if not folder.is_dir():
            raise InstallError(f"{source}: not a folder")
        return Fetched(folder)
    temp = Path(tempfile.mkdtemp(prefix="agent-skill-"))
    fetched = Fetched(temp, cleanup=[temp])
    try:
        _git(temp, "init", "-q", ".")
        _git(temp, "fetch", "-q", "--depth", "1", url, ref or "HEAD", what=f"fetch {url}")
        _git(temp, "checkout", "-q", "FETCH_HEAD")
        fetched.commit = _git(temp, "rev-parse", "HEAD").strip()
    except BaseException:
        fetched.close()
        raise
    return fetched


def _git(cwd: Path, *args: str, what: str = "") -> str:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_ALLOW_PROTOCOL=GIT_PROTOCOLS)
    env.pop("GIT_DIR", None)
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise InstallError("git is not installed: a git source needs the git executable") from None
    except subprocess.TimeoutExpired:
        raise InstallError(
            f"cannot {what or 'run git'}: no answer in {GIT_TIMEOUT:.0f} s"
        ) from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
        reason = (fatal or lines or [f"git exited {done.returncode}"])[0]
        reason = reason.removeprefix("fatal: ").removeprefix("error: ")
        raise InstallError(f"cannot {what or 'git ' + args[0]}: {reason}")
    return done.stdout


def find_skill_folders(root: Path, subpath: str | None) -> list[Path]:
    """The skill folders at ``root/subpath``: it, if it holds a SKILL.md, else those below."""
    from mdagent.core.layers import walk_skills

    base = (root / subpath).resolve() if subpath else root.resolve()
    if not base.is_relative_to(root.resolve()):
        raise InstallError(f"--path {subpath}: leads outside the source")
    if not base.is_dir():
        raise InstallError(f"--path {subpath}: no such folder in the source")
    if (base / SKILL_FILE).is_file():
        return [base]
    return [found.path for found in walk_skills(base, confine_to=base) if found.kind == "skill"]


# -- what a skill folder holds -----------------------------------------------------


def file_hashes(folder: Path) -> dict[str, str]:
    """``relative/path -> sha256`` of every file, ``x:`` first when it is executable.

    The folder's :func:`mdagent.safety.skillfolder.manifest` for an install: a
    symbolic link (it may lead anywhere, ``~/.ssh``), a FIFO or a device is
    refused, as is a folder past the manifest's limits: an installed skill
    carries its files, not pointers.
    """
    try:
        return skillfolder.manifest(folder, installs=True)
    except skillfolder.FolderError as err:
        raise InstallError(str(err)) from None


def scripts(folder: Path, hashes: dict[str, str]) -> list[str]:
    """The files of the skill that may run: executable, a script suffix, or a ``#!`` line."""
    found = []
    for name, digest in hashes.items():
        path = folder / name
        if digest.startswith("x:"):
            found.append(f"{name} (executable)")
        elif path.suffix.lower() in SCRIPT_SUFFIXES:
            found.append(f"{name} (script)")
        else:
            try:
                with open(path, "rb") as handle:
                    if handle.read(2) == b"#!":
                        found.append(f"{name} (script)")
            except OSError:
                continue  # gone (an old lock entry): not a script of this folder
    return found


def _load(skill_file: Path):
    from mdagent.declarations.skills import load_skill

    skill, problems = load_skill(skill_file)
    if skill is None:
        errors = [str(p) for p in problems if p.severity == "error"]
        errors = errors or [str(p) for p in problems if p.severity == "warning"]
        errors = errors or ["cannot be loaded"]
        raise InstallError(f"{errors[0]} (not installed)")
    return skill


def consent_facts(skill) -> dict[str, str]:
    """What the consent text says ``skill`` may do, one line of text per key.

    Its command tool, the rules its ``allowed-tools`` pre-approve, the
    ``model:`` a turn it starts runs on (a host of its choosing would see
    the conversation) and the live-context commands its body runs before a
    model reads it; ``skills update`` says which of them changed.
    """
    import json

    from mdagent.agent.promptskills import live_commands

    model = skill.model
    commands = live_commands(skill)
    return {
        "command-tool": skill.tool or "(none: a prompt skill)",
        "allowed-tools": ", ".join(skill.allowed_tools) or "(none)",
        "model": (
            "(none: yours)"
            if model in (None, "", "inherit")
            else json.dumps(model, ensure_ascii=False, sort_keys=True)
            if isinstance(model, (dict, list))
            else str(model)
        ),
        "live context": "; ".join(f"!`{c}`" for c in commands) or "(none)",
    }


def describe(name: str, folder: Path, skill, hashes: dict[str, str], origin: str) -> str:
    """The consent text of one skill (its text escaped: :func:`mdagent.core.escapes.visible`)."""
    from mdagent.core.escapes import visible

    lines = [f"skill {visible(name)}  from {visible(origin)}"]
    lines.append(f"  description: {visible(skill.description or '(none)')}")
    lines.extend(f"  {key}: {visible(text)}" for key, text in consent_facts(skill).items())
    runs = scripts(folder, hashes)
    lines.append(f"  scripts: {visible(', '.join(runs)) if runs else '(none)'}")
    lines.append(f"  files: {len(hashes)}")
    return "\n".join(lines)


def what_changed(old_skill, new_skill, changed: list[tuple[str, str]]) -> str:
    """The lines ``skills update`` adds to the consent text: the files and facts that changed."""
    from mdagent.core.escapes import visible

    lines = [f"  changed since it was installed: {visible(skillfolder.summary(changed))}"]
    old = consent_facts(old_skill) if old_skill is not None else {}
    for key, text in consent_facts(new_skill).items():
        if old and old.get(key) != text:
            lines.append(f"  {key} was: {visible(old.get(key))}")
    return "\n".join(lines)


# -- the lock ------------------------------------------------------------------------


def lock_path(layer_path: Path) -> Path:
    return layer_path / LOCK_FILE


def read_lock(layer_path: Path) -> dict[str, dict[str, Any]]:
    """The ``skills:`` entries of the layer's lock ({} when there is none)."""
    import yaml

    path = lock_path(layer_path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise InstallError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise InstallError(f"{path}{line}: not valid YAML; fix or delete it") from None
    entries = data.get("skills") if isinstance(data, dict) else None
    if not isinstance(entries, dict) or not all(isinstance(v, dict) for v in entries.values()):
        raise InstallError(f"{path}:1: expected 'skills:' mapping each name to its entry")
    return entries


def write_lock(layer_path: Path, entries: dict[str, dict[str, Any]]) -> None:
    """Write the lock atomically (a temporary file, then rename)."""
    import yaml

    path = lock_path(layer_path)
    text = LOCK_HEADER + yaml.safe_dump(
        {"skills": dict(sorted(entries.items()))}, sort_keys=False, allow_unicode=True
    )
    temp = path.with_name(f".{LOCK_FILE}.{os.getpid()}.tmp")
    try:
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, path)
    except OSError as err:
        temp.unlink(missing_ok=True)
        raise InstallError(f"{path}: cannot write: {err.strerror or err}") from None


def lock_problems(layers: list[Layer]) -> list[Problem]:
    """``agent check``'s findings: installed skills whose files no longer match the lock."""
    problems: list[Problem] = []
    for layer in layers:
        if layer.skills_only or layer.foreign or not lock_path(layer.path).exists():
            continue
        try:
            entries = read_lock(layer.path)
        except InstallError as err:
            problems.append(Problem(lock_path(layer.path), 1, 1, "warning", str(err)))
            continue
        for name, entry in entries.items():
            problem = verify(layer.path, name, entry)
            if problem:
                problems.append(problem)
    return problems


def verify(layer_path: Path, name: str, entry: dict[str, Any]) -> Problem | None:
    """A warning when the installed skill ``name`` differs from its lock entry."""
    folder = layer_path / "skills" / name
    where = folder / SKILL_FILE
    if not folder.is_dir():
        return Problem(
            lock_path(layer_path), 1, 1, "warning", f"installed skill {name!r} is missing: {folder}"
        )
    try:
        hashes = file_hashes(folder)
    except (InstallError, OSError) as err:
        return Problem(
            where, 1, 1, "warning", f"installed skill {name!r} cannot be verified: {err}"
        )
    expected = entry.get("files") or {}
    changes = skillfolder.changes(expected, hashes)
    if not changes and skillfolder.digest(hashes) == entry.get("sha256"):
        return None
    listed = skillfolder.summary(changes) if changes else "files differ"
    return Problem(
        where,
        1,
        1,
        "warning",
        f"installed skill {name!r} differs from {LOCK_FILE} ({listed}): edited by hand "
        f"or tampered; `agent skills remove {name}` and `agent skills add` again restore it",
    )


# -- install ------------------------------------------------------------------------


@dataclass
class Request:
    """What ``agent skills add`` was asked."""

    source: str
    path: str | None = None
    ref: str | None = None
    name: str | None = None
    take_all: bool = False


def install(request: Request, layer_path: Path, layers: list[Layer], confirm: Confirm) -> list[str]:
    """Install the skill(s) of ``request`` into ``layer_path/skills``; their names.

    Nothing is changed unless every skill passes the checks and ``confirm``
    accepts the consent text; then each one is renamed into place and the
    lock is written.
    """
    fetched = fetch(request.source, request.ref)
    stage: Path | None = None
    try:
        folders = find_skill_folders(fetched.root, request.path)
        if not folders:
            where = f"{request.source}" + (f" --path {request.path}" if request.path else "")
            raise InstallError(f"{where}: no {SKILL_FILE} found; nothing installed")
        if len(folders) > 1 and not request.take_all:
            names = ", ".join(f.relative_to(fetched.root).as_posix() for f in folders[:8])
            raise InstallError(
                f"{request.source}: {len(folders)} skills ({names}{', ...' if len(folders) > 8 else ''}); "
                "choose one with --path, or take them all with --all"
            )
        if request.name and len(folders) > 1:
            raise InstallError("--name renames one skill; it cannot be used with several")
        lock = read_lock(layer_path)
        layer_path.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=".skills-install-", dir=layer_path))
        staged = []
        for folder in folders:
            staged.append(_stage(request, fetched, folder, stage, layer_path, lock))
        _check_staged(stage, layers)
        text = "\n".join(item["consent"] for item in staged)
        if not confirm(text):
            raise InstallError("not installed: consent refused")
        (layer_path / "skills").mkdir(exist_ok=True)
        moved: list[Path] = []
        try:
            for item in staged:
                target = layer_path / "skills" / item["name"]
                os.rename(item["folder"], target)
                moved.append(target)
                lock[item["name"]] = item["entry"]
            write_lock(layer_path, lock)
        except BaseException:
            for target in moved:  # all or nothing
                shutil.rmtree(target, ignore_errors=True)
            raise
        return [item["name"] for item in staged]
    except OSError as err:
        raise InstallError(f"cannot install: {err.strerror or err}: {err.filename or ''}") from None
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        fetched.close()


def _stage(request, fetched, folder, stage, layer_path, lock, collide=True) -> dict[str, Any]:
    from mdagent.declarations.skills import name_problem

    skill = _load(folder / SKILL_FILE)
    name = request.name or skill.name
    bad = name_problem(name)
    if bad:
        raise InstallError(f"--name {name}: {bad}" if request.name else f"{folder}: {bad}")
    target = _existing(layer_path).get(name, layer_path / "skills" / name)
    if collide and os.path.lexists(target):
        origin = lock.get(name, {}).get("source")
        owner = f"installed from {origin}" if origin else "written in this layer"
        raise InstallError(
            f"skill {name!r} already exists in {target} ({owner}); use --name to install under another name"
        )
    file_hashes(folder)  # refuses symbolic links before anything is copied
    dest = stage / "skills" / name
    shutil.copytree(folder, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    if name != skill.name:
        rename_skill(dest / SKILL_FILE, name)
    hashes = file_hashes(dest)
    relative = folder.relative_to(fetched.root).as_posix()
    origin = request.source + (f" {relative}" if relative != "." else "")
    if fetched.commit:
        origin += f" @ {fetched.commit[:12]}"
    entry = {
        "source": request.source,
        "path": relative,
        "ref": request.ref,
        "commit": fetched.commit,
        "sha256": skillfolder.digest(hashes),
        "files": hashes,
    }
    if name != skill.name:
        entry["renamed-from"] = skill.name
    return {
        "name": name,
        "folder": dest,
        "entry": entry,
        "consent": describe(name, dest, skill, hashes, origin),
        "skill": skill,
        "hashes": hashes,
    }


def _existing(layer_path: Path) -> dict[str, Path]:
    """The skills of the target layer by name, wherever they sit (``skills/group/x``)."""
    from mdagent.core.layers import walk_skills
    from mdagent.declarations.skills import load_skill

    found: dict[str, Path] = {}
    for item in walk_skills(layer_path / "skills"):
        if item.kind == "skill":
            skill, _ = load_skill(item.path / SKILL_FILE)
            found.setdefault(skill.name if skill else item.path.name, item.path)
    return found


def rename_skill(skill_file: Path, name: str) -> None:
    """Set the front-matter ``name:`` of ``skill_file`` (``--name``), or add one."""
    text = skill_file.read_text(encoding="utf-8")
    end = text.find("\n---", 3) if text.startswith("---") else -1
    if end < 0:
        text = f"---\nname: {name}\n---\n{text}"
    else:
        head, rest = text[:end], text[end:]
        head, count = _NAME_LINE.subn(f"name: {name}", head, count=1)
        if not count:
            head = head.replace("---\n", f"---\nname: {name}\n", 1)
        text = head + rest
    skill_file.write_text(text, encoding="utf-8")


def _check_staged(stage: Path, layers: list[Layer]) -> None:
    """``agent check`` on the staged skills, above every layer: an error refuses them all."""
    from mdagent.registry.compile import compile_registry

    registry, _ = compile_registry([Layer(stage.resolve(), "option"), *layers])
    root = str(stage.resolve())
    errors = [
        p for p in registry.problems if p.severity == "error" and str(p.path).startswith(root)
    ]
    if errors:
        first = errors[0]
        rel = os.path.relpath(first.path, root)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InstallError(f"{rel}:{first.line}:{first.col}: {first.message}{more}; not installed")


# -- remove and update ----------------------------------------------------------------


def remove(layer_path: Path, name: str) -> Path:
    """Delete the installed skill ``name`` and its lock entry; the folder removed."""
    lock = read_lock(layer_path)
    folder = layer_path / "skills" / name
    if name not in lock:
        hint = f"; {folder} was not installed by `agent skills add`" if folder.exists() else ""
        raise InstallError(f"no installed skill {name!r} in {lock_path(layer_path)}{hint}")
    # Rename first: the folder leaves skills/ at once, then is deleted.
    trash = None
    if folder.exists():
        trash = Path(tempfile.mkdtemp(prefix=".skills-remove-", dir=layer_path))
        try:
            os.rename(folder, trash / name)
        except OSError as err:
            shutil.rmtree(trash, ignore_errors=True)
            raise InstallError(f"cannot remove {folder}: {err.strerror or err}") from None
    del lock[name]
    try:
        write_lock(layer_path, lock)
    except InstallError:
        if trash is not None:
            os.rename(trash / name, folder)
            shutil.rmtree(trash, ignore_errors=True)
        raise
    if trash is not None:
        shutil.rmtree(trash, ignore_errors=True)
    return folder


def update(
    layer_path: Path,
    name: str,
    layers: list[Layer],
    confirm: Confirm,
    echo: Callable[[str], None],
) -> str:
    """Fetch ``name``'s source again; replace it when it changed. Returns what happened.

    The diff of changed files is shown, and consent is asked again for any
    change (consent covers the whole folder: a ``.txt`` the body runs is as
    much the skill as a script), saying which files changed and which of its
    permissions, model and live-context commands. A skill whose files were
    edited since the install is not overwritten (the edits would be lost).
    """
    lock = read_lock(layer_path)
    entry = lock.get(name)
    if entry is None:
        raise InstallError(f"no installed skill {name!r} in {lock_path(layer_path)}")
    folder = layer_path / "skills" / name
    if folder.exists():
        edited = skillfolder.changes(entry.get("files") or {}, file_hashes(folder))
        if edited:
            files = skillfolder.summary(edited)
            raise InstallError(
                f"{name}: not updated: its files were edited since the install ({files}); "
                f"move the edits away or `agent skills remove {name}` first"
            )
    request = Request(
        source=str(entry.get("source")),
        path=str(entry.get("path") or "."),
        ref=entry.get("ref"),
        name=name if entry.get("renamed-from") else None,
    )
    fetched = fetch(request.source, request.ref)
    stage: Path | None = None
    try:
        folders = find_skill_folders(fetched.root, request.path)
        if len(folders) != 1 or folders[0] != (fetched.root / request.path).resolve():
            raise InstallError(
                f"{name}: {request.source} has no {SKILL_FILE} at {request.path} any more"
            )
        stage = Path(tempfile.mkdtemp(prefix=".skills-install-", dir=layer_path))
        item = _stage(request, fetched, folders[0], stage, layer_path, {}, collide=False)
        new_hashes = item["hashes"]
        if skillfolder.digest(new_hashes) == entry.get("sha256") and folder.exists():
            return f"{name}: up to date"
        _check_staged(stage, layers)
        changes = skillfolder.changes(entry.get("files") or {}, new_hashes)
        echo(_diff(folder, item["folder"], changes))
        old_skill = _load(folder / SKILL_FILE) if (folder / SKILL_FILE).is_file() else None
        # Any change asks: consent is to the whole folder, not to what looks like a script.
        if not confirm(item["consent"] + "\n" + what_changed(old_skill, item["skill"], changes)):
            raise InstallError(f"{name}: not updated: consent refused")
        trash = Path(tempfile.mkdtemp(prefix=".skills-remove-", dir=layer_path))
        try:
            if folder.exists():
                os.rename(folder, trash / name)
            os.rename(item["folder"], folder)
            lock[name] = item["entry"]
            try:
                write_lock(layer_path, lock)
            except InstallError:
                shutil.rmtree(folder, ignore_errors=True)
                if (trash / name).exists():
                    os.rename(trash / name, folder)
                raise
        finally:
            shutil.rmtree(trash, ignore_errors=True)
        return f"{name}: updated" + (f" to {fetched.commit[:12]}" if fetched.commit else "")
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        fetched.close()


def _diff(old: Path, new: Path, changes: list[tuple[str, str]]) -> str:
    """A unified diff of the changed files (binary ones named only)."""
    import difflib

    out: list[str] = []
    for name, how in changes:
        texts = []
        for base, present in ((old, how != "added"), (new, how != "removed")):
            try:
                texts.append((base / name).read_text(encoding="utf-8") if present else "")
            except (UnicodeDecodeError, OSError):
                texts.append(None)
        if None in texts:
            out.append(f"{name}: binary file {how}")
            continue
        out.extend(
            line.rstrip("\n")
            for line in difflib.unified_diff(
                texts[0].splitlines(True), texts[1].splitlines(True), f"a/{name}", f"b/{name}"
            )
        )
        if how == "changed" and texts[0] == texts[1]:
            out.append(f"{name}: mode changed")
    from mdagent.core.escapes import visible

    return "\n".join(visible(line) for line in out) or "(no file changed)"
