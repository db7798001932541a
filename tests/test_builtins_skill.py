"""The skill tool: a skill's body, folder and files on demand, for the skills the model may use."""

from __future__ import annotations

import pytest

from conftest import write
from mdagent.agent.skillrunner import SkillRunner
from mdagent.core.calls import ToolContext
from mdagent.core.specs import Skill
from mdagent.tools.builtins import register_builtins
from mdagent.tools.builtins.skill import MAX_FILES, skill_files
from mdagent.tools.toolbox import Toolbox


class FakeRegistry:
    """Just what the skill tool needs from a registry: its skills."""

    def __init__(self, skills):
        self.skills = {s.name: s for s in skills}


def make_skill(root, name, body="Body.", **fields):
    path = write(root / name / "SKILL.md", f"---\nname: {name}\ndescription: d\n---\n{body}\n")
    return Skill(name=name, description="d", path=str(path), **fields)


@pytest.fixture
def skills(tmp_path):
    pdf = make_skill(
        tmp_path, "pdf-tools", "# PDF\nRun {baseDir}/scripts/x.sh, see ${SKILL_DIR}/r.md"
    )
    write(tmp_path / "pdf-tools" / "scripts" / "x.sh", "echo\n")
    write(tmp_path / "pdf-tools" / "references" / "guide.md", "guide\n")
    write(tmp_path / "pdf-tools" / ".hidden", "no\n")
    return [
        pdf,
        make_skill(tmp_path, "git-flow", "Branch first."),
        make_skill(tmp_path, "deploy", "Ship it.", disable_model_invocation=True),
        make_skill(tmp_path, "mac-only", "Mac.", requires={"os": ["no-such-os"]}),
    ]


@pytest.fixture
def call(skills):
    tb = Toolbox()
    register_builtins(tb, ["skill"])

    def call(name, registry=FakeRegistry(skills), runner=SkillRunner()):
        ctx = ToolContext(registry=registry, skill_runner=runner)
        return tb.run("skill", {"name": name}, ctx)

    return call


def test_returns_body_folder_and_files_with_the_folder_filled_in(call, tmp_path):
    result = call("pdf-tools")
    assert result.ok
    folder = str(tmp_path / "pdf-tools")
    assert result.data["name"] == "pdf-tools" and result.data["path"] == folder
    assert result.data["output"].startswith(
        f"# PDF\nRun {folder}/scripts/x.sh, see {folder}/r.md\n\nSkill folder: {folder}"
    )
    assert result.data["files"] == ["references/guide.md", "scripts/x.sh"]
    assert "files_truncated" not in result.data


def test_case_and_underscores_do_not_matter(call):
    assert call("PDF_Tools").data["name"] == "pdf-tools"
    assert call("/git-flow").data["output"].startswith("Branch first.")


def test_a_skill_kept_from_the_model_is_not_returned(call):
    result = call("deploy")
    assert not result.ok and result.error.startswith("unknown skill: deploy. Available: ")
    assert "deploy" not in result.error.partition("Available: ")[2]


def test_an_unavailable_skill_says_why(call):
    result = call("mac-only")
    assert not result.ok and "needs os no-such-os" in result.error


def test_unknown_skill_lists_the_available_ones(call):
    result = call("nope")
    assert not result.ok
    assert result.error == "unknown skill: nope. Available: git-flow, mac-only, pdf-tools"


def test_no_registry(call):
    assert call("pdf-tools", registry=None).error == "no skills are loaded"


def test_without_a_skill_runner_the_tool_says_so_in_one_line(call):
    # Rendering a body is the agent's: a caller that handed no runner down gets a refusal.
    result = call("pdf-tools", runner=None)
    assert not result.ok and result.data["error"] == (
        "cannot load skill pdf-tools: nothing runs skills for this call"
    )
    # What needs no runner still works: the names the model may load.
    assert call("nope", runner=None).error.startswith("unknown skill: nope. Available: ")


def test_the_file_list_is_capped_and_says_so(tmp_path):
    for i in range(MAX_FILES + 5):
        write(tmp_path / "many" / "assets" / f"f{i:03}.txt", "x")
    files, total = skill_files(str(tmp_path / "many"))
    assert len(files) == MAX_FILES and total == MAX_FILES + 5
    assert files[0] == "assets/f000.txt"


# -- every caller that can reach the tool hands it a runner --------------------------

HELPER = "---\nname: helper\ndescription: Helps\n---\nHelp body, $ARGUMENTS as written.\n"
LOAD = (
    "commands:\n  load:\n    tool: skill\n    arg-mode: parsed\n"
    "    tests:\n      - name: loads helper\n        argv: helper\n"
    "        expect: {exit: 0, contains: Help body}\n"
)


def test_a_persons_command_bound_to_the_skill_tool_loads_the_skill(workspace, run_agent):
    write(workspace / ".agents" / "skills" / "helper" / "SKILL.md", HELPER)
    write(workspace / ".agents" / "config" / "load.yaml", LOAD)
    done = run_agent("/load", "helper")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Help body, $ARGUMENTS as written.\n\nSkill folder: ")
    # `agent test` calls it too (the caller "test"), and the body comes back.
    tested = run_agent("test")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "✓ /load loads helper" in tested.stdout


def test_an_mcp_clients_call_of_the_skill_tool_loads_the_skill(workspace):
    from conftest import trust_as_is
    from mdagent.runtime.runtime import Options, Runtime
    from mdagent.server.mcpserver import Served

    write(workspace / ".agents" / "skills" / "helper" / "SKILL.md", HELPER)
    trust_as_is(workspace)
    result = Served(Runtime(Options(), cwd=workspace)).run("skill", {"name": "helper"}, None)
    assert result.ok, result.error
    assert result.data["output"].startswith("Help body, $ARGUMENTS as written.")
