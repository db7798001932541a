"""Where other agents keep the files mdagent reads, and which of them a setting turns off.

Facts only (names, paths, the ``skills.interop`` switch), so the safety
modules can keep these files read-only for a model without importing the
readers (:mod:`mdagent.declarations.interop` reads them, :mod:`mdagent.declarations.memory` the memory files).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

#: Every source of another agent's files mdagent reads, by the name that turns it off.
SOURCES: dict[str, str] = {
    "claude-skills": ".claude/skills, ~/.claude/skills",
    "codex-skills": "~/.codex/skills",
    "openclaw-skills": "~/.openclaw/skills",
    "openclaw-workspace-skills": "the workspace's top-level skills/ (off unless turned on)",
    "github-skills": ".github/skills",
    "claude-commands": ".claude/commands, ~/.claude/commands",
    "gemini-commands": ".gemini/commands, ~/.gemini/commands",
    "codex-prompts": "~/.codex/prompts",
    "claude-memory": "CLAUDE.md, CLAUDE.local.md, ~/.claude/CLAUDE.md",
    "gemini-memory": "GEMINI.md, ~/.gemini/GEMINI.md",
    "codex-memory": "~/.codex/AGENTS.md",
    "claude-mcp": ".mcp.json",
    "gemini-mcp": ".gemini/settings.json, ~/.gemini/settings.json (mcpServers)",
    "codex-mcp": ".codex/config.toml, ~/.codex/config.toml ([mcp_servers])",
    "claude-permissions": ".claude/settings.json, .claude/settings.local.json, "
    "~/.claude/settings.json (permissions)",
}
#: Sources read only when turned on: a top-level ``skills/`` is a common folder name.
OFF_BY_DEFAULT = frozenset({"openclaw-workspace-skills"})
#: The skill-folder layers of :mod:`mdagent.core.layers` and the source each belongs to.
LAYER_SOURCES = {
    "project-claude": "claude-skills",
    "project-github": "github-skills",
    "project-openclaw": "openclaw-workspace-skills",
    "user-claude": "claude-skills",
    "user-codex": "codex-skills",
    "user-openclaw": "openclaw-skills",
}
#: Layer kinds of the other agents' files (not skill folders): the workspace's and the person's.
PROJECT_KIND = "project-foreign"
USER_KIND = "user-foreign"


def enabled(settings: Mapping[str, Any] | None, source: str) -> bool:
    """Whether ``skills.interop`` in ``settings`` lets ``source`` be read."""
    value = ((settings or {}).get("skills") or {}).get("interop", True)
    if value is False:
        return False
    if isinstance(value, Mapping) and isinstance(value.get(source), bool):
        return value[source]
    return source not in OFF_BY_DEFAULT


def codex_home(environ: Mapping[str, str], home: Path) -> Path:
    return Path(environ.get("CODEX_HOME") or home / ".codex").expanduser()


def settings_files(kind: str, base: Path, environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    """``(source, path)`` of the settings files of a foreign layer, lowest precedence first."""
    if kind == PROJECT_KIND:
        return [
            ("codex-mcp", base / ".codex" / "config.toml"),
            ("gemini-mcp", base / ".gemini" / "settings.json"),
            ("claude-mcp", base / ".mcp.json"),
            ("claude-permissions", base / ".claude" / "settings.json"),
            ("claude-permissions", base / ".claude" / "settings.local.json"),
        ]
    return [
        ("codex-mcp", codex_home(environ, base) / "config.toml"),
        ("gemini-mcp", base / ".gemini" / "settings.json"),
        ("claude-permissions", base / ".claude" / "settings.json"),
    ]


def command_folders(
    kind: str, base: Path, environ: Mapping[str, str]
) -> list[tuple[str, Path, str, str]]:
    """``(source, folder, suffix, prefix)`` of the command folders of a foreign layer.

    ``prefix`` is how the agent names them: Codex's prompts are ``/prompts:name``
    and sit in one folder; the others nest (``git/commit.toml`` is ``/git:commit``).
    """
    found = [
        ("claude-commands", base / ".claude" / "commands", ".md", ""),
        ("gemini-commands", base / ".gemini" / "commands", ".toml", ""),
    ]
    if kind == USER_KIND:
        found.append(("codex-prompts", codex_home(environ, base) / "prompts", ".md", "prompts"))
    return found


def foreign_paths(
    root: Path, home: Path, environ: Mapping[str, str]
) -> list[tuple[Path, bool, str]]:
    """``(path, is a folder, what it is)`` of every foreign file that acts: the sandbox
    keeps them read-only (:mod:`mdagent.safety.protected`), whether they exist yet or not."""
    out: list[tuple[Path, bool, str]] = []
    for kind, base in ((PROJECT_KIND, root), (USER_KIND, home)):
        for source, path in settings_files(kind, base, environ):
            out.append((path, False, f"another agent's settings read as ours ({source})"))
        for source, folder, _, _ in command_folders(kind, base, environ):
            out.append((folder, True, f"another agent's commands read as ours ({source})"))
    return out
