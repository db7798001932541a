"""``@path`` in a prompt: the file's text (or a folder's listing) goes with the message.

The rule: a word ``@X`` (at the start of the prompt or after white space)
where ``X`` names an existing path, relative to the folder the person typed
in, is included; trailing punctuation (``@notes.txt,``) is not part of the
path. Anything else (``@user``, ``me@example.org``, a path that does not
exist) stays text.

An included path is read by the ``read_file`` tool (a folder listed by
``glob``) through the toolbox, judged as a model's call is: deny rules,
workspace confinement and ``read_file``'s size cap all apply, and the read
is in the audit log (caller ``mention``). A path outside the workspace or
denied is not sent; the person is told in one line naming it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mdagent.runtime.runtime import Runtime

_MENTION = re.compile(r"(?:(?<=\s)|^)@(\S+)")
_TRAILING = ".,;:!?)]}\"'"


def mentioned_paths(text: str, cwd: Path) -> list[str]:
    """The ``@X`` words of ``text`` whose ``X`` exists (relative to ``cwd``), in order, once each."""
    found: list[str] = []
    for match in _MENTION.finditer(text):
        word = match.group(1)
        for candidate in (word, word.rstrip(_TRAILING)):
            if candidate and os.path.lexists(cwd / os.path.expanduser(candidate)):
                if candidate not in found:
                    found.append(candidate)
                break
    return found


def with_mentions(runtime: Runtime, text: str) -> str:
    """``text`` with the contents of every ``@path`` it mentions appended (see the module)."""
    paths = mentioned_paths(text, runtime.cwd)
    if not paths:
        return text
    from mdagent.ui.approval import tell

    box = runtime.toolbox(policy=runtime.policy(approver=runtime.approver(interactive=False)))
    blocks = []
    for shown in paths:
        absolute = str(runtime.cwd / os.path.expanduser(shown))
        folder = os.path.isdir(absolute)
        ctx = runtime.context(box, caller="mention")
        if folder:
            result = box.run("glob", {"pattern": "*", "path": absolute}, ctx)
        else:
            result = box.run("read_file", {"path": absolute}, ctx)
        if not result.ok:
            tell(f"@{shown} not sent: {str(result.error).replace(absolute, shown)}")
            continue
        blocks.append(_block(shown, folder, result.data))
    if not blocks:
        return text
    return text.rstrip("\n") + "\n\n" + "\n\n".join(blocks)


def _block(shown: str, folder: bool, data: dict[str, Any]) -> str:
    if folder:
        files = data.get("files") or data.get("matches") or data.get("output") or []
        listing = "\n".join(files) if isinstance(files, list) else str(files)
        return f"Listing of the folder {shown} (from @{shown}):\n{listing}"
    note = ""
    if data.get("truncated"):
        note = f"\n[{shown} is longer: {data.get('total_lines')} lines; read_file reads the rest]"
    return f"Contents of {shown} (from @{shown}, numbered lines):\n{data.get('output', '')}{note}"
