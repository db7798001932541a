"""Asking a person whether a call may run, on the terminal.

The question goes to stderr and the answer is read from the terminal
(``/dev/tty``, else stdin when it is a terminal), so it works while stdout is
piped. One question at a time: the agent may run calls concurrently. A
``write_file``/``edit_file`` call shows the change it would make. Saving an
"always" answer is :mod:`mdagent.declarations.edit`'s (the one module that edits settings).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from mdagent.core.errors import ConfigError
from mdagent.core.escapes import BLANK_CLASS, blank_line, visible_lines
from mdagent.core.yamlsource import load_yaml, plain

ANSWERS = {
    "y": "yes",
    "yes": "yes",
    "s": "session",
    "session": "session",
    "t": "tell",
    "tell": "tell",
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
#: while its line is drawn (:meth:`mdagent.ui.display.Display.running`), so the two
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
def terminal_input() -> Any:
    """The terminal to read answers from, for one question.

    ``/dev/tty``, else standard input when it is a terminal; EOFError when
    there is none.
    """
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


def read_line(source: TextIO, cancel: threading.Event | None) -> str | None:
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
    session: bool = False,
    tell: bool = True,
    rules: tuple[str, ...] = (),
    layers: tuple[str, ...] = (),
    check_rule: Callable[[str], str | None] | None = None,
) -> Any:
    """Ask on the terminal whether to run the call; the person's answer.

    ``"yes"``, ``"session"`` (yes for this session), ``"no"`` or
    ``"always"``, or the fields of a :class:`mdagent.safety.questions.Answer` as a
    dict: ``tell`` with the reason typed for the model, or ``always`` with
    the rules to save and the layer, when ``rules`` are suggested.

    The question goes to ``out`` (default stderr). Raises ``EOFError`` when
    there is no terminal to read from or it closes; an unclear answer is
    asked again, three times at most, then counts as "no". When ``cancel``
    is set (Ctrl-C) the question is dropped at once and counts as "no".
    ``always=False`` leaves "always" out (a call "always" must not cover),
    ``session`` offers "yes for this session", ``tell=False`` leaves out
    "no, and tell the model why"; ``note`` is a line shown under the call.

    With ``rules`` (the allow rules "always" would save) a line above the
    question says what ``a`` saves and where: ``a`` alone takes the
    suggestion and the default layer (the first of ``layers``, e.g.
    ``("user", "project")``), ``a RULE`` (several: ``a RULE, RULE``) saves
    the person's own rule instead, ``a user …`` or ``a project …`` picks the
    layer. ``check_rule(text)`` says what is wrong with a typed rule (None:
    nothing); a wrong one is said and the question asked again. ``t`` asks
    for the reason on the next line (``t REASON`` gives it at once).

    A ``write_file`` or ``edit_file`` call inside ``workdir`` also shows the
    change it would make as a unified diff (coloured on a terminal, unless
    ``NO_COLOR`` is set) and how many lines it changes. A diff longer than
    :data:`MAX_DIFF_LINES` is cut, and the answer ``v`` shows all of it before
    the question is asked again. ``protected`` (the call would change the
    agent's own configuration): every value and every diff line is shown,
    never cut, and for a YAML file what changes in the settings
    (``policy.mode: ask → full``), right above the question.
    """
    out = out or sys.stderr
    change = proposed_change(tool_name, args, workdir) if workdir else None
    cut = change is not None and not protected and len(change.lines) > MAX_DIFF_LINES
    offered = [("y", "[y]es")]
    offered += [("v", "[v]iew all")] if cut else []
    offered += [("s", "[s]ession")] if session else []
    offered += [("t", "[t]ell")] if tell else []
    offered += [("n", "[n]o")]
    offered += [("a", "[a]lways")] if always else []
    question = "Run it? " + " / ".join(label for _, label in offered) + ": "
    keys = [key for key, _ in offered]
    please = "Please answer " + ", ".join(keys[:-1]) + f" or {keys[-1]}."
    answers = {k: v for k, v in ANSWERS.items() if v[0] in keys or v == "no"}
    if cut:
        answers.update({"v": "show", "view": "show", "view all": "show"})
    with prompt_lock, terminal_input() as source:
        limit = sys.maxsize if protected else MAX_VALUE
        print(f"\nAllow {format_call(tool_name, args, limit)}", file=out)
        if note:
            print(visible_lines(note), file=out)
        if change is not None:
            print(coloured_diff(change.text(None if protected else MAX_DIFF_LINES), out), file=out)
            print(change.counted(), file=out)
            if protected and change.settings is not None:
                print("What this changes in the settings:", file=out)
                for line in change.settings or ["nothing (only comments or layout)"]:
                    print(f"  {shown(line)}", file=out)
        if always and rules:
            print(_always_hint(rules, layers), file=out)
        tries = 0
        while tries < 3:
            line = _prompt(question, source, out, cancel)
            if line is None:
                return "no"
            word, _, rest = line.strip().partition(" ")
            answer = answers.get(line.strip().lower()) or (
                answers.get(word.lower())
                if answers.get(word.lower()) in ("tell", "always")
                else None
            )
            if answer == "show" and change is not None:
                print(coloured_diff(change.text(None), out), file=out)
                print(change.counted(), file=out)
                continue
            if answer == "tell":
                reason = rest.strip() or _prompt(
                    "Tell the model why (Enter: no reason): ", source, out, cancel
                )
                return _answer("tell", reason=reason.strip()) if reason is not None else "no"
            if answer == "always" and rules:
                chosen, wrong = _always_answer(rest.strip(), rules, layers, check_rule)
                if chosen is not None:
                    return chosen
                print(wrong, file=out)
                tries += 1
                continue
            if answer is not None:
                return answer
            tries += 1
            print(please, file=out)
        return "no"


def _prompt(
    question: str, source: TextIO, out: TextIO, cancel: threading.Event | None
) -> str | None:
    """``question``, then the line typed (None: cancelled); EOFError when the terminal closed."""
    out.write(question)
    out.flush()
    line = read_line(source, cancel)
    if line is None:
        out.write("\n")
        return None
    if not line:
        raise EOFError("terminal closed")
    return line


def _always_hint(rules: tuple[str, ...], layers: tuple[str, ...]) -> str:
    """The line above the question saying what "always" would save, and how to change it."""
    where = f" in the {layers[0]} layer" if layers else ""
    choose = " [" + "|".join(layers) + "]" if len(layers) > 1 else ""
    # Two short lines, so a narrow terminal need not wrap them mid-word.
    return f"{shown('[a]lways saves ' + ', '.join(rules) + where)}\n(to change it: a{choose} [RULE, …])"


def _always_answer(
    words: str,
    rules: tuple[str, ...],
    layers: tuple[str, ...],
    check_rule: Callable[[str], str | None] | None,
) -> tuple[dict[str, Any] | None, str | None]:
    """What ``a [LAYER] [RULE, RULE…]`` asks for: (the answer, None) or (None, what is wrong).

    Nothing after ``a``: the suggested rules in the default layer.
    """
    layer = layers[0] if layers else None
    first, _, rest = words.partition(" ")
    chosen = next((n for n in layers if first and n.startswith(first.lower())), None)
    if chosen is not None and len(layers) > 1:
        layer, words = chosen, rest.strip()
    typed = tuple(t.strip() for t in _RULES_APART.split(words) if t.strip()) if words else ()
    for rule in typed:
        wrong = check_rule(rule) if check_rule is not None else None
        if wrong is not None:
            return None, f"Not a rule: {shown(wrong)}"
    return _answer("always", rules=typed or rules, layer=layer), None


# Rules typed on one line are apart where a comma follows a closing parenthesis.
_RULES_APART = re.compile(r"(?<=\)),\s*")


def _answer(kind: str, **fields: Any) -> dict[str, Any]:
    # The fields of mdagent.safety.questions.Answer, which this module (below the policy) does not import.
    return {"kind": kind, **fields}


# A diff longer than this is cut (the answer `v` shows the rest): the question
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
            tail = f"… {more} more diff lines (answer v to see them all)"
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


def coloured_diff(diff: str, out: TextIO) -> str:
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
    events = sys.modules.get("mdagent.ui.events")  # a stream-json run: a notice event
    if out is None and events is not None and events.sink is not None:
        events.sink(f"agent: {message}")
        return
    with contextlib.suppress(OSError, ValueError):  # stderr closed: nothing to show it on
        print(f"agent: {message}", file=out or sys.stderr, flush=True)
