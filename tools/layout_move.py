"""Move mdagent's flat modules into their packages (issue 31, LAYOUT.md 3.1), re-runnably.

    python tools/layout_move.py            # git mv what is still flat, then rewrite the references
    python tools/layout_move.py --check    # say what would move and which flat modules are unknown

Each run:

1. ``git mv src/mdagent/X.py src/mdagent/PACKAGE/X.py`` for every flat module in
   :data:`HOMES` (and the folders ``builtins/`` and ``schemas/``); each new
   package gets an empty ``__init__.py`` (``cli/``'s re-exports ``main`` lazily,
   so the entry point ``mdagent.cli:main`` keeps working).
2. Rewrites the references to the moved modules in src, tests, tools, benchmarks,
   docs (``_ext`` and the Markdown pages), README.md, config/, skills/ and
   pyproject.toml (not its import-linter contracts nor its entry points, which
   name packages):
   ``from mdagent import X`` (split per package when it names several),
   ``from mdagent.X import``, ``import mdagent.X``, every dotted string
   (``"mdagent.X.name"`` patch targets, ``"mdagent.X:attr"`` lazy loads), file
   paths ``mdagent/X.py``, and the package-relative ``"X.py"`` lists of the
   registry's compiler modules and of tests/test_architecture.py.

A module keeps its name: whole files move, nothing is split or renamed. Where a
package has the name of a module it holds (``registry/registry.py``),
``mdagent.registry.NAME`` is the old spelling unless NAME is a module of the
package: that keeps a second run from rewriting what the first one wrote, so
the script can run again after a merge brings new flat modules. It names the
flat modules it does not know (add them to :data:`HOMES` and run it again) and
exits 1 while there are any.
"""

from __future__ import annotations

import argparse
import re
import subprocess  # noqa: TID251 - git mv
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "mdagent"

#: package (a folder of src/mdagent/) -> the flat modules (or folders) it takes.
PACKAGES: dict[str, tuple[str, ...]] = {
    "core": (
        "errors", "records", "defaults", "specs", "globs", "signals", "layers", "yamlsource",
        "yamlfast", "fastcheck", "catalog", "names", "lazy", "calls", "notices", "statefiles",
        "httpclient", "foreignpaths", "escapes",
    ),
    "ui": ("console", "display", "render", "transcript", "approval", "events"),
    "safety": (
        "policy", "protected", "workspace", "environment", "sandbox", "namespaces", "nsinit",
        "envblock", "skillfolder", "commandfiles", "gitguard",
    ),
    "safety/shell": ("shellparse", "programs", "interpreters", "longoptions", "lexicon"),
    "store": ("store",),
    "declarations": (
        "declarations", "schemas", "edit", "skills", "skillbody", "mcpconfig", "interop", "memory",
    ),
    "rewind": ("rewind", "checkpoints", "checkpointstore"),
    "registry": ("registry",),
    "tools": (
        "toolbox", "dispatch", "implementations", "templates", "process", "hooks", "builtins",
    ),
    "mcp": ("mcpclient", "mcptools"),
    "runtime": ("runtime", "approvers", "person", "trust", "init"),
    "agent": (
        "loop", "conversation", "prompts", "ask", "promptskills", "checkpointing", "mentions",
        "rewindcommand",
    ),
    "session": ("repl", "lineinput", "session_commands", "commands"),
    "server": ("mcpserver",),
    "cli": (
        "cli", "edge", "app", "askcommand", "scaffold", "configshow", "declaredtests",
        "policycheck", "skillinstall",
    ),
}  # fmt: skip

#: flat module -> its package, dotted ("safety.shell").
HOMES = {m: pkg.replace("/", ".") for pkg, mods in PACKAGES.items() for m in mods}
#: What stays at the top of the package (besides the packages).
TOP = {"__init__", "__main__"}
#: Packages that were packages before the move and do not move.
STAYING = {"providers"}

INIT_DOCS = {
    "core": "The leaf: records, errors, defaults and the small helpers every layer uses.",
    "ui": "Terminal text: imported only by the edges, the agent and the runtime.",
    "safety": "The boundary: the policy and what the kernel holds; imports core only.",
    "safety.shell": "The shell model: what a command line runs, read without running it.",
    "store": "The SQLite store of sessions and the audit log.",
    "declarations": "Reading the YAML and SKILL.md declarations into specs.",
    "rewind": "Checkpoints of the files a session changed, and going back to them.",
    "registry": "The compiled registry of tools, commands and skills, and its cache.",
    "tools": "Running one tool call: the toolbox, dispatch, templates, processes, hooks.",
    "mcp": "Other MCP servers: the client and their tools.",
    "runtime": "The composition root: options, the runtime, approvers, trust.",
    "agent": "Turns: the loop, the conversation, prompts, `agent ask`.",
    "session": "The interactive edge: the session's loop, line input, its commands.",
    "server": "`agent mcp serve`: mdagent as an MCP server.",
}

CLI_INIT = '''"""The shell edge: ``agent`` and ``mdagent`` (entry point ``mdagent.cli:main``).

Nothing is imported here: :func:`main` loads :mod:`mdagent.cli.cli` when called,
so the ``/name`` fast path pays for one small module more.
"""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agent`` and ``mdagent`` scripts (:func:`mdagent.cli.cli.main`)."""
    from mdagent.cli.cli import main as run

    return run(argv)
'''

#: Where references are rewritten (relative to the repository), by glob.
SCOPE = (
    "src/**/*.py",
    "tests/**/*.py",
    "tests/**/*.yaml",
    "tests/**/*.md",
    "tools/*.py",
    "benchmarks/*.py",
    "docs/_ext/*.py",
    "docs/*.md",
    "docs/conf.py",
    "README.md",
    "config/**/*.py",
    "config/**/*.yaml",
    "skills/**/*.py",
    "skills/**/*.md",
    ".ci/run",
)
#: Files whose package-relative ``"X.py"`` entries name modules.
RELATIVE_LISTS = ("src/mdagent/registry/compile.py", "tests/test_architecture.py")


def target(module: str) -> str:
    """The dotted path below ``mdagent`` a flat module moves to."""
    return f"{HOMES[module]}.{module}"


def members(package: str) -> set[str]:
    """The modules (and subpackages) of a new package, by name."""
    names = {m for m, home in HOMES.items() if home == package}
    names |= {h.split(".")[1] for h in HOMES.values() if "." in h and h.split(".")[0] == package}
    return names


def flat_modules() -> list[str]:
    """The modules and folders at the top of src/mdagent/ that are still to move."""
    found = []
    for path in sorted(PACKAGE.iterdir()):
        if path.suffix == ".py" and path.stem not in TOP:
            found.append(path.stem)
        elif (path / "__init__.py").exists() and path.name in HOMES and path.name not in PACKAGES:
            found.append(path.name)
    return found


def unknown_modules() -> list[str]:
    return [m for m in flat_modules() if m not in HOMES]


def git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=REPO, check=True)


def move() -> list[str]:
    """``git mv`` what is still flat; the packages' ``__init__.py``; the modules moved."""
    moved = []
    for package in PACKAGES:
        folder = PACKAGE / package
        folder.mkdir(parents=True, exist_ok=True)
        init = folder / "__init__.py"
        if not init.exists():
            dotted = package.replace("/", ".")
            text = CLI_INIT if package == "cli" else f'"""{INIT_DOCS[dotted]}"""\n'
            init.write_text(text)
            git("add", str(init.relative_to(REPO)))
    for module in flat_modules():
        if module not in HOMES:
            continue
        folder = PACKAGE / module
        is_folder = module not in PACKAGES and (folder / "__init__.py").exists()
        source = folder if is_folder else PACKAGE / f"{module}.py"
        destination = PACKAGE / PACKAGES_OF[module] / source.name
        if destination.exists():
            continue
        git("mv", str(source.relative_to(REPO)), str(destination.relative_to(REPO)))
        moved.append(module)
    return moved


PACKAGES_OF = {m: pkg for pkg, mods in PACKAGES.items() for m in mods}
NAMES = "|".join(sorted(HOMES, key=len, reverse=True))
FROM_MDAGENT = re.compile(
    r"^(?P<indent>[ \t]*)from mdagent import (?P<body>\([^)]*\)|[^\n#]*?)(?P<comment>[ \t]*#[^\n]*)?$",
    re.M,
)
DOTTED = re.compile(rf"(?<![\w.])mdagent\.(?P<mod>{NAMES})(?!\w)")
FILE_PATH = re.compile(rf"(?:(?<![\w./])|(?<=src/))mdagent/(?P<mod>{NAMES})(?=\.py\b|/)")
RELATIVE = re.compile(rf'"(?P<mod>{NAMES})(?=\.py"|/)')
#: ``from mdagent import X`` after ``;`` or a quote, in a ``python -c`` line of a test.
INLINE_FROM = re.compile(
    r"(?<=[;\"'])(?P<indent>[ \t]*)from mdagent import (?P<body>[\w ,]+?)(?=;|\n|[\"'])"
)
IMPORTED = re.compile(r"[ \t]+import[ \t]+\(?\s*(?P<first>\w+)")


def _split_from_mdagent(match: re.Match[str], joiner: str = "\n") -> str:
    body = match["body"].strip().strip("()")
    items = [i.strip() for i in body.replace("\n", " ").split(",") if i.strip()]
    groups: dict[str, list[str]] = {}
    for item in items:
        name = item.split()[0]
        groups.setdefault(f"mdagent.{HOMES[name]}" if name in HOMES else "mdagent", []).append(item)
    if list(groups) == ["mdagent"]:
        return match[0]
    indent = match["indent"]
    comment = (match.groupdict().get("comment") or "") if joiner == "\n" else ""
    lines = [f"{indent}from {home} import {', '.join(names)}" for home, names in groups.items()]
    lines[0] += comment
    return joiner.join(lines)


def _relative(match: re.Match[str]) -> str:
    module = match["mod"]
    if HOMES[module] == module:
        after = re.match(r"/(\w+)", match.string[match.end() :])
        if after and after[1] in members(module):
            return match[0]
    return f'"{PACKAGES_OF[module]}/{module}'


def _dotted(match: re.Match[str]) -> str:
    module = match["mod"]
    home = HOMES[module]
    if home == module:
        # mdagent.registry is the package now: its own modules follow (already moved).
        rest = match.string[match.end() :]
        if module == "cli" and rest.startswith(":main"):
            return match[0]  # the entry point: cli/__init__.py's main() (CLI_INIT)
        after = re.match(r"\.(\w+)", rest) or IMPORTED.match(rest)
        if after and after[1] in members(home):
            return match[0]
    return f"mdagent.{target(module)}"


def _file_path(match: re.Match[str]) -> str:
    module = match["mod"]
    if HOMES[module] == module:
        after = re.match(r"/(\w+)", match.string[match.end() :])
        if after and after[1] in members(module):
            return match[0]
    return f"mdagent/{PACKAGES_OF[module]}/{module}"


def rewrite(text: str, relative_lists: bool = False) -> str:
    text = FROM_MDAGENT.sub(_split_from_mdagent, text)
    text = INLINE_FROM.sub(lambda m: _split_from_mdagent(m, "; "), text)
    text = DOTTED.sub(_dotted, text)
    text = FILE_PATH.sub(_file_path, text)
    if relative_lists:
        text = RELATIVE.sub(_relative, text)
    return text


def rewrite_pyproject(text: str) -> str:
    """The references of pyproject.toml but its entry points and import-linter contracts."""
    head, sep, contracts = text.partition("\n[tool.importlinter]\n")
    scripts = re.search(r"(?ms)^\[project\.scripts\].*?(?=^\[)", head)
    if scripts:
        start, end = scripts.span()
        head = rewrite(head[:start]) + head[start:end] + rewrite(head[end:])
    else:
        head = rewrite(head)
    return _package_list(head) + sep + contracts


def _package_list(text: str) -> str:
    """setuptools' ``packages = [...]``: every package of src/mdagent/ (and the bundled layer)."""
    found = sorted(
        ".".join(p.parent.relative_to(PACKAGE.parent).parts)
        for p in PACKAGE.rglob("__init__.py")
        if "__pycache__" not in p.parts
    )
    entries = "".join(f'    "{name}",\n' for name in found)
    entries += '    "mdagent.bundled.skills",\n    "mdagent.bundled.config",\n'
    return re.sub(r"(?ms)^packages = \[\n.*?^\]", f"packages = [\n{entries}]", text, count=1)


def codemod() -> list[Path]:
    changed = []
    files = {p for pattern in SCOPE for p in REPO.glob(pattern) if p.is_file()}
    files.discard(Path(__file__).resolve())
    for path in sorted(files):
        if any(part in {".venv", "__pycache__", "_build"} for part in path.parts):
            continue
        text = path.read_text()
        relative = path.relative_to(REPO).as_posix()
        new = rewrite(text, relative in RELATIVE_LISTS)
        if new != text:
            path.write_text(new)
            changed.append(path)
    pyproject = REPO / "pyproject.toml"
    text = pyproject.read_text()
    new = rewrite_pyproject(text)
    if new != text:
        pyproject.write_text(new)
        changed.append(pyproject)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/layout_move.py", description=__doc__)
    parser.add_argument("--check", action="store_true", help="say what would move; change nothing")
    parser.add_argument("--no-move", action="store_true", help="only rewrite the references")
    parser.add_argument(
        "--move-only",
        action="store_true",
        help="only git mv (a commit of its own: git log --follow)",
    )
    args = parser.parse_args(argv)
    unknown = unknown_modules()
    if args.check:
        for module in flat_modules():
            if module in HOMES:
                print(f"{module} -> mdagent.{target(module)}")
    else:
        moved = [] if args.no_move else move()
        for module in moved:
            print(f"moved {module} -> mdagent.{target(module)}")
        for path in [] if args.move_only else codemod():
            print(f"rewrote {path.relative_to(REPO)}")
    for module in unknown:
        print(f"unknown flat module: src/mdagent/{module}.py (add it to PACKAGES)", file=sys.stderr)
    return 1 if unknown else 0


if __name__ == "__main__":
    raise SystemExit(main())
