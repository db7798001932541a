"""The compiled registry: every layer's tools, commands, skills and settings, and the problems.

:class:`Registry` is what the rest of mdagent reads. :mod:`mdagent.registry.compile`
builds one from the layers; :mod:`mdagent.registry.registry` caches it and
reads it back (commands and skills shard by shard, as they are looked up).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mdagent.core.errors import Problem
from mdagent.core.specs import CommandSpec, Skill, ToolSpec, command_key, compact

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

    from mdagent.core.layers import Layer


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
        #: settings (:func:`mdagent.registry.trustfacts.workspace_facts`); None: nothing.
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
            from mdagent.core.text import first_line
            from mdagent.declarations.commandargs import arguments_usage

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
            from mdagent.core.text import table

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
