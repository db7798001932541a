"""Which tool calls may run: deny/ask/allow rules, modes, approval and rate limits.

The policy decides and never asks: a call is allowed, refused, or put as a
:class:`Question` to the :class:`Approver` the runtime handed in (a person
at the terminal, a script in tests, or nobody, which refuses). It prints
nothing, reads no input and edits no file: remembering an "always" answer
is the approver's (through :mod:`mdagent.declarations.edit`).

Settings (``agent.yaml``)::

    policy:
      mode: ask            # ask | accept-edits | plan | allowlist | deny | full
      allow: ["exec(git *)", "read_file", "write_file(src/**)"]
      ask:   [{rule: "exec(git push*)", reason: "others see what you push"}]
      deny:  ["exec(rm -rf *)", "read_file(**/.env)", "fetch(domain:evil.example)"]
      inline_eval: ask     # ask | allow: may allow patterns cover `python -c ...`?

Deny rules, then ask rules, then allow rules: an ``ask`` match asks a person
(in every mode; no terminal: refused; ``--yes`` answers it) even where an
allow rule covers the call. Any rule may be a mapping ``{rule: ..., reason:
...}``; the reason is shown to the person and returned to the model with the
refusal. With ``inline_eval: ask`` (the default) an allow pattern never
covers an interpreter running code from its command line
(:mod:`mdagent.safety.shell.interpreters`: ``python3 -c``, ``node -e``...).

A rule is ``tool`` (every call of that tool) or ``tool(pattern)``. ``tool`` is
the tool's real name or one of its aliases (``bash(git *)`` is an ``exec``
rule), ignoring case, and may be a glob (``mcp_*``). What the pattern is
matched against depends on the tool:

- ``exec``: an fnmatch glob on each simple command of the command line (see
  :mod:`mdagent.safety.shell.shellparse`). An allow rule covers a command only when every
  segment is covered by some allow rule; a rule without wildcards also covers
  the exact whole command line (a person may write one; "always" suggests
  prefix rules instead, see :meth:`Policy.suggest_rules`). Claude Code's
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
a command they cannot see through counts as matching).

The permission mode in force is decided in one place, :func:`effective_mode`
(``--mode``, ``/mode``, then ``policy.mode``): ``plan`` refuses every tool
that could change something outside the read-only sandbox (:func:`plan_refusal`,
for every caller) and the runtime runs every command in that sandbox
(:func:`run_settings`); ``accept-edits`` approves the file tools' writes
inside the workspace. No mode lifts a deny rule, a protected file or the
sandbox.

Who is asking matters (``ctx.caller``): a command a person typed runs as
typed, only deny rules (and rate limits) apply. For a model (``"model"``,
``"mcp"``, anything but ``"person"``), see :meth:`Policy.check`.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from mdagent.core.calls import Decision, ToolContext
from mdagent.core.catalog import ALIASES, EXEC_TOOLS, FILE_TOOLS, READ_TOOLS, URL_TOOLS, WRITE_TOOLS
from mdagent.core.defaults import PROJECT_DIR, settings_path
from mdagent.core.errors import ConfigError
from mdagent.core.globs import gitignore_regex
from mdagent.core.records import Record

MODES = ("ask", "accept-edits", "plan", "allowlist", "deny", "full")
#: The modes a person cycles through in the session (Shift+Tab), in order.
CYCLE = ("ask", "accept-edits", "plan", "full")

Prompt = Callable[[str, Mapping[str, Any]], str]


# -- rules ---------------------------------------------------------------------


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

    ``sources`` is :attr:`mdagent.registry.registry.Registry.sources`, highest layer
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


# -- what a call looks like to the rules -----------------------------------------


class _ExecView:
    """A command line as the rules see it: the whole string and its segments.

    ``unchecked`` says why deny rules cannot see everything the command runs
    (it cannot be parsed, a program is named at run time, a wrapper option is
    unknown); the command then counts as matching every deny rule on exec.
    """

    def __init__(self, command: str, segments: list[Any] | None = None) -> None:
        from mdagent.safety.shell.shellparse import Unparseable, parse

        self.whole = command.strip()
        self.segments: list[Any] | None = segments
        self.unchecked: str | None = None
        if segments is None:
            try:
                self.segments = parse(command)
            except Unparseable as exc:
                self.unchecked = f"could not be checked: {exc}"
                return
        reasons = (s.unchecked for s in self.segments or () if s.unchecked)
        self.unchecked = next((f"could not be checked: {r}" for r in reasons), None)

    @property
    def parsed(self) -> bool:
        return self.segments is not None

    def placed(self, workdir: str, cwd: str) -> _ExecView:
        """This view for a command run in ``cwd``: git pointed at another
        repository than the workspace's (``git -C src/evil``, ``--git-dir``)
        runs that repository's configuration, so its segment is neither
        coverable by an allow pattern nor seen through by deny rules.

        Worked out on every call, never cached: the folders may change
        between two calls.
        """
        from mdagent.safety.shell.programs import foreign_repository

        moved = changed = False
        segments = []
        # Every folder the line may be in by now (a `cd` may fail, or sit in a
        # branch not taken: the folders before it stay possible); None: unknown.
        folders: set[str] | None = {cwd}
        for seg in self.segments or ():
            # A wrapper's folder (`env -C src git -C x`) is a change of folder too.
            why = foreign_repository(seg.core, workdir, cwd, moved or bool(seg.chdirs))
            git = seg.core[:1] and seg.core[0].rsplit("/", 1)[-1] == "git"
            if not why and git:
                why = _git_moved_elsewhere(workdir, None if seg.chdirs else folders)
            if why and not seg.unchecked:
                seg = replace(seg, dynamic=seg.dynamic or why, unchecked=why)
                changed = True
            segments.append(seg)
            # A later relative folder cannot be placed after a change of folder.
            moved = moved or bool(seg.chdirs) or seg.core[:1] in (("cd",), ("pushd",), ("popd",))
            folders = _folders_after(seg, folders, self.whole)
        return _ExecView(self.whole, segments) if changed else self

    def deny_candidates(self) -> list[str]:
        """Every string a deny rule is tried on.

        Per segment: as written, with quotes removed, and each program a
        wrapper runs (``sudo nice rm x``, ``nice rm x``, ``rm x``), also by its
        basename (``/bin/rm x`` is ``rm x`` too). No guessing at an
        unparseable command: :attr:`unchecked` covers it.
        """
        out = [self.whole, " ".join(self.whole.split())]
        for seg in self.segments or ():
            out += segment_candidates(seg)
        return list(dict.fromkeys(out))


_CD_OPTIONS = {"-P", "-L", "-e", "-@", "--"}


def _folders_after(seg: Any, folders: set[str] | None, whole: str) -> set[str] | None:
    """The folders the line may be in after ``seg`` (see ``_ExecView.placed``).

    Only a ``cd``/``pushd`` to a plain literal folder is followed; anything
    else that changes folder (``popd``, ``cd -``, ``cd`` home, a glob, a
    variable, ``CDPATH``) makes the folder unknown (None).
    """
    if folders is None or not seg.core or seg.core[0] not in ("cd", "pushd", "popd"):
        return folders
    targets = [w for w in seg.core[1:] if w not in _CD_OPTIONS]
    if seg.core[0] == "popd" or len(targets) != 1:
        return None
    target = targets[0]
    relative_cdpath = "CDPATH" in whole or os.environ.get("CDPATH")
    if (
        target == "-"
        or re.search(r"[*?[$`~{\\]", target)
        or (relative_cdpath and not target.startswith(("/", "./", "../")))
    ):
        return None
    return folders | {os.path.normpath(os.path.join(f, target)) for f in folders}


def _git_moved_elsewhere(workdir: str, folders: set[str] | None) -> str | None:
    """Why ``git`` run in ``folders`` (where the call starts, and where the line's
    changes of folder may lead) may discover a repository other than the
    workspace's (``cd sub && git st`` into a nested or bare one), or None.

    Git's own ``safe.bareRepository=explicit`` for a model's commands is a
    variable a command can unset (``unset GIT_CONFIG_COUNT``); this does not
    depend on it.
    """
    from mdagent.safety.shell.programs import _repository

    if folders is None:
        return "`git` after a change of folder: which repository it uses is unknown"
    own = _repository(workdir)
    for folder in sorted(folders):
        # No repository at all is the same as the workspace's none.
        if not os.path.isdir(folder) or _repository(folder) != own:
            return (
                f"`git` in {os.path.relpath(folder, workdir)} uses a repository other than "
                "the workspace's, whose configuration may run any program"
            )
    return None


def segment_candidates(seg: Any) -> list[str]:
    """The strings a deny or ask rule is tried on for one segment (see ``deny_candidates``)."""
    out = [seg.text, seg.plain]
    for stage in (*seg.stages, seg.core):
        if stage:
            program = stage[0].rsplit("/", 1)[-1]
            out += [" ".join(stage), " ".join((program, *stage[1:]))]
    out += _later_programs(seg.core)
    return list(dict.fromkeys(out))


# An option whose value is a command line: `script -qc 'rm x'`, `su -c …`, `--command=…`.
_COMMAND_OPTION = re.compile(r"-[A-Za-z]*c|--command")


def _later_programs(words: Any) -> list[str]:
    """Each later word of ``words`` read as a program, the rest as its arguments.

    Fail closed: a program the wrapper table does not know (``setpriv``,
    ``strace``, ``script -c``, ``ld.so``) may run its arguments, so a deny
    or ask rule also meets the program it names anywhere in the command
    (``strace rm x`` is also ``rm x``; ``git rm x`` too). A word holding a
    whole command line (``script -qc 'rm x'``) is read as that line.
    """
    out = []
    for start in range(1, len(words or ())):
        if " " in words[start].strip() and not _COMMAND_OPTION.fullmatch(words[start - 1]):
            continue  # text, not a command line (`echo 'rm -rf is dangerous'`, `-m 'rm x'`)
        head = " ".join(words[start:]).strip()
        if not head or head.startswith("-"):
            continue
        program, _, rest = head.partition(" ")
        out += [head, f"{program.rsplit('/', 1)[-1]} {rest}".rstrip()]
        # `rm$IFS` runs `rm`: an expansion may only add to the name or split it off.
        stem = re.split(r"[$`]", program, maxsplit=1)[0]
        if stem != program and stem:
            out.append(f"{stem.rsplit('/', 1)[-1]} {rest}".rstrip())
    return out


@lru_cache(maxsize=64)
def _exec_view(command: str) -> _ExecView:
    # One parse per command: the deny rules judge a call twice (before the
    # hooks, then with the ask/allow rules), and it is only read.
    return _ExecView(command)


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

    The glob itself is gitignore's (:func:`mdagent.core.globs.gitignore_regex`);
    a pattern with a slash (or ``anchored``) starts at the path's first
    component, one without matches at any depth.
    """
    if pattern.startswith("/") and not pattern.strip("/"):
        return re.compile(".*", re.S)  # `/`: the filesystem's root, which holds every path
    anchored = anchored or "/" in pattern.rstrip("/")
    regex = gitignore_regex(pattern.rstrip("/").lstrip("/"))
    if not anchored:
        regex = "(?:.*/)?" + regex
    return re.compile(regex, re.S | (re.I if ignore_case else 0))


def _path_matches(pattern: str, view: _PathView, *, deny: bool) -> bool:
    """Whether ``pattern`` matches the file (or a folder holding it).

    An allow rule that is anchored (``./x``, ``/x``, ``~/x``) and literal (no
    wildcard, no trailing ``/``) names exactly that path: ``./notes`` covers
    the file ``notes``, not what a folder of that name holds, now or later
    (what "always" saves). ``./docs/`` or ``./docs/**`` covers a folder's
    files; other patterns match a folder's files too, as in gitignore, and
    so do deny rules always.
    """
    anchored = pattern in (".", "~") or pattern.startswith(("./", "/", "~/"))
    literal = not (pattern.endswith("/") or re.search(r"[*?[]", re.sub(r"\\.", "", pattern)))
    exact = not deny and anchored and literal
    if pattern.startswith("~/") or pattern == "~":
        pattern = os.path.expanduser(pattern)
    # `./x` is anchored at the workspace root (what "always" saves): never `sub/x`.
    rooted = pattern == "." or pattern.startswith("./")
    while pattern.startswith("./"):
        pattern = pattern[2:].lstrip("/")
    if pattern.startswith("/"):
        target = view.absolute.lstrip("/")
        regex = _path_regex(pattern, deny, True)
    elif rooted:
        if view.relative is None:
            return False
        if pattern in ("", "."):
            return view.relative == "." or not exact  # the root (and all inside)
        target = view.relative
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
    if exact:
        return bool(regex.fullmatch(target))
    return any(regex.fullmatch("/".join(parts[:n])) for n in range(len(parts), 0, -1))


def _url_host(url: str) -> str | None:
    """The host ``fetch`` would connect to, normalised (see :func:`_normal_host`).

    Parsed as httpx parses it (the fetch tool's own parser: no disagreement
    on odd URLs); a URL httpx refuses is read by ``urllib`` instead, so a
    deny rule still sees the host a more lenient client would connect to.
    """
    try:
        from mdagent.core.httpclient import load  # httpx without its command line

        host = load().URL(url).raw_host.decode("ascii")
    except Exception:
        from urllib.parse import urlsplit

        try:
            host = urlsplit(url).hostname or ""
        except ValueError:
            return None
    return _normal_host(host)


def _normal_host(host: str) -> str | None:
    """One spelling per host: lower case, no trailing dot, IP addresses in canonical form.

    Every form a resolver accepts for an IPv4 address (``127.1``, ``0x7f.1``,
    ``2130706433``, ``0177.0.0.1``) becomes its dotted quad, an IPv6 address
    its compressed form, an IPv4-mapped one (``::ffff:127.0.0.1``) the IPv4
    address; percent-escapes are decoded first.
    """
    import ipaddress
    import socket
    from urllib.parse import unquote

    host = unquote(host).strip().lower().strip("[]").rstrip(".")
    if not host:
        return None
    if ":" in host:
        # A zone id (`fe80::1%eth0`, `[::1%25lo]`) picks an interface, not
        # another address: `fetch(domain:::1)` covers `[::1%25lo]`.
        host = host.split("%", 1)[0]
        try:
            address = ipaddress.IPv6Address(host)
        except ValueError:
            return host
        mapped = address.ipv4_mapped
        return str(mapped) if mapped is not None else str(address)
    # inet_aton reads the short, hex and octal forms getaddrinfo accepts; it
    # also ignores anything after a blank, so only digits, dots and hex count.
    if re.fullmatch(r"[0-9a-fx.]+", host) and re.match(r"[0-9]", host):
        try:
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            return host
    return host


#: Public for the MCP server, which reads a request's Host and Origin with
#: the spelling rules the fetch rules use.
normal_host = _normal_host


def _domain_matches(domain: str, host: str | None) -> bool:
    """Whether ``host`` (from :func:`_url_host`) is ``domain`` or a subdomain of it.

    An IP address matches only itself, in any spelling.
    """
    if host is None:
        return False
    # A leading dot (`.example.org`, as cookies write it) means the same domain
    # and its subdomains; kept, it would match no host and a deny rule nothing.
    try:
        domain = domain.strip().lower().strip(".").encode("idna").decode("ascii")
    except UnicodeError:
        domain = domain.strip().lower().strip(".")
    domain = _normal_host(domain) or ""
    if not domain:
        return False
    if host == domain:
        return True
    if _is_ip(host) or _is_ip(domain):
        return False
    return host.endswith("." + domain)


def _is_ip(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


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

ALLOW, ASK, DENY = "allow", "ask", "deny"
INLINE_EVAL = ("ask", "allow")


@dataclass(frozen=True)
class SegmentVerdict:
    """What the rules say about one segment of an ``exec`` command on its own."""

    text: str
    decision: str
    why: str
    rule: Rule | None = None


@dataclass(frozen=True)
class Verdict:
    """What the rules say about one call, before anyone is asked (:meth:`Policy.evaluate`).

    ``decision`` is ``allow``, ``ask`` or ``deny``; ``why`` says what decided
    in a few words; ``rules`` are the rules that decided (none: a mode, the
    tool's security level, a hook). For ``ask``, ``asks`` says what wants the
    question: ``rule`` (``policy.ask``), ``hook``, ``protected`` (the agent's
    own configuration: only a person at a terminal may answer), ``approval``
    (declared ``approval: true``) or ``unmatched`` (no allow rule covers the
    call). ``matched`` is what a deny or ask rule matched (a segment, a
    path); ``suggestion`` the allow rule that would cover exactly this call;
    ``segments`` each segment's own verdict (``exec``, see
    :meth:`Policy.explain`).
    """

    decision: str
    why: str
    rules: tuple[Rule, ...] = ()
    asks: str | None = None
    matched: str = ""
    suggestion: str | None = None
    protected: str | None = None
    hook: Any = None
    approved_by: str | None = None
    segments: tuple[SegmentVerdict, ...] = ()
    by_mode: bool = False  # refused by the permission mode itself (plan)

    @property
    def rule(self) -> Rule | None:
        """The (first) rule that decided, if a rule did."""
        return self.rules[0] if self.rules else None

    @property
    def reason(self) -> str | None:
        """The deciding rule's or hook's reason, shown to the person and the model."""
        if self.hook is not None:
            return getattr(self.hook, "reason", None) or None
        return self.rule.reason if self.rule is not None else None


class Question(Record):
    """What the policy asks a person about one call it may not decide alone.

    ``note`` is the line under the call saying why it is asked (None: the
    usual question); ``always`` says "always" may be answered (it saves
    ``suggestion``, the allow rule covering exactly this call); ``protected``:
    the call would change the agent's own configuration, so every value and
    every diff line is shown whole; ``workdir`` is where a file change is
    worked out from; ``cancel`` is the call's cancel event (Ctrl-C drops the
    question at once). ``session`` says "yes for this session" may be
    answered (the same call, the same arguments, then runs unasked until the
    session ends); ``rules`` are the allow rules "always" suggests saving
    (:meth:`Policy.suggest_rules`), which the person may edit.
    """

    tool: str
    args: dict[str, Any]
    workdir: str
    note: str | None = None
    always: bool = True
    protected: bool = False
    suggestion: str | None = None
    cancel: Any = None
    session: bool = False
    rules: tuple[str, ...] = ()


#: What a person may answer (:class:`Answer` ``kind``), and the short forms.
ANSWER_KINDS = {
    "y": "yes",
    "yes": "yes",
    "s": "session",
    "session": "session",
    "t": "tell",
    "tell": "tell",
    "n": "no",
    "no": "no",
    "a": "always",
    "always": "always",
}


class Answer(Record):
    """A person's answer to a :class:`Question`, with what goes with it.

    ``kind`` is ``yes`` (this call), ``session`` (this call, and the same
    call again until the session ends: nothing is written), ``always``
    (save ``rules``, default the question's suggestion, in ``layer``:
    ``user`` or ``project``, None the approver's default), ``tell`` (no,
    and ``reason`` goes to the model) or ``no``.
    """

    kind: str
    reason: str = ""
    rules: tuple[str, ...] = ()
    layer: str | None = None

    @classmethod
    def read(cls, answer: Any) -> Answer:
        """An approver's answer as an :class:`Answer`: one already, its fields
        in a mapping, or a word (``y``, ``session``...); anything else is ``no``."""
        if isinstance(answer, Mapping):
            fields = {k: answer[k] for k in cls._fields if k in answer}
            answer = cls(**{"kind": "no", **fields})._replace(
                rules=tuple(answer.get("rules") or ())
            )
        if isinstance(answer, Answer):
            return answer._replace(kind=ANSWER_KINDS.get(str(answer.kind).strip().lower(), "no"))
        return cls(ANSWER_KINDS.get(str(answer).strip().lower(), "no"))


class Approver(Protocol):
    """Who answers the policy's questions; the runtime hands one in.

    ``interactive``: a person can be asked at all (False: every question is
    refused with the reason and how to allow the call). :meth:`ask` returns
    an :class:`Answer` or one of its words (``"yes"``, ``"session"``,
    ``"tell"``, ``"no"``, ``"always"``, any case, ``y``/``s``/``t``/``n``/``a``
    too), or raises ``EOFError`` when nobody can answer after all
    (``"closed"`` in its message: a person was there and ended the input).
    :meth:`remember` keeps an "always" answer's rule beyond this process (in
    the settings of ``layer``: ``user`` or ``project``; None: the approver's
    default) and tells the person what it did. See :mod:`mdagent.runtime.approvers`.
    """

    interactive: bool

    def ask(self, question: Question) -> str | Answer: ...

    def remember(self, rule: str, layer: str | None = None) -> None: ...


class Nobody:
    """No one to ask: every question is refused (the default approver;
    :class:`mdagent.runtime.approvers.RefusingApprover` is this one)."""

    interactive = False

    def ask(self, question: Question) -> str:
        raise EOFError("no terminal to ask on")

    def remember(self, rule: str, layer: str | None = None) -> None:
        return None


class Policy:
    """Decides whether a call may run: allow, deny, or a question for its approver.

    ``settings`` is the merged settings mapping (its ``policy`` key is read).
    ``workdir`` is the workspace root path rules are relative to. ``store``
    holds rate-limit windows (``rate_limit(tool, max_calls, window_ms)`` ->
    milliseconds to wait or None: :class:`mdagent.store.store.Store`); without one,
    a call of a rate-limited tool is refused, never let through unchecked.
    ``approver`` answers the questions an "ask" verdict puts
    (:class:`Approver`; None: nobody, every question refused); the policy
    itself never prints, reads input or edits a file. ``approve_all``
    (``--yes``) approves every question but those about the agent's own
    configuration. ``project_layer`` is the ``.agents`` folder whose
    ``config/agent.yaml`` messages point to (and whose files are protected).
    ``sources`` (:attr:`mdagent.registry.registry.Registry.sources`) says where each
    rule was written; rules carry it as :attr:`Rule.source`. ``session``
    holds the calls answered "yes for this session" (:meth:`_call_key`: the
    tool and its exact arguments); the session owns it, so it outlives a
    policy rebuilt on reload or ``/mode`` and ends with the session.

    ``policy.paths`` (extra workspace roots) is not read here: file tools
    confine paths with :func:`mdagent.safety.workspace.roots_from`, its one reader.
    """

    def __init__(
        self,
        settings: Mapping[str, Any],
        *,
        workdir: str | os.PathLike[str],
        store: Any = None,
        approver: Approver | None = None,
        approve_all: bool = False,
        project_layer: Path | None = None,
        sources: Iterable[Mapping[str, Any]] = (),
        session: set[str] | None = None,
    ) -> None:
        section = (settings or {}).get("policy") or {}
        if not isinstance(section, Mapping):
            raise ConfigError("policy: expected a mapping")
        self.mode = str(section.get("mode") or "ask")
        if self.mode not in MODES:
            raise ConfigError(f"policy.mode: {self.mode!r} is not one of {', '.join(MODES)}")
        self.inline_eval = str(section.get("inline_eval") or "ask")
        if self.inline_eval not in INLINE_EVAL:
            raise ConfigError(f"policy.inline_eval: {self.inline_eval!r} is not ask or allow")
        sources = list(sources)

        def rules(key: str) -> tuple[Rule, ...]:
            return parse_rules(section.get(key), f"policy.{key}", rule_sources(sources, key))

        self.allow = list(rules("allow"))
        self.ask = rules("ask")
        self.deny = rules("deny")
        self.workdir = Path(workdir)
        self.approver: Approver = approver if approver is not None else Nobody()
        self.approve_all = approve_all
        self.project_layer = Path(project_layer) if project_layer is not None else None
        self.store = store
        # One question at a time; the agent may run calls concurrently, and a
        # call waiting for the question must see an "always" given meanwhile.
        self._asking = threading.Lock()
        self._always: set[str] = set()
        self.session_approved: set[str] = session if session is not None else set()

    # -- the verdict -------------------------------------------------------------

    def screen(self, tool: Any, args: Mapping[str, Any], ctx: Any) -> Decision | None:
        """The deny rules' refusal of this call, or None; they apply to every caller.

        The toolbox calls this before the before hooks, and again on
        arguments a hook rewrote.
        """
        args = dict(args or {})
        view = self._view(tool.name, args, ctx)
        denied = self._matching(
            self.deny, tool_names(tool), tool.name, args, self._workdir(ctx), view
        )
        if denied is not None:
            return self._denial(*denied)
        if self.mode == "plan" and plan_refusal(tool):
            return self._refusal(tool, self._plan_verdict(tool))
        return None

    def check(
        self, tool: Any, args: Mapping[str, Any], ctx: ToolContext, hook: Any = None
    ) -> Decision:
        """The decision for one call of ``tool`` with (validated) ``args``.

        :meth:`evaluate` says what the rules want; "ask" is then put to a
        person at a terminal, answered by ``--yes`` (never for the agent's own
        configuration), or refused when nobody can answer. ``hook`` is what
        the before hooks said (:class:`mdagent.tools.toolbox.HookDecision`). An
        allowed call then passes the tool's rate limit.
        """
        verdict = self.evaluate(tool, args, ctx, hook=hook)
        if verdict.decision == DENY:
            decision = self._refusal(tool, verdict)
        elif verdict.decision == ALLOW:
            decision = Decision(True, approved_by=verdict.approved_by)
        else:
            decision = self._put_question(tool, dict(args or {}), ctx, verdict)
        if decision.allowed:
            return self._rate_limited(tool) or decision
        return decision

    def evaluate(
        self, tool: Any, args: Mapping[str, Any], ctx: Any = None, *, hook: Any = None
    ) -> Verdict:
        """What the rules say about a call, asking nobody and running nothing.

        Deny rules first, for everyone. A person's call then runs as typed
        (``ctx.caller == "person"``; no ``ctx``: a model's call). A model's
        call that would change the agent's own configuration
        (:mod:`mdagent.safety.protected`) asks, whatever the mode, the rules, a hook
        or "always" say (``allowlist`` and ``deny`` still refuse what they
        would refuse anyway). Then a before hook's ``allow`` or ``ask``
        decides; then ``policy.ask`` rules ask, in every mode; then the mode:
        ``full`` runs everything; ``allowlist`` and ``deny`` run only what an
        allow rule covers and never ask; ``ask`` runs ``safe`` tools and what
        an allow rule covers, and asks for the rest and for every tool
        declared ``approval: true``.
        """
        args = dict(args or {})
        names = tool_names(tool)
        workdir = self._workdir(ctx)
        view = self._view(tool.name, args, ctx)
        denied = self._matching(self.deny, names, tool.name, args, workdir, view)
        if denied is not None:
            rule, what = denied
            return Verdict(DENY, f"denied by policy rule `{rule}`", (rule,), matched=what)
        if self.mode == "plan" and plan_refusal(tool):
            return self._plan_verdict(tool)
        if ctx is not None and getattr(ctx, "caller", None) == "person":
            return Verdict(ALLOW, "a person's command runs as typed", approved_by="person")
        target, held = self._protected_target(tool.name, args, ctx, workdir)
        if target is not None:
            if self.mode in ("allowlist", "deny"):
                base = self._by_rules(tool, args, names, workdir, view)
                if base.decision == DENY:
                    return base
            why = f"it would change {target}, part of the agent's own configuration"
            if held:  # the sandbox would refuse the write: no question, the reason
                why += ", which the sandbox keeps read-only for a model's commands"
                return Verdict(DENY, why, protected=target)
            return Verdict(ASK, why, asks="protected", protected=target)
        decided = getattr(hook, "decision", None)
        if decided == ALLOW:
            return Verdict(
                ALLOW, f"allowed by hook {hook.hook}", hook=hook, approved_by=f"hook:{hook.hook}"
            )
        if decided == ASK:
            return Verdict(ASK, f"hook {hook.hook} asks for it", asks="hook", hook=hook)
        verdict = self._by_rules(tool, args, names, workdir, view)
        if (
            verdict.decision == ASK
            and verdict.asks in SCOPED_ASKS
            and self._call_key(tool.name, args) in self.session_approved
        ):
            # Only where the very same question would be put again: an ask
            # rule, a hook, the agent's own files or a stricter mode still decide.
            return Verdict(ALLOW, 'answered "yes for this session"', approved_by="session")
        return verdict

    @staticmethod
    def _plan_verdict(tool: Any) -> Verdict:
        return Verdict(DENY, str(plan_refusal(tool)), by_mode=True)

    def explain(self, tool: Any, args: Mapping[str, Any], ctx: Any = None) -> Verdict:
        """:meth:`evaluate`, plus each segment's own verdict for ``exec`` (``agent policy check``)."""
        verdict = self.evaluate(tool, args, ctx)
        if tool.name in EXEC_TOOLS:
            view = self._view(tool.name, dict(args or {}), ctx)
            names = tool_names(tool)
            segments = tuple(self._segment_verdict(s, names) for s in view.segments or ())
            verdict = replace(verdict, segments=segments)
        return verdict

    def _by_rules(
        self, tool: Any, args: dict[str, Any], names: tuple[str, ...], workdir: str, view: Any
    ) -> Verdict:
        """A model's call after the deny rules: ask rules, mode, "always", allow rules."""
        asked = self._matching(self.ask, names, tool.name, args, workdir, view)
        if asked is not None:
            rule, what = asked
            return Verdict(ASK, f"policy rule `{rule}` asks for it", (rule,), "rule", what)
        if self.mode == "full":
            return Verdict(ALLOW, "policy.mode is full", approved_by="mode:full")
        if self._call_key(tool.name, args) in self._always:
            return Verdict(ALLOW, 'answered "always" in this session', approved_by="always")
        if (
            self.mode == "accept-edits"
            and tool.name in WRITE_TOOLS
            and self._in_workspace(args, workdir)
        ):
            return Verdict(
                ALLOW,
                "policy.mode is accept-edits: a file edit inside the workspace",
                approved_by="mode:accept-edits",
            )
        rules = tuple(self._allowed_by(names, tool.name, args, workdir, view))
        allowed = Verdict(
            ALLOW,
            "allowed by policy rule " + ", ".join(f"`{r}`" for r in rules),
            rules,
            approved_by="rule:" + ",".join(r.text for r in rules),
        )
        suggestion = self.rule_for(tool, args, workdir)
        if self.mode in ("allowlist", "deny"):
            if rules:
                return allowed
            why = f"policy.mode is {self.mode} and no rule in policy.allow covers it"
            return Verdict(DENY, why, suggestion=suggestion)
        if tool.meta.get("approval"):
            why = f"{tool.name} is declared `approval: true`"
            return Verdict(ASK, why, asks="approval", suggestion=suggestion)
        if rules:
            return allowed
        if str(tool.meta.get("security") or "moderate") == "safe":
            return Verdict(ALLOW, f"{tool.name} is a safe tool", approved_by="safe")
        why = "no rule in policy.allow covers it"
        blocker = self._uncoverable(view)
        return Verdict(
            ASK, f"{why}: {blocker}" if blocker else why, asks="unmatched", suggestion=suggestion
        )

    @staticmethod
    def _in_workspace(args: Mapping[str, Any], workdir: str) -> bool:
        """Whether a file tool's ``path`` lies inside the workspace itself (not ``policy.paths``)."""
        from mdagent.core.errors import PolicyDenied
        from mdagent.safety.workspace import confine

        try:
            confine(str(args.get("path") or "."), workdir)
        except PolicyDenied:
            return False
        return True

    def _segment_verdict(self, seg: Any, names: tuple[str, ...]) -> SegmentVerdict:
        """One segment as if it were the whole command (deny, ask, mode, allow)."""
        candidates = segment_candidates(seg)
        for decision, pool in ((DENY, self.deny), (ASK, self.ask)):
            rules = [r for r in pool if r.names(names)]
            for rule in rules:
                if rule.pattern is None or any(
                    _command_matches(c, rule.pattern) for c in candidates
                ):
                    return SegmentVerdict(seg.text, decision, f"policy rule `{rule}`", rule)
            if rules and seg.unchecked:
                why = f"could not be checked ({seg.unchecked})"
                return SegmentVerdict(seg.text, decision, why, rules[0])
        if self.mode == "full":
            return SegmentVerdict(seg.text, ALLOW, "policy.mode is full")
        rules = [r for r in self.allow if r.names(names)]
        bare = next((r for r in rules if r.pattern is None), None)
        if bare is not None:
            return SegmentVerdict(seg.text, ALLOW, f"policy rule `{bare}`", bare)
        blocker = self._segment_blocker(seg)
        if blocker is None:
            for rule in rules:
                if _command_matches(seg.text, rule.pattern):
                    return SegmentVerdict(seg.text, ALLOW, f"policy rule `{rule}`", rule)
        fallback = DENY if self.mode in ("allowlist", "deny") else ASK
        return SegmentVerdict(seg.text, fallback, blocker or "no rule in policy.allow covers it")

    def _segment_blocker(self, seg: Any) -> str | None:
        """Why no allow pattern may cover ``seg`` (None: a pattern may)."""
        if seg.dynamic:
            return seg.dynamic
        if self.inline_eval == "ask":
            from mdagent.safety.shell.interpreters import inline_code, inline_environment

            inline = inline_code(seg.core) or inline_environment(seg.argv, seg.core)
            if inline:
                return f"`{inline}` runs inline code, which allow rules do not cover (policy.inline_eval: ask)"
        return None

    def _uncoverable(self, view: Any) -> str | None:
        """Why an allow pattern could not cover this exec command, if that is why."""
        if view is None:
            return None
        if not view.parsed:
            return view.unchecked
        return next(filter(None, map(self._segment_blocker, view.segments or ())), None)

    # -- acting on it ------------------------------------------------------------

    def _denial(self, rule: Rule, what: str) -> Decision:
        shown = f" ({_shorten(what)})" if what else ""
        reason = f": {rule.reason}" if rule.reason else ""
        extra = {"rule": rule.text, **({"reason": rule.reason} if rule.reason else {})}
        return Decision(
            False, f"denied by policy rule `{rule}`{shown}{reason}", code="DENIED", extra=extra
        )

    def _refusal(self, tool: Any, verdict: Verdict) -> Decision:
        if verdict.by_mode:
            return Decision(False, verdict.why, code="DENIED", extra={"mode": self.mode})
        if verdict.protected is not None:  # a write the sandbox would refuse anyway
            return Decision(
                False,
                f"{tool.name} would change {verdict.protected}, part of the agent's own "
                "configuration, which the sandbox keeps read-only for a model's commands "
                "(write_file and edit_file can change it, with a person's approval at a terminal)",
                code="DENIED",
                extra={"protected": verdict.protected},
            )
        if verdict.rule is not None:
            return self._denial(verdict.rule, verdict.matched)
        return Decision(
            False,
            f"{tool.name} is not allowed: policy.mode is {self.mode} and no rule in "
            f"policy.allow covers this call; add `{verdict.suggestion}` to policy.allow in "
            f"{self._settings_file()}",
            code="DENIED",
            extra={"allow_rule": verdict.suggestion},
        )

    def _put_question(
        self, tool: Any, args: dict[str, Any], ctx: Any, verdict: Verdict
    ) -> Decision:
        """An "ask" verdict, answered: by ``--yes``, a person, or nobody (refused).

        The decision carries how long the call waited for the answer
        (``waited_s``), which is not its run time.
        """
        if verdict.asks == "protected":
            return self._ask_protected(tool, args, ctx, verdict.protected or "")
        if self.approve_all or getattr(ctx, "approve_all", False):
            return Decision(True, approved_by="--yes")
        refused = Decision(
            False, self._no_terminal(tool, verdict), code="DENIED", extra=self._asked_extra(verdict)
        )
        if not self.approver.interactive:
            return refused
        # "always" saves an allow rule and "session" remembers the call: no use
        # where an ask rule or a hook asks (they want a person every time).
        scoped = verdict.asks in SCOPED_ASKS
        key = self._call_key(tool.name, args)
        started = time.perf_counter()
        with self._asking:
            # Answered while this call waited its turn.
            if scoped and key in self._always:
                return Decision(True, approved_by="always")
            if scoped and key in self.session_approved:
                return Decision(True, approved_by="session")
            rules = self.suggest_rules(tool, args, self._workdir(ctx)) if scoped else ()
            question = self._question_for(tool, args, ctx, verdict.suggestion)
            question = question._replace(
                always=scoped and bool(rules),
                session=scoped,
                rules=rules,
                note=self._note(verdict),
            )
            answer = self._answer(question, refused)
            if isinstance(answer, Answer):
                answer = self._act_on(tool.name, key, question, answer)
        return answer._replace(waited_s=time.perf_counter() - started)

    def _act_on(self, tool_name: str, key: str, question: Question, answer: Answer) -> Decision:
        """The decision a person's answer makes; "always" and "session" remembered."""
        if answer.kind == "session" and question.session:
            self.session_approved.add(key)
            return Decision(True, approved_by="session")
        if answer.kind == "always" and question.always:
            self._always.add(key)
            for text in answer.rules or question.rules:
                try:
                    Rule.parse(text)
                except ConfigError:  # the approver checks what a person typed; never saved broken
                    continue
                self._allow_for_this_process(text)
                self.approver.remember(text, answer.layer)
            return Decision(True, approved_by="always")
        if answer.kind in ("yes", "always", "session"):  # a scope not offered: this call only
            return Decision(True, approved_by="user")
        if answer.kind == "tell" and answer.reason.strip():
            reason = " ".join(answer.reason.split())
            return Decision(
                False,
                f"the user declined this {tool_name} call and says: {reason}",
                code="DENIED",
                extra={"user_reason": reason},
            )
        return _declined(tool_name)

    def _no_terminal(self, tool: Any, verdict: Verdict) -> str:
        """Why the call is refused when nobody can be asked, and how to allow it."""
        reason = f": {verdict.reason}" if verdict.reason else ""
        if verdict.asks == "rule":
            return (
                f"{tool.name} needs approval: policy rule `{verdict.rule}` asks for it{reason}; "
                "no terminal to ask on; rerun with --yes (allow rules do not cover a call an "
                "ask rule matches)"
            )
        if verdict.asks == "hook":
            return (
                f"{tool.name} needs approval: hook {verdict.hook.hook} asks for it{reason}; "
                "no terminal to ask on; rerun with --yes"
            )
        if verdict.asks == "approval":
            how = "rerun with --yes (it is declared `approval: true`, so allow rules do not skip the question)"
        else:
            how = f"rerun with --yes or add `{verdict.suggestion}` to policy.allow in {self._settings_file()}"
        blocker = verdict.why.partition(": ")[2] if verdict.asks == "unmatched" else ""
        detail = f" ({blocker})" if blocker else ""
        return f"{tool.name} needs approval{detail}: no terminal to ask on; {how}"

    @staticmethod
    def _asked_extra(verdict: Verdict) -> dict[str, Any]:
        extra: dict[str, Any] = {"needs_approval": True}
        if verdict.asks in ("unmatched", "approval"):
            extra["allow_rule"] = verdict.suggestion
        if verdict.asks == "rule" and verdict.rule is not None:
            extra["rule"] = verdict.rule.text
        if verdict.reason:
            extra["reason"] = verdict.reason
        return extra

    @staticmethod
    def _note(verdict: Verdict) -> str | None:
        """The line under the question saying why it is asked (None: the usual question)."""
        reason = f": {verdict.reason}" if verdict.reason else ""
        if verdict.asks == "rule":
            return f"Asked because of policy rule `{verdict.rule}`{reason}"
        if verdict.asks == "hook":
            return f"Asked because hook {verdict.hook.hook} asks{reason}"
        return None

    def _ask_protected(self, tool: Any, args: dict[str, Any], ctx: Any, target: str) -> Decision:
        """A model's call that would change ``target``, a file of the agent's own policy.

        Only a person at a terminal may let it run, one call at a time: no
        allow rule, mode, hook, "always" or ``--yes`` covers it.
        """
        refused = Decision(
            False,
            f"{tool.name} would change {target}, part of the agent's own configuration: "
            "a model may do that only with a person's approval at a terminal "
            '(allow rules, policy.mode, hooks, "always" and --yes do not cover it)',
            code="DENIED",
            extra={"protected": target, "needs_approval": True},
        )
        if not self.approver.interactive:
            return refused
        note = f"This changes {target}, part of the agent's own configuration."
        question = self._question_for(tool, args, ctx, None)
        question = question._replace(always=False, note=note, protected=True)
        started = time.perf_counter()
        with self._asking:
            answer = self._answer(question, refused)
        if isinstance(answer, Answer):
            # Neither "always" nor "session" is offered (nor kept) for these: this call only.
            answer = self._act_on(tool.name, "", question, answer)
        return answer._replace(waited_s=time.perf_counter() - started)

    def _question_for(
        self, tool: Any, args: dict[str, Any], ctx: Any, suggestion: str | None
    ) -> Question:
        return Question(
            tool.name,
            args,
            self._workdir(ctx),
            suggestion=suggestion,
            cancel=getattr(ctx, "cancel", None),
        )

    def _answer(self, question: Question, refused: Decision) -> Answer | Decision:
        """The approver's :class:`Answer`, or the decision when nobody could answer."""
        try:
            answer = Answer.read(self.approver.ask(question))
        except EOFError as closed:
            if "closed" in str(closed):  # a person was there and ended the input
                return Decision(
                    False,
                    f"the user closed the approval prompt for this {question.tool} call; "
                    "do not retry it",
                    code="DENIED",
                )
            return refused
        return answer

    def _protected_target(
        self, real: str, args: Mapping[str, Any], ctx: Any, workdir: str
    ) -> tuple[str | None, bool]:
        """What protected file a model's call would change (see :mod:`mdagent.safety.protected`),
        and whether a namespace sandbox holds it read-only (a plain write to refuse).

        A command such a sandbox runs is judged only on what the kernel does
        not hold (:func:`mdagent.safety.namespaces.held_places`); file tools, which
        write from the agent itself, always on everything.
        """
        if real not in WRITE_TOOLS and real not in EXEC_TOOLS:
            return None, False
        protected = self._protected_files(ctx, workdir)
        if real in WRITE_TOOLS:
            return protected.file_target(str(args.get("path") or "."), workdir), False
        cwd = workdir
        if args.get("cwd"):
            cwd = os.path.join(workdir, os.path.expanduser(str(args["cwd"])))
        env = getattr(ctx, "env", None)
        command = str(args.get("command", ""))
        from mdagent.safety.namespaces import held_places

        places = held_places(ctx)
        if places is not None:
            protected = protected.held_by_kernel(places)
            refused = protected.kernel_refusal(command, cwd, env)
            if refused is not None:
                return refused, True
        return protected.exec_target(command, cwd, env), False

    def protected_files(self, ctx: Any) -> Any:
        """The :class:`mdagent.safety.protected.Protected` of ``ctx``'s workspace (cached per registry):
        what the guard judges, and what a namespace sandbox binds read-only."""
        return self._protected_files(ctx, self._workdir(ctx))

    def _protected_files(self, ctx: Any, workdir: str) -> Any:
        from mdagent.safety.protectedfiles import protected_files

        registry = getattr(ctx, "registry", None)
        # An untrusted workspace's view drops its hooks and handlers, but the
        # files they name stay protected: a script rewritten now would run
        # once the person trusts the folder. Protecting more only tightens.
        source = getattr(registry, "compiled", None) or registry
        key = (id(registry), workdir)
        cache = self.__dict__.setdefault("_protected_cache", {})
        if key not in cache:
            settings = getattr(source, "settings", None) if source is not registry else None
            cache[key] = protected_files(
                workdir=workdir,
                project_layer=self.project_layer,
                layers=getattr(registry, "layers", ()) or (),
                settings=settings
                or getattr(ctx, "settings", None)
                or getattr(registry, "settings", None),
                tools=getattr(source, "tools", {}).values() if source is not None else (),
            )
        return cache[key]

    def _allow_for_this_process(self, rule_text: str) -> None:
        """An "always" answer's rule, allowed from now on (the approver keeps it beyond)."""
        rule = Rule.parse(rule_text)
        if rule not in self.allow:
            self.allow.append(rule)

    def _rate_limited(self, tool: Any) -> Decision | None:
        limit = tool.meta.get("rate_limit")
        if not isinstance(limit, Mapping) or not limit.get("max_calls"):
            return None
        max_calls = int(limit["max_calls"])
        window_ms = int(limit.get("window_ms") or 60_000)
        try:
            if self.store is None:
                raise LookupError("no store of rate-limit windows was given")
            wait_ms = self.store.rate_limit(tool.name, max_calls, window_ms)
        except Exception as exc:  # a limit that cannot be checked must not switch itself off
            return Decision(
                False,
                f"not run: the rate limit of {tool.name} cannot be checked: {exc}",
                code="UNRECORDED",
            )
        if wait_ms is None:
            return None
        return Decision(
            False,
            f"rate limited: {tool.name} allows {max_calls} calls per {window_ms} ms; "
            f"retry in {wait_ms} ms",
            code="RATE_LIMITED",
            extra={"retryable": True, "retry_after_ms": wait_ms},
        )

    # -- matching ----------------------------------------------------------------

    def _view(self, tool_name: str, args: Mapping[str, Any], ctx: Any = None) -> Any:
        if tool_name not in EXEC_TOOLS:
            return None
        view = _exec_view(str(args.get("command", "")))
        workdir = base = self._workdir(ctx)
        if getattr(ctx, "cwd", None) and getattr(ctx, "caller", None) == "person":
            from mdagent.safety.workspace import base_for

            base = str(base_for(ctx))  # a person's command starts where it was typed
        cwd = os.path.join(base, os.path.expanduser(str(args["cwd"]))) if args.get("cwd") else base
        return view.placed(workdir, cwd)

    def _workdir(self, ctx: Any) -> str:
        return str(getattr(ctx, "workdir", None) or self.workdir)

    @staticmethod
    def _matching(
        pool: Iterable[Rule],
        names: tuple[str, ...],
        real: str,
        args: Mapping[str, Any],
        workdir: str,
        view: Any,
    ) -> tuple[Rule, str] | None:
        """The first deny (or ask) rule of ``pool`` the call matches, and what it matched.

        These rules restrict, so they look hard: every segment of a command
        and every spelling of a path; a command they cannot see through
        counts as matching.
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
                    if _command_matches(candidate, rule.pattern):
                        return rule, candidate
            if view.unchecked:
                # Rules exist but cannot see what this command runs: fail closed.
                return rules[0], view.unchecked
            return None
        if real in FILE_TOOLS:
            path = str(args.get("path") or ".")
            views = _path_views(path, workdir)
            for rule in rules:
                if any(_path_matches(rule.pattern, v, deny=True) for v in views):
                    return rule, path
            return None
        for rule in rules:
            if Policy._other_matches(real, rule.pattern, args):
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
            return _exec_allowed(rules, view, self._segment_blocker)
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
        """The allow rule that would cover exactly this call (refusals name it;
        "always" suggests it for tools other than exec, :meth:`suggest_rules`).

        exec: the exact command line; file tools: the path, anchored at the
        workspace root when inside (``write_file(./agent.yaml)``, never
        ``sub/agent.yaml``), absolute when outside; either names exactly that
        path, not what a folder of that name holds (see :func:`_path_matches`);
        fetch: the URL's domain; other tools: the tool name.
        """
        name = tool.name
        if name in EXEC_TOOLS:
            return f"{name}({escape_glob(str(args.get('command', '')).strip())})"
        if name in FILE_TOOLS and args.get("path"):
            view = _path_views(str(args["path"]), str(workdir or self.workdir))[0]
            if view.relative is None:
                shown = escape_path_glob(view.absolute)
            elif view.relative == ".":
                shown = "."
            else:
                # Anchored: `write_file(agent.yaml)` would match at any depth.
                shown = "./" + escape_path_glob(view.relative)
            return f"{name}({shown})"
        if name in URL_TOOLS:
            host = _url_host(str(args.get("url", "")))
            if host:
                return f"{name}(domain:{host})"
        return name

    def suggest_rules(
        self, tool: Any, args: Mapping[str, Any], workdir: str | None = None
    ) -> tuple[str, ...]:
        """The allow rules an "always" answer suggests saving (the person may edit them).

        ``exec``: a prefix rule for each part of the command line that no
        allow rule covers yet: the program and its subcommand, if it has
        one (``exec(git status:*)`` for ``ls -1 && git status --short`` when
        ``ls`` is allowed), never the whole literal line. A part no prefix
        fits (a redirection, an assignment first) is suggested as written;
        a part no pattern may cover (``$x``, inline code) leaves nothing to
        suggest, since no saved rule would spare the question. Other tools:
        :meth:`rule_for`.
        """
        if tool.name not in EXEC_TOOLS:
            return (self.rule_for(tool, args, workdir),)
        view = _exec_view(str(args.get("command", "")))
        if not view.parsed or not view.segments:
            return ()
        allowing = [r for r in self.allow if r.names(tool_names(tool)) and r.pattern is not None]
        suggested: list[str] = []
        for seg in view.segments:
            if self._segment_blocker(seg):
                return ()
            if any(_command_matches(seg.text, r.pattern) for r in allowing):
                continue
            rule = f"{tool.name}({_prefix_pattern(seg.text)})"
            if rule not in suggested:
                suggested.append(rule)
        return tuple(suggested)

    def _settings_file(self) -> str:
        if self.project_layer is None:
            return str(settings_path(PROJECT_DIR))
        target = settings_path(self.project_layer)
        try:
            return str(target.relative_to(self.workdir))
        except ValueError:
            return str(target)

    @staticmethod
    def _call_key(tool_name: str, args: Mapping[str, Any]) -> str:
        return tool_name + "\x00" + _render_args(args)


def _exec_allowed(
    rules: list[Rule], view: _ExecView, blocker: Callable[[Any], str | None]
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
        rule = next((r for r in rules if _command_matches(seg.text, r.pattern)), None)
        if rule is None:
            return []
        if rule not in used:
            used.append(rule)
    return used


#: What asks for a person where "yes for this session" and "always" are offered:
#: no allow rule covers the call, or its tool is declared ``approval: true``.
SCOPED_ASKS = ("unmatched", "approval")

_PROGRAM = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_SUBCOMMAND = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def _prefix_pattern(text: str) -> str:
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
    return pattern if _command_matches(text, pattern) else escape_glob(text)


def _command_matches(text: str, pattern: str) -> bool:
    """fnmatch, plus Claude Code's ``prefix:*``: the prefix alone or followed by a space."""
    if pattern.endswith(":*"):
        prefix = pattern[:-2]
        return fnmatch.fnmatchcase(text, prefix) or fnmatch.fnmatchcase(text, prefix + " *")
    return fnmatch.fnmatchcase(text, pattern)


def _declined(tool_name: str) -> Decision:
    return Decision(
        False, f"the user declined this {tool_name} call; do not retry it", code="DENIED"
    )


def _shorten(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def withheld(settings: Mapping[str, Any]) -> Callable[[Any], bool]:
    """Whether a tool is never offered to a model: a deny rule without a pattern covers it,
    or plan mode would refuse it.

    ``deny: [fetch]`` refuses every call of ``fetch``; sending its
    description would only invite calls that cannot run.
    """
    section = (settings or {}).get("policy") or {}
    deny = section.get("deny") if isinstance(section, Mapping) else None
    bare = [r for r in parse_rules(deny, "policy.deny") if r.pattern is None]
    plan = effective_mode(settings).plan  # plan mode: the tools it would refuse are not offered
    return lambda tool: (
        any(r.names(tool_names(tool)) for r in bare) or bool(plan and plan_refusal(tool))
    )


# -- permission modes ------------------------------------------------------------


class ModeInForce(tuple):
    """``(mode, source)``: the permission mode a run is in, and what chose it.

    ``source`` is ``--mode`` (the command line), ``/mode`` (the session),
    ``policy.mode`` (the settings; ``agent config show`` names the layer) or
    ``default``.
    """

    __slots__ = ()

    def __new__(cls, mode: str, source: str) -> ModeInForce:
        return super().__new__(cls, (mode, source))

    @property
    def mode(self) -> str:
        return self[0]

    @property
    def source(self) -> str:
        return self[1]

    @property
    def plan(self) -> bool:
        """Whether nothing may change (checkpoints, for one, have nothing to keep)."""
        return self[0] == "plan"


def effective_mode(
    settings: Mapping[str, Any] | None, requested: str | None = None, source: str | None = None
) -> ModeInForce:
    """The permission mode in force: the one function that decides it.

    ``requested`` is the person's choice for this run or session (``--mode``,
    ``/mode``; ``source`` says which); without one, the settings'
    ``policy.mode`` (already judged by workspace trust: an untrusted folder's
    looser mode never gets here), else ``ask``. Everything that acts on the
    mode (the policy, the tools offered, the sandbox of ``plan``, the status
    bar, ``agent config show``, checkpoints) asks this function.
    A word that is not a mode is a :class:`ConfigError`.
    """
    if requested:
        if requested not in MODES:
            raise ConfigError(
                f"{source or '--mode'}: {requested!r} is not one of {', '.join(MODES)}"
            )
        return ModeInForce(requested, source or "--mode")
    section = (settings or {}).get("policy") or {}
    mode = section.get("mode") if isinstance(section, Mapping) else None
    if mode:
        return ModeInForce(str(mode), "policy.mode")
    return ModeInForce("ask", "default")


def plan_refusal(tool: Any) -> str | None:
    """Why ``tool`` may not run in plan mode (None: it may, its processes read-only).

    Kept: the built-in tools that only read, ``exec`` and the ``run:`` and
    ``shell:`` tools (their processes run in the read-only sandbox). Refused:
    ``write_file`` and ``edit_file``, and every tool the sandbox cannot hold
    (a Python ``handler:``, ``http:``, a ``tool:`` wrapper, an MCP server's
    tool), whatever it says it does: plan mode is enforced, not requested.
    """
    kind = tool.meta.get("kind") or "builtin"
    if kind == "builtin" and (tool.name in READ_TOOLS or tool.name in EXEC_TOOLS):
        return None
    if kind in ("run", "shell"):
        return None
    if kind == "builtin" and tool.name in WRITE_TOOLS:
        return f"{tool.name} is refused in plan mode: nothing changes (policy.mode is plan)"
    how = {
        "handler": "its Python handler: runs",
        "http": "its http: request goes",
        "tool": "the tool it wraps runs",
        "builtin": "it runs",
    }.get(kind, "its server (MCP) runs it")
    return (
        f"{tool.name} is refused in plan mode: {how} outside the read-only sandbox, "
        "so nothing could hold it to changing nothing"
    )


def run_settings(
    settings: Mapping[str, Any],
    *,
    mode: str | None = None,
    allow: Iterable[str] = (),
    deny: Iterable[str] = (),
) -> dict[str, Any]:
    """``settings`` with this run's own mode and rules (``--mode``, ``--allow``, ``--deny``).

    Nothing is written anywhere: the rules live as long as the process.
    In plan mode every command (a model's or a person's) runs in the
    read-only sandbox, required: where it cannot be applied, commands are
    refused rather than run unconfined.
    """
    section = dict(settings.get("policy") or {})
    if mode:
        section["mode"] = mode
    for key, extra in (("allow", list(allow)), ("deny", list(deny))):
        if extra:
            existing = section.get(key) or []
            existing = [existing] if isinstance(existing, str) else list(existing)
            section[key] = [*existing, *extra]
    out = {**settings, "policy": section}
    if str(section.get("mode") or "") == "plan":
        sandbox = settings.get("sandbox")
        sandbox = dict(sandbox) if isinstance(sandbox, Mapping) else {}
        out["sandbox"] = {**sandbox, "mode": "read-only", "required": True, "applies_to": "all"}
    return out
