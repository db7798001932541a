"""tree-sitter-bash: the syntax tree of a command line, and where the grammar
reads a line differently from bash.

The grammar is loaded when the first command is judged (:func:`syntax_tree`:
importing it costs start-up time that the ``/name`` fast path never pays),
and one parser serves the process. It reads blanks a little differently
from bash: where that could hide a command (a backslash-newline inside a
word, an escaped blank, a ``#`` that does not start a word),
:func:`misreading` says so and the walker
(:mod:`mdagent.safety.shell.shellparse`) refuses the line.
"""

from __future__ import annotations

import re
import threading
from typing import Any

# A backslash-newline (an odd run of backslashes before the newline).
_CONTINUATION = re.compile(rb"(?<!\\)(?:\\\\)*(\\\n)")
_ESCAPED_BLANK = re.compile(rb"(?<!\\)(?:\\\\)*(\\[ \t])")
BLANKS = (b" ", b"\t", b"\n")
_BEFORE_COMMENT = (*BLANKS, b";", b"&", b"|", b"(", b")")
# Tokens whose text bash reads as one piece (or not at all: comments).
_TOKENS = {
    "word", "raw_string", "ansi_c_string", "string", "string_content", "comment",
    "heredoc_body", "heredoc_content", "regex", "extglob_pattern",
}  # fmt: skip

_parser: Any = None
_parser_lock = threading.Lock()


def syntax_tree(source: bytes) -> Any:
    """The tree-sitter-bash syntax tree of ``source`` (a tree with error nodes
    where the line does not parse: tree-sitter never gives up)."""
    global _parser
    # One parser per process; a parser is not safe to share between threads.
    with _parser_lock:
        if _parser is None:
            import tree_sitter  # only exec calls need it; keeps start-up lean
            import tree_sitter_bash

            _parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        return _parser.parse(source)


def forget_parser() -> None:
    """Drop this process's parser: the next :func:`syntax_tree` builds one, as in a new process."""
    global _parser
    with _parser_lock:
        _parser = None


def fields(node: Any) -> list[tuple[str | None, Any]]:
    """The children of ``node`` with their field names."""
    return [(node.field_name_for_child(i), child) for i, child in enumerate(node.children)]


def misreading(source: bytes, root: Any) -> str | None:
    r"""The first place where the grammar's blanks are not bash's, or None.

    Bash removes a backslash-newline before reading words (``r\<newline>m``
    is ``rm``), reads an escaped blank as part of a word and starts a
    comment only at the start of a word; the grammar skips both as blanks,
    so ``echo \ #x; rm y`` would hide ``rm y`` in a comment.
    """
    spans: list[list[int]] = []
    for match in _CONTINUATION.finditer(source):
        start, end = match.span(1)
        if spans and spans[-1][1] == start:
            spans[-1][1] = end
        else:
            spans.append([start, end])
    for start, end in spans:
        before = source[start - 1 : start]
        after = source[end : end + 1]
        inside = before and after and before not in BLANKS and after not in BLANKS
        if inside and not _in_token(root, start):
            return "line continuation inside a word"
    for match in _ESCAPED_BLANK.finditer(source):
        if not _in_token(root, match.start(1)):
            return "escaped blank between words"
    for match in re.finditer(rb"#", source):
        node = root.descendant_for_byte_range(match.start(), match.end())
        start = match.start()
        if node is None or node.type != "comment" or node.start_byte != start or not start:
            continue
        if source[start - 1 : start] not in _BEFORE_COMMENT:
            return "comment that does not start a word"
    return None


def _in_token(root: Any, start: int) -> bool:
    """Whether the text at ``start`` lies inside one token bash reads as one piece."""
    node = root.descendant_for_byte_range(start, start + 2)
    return node is not None and node.type in _TOKENS
