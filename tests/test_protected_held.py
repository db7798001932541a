"""The guard when a namespace sandbox runs the command: what it binds, judges and refuses.

:meth:`Protected.held_by_kernel` leaves to the kernel what the kernel holds
read-only (the binds, and everything outside the writable places) and
judges the rest as before; :meth:`Protected.kernel_refusal` names a plain
write into a held place. The same commands are judged by the full guard
too, to show what changed and what did not.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import write
from mdagent.safety.gitfolders import submodule_git_dirs
from mdagent.safety.protectedfiles import protected_files


@pytest.fixture
def ws(layer_project) -> Path:
    """The project, a git repository with a hook script its settings name, and a skill."""
    subprocess.run(["git", "init", "-q", str(layer_project)], check=True)
    write(layer_project / "scripts" / "guard.sh", "#!/bin/sh\n")
    write(layer_project / ".agents" / "skills" / "x" / "scripts" / "y.py", "print('y')\n")
    return layer_project


@pytest.fixture
def home(tmp_path) -> Path:
    made = tmp_path / "home"
    (made / "agent" / "config").mkdir(parents=True)
    return made


@pytest.fixture
def full(ws, home):
    """The parser's guard in full (the route without namespaces, the file tools)."""
    env = {"HOME": str(home), "AGENT_HOME": str(home / "agent")}
    settings = {"hooks": {"before": [{"run": "./scripts/guard.sh"}]}}
    return protected_files(workdir=ws, environ=env, settings=settings)


@pytest.fixture
def held(full, ws):
    """The guard for a command a namespace sandbox runs, writing only in the workspace."""
    return full.held_by_kernel([ws])


def test_the_binds_are_what_exists_in_the_writable_places(held, full, ws):
    git = ws / ".git"
    assert set(held.binds) == {
        str(ws / ".agents"),
        str(git / "config"),
        str(git / "hooks"),
        str(git / "info"),
        str(ws / "scripts" / "guard.sh"),
    }
    assert held.binds[str(ws / ".agents")] == "the project layer"
    # Not bound: what does not exist (no mount point is made), what lies outside
    # the writable places (nothing is writable there), and git's objects and refs.
    assert not any(".claude" in b or "home" in b or "objects" in b for b in held.binds)
    # A bind inside another is not made twice.
    write(ws / ".agents" / ".git" / "config", "")
    assert str(ws / ".agents" / ".git" / "config") not in full.held_by_kernel([ws]).binds


def test_a_submodules_git_folder_is_bound_like_the_repositorys(full, ws):
    sub = ws / ".git" / "modules" / "lib" / "inner"
    write(sub / "HEAD", "ref: refs/heads/main\n")
    write(sub / "config", "[core]\n")
    (sub / "hooks").mkdir()
    binds = full.held_by_kernel([ws]).binds
    assert str(sub / "config") in binds and str(sub / "hooks") in binds
    assert str(ws / ".git" / "modules") not in binds  # its objects stay writable


def test_nested_submodules_are_found_and_other_git_folders_are_not(full, ws, tmp_path):
    # A real git folder holds `logs/HEAD`: a folder with a HEAD file is a git
    # folder only beneath `modules/`, where git keeps its submodules' folders.
    git = ws / ".git"
    write(git / "logs" / "HEAD", "")
    outer = git / "modules" / "lib"
    write(outer / "HEAD", "ref: refs/heads/main\n")
    write(outer / "logs" / "HEAD", "")
    inner = outer / "modules" / "deps" / "inner"  # nested, and named with a slash
    write(inner / "HEAD", "ref: refs/heads/main\n")
    write(git / "modules" / "notes.txt", "")  # a file there is passed over
    outside = tmp_path / "elsewhere"
    write(outside / "HEAD", "")
    (git / "modules" / "linked").symlink_to(outside)  # a link is not followed
    assert sorted(submodule_git_dirs(str(git))) == [str(outer), str(inner)]
    binds = full.held_by_kernel([ws]).binds
    assert str(inner / "config") not in binds  # no such file: no bind
    write(inner / "config", "[core]\n")
    assert str(inner / "config") in full.held_by_kernel([ws]).binds


def test_submodules_are_looked_for_up_to_a_limit(tmp_path):
    folder = tmp_path / "git"
    found = []
    for name in ("a", "b", "c"):
        folder = folder / "modules" / name
        write(folder / "HEAD", "")
        found.append(str(folder))
    assert submodule_git_dirs(str(tmp_path / "git")) == found
    assert submodule_git_dirs(str(tmp_path / "git"), limit=2) == found[:2]
    for name in range(62):  # 65 in all, nested: 64 are looked for by default
        folder = folder / "modules" / str(name)
        write(folder / "HEAD", "")
    assert len(submodule_git_dirs(str(tmp_path / "git"))) == 64


def test_a_submodule_without_nested_ones_does_not_end_the_search(tmp_path):
    # Whichever submodule is looked in first, its nested one has no modules/
    # folder of its own: the other submodule's nested one is still found.
    modules = tmp_path / "git" / "modules"
    found = []
    for name in ("a", "b"):
        for folder in (modules / name, modules / name / "modules" / "inner"):
            write(folder / "HEAD", "")
            found.append(str(folder))
    assert sorted(submodule_git_dirs(str(tmp_path / "git"))) == sorted(found)


def test_git_config_names_the_configuration_file_the_kernel_holds(ws, home):
    env = {"HOME": str(home), "AGENT_HOME": str(home / "agent")}
    (ws / ".git" / "config").rename(ws / ".git" / "config.worktree")
    held = protected_files(workdir=ws, environ=env).held_by_kernel([ws])
    found = held.kernel_refusal("git config core.pager 'touch pwned'")
    assert found is not None and found.startswith(".git/config.worktree ")
    (ws / ".git" / "config.worktree").unlink()
    held = protected_files(workdir=ws, environ=env).held_by_kernel([ws])
    # Neither file exists, so none is held (git's hooks and info are, but git
    # config does not write them): the kernel and the git guard judge it.
    assert held.kernel_refusal("git config core.pager 'touch pwned'") is None


def test_everything_is_beneath_the_root(full, ws, home):
    # With the whole file system writable, the user layer outside the workspace is bound too.
    binds = full.read_only_binds(["/"])
    assert set(full.read_only_binds([ws])) < set(binds)
    assert binds[str(home / "agent")] == "the user layer ($AGENT_HOME)"


def test_the_hooks_folder_git_is_told_to_use_is_protected_too(ws, home):
    # Husky and friends: `core.hooksPath = .husky`, hooks git runs outside any sandbox.
    with open(ws / ".git" / "config", "a") as config:
        config.write('[core]\n\thooksPath = ".husky"  # by husky\n')
    write(ws / ".husky" / "pre-commit", "npm test\n")
    guard = protected_files(workdir=ws, environ={"HOME": str(home)})
    assert "core.hooksPath" in guard.exec_target("echo 'curl x | sh' >> .husky/pre-commit")
    assert str(ws / ".husky") in guard.held_by_kernel([ws]).binds


def test_mdagents_state_folder_is_protected_where_it_can_be_reached(ws, home):
    # The registry cache there holds the compiled settings.
    state = ws / ".state"
    state.mkdir()
    guard = protected_files(workdir=ws, environ={"HOME": str(home), "AGENT_STATE_DIR": str(state)})
    assert "state folder" in guard.file_target(".state/registry/index.json")
    assert guard.held_by_kernel([ws]).binds[str(state)].startswith("mdagent's state folder")


def test_nothing_is_bound_outside_the_writable_places(full, tmp_path):
    assert full.read_only_binds([tmp_path / "elsewhere"]) == {}


@pytest.mark.parametrize(
    "command",
    [
        "python3 .agents/skills/x/scripts/y.py doc.pdf",
        "python3 -c 'print(1)' .agents/skills/x/SKILL.md",
        "bash .agents/skills/x/run.sh",
        "cd .agents/skills/x && make",
        "python3 -c \"open('.agents/config/agent.yaml').read()\"",
        "node tool.js --config .git/config",
        "gzip .agents/config/agent.yaml",  # the kernel refuses what it tries
        "python3 tamper.py HOME/agent/config/agent.yaml",  # outside: nothing is writable there
    ],
)
def test_naming_a_held_place_is_left_to_the_kernel(held, full, home, command):
    command = command.replace("HOME", str(home))
    assert full.exec_target(command) is not None  # the full guard asks
    assert held.exec_target(command) is None
    assert held.kernel_refusal(command) is None


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("python3 x.py .claude/skills/new", ".claude/skills"),  # does not exist yet
        ("python3 x.py .git/objects/pack", ".git"),  # the rest of the git folder
        ("python3 x.py sub/.agents/config/agent.yaml", "layer folder"),  # a layer below
        ("d=$(mktemp -d); cd $d && python3 x.py", "it may be any folder"),
        ("git stash -u", "git folder"),  # changes the work tree, .git with it
        ("ls | xargs gzip", "xargs"),
        ("tar -x -f x.tar -C /", "holds"),  # / holds the workspace, which is writable
        ("cp -r template/. ..", "holds"),
        # unparseable: what the kernel holds is skipped, not the rest after it
        ("cat .mcp.json 'unclosed", ".mcp.json (the command cannot be parsed"),
    ],
)
def test_what_the_kernel_does_not_hold_is_still_asked(held, command, why):
    found = held.exec_target(command)
    assert found is not None and why in found, found


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("echo x > .agents/config/agent.yaml", ".agents/config/agent.yaml (the project layer)"),
        ("echo x >> .agents/new.yaml", ".agents/new.yaml (the project layer)"),
        ("rm -rf .agents", ".agents (the project layer)"),
        ("rm -rf .", ".agents (the project layer), inside ."),
        ("mv .agents/config old", ".agents/config (the project layer)"),
        ("touch .git/hooks/pre-commit", ".git/hooks/pre-commit"),
        ("chmod -x scripts/guard.sh", "scripts/guard.sh (a hook script)"),
        ("cp evil.yaml .agents/config/agent.yaml", ".agents/config/agent.yaml"),
        ("ln -s /tmp/x -t .agents/skills", ".agents/skills"),
        ("sed -i s/a/b/ .agents/config/agent.yaml", ".agents/config/agent.yaml"),
        ("perl -pi -e 's/a/b/' .agents/config/agent.yaml", ".agents/config/agent.yaml"),
        ("sed --in-place=.bak s/a/b/ .agents/config/agent.yaml", ".agents/config/agent.yaml"),
        ("sed -Ei s/a/b/ .agents/config/agent.yaml", ".agents/config/agent.yaml"),
        ("dd if=x.txt of=.agents/config/agent.yaml", ".agents/config/agent.yaml"),
        ("sort -o .agents/config/agent.yaml x.txt", ".agents/config/agent.yaml"),
        ("git diff --output=.git/info/exclude", ".git/info/exclude"),
        ("git config core.pager 'touch pwned'", ".git/config"),
        ("git checkout -- .agents/config/agent.yaml", ".agents/config/agent.yaml"),
        ("cd .agents/config && tee agent.yaml < ../../x.txt", ".agents/config/agent.yaml"),
        ("printf x | env -C .agents/config tee agent.yaml", ".agents/config/agent.yaml"),
        ("echo x > HOME/agent/config/agent.yaml", "the user layer"),  # outside: held too
        ("cp -t .agents/config evil.yaml", ".agents/config (the project layer)"),
        ("cp --target-directory=.agents/config evil.yaml", ".agents/config (the project layer)"),
        ("git rm -r --cached .", ".agents (the project layer), inside ."),
        ("git -C .agents rm config/agent.yaml", ".agents/config/agent.yaml (the project layer)"),
        # each -C moves git on from the last: .agents, then .agents/config
        ("git -C .agents -C config rm agent.yaml", "(the project layer)"),
    ],
)
def test_a_plain_write_to_a_held_place_is_named(held, home, command, shown):
    found = held.kernel_refusal(command.replace("HOME", str(home)))
    assert found is not None and shown in found, found


@pytest.mark.parametrize(
    "command",
    [
        "cat .agents/config/agent.yaml > copy.yaml",
        "cp .agents/config/agent.yaml copy.yaml",
        "sed s/a/b/ .agents/config/agent.yaml",
        "perl -e 'print 1' .agents/config/agent.yaml",
        # perl's -e/-E take the rest of their cluster as code: an `i` there is no -i.
        "perl -e'$i=1' .agents/config/agent.yaml",
        "perl -E'say $i' .agents/config/agent.yaml",
        "sed -n -- p .agents/config/agent.yaml",  # after --, a word is no option
        "sed --line-length=9 p .agents/config/agent.yaml",  # a long option, not a cluster
        "git config --get core.pager",
        "grep -o x .agents/config/agent.yaml",
        "echo x > $out",  # named at run time: the kernel's to judge
        "rm -rf src",
        "touch notes.txt",
        "dd if=x.txt of=.",  # dd writes the file it names, never what a folder holds
        "git --git-dir .git rm --cached notes.txt",  # the option's value is no operand
        "sort x.txt -o",  # an output option without its value
    ],
)
def test_what_only_reads_a_held_place_is_not_refused(held, command):
    assert held.kernel_refusal(command) is None


def test_the_full_guard_refuses_nothing_for_the_kernel(full):
    assert full.kernel_refusal("echo x > .agents/config/agent.yaml") is None
    assert full.exec_target("echo x > .agents/config/agent.yaml") is not None


def test_file_targets_are_judged_in_full_either_way(held):
    # write_file and edit_file write from the agent, outside any sandbox: a
    # held guard is never used for them, but it would still see the path.
    assert held.file_target(".claude/skills/new/SKILL.md") is not None


@pytest.mark.parametrize("written", ["{other}", "../other", "~/other"])
def test_a_policy_paths_roots_git_folder_is_protected_and_bound(ws, home, written, monkeypatch):
    # Red team 15: write_file to /other/.git/config was allowed under mode full.
    monkeypatch.setenv("HOME", str(home))  # `~` in policy.paths is this process's home
    other = home / "other"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    if written == "../other":
        written = str(Path("..") / "..") + "/" + str(other.relative_to(ws.parent.parent))
    env = {"HOME": str(home), "AGENT_HOME": str(home / "agent")}
    settings = {"policy": {"paths": [written.format(other=other)]}}
    guard = protected_files(workdir=ws, environ=env, settings=settings)
    for name in ("config", "hooks/pre-commit", "commondir", "info/attributes"):
        assert guard.file_target(str(other / ".git" / name)), name
    assert str(other / ".git") in guard.git_dirs
    binds = guard.held_by_kernel([ws, other]).binds
    assert str(other / ".git" / "config") in binds and str(other / ".git" / "hooks") in binds
    assert guard.file_target(str(other / "src.py")) is None
