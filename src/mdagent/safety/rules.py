"""The rule language of the policy: parsing rules, and which rules a call matches.

Pure: no state, no question, no decision (:mod:`mdagent.safety.policy`
decides with what this module finds). A rule is ``tool`` (every call of
that tool) or ``tool(pattern)``, optionally ``{rule: ..., reason: ...}``.
``tool`` is the tool's real name or one of its aliases (``bash(git *)`` is
an ``exec`` rule), ignoring case, and may be a glob (``mcp_*``). What the
pattern is matched against depends on the tool (the views of a call are
:mod:`mdagent.safety.views`):

- ``exec``: an fnmatch glob on each simple command of the command line (see
  :mod:`mdagent.safety.shell.shellparse`). An allow rule covers a command only when every
  segment is covered by some allow rule; a rule without wildcards also covers
  the exact whole command line (a person may write one; "always" suggests
  prefix rules instead, see :meth:`mdagent.safety.policy.Policy.suggest_rules`). Claude Code's
  ``git status:*`` means ``git status`` alone or followed by arguments. A
  pattern covers only a segment whose words are all literal after quote
  removal and that evaluates no text as code (no ``$x``, ``${x@P}``,
  ``eval``, ``sh -c``...). A deny rule blocks when it matches any segment (as
  written, with quotes removed, or without wrappers and their options, by
  path or basename) or the whole string. A command deny rules cannot fully
  see (unparseable, a program named at run time, an unknown wrapper option)
  is never allowed by a pattern (only by a bare ``exec`` rule) and is denied
  whenever a deny rule on exec exists.
- file tools (``read_file``, ``write_file``, ``edit_file``, ``glob``,
  ``grep``; argument ``path``): a gitignore-style glob on the
  workspace-relative path. ``*`` stays within a folder, ``**`` crosses them, a
  pattern without a slash matches at any depth (``.env``), one with a slash is
  anchored at the workspace root (``src/**``), and a rule that matches a
  folder matches what is inside. A leading ``./`` anchors the pattern at the
  workspace root (``./agent.yaml`` is that file only: what "always" saves).
  Unlike gitignore, a leading ``/`` means an absolute path (``/etc/**``) and
  ``~/`` the home folder. Symlinks are judged
  both as written and resolved: allow needs both to match, deny either.
  Deny rules ignore case (a case-insensitive file system would not care).
- ``fetch`` (argument ``url``): ``domain:example.org`` matches that host and
  its subdomains; any other pattern is an fnmatch glob on the whole URL.
- any other tool: ``tool(key=glob)`` globs the argument ``key`` (a string as
  is, anything else as JSON); any other pattern globs the arguments rendered
  as compact JSON with sorted keys (``{"city":"Paris"}``).

Ask rules match the way deny rules do (any segment, any spelling of a path;
a command they cannot see through counts as matching): :func:`first_match`.
Allow rules cover a call together: :func:`covering_rules`.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mdagent.core.catalog import ALIASES, EXEC_TOOLS, FILE_TOOLS, URL_TOOLS
from mdagent.core.errors import ConfigError
from mdagent.safety.views import ExecView, domain_matches, path_matches, path_views, url_host


@dataclass(frozen=True)
class Source:
    """Where a rule or a policy test was written: its file, line and column, and the layer."""

    path: str
    line: int
    col: int = 1
    layer: str = ""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Rule:
    """One entry of ``policy.allow``, ``policy.ask`` or ``policy.deny``.

    ``tool`` or ``tool(pattern)``, optionally with a ``reason`` shown to the
    person and returned to the model when the rule refuses or asks.
    ``source`` is where it was written (None: added at run time). Rules are
    equal when their text is.
    """

    text: str
    tool: str
    pattern: str | None = None
    reason: str | None = field(default=None, compare=False)
    source: Source | None = field(default=None, compare=False)

    @classmethod
    def parse(cls, entry: Any, where: str = "policy") -> Rule:
        """The rule a settings entry spells: ``"tool(pattern)"`` or ``{rule: …, reason: …}``.

        Raises :class:`ConfigError` naming ``where``.
        """
        reason = None
        text = entry
        if isinstance(entry, Mapping):
            text, reason = entry.get("rule"), entry.get("reason")
            if not isinstance(text, str) or (reason is not None and not isinstance(reason, str)):
                raise ConfigError(f'{where}: expected {{rule: "tool(pattern)", reason: text}}')
            reason = " ".join((reason or "").split()) or None  # one line, shown in messages
        raw = str(text).strip()
        match = re.fullmatch(r"([^()\s]+)(?:\((.*)\))?", raw, re.S)
        if not match:
            raise ConfigError(f"{where}: invalid rule {text!r}: expected `tool` or `tool(pattern)`")
        return cls(raw, match.group(1), match.group(2), reason)

    def names(self, names: Iterable[str]) -> bool:
        """Whether this rule is about a tool known by any of ``names``."""
        return names_match(self.tool, names)

    def __str__(self) -> str:
        return self.text


def parse_rules(
    entries: Any, where: str, sources: Mapping[str, Source] | None = None
) -> tuple[Rule, ...]:
    """Rules from a settings list (a lone string is a one-item list).

    ``sources`` maps an entry (:func:`entry_key`) to where it was written.
    """
    if entries is None:
        return ()
    if isinstance(entries, (str, Mapping)):
        entries = [entries]
    if not isinstance(entries, Iterable):
        raise ConfigError(f"{where}: expected a list of rules")
    rules = []
    for entry in entries:
        rule = Rule.parse(entry, where)
        source = (sources or {}).get(entry_key(entry))
        rules.append(replace(rule, source=source) if source is not None else rule)
    return tuple(rules)


def entry_key(entry: Any) -> str:
    """One spelling of a settings list entry, to look up where it was written."""
    return json.dumps(entry, sort_keys=True, ensure_ascii=False, default=str)


def rule_sources(sources: Iterable[Mapping[str, Any]], section: str) -> dict[str, Source]:
    """Entry -> where it was written, for the ``section`` list (``"deny"``, ``"ask"``...).

    ``sources`` is :attr:`mdagent.registry.model.Registry.sources`, highest layer
    first: an entry written in two layers is the higher one's, as merging
    the settings keeps it.
    """
    out: dict[str, Source] = {}
    for item in sources:
        if item.get("section") == section:
            key = entry_key(item.get("entry"))
            if key not in out:
                out[key] = Source(
                    str(item.get("path", "")),
                    int(item.get("line") or 1),
                    int(item.get("col") or 1),
                    str(item.get("layer") or ""),
                )
    return out


def tool_names(tool: Any) -> tuple[str, ...]:
    """The names a rule may use for ``tool``: its real name, then its aliases."""
    return names_for(tool.name, getattr(tool, "aliases", ()))


def names_for(name: str, aliases: Iterable[str] = ()) -> tuple[str, ...]:
    """The names a rule (or a hook's ``tool`` filter) may use for the tool called ``name``.

    ``aliases`` are the tool's declared ones; the built-in tools' usual
    aliases (:data:`mdagent.core.catalog.ALIASES`) are added, so ``bash(git *)`` means exec
    even when a registry declares exec without them.
    """
    return tuple(dict.fromkeys([name, *aliases, *ALIASES.get(name, ())]))


def names_match(glob: str, names: Iterable[str]) -> bool:
    """Whether the tool-name ``glob`` matches any of ``names``, ignoring case."""
    # Case-insensitive: `Bash(git *)` and `Read` (Claude Code's spelling in
    # a skill's allowed-tools) mean exec and read_file.
    glob = glob.lower()
    return any(fnmatch.fnmatchcase(n.lower(), glob) for n in names)


def _is_literal_glob(pattern: str) -> bool:
    """Whether an fnmatch pattern has no wildcard once ``[*]``-style escapes are removed."""
    return not re.search(r"[*?[]", re.sub(r"\[[*?[]\]", "", pattern))


def escape_glob(text: str) -> str:
    """``text`` as an fnmatch pattern that matches only itself."""
    return re.sub(r"([*?[])", r"[\1]", text)


def escape_path_glob(text: str) -> str:
    """``text`` as a path pattern that matches only itself."""
    return re.sub(r"([*?[\\])", r"\\\1", text)


def command_matches(text: str, pattern: str) -> bool:
    """fnmatch, plus Claude Code's ``prefix:*``: the prefix alone or followed by a space."""
    if pattern.endswith(":*"):
        prefix = pattern[:-2]
        return fnmatch.fnmatchcase(text, prefix) or fnmatch.fnmatchcase(text, prefix + " *")
    return fnmatch.fnmatchcase(text, pattern)


# -- which rules a call matches --------------------------------------------------


def first_match(
    pool: Iterable[Rule],
    names: tuple[str, ...],
    real: str,
    args: Mapping[str, Any],
    workdir: str,
    view: ExecView | None,
) -> tuple[Rule, str] | None:
    """The first deny (or ask) rule of ``pool`` the call matches, and what it matched.

    These rules restrict, so they look hard: every segment of a command
    and every spelling of a path; a command they cannot see through
    counts as matching. ``names`` are the tool's (:func:`tool_names`),
    ``real`` its real name, ``view`` the command's view (``exec`` only).
    """
    rules = [r for r in pool if r.names(names)]
    if not rules:
        return None
    for rule in rules:
        if rule.pattern is None:
            return rule, ""
    if real in EXEC_TOOLS:
        for candidate in view.deny_candidates():
            for rule in rules:
                if command_matches(candidate, rule.pattern):
                    return rule, candidate
        if view.unchecked:
            # Rules exist but cannot see what this command runs: fail closed.
            return rules[0], view.unchecked
        return None
    if real in FILE_TOOLS:
        path = str(args.get("path") or ".")
        views = path_views(path, workdir)
        for rule in rules:
            if any(path_matches(rule.pattern, v, deny=True) for v in views):
                return rule, path
        return None
    for rule in rules:
        if _other_matches(real, rule.pattern, args):
            return rule, ""
    return None


def covering_rules(
    allow: Iterable[Rule],
    names: tuple[str, ...],
    real: str,
    args: Mapping[str, Any],
    workdir: str,
    view: ExecView | None,
    blocker: Callable[[Any], str | None],
) -> list[Rule]:
    """The allow rules of ``allow`` that together cover the call (empty: not covered).

    ``blocker`` says why no pattern may cover a segment of a command (see
    :func:`_exec_allowed`).
    """
    rules = [r for r in allow if r.names(names)]
    bare = [r for r in rules if r.pattern is None]
    if bare:
        return bare[:1]
    if not rules:
        return []
    if real in EXEC_TOOLS:
        return _exec_allowed(rules, view, blocker)
    if real in FILE_TOOLS:
        views = path_views(str(args.get("path") or "."), workdir)
        for rule in rules:
            if all(path_matches(rule.pattern, v, deny=False) for v in views):
                return [rule]
        return []
    for rule in rules:
        if _other_matches(real, rule.pattern, args):
            return [rule]
    return []


def _exec_allowed(
    rules: list[Rule], view: ExecView, blocker: Callable[[Any], str | None]
) -> list[Rule]:
    """The allow rules that together cover every segment (empty: not covered).

    A segment is coverable only when fully understood and ``blocker`` finds
    nothing against it (``Segment.dynamic`` is None: every word literal after
    quote removal, nothing evaluated as code; no inline script, unless
    ``policy.inline_eval: allow``).
    """
    if not view.parsed:
        return []  # unparseable: only a person (or a bare `exec` rule) may allow it
    for rule in rules:
        # A wildcard-free rule may name a whole compound command (a person's
        # own exact rule); a glob may not: `git status*` would swallow `; rm`.
        if _is_literal_glob(rule.pattern) and fnmatch.fnmatchcase(view.whole, rule.pattern):
            return [rule]
    if not view.segments:
        return []
    used: list[Rule] = []
    for seg in view.segments:
        if blocker(seg):
            return []  # a pattern cannot know what it runs
        rule = next((r for r in rules if command_matches(seg.text, r.pattern)), None)
        if rule is None:
            return []
        if rule not in used:
            used.append(rule)
    return used


def _other_matches(real: str, pattern: str, args: Mapping[str, Any]) -> bool:
    if real in URL_TOOLS:
        url = str(args.get("url", ""))
        if pattern.startswith("domain:"):
            return domain_matches(pattern[len("domain:") :], url_host(url))
        return fnmatch.fnmatchcase(url, pattern)
    return _generic_matches(pattern, args)


def render_args(args: Mapping[str, Any]) -> str:
    """``args`` as compact JSON with sorted keys: what a pattern of another tool globs."""
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _generic_matches(pattern: str, args: Mapping[str, Any]) -> bool:
    keyed = re.fullmatch(r"([A-Za-z_][\w-]*)=(.*)", pattern, re.S)
    if keyed and keyed.group(1) in args:
        value = args[keyed.group(1)]
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return fnmatch.fnmatchcase(text, keyed.group(2))
    return fnmatch.fnmatchcase(render_args(args), pattern)


# -- the rules a call suggests -----------------------------------------------------


def rule_for(tool: Any, args: Mapping[str, Any], workdir: str) -> str:
    """The allow rule that would cover exactly this call (refusals name it;
    "always" suggests it for tools other than exec,
    :meth:`mdagent.safety.policy.Policy.suggest_rules`).

    exec: the exact command line; file tools: the path, anchored at the
    workspace root when inside (``write_file(./agent.yaml)``, never
    ``sub/agent.yaml``), absolute when outside; either names exactly that
    path, not what a folder of that name holds (see
    :func:`mdagent.safety.views.path_matches`); fetch: the URL's domain;
    other tools: the tool name.
    """
    name = tool.name
    if name in EXEC_TOOLS:
        return f"{name}({escape_glob(str(args.get('command', '')).strip())})"
    if name in FILE_TOOLS and args.get("path"):
        view = path_views(str(args["path"]), str(workdir))[0]
        if view.relative is None:
            shown = escape_path_glob(view.absolute)
        elif view.relative == ".":
            shown = "."
        else:
            # Anchored: `write_file(agent.yaml)` would match at any depth.
            shown = "./" + escape_path_glob(view.relative)
        return f"{name}({shown})"
    if name in URL_TOOLS:
        host = url_host(str(args.get("url", "")))
        if host:
            return f"{name}(domain:{host})"
    return name


_PROGRAM = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_SUBCOMMAND = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def prefix_pattern(text: str) -> str:
    """The prefix pattern for one segment: ``git status:*`` for ``git status --short``.

    The program (as written, a path allowed) and a subcommand-like second
    word; a segment that starts otherwise (``> out``, ``X=1 cmd``, quotes)
    is the segment as written, glob characters escaped.
    """
    words = text.split()
    program = words[0] if words else ""
    name = program.rsplit("/", 1)[-1]
    if not _PROGRAM.fullmatch(name) or not all(
        _PROGRAM.fullmatch(p) for p in program.split("/")[1:-1] if p
    ):
        return escape_glob(text)
    prefix = [program]
    if len(words) > 1 and _SUBCOMMAND.fullmatch(words[1]):
        prefix.append(words[1])
    pattern = escape_glob(" ".join(prefix)) + ":*"
    return pattern if command_matches(text, pattern) else escape_glob(text)
