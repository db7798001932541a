"""Asking a person whether a call may run, and remembering "always".

The question goes to stderr and the answer is read from the terminal
(``/dev/tty``, else stdin when it is a terminal), so it works while stdout is
piped. One question at a time: the agent may run calls concurrently.

"always" adds an allow rule to the project layer's ``config/agent.yaml``
with :func:`add_allow_rule`, which edits the text rather than re-dumping
YAML, so comments, key order and formatting survive;
:func:`remove_allow_rule` (``agent policy revoke``) takes one out the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from mdagent.errors import ConfigError
from mdagent.escapes import BLANK_CLASS, blank_line, visible_lines
from mdagent.yamlsource import load_yaml, plain

ANSWERS = {
    "y": "yes",
    "yes": "yes",
    "n": "no",
    "no": "no",
    "": "no",
    "a": "always",
    "always": "always",
}
# Values shown in full whatever their length: they are what is being approved,
# and a shortened command could hide its dangerous tail.
FULL_KEYS = frozenset({"command", "path", "url"})
MAX_VALUE = 200
# What the question draws of a value, so nothing in it can push the rest off
# the screen: more blank lines in a row than BLANK_LINES are counted, not
# drawn; so are more blanks in a row than BLANKS; a line longer than the
# width is folded.
BLANK_LINES = 2
BLANKS = 16
FOLD = "↩"
# Any blank, not only spaces and tabs: U+00A0, U+2800, U+3164… draw nothing either.
_BLANK_RUN = re.compile(f"{BLANK_CLASS}{{{BLANKS + 1},}}")

#: Held while a question is on the terminal; the display's spinner holds it
#: while its line is drawn (:meth:`mdagent.display.Display.running`), so the two
#: never share a line.
prompt_lock = threading.Lock()


def format_call(
    tool_name: str, args: Mapping[str, Any], max_value: int = MAX_VALUE, width: int | None = None
) -> str:
    """``tool_name`` and its arguments for a person to judge, one argument per line.

    Control characters (ANSI escapes, carriage returns, bidi overrides) are
    shown escaped so a model cannot disguise what is being approved; runs
    of blank lines and of blanks are counted and long lines folded at
    ``width`` (:func:`shown`). Long values are shortened in the middle,
    except ``command``, ``path`` and ``url``.
    """
    lines = [tool_name]
    for key, value in args.items():
        text = (
            value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        )
        if key not in FULL_KEYS and len(text) > max_value:
            half = max_value // 2
            text = f"{text[:half]} … ({len(text) - 2 * half} more chars) … {text[-half:]}"
        text = shown(text, width)
        if "\n" in text:
            body = "\n".join("      " + line for line in text.splitlines())
            lines.append(f"  {key}:\n{body}")
        else:
            lines.append(f"  {key}: {text}")
    return "\n".join(lines)


def shown(text: str, width: int | None = None) -> str:
    """``text`` as the question draws it: control characters escaped, a run of
    more than :data:`BLANK_LINES` blank lines or :data:`BLANKS` blanks
    replaced by its count (``⟨300 blank lines⟩``), lines longer than
    ``width`` (default: the terminal's, less an indent) folded with ``↩``.

    A payload followed by 300 newlines, or by 5,000 spaces, stays on the
    screen above the question.
    """
    if width is None:
        import shutil

        width = shutil.get_terminal_size((100, 24)).columns - 8
    width = max(width, 20)
    out: list[str] = []
    blank = 0

    def blank_lines() -> None:
        out.extend([""] * blank if blank <= BLANK_LINES else [f"⟨{blank} blank lines⟩"])

    for line in visible_lines(text).split("\n"):
        if blank_line(line):
            blank += 1
            continue
        blank_lines()
        blank = 0
        line = _BLANK_RUN.sub(lambda run: f" ⟨{len(run.group())} blanks⟩ ", line)
        while len(line) > width:
            out.append(line[: width - 1] + FOLD)
            line = line[width - 1 :]
        out.append(line)
    if blank:
        blank_lines()
    return "\n".join(out)


def terminal_available() -> bool:
    """Whether a person can be asked: ``/dev/tty`` opens, or stdin is a terminal."""
    try:
        with open("/dev/tty", encoding="utf-8"):
            return True
    except OSError:
        pass
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def _terminal_input() -> Any:
    try:
        tty: TextIO | None = open("/dev/tty", encoding="utf-8", errors="replace")  # noqa: SIM115
    except OSError:
        tty = None
    if tty is not None:
        with tty:
            yield tty
        return
    try:
        interactive = sys.stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if not interactive:
        raise EOFError("no terminal to ask on")
    yield sys.stdin


def _read_line(source: TextIO, cancel: threading.Event | None) -> str | None:
    """One line from the terminal, or None as soon as ``cancel`` is set.

    Waits with select in short slices so a cancelled call never leaves a
    reader behind that would take the next line typed at the session.
    """
    if cancel is None:
        return source.readline()
    import select

    try:
        fd = source.fileno()
    except (AttributeError, OSError, ValueError):
        return source.readline()
    while not cancel.is_set():
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            # A terminal in canonical mode hands over whole lines.
            return os.read(fd, 4096).decode("utf-8", "replace")
    return None


def ask_terminal(
    tool_name: str,
    args: Mapping[str, Any],
    *,
    out: TextIO | None = None,
    cancel: threading.Event | None = None,
    always: bool = True,
    note: str | None = None,
    workdir: str | os.PathLike[str] | None = None,
    protected: bool = False,
) -> str:
    """Ask on the terminal whether to run the call: ``"yes"``, ``"no"`` or ``"always"``.

    The question goes to ``out`` (default stderr). Raises ``EOFError`` when
    there is no terminal to read from or it closes; an unclear answer is
    asked again, three times at most, then counts as "no". When ``cancel``
    is set (Ctrl-C) the question is dropped at once and counts as "no".
    ``always=False`` offers yes and no only (a call "always" must not
    cover); ``note`` is a line shown under the call.

    A ``write_file`` or ``edit_file`` call inside ``workdir`` also shows the
    change it would make as a unified diff (coloured on a terminal, unless
    ``NO_COLOR`` is set) and how many lines it changes. A diff longer than
    :data:`MAX_DIFF_LINES` is cut, and the answer ``s`` shows all of it before
    the question is asked again. ``protected`` (the call would change the
    agent's own configuration): every value and every diff line is shown,
    never cut, and for a YAML file what changes in the settings
    (``policy.mode: ask → full``), right above the question.
    """
    out = out or sys.stderr
    change = proposed_change(tool_name, args, workdir) if workdir else None
    cut = change is not None and not protected and len(change.lines) > MAX_DIFF_LINES
    show_all = "[s]how all / " if cut else ""
    question = f"Run it? [y]es / {show_all}[n]o" + (" / [a]lways: " if always else ": ")
    answers = {**ANSWERS, **({"s": "show", "show": "show", "show all": "show"} if cut else {})}
    with prompt_lock, _terminal_input() as source:
        limit = sys.maxsize if protected else MAX_VALUE
        print(f"\nAllow {format_call(tool_name, args, limit)}", file=out)
        if note:
            print(visible_lines(note), file=out)
        if change is not None:
            print(_coloured_diff(change.text(None if protected else MAX_DIFF_LINES), out), file=out)
            print(change.counted(), file=out)
            if protected and change.settings is not None:
                print("What this changes in the settings:", file=out)
                for line in change.settings or ["nothing (only comments or layout)"]:
                    print(f"  {shown(line)}", file=out)
        tries = 0
        while tries < 3:
            out.write(question)
            out.flush()
            line = _read_line(source, cancel)
            if line is None:
                out.write("\n")
                return "no"
            if not line:
                raise EOFError("terminal closed")
            answer = answers.get(line.strip().lower())
            if answer == "show" and change is not None:
                print(_coloured_diff(change.text(None), out), file=out)
                print(change.counted(), file=out)
                continue
            if answer is not None and (always or answer != "always"):
                return answer
            tries += 1
            keys = ("y, s, n or a" if always else "y, s or n") if cut else None
            print(f"Please answer {keys or ('y, n or a' if always else 'y or n')}.", file=out)
        return "no"


# A diff longer than this is cut (the answer `s` shows the rest): the question
# must stay on the screen.
MAX_DIFF_LINES = 60
MAX_DIFF_BYTES = 1_000_000


@dataclass(frozen=True)
class Change:
    """What a ``write_file``/``edit_file`` call would do to a file.

    ``lines``: the unified diff; ``added``/``removed``: its changed lines;
    ``settings``: for a YAML file, each setting that changes
    (``policy.mode: ask → full``; None: not YAML).
    """

    lines: tuple[str, ...]
    added: int
    removed: int
    settings: tuple[str, ...] | None = None

    def text(self, limit: int | None) -> str:
        """The diff as shown: control characters escaped, long lines folded;
        cut after ``limit`` lines (None: all), saying how many more there are."""
        lines = list(self.lines)
        if limit is not None and len(lines) > limit:
            more = len(lines) - limit
            lines = lines[:limit]
            tail = f"… {more} more diff lines (answer s to see them all)"
        else:
            tail = None
        text = "\n".join(shown(line) for line in lines)
        return f"{text}\n{tail}" if tail else text

    def counted(self) -> str:
        """``3 lines changed (+2 −1)``."""
        total = self.added + self.removed
        return f"{total} line{'s' if total != 1 else ''} changed (+{self.added} −{self.removed})"


def proposed_diff(
    tool_name: str, args: Mapping[str, Any], workdir: str | os.PathLike[str]
) -> str | None:
    """The unified diff a ``write_file``/``edit_file`` call would make, cut
    after :data:`MAX_DIFF_LINES` lines, or None (see :func:`proposed_change`)."""
    change = proposed_change(tool_name, args, workdir)
    return change.text(MAX_DIFF_LINES) if change is not None else None


def proposed_change(
    tool_name: str, args: Mapping[str, Any], workdir: str | os.PathLike[str] | None
) -> Change | None:
    """The change a ``write_file``/``edit_file`` call would make, or None.

    Only for a regular file inside ``workdir`` (what is shown is the person's
    own file); None when it cannot be worked out, so the question is asked
    without it rather than not at all.
    """
    import difflib

    path = args.get("path")
    if tool_name not in ("write_file", "edit_file") or not isinstance(path, str) or not workdir:
        return None
    root = os.path.realpath(workdir)
    target = os.path.realpath(os.path.join(root, os.path.expanduser(path)))
    if os.path.commonpath([root, target]) != root:
        return None
    try:
        if os.path.getsize(target) > MAX_DIFF_BYTES:
            return None
        with open(target, encoding="utf-8", errors="replace") as fh:
            old = fh.read()
    except FileNotFoundError:
        old = ""
    except OSError:
        return None
    if tool_name == "write_file":
        new = args.get("content")
    else:
        before, after = args.get("old_string"), args.get("new_string")
        if not isinstance(before, str) or not isinstance(after, str) or before not in old:
            return None
        new = old.replace(before, after, -1 if args.get("replace_all") else 1)
    if not isinstance(new, str):
        return None
    relative = os.path.relpath(target, root)
    lines = tuple(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), f"a/{relative}", f"b/{relative}", lineterm=""
        )
    )
    if not lines:
        return None
    body = [line for line in lines[2:] if not line.startswith("@@")]
    added = sum(line.startswith("+") for line in body)
    removed = sum(line.startswith("-") for line in body)
    settings = None
    if target.endswith((".yaml", ".yml")):
        settings = tuple(settings_changes(old, new))
    return Change(lines, added, removed, settings)


def settings_changes(old: str, new: str) -> list[str]:
    """Each setting that differs between two YAML texts, one line each:
    ``policy.mode: ask → full``, ``policy.allow: + exec(*)``, ``hooks: (none) → …``.

    Comments and layout are not settings: a change of only those gives no
    line. A text that is not valid YAML says so.
    """
    values = []
    for label, text in (("now", old), ("after the change", new)):
        try:
            values.append(plain(load_yaml(text, "agent.yaml")) if text.strip() else None)
        except ConfigError as exc:
            return [f"the file is not valid YAML {label}: {exc.message} (line {exc.line})"]
    out: list[str] = []
    _differences(values[0], values[1], "", out)
    return out


def _differences(old: Any, new: Any, where: str, out: list[str]) -> None:
    if old == new:
        return
    if isinstance(old, dict) or isinstance(new, dict):
        before, after = (
            v if isinstance(v, dict) else {} if v in _NOTHING else None for v in (old, new)
        )
        if before is not None and after is not None:
            count = len(out)
            for key in dict.fromkeys([*before, *after]):
                path = f"{where}.{key}" if where else str(key)
                _differences(before.get(key, _ABSENT), after.get(key, _ABSENT), path, out)
            if len(out) > count:
                return  # else: an empty mapping comes or goes (`hooks: {}`)
    if isinstance(old, list) and isinstance(new, list):
        count = len(out)
        out += [f"{where}: − {_setting(item)}" for item in old if item not in new]
        out += [f"{where}: + {_setting(item)}" for item in new if item not in old]
        if len(out) > count:
            return
    out.append(f"{where or '(the whole file)'}: {_setting(old)} → {_setting(new)}")


_ABSENT = object()
_NOTHING = (None, _ABSENT)


def _setting(value: Any) -> str:
    if value is _ABSENT:
        return "(none)"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _coloured_diff(diff: str, out: TextIO) -> str:
    """``diff`` with red and green lines on a colour terminal; as is otherwise."""
    isatty = getattr(out, "isatty", None)
    if os.environ.get("NO_COLOR") or not (isatty and isatty()):
        return diff
    colours = {"+": "\x1b[32m", "-": "\x1b[31m", "@": "\x1b[36m"}
    lines = []
    for line in diff.split("\n"):
        colour = colours.get(line[:1]) if not line.startswith(("+++", "---")) else "\x1b[1m"
        lines.append(f"{colour}{line}\x1b[0m" if colour else line)
    return "\n".join(lines)


def tell(message: str, out: TextIO | None = None) -> None:
    """Show the person what an answer did (``agent: added allow rule …``), on stderr."""
    with contextlib.suppress(OSError, ValueError):  # stderr closed: nothing to show it on
        print(f"agent: {message}", file=out or sys.stderr, flush=True)


# -- saving "always" ----------------------------------------------------------------


def add_allow_rule(path: str | os.PathLike[str], rule: str) -> bool:
    """Append ``rule`` to ``policy.allow`` in the settings file ``path``.

    Creates the file (and folders) when missing. Otherwise the new list item
    is inserted as text, so comments and formatting stay as they were: after
    the last item of a block ``allow:`` list, inside a flow list
    (``allow: [a]``), as a new ``allow:`` under a block ``policy:``, or as a
    new ``policy:`` section at the end. When the layout allows none of these
    (``policy: {...}`` in flow style, say), the file is loaded, changed and
    dumped again, but only if it has no comments; otherwise
    :class:`ConfigError` says what to add by hand. Every edit is checked by
    parsing the result: the old settings plus the rule, nothing else.
    Returns False when the rule was already there. Concurrent writers are
    serialised with a lock on the file.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with locked_file(target) as handle:
        text = handle.read()
        try:
            # As strict as the registry's reading: a file it would refuse is not edited.
            before = plain(load_yaml(text, target)) if text.strip() else None
        except ConfigError as exc:
            raise ConfigError(
                f"cannot add `{rule}`: {exc.message}",
                str(target),
                exc.line,
                exc.col,
            ) from None
        if before is None:
            before = {}
        if not isinstance(before, dict):
            raise ConfigError(f"cannot add `{rule}`: the file is not a mapping", str(target))
        policy = before.get("policy") or {}
        allow = policy.get("allow") if isinstance(policy, dict) else None
        if isinstance(allow, list) and rule in allow:
            return False
        expected = _with_rule(before, rule)
        new_text = _edited(text, rule)
        if new_text is None or _load(new_text) != expected:
            if not _comment_free(text):
                raise ConfigError(
                    f"cannot add `{rule}` to policy.allow without losing comments; add it by hand",
                    str(target),
                )
            import yaml

            new_text = yaml.safe_dump(expected, sort_keys=False, allow_unicode=True)
        replace_file(target, new_text)
    return True


def remove_allow_rule(path: str | os.PathLike[str], rule: str) -> int | None:
    """Remove ``rule`` from ``policy.allow`` in the settings file ``path`` (``agent policy revoke``).

    The entry may be the rule's text or a ``{rule: …, reason: …}`` mapping.
    Like :func:`add_allow_rule` the file is edited as text, so comments and
    formatting stay; the result is checked by parsing it (the old settings
    minus that entry, nothing else); a file whose layout allows no such edit
    is dumped again only when it has no comments, else :class:`ConfigError`
    says to remove it by hand. Returns the line the entry was on, or None
    when the file has no such rule (or does not exist).
    """
    target = Path(path)
    if not target.is_file():
        return None
    with locked_file(target) as handle:
        text = handle.read()
        try:
            before = plain(load_yaml(text, target)) if text.strip() else None
        except ConfigError as exc:
            raise ConfigError(
                f"cannot remove `{rule}`: {exc.message}", str(target), exc.line, exc.col
            ) from None
        policy = before.get("policy") if isinstance(before, dict) else None
        allow = policy.get("allow") if isinstance(policy, dict) else None
        if not isinstance(allow, list):
            return None
        index = next((i for i, e in enumerate(allow) if _entry_rule(e) == rule.strip()), None)
        if index is None:
            return None
        expected = {**before, "policy": {**policy, "allow": allow[:index] + allow[index + 1 :]}}
        edit = _without_item(text, index)
        if edit is None or _load(edit[0]) != expected:
            if not _comment_free(text):
                raise ConfigError(
                    f"cannot remove `{rule}` from policy.allow without losing comments; "
                    "remove it by hand",
                    str(target),
                )
            import yaml

            edit = (yaml.safe_dump(expected, sort_keys=False, allow_unicode=True), 0)
        replace_file(target, edit[0])
    return edit[1] or 1


def _last_line(node: Any) -> int:
    """The last line (0-based) holding text of ``node``.

    A block collection's end mark is where the next token starts, possibly
    lines further down (a comment, the next key): its last child's is not.
    """
    while not getattr(node, "flow_style", True) and node.value:
        last = node.value[-1]
        node = last[1] if isinstance(last, tuple) else last
    end = node.end_mark
    return end.line if end.column > 0 else end.line - 1


def _entry_rule(entry: Any) -> str | None:
    text = entry.get("rule") if isinstance(entry, dict) else entry
    return text.strip() if isinstance(text, str) else None


def _without_item(text: str, index: int) -> tuple[str, int] | None:
    """``text`` without item ``index`` of ``policy.allow`` and the item's line; None if no edit."""
    import yaml

    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return None
    if not isinstance(root, yaml.MappingNode):
        return None
    policy = _value_of(root, "policy")
    allow = (
        _value_of(policy[1], "allow")
        if policy and isinstance(policy[1], yaml.MappingNode)
        else None
    )
    if allow is None or not isinstance(allow[1], yaml.SequenceNode):
        return None
    key, node = allow
    items = node.value
    item = items[index]
    line = item.start_mark.line + 1
    if node.flow_style:
        # `[a, b, c]`: the item and one comma next to it.
        start, end = item.start_mark.index, item.end_mark.index
        if index + 1 < len(items):
            end = items[index + 1].start_mark.index
        elif index > 0:
            start = items[index - 1].end_mark.index
        return text[:start] + text[end:], line
    lines = text.splitlines(keepends=True)
    first, last = item.start_mark.line, _last_line(item)
    if lines[first][: item.start_mark.column].strip() not in ("-", ""):
        return None  # something else shares the item's first line
    kept = lines[:first] + lines[last + 1 :]
    if len(items) == 1:
        # The list's last entry: `allow: []`, not `allow:` (null).
        at = key.end_mark.line
        colon = kept[at].index(":", key.end_mark.column)
        kept[at] = kept[at][: colon + 1] + " []" + kept[at][colon + 1 :]
    return "".join(kept), line


def _with_rule(settings: dict[str, Any], rule: str) -> dict[str, Any]:
    policy = settings.get("policy")
    policy = dict(policy) if isinstance(policy, dict) else {}
    allow = policy.get("allow")
    policy["allow"] = [*(allow if isinstance(allow, list) else ([allow] if allow else [])), rule]
    return {**settings, "policy": policy}


def _load(text: str) -> Any:
    """``text`` as plain data, parsed the way the registry will; ``None`` when it cannot be."""
    try:
        return plain(load_yaml(text, "agent.yaml"))
    except ConfigError:
        return None


def _edited(text: str, rule: str) -> str | None:
    """``text`` with ``rule`` added to ``policy.allow`` by a textual edit, or None."""
    import yaml

    item = json.dumps(rule, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar
    if text and not text.endswith("\n"):
        text += "\n"
    try:
        root = yaml.compose(text) if text.strip() else None
    except yaml.YAMLError:
        return None
    if root is None:
        return f"{text}policy:\n  allow:\n    - {item}\n"
    if not isinstance(root, yaml.MappingNode) or root.flow_style:
        return None
    lines = text.splitlines(keepends=True)
    policy = _value_of(root, "policy")
    if policy is None:
        return f"{text}policy:\n  allow:\n    - {item}\n"
    key_node, policy_node = policy
    if _is_empty_scalar(policy_node):
        indent = " " * (key_node.start_mark.column + 2)
        return _insert(lines, key_node.start_mark.line + 1, f"{indent}allow:\n{indent}  - {item}\n")
    if (
        not isinstance(policy_node, yaml.MappingNode)
        or policy_node.flow_style
        or not policy_node.value
    ):
        return None
    allow = _value_of(policy_node, "allow")
    if allow is None:
        first_key = policy_node.value[0][0]
        if first_key.start_mark.line == key_node.start_mark.line:
            return None
        # Right under `policy:`, so a comment above the first key stays with it.
        indent = " " * first_key.start_mark.column
        return _insert(lines, key_node.start_mark.line + 1, f"{indent}allow:\n{indent}  - {item}\n")
    allow_key, allow_node = allow
    if _is_empty_scalar(allow_node):
        indent = " " * (allow_key.start_mark.column + 2)
        return _insert(lines, allow_key.start_mark.line + 1, f"{indent}- {item}\n")
    if not isinstance(allow_node, yaml.SequenceNode):
        return None
    if allow_node.flow_style:
        end = allow_node.end_mark.index - 1  # the closing bracket
        if text[end] != "]":
            return None
        sep = ", " if allow_node.value else ""
        return text[:end] + sep + item + text[end:]
    if not allow_node.value:
        return None
    first, last = allow_node.value[0], allow_node.value[-1]
    dash = lines[first.start_mark.line].rfind("-", 0, first.start_mark.column)
    if dash < 0:
        return None
    end_line = last.end_mark.line if last.end_mark.column > 0 else last.end_mark.line - 1
    return _insert(lines, end_line + 1, f"{' ' * dash}- {item}\n")


def _value_of(node: Any, key: str) -> tuple[Any, Any] | None:
    for key_node, value_node in node.value:
        if getattr(key_node, "value", None) == key:
            return key_node, value_node
    return None


def _is_empty_scalar(node: Any) -> bool:
    import yaml

    return isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null") and node.value == ""


def _insert(lines: list[str], index: int, new: str) -> str:
    return "".join(lines[:index]) + new + "".join(lines[index:])


@contextlib.contextmanager
def locked_file(target: Path) -> Any:
    """The file opened for reading under an exclusive lock, created empty if missing.

    The file is replaced (not rewritten in place) so a crash never leaves
    half a file; a writer that locked the old file sees it was replaced
    and locks the new one.
    """
    import fcntl

    while True:
        fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
        # newline="": the text as it is on disk, so a CRLF file keeps its line ends.
        handle = os.fdopen(fd, "r+", encoding="utf-8", newline="")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(target)
            except FileNotFoundError:
                current = None
            if current is not None and os.path.samestat(current, os.fstat(fd)):
                yield handle
                return
        finally:
            handle.close()


def replace_file(target: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``target`` and rename it over ``target``.

    Readers see the old file or the new one, never half of one; the mode is kept.
    A symlinked ``target`` stays a link: the file it points to is replaced.
    """
    target = Path(os.path.realpath(target))
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        mode = target.stat().st_mode & 0o777
    except OSError:
        mode = 0o644
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, mode)
    os.replace(tmp, target)


def _comment_free(text: str) -> bool:
    # A YAML comment starts a line or follows whitespace; a "#" inside a
    # quoted string may look like one too, which only errs on the safe side.
    return not re.search(r"(^|\s)#", text)
