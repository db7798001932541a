"""The built-in tools: exec, files, search, web and skill (DESIGN §5).

Importing this package is cheap: it holds only the declarations
(:data:`SPECS`). Each handler module is imported on the tool's first call,
so ``agent /my-command`` never pays for httpx or the gitignore matcher.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Iterable

TYPE_CHECKING = False  # not typing's: see mdagent.records
if TYPE_CHECKING:
    from typing import Any

_STRING = {"type": "string"}

SPECS: dict[str, dict[str, Any]] = {
    "exec": {
        "description": (
            "Run a shell command (bash -c) in the workspace and return its stdout, stderr "
            "and exit code. Output is capped (head and tail kept); the command is stopped "
            "with its whole process group when it exceeds the timeout."
        ),
        "params": {
            "command": {**_STRING, "description": "The shell command line to run"},
            "timeout": {
                "type": "integer",
                "minimum": 1,
                "description": "Seconds before the command is stopped (default 120)",
            },
            "cwd": {
                **_STRING,
                "description": "Directory to run in, relative to the workspace (default: its root)",
            },
        },
        "required": ["command"],
        "aliases": ["bash", "sh", "shell", "execute"],
        "category": "execution",
        "security": "dangerous",
        "tier": "essential",
    },
    "read_file": {
        "description": (
            "Read a text file with line numbers (like cat -n). Reads up to `limit` lines "
            "(default 2000) starting at line `offset` (1-based); use them to page through "
            "long files."
        ),
        "params": {
            "path": {**_STRING, "description": "File to read, relative to the workspace"},
            "offset": {"type": "integer", "minimum": 1, "description": "First line to read"},
            "limit": {"type": "integer", "minimum": 1, "description": "How many lines"},
            "column": {
                "type": "integer",
                "minimum": 1,
                "description": "First character of each line to show (for lines cut at 2000)",
            },
        },
        "required": ["path"],
        "aliases": ["read", "open"],
        "category": "filesystem",
        "security": "safe",
        "tier": "essential",
    },
    "write_file": {
        "description": (
            "Create or overwrite a file inside the workspace with the given content "
            "(parent folders are created)."
        ),
        "params": {
            "path": {**_STRING, "description": "File to write, relative to the workspace"},
            "content": {**_STRING, "description": "The complete new content of the file"},
        },
        "required": ["path", "content"],
        "aliases": ["write"],
        "category": "filesystem",
        "security": "moderate",
        "tier": "standard",
    },
    "edit_file": {
        "description": (
            "Replace an exact string in a file. `old_string` must occur exactly once "
            "(include surrounding lines to make it unique) unless `replace_all` is true."
        ),
        "params": {
            "path": {**_STRING, "description": "File to edit, relative to the workspace"},
            "old_string": {**_STRING, "description": "The exact text to replace"},
            "new_string": {**_STRING, "description": "The text to put in its place"},
            "replace_all": {
                "type": "boolean",
                "default": False,
                "description": "Replace every occurrence instead of exactly one",
            },
        },
        "required": ["path", "old_string", "new_string"],
        "aliases": ["edit"],
        "category": "filesystem",
        "security": "moderate",
        "tier": "standard",
    },
    "glob": {
        "description": (
            "List files matching a glob pattern such as `**/*.py` or `src/*.{ts,tsx}`, "
            "sorted, respecting .gitignore. `*` stays within one folder, `**` spans folders."
        ),
        "params": {
            "pattern": {**_STRING, "description": "Glob pattern, relative to `path`"},
            "path": {**_STRING, "description": "Folder to search in (default: the workspace)"},
        },
        "required": ["pattern"],
        "aliases": [],
        "category": "filesystem",
        "security": "safe",
        "tier": "standard",
    },
    "grep": {
        "description": (
            "Search file contents with a regular expression; returns path:line:text for "
            "each matching line, respecting .gitignore and skipping binary files."
        ),
        "params": {
            "pattern": {**_STRING, "description": "Regular expression to search for"},
            "path": {**_STRING, "description": "File or folder to search (default: workspace)"},
            "glob": {**_STRING, "description": "Only search files matching this glob, e.g. *.py"},
            "ignore_case": {"type": "boolean", "default": False, "description": "Ignore case"},
        },
        "required": ["pattern"],
        "aliases": [],
        "category": "filesystem",
        "security": "safe",
        "tier": "standard",
    },
    "fetch": {
        "description": (
            "Fetch a URL (http or https) with GET and return the response body as text; "
            "redirects are followed, size and time are capped."
        ),
        "params": {"url": {**_STRING, "description": "The http:// or https:// URL to fetch"}},
        "required": ["url"],
        "aliases": [],
        "category": "web",
        "security": "moderate",
        "tier": "standard",
    },
    "skill": {
        "description": (
            "Load the full instructions of a skill by name, before doing a task the skill covers."
        ),
        "params": {"name": {**_STRING, "description": "The skill's name"}},
        "required": ["name"],
        "aliases": [],
        "category": "custom",
        "security": "safe",
        "tier": "essential",
    },
}

# tool name -> (module in this package, function); imported on first call.
HANDLERS: dict[str, tuple[str, str]] = {
    "exec": ("exec", "exec_tool"),
    "read_file": ("files", "read_file"),
    "write_file": ("files", "write_file"),
    "edit_file": ("files", "edit_file"),
    "glob": ("search", "glob_tool"),
    "grep": ("search", "grep_tool"),
    "fetch": ("web", "fetch"),
    "skill": ("skill", "skill_tool"),
}

BUILTIN_NAMES: frozenset[str] = frozenset(
    [*SPECS, *(alias for spec in SPECS.values() for alias in spec["aliases"])]
)


def real_name(name: str) -> str:
    """The built-in tool ``name`` designates (aliases followed); ``KeyError`` if none."""
    if name in SPECS:
        return name
    for tool, spec in SPECS.items():
        if name in spec["aliases"]:
            return tool
    raise KeyError(f"unknown built-in tool: {name}")


def handler_for(name: str):
    """A handler for the built-in ``name`` that imports its module on first call."""
    module_name, function_name = HANDLERS[real_name(name)]
    resolved = []

    def handler(args: dict[str, Any], ctx: Any) -> Any:
        if not resolved:
            module = importlib.import_module(f"{__name__}.{module_name}")
            resolved.append(getattr(module, function_name))
        return resolved[0](args, ctx)

    handler.__name__ = function_name
    handler.__qualname__ = f"builtin:{name}"
    return handler


def register_builtins(toolbox: Any, names: Iterable[str] | None = None) -> None:
    """Add the built-in tools (all, or only ``names``, aliases accepted) to ``toolbox``."""
    chosen = list(SPECS) if names is None else [real_name(n) for n in names]
    for name in dict.fromkeys(chosen):
        spec = SPECS[name]
        toolbox.add(
            name,
            description=spec["description"],
            params=copy.deepcopy(spec["params"]),
            required=spec["required"],
            aliases=spec["aliases"],
            handler=handler_for(name),
            category=spec["category"],
            security=spec["security"],
            tier=spec["tier"],
        )


def setting(ctx: Any, section: str, key: str, default: Any) -> Any:
    """``ctx.settings[section][key]``, or ``default`` when any level is missing."""
    from mdagent.specs import setting as lookup

    return lookup(getattr(ctx, "settings", None), section, key, default)
