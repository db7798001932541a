"""The records a registry is made of: tools, commands and skills as frozen data.

They round-trip through plain dicts because the compiled registry is cached
as JSON; nothing here imports yaml or frontmatter.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping

from mdagent.core.records import Record

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any, TypeVar

    R = TypeVar("R", "ToolSpec", "CommandSpec", "Skill")

TIERS = ("essential", "standard", "full")
ARG_MODES = ("raw", "parsed", "json")


def command_key(name: str) -> str:
    """The canonical form of a command name: no ``/``, lower case, ``_`` as ``-``."""
    return name.lstrip("/").strip().lower().replace("_", "-")


def _from_dict(cls: Any, data: dict[str, Any]) -> Any:
    """``cls`` from ``data``, ignoring keys it has no field for (a newer cache's)."""
    try:
        return cls(**data)  # the cache's own dicts: one call, no filtering (/help builds 10,000)
    except TypeError:
        return cls(**{k: v for k, v in data.items() if k in cls._fields})


# Records are NamedTuples, not dataclasses: a frozen dataclass costs about a
# millisecond to define, and these three are defined on every `agent /name`.
# Their dict and list fields are never mutated after construction.


class ToolSpec(Record):
    """A declared tool: its schema, metadata and one implementation."""

    name: str
    description: str
    params: dict[str, Any] = {}
    required: list[str] = []
    aliases: list[str] = []
    category: str = "custom"
    security: str = "moderate"
    tier: str = "full"
    approval: bool = False
    requires: dict[str, Any] = {}
    rate_limit: dict[str, Any] | None = None
    timeout: float | None = None
    implementation: dict[str, Any] = {}
    source: str = ""
    line: int = 0
    layer: str = ""
    # The line of each implementation key ("run", "with.command", ...), so
    # load-time problems point at the template rather than the tool's name.
    lines: dict[str, int] = {}

    @property
    def kind(self) -> str:
        """Which implementation: builtin, run, shell, handler, http or tool."""
        for key in ("builtin", "run", "shell", "handler", "http", "tool"):
            if key in self.implementation:
                return key
        return "?"

    @property
    def meta(self) -> dict[str, Any]:
        """The metadata the toolbox keeps for policy and listings."""
        return {
            "category": self.category,
            "security": self.security,
            "tier": self.tier,
            "approval": self.approval,
            "requires": self.requires,
            "rate_limit": self.rate_limit,
            "timeout": self.timeout,
            "source": self.source,
            "kind": self.kind,  # plan mode keeps only what the sandbox can hold
        }

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolSpec:
        return _from_dict(cls, data)


class CommandSpec(Record):
    """``/name`` bound to a tool (``kind == "tool"``) or to a prompt skill.

    ``requires`` is the skill's requirements, copied here so running one
    command never needs the (large) table of every skill.
    """

    name: str
    description: str = ""
    tool: str | None = None
    arg_mode: str = "raw"
    completions: Any = None
    argument_hint: str = ""
    skill: str | None = None
    kind: str = "tool"  # "tool" | "prompt"
    user_invocable: bool = True
    source: str = ""
    line: int = 0
    layer: str = ""
    requires: dict[str, Any] = {}
    # A skill's `command-with`: the tool's arguments as templates over the
    # typed words ({ARGUMENTS}, {0}, {1}..., and the names of `arguments`).
    command_with: dict[str, Any] | None = None
    arguments: list[str] = []

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CommandSpec:
        return _from_dict(cls, data)


class Skill(Record):
    """A SKILL.md: front-matter fields plus where its body lives."""

    name: str
    description: str
    path: str
    dispatch: str | None = None
    tool: str | None = None
    arg_mode: str = "raw"
    user_invocable: bool = True
    disable_model_invocation: bool = False
    argument_hint: str = ""
    allowed_tools: list[str] = []
    requires: dict[str, Any] = {}
    license: str | None = None
    homepage: str | None = None
    extra: dict[str, Any] = {}
    line: int = 1
    layer: str = ""
    metadata: dict[str, Any] = {}
    compatibility: str | None = None
    arguments: list[str] = []
    command_with: dict[str, Any] | None = None
    # Why `/name` is refused while the skill itself loads ("" when it is not).
    command_error: str = ""
    # The line of each command key (`command-tool`, `command-with.url`...).
    lines: dict[str, int] = {}
    # What a prompt turn of the skill runs with (issue 16): its own model
    # (a name or {provider, name, base_url}), step limit, a forked
    # sub-conversation, tools withheld from the model, argument defaults and help.
    model: Any = None
    max_steps: int | None = None
    context: str = ""
    disallowed_tools: list[str] = []
    argument_defaults: dict[str, str] = {}
    argument_help: dict[str, str] = {}
    # The commands of a prompt skill's live context (`!`cmd`` in its body): what
    # trusting a workspace lets its own skills run without asking (mdagent.runtime.trust).
    live_context: list[str] = []

    @property
    def dir(self) -> str:
        return os.path.dirname(self.path)

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Skill:
        return _from_dict(cls, data)


def compact(record: ToolSpec | CommandSpec | Skill) -> dict[str, Any]:
    """The record as a dict without the fields that hold their defaults (for the cache).

    ``from_dict`` fills them back in; a warm start parses a third less JSON.
    """
    defaults = record._field_defaults
    missing = _MISSING
    return {
        k: v for k, v in zip(record._fields, record, strict=True) if defaults.get(k, missing) != v
    }


_MISSING = object()  # no default: never equal to a value


class LazyRecords(Mapping):  # Mapping[str, R]: subscripting needs R at run time
    """Records kept as the cache's dicts and built on first access.

    A warm ``agent /name`` touches one command and one tool out of maybe
    thousands; building every record up front would cost more than the rest
    of the load.
    """

    def __init__(self, raw: dict[str, dict[str, Any]], cls: type[R]) -> None:
        self._raw = raw
        self._cls = cls
        self._built: dict[str, R] = {}

    def __getitem__(self, key: str) -> R:
        record = self._built.get(key)
        if record is None:
            record = self._cls.from_dict(self._raw[key])
            self._built[key] = record
        return record

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def items(self) -> list[tuple[str, R]]:  # type: ignore[override]
        """Every ``(key, record)``, built in one pass: a listing (``/help``) touches all."""
        build, built = self._cls.from_dict, self._built
        pairs = []
        for key, raw in self._raw.items():
            record = built.get(key)
            if record is None:
                record = built[key] = build(raw)
            pairs.append((key, record))
        return pairs

    def values(self) -> list[R]:  # type: ignore[override]
        return [record for _, record in self.items()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


_OS_NAMES = {"linux": "linux", "darwin": "darwin", "win32": "windows", "cygwin": "windows"}


def unmet_requirement(requires: dict[str, Any] | None, environ=os.environ) -> str | None:
    """Why ``requires`` (bins, anyBins, env, os, config) is not met here, or None.

    Checked at use time, not compile time: PATH and the environment change
    between runs while the cached registry does not.
    """
    if not requires:
        return None
    reasons = []
    oses = [str(o).lower() for o in requires.get("os") or []]
    here = _OS_NAMES.get(sys.platform, sys.platform)
    if oses and here not in oses and sys.platform not in oses:
        reasons.append(f"needs os {', '.join(oses)} (this is {here})")
    import shutil  # ~1 ms (it loads zlib, bz2, lzma): only tools with requirements need it

    missing = [b for b in requires.get("bins") or [] if shutil.which(b) is None]
    if missing:
        reasons.append(f"needs {', '.join(missing)} on PATH")
    any_bins = requires.get("anyBins") or []
    if any_bins and not any(shutil.which(b) for b in any_bins):
        reasons.append(f"needs one of {', '.join(any_bins)} on PATH")
    unset = [v for v in requires.get("env") or [] if not environ.get(v)]
    if unset:
        reasons.append(f"needs {', '.join(unset)} set")
    config = requires.get("config") or []
    if config:  # OpenClaw's own settings: mdagent has no way to tell
        reasons.append(f"needs OpenClaw settings mdagent cannot check: {', '.join(config)}")
    # Every reason at once: fixing one only to meet the next is tedious.
    return "; ".join(reasons) or None
