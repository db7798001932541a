"""The registry of the layers, from its JSON cache in the state dir (compiled when stale).

The cache is sharded so that a warm ``agent /name`` reads a small index and
one shard, whatever the number of skills (issue 15):

- the index (``registry-KEY.json``): the tools, the settings, the settings
  files' errors, how many shards there are, and the stamps (path, size,
  mtime) of everything but the SKILL.md files: compiler modules, settings
  and declaration files, handler files, and the folders above skill folders
  (a skill folder added or removed changes its parent's mtime);
- the shards (``registry-KEY.shard-N.json``): commands and skills by command
  key (a hash picks the shard), each key with the stamps of the SKILL.md
  files behind it;
- the listing (``registry-KEY.commands.json``): every command and the stamps
  of every SKILL.md, for what lists or checks them all ("did you mean",
  ``agent check``) without parsing every skill;
- the help text (``registry-KEY.help.json``): what ``/help`` prints to a
  pipe or a file, and the stamps of every SKILL.md grouped by skills folder
  (``[folder, names, sizes, mtimes]``, names relative to the folder: a
  third less to decode than a list per stamp, and each is looked up from
  the open folder, not walked from ``/``), so ``/help`` with 10,000 skills
  decodes no command record and builds none;
- the help rows (``registry-KEY.help-rows.json``): one ``[/name usage,
  description's first line]`` per command, sorted, for ``/help`` on a
  terminal (the table is fitted to its width);
- the rest (``registry-KEY.rest.json``): every problem.

A file saved in place does not change its folder's mtime, so a SKILL.md is
checked when its own record is read: looking up ``/name`` checks that
command's SKILL.md, and whatever reads every skill or command (``/help``,
``agent check``, a name that is not found) checks every one of them. Any
stale stamp, a file of another compile (a shared token ties them) or of
the wrong shape means: compile again, slower, never wrong
(:class:`mdagent.registry.compile.Compiler`). A warm load imports neither
the compiler nor yaml nor frontmatter.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from mdagent.core.errors import Problem
from mdagent.core.layers import Layer, state_dir
from mdagent.core.specs import CommandSpec, LazyRecords, Skill, ToolSpec, command_key, compact
from mdagent.core.statefiles import read_json, write_json
from mdagent.registry.model import Registry

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

CACHE_FORMAT = 12
#: About this many command keys per shard: a lookup parses one shard this size.
SHARD_SIZE = 64

_RECORD_ERRORS = (KeyError, TypeError, ValueError, AttributeError)


# -- loading with the cache -------------------------------------------------


def load_registry(layers: list[Layer], cache_dir: Path | None = None) -> Registry:
    """The registry of ``layers``: from the cache when nothing changed, else compiled.

    From the cache, commands and skills are read shard by shard as they are
    looked up, and each lookup checks the stamps of the SKILL.md files behind
    it; reading all of them (iterating, ``problems``) checks every one. A
    stale stamp compiles again and the registry carries on with the result.
    """
    files = _CacheFiles((cache_dir or state_dir()) / f"registry-{_layers_key(layers)}")
    index = _read_cache(files.index)
    if index is not None:
        try:
            if _well_formed(index) and _fresh(index["sources"]):
                return _CachedRegistry(index, files, layers)
        except _RECORD_ERRORS:
            pass  # valid JSON of the wrong shape (another version, a hand edit): rebuild
    return _compile_and_cache(layers, files)


class _CacheFiles:
    """The paths of one set of layers' cache files."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.index = base.with_name(base.name + ".json")
        self.rest = base.with_name(base.name + ".rest.json")
        self.listing = base.with_name(base.name + ".commands.json")
        self.help = base.with_name(base.name + ".help.json")
        self.help_rows = base.with_name(base.name + ".help-rows.json")

    def shard(self, number: int) -> Path:
        return self.base.with_name(f"{self.base.name}.shard-{number}.json")


def _shard_of(key: str, shards: int) -> int:
    import zlib

    return zlib.crc32(key.encode()) % shards


def _compile_and_cache(layers: list[Layer], files: _CacheFiles) -> Registry:
    import gc

    # A compile allocates a few objects per YAML value, many thousand, and
    # frees nearly all of them by reference counting: the collector's passes
    # over everything the process holds would find nothing and cost a tenth
    # of a cold compile. Cycles made meanwhile are collected when it is back.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _compile_and_write(layers, files)
    finally:
        if collecting:
            gc.enable()


def _compile_and_write(layers: list[Layer], files: _CacheFiles) -> Registry:
    from mdagent.registry.compile import Compiler

    compiler = Compiler(layers)
    registry = compiler.run()
    token = os.urandom(8).hex()
    keys = {*registry.commands, *(command_key(name) for name in registry.skills)}
    shards = max(1, -(-len(keys) // SHARD_SIZE))
    parts: list[dict[str, Any]] = [
        {"format": CACHE_FORMAT, "token": token, "commands": {}, "skills": {}, "stamps": {}}
        for _ in range(shards)
    ]
    commands = {k: compact(v) for k, v in registry.commands.items()}
    for key, command in commands.items():
        parts[_shard_of(key, shards)]["commands"][key] = command
    for name, skill in registry.skills.items():
        parts[_shard_of(command_key(name), shards)]["skills"][name] = compact(skill)
    every: list[list[Any]] = []  # the stamp of every SKILL.md, loaded or not
    skill_files = compiler.skill_files
    for path, key in skill_files.items():
        stamp = compiler.watched[path]
        every.append(stamp)
        if key is not None:
            parts[_shard_of(key, shards)]["stamps"].setdefault(key, []).append(stamp)
    # Everything else first: a reader that finds the new index finds them too
    # (and one that finds a file of another compile compiles again).
    for number, part in enumerate(parts):
        write_json(files.shard(number), part)
    listing = {"format": CACHE_FORMAT, "token": token, "commands": commands, "stamps": every}
    write_json(files.listing, listing)
    rows = {"format": CACHE_FORMAT, "token": token, "rows": registry.listing_rows()}
    write_json(files.help_rows, rows)
    text = registry.listing_text()
    help_text = {"format": CACHE_FORMAT, "token": token, "text": text}
    write_json(files.help, {**help_text, "groups": _stamp_groups(every)})
    problems = [list(p) for p in registry.problems]
    write_json(files.rest, {"format": CACHE_FORMAT, "token": token, "problems": problems})
    index = {
        "format": CACHE_FORMAT,
        "token": token,
        "shards": shards,
        "sources": [s for p, s in compiler.watched.items() if p not in skill_files],
        "registry": {
            "tools": {k: compact(v) for k, v in registry.tools.items()},
            "settings": registry.settings,
            "sources": registry.sources,
            "settings_errors": [list(p) for p in registry.settings_errors],
            "trust": registry.trust,
        },
    }
    write_json(files.index, index)
    _remove_shards_from(files, shards)
    return registry


def _remove_shards_from(files: _CacheFiles, first: int) -> None:
    """Delete shards a previous, larger compile left (they name another token)."""
    number = first
    while True:
        try:
            os.unlink(files.shard(number))
        except OSError:  # none left (or not ours to delete: harmless, its token differs)
            return
        number += 1


class _CachedRegistry(Registry):
    """A registry read from the cache's index; commands and skills come from shards.

    When a stamp turns out stale or a shard is missing, torn or of another
    compile, the layers are compiled again (and cached) and this object
    carries on with the fresh registry.
    """

    def __init__(self, index: dict[str, Any], files: _CacheFiles, layers: list[Layer]) -> None:
        data = index["registry"]
        super().__init__(
            tools=LazyRecords(data["tools"], ToolSpec),
            commands=_Records(self, "commands"),
            skills=_Records(self, "skills"),
            settings=data["settings"],
            problems=[],
            layers=layers,
            from_cache=True,
            sources=data["sources"],
            trust=data.get("trust"),
        )
        self._settings_errors = [Problem(*p) for p in data["settings_errors"]]
        self._files = files
        self._token: str = index["token"]
        self._shards: int = index["shards"]
        self._read: dict[int, dict[str, Any]] = {}  # shard number -> its data
        self._checked: set[str] = set()  # keys whose SKILL.md stamps were fresh
        self._built: dict[tuple[str, str], Any] = {}
        #: "commands", "skills" -> all of them, read once every stamp was checked
        self._all_read: dict[str, Mapping[str, Any]] = {}
        self._problems_read: list[Problem] | None = None
        self._compiled: Registry | None = None

    @property
    def problems(self) -> list[Problem]:
        if self._compiled is None and self._problems_read is None:
            rest = _read_cache(self._files.rest)
            if self._commands() is not None and _valid_rest(rest, self._token):
                self._problems_read = [Problem(*p) for p in rest["problems"]]
            else:
                self._recompiled("commands")
        if self._compiled is not None:
            return self._compiled.problems
        return self._problems_read or []

    def listing_rows(self) -> list[list[str]]:
        if self._compiled is None and self._listing_rows is None:
            self.listing_text()  # checks every SKILL.md's stamp (a stale one: compile again)
            if self._compiled is None:
                rows = _read_cache(self._files.help_rows)
                if (
                    rows is not None
                    and rows.get("token") == self._token
                    and _rows(rows.get("rows"))
                ):
                    self._listing_rows = rows["rows"]
                else:
                    self._recompiled("commands")
        if self._compiled is not None:
            return self._compiled.listing_rows()
        return self._listing_rows or []

    def listing_text(self) -> str:
        if self._compiled is None and self._listing_text is None:
            data = _read_cache(self._files.help)
            if data is not None and data.get("token") == self._token and _fresh_help(data):
                self._listing_text = data["text"]
            else:
                self._recompiled("commands")
        if self._compiled is not None:
            return self._compiled.listing_text()
        return self._listing_text or ""

    # -- what the views ask --

    def _lookup(self, kind: str, name: str) -> Any:
        """The record ``name`` of ``kind`` ("commands" or "skills"); KeyError when none."""
        if self._compiled is not None:
            return getattr(self._compiled, kind)[name]
        if self._all_read.get(kind) is not None:
            return self._all_read[kind][name]
        key = command_key(name) if kind == "skills" else name
        shard = self._shard(_shard_of(key, self._shards))
        if shard is None:
            return self._recompiled(kind)[name]
        if key not in self._checked:
            if not _fresh(shard["stamps"].get(key, ())):
                return self._recompiled(kind)[name]
            self._checked.add(key)
        raw = shard[kind].get(name)
        if raw is None:
            # Not found here: a skill renamed in place would be, so check them all.
            return self._every(kind)[name]
        built = self._built.get((kind, name))
        if built is None:
            try:
                built = (CommandSpec if kind == "commands" else Skill).from_dict(raw)
            except _RECORD_ERRORS:
                return self._recompiled(kind)[name]
            self._built[(kind, name)] = built
        return built

    def _every(self, kind: str) -> Mapping[str, Any]:
        """Every command or skill, after checking every SKILL.md's stamp."""
        if self._compiled is None and self._all_read.get(kind) is None:
            commands = self._commands()
            if commands is not None and kind == "skills":
                raw: dict[str, Any] = {}
                for number in range(self._shards):
                    shard = self._shard(number)
                    if shard is None:
                        break
                    raw.update(shard["skills"])
                else:
                    self._all_read["skills"] = _CheckedRecords(raw, Skill, self)
            if self._all_read.get(kind) is None:
                self._recompiled(kind)
        if self._compiled is not None:
            return getattr(self._compiled, kind)
        return self._all_read[kind]

    def _commands(self) -> Mapping[str, Any] | None:
        """Every command from the listing, if every SKILL.md is as compiled (else None)."""
        if self._all_read.get("commands") is None:
            listing = _read_cache(self._files.listing)
            if (
                listing is None
                or listing.get("token") != self._token
                or not isinstance(listing.get("commands"), dict)
                or not isinstance(listing.get("stamps"), list)
                or not _fresh(listing["stamps"])
            ):
                return None
            self._all_read["commands"] = _CheckedRecords(listing["commands"], CommandSpec, self)
        return self._all_read["commands"]

    def _shard(self, number: int) -> dict[str, Any] | None:
        shard = self._read.get(number)
        if shard is None:
            shard = _read_cache(self._files.shard(number))
            if not _valid_shard(shard, self._token):
                return None
            self._read[number] = shard
        return shard

    def _recompiled(self, kind: str) -> Mapping[str, Any]:
        """Compile again, cache the result and carry on with it; its ``kind`` records."""
        if self._compiled is None:
            compiled = _compile_and_cache(self.layers, self._files)
            self._compiled = compiled
            self.tools = compiled.tools
            self.settings = compiled.settings
            self.sources = compiled.sources
            self.trust = compiled.trust
            self._settings_errors = compiled.settings_errors
            self._aliases = None
            self.from_cache = False
        return getattr(self._compiled, kind)


class _Records(Mapping):  # of str to Any
    """The commands or skills of a cached registry: one key reads one shard."""

    def __init__(self, registry: _CachedRegistry, kind: str) -> None:
        self._registry = registry
        self._kind = kind

    def __getitem__(self, name: str) -> Any:
        return self._registry._lookup(self._kind, name)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            self._registry._lookup(self._kind, name)
        except KeyError:
            return False
        return True

    def _mapping(self) -> Mapping[str, Any]:
        return self._registry._every(self._kind)

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())

    def items(self):
        return self._mapping().items()

    def values(self):
        return self._mapping().values()

    def keys(self):
        return self._mapping().keys()


class _CheckedRecords(LazyRecords):
    """Records read from the cache: one that cannot be built compiles the layers again."""

    def __init__(self, raw: dict[str, Any], cls: type, registry: _CachedRegistry) -> None:
        super().__init__(raw, cls)
        self._registry = registry

    def __getitem__(self, key: str) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            raise
        except _RECORD_ERRORS:  # valid JSON of the wrong shape: compile again
            return self._registry._recompiled(self._kind)[key]

    @property
    def _kind(self) -> str:
        return "commands" if self._cls is CommandSpec else "skills"

    def items(self):
        try:
            return super().items()
        except _RECORD_ERRORS:
            return list(self._registry._recompiled(self._kind).items())

    def values(self):
        return [record for _, record in self.items()]


def _layers_key(layers: list[Layer]) -> str:
    from mdagent.core.statefiles import key

    # The root too: two folders whose `.agents` link to one place are two workspaces.
    return key("\n".join(f"{layer.kind}={layer.path}@{layer.root or ''}" for layer in layers))


def _read_cache(path: Path) -> dict[str, Any] | None:
    # Written by mdagent.core.statefiles.write_json (atomic; shared with the MCP tool lists).
    return read_json(path, CACHE_FORMAT)


def _stamps(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(s, list) and len(s) == 3 for s in value)


def _rows(value: Any) -> bool:
    """Whether ``value`` is help rows: lists of two strings."""
    return value.__class__ is list and all(
        r.__class__ is list and len(r) == 2 and r[0].__class__ is str and r[1].__class__ is str
        for r in value
    )


# Opening a folder only to look names up in it: O_PATH needs no read permission.
_LOOKUP_ONLY = getattr(os, "O_PATH", os.O_RDONLY)


def _stamp_groups(stamps: list[list[Any]]) -> list[list[Any]]:
    """``[path, size, mtime]`` stamps as ``[folder, names, sizes, mtimes]`` groups.

    The folder is the one holding the skill folders (``…/skills``), the
    names are relative to it (``review/SKILL.md``).
    """
    groups: dict[str, list[Any]] = {}
    for path, size, mtime in stamps:
        folder = os.path.dirname(os.path.dirname(path))
        group = groups.setdefault(folder, [folder, [], [], []])
        # The folder is a prefix of the (normalised) path: no relpath needed.
        group[1].append(path[len(folder) :].lstrip(os.sep) if folder else path)
        group[2].append(size)
        group[3].append(mtime)
    return list(groups.values())


def _fresh_help(data: dict[str, Any]) -> bool:
    """Whether a help file has its shape and every SKILL.md stamp in it still holds."""
    groups = data.get("groups")
    if not isinstance(data.get("text"), str) or groups.__class__ is not list:
        return False
    for group in groups:
        if group.__class__ is not list or len(group) != 4:
            return False
        folder, names, sizes, mtimes = group
        if folder.__class__ is not str or not all(
            column.__class__ is list and len(column) == len(names)
            for column in (names, sizes, mtimes)
        ):
            return False
        try:
            fd = os.open(folder, _LOOKUP_ONLY | os.O_DIRECTORY)
        except (OSError, ValueError):
            if any(size != -1 for size in sizes):
                return False  # the folder is gone or unreadable: its skills with it
            continue
        try:
            if not _fresh(zip(names, sizes, mtimes, strict=True), folder_fd=fd):
                return False
        finally:
            os.close(fd)
    return True


def _problem_rows(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(p, list) and len(p) == 5 for p in value)


def _well_formed(data: dict[str, Any]) -> bool:
    """Whether an index has the shape this version writes (else: rebuild)."""
    registry = data.get("registry")
    shards = data.get("shards")
    return (
        isinstance(data.get("token"), str)
        and isinstance(shards, int)
        and shards >= 1
        and _stamps(data.get("sources"))
        and isinstance(registry, dict)
        and isinstance(registry.get("settings"), dict)
        and isinstance(registry.get("tools"), dict)
        and all(isinstance(t, dict) for t in registry["tools"].values())
        and isinstance(registry.get("sources"), list)
        and _problem_rows(registry.get("settings_errors"))
        and (registry.get("trust") is None or isinstance(registry["trust"], dict))
    )


def _valid_shard(data: dict[str, Any] | None, token: str) -> bool:
    """Whether a shard belongs to the index's compile and has this version's shape.

    The records and stamps inside are checked where they are used (a record
    that cannot be built, a stamp that is not one: compile again).
    """
    return (
        data is not None
        and data.get("token") == token
        and isinstance(data.get("commands"), dict)
        and isinstance(data.get("skills"), dict)
        and isinstance(data.get("stamps"), dict)
    )


def _valid_rest(data: dict[str, Any] | None, token: str) -> bool:
    return data is not None and data.get("token") == token and _problem_rows(data.get("problems"))


def _fresh(sources: Iterable[Any], folder_fd: int | None = None) -> bool:
    """Whether every ``[path, size, mtime_ns]`` stamp still holds (size -1: absent).

    ``folder_fd``: relative paths are looked up from this open folder.
    """
    stat = os.stat
    try:
        for path, size, mtime in sources:
            if path.__class__ is not str:
                return False  # a hand-edited cache: os.stat would take an int as a descriptor
            try:
                st = stat(path, dir_fd=folder_fd)
            except (OSError, ValueError):
                if size != -1:
                    return False
                continue
            if st.st_size != size or st.st_mtime_ns != mtime:
                return False
    except (TypeError, ValueError):  # not [path, size, mtime]: of the wrong shape
        return False
    return True
