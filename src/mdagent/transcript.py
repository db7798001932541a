"""A session's messages as a person reads them: one line each, or a Markdown document.

``agent sessions show`` and ``/history`` print :func:`message_line` per
message; ``agent sessions export`` writes :func:`markdown` (to a file with
:func:`save`, private like the database). The messages are the neutral dicts
the store keeps (:mod:`mdagent.store`).
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
