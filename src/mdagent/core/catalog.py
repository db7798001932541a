"""Facts about the built-in tools, once: their names, aliases, path arguments and effects.

The built-in tools' declarations (:data:`SPECS`, which the registry compiles and
:mod:`mdagent.tools.builtins` gives handlers), the policy (which
rules judge a call by its command, its path or its URL), the workspace
(which argument a person's relative path is rebased in) and ``agent policy
check`` all need these; each reads them here (like codex's
``tool-names.ts``), so a new built-in is described in one place.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

#: A built-in tool's real name -> its aliases (``bash(git *)`` is an ``exec`` rule).
ALIASES: dict[str, tuple[str, ...]] = {
    "exec": ("bash", "sh", "shell", "execute"),
    "read_file": ("read", "open"),
    "write_file": ("write",),
    "edit_file": ("edit",),
    "glob": (),
    "grep": (),
    "fetch": (),
    "skill": (),
}

#: What a call of each built-in does: ``exec`` (runs a command line), ``read`` or
#: ``write`` (a file), ``url`` (a request), ``skill`` (reads a skill by name).
EFFECTS: dict[str, str] = {
    "exec": "exec",
    "read_file": "read",
    "write_file": "write",
    "edit_file": "write",
    "glob": "read",
    "grep": "read",
    "fetch": "url",
    "skill": "skill",
}

#: The argument naming a file or folder, per built-in: rules on file tools match
#: ``path``; a person's relative value is taken from the folder typed in.
PATH_ARGUMENTS: dict[str, str] = {
    "read_file": "path",
    "write_file": "path",
    "edit_file": "path",
    "glob": "path",
    "grep": "path",
    "exec": "cwd",
}

NAMES = frozenset(ALIASES)
#: Every built-in name and alias.
NAMES_AND_ALIASES = frozenset([*ALIASES, *(a for names in ALIASES.values() for a in names)])

#: Tools whose rules match the command line (``exec(git *)``).
EXEC_TOOLS = frozenset(name for name, effect in EFFECTS.items() if effect == "exec")
#: Tools whose rules match the workspace-relative ``path`` (``read_file(src/**)``).
FILE_TOOLS = frozenset(name for name, arg in PATH_ARGUMENTS.items() if arg == "path")
#: File tools that change the file they name.
WRITE_TOOLS = frozenset(name for name, effect in EFFECTS.items() if effect == "write")
#: Tools whose rules match the URL (``fetch(domain:example.org)``).
URL_TOOLS = frozenset(name for name, effect in EFFECTS.items() if effect == "url")
#: The built-ins that only read (files, a URL, a skill): plan mode keeps them.
READ_TOOLS = frozenset(
    name for name, effect in EFFECTS.items() if effect in ("read", "url", "skill")
)


_STRING = {"type": "string"}

#: Each built-in tool as the registry compiles it (description, parameters, aliases,
#: category, security level, tier).
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
        "aliases": list(ALIASES["exec"]),
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
        "aliases": list(ALIASES["read_file"]),
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
        "aliases": list(ALIASES["write_file"]),
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
        "aliases": list(ALIASES["edit_file"]),
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
        "aliases": list(ALIASES["glob"]),
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
        "aliases": list(ALIASES["grep"]),
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
        "aliases": list(ALIASES["fetch"]),
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
        "aliases": list(ALIASES["skill"]),
        "category": "custom",
        "security": "safe",
        "tier": "essential",
    },
}


def real_name(name: str) -> str:
    """The built-in tool ``name`` designates (aliases followed); ``KeyError`` if none."""
    if name in ALIASES:
        return name
    for tool, aliases in ALIASES.items():
        if name in aliases:
            return tool
    raise KeyError(f"unknown built-in tool: {name}")
