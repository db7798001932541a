"""Which tool calls may run: allow/deny rules, modes, approval and rate limits.

Settings (``agent.yaml``)::

    policy:
      mode: ask            # ask | allowlist | deny | full
      allow: ["exec(git status*)", "read_file", "write_file(src/**)"]
      deny:  ["exec(rm -rf *)", "read_file(**/.env)", "fetch(domain:evil.example)"]

A rule is ``tool`` (every call of that tool) or ``tool(pattern)``. ``tool`` is
the tool's real name or one of its aliases (``bash(git *)`` is an ``exec``
rule), ignoring case, and may be a glob (``mcp_*``). What the pattern is
matched against depends on the tool:

- ``exec``: an fnmatch glob on each simple command of the command line (see
  :mod:`mdagent.shellparse`). An allow rule covers a command only when every
  segment is covered by some allow rule; a rule without wildcards also covers
  the exact whole command line (that is what "always" writes). Claude Code's
  ``git status:*`` means ``git status`` alone or followed by arguments. A deny rule
  blocks when it matches any segment (as written, with quotes removed, or
  without wrappers such as ``env``/``xargs``) or the whole string. A command
  that cannot be parsed is never allowed by a pattern (only by a bare
  ``exec`` rule); deny rules still see the whole string and a crude split.
- file tools (``read_file``, ``write_file``, ``edit_file``, ``glob``,
  ``grep``; argument ``path``): a gitignore-style glob on the
  workspace-relative path. ``*`` stays within a folder, ``**`` crosses them, a
  pattern without a slash matches at any depth (``.env``), one with a slash is
  anchored at the workspace root (``src/**``), and a rule that matches a
  folder matches what is inside. Unlike gitignore, a leading ``/`` means an
  absolute path (``/etc/**``) and ``~/`` the home folder. Symlinks are judged
  both as written and resolved: allow needs both to match, deny either.
  Deny rules ignore case (a case-insensitive file system would not care).
- ``fetch`` (argument ``url``): ``domain:example.org`` matches that host and
  its subdomains; any other pattern is an fnmatch glob on the whole URL.
- any other tool: ``tool(key=glob)`` globs the argument ``key`` (a string as
  is, anything else as JSON); any other pattern globs the arguments rendered
  as compact JSON with sorted keys (``{"city":"Paris"}``).

Who is asking matters (``ctx.caller``): a command a person typed runs as
typed, only deny rules (and rate limits) apply. For a model (``"model"``,
``"mcp"``, anything but ``"person"``), see :meth:`Policy.check`.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from mdagent.errors import ConfigError, logger
from mdagent.globs import gitignore_regex
from mdagent.toolbox import Decision, ToolContext

log = logger("mdagent.policy")

MODES = ("ask", "allowlist", "deny", "full")
EXEC_TOOLS = frozenset({"exec"})
FILE_TOOLS = frozenset({"read_file", "write_file", "edit_file", "glob", "grep"})
URL_TOOLS = frozenset({"fetch"})
# The built-in tools' aliases, so `bash(git *)` means exec even when a
# registry declares exec without them.
BUILTIN_ALIASES: Mapping[str, tuple[str, ...]] = {
    "exec": ("bash", "sh", "shell", "execute"),
    "read_file": ("read", "open"),
    "write_file": ("write",),
    "edit_file": ("edit",),
}
SETTINGS_FILE = Path(".agents") / "config" / "agent.yaml"

Prompt = Callable[[str, Mapping[str, Any]], str]


# -- rules ---------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One ``tool`` or ``tool(pattern)`` entry of ``policy.allow`` / ``policy.deny``."""

    text: str
    tool: str
    pattern: str | None = None

    @classmethod
    def parse(cls, text: str, where: str = "policy") -> Rule:
        """The rule ``text`` spells; raises :class:`ConfigError` naming ``where``."""
        raw = str(text).strip()
        match = re.fullmatch(r"([^()\s]+)(?:\((.*)\))?", raw, re.S)
        if not match:
            raise ConfigError(f"{where}: invalid rule {text!r}: expected `tool` or `tool(pattern)`")
        return cls(raw, match.group(1), match.group(2))

    def names(self, names: Iterable[str]) -> bool:
        """Whether this rule is about a tool known by any of ``names``."""
        return names_match(self.tool, names)

    def __str__(self) -> str:
        return self.text


def parse_rules(texts: Any, where: str) -> tuple[Rule, ...]:
    """Rules from a settings list (a lone string is a one-item list)."""
    if texts is None:
        return ()
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, Iterable):
        raise ConfigError(f"{where}: expected a list of rules")
    return tuple(Rule.parse(t, where) for t in texts)


def tool_names(tool: Any) -> tuple[str, ...]:
    """The names a rule may use for ``tool``: its real name, then its aliases."""
    return names_for(tool.name, getattr(tool, "aliases", ()))


def names_for(name: str, aliases: Iterable[str] = ()) -> tuple[str, ...]:
    """The names a rule (or a hook's ``tool`` filter) may use for the tool called ``name``.

    ``aliases`` are the tool's declared ones; the built-in tools' usual
    aliases (:data:`BUILTIN_ALIASES`) are added.
    """
    return tuple(dict.fromkeys([name, *aliases, *BUILTIN_ALIASES.get(name, ())]))


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


# -- what a call looks like to the rules -----------------------------------------


class _ExecView:
    """A command line as the rules see it: the whole string and its segments."""

    def __init__(self, command: str) -> None:
        from mdagent.shellparse import try_parse

        self.whole = command.strip()
        self.segments = try_parse(command)

    @property
    def parsed(self) -> bool:
        return self.segments is not None

    def deny_candidates(self) -> list[str]:
        """Every string a deny rule is tried on."""
        out = [self.whole, " ".join(self.whole.split())]
        if self.segments is None:
            # Unparseable (a syntax error, or a line tree-sitter may read
            # differently from bash); bash may still run it. Split on anything
            # that might separate commands: a false match here only refuses a call.
            pieces = re.split(r"\|\||&&|[;&|\n(){}`]|\$\(", self.whole)
            out += [" ".join(p.split()) for p in pieces if p.strip()]
        else:
            for seg in self.segments:
                out += [seg.text, seg.plain, " ".join(seg.core)]
        return list(dict.fromkeys(out))


@dataclass(frozen=True)
class _PathView:
    """One way of naming a file: absolute, and workspace-relative when inside."""

    absolute: str
    relative: str | None


def _path_views(path: str, workdir: str) -> list[_PathView]:
    """The file ``path`` names, as written (normalised) and with symlinks resolved."""
    expanded = os.path.expanduser(path)
    lexical = os.path.normpath(os.path.join(workdir, expanded))
    real = os.path.realpath(lexical)
    views = []
    for absolute, root in ((lexical, os.path.normpath(workdir)), (real, os.path.realpath(workdir))):
        relative = None
        if absolute == root:
            relative = "."
        elif absolute.startswith(root.rstrip(os.sep) + os.sep):
            relative = Path(os.path.relpath(absolute, root)).as_posix()
        views.append(_PathView(Path(absolute).as_posix(), relative))
    return views


@lru_cache(maxsize=512)
def _path_regex(pattern: str, ignore_case: bool, anchored: bool = False) -> re.Pattern[str]:
    """A path rule's pattern as a regex over a ``/``-separated path (full match).

    The glob itself is gitignore's (:func:`mdagent.globs.gitignore_regex`);
    a pattern with a slash (or ``anchored``) starts at the path's first
    component, one without matches at any depth.
    """
    anchored = anchored or "/" in pattern.rstrip("/")
    regex = gitignore_regex(pattern.rstrip("/").lstrip("/"))
    if not anchored:
        regex = "(?:.*/)?" + regex
    return re.compile(regex, re.S | (re.I if ignore_case else 0))


def _path_matches(pattern: str, view: _PathView, *, deny: bool) -> bool:
    """Whether ``pattern`` matches the file (or a folder holding it)."""
    if pattern.startswith("~/") or pattern == "~":
        pattern = os.path.expanduser(pattern)
    if pattern.startswith("/"):
        target = view.absolute.lstrip("/")
        regex = _path_regex(pattern, deny, True)
    elif view.relative is not None:
        target = view.relative
        regex = _path_regex(pattern, deny)
    elif deny:
        # Outside the workspace a relative rule can only mean "at any depth"
        # (`.env`, `**/.env`); trying it on the absolute path errs towards denying.
        target = view.absolute.lstrip("/")
        regex = _path_regex(pattern, deny)
    else:
        return False
    parts = target.split("/")
    return any(regex.fullmatch("/".join(parts[:n])) for n in range(len(parts), 0, -1))


def _url_host(url: str) -> str | None:
    """The host ``fetch`` would connect to (as httpx parses it), lower-case ASCII."""
    try:
        import httpx  # the fetch tool's own parser: no disagreement on odd URLs

        host = httpx.URL(url).raw_host.decode("ascii")
    except Exception:
        return None
    return host.lower().rstrip(".") or None


def _domain_matches(domain: str, host: str | None) -> bool:
    if host is None:
        return False
    try:
        domain = domain.strip().lower().rstrip(".").encode("idna").decode("ascii")
    except UnicodeError:
        return False
    return host == domain or host.endswith("." + domain)


def _render_args(args: Mapping[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _generic_matches(pattern: str, args: Mapping[str, Any]) -> bool:
    keyed = re.fullmatch(r"([A-Za-z_][\w-]*)=(.*)", pattern, re.S)
    if keyed and keyed.group(1) in args:
        value = args[keyed.group(1)]
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return fnmatch.fnmatchcase(text, keyed.group(2))
    return fnmatch.fnmatchcase(_render_args(args), pattern)


# -- the policy ------------------------------------------------------------------


class Policy:
    """Decides whether a call may run, asking a person when the settings say so.

    ``settings`` is the merged settings mapping (its ``policy`` key is read).
    ``workdir`` is the workspace root path rules are relative to. ``store``
    (a :class:`mdagent.store.Store`) holds rate-limit windows; one is opened
    on first need when omitted. ``interactive``: a person can be asked on a
    terminal. ``approve_all`` (``--yes``) approves every question.
    ``prompt(tool_name, args) -> "yes" | "no" | "always"`` asks the question
    (default: :func:`mdagent.approval.ask_terminal`). ``project_layer`` is the
    ``.agents`` folder whose ``config/agent.yaml`` "always" writes to.

    ``policy.paths`` (extra workspace roots) is not read here: file tools
    confine paths with :func:`mdagent.workspace.roots_from`, its one reader.
    """

    def __init__(
        self,
        settings: Mapping[str, Any],
        *,
        workdir: str | os.PathLike[str],
        store: Any = None,
        interactive: bool,
        approve_all: bool = False,
        prompt: Prompt | None = None,
        project_layer: Path | None = None,
    ) -> None:
        section = (settings or {}).get("policy") or {}
        if not isinstance(section, Mapping):
            raise ConfigError("policy: expected a mapping")
        self.mode = str(section.get("mode") or "ask")
        if self.mode not in MODES:
            raise ConfigError(f"policy.mode: {self.mode!r} is not one of {', '.join(MODES)}")
        self.allow = list(parse_rules(section.get("allow"), "policy.allow"))
        self.deny = parse_rules(section.get("deny"), "policy.deny")
        self.workdir = Path(workdir)
        self.interactive = interactive
        self.approve_all = approve_all
        self.project_layer = Path(project_layer) if project_layer is not None else None
        self._prompt = prompt
        self._store = store
        # One question at a time; the agent may run calls concurrently, and a
        # call waiting for the prompt must see an "always" given meanwhile.
        self._asking = threading.Lock()
        self._store_lock = threading.Lock()
        self._always: set[str] = set()

    # -- the verdict -------------------------------------------------------------

    def check(self, tool: Any, args: Mapping[str, Any], ctx: ToolContext) -> Decision:
        """The decision for one call of ``tool`` with (validated) ``args``.

        Deny rules first, for everyone. A person's call then runs
        (``approved_by="person"``). A model's call goes by ``mode``: ``full``
        runs everything; ``allowlist`` and ``deny`` run only what an allow
        rule covers and never ask; ``ask`` runs ``safe`` tools and what an
        allow rule covers, and asks for the rest and for every tool declared
        ``approval: true``. An allowed call then passes the tool's rate limit.
        """
        args = dict(args or {})
        names = tool_names(tool)
        workdir = str(getattr(ctx, "workdir", None) or self.workdir)
        view = self._view(tool.name, args)
        denied = self._denied_by(names, tool.name, args, workdir, view)
        if denied is not None:
            rule, what = denied
            shown = f" ({_shorten(what)})" if what else ""
            return Decision(False, f"denied by policy rule `{rule}`{shown}", code="DENIED")
        if getattr(ctx, "caller", "person") == "person":
            decision = Decision(True, approved_by="person")
        else:
            decision = self._model_decision(tool, args, ctx, names, workdir, view)
        if decision.allowed:
            return self._rate_limited(tool) or decision
        return decision

    def _model_decision(
        self,
        tool: Any,
        args: dict[str, Any],
        ctx: Any,
        names: tuple[str, ...],
        workdir: str,
        view: Any,
    ) -> Decision:
        if self.mode == "full":
            return Decision(True, approved_by="mode:full")
        if self._call_key(tool.name, args) in self._always:
            return Decision(True, approved_by="always")
        rules = self._allowed_by(names, tool.name, args, workdir, view)
        if self.mode in ("allowlist", "deny"):
            if rules:
                return Decision(True, approved_by="rule:" + ",".join(r.text for r in rules))
            suggestion = self.rule_for(tool, args, workdir)
            return Decision(
                False,
                f"{tool.name} is not allowed: policy.mode is {self.mode} and no rule in "
                f"policy.allow covers this call; add `{suggestion}` to policy.allow in "
                f"{self._settings_file()}",
                code="DENIED",
                extra={"allow_rule": suggestion},
            )
        needs_question = bool(tool.meta.get("approval"))
        if not needs_question:
            if rules:
                return Decision(True, approved_by="rule:" + ",".join(r.text for r in rules))
            if str(tool.meta.get("security") or "moderate") == "safe":
                return Decision(True, approved_by="safe")
        return self._ask(tool, args, ctx, self.rule_for(tool, args, workdir), needs_question)

    def _ask(
        self, tool: Any, args: dict[str, Any], ctx: Any, suggestion: str, declared: bool
    ) -> Decision:
        if self.approve_all or getattr(ctx, "approve_all", False):
            return Decision(True, approved_by="--yes")
        if declared:
            how = "rerun with --yes (it is declared `approval: true`, so allow rules do not skip the question)"
        else:
            how = (
                f"rerun with --yes or add `{suggestion}` to policy.allow in {self._settings_file()}"
            )
        refused = Decision(
            False,
            f"{tool.name} needs approval: no terminal to ask on; {how}",
            code="DENIED",
            extra={"allow_rule": suggestion, "needs_approval": True},
        )
        if not self.interactive:
            return refused
        key = self._call_key(tool.name, args)
        with self._asking:
            if key in self._always:  # answered while this call waited its turn
                return Decision(True, approved_by="always")
            try:
                answer = self._ask_person(tool.name, args, getattr(ctx, "cancel", None))
            except EOFError as closed:
                if "closed" in str(closed):  # a person was there and ended the input
                    return Decision(
                        False,
                        f"the user closed the approval prompt for this {tool.name} call; "
                        "do not retry it",
                        code="DENIED",
                    )
                return refused
            if answer == "always":
                self._always.add(key)
                self._remember(suggestion)
                return Decision(True, approved_by="always")
            if answer == "yes":
                return Decision(True, approved_by="user")
        return Decision(
            False, f"the user declined this {tool.name} call; do not retry it", code="DENIED"
        )

    def _ask_person(self, tool_name: str, args: Mapping[str, Any], cancel: Any = None) -> str:
        prompt = self._prompt
        if prompt is None:
            from mdagent.approval import ask_terminal

            # The call's cancel event: Ctrl-C must drop the question at once,
            # not leave it waiting to swallow the person's next line.
            answer = ask_terminal(tool_name, args, cancel=cancel)
        else:
            answer = prompt(tool_name, args)
        answer = str(answer).strip().lower()
        return {"y": "yes", "a": "always", "n": "no"}.get(answer, answer)

    def _remember(self, rule_text: str) -> None:
        """Allow ``rule_text`` for the rest of the process and in the project layer."""
        rule = Rule.parse(rule_text)
        if rule not in self.allow:
            self.allow.append(rule)
        if self.project_layer is None:
            print(
                f"agent: note: no project layer (.agents/); `{rule_text}` is allowed "
                "for this session only",
                file=sys.stderr,
            )
            return
        from mdagent.approval import add_allow_rule

        target = self.project_layer / "config" / "agent.yaml"
        try:
            add_allow_rule(target, rule_text)
        except (OSError, ConfigError) as exc:
            log.warning("could not save allow rule %r: %s", rule_text, exc)
            print(
                f"agent: warning: could not add `{rule_text}` to {target}: {exc}; "
                "allowed for this session only",
                file=sys.stderr,
            )

    def _rate_limited(self, tool: Any) -> Decision | None:
        limit = tool.meta.get("rate_limit")
        if not isinstance(limit, Mapping) or not limit.get("max_calls"):
            return None
        max_calls = int(limit["max_calls"])
        window_ms = int(limit.get("window_ms") or 60_000)
        try:
            wait_ms = self.store.rate_limit(tool.name, max_calls, window_ms)
        except Exception as exc:  # a throttle, not a guard: a broken state dir must not stop work
            log.warning("rate limit of %s not checked: %s", tool.name, exc)
            return None
        if wait_ms is None:
            return None
        return Decision(
            False,
            f"rate limited: {tool.name} allows {max_calls} calls per {window_ms} ms; "
            f"retry in {wait_ms} ms",
            code="RATE_LIMITED",
            extra={"retryable": True, "retry_after_ms": wait_ms},
        )

    @property
    def store(self) -> Any:
        """The store holding rate-limit windows (opened on first use)."""
        with self._store_lock:
            if self._store is None:
                from mdagent.store import Store

                self._store = Store()
            return self._store

    # -- matching ----------------------------------------------------------------

    @staticmethod
    def _view(tool_name: str, args: Mapping[str, Any]) -> Any:
        if tool_name in EXEC_TOOLS:
            return _ExecView(str(args.get("command", "")))
        return None

    def _denied_by(
        self, names: tuple[str, ...], real: str, args: Mapping[str, Any], workdir: str, view: Any
    ) -> tuple[Rule, str] | None:
        rules = [r for r in self.deny if r.names(names)]
        if not rules:
            return None
        for rule in rules:
            if rule.pattern is None:
                return rule, ""
        if real in EXEC_TOOLS:
            for candidate in view.deny_candidates():
                for rule in rules:
                    if _command_matches(candidate, rule.pattern):
                        return rule, candidate
            return None
        if real in FILE_TOOLS:
            path = str(args.get("path") or ".")
            views = _path_views(path, workdir)
            for rule in rules:
                if any(_path_matches(rule.pattern, v, deny=True) for v in views):
                    return rule, path
            return None
        for rule in rules:
            if self._other_matches(real, rule.pattern, args):
                return rule, ""
        return None

    def _allowed_by(
        self, names: tuple[str, ...], real: str, args: Mapping[str, Any], workdir: str, view: Any
    ) -> list[Rule]:
        """The allow rules that together cover the call (empty: not covered)."""
        rules = [r for r in self.allow if r.names(names)]
        bare = [r for r in rules if r.pattern is None]
        if bare:
            return bare[:1]
        if not rules:
            return []
        if real in EXEC_TOOLS:
            return _exec_allowed(rules, view)
        if real in FILE_TOOLS:
            views = _path_views(str(args.get("path") or "."), workdir)
            for rule in rules:
                if all(_path_matches(rule.pattern, v, deny=False) for v in views):
                    return [rule]
            return []
        for rule in rules:
            if self._other_matches(real, rule.pattern, args):
                return [rule]
        return []

    @staticmethod
    def _other_matches(real: str, pattern: str, args: Mapping[str, Any]) -> bool:
        if real in URL_TOOLS:
            url = str(args.get("url", ""))
            if pattern.startswith("domain:"):
                return _domain_matches(pattern[len("domain:") :], _url_host(url))
            return fnmatch.fnmatchcase(url, pattern)
        return _generic_matches(pattern, args)

    # -- suggestions ---------------------------------------------------------------

    def rule_for(self, tool: Any, args: Mapping[str, Any], workdir: str | None = None) -> str:
        """The allow rule that would cover exactly this call ("always" saves it).

        exec: the exact command line; file tools: the path (workspace-relative
        when inside); fetch: the URL's domain; other tools: the tool name.
        """
        name = tool.name
        if name in EXEC_TOOLS:
            return f"{name}({escape_glob(str(args.get('command', '')).strip())})"
        if name in FILE_TOOLS and args.get("path"):
            view = _path_views(str(args["path"]), str(workdir or self.workdir))[0]
            shown = view.relative if view.relative is not None else view.absolute
            return f"{name}({escape_path_glob(shown)})"
        if name in URL_TOOLS:
            host = _url_host(str(args.get("url", "")))
            if host:
                return f"{name}(domain:{host})"
        return name

    def _settings_file(self) -> str:
        if self.project_layer is None:
            return str(SETTINGS_FILE)
        target = self.project_layer / "config" / "agent.yaml"
        try:
            return str(target.relative_to(self.workdir))
        except ValueError:
            return str(target)

    @staticmethod
    def _call_key(tool_name: str, args: Mapping[str, Any]) -> str:
        return tool_name + "\x00" + _render_args(args)


def _exec_allowed(rules: list[Rule], view: _ExecView) -> list[Rule]:
    if not view.parsed:
        return []  # unparseable: only a person may approve it
    for rule in rules:
        # A wildcard-free rule may name a whole compound command (what
        # "always" saves); a glob may not: `git status*` would swallow `; rm`.
        if _is_literal_glob(rule.pattern) and fnmatch.fnmatchcase(view.whole, rule.pattern):
            return [rule]
    if not view.segments:
        return []
    used: list[Rule] = []
    for seg in view.segments:
        rule = next((r for r in rules if _command_matches(seg.text, r.pattern)), None)
        if rule is None:
            return []
        if rule not in used:
            used.append(rule)
    return used


def _command_matches(text: str, pattern: str) -> bool:
    """fnmatch, plus Claude Code's ``prefix:*``: the prefix alone or followed by a space."""
    if pattern.endswith(":*"):
        prefix = pattern[:-2]
        return fnmatch.fnmatchcase(text, prefix) or fnmatch.fnmatchcase(text, prefix + " *")
    return fnmatch.fnmatchcase(text, pattern)


def _shorten(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
