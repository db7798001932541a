"""One compile: every layer's settings, declarations and skills into a :class:`Registry`.

Layers are walked lowest first, so a higher layer's tool, command or skill
shadows a lower one's (an ``info`` problem says so); references (a command's
tool, a tool's implementation, a skill's ``command-with``) are checked once
every layer is in. Every file that decides the result is stamped before it
is read (:meth:`Compiler.watch`), so the cache (:mod:`mdagent.registry.registry`)
knows when to compile again. Only a cold run or a stale cache imports this
module.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from mdagent.core.errors import Problem
from mdagent.core.specs import CommandSpec, Skill, ToolSpec, command_key
from mdagent.registry.model import Registry

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

    from mdagent.core.layers import Layer

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
    "registry/registry.py",  # the cache: what it writes of a compile
    "registry/model.py",
    "registry/compile.py",
    "core/layers.py",
    "declarations/interop.py",
    "core/foreignpaths.py",  # where interop finds the files it reads
    "core/yamlsource.py",
    "core/yamlfast.py",
    "declarations/skills.py",
    "declarations/skillbody.py",  # a body as the registry's /help text reads it
    "declarations/declarations.py",
    "declarations/hookspec.py",  # what a hooks: entry may say
    "declarations/kinds.py",  # what an implementation may say
    "core/defaults.py",
    "core/fastcheck.py",
    "core/specs.py",
    "core/catalog.py",
    "declarations/placeholders.py",  # the template language and its checks
    "safety/shell/lexicon.py",  # what templates refuse
    "safety/shell/slots.py",  # a shell template read around each slot
    "declarations/commandargs.py",  # command-with checks, the usage words of /help's rows
    "core/text.py",  # their descriptions' first lines, and the table
    "registry/trustfacts.py",  # what trust covers, and the untrusted view of the settings
    "safety/rules.py",  # Rule.parse checks every rule a layer gives
    "safety/commandfiles.py",  # the files a hook or a server runs: trust is bound to them
    "declarations/schemas/declarations.json",
    "declarations/schemas/settings.json",
    "declarations/schemas/skill.json",
)

#: The arguments ``arg-mode: raw`` gives a tool (:func:`mdagent.tools.dispatch.raw_arguments`).
RAW_ARGUMENTS = ("command", "commandName", "skillName")


def _stamp(path: str, st: os.stat_result | None = None) -> list[Any]:
    """``[path, size, mtime_ns]`` (size -1: absent), from ``st`` when it was just taken.

    What the cache's freshness check reads back (:mod:`mdagent.registry.registry`).
    """
    if st is None:
        try:
            st = os.stat(path)
        except OSError:
            return [path, -1, 0]
    return [path, st.st_size, st.st_mtime_ns]


class Compiler:
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
            from mdagent.registry.trustfacts import workspace_facts

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
        from mdagent.declarations.commandargs import check_command_with

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
        from mdagent.declarations.kinds import check_implementation, message_line

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


def _handler_file(reference: str, base_dir: Path) -> Path:
    """The file of a ``handlers/x.py:function`` reference."""
    return (base_dir / reference.split(":", 1)[0]).resolve()


def compile_registry(layers: list[Layer]) -> tuple[Registry, list[list[Any]]]:
    """Parse every layer (no cache). Returns the registry and the watched stamps."""
    compiler = Compiler(layers)
    registry = compiler.run()
    return registry, list(compiler.watched.values())
