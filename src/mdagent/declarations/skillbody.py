"""A skill's body: read as its agent means it, and its arguments filled in.

Apart from :mod:`mdagent.declarations.skills` (which reads front-matter into records) so
that another agent's command file (:mod:`mdagent.declarations.interop`) can be read here
without the two importing each other.
"""

from __future__ import annotations

import re
from pathlib import Path

from mdagent.core.errors import ConfigError
from mdagent.declarations.skills import MAX_SKILL_BYTES, normalise_text, split_front_matter


def read_body(path: str | Path) -> str:
    """The Markdown body of a SKILL.md (what the model or a prompt turn reads).

    Another agent's command file reads as its agent means it: a Gemini CLI
    ``.toml`` is its ``prompt`` in our syntax (:func:`mdagent.declarations.interop.toml_body`),
    a Markdown command without front-matter is all body.
    """
    if str(path).endswith(".toml"):
        from mdagent.declarations.interop import toml_body

        try:
            return toml_body(path)
        except ConfigError as err:
            raise OSError(err.message) from None
    with open(path, "rb") as fh:
        text = normalise_text(fh.read(MAX_SKILL_BYTES).decode("utf-8", "replace"))
    try:
        _, body, _ = split_front_matter(text, str(path))
    except ConfigError:
        return text
    return body.strip("\n") + "\n"


def with_skill_dir(body: str, skill_dir: str) -> str:
    """``body`` with ``${SKILL_DIR}`` and ``{baseDir}`` (OpenClaw's name) as the skill's folder."""
    return body.replace("${SKILL_DIR}", skill_dir).replace("{baseDir}", skill_dir)


def substitute(body: str, arguments: str, skill_dir: str, append: bool = True) -> str:
    """A prompt skill's body with ``$ARGUMENTS``, ``$N`` and ``${SKILL_DIR}`` filled in.

    With no ``$ARGUMENTS`` in the body (and ``append``), ``ARGUMENTS: <args>``
    is appended.
    """
    import shlex

    try:
        words = shlex.split(arguments)
    except ValueError:
        words = arguments.split()
    uses_arguments = "$ARGUMENTS" in body

    def word(match: re.Match[str]) -> str:
        index = int(match.group(1) or match.group(2))
        return words[index] if index < len(words) else ""

    text = with_skill_dir(body, skill_dir)
    text = re.sub(r"\$ARGUMENTS\[(\d+)\]|\$(\d+)(?!\d)", word, text)
    text = text.replace("$ARGUMENTS", arguments)
    if append and not uses_arguments and arguments:
        text = text.rstrip("\n") + f"\n\nARGUMENTS: {arguments}\n"
    return text


# -- what the model may use ----------------------------------------------------------
