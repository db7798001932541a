"""Workspace trust: a folder someone else wrote runs nothing, loosens nothing and
redirects nothing until the person trusts it.

The workspace's own layers, the project layer ``.agents/`` and the other
agents' folders mdagent reads inside it (``.claude/skills``), come with the
folder, which may be a repository someone else wrote. Until the person runs
``agent trust``, the runtime (:class:`mdagent.runtime.runtime.Runtime`) hands every
part of mdagent the view of them that only tightens
(:func:`mdagent.registry.trustfacts.tighten`, :class:`UntrustedRegistry`):

- no hooks and no ``mcp_servers:`` (they run programs);
- deny rules, ask rules and a stricter ``policy.mode`` / ``sandbox:`` apply;
  a looser mode, ``allow`` rules, ``policy.paths``, ``policy.env.include``,
  ``inline_eval: allow`` and sandbox widening do not;
- no ``model:`` settings, in ``agent.yaml`` or in a skill's front-matter
  (the person's model serves: neither key nor conversation goes to a host
  the folder names); no skill's ``allowed-tools``; a skill's ``!`cmd```
  live context asks first, as a foreign skill's does;
- a tool the folder declares ``security: safe`` is judged ``dangerous`` for
  a model.

What trust covers is computed with the registry
(:func:`mdagent.registry.trustfacts.workspace_facts`, cached with it): the
*items* (each thing above the folder holds, as one line) and the *files*
they come from: the settings file, scripts and programs inside the
workspace that hooks and MCP servers name, the project's declaration files
and handler modules, and the folders of the skills whose ``allowed-tools``,
``model:`` or live context would apply. A workspace without items needs no
trust and costs nothing more.

The record (:class:`Snapshot`) lives in the person's state dir, never in the
workspace: ``trust/<key>.json``, keyed by the workspace's real path, holding
the SHA-256 of every covered file (with its stat stamp, so an unchanged
file is not read again) and the items' lines. When any covered file changes,
appears or goes, trust lapses for the whole workspace, and the person is
told in one line what changed (:func:`evaluate`, :func:`notice`).

Key binding is the other half (:mod:`mdagent.runtime.keybinding`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from mdagent.core.errors import MdagentError, Problem
from mdagent.core.records import Record
from mdagent.registry.trustfacts import WORKSPACE_LAYERS, Item

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

RECORD_FORMAT = 1
RECORD_DIR = "trust"
#: A covered skill folder with more files than this cannot be bound: it stays untrusted.
MAX_FOLDER_FILES = 2000
#: What a covered path that does not exist is recorded as.
ABSENT = "-"


class TrustError(MdagentError):
    """Trust could not be given or recorded (nobody to ask, a state dir that cannot be written)."""

    exit_code = 1


# -- the record -------------------------------------------------------------------------


def record_path(workspace: str, environ: Mapping[str, str] | None = None) -> Path:
    """Where the trust record of ``workspace`` (a real path) lives, in the state dir."""
    from mdagent.core.layers import state_dir
    from mdagent.core.statefiles import key

    folder = state_dir(os.environ if environ is None else environ) / RECORD_DIR
    return folder / f"{key(workspace)}.json"


def read_record(workspace: str, environ: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The record of ``workspace``, or None (none, unreadable, another folder's, another format)."""
    try:
        with open(record_path(workspace, environ), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("format") != RECORD_FORMAT
        or data.get("workspace") != workspace
        or not isinstance(data.get("files"), dict)
        or not isinstance(data.get("items"), list)
    ):
        return None
    return data


def covered_files(facts: Mapping[str, Any]) -> dict[str, str]:
    """``{shown path: real path}`` of every file trust is bound to, skill folders walked.

    Raises :class:`TrustError` when a skill folder holds more than
    :data:`MAX_FOLDER_FILES` files (too many to bind: it stays untrusted).
    """
    workspace = str(facts["workspace"])
    unknown = facts.get("unknown") or ()
    if unknown:
        from mdagent.core.escapes import visible

        raise TrustError(
            f"`{visible(unknown[0])}` names files only known when it runs (a variable, a glob, "
            "a command's output): trust cannot be bound to them; name the script literally "
            "(`./scripts/guard.sh`; `$PWD`, `$AGENT_WORKSPACE` and `$CLAUDE_PROJECT_DIR` "
            "may stand for the workspace)"
        )
    paths = list(facts.get("files") or ())
    for folder in facts.get("folders") or ():
        count = 0
        seen: set[str] = set()
        # Links are followed (a skill's scripts may live behind one), each real folder once.
        for top, dirs, names in os.walk(folder, followlinks=True):
            real = os.path.realpath(top)
            if real in seen:
                dirs[:] = []
                continue
            seen.add(real)
            dirs.sort()
            for name in sorted(names):
                count += 1
                if count > MAX_FOLDER_FILES:
                    raise TrustError(
                        f"{_shown(folder, workspace)} holds more than {MAX_FOLDER_FILES} files: "
                        "too many to bind trust to"
                    )
                paths.append(os.path.join(top, name))
    return {_shown(path, workspace): path for path in sorted(set(paths))}


def _shown(path: str, workspace: str) -> str:
    if path == workspace or path.startswith(workspace.rstrip(os.sep) + os.sep):
        return os.path.relpath(path, workspace)
    return path


def _stamp(path: str) -> list[int] | None:
    """``[size, mtime_ns, ctime_ns, inode]``, or None when ``path`` is not a file here.

    The change time cannot be set back by a program: a file whose stamp
    still matches was not written since it was hashed.
    """
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _digest(path: str) -> str:
    import hashlib

    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except IsADirectoryError:
        return "dir"
    except OSError:
        return ABSENT
    return digest.hexdigest()


class Snapshot(Record):
    """The workspace as it is now, as trust binds to it: ready to :meth:`write`."""

    workspace: str
    items: list[Item]
    files: dict[str, list[Any]]  # shown path -> [sha256 or "-", size, mtime, ctime, inode]

    def write(self, environ: Mapping[str, str] | None = None) -> Path:
        """Record this snapshot as trusted (private file, replaced whole); its path.

        :class:`TrustError` when the state dir cannot be written.
        """
        import time

        target = record_path(self.workspace, environ)
        since = time.strftime("%Y-%m-%d %H:%M:%S")
        before = read_record(self.workspace, environ)
        if before is not None and _digests(before["files"]) == _digests(self.files):
            since = str(before.get("trusted_at") or since)  # the same content: trusted since then
        data = {
            "format": RECORD_FORMAT,
            "workspace": self.workspace,
            "trusted_at": since,
            "items": [item.text for item in self.items],
            "files": self.files,
        }
        tmp = target.with_name(f".trust-{os.getpid()}-{os.urandom(6).hex()}.tmp")
        try:
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=1, sort_keys=True)
            os.replace(tmp, target)
        except OSError as err:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise TrustError(f"cannot record trust in {target}: {err.strerror or err}") from None
        return target


def _digests(files: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v[0] if isinstance(v, list) and v else None for k, v in files.items()}


def snapshot(facts: Mapping[str, Any]) -> Snapshot:
    """Hash every covered file of ``facts`` now (what ``agent trust`` shows, then records)."""
    files: dict[str, list[Any]] = {}
    for shown, path in covered_files(facts).items():
        stamp = _stamp(path)
        files[shown] = [ABSENT if stamp is None else _digest(path), *(stamp or [])]
    items = [Item(*item) for item in facts.get("items") or ()]
    return Snapshot(str(facts["workspace"]), items, files)


def trust_folder(
    cwd: str | os.PathLike[str],
    environ: Mapping[str, str] | None = None,
    *,
    layers: Iterable[str] = (),
    no_user: bool = False,
    confirm: Any = None,
) -> Snapshot | None:
    """Trust the workspace of ``cwd`` as it is now: what ``agent trust --yes`` does.

    The layers are found and compiled as ``agent`` would with these options
    and ``environ`` (default: this process's); the record goes to that
    environment's state dir. ``confirm(snapshot) -> bool`` may show it and
    ask (``agent trust`` on a terminal); False records nothing. Returns the
    snapshot recorded, or None when the workspace holds nothing trust covers
    (or ``confirm`` said no).
    """
    from mdagent.core.layers import find_layers, state_dir
    from mdagent.registry.registry import load_registry

    environ = os.environ if environ is None else environ
    found = find_layers(list(layers), no_user=no_user, cwd=Path(cwd), environ=environ)
    facts = load_registry(found, cache_dir=state_dir(environ)).trust
    if not facts:
        return None
    taken = snapshot(facts)
    if confirm is not None and not confirm(taken):
        return None
    taken.write(environ)
    return taken


def revoke(workspace: str, environ: Mapping[str, str] | None = None) -> bool:
    """Withdraw trust in ``workspace``; whether there was any to withdraw."""
    try:
        os.unlink(record_path(workspace, environ))
    except FileNotFoundError:
        return False
    except OSError as err:
        raise TrustError(f"cannot withdraw trust: {err.strerror or err}") from None
    return True


# -- the state of one workspace -------------------------------------------------------


class TrustState(Record):
    """Whether the workspace's own layers may act: ``needed`` and ``trusted``.

    ``changes`` says, one phrase each, what changed since the person
    trusted it (trust lapsed); ``since`` is when they did.
    """

    workspace: str = ""
    items: list[Item] = []
    needed: bool = False
    trusted: bool = True
    changes: list[str] = []
    since: str = ""

    @property
    def lapsed(self) -> bool:
        return bool(self.changes)

    @property
    def word(self) -> str:
        """``trusted``, ``not trusted``, ``lapsed`` or ``not needed``."""
        if not self.needed:
            return "not needed"
        if self.trusted:
            return "trusted"
        return "lapsed" if self.lapsed else "not trusted"


#: A workspace with nothing trust covers.
NOT_NEEDED = TrustState()


def evaluate(
    facts: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None
) -> TrustState:
    """The trust state of the workspace ``facts`` describe
    (:func:`mdagent.registry.trustfacts.workspace_facts`).

    Trusted when the record's hash of every covered file still holds (a
    file whose stat stamp is as recorded is not read again).
    """
    if not facts or not facts.get("items"):
        return NOT_NEEDED
    workspace = str(facts["workspace"])
    items = [Item(*item) for item in facts["items"]]
    record = read_record(workspace, environ)
    if record is None:
        return TrustState(workspace, items, True, False)
    try:
        current = covered_files(facts)
    except TrustError as err:
        return TrustState(workspace, items, True, False, [str(err)], record.get("trusted_at", ""))
    changes = _changes(record, current, items)
    return TrustState(
        workspace, items, True, not changes, changes, str(record.get("trusted_at", ""))
    )


def _changes(record: Mapping[str, Any], current: Mapping[str, str], items: list[Item]) -> list[str]:
    """What changed since ``record``: the new items when a file changed, else the files."""
    from mdagent.core.escapes import visible

    recorded = record["files"]
    files: list[str] = []
    for name, path in current.items():
        entry = recorded.get(name)
        shown = visible(name)  # a file name is the folder's text too
        stamp = _stamp(path)
        if not isinstance(entry, list) or not entry:
            if stamp is not None:
                files.append(f"{shown} is new")
            continue
        if stamp is None:
            if entry[0] != ABSENT:
                files.append(f"{shown} was removed")
            continue
        if entry[0] == ABSENT:
            files.append(f"{shown} is new")
        elif entry[1:] != stamp and _digest(path) != entry[0]:
            files.append(f"{shown} changed")
    if not files:
        return []
    before = set(record.get("items") or ())
    added = [f"{item.key} now {item.what}" for item in items if item.text not in before]
    return added or files


# -- telling the person -------------------------------------------------------------------


def tell(line: str) -> None:
    """``agent: line`` on stderr (what :func:`mdagent.ui.approval.tell` does, without its imports:
    the notice of an untrusted folder is on the ``/name`` path)."""
    import sys

    events = sys.modules.get("mdagent.ui.events")  # a stream-json run: a notice event
    if events is not None and events.sink is not None:
        events.sink(f"agent: {line}")
        return
    with contextlib.suppress(OSError, ValueError):  # stderr closed: nothing to show it on
        print(f"agent: {line}", file=sys.stderr, flush=True)


def summary(items: Iterable[Item]) -> str:
    """What an untrusted workspace loses, in one line: hooks, servers, then the rest."""
    items = list(items)
    counts: dict[str, int] = {}
    for item in items:
        counts[item.key] = counts.get(item.key, 0) + 1

    def names(prefix: str) -> list[str]:
        return [_counted(k, n) for k, n in counts.items() if k.startswith(prefix)]

    parts = []
    hooks = names("hooks.")
    if hooks:
        parts.append(f"its hooks do not run ({', '.join(hooks)})")
    servers = [k.split(".", 1)[1] for k in counts if k.startswith("mcp_servers.")]
    if servers:
        parts.append(f"its MCP servers do not start ({', '.join(servers)})")
    own_code = {i.key for i in items if "runs this folder's own" in i.what}
    if own_code:
        names = ", ".join(sorted(k.split(" ", 1)[1] for k in own_code))
        parts.append(
            f"a model's calls of its tools that run its own code are asked about ({names})"
        )
    rest = [
        _counted(k, n)
        for k, n in counts.items()
        if not k.startswith(("hooks.", "mcp_")) and k not in own_code
    ]
    if rest:
        parts.append(f"these are ignored: {', '.join(rest)}")
    return "; ".join(parts)


def _counted(key: str, count: int) -> str:
    return key if count == 1 else f"{key} ({count})"


def notice(state: TrustState) -> str:
    """The one line an untrusted (or lapsed) workspace gets on stderr, per run."""
    if state.lapsed:
        return (
            f"trust in this folder lapsed: {'; '.join(state.changes)}. Until you trust it "
            f"again with `agent trust`, {summary(state.items)}"
        )
    return (
        f"this folder is not trusted: {summary(state.items)}. "
        "`agent trust` lists them and trusts it as it is now"
    )


def question(state: TrustState) -> str:
    """What a person at a terminal is asked when trust lapsed."""
    return f"{'; '.join(state.changes)} — trust this folder? [y/N] "


def check_problems(state: TrustState) -> list[Problem]:
    """``agent check``'s lines: the folder is not trusted, and each item it ignores (info)."""
    if not state.needed or state.trusted:
        return []
    head = (
        f"trust lapsed: {'; '.join(state.changes)}"
        if state.lapsed
        else "this folder is not trusted"
    )
    found = [
        Problem(
            state.workspace,
            1,
            1,
            "info",
            f"{head}: {len(state.items)} setting(s) below are ignored until you run `agent trust`",
        )
    ]
    for item in state.items:
        if item.key.startswith("mcp_servers."):
            message = f"{item.key}: not started: this folder is not trusted (`agent trust`)"
        elif item.key.startswith("hooks."):
            message = f"{item.text}: not run: this folder is not trusted (`agent trust`)"
        else:
            message = f"{item.text}: ignored: this folder is not trusted (`agent trust`)"
        found.append(Problem(item.path or state.workspace, item.line, 1, "info", message))
    return found


def untrusted_servers(state: TrustState) -> list[str]:
    """The names of the MCP servers an untrusted workspace declares (not started)."""
    if not state.needed or state.trusted:
        return []
    return [i.key.split(".", 1)[1] for i in state.items if i.key.startswith("mcp_servers.")]


# -- the registry as an untrusted workspace may use it ------------------------------------


class UntrustedRegistry:
    """A compiled registry seen from an untrusted workspace: only what tightens.

    Its settings and rule sources are the untrusted view the compile made
    (:func:`mdagent.registry.trustfacts.workspace_facts`); the tools the
    project declares are ``dangerous`` for a model; the workspace's skills
    have no ``model:`` and no ``allowed-tools``. Everything else is the compiled registry's.
    """

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled
        self._tools: tuple[Any, Any] | None = None
        self._skills: tuple[Any, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)

    def _facts(self) -> Mapping[str, Any]:
        facts = self.compiled.trust
        return facts if isinstance(facts, Mapping) else {}

    @property
    def settings(self) -> dict[str, Any]:
        view = self._facts().get("settings")
        return view if isinstance(view, dict) else self.compiled.settings

    @property
    def sources(self) -> list[dict[str, Any]]:
        view = self._facts().get("sources")
        return view if isinstance(view, list) else self.compiled.sources

    @property
    def tools(self) -> Mapping[str, Any]:
        tools = self.compiled.tools
        if self._tools is None or self._tools[0] is not tools:
            self._tools = (tools, _View(tools, untrusted_tool))
        return self._tools[1]

    @property
    def skills(self) -> Mapping[str, Any]:
        skills = self.compiled.skills
        if self._skills is None or self._skills[0] is not skills:
            self._skills = (skills, _View(skills, untrusted_skill))
        return self._skills[1]

    def tool(self, name: str | None) -> Any:
        spec = self.compiled.tool(name)
        return None if spec is None else untrusted_tool(spec)


def untrusted_tool(spec: Any) -> Any:
    """A tool as an untrusted workspace may offer it: the project's are ``dangerous``."""
    if spec.layer == "project" and spec.security != "dangerous":
        return spec._replace(security="dangerous")
    return spec


def untrusted_skill(skill: Any) -> Any:
    """A skill as an untrusted workspace may use it: the workspace's lose ``model:`` and ``allowed-tools``."""
    if skill.layer in WORKSPACE_LAYERS and (skill.model or skill.allowed_tools):
        return skill._replace(model=None, allowed_tools=[])
    return skill


class _View(Mapping):  # of str to a record
    """``records`` with each value passed through ``change`` (built once per key)."""

    def __init__(self, records: Mapping[str, Any], change: Any) -> None:
        self._records = records
        self._change = change
        self._built: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key not in self._built:
            self._built[key] = self._change(self._records[key])
        return self._built[key]

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self._records else default
