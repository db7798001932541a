"""A session's messages as a person reads them: one line each, or a Markdown document.

``agent sessions show`` and ``/history`` print :func:`message_line` per
message; ``agent sessions export`` writes :func:`markdown` (to a file with
:func:`save`, private like the database). The messages are the neutral dicts
the store keeps (:mod:`mdagent.store.store`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: A tool result longer than this is cut in a one-line view.
LINE_RESULT_CHARS = 400


def message_line(message: Mapping[str, Any]) -> str:
    """``[role] text``, with ``-> name(args)`` for calls and long tool results cut."""
    role = message.get("role", "?")
    text = content_text(message.get("content"))
    if role == "assistant" and message.get("tool_calls"):
        calls = ", ".join(
            f"{c.get('name')}({json.dumps(c.get('arguments'), ensure_ascii=False)[:80]})"
            for c in message["tool_calls"]
        )
        text = (text + "\n" if text else "") + f"-> {calls}"
    if role == "tool" and len(text) > LINE_RESULT_CHARS:
        text = text[:LINE_RESULT_CHARS] + "…"
    return f"[{role}] {text}"


def conversation_text(messages: Iterable[Mapping[str, Any]], preview: int | None = 3) -> str:
    """The messages as a person reads a conversation (``/history``, Ctrl-O's transcript).

    ``You:`` and ``Assistant:`` paragraphs; each tool call as the session
    showed it (``→ exec  git status``), its outcome (``✓ exec · exit 0``) and
    the first ``preview`` lines of its output (None: all of it).
    """
    from mdagent.ui.display import short_arguments

    blocks: list[str] = []
    for message in messages:
        role = str(message.get("role", "?"))
        text = content_text(message.get("content")).strip()
        if role == "tool":
            blocks.append(_indent(result_text(message, preview), "  "))
            continue
        lines = []
        if text:
            lines.append(_indent(f"{_SPEAKERS.get(role, role.capitalize())}: {text}", "", "  "))
        for call in message.get("tool_calls") or ():
            lines.append(f"→ {call.get('name')}  {short_arguments(call.get('arguments'))}".rstrip())
        if lines:
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


_SPEAKERS = {"user": "You", "assistant": "Assistant", "system": "System"}


def result_text(message: Mapping[str, Any], preview: int | None = None) -> str:
    """A tool message as the session shows a call's end: the outcome line, then its output.

    ``preview``: that many lines of output and how many more there are
    (None: the whole output, stderr after stdout).
    """
    from mdagent.core.calls import Result
    from mdagent.ui.display import outcome_line

    name = str(message.get("name") or "tool")
    text = content_text(message.get("content"))
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return text
    ok = bool(data.pop("ok", not message.get("is_error")))
    lines = [outcome_line(name, Result(data, ok))]
    shown = []
    for key in ("output", "stdout", "content", "stderr"):
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            shown.append(value.rstrip("\n"))
            if preview is not None:
                break
    if not shown and preview is None:
        rest = {k: v for k, v in data.items() if k not in ("streamed", "duration_ms")}
        shown.append(json.dumps(rest, ensure_ascii=False, indent=2, default=str))
    output = "\n".join(shown).splitlines()
    if preview is not None and len(output) > preview:
        more = len(output) - preview
        output = [*output[:preview], f"… {more} more line{'s' if more != 1 else ''}"]
    lines += [f"  {line}" for line in output]
    return "\n".join(lines)


def last_call_text(messages: list[Mapping[str, Any]]) -> str | None:
    """The last tool call of ``messages`` and its whole result (None: no call yet)."""
    from mdagent.ui.display import short_arguments

    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") != "tool":
            continue
        call_id = message.get("tool_call_id")
        arguments: Any = None
        for earlier in reversed(messages[:index]):
            for call in earlier.get("tool_calls") or ():
                if call.get("id") == call_id:
                    arguments = call.get("arguments")
            if arguments is not None:
                break
        head = f"→ {message.get('name')}  {short_arguments(arguments, limit=10_000)}".rstrip()
        return f"{head}\n{result_text(message)}"
    return None


def _indent(text: str, prefix: str, rest: str | None = None) -> str:
    """``text`` with ``prefix`` before its first line and ``rest`` (default: the same) before the others."""
    rest = prefix if rest is None else rest
    first, *others = text.splitlines() or [""]
    return "\n".join([prefix + first, *(rest + line if line else line for line in others)])


def content_text(content: Any) -> str:
    """The text of a message's content (a string, or the text parts of a list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, Mapping)
        ).strip()
    return ""


def markdown(session: Mapping[str, Any], messages: Iterable[Mapping[str, Any]]) -> str:
    """The whole session as Markdown: a heading per message, calls and results fenced."""
    title = session.get("title") or "(untitled session)"
    lines = [
        f"# {title}",
        "",
        f"Session `{session.get('id')}` · {session.get('cwd') or '?'} · "
        f"model {session.get('model') or '?'} · started {str(session.get('created', ''))[:19]}",
    ]
    for message in messages:
        role = str(message.get("role", "?"))
        text = content_text(message.get("content"))
        if role == "tool":
            lines += ["", f"### Result of `{message.get('name') or 'tool'}`", "", *_fenced(text)]
            continue
        lines += ["", f"## {role.capitalize()}"]
        if text:
            lines += ["", text.rstrip()]
        for call in message.get("tool_calls") or ():
            arguments = json.dumps(call.get("arguments"), ensure_ascii=False, indent=2)
            lines += ["", f"Calls `{call.get('name')}`:", "", *_fenced(arguments, "json")]
    return "\n".join(lines) + "\n"


def _fenced(text: str, language: str = "") -> list[str]:
    fence = "```"
    while fence in text:  # a result holding ``` gets a longer fence
        fence += "`"
    return [f"{fence}{language}", text.rstrip("\n"), fence]


def save(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as a file only its owner can read (0600), whole or not at all.

    A conversation holds tool output, which may hold anything (redaction
    goes by variable name only), so an export is as private as the
    database. The file is created 0600 before a byte is written, never
    loosened then tightened, in the target's folder and renamed over it: an
    existing file's looser mode does not carry over, and a failure leaves
    the old file as it was. A symbolic link is followed to the file it names;
    a target that is not a regular file (``/dev/stdout``, a pipe) is written
    as it is. Raises OSError.
    """
    import stat

    data = text.encode("utf-8")
    try:
        special = not stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        special = False
    if special:  # /dev/stdout's link leads to "pipe:[…]", no path: open it as named
        with open(path, "wb") as fh:
            fh.write(data)
        return
    target = Path(os.path.realpath(path))
    temp = target.with_name(f".{target.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
