"""The docs cannot drift from the code (docs/_ext: docsgen, schemadocs, clidocs, runnable).

The generated parts (key tables, the CLI reference, the exit statuses) must
be what the program generates now; a schema key without a description, a
key no table shows, or a key the hand-written text names that the schema
lacks, is a problem the strict build turns into an error.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, agent_executable

sys.path.insert(0, str(REPO / "docs" / "_ext"))

import docsgen  # noqa: E402
import docsources  # noqa: E402
import runnable  # noqa: E402

DOCS = REPO / "docs"


def schema_with(name: str, change):
    """A schema loader whose schema ``name`` is changed by ``change(schema)``."""
    base = docsources.schema

    def load(wanted: str):
        data = copy.deepcopy(base(wanted))
        if wanted == name:
            change(data)
        return data

    return load


# -- the docs as they are ----------------------------------------------------------------


def test_the_docs_are_current_and_name_only_real_keys():
    found = docsgen.problems()
    assert found == [], "\n".join(map(str, found))


def test_every_generator_fills_a_page_and_every_page_is_in_the_table_of_contents():
    text = "".join(p.read_text(encoding="utf-8") for p in docsgen.pages())
    for name in docsgen.GENERATORS:
        assert f"<!-- generated: {name} -->" in text
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for page in docsgen.pages():
        if page.name != "index.md":
            assert re.search(rf"^{re.escape(page.stem)}$", index, re.M), page.name


def test_the_pages_the_issue_asks_for_exist():
    for stem in (
        "getting-started",
        "skills",
        "tools",
        "commands",
        "settings",
        "cli",
        "session",
        "models",
        "mcp",
        "sharing",
        "trust",
        "security",
        "other-agents",
        "scripts-ci",
        "testing",
        "architecture",
        "benchmarks",
        "changelog",
        "mutation",
    ):
        assert (DOCS / f"{stem}.md").is_file(), stem


# -- a schema key: described, shown, or the build fails ----------------------------------


def test_a_schema_key_without_a_description_fails():
    def add(schema):
        schema["properties"]["agent"]["properties"]["patience"] = {"type": "integer"}

    found = docsgen.problems(src=docsgen.Sources(schema_with("settings", add)))
    messages = [p.message for p in found]
    assert any(
        "settings.json" in m
        and "properties/agent/properties/patience" in m
        and "no description" in m
        for m in messages
    ), messages


def test_a_described_schema_key_appears_in_the_generated_table_and_the_page_is_stale_until_rewritten(
    tmp_path,
):
    def add(schema):
        schema["$defs"]["command"]["properties"]["color"] = {
            "type": "boolean",
            "description": "Paint the output.",
        }

    src = docsgen.Sources(schema_with("declarations", add))
    table = docsgen.GENERATORS["command-keys"](src)
    assert "| `commands.<name>.color` | boolean | Paint the output. |" in table
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs, ignore=shutil.ignore_patterns("_build", "_ext"))
    stale = [p for p in docsgen.problems(docs, docsgen.Sources(schema_with("declarations", add)))]
    assert [str(p) for p in stale] == [
        "docs/commands.md:"
        + str(_line_of(docs / "commands.md", "<!-- generated: command-keys -->"))
        + ": the generated text 'command-keys' is out of date: "
        + docsgen.FIX
    ]
    assert docsgen.write(docs, docsgen.Sources(schema_with("declarations", add))) == [
        docs / "commands.md"
    ]
    assert "`commands.<name>.color`" in (docs / "commands.md").read_text(encoding="utf-8")
    assert docsgen.problems(docs, docsgen.Sources(schema_with("declarations", add))) == []


def test_a_schema_key_no_table_shows_fails():
    def add(schema):
        schema["$defs"]["unused"] = {
            "type": "object",
            "properties": {"orphan": {"type": "string", "description": "Nobody shows me."}},
        }

    found = docsgen.problems(src=docsgen.Sources(schema_with("settings", add)))
    assert [p.message for p in found] == [
        "schema settings.json: no generated table shows the key at #/$defs/unused/properties/orphan"
    ]


def _line_of(path: Path, text: str) -> int:
    return path.read_text(encoding="utf-8").splitlines().index(text) + 1


# -- hand-written text names only keys the schemas have ----------------------------------

PAGE = """\
# A page

Set `policy.mode` or `sandbox.network: off`; `policy.modez` is a typo, and
so is `hooks.befor`. `agent.yaml`, `skills.lock`, `hooks.py` and
`policy._exec_view` are files and code, not keys; `mcp_servers.github.url`
names a server of your own.

```yaml
# .agents/config/agent.yaml
policy:
  mode: ask
sandbox: {netwrok: off}
hooks:
  before: [{tool: exec, run: ./guard.sh, on_eror: warn}]
```

```yaml
tools:
  hi:
    description: Say hi
    params: {name: {type: string, whatever: 1}}
    run: [echo, "{name}"]
    aprove: true
```

```yaml
nothing: here
```

```markdown
---
name: x
command-tol: exec
metadata: {openclaw: {anything: goes}}
---
Body.
```

```yaml
- text: a scripted reply, not checked
```

```text
polcy: this block is not configuration
```
"""


def test_keys_the_hand_written_text_names_must_exist(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.md").write_text(PAGE, encoding="utf-8")
    found = [
        str(p)
        for p in docsgen.problems(docs)
        if p.page  # schema problems are the real docs'
    ]
    assert found == [
        "docs/page.md:3: `policy.modez` is no settings key (the settings schema has no such key)",
        "docs/page.md:4: `hooks.befor` is no settings key (the settings schema has no such key)",
        "docs/page.md:8: the example uses `sandbox.netwrok`, which the settings schema lacks",
        "docs/page.md:8: the example uses `hooks.before[].on_eror`, which the settings schema lacks",
        "docs/page.md:17: the example uses `tools.hi.aprove`, which the declarations schema lacks",
        "docs/page.md:26: a yaml example whose top-level keys (nothing) belong to no schema "
        "(tag a block that is not mdagent configuration `text`)",
        "docs/page.md:30: the example uses `command-tol`, which the skill schema lacks",
    ]


def test_a_generated_region_shown_inside_a_code_block_is_an_example(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    text = (
        "# P\n\n```text\n<!-- generated: settings-keys -->\n...\n<!-- end: settings-keys -->\n```\n"
    )
    (docs / "p.md").write_text(text, encoding="utf-8")
    assert docsgen.write(docs) == []
    assert [str(p) for p in docsgen.problems(docs) if p.page] == []


def test_an_unknown_or_unclosed_region_is_a_problem(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "p.md").write_text(
        "# P\n\n<!-- generated: nonsense -->\nx\n<!-- end: nonsense -->\n\n"
        "<!-- generated: cli-reference -->\n",
        encoding="utf-8",
    )
    found = [str(p) for p in docsgen.problems(docs) if p.page]
    assert found[0].startswith("docs/p.md:3: unknown generated text 'nonsense'")
    assert found[1] == "docs/p.md:1: a '<!-- generated: NAME -->' has no '<!-- end: NAME -->'"


def test_the_docsgen_command_checks_and_exits_1_on_a_problem(tmp_path):
    done = subprocess.run(
        [sys.executable, str(DOCS / "_ext" / "docsgen.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (0, "")
    wrong = subprocess.run(
        [sys.executable, str(DOCS / "_ext" / "docsgen.py"), "--nonsense"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert wrong.returncode == 2 and "usage:" in wrong.stderr


# -- the strict build fails on each of these -----------------------------------------------


def test_the_strict_build_fails_on_a_schema_key_without_a_description(
    tmp_path, monkeypatch, capsys
):
    sphinx = pytest.importorskip(
        "sphinx.cmd.build", reason="the docs extra: pip install -e '.[docs]'"
    )
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs, ignore=shutil.ignore_patterns("_build"))
    (tmp_path / "CHANGELOG.md").write_text((REPO / "CHANGELOG.md").read_text(encoding="utf-8"))

    def add(schema):
        schema["properties"]["exec"]["properties"]["niceness"] = {"type": "integer"}

    monkeypatch.setattr(docsources, "schema", schema_with("settings", add))
    # The copied conf.py puts the copied _ext first on sys.path: make it find these
    # modules (the patched docsources) rather than import the copies afresh.
    status = sphinx.build_main(
        ["-W", "--keep-going", "-q", "-b", "html", str(docs), str(tmp_path / "html")]
    )
    err = capsys.readouterr().err
    assert status != 0
    assert "properties/exec/properties/niceness has no description" in err
    assert "the generated text 'settings-keys' is out of date" in err


# -- the CLI reference has everything --help shows -------------------------------------------


def _help(*words: str) -> str:
    done = subprocess.run(
        [agent_executable(), *words, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _listed(text: str, section: str) -> list[str]:
    """The first words of a --help section's entries (``Options:``, ``Commands:``)."""
    if f"\n{section}:\n" not in text:
        return []
    lines = text.split(f"\n{section}:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    # An entry starts two spaces in; its wrapped lines start further in.
    entries = [line for line in lines if re.match(r"  \S", line)]
    return [line.split()[0].rstrip(",") for line in entries]


def test_every_command_and_option_agent_help_shows_is_in_the_cli_reference(workspace):
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^#{2,4} `([^`]+)`\n(.*?)(?=^#{2,4} `|\Z)", page, re.S | re.M))
    pending = [()]
    seen = 0
    while pending:
        words = pending.pop()
        text = _help(*words)
        title = " ".join(("agent", *words))
        assert title in sections, f"{title} has no section in docs/cli.md"
        body = sections[title]
        option_lines = text.split("\nOptions:\n", 1)[1].split("\n\n", 1)[0]
        for name in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", option_lines):
            assert re.search(rf"`[^`]*(?<![\w-]){re.escape(name)}(?![\w-])[^`]*`", body), (
                f"{title}: {name} is not in its section of docs/cli.md"
            )
            seen += 1
        for argument in _listed(text, "Arguments"):
            assert f"`{argument}`" in body, f"{title}: argument {argument}"
        for command in _listed(text, "Commands"):
            assert f"`{title} {command}`" in body, f"{title}: {command} not listed"
            pending.append((*words, command))
    assert seen > 40  # every subcommand's options were read, not none


# -- runnable examples -------------------------------------------------------------------------


def test_runnable_blocks_are_read_in_page_order():
    text = (
        "```yaml file=a/b.yaml\nx: 1\n```\n\n"
        "```console runnable\n$ cat a/b.yaml\nx: 1\n$ echo one \\\n  two\none two\n```\n\n"
        "```console\n$ not run\n```\n"
    )
    assert runnable.steps(text) == [
        runnable.FileStep(1, "a/b.yaml", "x: 1\n"),
        runnable.CommandStep(6, "cat a/b.yaml", "x: 1"),
        runnable.CommandStep(8, "echo one \\\n  two", "one two"),
    ]


@pytest.mark.parametrize(
    ("expected", "actual", "holds"),
    [
        ("a\nb", "a\nb\n\n", True),
        ("a\nb", "a\nc", False),
        ("a\n...\nz", "a\nb\nc\nz", True),
        ("a\n...\nz", "a\nz", True),
        ("took ... s", "took 0.1 s", True),
        ("took ... s", "took 0.1 ms", False),
        ("a", "a\nb", False),
        ("[x]", "[x]", True),
    ],
)
def test_shown_output_matches_with_ellipses(expected, actual, holds):
    assert runnable.matches(expected, actual) is holds


def test_an_example_whose_output_changed_fails(tmp_path):
    page = "```console runnable\n$ echo hello\nhullo\n$ false\n```\n"
    env = runnable.example_env(str(Path(agent_executable()).parent))
    failures = runnable.run_page(page, tmp_path, env, "page.md")
    assert failures[0].startswith(
        "page.md:2: `echo hello` printed\nhello\n--- the page shows\nhullo"
    )
    assert failures[1].startswith("page.md:4: `false` exited 1")
    assert len(failures) == 2


# -- the changelog and the version -------------------------------------------------------------


def test_the_changelog_keeps_a_changelog_and_its_newest_release_is_the_version():
    from mdagent import __version__

    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## \[([^\]]+)\](.*)$", text, re.M)
    assert versions[0] == ("Unreleased", "")
    for version, date in versions[1:]:
        assert re.fullmatch(r"\d+\.\d+\.\d+", version) and re.fullmatch(r" - \d{4}-\d\d-\d\d", date)
    assert versions[1][0] == __version__
    kinds = set(re.findall(r"^### (.*)$", text, re.M))
    assert kinds <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    unreleased = text.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
    assert "### Changed" in unreleased
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert f'\nversion = "{__version__}"\n' in pyproject


def github_anchor(heading: str) -> str:
    """The anchor GitHub (and MyST's heading anchors) give a heading: ``## The modules`` -> ``the-modules``."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_readme_is_short_and_every_page_it_links_exists():
    # Issue 37: the README is the front door (at most 300 lines); docs/ is the
    # reference, reached by relative links that must lead somewhere.
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert any(link.startswith("docs/") for link in local)
    for link in local:
        path, _, anchor = link.partition("#")
        assert not path.startswith("/"), f"README links {link}: use a relative path"
        target = REPO / path
        assert target.is_file(), f"README links {link}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.M)
            assert anchor in {github_anchor(h) for h in headings}, (
                f"README links {link}: no such heading"
            )


def test_every_page_the_readme_table_promises_is_linked():
    # Each page of the docs a reader looks things up in is reachable from the README.
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    linked = {
        Path(link.partition("#")[0]).name for link in re.findall(r"\]\((docs/[^)\s]+)\)", readme)
    }
    pages = {page.name for page in DOCS.glob("*.md")} - {"changelog.md"}
    assert pages - linked == set()
