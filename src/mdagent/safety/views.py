"""Views of a call, as the policy's rules see it: a command line, a path, a URL's host.

Pure: what a call's arguments name, worked out from the arguments and the
file system, with no rule and no decision (:mod:`mdagent.safety.rules`
matches rules against these views). A command line is its segments and
every spelling of each (:class:`ExecView`, :func:`segment_candidates`); a
path is the file as written and resolved (:func:`path_views`) matched by a
gitignore-style pattern (:func:`path_matches`); a URL is the host ``fetch``
would connect to, in one spelling (:func:`url_host`, :func:`normal_host`),
matched by ``domain:`` (:func:`domain_matches`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from mdagent.core.globs import gitignore_regex


class ExecView:
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

    def placed(self, workdir: str, cwd: str) -> ExecView:
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
        return ExecView(self.whole, segments) if changed else self

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
    """The folders the line may be in after ``seg`` (see ``ExecView.placed``).

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
def exec_view(command: str) -> ExecView:
    """The view of ``command``, parsed once (:meth:`ExecView.placed` places it per call)."""
    # One parse per command: the deny rules judge a call twice (before the
    # hooks, then with the ask/allow rules), and it is only read.
    return ExecView(command)


@dataclass(frozen=True)
class PathView:
    """One way of naming a file: absolute, and workspace-relative when inside."""

    absolute: str
    relative: str | None


def path_views(path: str, workdir: str) -> list[PathView]:
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
        views.append(PathView(Path(absolute).as_posix(), relative))
    return views


@lru_cache(maxsize=512)
def path_regex(pattern: str, ignore_case: bool, anchored: bool = False) -> re.Pattern[str]:
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


def path_matches(pattern: str, view: PathView, *, deny: bool) -> bool:
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
        regex = path_regex(pattern, deny, True)
    elif rooted:
        if view.relative is None:
            return False
        if pattern in ("", "."):
            return view.relative == "." or not exact  # the root (and all inside)
        target = view.relative
        regex = path_regex(pattern, deny, True)
    elif view.relative is not None:
        target = view.relative
        regex = path_regex(pattern, deny)
    elif deny:
        # Outside the workspace a relative rule can only mean "at any depth"
        # (`.env`, `**/.env`); trying it on the absolute path errs towards denying.
        target = view.absolute.lstrip("/")
        regex = path_regex(pattern, deny)
    else:
        return False
    parts = target.split("/")
    if exact:
        return bool(regex.fullmatch(target))
    return any(regex.fullmatch("/".join(parts[:n])) for n in range(len(parts), 0, -1))


def url_host(url: str) -> str | None:
    """The host ``fetch`` would connect to, normalised (see :func:`normal_host`).

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
    return normal_host(host)


def normal_host(host: str) -> str | None:
    """One spelling per host: lower case, no trailing dot, IP addresses in canonical form.

    Every form a resolver accepts for an IPv4 address (``127.1``, ``0x7f.1``,
    ``2130706433``, ``0177.0.0.1``) becomes its dotted quad, an IPv6 address
    its compressed form, an IPv4-mapped one (``::ffff:127.0.0.1``) the IPv4
    address; percent-escapes are decoded first. The MCP server reads a
    request's Host and Origin with it, as the fetch rules spell hosts.
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


def domain_matches(domain: str, host: str | None) -> bool:
    """Whether ``host`` (from :func:`url_host`) is ``domain`` or a subdomain of it.

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
    domain = normal_host(domain) or ""
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
