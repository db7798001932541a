"""Skills that travel (issue 14), through the real ``agent`` executable.

Each section is an item of the issue: a skill's folder is part of the skill
(1), discovery like the rest of the ecosystem (2), one broken part never
costs the whole skill (3-5), ``agent check`` finds what a new author gets
wrong (6-9), pathological input (10) and ``command-with`` (11). Skills are
written in the shapes anthropics/skills, obra/superpowers, openai/skills and
OpenClaw publish; the OpenClaw corpus in ``../shared/corpus`` is loaded as
it is, when present. ``HOME`` is a temporary folder (tests/conftest.py), so
the developer's own ``~/.claude/skills`` never leaks in.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import CORPUS, ask, provider_args, scripted_model, settings, tool_results, write


def home() -> Path:
    return Path(os.environ["HOME"])


def skill_md(name: str, extra: str = "", body: str = "Body.\n", description: str = "d") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


def check_lines(result) -> list[str]:
    return result.stdout.splitlines()


def skills_json(run_agent, *args: str) -> dict[str, dict]:
    result = run_agent(*args, "skills", "--json")
    assert result.returncode == 0, result.stderr
    return {s["name"]: s for s in json.loads(result.stdout)}


# Real-world shapes, written the way each collection writes them.
ANTHROPIC = """---
name: pdf
description: Comprehensive PDF manipulation toolkit for extracting text and tables, creating new PDFs, merging/splitting documents, and handling forms. When Claude needs to fill in a PDF form or programmatically process, generate, or analyze PDF documents at scale.
license: Proprietary. LICENSE.txt has complete terms
---

# PDF Processing Guide

For advanced features, see references/forms.md and run `python scripts/check_fields.py`.
"""
OBRA = """---
name: brainstorming
description: "You MUST use this before any creative work - creating features, building components, adding functionality, or modifying behavior. Explores user intent, requirements and design before implementation."
---

# Brainstorming Ideas Into Designs
"""
OPENAI = """---
name: gh-fix-ci
description: Inspect GitHub PR checks with gh, pull failing GitHub Actions logs, summarize failure context, then create a fix plan and implement after user approval.
metadata:
  short-description: Debug failing GitHub Actions CI
---

# Gh PR Checks Plan Fix
"""


# -- 1. a skill's folder is part of the skill -------------------------------------------


def test_the_model_reads_a_user_skills_references_but_nothing_beside_it(workspace, run_agent):
    folder = Path(os.environ["AGENT_HOME"]) / "skills" / "pdf"
    write(folder / "SKILL.md", ANTHROPIC.replace("see references", "see {baseDir}/references"))
    write(folder / "references" / "forms.md", "FORMS GUIDE\n")
    write(folder / "scripts" / "check_fields.py", "print('fields')\n")
    write(folder.parent / "beside.md", "NOT A SKILL FILE\n")
    write(
        folder.parent / "hidden" / "SKILL.md",
        skill_md("hidden", "disable-model-invocation: true\n"),
    )
    write(folder.parent / "hidden" / "notes.md", "PERSON ONLY\n")
    calls = [
        ("skill", {"name": "pdf"}),
        ("read_file", {"path": str(folder / "references" / "forms.md")}),
        ("glob", {"pattern": "**/*.py", "path": str(folder)}),
        ("grep", {"pattern": "FORMS", "path": str(folder)}),
        ("read_file", {"path": str(folder.parent / "beside.md")}),
        ("read_file", {"path": str(folder / ".." / "beside.md")}),
        ("skill", {"name": "hidden"}),
        ("read_file", {"path": str(folder.parent / "hidden" / "notes.md")}),
        ("write_file", {"path": str(folder / "references" / "forms.md"), "content": "x"}),
    ]
    with scripted_model(*calls) as server:
        result = ask(run_agent, server)
    assert result.returncode == 0, result.stderr
    loaded, read, globbed, grepped, beside, dotdot, hidden, hidden_file, written = tool_results(
        server
    )
    assert loaded["ok"] and loaded["path"] == str(folder.resolve())
    assert f"see {folder.resolve()}/references/forms.md" in loaded["output"]
    assert loaded["files"] == ["references/forms.md", "scripts/check_fields.py"]
    assert read["ok"] and "FORMS GUIDE" in read["output"]
    assert globbed["files"] == [str((folder / "scripts" / "check_fields.py").resolve())]
    assert grepped["ok"] and "FORMS GUIDE" in grepped["output"]
    for refused in (beside, dotdot, hidden_file):
        assert not refused["ok"] and refused["code"] == "DENIED", refused
        assert "escapes the workspace" in refused["error"]
    assert "NOT A SKILL FILE" not in json.dumps(server.requests[-1]["json"])
    assert not hidden["ok"] and hidden["error"].startswith("unknown skill: hidden")
    assert not written["ok"] and (folder / "references" / "forms.md").read_text() == "FORMS GUIDE\n"


def test_a_skills_script_runs_through_exec_under_the_policy(workspace, run_agent):
    folder = Path(os.environ["AGENT_HOME"]) / "skills" / "report"
    write(folder / "SKILL.md", skill_md("report", body="Run {baseDir}/scripts/go.sh\n"))
    script = write(folder / "scripts" / "go.sh", '#!/bin/sh\ncat "$(dirname "$0")/data.txt"\n')
    script.chmod(0o755)
    write(folder / "scripts" / "data.txt", "SCRIPT READ ITS FOLDER\n")
    settings(workspace, f"policy:\n  allow: ['exec({script.resolve()})']\n")
    with scripted_model(("exec", {"command": str(script.resolve())})) as server:
        result = ask(run_agent, server)
    (ran,) = tool_results(server)
    assert result.returncode == 0 and ran["ok"], ran
    assert ran["stdout"] == "SCRIPT READ ITS FOLDER\n"
    with scripted_model(("exec", {"command": f"{script.resolve()} && true"})) as server:
        ask(run_agent, server)
    (asked,) = tool_results(server)
    assert not asked["ok"] and asked["code"] == "DENIED"  # no rule covers it: asked, no terminal


# -- 2. discovery like the rest of the ecosystem ----------------------------------------


def test_other_agents_skill_folders_are_layers_with_their_own_sources(
    workspace, run_agent, tmp_path
):
    write(workspace / ".claude" / "skills" / "brainstorming" / "SKILL.md", OBRA)
    write(home() / ".claude" / "skills" / "documents" / "pdf" / "SKILL.md", ANTHROPIC)
    write(home() / ".codex" / "skills" / ".system" / "gh-fix-ci" / "SKILL.md", OPENAI)
    write(home() / ".codex" / "skills" / "gh-fix-ci" / "SKILL.md", OPENAI)
    elsewhere = write(tmp_path / "mine" / "weather" / "SKILL.md", skill_md("weather"))
    (home() / ".openclaw" / "skills").mkdir(parents=True)
    (home() / ".openclaw" / "skills" / "weather").symlink_to(elsewhere.parent)
    deep = home() / ".claude" / "skills" / "a" / "b" / "c" / "d" / "e"
    write(deep / "six" / "SKILL.md", skill_md("six"))
    write(deep / "f" / "seven" / "SKILL.md", skill_md("seven"))

    rows = skills_json(run_agent)
    assert {n: rows[n]["layer"] for n in ("brainstorming", "pdf", "gh-fix-ci", "weather")} == {
        "brainstorming": "project-claude",
        "pdf": "user-claude",
        "gh-fix-ci": "user-codex",
        "weather": "user-openclaw",
    }
    assert "six" in rows and "seven" not in rows  # up to 6 levels, as OpenClaw
    assert rows["gh-fix-ci"]["metadata"] == {"short-description": "Debug failing GitHub Actions CI"}
    table = run_agent("skills").stdout.splitlines()
    assert table[0].split() == ["SKILL", "KIND", "FLAGS", "LAYER", "SOURCE"]
    pdf_row = next(line for line in table if line.startswith("pdf "))
    assert "~/.claude/skills" in pdf_row
    check = run_agent("check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert any(
        line.startswith(f"{home() / '.codex' / 'skills'}:1:1: info: 1 skill(s) read from ~/.codex")
        for line in check_lines(check)
    )
    # The project's own layer wins over its .claude/skills, which wins over the user's.
    write(
        workspace / ".agents" / "skills" / "brainstorming" / "SKILL.md", skill_md("brainstorming")
    )
    write(
        home() / ".claude" / "skills" / "weather" / "SKILL.md", skill_md("weather", body="Mine.\n")
    )
    rows = skills_json(run_agent)
    assert rows["brainstorming"]["layer"] == "project"
    assert rows["weather"]["layer"] == "user-claude"
    assert "pdf" not in skills_json(run_agent, "--no-user")
    settings(workspace, "skills:\n  interop: false\n")
    assert {"brainstorming", "weather"} & set(skills_json(run_agent)) == {"brainstorming"}
    assert "pdf" not in skills_json(run_agent)


def test_a_projects_link_out_of_the_project_is_not_followed(workspace, run_agent, tmp_path):
    outside = write(tmp_path / "outside" / "grab" / "SKILL.md", skill_md("grab"))
    inside = write(workspace / "tools" / "lint" / "SKILL.md", skill_md("lint"))
    skills = workspace / ".claude" / "skills"
    skills.mkdir(parents=True)
    (skills / "grab").symlink_to(outside.parent)
    (skills / "lint").symlink_to(inside.parent)
    rows = skills_json(run_agent)
    assert "lint" in rows and "grab" not in rows
    lines = check_lines(run_agent("check"))
    assert any(
        line.startswith(f"{skills / 'grab'}:1:1: warning: not followed: this link leads out")
        for line in lines
    )


def test_a_model_cannot_plant_a_skill_in_a_folder_read_as_a_layer(workspace, run_agent):
    planted = workspace / ".claude" / "skills" / "evil" / "SKILL.md"
    user = home() / ".claude" / "skills" / "evil" / "SKILL.md"
    evil = skill_md("evil", "allowed-tools: Bash\n")
    calls = [("write_file", {"path": str(p), "content": evil}) for p in (planted, user)]
    calls.append(("exec", {"command": f"mkdir -p {planted.parent} && echo x > {planted}"}))
    settings(workspace, "policy:\n  mode: full\n")
    with scripted_model(*calls) as server:
        ask(run_agent, server)
    for result in tool_results(server):
        assert not result["ok"] and result["code"] == "DENIED", result
        assert "agent's own configuration" in result["error"]
    assert not planted.exists() and not user.exists()


# -- 3. one broken part never costs the whole skill -------------------------------------


@pytest.mark.parametrize(
    ("name", "extra", "line", "needle"),
    [
        ("tidy", "command-dispatch: tool\ncommand-tool: exce\n", 5, "names no tool (did you mean 'exec'?)"),
        ("tidy", "command-dispatch: tool\n", 4, "needs command-tool"),
        ("tidy", "command-dispatch: tool\ncommand-tool: exec\ncommand-arg-mode: shell\n", 6, "command-arg-mode"),
        ("tidy", "command-dispatch: tool\ncommand-tool: exec\ncommand-with: {comand: 'x'}\n", 6, "has no parameter 'comand' (did you mean 'command'?)"),
    ],
)  # fmt: skip
def test_a_broken_command_part_refuses_only_slash_name(
    workspace, run_agent, name, extra, line, needle
):
    path = write(workspace / ".agents" / "skills" / name / "SKILL.md", skill_md(name, extra))
    check = run_agent("check")
    assert check.returncode == 1
    error = next(x for x in check_lines(check) if ": error: " in x)
    assert error.startswith(f"{path}:{line}:") and needle in error, error
    assert f"/{name} is refused" in error
    ran = run_agent(f"/{name}", "echo", "hi")
    assert ran.returncode == 2 and needle in ran.stderr and ran.stdout == ""
    rows = skills_json(run_agent)
    assert rows[name]["command_error"] and "command-refused" in run_agent("skills").stdout
    with scripted_model(("skill", {"name": name})) as server:
        ask(run_agent, server)
    (loaded,) = tool_results(server)
    assert loaded["ok"] and loaded["output"].startswith("Body.")


def test_a_skill_with_a_built_in_name_stays_for_the_model(workspace, run_agent):
    path = write(workspace / ".agents" / "skills" / "help" / "SKILL.md", skill_md("help"))
    check = run_agent("check")
    assert check.returncode == 1
    assert f"{path}:1:1: error: /help: 'help' is the name of a built-in command" in check.stdout
    assert "/term" in run_agent("/help").stdout  # the built-in still answers
    assert "help" in skills_json(run_agent)


# -- 4. leniency as the client guide and OpenClaw -------------------------------------


def test_cosmetic_problems_warn_and_load(workspace, run_agent):
    long_name = "a" + "-b" * 40
    skills = workspace / ".agents" / "skills"
    write(skills / "long" / "SKILL.md", skill_md(long_name))
    write(skills / "folder" / "SKILL.md", skill_md("other-name"))
    write(skills / "wordy" / "SKILL.md", skill_md("wordy", description="w" * 1100))
    write(skills / "compat" / "SKILL.md", skill_md("compat", f"compatibility: {'c' * 600}\n"))
    write(skills / "slips" / "SKILL.md", skill_md("slips", "license: 2\nmetadata: [a, b]\n"))
    write(skills / "nameless" / "SKILL.md", "---\ndescription: Has no name\n---\nBody.\n")
    write(
        skills / "colon" / "SKILL.md",
        "---\nname: colon\ndescription: Use this skill when: the user asks\n---\nBody.\n",
    )
    write(
        skills / "loose" / "SKILL.md",
        "---\nname: loose\ndescription: d\ncommand-dispatch: Tool\ncommand-tool: exec\n"
        "command-arg-mode: RAW\nuser-invocable: 'yes'\ndisable-model-invocation: \"false\"\n---\n",
    )
    check = run_agent("check")
    assert check.returncode == 0, check.stdout
    text = check.stdout
    for needle in (
        f"long/SKILL.md:2:1: warning: name is {len(long_name)} characters",
        "folder/SKILL.md:2:1: warning: name 'other-name' differs from its folder name 'folder'",
        "wordy/SKILL.md:3:1: warning: description is 1100 characters",
        "compat/SKILL.md:4:1: warning: compatibility is 600 characters",
        "slips/SKILL.md:4:1: warning: license: expected text; 2 read as text",
        "slips/SKILL.md:5:1: warning: metadata: expected a mapping",
        "nameless/SKILL.md:1:1: info: no name: loaded as 'nameless', the folder's name",
        "colon/SKILL.md:3:14: warning: description: the value has an unquoted ': ' in it",
    ):
        assert needle in text, needle
    rows = skills_json(run_agent)
    assert {long_name, "other-name", "wordy", "compat", "slips", "nameless"} <= set(rows)
    assert rows["colon"]["description"] == "Use this skill when: the user asks"
    assert rows["slips"]["license"] == "2"
    assert rows["loose"]["user_invocable"] is True and rows["loose"]["dispatch"] == "tool"
    assert run_agent("/loose", "echo", "loose ran").stdout == "loose ran\n"


# -- 5. OpenClaw gating parity ----------------------------------------------------------


def test_openclaw_gating(workspace, run_agent):
    skills = workspace / ".agents" / "skills"
    write(
        skills / "commas" / "SKILL.md",
        skill_md(
            "commas",
            'metadata: {"openclaw": {"requires": {"bins": "sh, no-such-bin-a, no-such-bin-b"}}}\n',
        ),
    )
    write(
        skills / "always" / "SKILL.md",
        skill_md(
            "always",
            'metadata: {"openclaw": {"always": true, "requires": {"bins": ["no-such-bin-c"], "env": ["NO_SUCH_VAR_X"]}}}\n',
        ),
    )
    write(
        skills / "always-os" / "SKILL.md",
        skill_md("always-os", 'metadata: {"openclaw": {"always": true, "os": ["no-such-os"]}}\n'),
    )
    write(
        skills / "legacy" / "SKILL.md",
        skill_md(
            "legacy", 'metadata: {"clawdbot": {"requires": {"anyBins": ["no-such-bin-d"]}}}\n'
        ),
    )
    write(
        skills / "as-string" / "SKILL.md",
        skill_md(
            "as-string", 'metadata: \'{"openclaw": {"requires": {"env": ["NO_SUCH_VAR_Y"]},}}\'\n'
        ),
    )
    write(
        skills / "needs-config" / "SKILL.md",
        skill_md("needs-config", 'metadata: {"openclaw": {"requires": {"config": ["browser.enabled"]}}}\n'),
    )  # fmt: skip
    rows = skills_json(run_agent)
    reasons = {n: rows[n]["unavailable_reason"] for n in rows}
    assert reasons["commas"] == "needs no-such-bin-a, no-such-bin-b on PATH"
    assert reasons["always"] is None
    assert reasons["always-os"].startswith("needs os no-such-os")
    assert reasons["legacy"] == "needs one of no-such-bin-d on PATH"
    assert reasons["as-string"] == "needs NO_SUCH_VAR_Y set"
    assert "OpenClaw settings mdagent cannot check: browser.enabled" in reasons["needs-config"]
    assert rows["as-string"]["metadata"] == {"openclaw": {"requires": {"env": ["NO_SUCH_VAR_Y"]}}}
    check = run_agent("check")
    assert check.returncode == 0, check.stdout
    assert any(
        "needs-config/SKILL.md:4:1: info: requires.config (browser.enabled)" in line
        for line in check_lines(check)
    )
    with scripted_model(
        ("skill", {"name": "needs-config"}), ("skill", {"name": "always"})
    ) as server:
        ask(run_agent, server)
    refused, loaded = tool_results(server)
    assert not refused["ok"] and "cannot check" in refused["error"] and loaded["ok"]
    # A model is never told about a skill it cannot use.
    system = server.requests[0]["json"]["messages"][0]["content"]
    assert "- always:" in system and "- needs-config:" not in system and "- commas:" not in system


# -- 6-8. agent check finds what a new author gets wrong ----------------------------------


def test_check_points_at_the_key_with_did_you_mean(workspace, run_agent):
    agents = workspace / ".agents"
    skill = write(
        agents / "skills" / "deploy" / "SKILL.md",
        "---\nname: deploy\ndescription: Deploy\ncommand-dispatch: tool\n"
        "command_tools: exec\ncommand-tool: bsh\n---\n",
    )
    tools = write(
        agents / "config" / "tools.yaml",
        "comands:\n  x: {tool: exec}\ntools:\n  sizes:\n    description: Sizes\n"
        "    aproval: true\n    params:\n      path: {type: strng}\n      count: {type: int}\n"
        "      'my path': {type: string}\n    run: [du, '{path}']\n"
        "  refs:\n    description: Refs\n    params:\n      a: {$ref: '#/nope'}\n    run: [x]\n",
    )
    agent_yaml = settings(workspace, "polcy:\n  deny: ['exec(rm *)']\n")
    check = run_agent("check")
    assert check.returncode == 1
    expected = [
        f"{agent_yaml}:1:1: error: polcy: unknown key (did you mean 'policy'?)",
        f"{skill}:5:1: warning: unknown key 'command_tools' (did you mean 'command-tool'?); ignored",
        f"{skill}:6:1: error: /deploy: command-tool 'bsh' names no tool (did you mean 'bash'?)",
        f"{tools}:1:1: error: comands: unknown key (did you mean 'commands'?)",
        f"{tools}:6:5: error: tools.sizes.aproval: unknown key (did you mean 'approval'?)",
        f"{tools}:8:14: error: tool 'sizes': params.path.type: 'strng' is not a JSON Schema type (did you mean 'string'?)",
        f"{tools}:9:15: error: tool 'sizes': params.count.type: 'int' is not a JSON Schema type (did you mean 'integer'?)",
        f"{tools}:10:7: error: tool 'sizes': params: 'my path' is not a parameter name providers accept",
        f"{tools}:15:11: error: tool 'refs': params.a.$ref: '#/nope' cannot be resolved",
    ]  # fmt: skip
    for line in expected:
        assert any(x.startswith(line) for x in check_lines(check)), (line, check.stdout)
    # A settings file with an unknown key is refused whole: its deny list never half-applies.
    assert run_agent("/term", "true").returncode == 2


# -- 9. byte-order marks and CRLF ------------------------------------------------------


def test_a_bom_and_crlf_skill_loads_and_its_body_reaches_the_model_clean(workspace, run_agent):
    text = (
        "\ufeff---\r\nname: windows\r\ndescription: Written on Windows\r\n---\r\nDo $ARGUMENTS.\r\n"
    )
    write(workspace / ".agents" / "skills" / "windows" / "SKILL.md", text.encode("utf-8"))
    assert run_agent("check").returncode == 0
    rows = skills_json(run_agent)
    assert rows["windows"]["description"] == "Written on Windows"
    with scripted_model(answer="ok") as server:
        result = run_agent(*provider_args(server), "/windows", "the thing")
    assert result.returncode == 0, result.stderr
    sent = server.requests[0]["json"]["messages"][-1]["content"]
    assert sent == "Do the thing.\n"


# -- 10. pathological input ------------------------------------------------------------

LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)


def test_alias_bombs_and_huge_files_are_refused_with_one_line(workspace, run_agent):
    skills = workspace / ".agents" / "skills"
    bomb = write(
        skills / "bomb" / "SKILL.md", "---\nname: bomb\ndescription: d\n" + LAUGHS + "---\n"
    )
    assert bomb.stat().st_size < 600
    tools = write(workspace / ".agents" / "config" / "laughs.yaml", LAUGHS)
    huge = write(skills / "huge" / "SKILL.md", skill_md("huge", body="x" * (2 << 20)))
    check = run_agent("check", timeout=60)
    assert check.returncode == 1
    lines = check_lines(check)
    for path in (bomb, tools):
        assert any(
            x.startswith(f"{path}:") and "YAML aliases expand this document" in x for x in lines
        ), lines
    assert (
        f"{huge}:1:1: error: file too large: 2.0 MiB (a SKILL.md may be at most 1.0 MiB)" in lines
    )
    assert "Traceback" not in check.stderr


# -- 11. command-with: a command that wraps a program -----------------------------------


def test_command_with_wraps_a_program_and_keeps_hostile_words_literal(workspace, run_agent):
    write(
        workspace / ".agents" / "skills" / "disk" / "SKILL.md",
        "---\nname: disk\ndescription: Disk usage\ncommand-dispatch: tool\ncommand-tool: exec\n"
        'command-with: {command: "du -s {ARGUMENTS} | cut -f2"}\n---\n',
    )
    (workspace / "src").mkdir()
    (workspace / ".git").mkdir()
    result = run_agent("/disk", ".git", "src")
    assert result.returncode == 0 and result.stdout == ".git\nsrc\n", result.stderr
    result = run_agent("/disk", "x; touch pwned", "$(touch pwned2)")
    assert "'x; touch pwned'" in result.stderr and "'$(touch pwned2)'" in result.stderr
    assert not (workspace / "pwned").exists() and not (workspace / "pwned2").exists()
    assert run_agent("/disk", "--help").stdout.splitlines()[1] == "usage: /disk [args...]"


def test_command_with_positions_names_and_counts(workspace, run_agent):
    write(
        workspace / ".agents" / "skills" / "greet" / "SKILL.md",
        "---\nname: greet\ndescription: Greet\ncommand-dispatch: tool\ncommand-tool: exec\n"
        "arguments: who mood\n"
        "command-with:\n  command: \"printf '%s|%s|%s' {0} {mood} {1}\"\n---\n",
    )
    ok = run_agent("/greet", "Ada Lovelace", "glad")
    assert ok.returncode == 0 and ok.stdout == "Ada Lovelace|glad|glad"
    few = run_agent("/greet", "Ada")
    assert few.returncode == 2 and "needs 2 arguments, got 1" in few.stderr
    assert "usage: /greet <who> <mood>" in few.stderr
    many = run_agent("/greet", "a", "b", "c")
    assert many.returncode == 2 and "too many arguments: c" in many.stderr


def test_command_with_for_fetch(workspace, run_agent, web):
    write(
        workspace / ".agents" / "skills" / "page" / "SKILL.md",
        "---\nname: page\ndescription: A page\ncommand-dispatch: tool\ncommand-tool: fetch\n"
        f'command-with: {{url: "{web.url}/{{0}}"}}\n---\n',
    )
    result = run_agent("/page", "hello")
    assert result.returncode == 0 and "héllo wörld" in result.stdout, result.stderr


def test_command_with_mistakes_are_found_by_check(workspace, run_agent):
    path = write(
        workspace / ".agents" / "skills" / "bad" / "SKILL.md",
        "---\nname: bad\ndescription: d\ncommand-dispatch: tool\ncommand-tool: exec\n"
        "command-with:\n  command: 'eval {ARGUMENTS}'\n  timeout: '{who}'\n---\n",
    )
    lines = check_lines(run_agent("check"))
    assert any(x.startswith(f"{path}:7:") and "`eval`" in x for x in lines), lines
    assert any(x.startswith(f"{path}:8:") and "{who} is not a typed word" in x for x in lines)


def test_new_skill_run_writes_a_wrapper(workspace, run_agent):
    made = run_agent("new", "skill", "sizes", "--run", "du -s")
    assert made.returncode == 0, made.stderr
    text = (workspace / ".agents" / "skills" / "sizes" / "SKILL.md").read_text()
    assert 'command-with: {command: "du -s {ARGUMENTS}"}' in text
    assert run_agent("check").returncode == 0
    (workspace / "a b").mkdir()
    result = run_agent("/sizes", "a b")
    assert result.returncode == 0 and result.stdout.endswith("\ta b\n"), result.stderr
    refused = run_agent("new", "skill", "ev", "--run", "eval")
    assert refused.returncode == 2 and "eval" in refused.stderr
    assert not (workspace / ".agents" / "skills" / "ev").exists()
    assert run_agent("new", "skill", "x", "--run", "ls", "--tool", "fetch").returncode == 2


# -- the OpenClaw corpus, as it is ------------------------------------------------------


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus/openclaw-skills is absent")
def test_the_openclaw_corpus_loads_as_openclaws_managed_folder(workspace, run_agent):
    managed = home() / ".openclaw" / "skills"
    managed.parent.mkdir(parents=True)
    managed.symlink_to(CORPUS)
    check = run_agent("check")
    assert check.returncode == 0, check.stdout
    assert [x for x in check_lines(check) if ": error: " in x] == []
    rows = skills_json(run_agent)
    corpus = {p.parent.name for p in CORPUS.glob("*/SKILL.md")}
    assert corpus <= set(rows) and len(corpus) >= 50
    assert all(rows[n]["layer"] == "user-openclaw" for n in corpus)
    with_requires = [n for n in corpus if rows[n]["metadata"].get("openclaw", {}).get("requires")]
    assert with_requires and all(rows[n]["requires"] for n in with_requires)
    reference = next(CORPUS.glob("*/references/*"), None)
    if reference is not None:
        with scripted_model(
            ("read_file", {"path": str(managed / reference.relative_to(CORPUS))})
        ) as server:
            ask(run_agent, server)
        (read,) = tool_results(server)
        skill = rows[reference.parent.parent.name]
        assert read["ok"] == (skill["unavailable_reason"] is None), read


def test_no_skill_from_the_developers_home_leaks_in(run_agent):
    import pwd

    assert home() != Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert run_agent("config", "env").returncode == 0
    assert subprocess.run(["sh", "-c", 'test "$HOME" = "$0"', str(home())]).returncode == 0
    assert not (home() / ".claude").exists()


# -- the Agent Skills client guide's edge cases (issue 34) ----------------------------------


def test_the_client_guide_s_edge_cases_through_the_executable(workspace, run_agent):
    skills = workspace / ".agents" / "skills"
    write(skills / "nodesc" / "SKILL.md", "---\nname: nodesc\n---\nBody\n")
    write(
        skills / "badtools" / "SKILL.md",
        "---\nname: badtools\ndescription: d\nallowed-tools: 5\n---\nB\n",
    )
    write(skills / "dashes" / "SKILL.md", "----\nname: dashes\ndescription: d\n----\nBody\n")
    check = run_agent("check")
    out = check.stdout
    assert (
        f"{skills / 'nodesc' / 'SKILL.md'}:1:1: warning: no description: skill 'nodesc' is not loaded"
        in out
    )
    assert (
        f"{skills / 'badtools' / 'SKILL.md'}:4:" in out
        and "ignored, the skill loads without it" in out
    )
    assert f"{skills / 'dashes' / 'SKILL.md'}:1:1: error: front-matter opens with '----'" in out
    assert check.returncode == 1  # the error: the file is not a skill at all
    listed = json.loads(run_agent("skills", "--json").stdout)
    names = {s["name"] for s in listed}
    assert "badtools" in names and "nodesc" not in names and "dashes" not in names
    assert next(s for s in listed if s["name"] == "badtools")["allowed_tools"] == []
