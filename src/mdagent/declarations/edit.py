"""Editing a layer's YAML files as text, so comments, key order and formatting survive.

The one place mdagent changes a file a person wrote: an "always" answer adds
an allow rule to the project's ``config/agent.yaml`` (:func:`add_allow_rule`),
``agent policy revoke`` takes one out (:func:`remove_allow_rule`), and ``agent
new tool``/``new command`` append an entry (:mod:`mdagent.cli.scaffold`, with the
node helpers here). Every edit is checked by parsing the result, writes go
through a temporary file and a rename (:func:`replace_file`), and writers are
serialised with a lock on the file (:func:`locked_file`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from mdagent.core.errors import ConfigError
from mdagent.core.yamlsource import load_yaml, plain


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


def last_line(node: Any) -> int:
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
    policy = value_of(root, "policy")
    allow = (
        value_of(policy[1], "allow") if policy and isinstance(policy[1], yaml.MappingNode) else None
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
    first, last = item.start_mark.line, last_line(item)
    if lines[first][: item.start_mark.column].strip() not in ("-", ""):
        return None  # something else shares the item's first line
    kept = lines[:first] + lines[last + 1 :]
    if len(items) == 1:
        # The list's last entry: `allow: []`, not `allow:` (null).
        at = key.end_mark.line
        colon = kept[at].find(":", key.end_mark.column)
        if colon < 0:
            return None  # the key's colon is on a line of its own (`? allow`): not edited as text
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
    policy = value_of(root, "policy")
    if policy is None:
        return f"{text}policy:\n  allow:\n    - {item}\n"
    key_node, policy_node = policy
    if is_empty_scalar(policy_node):
        indent = " " * (key_node.start_mark.column + 2)
        return _insert(lines, key_node.start_mark.line + 1, f"{indent}allow:\n{indent}  - {item}\n")
    if (
        not isinstance(policy_node, yaml.MappingNode)
        or policy_node.flow_style
        or not policy_node.value
    ):
        return None
    allow = value_of(policy_node, "allow")
    if allow is None:
        first_key = policy_node.value[0][0]
        if first_key.start_mark.line == key_node.start_mark.line:
            return None
        # Right under `policy:`, so a comment above the first key stays with it.
        indent = " " * first_key.start_mark.column
        return _insert(lines, key_node.start_mark.line + 1, f"{indent}allow:\n{indent}  - {item}\n")
    allow_key, allow_node = allow
    if is_empty_scalar(allow_node):
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


def value_of(node: Any, key: str) -> tuple[Any, Any] | None:
    for key_node, value_node in node.value:
        if getattr(key_node, "value", None) == key:
            return key_node, value_node
    return None


def is_empty_scalar(node: Any) -> bool:
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
