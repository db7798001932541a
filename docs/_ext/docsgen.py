"""The docs' generated parts, and the checks that keep the hand-written parts true.

Generated, never written by hand: each page holds its generated text between
two comments,

    <!-- generated: settings-keys -->
    ...
    <!-- end: settings-keys -->

and ``python docs/_ext/docsgen.py`` rewrites every such region from the
program (the schemas, the typer app, the exit-status table; see
``docsources``). The generated text is committed, so the pages read the same
on GitHub as on the built site; the build and the tests check it is current.

The checks (``python docs/_ext/docsgen.py --check``, run by the Sphinx build,
where each problem is a warning and ``-W`` makes it an error, and by
``tests/test_docs.py``):

- every generated region is what the program generates now, and every
  generator has a region somewhere;
- every key of every schema has a ``description`` (or a ``title``), and a
  generated table shows it;
- hand-written text names no key the schemas lack: a backticked settings
  path (``policy.mode``, ``sandbox.network: off``) must be a settings key,
  and every ``yaml`` code block (and a SKILL.md's front-matter in a
  ``markdown`` block) must use only keys of the schema its top-level keys
  belong to. A block that is not mdagent configuration is tagged ``text``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent
sys.path.insert(0, str(HERE))

import clidocs  # noqa: E402
import docsources  # noqa: E402
from schemadocs import SchemaKeys, find_key, markdown_table, unknown_keys  # noqa: E402

REGION = re.compile(
    r"^<!-- generated: (?P<name>[a-z-]+) -->\n(?P<body>.*?)^<!-- end: (?P=name) -->$",
    re.S | re.M,
)
FENCE = re.compile(r"^(?P<fence>```+)(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)\s*$", re.S | re.M)
#: A backticked mention of a settings key (lower-case words joined by dots),
#: with an optional `: value` after it. `policy._exec_view` and
#: `sandbox.SandboxSettings` name code, not keys.
MENTION = re.compile(r"`([a-z][\w-]*(?:\.(?:[a-z][\w-]*|<\w+>)(?:\[\])?)+)(?::[^`]*)?`")
#: Backticked names that are files or modules, not keys (`agent.yaml`, `hooks.py`).
FILE_NAME = re.compile(r"\.(ya?ml|md|py|json|toml|sh|txt|lock|html|cfg|ini)$")
INCLUDE = re.compile(r"^```\{include\} (\S+)", re.M)
FIX = "run `python docs/_ext/docsgen.py` to regenerate it"


class Problem(NamedTuple):
    """Something wrong with the docs, at a page's line (``page`` relative to docs/;
    empty for a problem of a schema, which no page holds)."""

    page: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"docs/{self.page}:{self.line}: {self.message}" if self.page else self.message


# -- the generators --------------------------------------------------------------------


class Sources:
    """The schemas, read once per run, so a check sees which keys the tables showed."""

    def __init__(self, schema: Callable[[str], dict[str, Any]] | None = None) -> None:
        load = schema or docsources.schema
        self.keys = {name: SchemaKeys(name, load(name)) for name in docsources.SCHEMAS}


def _settings_keys(src: Sources) -> str:
    keys = src.keys["settings"]
    linked = {
        "hooks": "list of hooks (below)",
        "rules": "list of rules (below)",
    }
    main = keys.rows(linked=linked, defaults=docsources.default_settings())
    hooks = keys.rows("/$defs/hooks/items", "hooks.<event>[]")
    rules = keys.rows("/$defs/rules/items", "policy.<list>[]")
    return "\n".join(
        [
            markdown_table(main, with_default=True),
            "**Each hook** (an entry of `hooks.before`, `hooks.after`, `hooks.session_start`, "
            "`hooks.prompt` or `hooks.stop`):",
            "",
            markdown_table(hooks),
            "**Each rule** (an entry of `policy.allow`, `policy.ask` or `policy.deny`): "
            + (keys.described(keys.at("/$defs/rules/items")) or "")
            + ".",
            "",
            markdown_table(rules),
        ]
    )


def _skill_keys(src: Sources) -> str:
    linked = {"tests": "list of tests ([Testing your declarations](testing.md))"}
    return markdown_table(src.keys["skill"].rows(linked=linked))


def _tool_keys(src: Sources) -> str:
    linked = {"tests": "list of tests ([Testing your declarations](testing.md))"}
    return markdown_table(src.keys["declarations"].rows("/properties/tools", "tools", linked))


def _command_keys(src: Sources) -> str:
    linked = {"tests": "list of tests ([Testing your declarations](testing.md))"}
    return markdown_table(src.keys["declarations"].rows("/properties/commands", "commands", linked))


def _test_keys(src: Sources) -> str:
    declared = src.keys["declarations"]
    # SKILL.md's tests are the same shape: its copy shows through this table.
    skill = src.keys["skill"]
    skill.rows("/$defs/test", "tests[]")
    return markdown_table(declared.rows("/$defs/test", "tests[]"))


def _exit_statuses(src: Sources) -> str:
    lines = ["| status | meaning |", "|---|---|"]
    for status, meaning in docsources.exit_statuses():
        lines.append(f"| {status} | {meaning.replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"


def _cli_reference(src: Sources) -> str:
    return clidocs.reference(docsources.cli_command())


GENERATORS: dict[str, Callable[[Sources], str]] = {
    "settings-keys": _settings_keys,
    "skill-keys": _skill_keys,
    "tool-keys": _tool_keys,
    "command-keys": _command_keys,
    "test-keys": _test_keys,
    "exit-statuses": _exit_statuses,
    "cli-reference": _cli_reference,
}


# -- pages -----------------------------------------------------------------------------


def pages(docs: Path = DOCS) -> list[Path]:
    """The Markdown pages of the docs (the generator's own folder is not a page)."""
    return sorted(
        p for p in docs.rglob("*.md") if "_ext" not in p.parts and "_build" not in p.parts
    )


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _fenced(text: str) -> list[tuple[int, int]]:
    """Where the code blocks of ``text`` are (a region shown in one is an example)."""
    return [(m.start(), m.end()) for m in FENCE.finditer(text)]


def _outside_fences(text: str) -> list[re.Match[str]]:
    """The generated regions of ``text`` that are not inside a code block."""
    fences = _fenced(text)
    return [m for m in REGION.finditer(text) if not any(a <= m.start() < b for a, b in fences)]


def regenerate(text: str, src: Sources) -> str:
    """``text`` with every generated region filled in anew."""
    fences = _fenced(text)

    def fill(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in GENERATORS or any(a <= match.start() < b for a, b in fences):
            return match[0]
        body = GENERATORS[name](src)
        return f"<!-- generated: {name} -->\n{body}<!-- end: {name} -->"

    return REGION.sub(fill, text)


def write(docs: Path = DOCS, src: Sources | None = None) -> list[Path]:
    """Rewrite every page's generated regions; returns the pages that changed."""
    src = src or Sources()
    changed = []
    for page in pages(docs):
        text = page.read_text(encoding="utf-8")
        new = regenerate(text, src)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed


# -- checks ----------------------------------------------------------------------------


def problems(docs: Path = DOCS, src: Sources | None = None) -> list[Problem]:
    """Everything wrong with the docs in ``docs``; empty when they are current and true."""
    src = src or Sources()
    found: list[Problem] = []
    used: set[str] = set()
    for page in pages(docs):
        name = page.relative_to(docs).as_posix()
        text = page.read_text(encoding="utf-8")
        found += _regions(name, text, src, used)
        hand = _hand_written(text)
        found += _mentions(name, hand, src)
        found += _examples(name, hand, src)
        for included in INCLUDE.findall(text):  # the changelog: a page of its own elsewhere
            path = (page.parent / included).resolve()
            if path.is_file() and docs.resolve().parent in path.parents:
                where = path.relative_to(docs.resolve().parent).as_posix()
                other = path.read_text(encoding="utf-8")
                for problem in _mentions(where, other, src) + _examples(where, other, src):
                    message = f"{where}:{problem.line}: {problem.message}"
                    found.append(Problem("", 0, message))
    for missing in sorted(set(GENERATORS) - used):
        found.append(Problem("", 0, f"docs: no page shows the generated text '{missing}'"))
    found += _schema_problems(src)
    return found


def _regions(name: str, text: str, src: Sources, used: set[str]) -> list[Problem]:
    found = []
    regions = _outside_fences(text)
    for match in regions:
        region = match["name"]
        line = _line(text, match.start())
        if region not in GENERATORS:
            known = ", ".join(GENERATORS)
            found.append(Problem(name, line, f"unknown generated text '{region}' ({known})"))
            continue
        used.add(region)
        if match["body"] != GENERATORS[region](src):
            found.append(
                Problem(name, line, f"the generated text '{region}' is out of date: {FIX}")
            )
    prose = FENCE.sub(lambda m: "\n" * m[0].count("\n"), text)
    opened = len(re.findall(r"^<!-- generated: ", prose, re.M))
    if opened != len(regions):
        found.append(Problem(name, 1, "a '<!-- generated: NAME -->' has no '<!-- end: NAME -->'"))
    return found


def _hand_written(text: str) -> str:
    """``text`` with the generated regions blanked (line numbers kept)."""
    for match in reversed(_outside_fences(text)):
        text = text[: match.start()] + "\n" * match[0].count("\n") + text[match.end() :]
    return text


def _mentions(name: str, text: str, src: Sources) -> list[Problem]:
    """Backticked settings paths in prose that name no settings key."""
    settings = src.keys["settings"]
    sections = set(settings.properties(settings.schema))
    prose = FENCE.sub(lambda m: "\n" * m[0].count("\n"), text)
    found = []
    for match in MENTION.finditer(prose):
        path = match[1]
        parts = path.split(".")
        if parts[0] not in sections or FILE_NAME.search(path):
            continue
        if not find_key(settings, [p.removesuffix("[]") for p in parts]):
            found.append(
                Problem(
                    name,
                    _line(prose, match.start()),
                    f"`{path}` is no settings key (the settings schema has no such key)",
                )
            )
    return found


def _examples(name: str, text: str, src: Sources) -> list[Problem]:
    """YAML examples (and SKILL.md front-matter) that use keys their schema lacks."""
    import yaml

    found = []
    for match in FENCE.finditer(text):
        words = match["info"].split()
        language = words[0] if words else ""
        body = match["body"]
        line = _line(text, match.start())
        if language == "markdown" and body.startswith("---\n"):
            end = body.find("\n---", 4)
            if end < 0:
                continue
            body, schemas = body[4:end], ["skill"]
        elif language == "yaml":
            schemas = ["settings", "declarations", "skill"]
        else:
            continue
        try:
            data = yaml.safe_load(body)
        except yaml.YAMLError as err:
            found.append(Problem(name, line, f"a {language} example is not YAML: {err}"))
            continue
        if not isinstance(data, dict):
            continue  # a list: a fake provider's script, not a settings or declarations file
        schema = _schema_for(data, schemas, src)
        if schema is None:
            keys = ", ".join(map(str, data))
            found.append(
                Problem(
                    name,
                    line,
                    f"a yaml example whose top-level keys ({keys}) belong to no schema "
                    "(tag a block that is not mdagent configuration `text`)",
                )
            )
            continue
        for path in unknown_keys(src.keys[schema], data):
            found.append(
                Problem(name, line, f"the example uses `{path}`, which the {schema} schema lacks")
            )
    return found


def _schema_for(data: dict[str, Any], candidates: list[str], src: Sources) -> str | None:
    """The schema whose top-level keys cover the example's (settings first)."""
    if candidates == ["skill"]:
        return "skill"  # front-matter is SKILL.md's, whatever keys it has
    for candidate in candidates:
        keys = src.keys[candidate]
        if set(map(str, data)) <= set(keys.properties(keys.schema)):
            return candidate
    return None


def _schema_problems(src: Sources) -> list[Problem]:
    found = []
    for name, keys in src.keys.items():
        for where, node in keys.every_key():
            if not keys.described(node):
                message = f"schema {name}.json: the key at {where} has no description"
                found.append(Problem("", 0, message))
            elif id(node) not in keys.shown:
                message = f"schema {name}.json: no generated table shows the key at {where}"
                found.append(Problem("", 0, message))
    return found


# -- Sphinx ----------------------------------------------------------------------------


def setup(app: Any) -> dict[str, Any]:
    """The Sphinx extension: every problem is a warning at its page and line."""

    def check(app: Any) -> None:
        from sphinx.util import logging

        log = logging.getLogger("docsgen")
        for problem in problems(Path(app.srcdir)):
            if problem.page:
                where = (problem.page.removesuffix(".md"), problem.line)
                log.warning(problem.message, location=where)
            else:
                log.warning(problem.message)

    app.connect("builder-inited", check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv: list[str]) -> int:
    """``docsgen.py`` writes the generated text; ``--check`` reports problems (exit 1)."""
    if argv not in ([], ["--check"]):
        print("usage: python docs/_ext/docsgen.py [--check]", file=sys.stderr)
        return 2
    if not argv:
        for page in write():
            print(f"rewrote {page.relative_to(DOCS.parent)}")
    found = problems()
    for problem in found:
        print(problem, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
