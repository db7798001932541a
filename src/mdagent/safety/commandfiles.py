"""The files a hook's or an MCP server's command runs, read as the shell would find them.

Trust is bound to these files (:mod:`mdagent.runtime.trust`) and the sandbox holds
them read-only (:mod:`mdagent.safety.protectedfiles`): one reading for both, so what
trust binds the kernel holds. A command that names the file it runs only at
run time (a variable, a glob, ``$(…)``) is reported, never guessed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mdagent.safety.shell.lexicon import SHELLS

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any


_WORDS = re.compile(r"[^\s;&|<>()`'\"=]+")
# Variables that name the workspace where hooks and servers run (their folder).
_WORKSPACE_VARIABLE = re.compile(
    r"\$(\{(PWD|AGENT_WORKSPACE|CLAUDE_PROJECT_DIR)\}|(PWD|AGENT_WORKSPACE|CLAUDE_PROJECT_DIR)\b)"
)
# Interpreters whose `-m NAME` runs a module found in the folder they start in.
_MODULE_RUNNERS = re.compile(r"python[\d.]*|pypy[\d.]*")


def named_files(
    run: Any, base: Path, workspace: Path, unknown: list[str] | None = None
) -> list[str]:
    """Files inside ``workspace`` that a command names (``run`` as text or words).

    Every word, and every part of a word between shell punctuation, that
    names a file under ``workspace`` (relative to ``base``), or a path with
    a ``/`` or a ``.`` there that does not exist yet (its appearing changes
    what runs); ``$PWD``, ``$AGENT_WORKSPACE`` and ``$CLAUDE_PROJECT_DIR``
    are the workspace (where hooks run); ``python -m NAME`` names the
    module's files. ``unknown``, when given, collects the words that name a
    file only at run time (another variable, a glob, ``$(…)``): trust
    cannot be bound to those (fail closed).
    """
    words = run if isinstance(run, list) else [run] if isinstance(run, str) else []
    words = [_WORKSPACE_VARIABLE.sub(lambda _: str(workspace), str(w)) for w in words]
    candidates: list[str] = []
    for word in words:
        unquoted = re.sub(r"[\"']", "", str(word))  # `"$PWD"/x.sh` is one word to the shell
        candidates += [str(word), *_WORDS.findall(str(word)), *unquoted.split()]
    if unknown is not None:
        for command in _shell_text(run):
            expanded = _WORKSPACE_VARIABLE.sub(lambda _: str(workspace), command)
            if _runs_a_file_named_at_run_time(expanded):
                unknown.append(command)
    for module in _modules_run(words):
        path = module.replace(".", "/")
        candidates += [f"{path}.py", f"{path}/__init__.py", f"{path}/__main__.py"]
    found = []
    for text in dict.fromkeys(candidates):
        if not text or text.startswith("-") or any(c.isspace() for c in text):
            continue  # an option, or a whole command line (its words are candidates)
        try:
            named = Path(os.path.normpath(Path(base) / os.path.expanduser(text)))
            path = Path(os.path.realpath(named))
        except (OSError, ValueError):
            continue
        # Named inside the workspace: covered wherever a link inside it leads.
        inside = path.is_relative_to(workspace) or named.is_relative_to(workspace)
        if path == workspace or named == workspace or not inside:
            continue
        if path.is_file() or (("/" in text or _SCRIPT.search(text)) and not path.exists()):
            found.append(str(path))
    return found


def _shell_text(run: Any) -> list[str]:
    """The command lines a shell reads in ``run``: the text itself, or a list's
    ``sh -c TEXT`` (a list's other words reach the program as they are)."""
    if isinstance(run, str):
        return [run]
    words = [str(w) for w in run] if isinstance(run, list) else []
    if words and os.path.basename(words[0]) in SHELLS:
        return [
            w
            for i, w in enumerate(words[1:], 1)
            if words[i - 1].startswith("-") and "c" in words[i - 1]
        ]
    return []


def _quoted_text_removed(word: str) -> str:
    """``word`` without single-quoted text (literal to the shell): what may still expand."""
    return re.sub(r"'[^']*'", "", word)


# Programs whose first operand is a file they run.
_RUNNERS = re.compile(
    "|".join(re.escape(shell) for shell in sorted(SHELLS))
    + r"|source|\.|exec|env|python[\d.]*|pypy[\d.]*|node|deno|bun|ruby"
    r"|perl|php|lua|Rscript|tclsh|awk|make|npx|uv|poetry"
)
_GLOB_WORDS = {"[", "]", "[[", "]]", "{", "}"}
# A file name a script has (`guard.sh`): bound even while absent, as a path with a `/` is.
_SCRIPT = re.compile(
    r"\.(sh|bash|zsh|fish|py|pyw|js|mjs|cjs|ts|rb|pl|php|lua|tcl|r|jl|ps1|mk)$", re.I
)


def _runs_a_file_named_at_run_time(command: str) -> bool:
    """Whether ``command`` may run a file whose name is known only at run time:
    a program or script named by a variable, ``$(…)`` or a glob (``sh "$D/x.sh"``,
    ``sh scripts/gu*.sh``, ``$TOOL``). Expansions that only pass data along
    (``grep -q "$x"``) do not count."""
    text = _quoted_text_removed(command)
    for segment in re.split(r"[;&|\n]+|\b(?:then|do|else)\b", text):
        tokens = [t.strip('"') for t in segment.split()]
        tokens = [t for t in tokens if t and not re.fullmatch(r"\w+=.*", t)] or [""]
        running = True  # the first word runs; so does a runner's first operand
        for token in tokens:
            dynamic = "$" in token or "`" in token
            globbed = token not in _GLOB_WORDS and bool(re.search(r"[*?\[]|\{.*[,.].*\}", token))
            if (dynamic or globbed) and (running or "/" in token):
                return True
            if token.startswith("-"):
                continue
            running = bool(_RUNNERS.fullmatch(os.path.basename(token)))
    return False


def _modules_run(words: list[str]) -> list[str]:
    """The modules ``python -m NAME`` runs in ``words`` (a list, or words of a command line)."""
    split = [w for word in words for w in (str(word).split() if " " in str(word) else [word])]
    out = []
    for i, word in enumerate(split[:-1]):
        program = os.path.basename(str(word))
        if _MODULE_RUNNERS.fullmatch(program):
            rest = split[i + 1 :]
            for j, option in enumerate(rest[:-1]):
                if option == "-m" or (option.startswith("-") and option.endswith("m")):
                    out.append(rest[j + 1].strip("'\""))
                    break
                if not option.startswith("-"):
                    break
            else:
                if rest and rest[0].startswith("-m") and len(rest[0]) > 2:
                    out.append(rest[0][2:])
    return out
