"""Every default setting, in one place, cheap to import.

The `/name` path reads these (process limits, the settings file's name)
without importing the declaration loader, which pulls in the template and
implementation modules.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see mdagent.records
if TYPE_CHECKING:
    from typing import Any


SETTINGS_FILE = "agent.yaml"

DEFAULT_SETTINGS: dict[str, Any] = {
    # What mdagent.providers.base.ProviderConfig reads; its field defaults match these.
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
    "fetch": {"timeout": 30, "max_bytes": 1_000_000},
    "hooks": {"before": [], "after": []},
    # Other tools' skill folders (.claude/skills, ~/.codex/skills...) read as layers.
    "skills": {"interop": True},
    # MCP servers whose tools join the registry (mdagent.mcpconfig reads them); `mcp`
    # holds the defaults of their per-server startup_timeout and timeout (seconds).
    "mcp": {"startup_timeout": 30, "timeout": 120},
    "mcp_servers": {},
    # What mdagent.checkpoints.CheckpointSettings reads: snapshots of the workspace
    # before and after each model turn, for agent rewind (README "Rewind").
    "checkpoints": {
        "enabled": True,
        "max_file_bytes": 10_000_000,
        "max_files": 50_000,
        "keep_days": 30,
        "keep_mib": 2048,
    },
    # What mdagent.sandbox.SandboxSettings reads; its field defaults match these.
    "sandbox": {
        "mode": "workspace-write",
        "network": True,
        "writable": [],
        "applies_to": "model",
        "required": False,
    },
}
