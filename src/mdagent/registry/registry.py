"""Compile every layer into one :class:`Registry`, cached as JSON in the state dir.

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
the wrong shape means: compile again, slower, never wrong. A warm load
imports neither yaml nor frontmatter.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from mdagent.core.errors import Problem
from mdagent.core.layers import Layer, state_dir
from mdagent.core.specs import CommandSpec, LazyRecords, Skill, ToolSpec, command_key, compact
from mdagent.core.statefiles import read_json, write_json

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

CACHE_FORMAT = 12
#: About this many command keys per shard: a lookup parses one shard this size.
SHARD_SIZE = 64

#: Names the built-in commands of the CLI and the interactive session use.
RESERVED_NAMES = frozenset(
    {
        "help",
        "tools",
        "commands",
        "skills",
        "exit",
        "quit",
        "clear",
        "context",
        "compact",
        "model",
        "sessions",
        "logs",
        "check",
        "config",
        "new",
        "reload",
        "history",
        "resume",
        "rewind",
        "version",
        "mode",
    }
)

#: The files whose code decides what a compile gives (relative to the package): each
#: is stamped, so a changed compiler invalidates every cache it wrote.
COMPILER_MODULES = (
    "registry/registry.py",
    "core/layers.py",
    "declarations/interop.py",
    "core/foreignpaths.py",  # where interop finds the files it reads
    "core/yamlsource.py",
    "core/yamlfast.py",
    "declarations/skills.py",
    "declarations/skillbody.py",  # a body as the registry's /help text reads it
    "declarations/declarations.py",
    "core/defaults.py",
    "core/fastcheck.py",
    "core/specs.py",
    "core/catalog.py",
    "tools/implementations.py",
    "tools/templates.py",
    "safety/shell/slots.py",  # what a shell template's text means around a placeholder
    "safety/shell/lexicon.py",  # what templates refuse
    "tools/dispatch.py",  # the usage words of /help's cached rows
    "ui/console.py",  # and their descriptions' first lines
    "runtime/trust.py",  # what trust covers, and the untrusted view of the settings
    "declarations/schemas/declarations.json",
    "declarations/schemas/settings.json",
    "declarations/schemas/skill.json",
)

_RECORD_ERRORS = (KeyError, TypeError, ValueError, AttributeError)


class Registry:
    """Tools, commands, skills and settings compiled from all layers, plus problems."""

    def __init__(
        self,
        *,
        tools: Mapping[str, ToolSpec],
        commands: Mapping[str, CommandSpec],
        skills: Mapping[str, Skill],
        settings: dict[str, Any],
        problems: list[Problem],
        layers: list[Layer],
        from_cache: bool = False,
        sources: list[dict[str, Any]] | None = None,
        trust: dict[str, Any] | None = None,
    ) -> None:
        self.tools = tools
        self.commands = commands
        self.skills = skills
        self.settings = settings
        self._problems = problems
        self.layers = layers
        self.from_cache = from_cache
        #: Where each policy rule and test was written, highest layer first
        #: (see :func:`mdagent.declarations.declarations.read_settings`).
        self.sources = sources or []
        #: What workspace trust covers here and the untrusted view of the
        #: settings (:func:`mdagent.runtime.trust.workspace_facts`); None: nothing.
        self.trust = trust
        self._aliases: dict[str, str] | None = None
        self._settings_errors: list[Problem] | None = None
        self._listing_rows: list[list[str]] | None = None
        self._listing_text: str | None = None

    @property
    def problems(self) -> list[Problem]:
        """Every problem the compile found (from the cache: every skill is checked first)."""
        return self._problems

    @property
    def aliases(self) -> dict[str, str]:
        """Alias -> tool name."""
        if self._aliases is None:
            self._aliases = {a: t.name for t in self.tools.values() for a in t.aliases}
        return self._aliases

    @property
    def errors(self) -> list[Problem]:
        """Problems of severity ``error``."""
        return [p for p in self.problems if p.severity == "error"]

    @property
    def settings_errors(self) -> list[Problem]:
        """Errors in the settings files (``agent.yaml``): what every run must refuse.

        Kept in the cache's index, so checking them reads no skill.
        """
        if self._settings_errors is None:
            self._settings_errors = _settings_errors(self.problems)
        return self._settings_errors

    def tool(self, name: str | None) -> ToolSpec | None:
        """The tool called ``name`` or having it as an alias."""
        if not name:
            return None
        return self.tools.get(name) or self.tools.get(self.aliases.get(name, ""))

    def command(self, name: str) -> CommandSpec | None:
        """The command ``/name`` (case and ``_``/``-`` are not significant)."""
        return self.commands.get(command_key(name))

    def listing_rows(self) -> list[list[str]]:
        """``[/name usage, first line of the description]`` of every user-invocable command.

        Sorted as ``/help`` lists them. The usage is the command's
        ``argument-hint``, else the one generated from its tool's parameters
        (``/greet <name> [--times N] [--loud]``); a tool only an MCP server
        knows is not started for a listing. Cached with the registry, so a
        warm ``/help`` builds no command record.
        """
        if self._listing_rows is None:
            from mdagent.tools.dispatch import arguments_usage
            from mdagent.ui.console import first_line

            tools: dict[str | None, ToolSpec | None] = {}  # one lookup per tool, not per command
            rows = []
            for key, command in self.commands.items():
                if not command.user_invocable:
                    continue
                words = command.argument_hint
                if not words and command.kind == "tool":
                    if command.tool not in tools:
                        tools[command.tool] = self.tool(command.tool)
                    tool = tools[command.tool]
                    words = arguments_usage(command, tool) if tool is not None else ""
                rows.append((f"/{key} {words}".rstrip(), command.description))
            # Sorted by the whole description, as before: only then cut to its first line.
            self._listing_rows = [[name, first_line(text, None)] for name, text in sorted(rows)]
        return self._listing_rows

    def listing_text(self) -> str:
        """:meth:`listing_rows` as a table for a pipe or a file (nothing shortened).

        Cached too: ``agent /help | grep`` with 10,000 skills formats nothing.
        """
        if self._listing_text is None:
            from mdagent.ui.console import table

            self._listing_text = table(self.listing_rows())
        return self._listing_text

    def skill_body(self, name: str) -> str:
        """The Markdown body of skill ``name``; KeyError when there is none."""
        from mdagent.declarations.skillbody import read_body

        skill = self.skills[name]
        return read_body(skill.path)

    def to_dict(self) -> dict[str, Any]:
        """Tools, commands, settings, rule sources and problems (not the skills)."""
        return {
            "tools": {k: compact(v) for k, v in self.tools.items()},
            "commands": {k: compact(v) for k, v in self.commands.items()},
            "settings": self.settings,
            "sources": self.sources,
            "problems": [list(p) for p in self.problems],
        }


def _settings_errors(problems: Iterable[Problem]) -> list[Problem]:
    from mdagent.core.defaults import SETTINGS_FILE

    names = (SETTINGS_FILE, SETTINGS_FILE.replace(".yaml", ".yml"))
    return [p for p in problems if p.severity == "error" and p.path.endswith(names)]


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
    compiler = _Compiler(layers)
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
        _write_cache(files.shard(number), part)
    listing = {"format": CACHE_FORMAT, "token": token, "commands": commands, "stamps": every}
    _write_cache(files.listing, listing)
    rows = {"format": CACHE_FORMAT, "token": token, "rows": registry.listing_rows()}
    _write_cache(files.help_rows, rows)
    text = registry.listing_text()
    help_text = {"format": CACHE_FORMAT, "token": token, "text": text}
    _write_cache(files.help, {**help_text, "groups": _stamp_groups(every)})
    problems = [list(p) for p in registry.problems]
    _write_cache(files.rest, {"format": CACHE_FORMAT, "token": token, "problems": problems})
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
    _write_cache(files.index, index)
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
    return read_json(path, CACHE_FORMAT)


# The atomic write of every cache file (mdagent.core.statefiles, shared with the MCP tool lists).
_write_cache = write_json


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


def _stamp(path: str, st: os.stat_result | None = None) -> list[Any]:
    """``[path, size, mtime_ns]`` (size -1: absent), from ``st`` when it was just taken."""
    if st is None:
        try:
            st = os.stat(path)
        except OSError:
            return [path, -1, 0]
    return [path, st.st_size, st.st_mtime_ns]


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


# -- compiling ----------------------------------------------------------------


class _Compiler:
    """One compile: walks layers lowest first so higher layers replace entries."""

    def __init__(self, layers: list[Layer]) -> None:
        self.layers = layers
        self.problems: list[Problem] = []
        #: path -> its stamp, taken when the path is first watched, before it
        #: is read: a file saved during the compile then has a stamp older
        #: than its new content, and the next run compiles again.
        self.watched: dict[str, list[Any]] = {}
        #: SKILL.md path -> the command key of the skill it declares (None: it
        #: did not load). The cache checks these stamps per key, not every run.
        self.skill_files: dict[str, str | None] = {}
        self.tools: dict[str, ToolSpec] = {}
        #: alias -> name of the tool in ``self.tools`` that has it: alias
        #: lookups stay O(1), so compiling n tools is linear, not quadratic.
        self.alias_of: dict[str, str] = {}
        self.commands: dict[str, CommandSpec] = {}
        self.skills: dict[str, Skill] = {}
        self.settings_by_layer: list[dict[str, Any]] = []
        #: (layer, its settings, its agent.yaml) of each layer with one, lowest first.
        self.layer_settings: list[tuple[Layer, dict[str, Any], Path]] = []
        self.sources: list[dict[str, Any]] = []  # highest layer first

    def problem(self, path: str, line: int, severity: str, message: str) -> None:
        self.problems.append(Problem(path, line or 1, 1, severity, message))

    def watch(self, path: Path | str, stat: os.stat_result | None = None) -> None:
        """Stamp ``path`` now, or from ``stat`` taken just now: call this before reading it."""
        key = str(path)
        if key not in self.watched:
            self.watched[key] = _stamp(key, stat)

    def run(self) -> Registry:
        from mdagent.core.catalog import SPECS as BUILTIN_SPECS
        from mdagent.declarations.declarations import merge_settings

        here = Path(__file__).resolve().parents[1]  # the package: mdagent/
        for module in COMPILER_MODULES:
            self.watch(here / module)
        builtin_names = set(BUILTIN_SPECS)
        for name, spec in BUILTIN_SPECS.items():
            builtin_names.update(spec.get("aliases", ()))
            self.tools[name] = ToolSpec(
                name=name,
                description=spec["description"],
                params=spec.get("params", {}),
                required=list(spec.get("required", [])),
                aliases=list(spec.get("aliases", [])),
                category=spec.get("category", "custom"),
                security=spec.get("security", "moderate"),
                tier=spec.get("tier", "full"),
                implementation={"builtin": name},
                source="(built-in)",
                layer="builtin",
            )
            self.alias_of.update(dict.fromkeys(spec.get("aliases", ()), name))
        self.builtin_names = frozenset(builtin_names)
        # Settings first: `skills.interop` decides which layers' skills load,
        # and which of other agents' files are read (our own settings say so).
        own = {layer: self._read_settings(layer) for layer in self.layers if not layer.foreign}
        switches = merge_settings([found[0] for found in own.values() if found])
        # The person's own files (~/.claude/settings.json and its deny rules) are
        # switched off only by the person's own layers, never by a project's.
        persons = merge_settings(
            [found[0] for layer, found in own.items() if found and layer.scope != "project"]
        )
        for layer in reversed(self.layers):
            if layer.foreign:
                self._load_foreign_settings(
                    layer, switches if layer.scope == "project" else persons
                )
            elif own[layer]:
                self._add_settings(layer, *own[layer])
        settings = merge_settings(list(reversed(self.settings_by_layer)))
        from mdagent.core.foreignpaths import LAYER_SOURCES, enabled

        pending_checks: list[tuple[ToolSpec, Path]] = []
        for layer in reversed(self.layers):
            if layer.skills_only and not enabled(switches, LAYER_SOURCES[layer.kind]):
                continue
            if layer.foreign:
                self._load_foreign_commands(layer, switches)
                continue
            pending_checks.extend(self._load_layer(layer))
        self._check_references(pending_checks)
        self.problems.sort(key=lambda p: (p.path, p.line, p.col))
        trust = None
        if any(layer.scope == "project" for layer in self.layers):
            from mdagent.runtime.trust import workspace_facts

            trust = workspace_facts(
                self.layers, self.layer_settings, self.tools, self.skills, self.sources
            )
        registry = Registry(
            tools=self.tools,
            commands=self.commands,
            skills=self.skills,
            settings=settings,
            problems=self.problems,
            layers=self.layers,
            sources=self.sources,
            trust=trust,
        )
        return registry

    # -- one layer --

    def _read_settings(self, layer: Layer) -> tuple[dict[str, Any], list, Path] | None:
        """``(settings, rule sources, agent.yaml)`` of ``layer``, or None when it has none."""
        from mdagent.core.defaults import SETTINGS_FILE
        from mdagent.declarations.declarations import read_settings

        if layer.config_dir is None:
            return None  # another agent's skill folder: skills only
        self.watch(layer.config_dir)  # before looking: an agent.yaml created now is noticed
        settings_path = layer.config_dir / SETTINGS_FILE
        if not settings_path.exists():
            return None
        self.watch(settings_path)
        settings, sources, problems = read_settings(settings_path, layer.kind)
        self.problems.extend(problems)
        return settings, sources, settings_path

    def _add_settings(self, layer: Layer, settings: dict, sources: list, path: Path) -> None:
        self.settings_by_layer.append(settings)
        self.layer_settings.append((layer, settings, path))
        self.sources[:0] = sources  # layers load lowest first

    def _load_foreign_settings(self, layer: Layer, switches: Mapping[str, Any]) -> None:
        """Other agents' permissions and MCP server lists as settings of ``layer``."""
        from mdagent.declarations import interop

        for source, path in interop.settings_files(layer.kind, layer.path, os.environ):
            # The file's own stamp (absent: size -1) notices it appear; not its folder,
            # which may be the workspace root, where every new file would recompile.
            self.watch(path)
            if not interop.enabled(switches, source) or not path.is_file():
                continue
            settings, sources, problems = interop.read_settings(source, path, layer.kind)
            self.problems.extend(problems)
            if settings:
                self._add_settings(layer, settings, sources, path)

    def _load_foreign_commands(self, layer: Layer, switches: Mapping[str, Any]) -> None:
        """Other agents' command files as prompt skills of ``layer``."""
        from mdagent.declarations import interop

        layer_commands: dict[str, CommandSpec] = {}
        for source, folder, suffix, prefix in interop.command_folders(
            layer.kind, layer.path, os.environ
        ):
            self.watch(folder.parent)
            self.watch(folder)
            if not interop.enabled(switches, source):
                continue
            for name, path in interop.command_files(folder, suffix, prefix):
                self.watch(path.parent)
                self.watch(path)
                confine = layer.path if layer.kind == interop.PROJECT_KIND else None
                skill, problems = interop.load_command(name, path, source, layer.kind, confine)
                self.problems.extend(problems)
                if skill is not None:
                    self._add_skill(skill, layer_commands)

    def _load_layer(self, layer: Layer) -> list[tuple[ToolSpec, Path]]:
        from mdagent.core.defaults import SETTINGS_FILE
        from mdagent.declarations.declarations import load_declarations

        self.watch(layer.path)
        if layer.config_dir is not None:
            self.watch(layer.config_dir)
        self.watch(layer.skills_dir)
        if layer.kind in ("option", "env") and not layer.path.is_dir():
            # Named on purpose (--layer, AGENT_PATH): a typo must not pass quietly.
            origin = "--layer" if layer.kind == "option" else "AGENT_PATH"
            self.problem(str(layer.path), 1, "warning", f"{origin} names no folder")
            return []
        layer_tools: dict[str, ToolSpec] = {}
        layer_aliases: dict[str, ToolSpec] = {}
        layer_commands: dict[str, CommandSpec] = {}
        checks: list[tuple[ToolSpec, Path]] = []
        if layer.config_dir is not None and layer.config_dir.is_dir():
            for path in sorted(layer.config_dir.glob("*.y*ml")):
                if path.name == SETTINGS_FILE or path.suffix not in (".yaml", ".yml"):
                    continue
                self.watch(path)
                tools, commands, problems = load_declarations(path, layer.kind)
                self.problems.extend(problems)
                for tool in tools:
                    if self._add_tool(tool, layer_tools, layer_aliases):
                        checks.append((tool, path))
                for command in commands:
                    self._add_command(command, layer_commands)
        for skill in self._load_skills(layer):
            self._add_skill(skill, layer_commands)
        return checks

    def _load_skills(self, layer: Layer) -> Iterable[Skill]:
        from mdagent.core.layers import trust_root, walk_skills
        from mdagent.declarations.skills import load_skill

        if not layer.skills_dir.is_dir():
            return []
        found: dict[str, Skill] = {}
        for item in walk_skills(layer.skills_dir, trust_root(layer)):
            if item.kind == "problem":
                self.problem(str(item.path), 1, item.severity, item.message)
                continue
            if item.kind == "folder":
                # A folder without SKILL.md needs its own stamp: that is how a
                # skill created in it later is noticed. A skill's folder does
                # not: its SKILL.md's stamp says everything, at half the stats.
                self.watch(item.path)
                continue
            skill_file = item.file
            self.watch(skill_file, item.stat)
            skill, problems = load_skill(skill_file, layer.kind)
            self.skill_files[skill_file] = None if skill is None else command_key(skill.name)
            self.problems.extend(problems)
            if skill is None:
                continue
            if skill.name in found:
                first = found[skill.name].path
                self.problem(
                    skill.path, 1, "error", f"skill {skill.name!r} is also declared in {first}"
                )
                continue
            found[skill.name] = skill
        if layer.skills_only and found:
            self.problem(
                str(layer.skills_dir),
                1,
                "info",
                f"{len(found)} skill(s) read from {layer.label} as a layer of their own "
                "(skills.interop: false in agent.yaml turns this off)",
            )
        return found.values()

    # -- entries --

    def _add_tool(
        self,
        tool: ToolSpec,
        layer_tools: dict[str, ToolSpec],
        layer_aliases: dict[str, ToolSpec],
    ) -> bool:
        names = [tool.name, *tool.aliases]
        for name in names:
            if name in self.builtin_names:
                self.problem(
                    tool.source, tool.line, "error", f"tool {name!r} is the name of a built-in tool"
                )
                return False
            other = layer_tools.get(name) or layer_aliases.get(name)
            if other is not None:
                self.problem(
                    tool.source,
                    tool.line,
                    "error",
                    f"tool name {name!r} is already declared in {other.source}:{other.line}",
                )
                return False
        for name in names:
            shadowed = self._tool_named(name)
            if shadowed is not None:
                self.problem(
                    shadowed.source,
                    shadowed.line,
                    "info",
                    f"tool {name!r} is shadowed by {tool.source}:{tool.line}",
                )
                self._drop_tool(shadowed.name)
        layer_tools[tool.name] = tool
        layer_aliases.update(dict.fromkeys(tool.aliases, tool))
        self.tools[tool.name] = tool
        self.alias_of.update(dict.fromkeys(tool.aliases, tool.name))
        return True

    def _drop_tool(self, name: str) -> None:
        """Remove tool ``name`` and the aliases that lead to it."""
        tool = self.tools.pop(name, None)
        for alias in tool.aliases if tool is not None else ():
            if self.alias_of.get(alias) == name:
                del self.alias_of[alias]

    def _add_command(self, command: CommandSpec, layer_commands: dict[str, CommandSpec]) -> None:
        key = command_key(command.name)
        if key in RESERVED_NAMES:
            self.problem(
                command.source,
                command.line,
                "error",
                f"/{key} is a built-in command; choose another name",
            )
            return
        other = layer_commands.get(key)
        if other is not None:
            self.problem(
                command.source,
                command.line,
                "error",
                f"command /{key} is already declared in {other.source}:{other.line}",
            )
            return
        shadowed = self.commands.get(key)
        if shadowed is not None:
            self.problem(
                shadowed.source,
                shadowed.line,
                "info",
                f"command /{key} is shadowed by {command.source}:{command.line}",
            )
        layer_commands[key] = command
        self.commands[key] = command

    def _add_skill(self, skill: Skill, layer_commands: dict[str, CommandSpec]) -> None:
        from mdagent.declarations.skills import refused

        shadowed = self.skills.get(skill.name)
        if shadowed is not None:
            self.problem(
                shadowed.path, 1, "info", f"skill {skill.name!r} is shadowed by {skill.path}"
            )
        self.skills[skill.name] = skill
        key = command_key(skill.name)
        if skill.command_error:
            # Reported where the skill loaded; only /name is refused, and a
            # lower layer's /name must not answer in its place.
            other = layer_commands.get(key)
            if other is not None:  # the same name twice in one layer: as _add_command says
                self.problem(
                    skill.path, 1, "error", f"command /{key} is already declared in {other.source}"
                )
                return
            self.commands.pop(key, None)
            return
        if key in RESERVED_NAMES:
            message = refused(skill.name, f"{skill.name!r} is the name of a built-in command")
            self.problem(skill.path, 1, "error", message)
            self.skills[skill.name] = skill._replace(command_error=message)
            return
        command = CommandSpec(
            name=skill.name,
            description=skill.description,
            tool=skill.tool,
            arg_mode=skill.arg_mode,
            argument_hint=skill.argument_hint,
            skill=skill.name,
            kind="tool" if skill.dispatch == "tool" else "prompt",
            user_invocable=skill.user_invocable,
            source=skill.path,
            # Where what /name runs is written: reference problems point there.
            line=skill.lines.get("command-tool") or skill.lines.get("command_tool") or 1,
            layer=skill.layer,
            requires=skill.requires,
            command_with=skill.command_with,
            arguments=skill.arguments,
        )
        self._add_command(command, layer_commands)

    # -- cross references --

    def _tool_named(self, name: str | None) -> ToolSpec | None:
        """The tool called ``name`` or having it as an alias (O(1))."""
        if not name:
            return None
        return self.tools.get(name) or self.tools.get(self.alias_of.get(name, ""))

    def _fits(self, command: CommandSpec, key: str, tool: ToolSpec) -> bool:
        """Whether raw arguments can ever satisfy ``tool`` (else: an error, now)."""
        if command.command_with is not None:
            return self._with_fits(command, key, tool)
        if command.arg_mode != "raw":
            return True
        unmet = [r for r in tool.required if r not in RAW_ARGUMENTS]
        if unmet:
            self._refuse_command(
                command,
                key,
                command.line,
                f"raw arguments give {tool.name!r} only `command`, but it requires "
                f"{', '.join(unmet)}; use arg-mode parsed or json, or command-with",
            )
            return False
        if tool.params and "command" not in tool.params:
            self.problem(
                command.source,
                command.line,
                "warning",
                f"/{key}: raw arguments arrive as `command`, a parameter {tool.name!r} does not "
                "declare; use arg-mode parsed or json",
            )
        return True

    def _with_fits(self, command: CommandSpec, key: str, tool: ToolSpec) -> bool:
        """Whether a skill's ``command-with`` templates fit ``tool`` (else: errors, now)."""
        from mdagent.tools.dispatch import check_command_with

        skill = self.skills.get(command.skill or "")
        lines = skill.lines if skill is not None else {}
        messages = check_command_with(command, tool)
        for where, message in messages:
            line = lines.get(f"command-with.{where}") or lines.get("command-with") or command.line
            self._refuse_command(command, key, line, message)
        return not messages

    def _refuse_command(self, command: CommandSpec, key: str, line: int, message: str) -> None:
        """Report why /key cannot run; a skill behind it stays for the model."""
        from mdagent.declarations.skills import refused

        skill = self.skills.get(command.skill or "")
        if skill is not None:
            message = refused(key, message)
            if not skill.command_error:
                self.skills[skill.name] = skill._replace(command_error=message)
        else:
            message = f"/{key}: {message}"
        self.problem(command.source, line, "error", message)

    def _check_references(self, checks: list[tuple[ToolSpec, Path]]) -> None:
        from mdagent.core.names import did_you_mean
        from mdagent.tools.implementations import check_implementation, message_line

        names = set(self.tools) | set(self.alias_of)
        broken_tools: set[str] = set()
        for tool, path in checks:
            if self.tools.get(tool.name) is not tool:
                continue  # shadowed by a higher layer
            base_dir = Path(tool.implementation.get("base_dir", path.parent))
            if "handler" in tool.implementation:
                self.watch(_handler_file(tool.implementation["handler"], base_dir))
            messages = check_implementation(
                tool.implementation, tool.params, names, base_dir, name=tool.name
            )
            unknown = [r for r in tool.required if r not in tool.params]
            if unknown:
                messages.append(f"required names no parameter: {', '.join(unknown)}")
            for message in messages:
                line = message_line(message, tool.lines, tool.line)
                self.problem(tool.source, line, "error", f"tool {tool.name!r}: {message}")
            if messages:
                broken_tools.add(tool.name)
        for name in broken_tools:
            self._drop_tool(name)
        for key, command in list(self.commands.items()):
            if command.kind != "tool":
                continue
            if command.tool not in names:
                if self._mcp_tool(command.tool):
                    continue  # `server__tool` of a declared MCP server: resolved when it starts
                what = "command-tool" if command.skill else "tool"
                hint = did_you_mean(command.tool or "", names)
                message = f"{what} {command.tool!r} names no tool{hint}"
                self._refuse_command(command, key, command.line, message)
                del self.commands[key]
            elif (target := self._tool_named(command.tool)) is not None and not self._fits(
                command, key, target
            ):
                del self.commands[key]
            elif self._tool_named(command.tool) is None:
                message = f"tool {command.tool!r} is declared but broken (see its error)"
                self._refuse_command(command, key, command.line, message)
                del self.commands[key]

    def _mcp_tool(self, name: str | None) -> bool:
        """Whether ``name`` is ``server__tool`` of an MCP server the settings declare.

        Its tools are unknown until the server runs: ``agent check`` (which
        starts it) verifies the name, running the command resolves it.
        """
        from mdagent.declarations.declarations import merge_settings
        from mdagent.declarations.mcpconfig import server_configs, server_of

        servers = server_configs(merge_settings(list(reversed(self.settings_by_layer))))
        return server_of(name, servers) is not None


RAW_ARGUMENTS = ("command", "commandName", "skillName")


def _handler_file(reference: str, base_dir: Path) -> Path:
    """The file of a ``handlers/x.py:function`` reference."""
    return (base_dir / reference.split(":", 1)[0]).resolve()


def compile_registry(layers: list[Layer]) -> tuple[Registry, list[list[Any]]]:
    """Parse every layer (no cache). Returns the registry and the watched stamps."""
    compiler = _Compiler(layers)
    registry = compiler.run()
    return registry, list(compiler.watched.values())
