"""A prompt skill's body as the model reads it: arguments, live context, included files.

:func:`render` turns a SKILL.md body and the arguments it was given into the
prompt of the turn it starts (or the ``skill`` tool's result):

* ``$ARGUMENTS``, ``$N``, ``${SKILL_DIR}`` as before (:func:`mdagent.declarations.skillbody.substitute`),
  and the names of ``arguments:`` as ``$name`` / ``{name}``, bound from
  ``--name value``, ``--name=value`` or position, else their ``default``;
* ``@{path}`` inserts a file (or a folder's listing, ``.gitignore`` honoured),
  confined to the workspace and the skill's own folder, and refused where a
  ``read_file`` of it would be by a deny rule;
* ``` !`cmd` ``` runs ``cmd`` through the toolbox's ``exec`` tool as a call by
  whoever triggered the skill (the context handed in: a person, the model, an
  MCP client), so policy, sandbox, hooks, audit and timeout apply, and inserts
  its output. Arguments inside it are shell-quoted as in ``shell:`` templates,
  so what was typed stays one literal word.

What a command prints or a file holds is inserted after every substitution,
never substituted itself: a file holding ``$ARGUMENTS`` stays as written.

A skill not written in this project (the user layer, another agent's skill
folder, a skill the project's ``skills.lock`` lists as installed) shows its
commands and asks before running them the first time; the answer is kept in
the state dir per skill folder and bound to the digest of the whole folder
(:mod:`mdagent.safety.skillfolder`: every file, its mode, every link), so a change
to any file asks again and says which files changed. With no terminal the
question is a denial and nothing is kept. For an MCP client their commands
never run, with or without consent kept or ``--yes``: ``agent mcp serve``
never asks anyone.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdagent.core.errors import PolicyDenied, ToolFailed, UsageError
from mdagent.declarations.skills import LIVE_CONTEXT

if TYPE_CHECKING:
    from mdagent.core.calls import Result, ToolContext
    from mdagent.core.specs import Skill

#: What one command's output or one included file may add to the prompt.
MAX_INSERT = 20_000
#: At most this many entries of an included folder are listed.
MAX_LISTING = 200
#: The layers whose skills were written in this project or ship with mdagent.
OWN_LAYERS = frozenset({"project", "bundled", "builtin"})
CONSENT_FILE = "skill-consent.json"

LIVE = LIVE_CONTEXT
INCLUDE = re.compile(r"@\{((?:\$\{SKILL_DIR\}|\{baseDir\}|[^{}\n])+)\}")
# Placeholders inside a live-context command; any other brace is literal.
_COMMAND_TOKEN = re.compile(
    r"\$\{SKILL_DIR\}|\{baseDir\}|\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS\b|\{ARGUMENTS\}"
    r"|\$(\d+)(?!\d)|\{(\d+)\}|\$([A-Za-z_]\w*)|\{([A-Za-z_]\w*)\}|[{}]"
)
_HELD = re.compile(r"\x00(\d+)\x00")


# -- arguments ----------------------------------------------------------------------


def split_words(arguments: str) -> list[str]:
    """The words of an argument string (shell rules; plain blanks when it does not parse)."""
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


def bind_arguments(
    skill: Skill, words: list[str], *, strict: bool = True
) -> tuple[dict[str, str], list[str]]:
    """``(values of the named arguments, the words they did not take)``.

    ``--name value`` and ``--name=value`` set a declared name; the other
    words fill the names not set yet, in order; a name still unset takes its
    ``default``. ``strict``: a name with neither is a :class:`UsageError`
    (a person's ``/name``); otherwise it is empty (the model loading it).
    """
    names = list(skill.arguments)
    values: dict[str, str] = {}
    rest: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        key, eq, inline = word[2:].partition("=") if word.startswith("--") else ("", "", "")
        if key in names:
            if eq:
                values[key] = inline
            elif index + 1 < len(words):
                values[key] = words[index + 1]
                index += 1
            else:
                raise UsageError(f"/{skill.name}: --{key} needs a value\n{usage_line(skill)}")
        else:
            rest.append(word)
        index += 1
    leftover = []
    for word in rest:
        unset = next((n for n in names if n not in values), None)
        if unset is None:
            leftover.append(word)
        else:
            values[unset] = word
    for name in names:
        if name in values:
            continue
        if name in skill.argument_defaults:
            values[name] = skill.argument_defaults[name]
        elif strict:
            raise UsageError(f"/{skill.name}: missing argument: {name}\n{usage_line(skill)}")
        else:
            values[name] = ""
    return values, leftover


def usage_line(skill: Skill) -> str:
    """``usage: /name <hint>``: the ``argument-hint``, generated from ``arguments:`` if absent."""
    return f"usage: /{skill.name} {skill.argument_hint or '[text...]'}".rstrip()


def _named(text: str, values: Mapping[str, str]) -> str:
    """``$name`` and ``{name}`` of the declared arguments replaced by their values."""
    if not values:
        return text
    alternatives = "|".join(re.escape(n) for n in sorted(values, key=len, reverse=True))
    pattern = re.compile(rf"\$({alternatives})(?!\w)|\{{({alternatives})\}}")
    return pattern.sub(lambda m: values[m.group(1) or m.group(2)], text)


# -- rendering ----------------------------------------------------------------------


def render(
    skill: Skill,
    arguments: str | None,
    ctx: ToolContext,
    *,
    words: list[str] | None = None,
    strict: bool = True,
) -> str:
    """The prompt ``skill`` gives with ``arguments``, its commands run as ``ctx.caller``.

    ``ctx`` is the context of the call that triggered the skill: its
    toolbox runs the commands, its workdir and settings confine the
    includes. ``words``: the arguments as already-split words (from the
    shell). ``arguments`` None (the model loading the skill) leaves
    ``$ARGUMENTS`` and the argument names as written, for the model to read.
    Raises :class:`UsageError` for a missing argument (``strict``),
    :class:`ToolFailed` for a missing include and :class:`PolicyDenied` for
    one outside the workspace and the skill's folder, or one a ``read_file``
    deny rule refuses.
    """
    from mdagent.declarations.skillbody import read_body, substitute, with_skill_dir

    # A skill's body is written against the workspace, like the model's calls
    # it feeds: its commands run at the root even when a person typed /name in
    # a subfolder, so `!`cmd`` and `@{path}` name the same files.
    if getattr(ctx, "cwd", None) is not None:
        ctx = ctx.replace(cwd=None)
    try:
        body = read_body(skill.path).replace("\x00", "")
    except OSError as exc:
        raise ToolFailed(
            f"/{skill.name}: cannot read {skill.path}: {exc.strerror or exc}"
        ) from None
    source = skill.extra.get("interop") if isinstance(skill.extra, dict) else None
    if source is not None:
        from mdagent.declarations.interop import ONE_BASED, one_based

        if source in ONE_BASED:  # another agent's command: its $1 is the first argument
            body = one_based(body)
    if arguments is None:
        words, values = [], {}
    else:
        words = split_words(arguments) if words is None else list(words)
        values, _ = bind_arguments(skill, words, strict=strict)
    held: list[tuple[str, str]] = []

    def hold(kind: str) -> Callable[[re.Match[str]], str]:
        def keep(match: re.Match[str]) -> str:
            held.append((kind, match.group(1)))
            return f"\x00{len(held) - 1}\x00"

        return keep

    interpolate = _interpolation_on(ctx)
    text = LIVE.sub(hold("command"), body) if interpolate else body
    text = INCLUDE.sub(hold("include"), text)
    uses_names = bool(values) and (any(f"${n}" in body or f"{{{n}}}" in body for n in values))
    if arguments is None:
        text = with_skill_dir(text, skill.dir)
    else:
        text = substitute(text, arguments, skill.dir, append=not uses_names)
        text = _named(text, values)
    if not held:
        return text
    commands = [raw for kind, raw in held if kind == "command"]
    refusal = _consent(skill, commands, ctx) if commands else None
    inserts: list[str] = []
    for kind, raw in held:
        if kind == "include":
            inserts.append(include(skill, with_skill_dir(raw.strip(), skill.dir), ctx))
        elif refusal is not None:
            inserts.append(f"[`{raw}` not run: {refusal}]")
        else:
            inserts.append(run_command(skill, raw, words, values, ctx))
    return _HELD.sub(lambda m: inserts[int(m.group(1))], text)


def _interpolation_on(ctx: ToolContext) -> bool:
    from mdagent.core.defaults import setting

    return setting(ctx.settings, "skills", "shell_interpolation", True) is not False


# -- live context -------------------------------------------------------------------


def command_script(raw: str, skill: Skill, words: list[str], values: Mapping[str, str]) -> str:
    """The ``bash -c`` script of ``` !`raw` ```: every argument shell-quoted as one word.

    ``$ARGUMENTS`` / ``{ARGUMENTS}`` are all the words, ``{N}`` one
    (0-based), ``{name}`` a named argument and ``${SKILL_DIR}`` the skill's
    folder, each quoted for where it lands (``shell:`` template rules,
    :func:`mdagent.tools.templates.expand_shell`). ``$1``, ``$name`` and other
    braces stay as written, for the shell (``awk '{print $1}'``).
    """
    from mdagent.tools import templates

    slots: dict[str, Any] = {"ARGUMENTS": words, "SKILL_DIR": skill.dir}
    slots.update({f"_{i}": word for i, word in enumerate(words)})
    slots.update(values)
    known_positions = set()

    def token(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole in ("${SKILL_DIR}", "{baseDir}"):
            return "{SKILL_DIR}"
        if whole in ("$ARGUMENTS", "{ARGUMENTS}"):
            return "{ARGUMENTS}"
        index = match.group(1) or match.group(3)
        if index is not None:
            known_positions.add(f"_{int(index)}")
            return f"{{_{int(index)}}}"
        name = match.group(5)
        if name is not None and name in values:
            return f"{{{name}}}"
        return whole.replace("{", "{{").replace("}", "}}")

    template = _COMMAND_TOKEN.sub(token, raw)
    params = {name: {} for name in [*slots, *known_positions]}
    return templates.expand_shell(template, slots, params)


def run_command(
    skill: Skill, raw: str, words: list[str], values: Mapping[str, str], ctx: ToolContext
) -> str:
    """What ``` !`raw` ``` inserts: the output, or why it did not run or failed."""
    from mdagent.declarations.placeholders import TemplateError

    try:
        script = command_script(raw, skill, words, values)
    except TemplateError as err:
        return f"[`{raw}` not run: {err}]"
    if ctx.toolbox is None:
        return f"[`{raw}` not run: no tools here]"
    result = ctx.toolbox.run("exec", {"command": script}, ctx)
    return command_output(raw, result)


def command_output(raw: str, result: Result) -> str:
    """A command's result as prompt text: its output (capped), then how it failed."""
    data = result.data
    output = str(data.get("stdout") or "")
    if data.get("stderr"):
        output += ("\n" if output and not output.endswith("\n") else "") + str(data["stderr"])
    output = capped(output.rstrip("\n"))
    if result.ok:
        return output
    if data.get("code") == "DENIED" or "exit_code" not in data:
        why = str(result.error or "failed")
        return f"[`{raw}` not run: {why}]"
    status = f"exit status {data['exit_code']}"
    why = str(result.error or status)
    note = f"[`{raw}` failed: {why}]" if status in why else f"[`{raw}` failed: {why} ({status})]"
    return f"{output}\n{note}" if output else note


def capped(text: str, limit: int = MAX_INSERT) -> str:
    """``text``, or its first ``limit`` characters with a note of how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... cut: {len(text) - limit} of {len(text)} characters left out]"


# -- asking before a foreign skill's commands --------------------------------------


def live_commands(skill: Skill) -> list[str]:
    """The live-context commands of ``skill``'s body, as written (none when it cannot be read)."""
    from mdagent.declarations.skillbody import read_body

    try:
        return LIVE.findall(read_body(skill.path).replace("\x00", ""))
    except OSError:
        return []


def is_foreign(skill: Skill) -> bool:
    """Whether ``skill`` was not written in this project: another layer, or installed."""
    if skill.layer not in OWN_LAYERS:
        return True
    return skill.layer == "project" and installed(skill)


def installed(skill: Skill) -> bool:
    """Whether a ``skills.lock`` of the skill's layer lists it (when unsure: yes).

    The skill may sit in a group folder (``skills/vendor/thirdp/``) or have
    been moved since it was installed, so every folder above it named
    ``skills`` counts as a layer's skills folder, and its parent's lock is
    read. A lock entry names the skill when its key or ``renamed-from`` is
    the skill's name or folder name, or when its ``SKILL.md`` hash is this
    file's. An unreadable or malformed lock fails closed.
    """
    folder = Path(skill.path).parent
    names = {skill.name, folder.name}
    digest = _content_hash(skill.path)
    for above in folder.parents:
        if above.name != "skills":
            continue
        lock = above.parent / "skills.lock"
        try:
            text = lock.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return True  # fail closed: a lock we cannot read may list it
        if _listed(text, str(lock), names, digest):
            return True
    return False


def _listed(text: str, where: str, names: set[str], digest: str) -> bool:
    """Whether the lock ``text`` lists a skill called one of ``names`` or with this ``SKILL.md``."""
    try:
        from mdagent.core.yamlsource import load_yaml, plain

        data = plain(load_yaml(text, where))
    except Exception:  # a malformed lock: fail closed
        return True
    entries = data.get("skills", data) if isinstance(data, dict) else data
    if isinstance(entries, list):  # an older shape: a list of names or {name: ...}
        pairs = [(e.get("name"), e) if isinstance(e, dict) else (e, {}) for e in entries]
    elif isinstance(entries, dict):
        pairs = list(entries.items())
    else:  # empty: lists nothing; a shape we do not know: fail closed
        return entries is not None
    for key, entry in pairs:
        if key in names:
            return True
        if not isinstance(entry, dict):
            continue
        if entry.get("renamed-from") in names:
            return True
        files = entry.get("files")
        listed = files.get("SKILL.md") if isinstance(files, dict) else None
        if digest and isinstance(listed, str) and listed.removeprefix("x:") == digest:
            return True
    return False


_consent_lock = threading.Lock()


def _consent(skill: Skill, commands: list[str], ctx: ToolContext) -> str | None:
    """None when the commands may run; else why not (the prompt says so).

    The consent kept for a skill is bound to the digest of its whole folder
    (:func:`folder_state`): a ``status.txt`` the body runs, a script, a
    link changed since the answer all ask again, with what changed shown.
    A skill of a workspace the person has not trusted asks the same way.
    """
    foreign = is_foreign(skill)
    if not foreign and getattr(ctx, "trusted", True):
        return None
    if getattr(ctx, "caller", "person") == "mcp":
        # Before any consent kept or --yes: the client is another agent, and
        # `agent mcp serve` never asks anyone, so nobody could have agreed.
        # The same for a skill of a workspace the person has not trusted.
        origin = (
            "comes from outside this project" if foreign else "is in a folder you have not trusted"
        )
        return (
            f"skill {skill.name} ({skill.path}) {origin}, and its "
            "commands are never run for an MCP client (`agent mcp serve` never asks anyone); "
            f"run it with `agent /{skill.name}` in a terminal"
        )
    # Not foreign but unasked-for: a skill of a workspace the person has not trusted.
    origin = "comes from outside this project" if foreign else "is in a folder you have not trusted"
    with _consent_lock:  # one question at a time, and one answer for all
        files, unsure = folder_state(skill)
        kept = _read_consents().get(_consent_key(skill))
        before = kept.get("files") if isinstance(kept, dict) else None
        if files is not None and isinstance(before, dict) and before == files:
            return None
        if ctx.approve_all:
            return None  # --yes answers for this run; nothing is kept
        from mdagent.safety.skillfolder import changes, summary
        from mdagent.ui.approval import ask_terminal

        where = f"{skill.name} ({skill.path})"
        changed = ""
        if isinstance(before, dict):
            changed = summary(changes(before, files)) if files is not None else unsure
        nobody = _nobody_to_ask(ctx)
        if nobody:
            why = (
                f"its files changed since you allowed them ({changed}), so its commands need "
                "your approval again"
                if changed
                else "its commands need your approval the first time"
            )
            return (
                f"skill {where} {origin} and {why}; {nobody} "
                f"(run it once with `agent /{skill.name}` in a terminal, or with --yes)"
            )
        note = (
            f"It is not from this project: {skill.dir}"
            if foreign
            else f"This folder is not trusted (`agent trust`): {skill.dir}"
        )
        if changed:
            note += f"\nChanged since you allowed it: {changed}"
        if files is None:
            note += f"\nThis answer is not kept: {unsure}"
        try:
            answer = ask_terminal(
                f"skill {skill.name} runs these commands before the model sees its prompt",
                {"command": "\n".join(commands)},
                always=False,
                tell=False,
                note=note,
                cancel=ctx.cancel,
            )
        except EOFError:
            answer = "no"
        if answer != "yes":
            return f"you declined the commands of skill {where}"
        if files is not None:
            _remember(skill, files)
        return None


def folder_state(skill: Skill) -> tuple[dict[str, str] | None, str]:
    """``(manifest of the skill's folder, "")``, or ``(None, why it cannot be had)``.

    The manifest (:func:`mdagent.safety.skillfolder.manifest`) covers every file of
    the folder with its mode, and every link as a link. A folder past the
    manifest's limits or one that cannot be read has none: its consent
    cannot be bound to its content, so it is asked for every time.
    """
    from mdagent.safety.skillfolder import FolderError, manifest

    try:
        return manifest(skill.dir), ""
    except FolderError as err:
        return None, str(err)


def _nobody_to_ask(ctx: ToolContext) -> str | None:
    """Why nobody may be asked for consent here, or None when a person at a terminal may.

    A model's request is not put to anyone under a policy that does not
    ask; a person's ``/name`` asks on a terminal. (An MCP client's never
    gets this far: :func:`_consent` refuses it first.)
    """
    from mdagent.ui.approval import terminal_available

    caller = getattr(ctx, "caller", "person")
    policy = _policy_of(ctx)
    if caller != "person" and getattr(policy, "interactive", True) is False:
        return "there is no terminal to ask on"
    if not terminal_available():
        return "there is no terminal to ask on"
    return None


def _policy_of(ctx: ToolContext) -> Any:
    """The policy the calls of ``ctx`` are judged by (the toolbox's unless ``ctx`` has one)."""
    policy = getattr(ctx, "policy", None)
    if policy is None and ctx.toolbox is not None:
        policy = ctx.toolbox.policy
    return policy


def _content_hash(path: str) -> str:
    """The SHA-256 of one file (a lock entry names a moved skill by its SKILL.md's)."""
    import hashlib

    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return ""


def _consent_path() -> Path:
    from mdagent.core.layers import state_dir

    return state_dir() / CONSENT_FILE


def _consent_key(skill: Skill) -> str:
    """The kept answer's key: the real path of the skill's folder."""
    return "folder:" + os.path.realpath(skill.dir)


def _read_consents() -> dict[str, Any]:
    """The kept answers: ``folder:PATH -> {"sha256", "files"}`` (older entries ask again)."""
    try:
        data = json.loads(_consent_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _remember(skill: Skill, files: dict[str, str]) -> None:
    """Keep the answer (private file, replaced whole: a crash never leaves half of it).

    The folder's manifest is kept with it, so a later change can be shown
    file by file. Answers kept by an older mdagent, bound to ``SKILL.md``
    alone, are dropped: they covered less than a folder.
    """
    import tempfile

    from mdagent.safety.skillfolder import digest

    target = _consent_path()
    data = {k: v for k, v in _read_consents().items() if isinstance(v, dict)}
    data[_consent_key(skill)] = {"sha256": digest(files), "files": files}
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".consent-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
        os.replace(tmp, target)
    except OSError:
        pass  # not remembered: the next run asks again, which is safe


# -- file includes ------------------------------------------------------------------


def include(skill: Skill, path: str, ctx: ToolContext) -> str:
    """What ``@{path}`` inserts: the file's text or the folder's listing, capped."""
    from mdagent.safety.workspace import confine, display_path, open_entry, open_parent, roots_from

    root, extras = roots_from(ctx)
    roots = (*extras, Path(skill.dir).resolve())
    try:
        resolved = confine(path, root, roots)
    except PolicyDenied as exc:
        raise PolicyDenied(f"/{skill.name}: @{{{path}}}: {exc}") from None
    shown = display_path(resolved, root)
    refusal = _read_denied(path, ctx)
    if refusal:
        raise PolicyDenied(f"/{skill.name}: @{{{path}}}: {refusal}")
    try:
        with open_parent(resolved, root, roots) as (folder, name):
            fd = open_entry(folder, name, os.O_RDONLY | os.O_NONBLOCK, resolved)
    except PolicyDenied as exc:
        raise PolicyDenied(f"/{skill.name}: @{{{path}}}: {exc}") from None
    except (FileNotFoundError, NotADirectoryError):
        raise ToolFailed(f"/{skill.name}: @{{{path}}}: not found: {shown}") from None
    except OSError as exc:
        raise ToolFailed(f"/{skill.name}: @{{{path}}}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            return _listing(resolved, root)
        if not stat.S_ISREG(mode):
            raise ToolFailed(f"/{skill.name}: @{{{path}}}: not a regular file: {shown}")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            data = fh.read(MAX_INSERT * 4 + 1)
    finally:
        if fd >= 0:
            os.close(fd)
    if b"\0" in data[:8192]:
        raise ToolFailed(f"/{skill.name}: @{{{path}}}: binary file, not included: {shown}")
    text = data.decode("utf-8", "replace")
    more = len(data) > MAX_INSERT * 4
    text = capped(text.rstrip("\n"))
    if more and "[... cut" not in text:
        text += "\n[... cut: the file is longer]"
    return text


def _read_denied(path: str, ctx: ToolContext) -> str | None:
    """The deny rules' refusal of a ``read_file`` of ``path``, or None.

    An include is a read by whoever triggered the skill, so ``read_file``'s
    deny rules apply to it as written and with symlinks resolved (the
    policy judges both). Only the deny rules: nobody is asked from here.
    """
    policy = _policy_of(ctx)
    screen = getattr(policy, "screen", None)
    if screen is None:
        return None  # no policy, or one with no deny rules to apply
    tool: Any = ctx.toolbox.tool_for("read_file") if ctx.toolbox is not None else None
    if not hasattr(tool, "schema"):  # read_file not offered here: its rules still apply
        from types import SimpleNamespace

        tool = SimpleNamespace(name="read_file", aliases=())
    decision = screen(tool, {"path": path}, ctx)
    return None if decision is None else str(decision.reason or "denied by policy")


def _listing(folder: Path, root: Path) -> str:
    from mdagent.tools.builtins.search import walk_files

    files = []
    total = 0
    for file in walk_files(folder, root):
        total += 1
        if len(files) < MAX_LISTING:
            files.append(file.relative_to(folder).as_posix())
        elif total > MAX_LISTING * 10:
            break
    text = "\n".join(files)
    if total > len(files):
        text += f"\n[... {total - len(files)} more files not listed]"
    return text


# -- forked runs --------------------------------------------------------------------

#: session id -> how a skill loaded in that session's turn runs forked.
_forks: dict[str, Callable[[Skill, str, ToolContext], dict[str, Any]]] = {}


def register_fork(
    session_id: str | None, run: Callable[[Skill, str, ToolContext], dict[str, Any]]
) -> None:
    """Say how a ``context: fork`` skill the model loads in session ``session_id`` runs."""
    if session_id:
        _forks[session_id] = run


def fork_runner(
    session_id: str | None,
) -> Callable[[Skill, str, ToolContext], dict[str, Any]] | None:
    """How a forked skill runs in session ``session_id``'s turn, or None outside an agent turn."""
    return _forks.get(session_id or "")
