"""Every default setting and well-known name, in one place, cheap to import.

The `/name` path reads these (process limits, the settings file's name)
without importing the declaration loader, which pulls in the template and
implementation modules. A record whose fields mirror a settings section
(``ProviderConfig``, ``SandboxSettings``, ``ServerConfig``, ``CheckpointSettings``)
takes its field defaults from :data:`DEFAULT_SETTINGS`, and code reading one
setting asks :func:`setting`, which falls back to it: a default is written once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any


#: The folder of a project's layer (and of the user's, under $HOME).
PROJECT_DIR = ".agents"
#: The settings file of a layer, in its ``config/`` folder.
SETTINGS_FILE = "agent.yaml"

DEFAULT_SETTINGS: dict[str, Any] = {
    # What mdagent.providers.config.ProviderConfig reads; its field defaults match these.
    # timeout is the idle limit between data events; request_timeout (None: off)
    # bounds a whole request, retries included.
    "model": {
        "stream": True,
        "timeout": 120,
        "request_timeout": None,
        "max_tokens": 4096,
        "max_retries": 3,
    },
    "agent": {"max_steps": 25, "tier": "full"},
    "policy": {
        "mode": "ask",
        "allow": [],
        "ask": [],
        "deny": [],
        "paths": [],
        "inline_eval": "ask",
        "tests": [],
    },
    "exec": {"timeout": 120, "max_output": 100_000},
    # fetch's defaults are also the caps of `http:` tools.
    "fetch": {"timeout": 30, "max_bytes": 1_000_000},
    "glob": {"max_files": 1000},
    "grep": {"max_matches": 1000, "timeout": 60},
    "hooks": {"before": [], "after": []},
    # Other tools' skill folders (.claude/skills, ~/.codex/skills...) read as layers.
    "skills": {"interop": True},
    # MCP servers whose tools join the registry (mdagent.declarations.mcpconfig reads them); `mcp`
    # holds the defaults of their per-server startup_timeout and timeout (seconds).
    "mcp": {"startup_timeout": 30, "timeout": 120},
    "mcp_servers": {},
    # What mdagent.rewind.checkpoints.CheckpointSettings reads: snapshots of the workspace
    # before and after each model turn, for agent rewind (README "Rewind").
    "checkpoints": {
        "enabled": True,
        "max_file_bytes": 10_000_000,
        "max_files": 50_000,
        "keep_days": 30,
        "keep_mib": 2048,
    },
    # What mdagent.safety.sandboxsettings.SandboxSettings reads; its field defaults match these.
    "sandbox": {
        "mode": "workspace-write",
        "network": True,
        "writable": [],
        "applies_to": "model",
        "required": False,
    },
}


#: A hook's own ``timeout`` when it gives none (seconds).
HOOK_TIMEOUT = 30.0

_FROM_DEFAULTS: Any = object()


def setting(
    settings: Mapping[str, Any] | None, section: str, key: str, default: Any = _FROM_DEFAULTS
) -> Any:
    """``settings[section][key]``, or the default when any level is missing or None.

    The default is ``default`` when given, else :data:`DEFAULT_SETTINGS`' own
    (``KeyError`` when there is none: every default is written there).
    """
    block = settings.get(section) if isinstance(settings, Mapping) else None
    value = block.get(key) if isinstance(block, Mapping) else None
    if value is not None:
        return value
    return DEFAULT_SETTINGS[section][key] if default is _FROM_DEFAULTS else default


def settings_path(layer: str | Path) -> Path:
    """The settings file of the layer folder ``layer`` (``.agents/config/agent.yaml``)."""
    return Path(layer) / "config" / SETTINGS_FILE
