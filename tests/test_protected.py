"""What a model's command or file write would change of the agent's own policy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mdagent.safety.protectedfiles import protected_files


@pytest.fixture
def ws(layer_project) -> Path:
    return layer_project


@pytest.fixture
def guard(ws, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "AGENT_HOME": str(home / "agent")}
    return protected_files(workdir=ws, environ=env)


def target(guard, command: str, cwd: str | None = None, **env: str) -> str | None:
    return guard.exec_target(command, cwd, {**guard.environ, **env})


# -- 1. a folder change the guard cannot follow is a folder it does not know ------------


@pytest.mark.parametrize(
    "command",
    [
        "d=.agents/config; cd $d; printf x > agent.yaml",
        'cd "$(echo .agents)"; echo {} > config/agent.yaml',
        "cd `echo .agents`/config && tee agent.yaml",
        "CDPATH=.agents; cd config; echo x > agent.yaml",
        "export CDPATH=.agents; cd config && sort -o agent.yaml x.txt",
        "cd -; echo x > agent.yaml",  # OLDPWD is not known before the command runs
        "sudo -i tee agent.yaml",  # a login shell starts in a home folder
        "D=docs; cd $D; printf x > agent.yaml",  # a name in capitals is set here too
        "d=docs; cd ${d}; printf x > agent.yaml",
    ],
)
def test_a_folder_named_at_run_time_makes_every_relative_target_unknown(guard, command):
    found = target(guard, command)
    assert found and "it may be any file" in found


@pytest.mark.parametrize(
    "command",
    [
        "builtin cd .agents; echo {} > config/agent.yaml",
        "command cd .agents/config && echo x > agent.yaml",
        "pushd .agents >/dev/null; echo x > config/agent.yaml; popd",
        "printf x | env -C .agents/config tee agent.yaml",
        "env --chdir=src tee ../.agents/config/agent.yaml",
        "sudo -D src tee ../.agents/config/agent.yaml",
        "git -C src checkout ../.agents/config/agent.yaml",
        "make -C .agents",
        "tar -C src -xf a.tar ../.agents/config/agent.yaml",
        # a cd written after the write still runs first in a loop or a function
        "for i in 1 2; do echo x > config/agent.yaml; cd .agents; done",
        "f() { echo x > config/agent.yaml; }; cd .agents; f",
        "cd .agents; cd config; cd ..; echo x > config/agent.yaml",
    ],
)
def test_every_folder_a_command_may_run_in_is_followed(guard, command):
    assert target(guard, command).startswith(".agents")


def test_a_program_run_in_a_folder_named_at_run_time_is_caught(guard):
    assert "any folder" in target(guard, "d=.agents/config; cd $d && make")
    assert target(guard, "d=.agents/config; cd $d && ls") is None  # it only reads
    assert target(guard, "cd $unset_here && make") is None  # `cd` alone: $HOME


def test_cdpath_from_the_environment_is_searched(guard, ws):
    assert target(guard, "cd config && echo x > agent.yaml", CDPATH=str(ws / ".agents"))
    assert target(guard, "cd src && echo x > agent.yaml", CDPATH=str(ws / ".agents")) is None
    assert target(guard, "cd src && echo x > agent.yaml") is None


def test_pwd_is_where_the_command_runs(guard, ws):
    assert target(guard, "gzip $PWD/agent.yaml", cwd=str(ws / ".agents" / "config"))
    assert target(guard, "cd .agents; gzip $PWD/config/agent.yaml")
    assert target(guard, "gzip $PWD/x.txt") is None


# -- 2. any program that names a protected place may change it ------------------------


@pytest.mark.parametrize(
    "command",
    [
        "sort -o .agents/config/agent.yaml x.txt",
        "sort -o.agents/config/agent.yaml x.txt",
        "sort --output=.agents/config/agent.yaml x.txt",
        "gzip .agents/config/agent.yaml",
        "git diff --output=.agents/config/agent.yaml",
        "python3 tool.py --config=.agents/config/agent.yaml",
        "time -o .agents/config/agent.yaml ls",  # a wrapper's own option
        "GIT_DIR=.agents git init",
        "chmod -R 000 .",  # a folder holding the layer
        "gzip -r ..",
        "find . -delete",
        "find . -name x -exec rm {} +",
        "pytest .",
        "echo .agents/config/agent.yaml | xargs gzip",  # arguments added at run time
        "ls | parallel gzip",
        "git stash -u",  # the whole work tree, named or not
        "git clean -fdx",
        "git reset --hard HEAD~1",
        "cd src && git checkout main",
        "git restore .",
        "git apply x.diff",
        "git am < x.mbox",
        "tar xzf a.tgz",
        "tar -x -f a.tar",
        "unzip a.zip",
        "patch -p1 < x.diff",
        "git init --template=t",
        "git config core.fsmonitor 'touch x'",
        "for f in .*; do gzip -r $f; done",  # a name computed at run time
        "$cmd .agents/config/agent.yaml",
        # code for an interpreter or a sed script that names the place
        "python3 -c \"open('.agents/config/agent.yaml', 'w')\"",
        "sed -i 's/a/b/w .git/config' x.txt",
        # a program run inside a layer folder may write there unnamed
        "cd .agents/config && curl -sO http://example.org/agent.yaml",
        "cd .agents && make",
    ],
)
def test_a_command_that_may_change_a_layer_file_is_caught(guard, command):
    assert target(guard, command), command


@pytest.mark.parametrize(
    "command",
    [
        "cat .agents/config/agent.yaml",
        "head -n 3 .agents/config/agent.yaml; wc -l .agents/config/agent.yaml",
        "grep -rn policy .",
        "ls -la . .agents",
        "find . -name '*.yaml'",
        "diff .agents/config/agent.yaml x.txt",
        "git status",
        "git diff HEAD~1 -- .",
        "git log -- .agents",
        "git add . && git commit -m 'update .agents'",
        "git checkout -b feature",
        "git stash list",
        "git reset HEAD~1",
        "git config --get user.name",
        "tar czf out.tgz src",
        "unzip -l a.zip",
        "echo hi > out.txt",
        "mkdir -p build && cp x.txt build/",
        "cd src && sed -i s/a/b/ x.py",
        "cd /tmp && rm -rf x",
        "npm test",
        "sort -o out.txt x.txt",
    ],
)
def test_reading_a_layer_file_or_working_elsewhere_is_fine(guard, command):
    assert target(guard, command) is None, command


def test_a_known_reader_with_an_option_that_writes_is_caught(guard):
    assert target(guard, "less -o.agents/config/agent.yaml x.txt")
    assert target(guard, "tree -o .agents/config/agent.yaml")
    assert target(guard, "git log --output=.agents/config/agent.yaml")
    assert target(guard, "find .agents -fprint .agents/config/agent.yaml")


# -- 3. git's configuration and hooks run programs ------------------------------------


def test_git_folders_and_configuration_are_protected(ws, tmp_path, guard):
    for path in (".git/config", ".git/hooks/pre-commit", "sub/.git/config", ".git"):
        assert "git folder" in guard.file_target(path), path
    assert guard.file_target(".gitignore") is None
    assert guard.file_target(".github/workflows/x.yml") is None
    home = Path(guard.environ["HOME"])
    assert "git's user configuration" in guard.file_target(str(home / ".gitconfig"))
    assert "git's user configuration" in guard.file_target(str(home / ".config/git/config"))
    assert target(guard, "git log -1 --format=x --output=.git/config")
    assert target(guard, "rm -rf sub", cwd=None) is None
    (ws / "sub" / ".git").mkdir(parents=True)
    assert "holds .git" in target(guard, "rm -rf sub")


def test_the_repository_above_the_workspace_and_a_gitdir_file_are_found(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git" / "hooks").mkdir(parents=True)
    inner = repo / "pkg"
    inner.mkdir()
    env = {"HOME": str(tmp_path)}
    guard = protected_files(workdir=inner, environ=env)
    assert "git folder" in guard.file_target(str(repo / ".git" / "hooks" / "pre-commit"))
    worktree = tmp_path / "wt"
    worktree.mkdir()
    gitdir = repo / ".git" / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    (worktree / ".git").write_text(f"gitdir: {gitdir}\n")
    guard = protected_files(workdir=worktree, environ=env)
    assert guard.file_target(str(gitdir / "config"))
    assert guard.file_target(str(repo / ".git" / "config"))


def test_an_unparseable_command_naming_a_common_word_is_not_taken_for_git(guard):
    assert target(guard, "git status ${x@P}") is None
    assert target(guard, "cat .git/config ${x@P}")


def test_nothing_is_written_by_looking(guard, ws):
    before = sorted(os.listdir(ws))
    target(guard, "tar xzf a.tgz; cd .agents; git stash -u")
    assert sorted(os.listdir(ws)) == before


SOUP = [
    "cd ", "pushd ", "popd", ".agents", "config", "/", "..", "$d", "d=x", "; ", " && ", " | ",
    "> ", "x", "-C ", "env ", "git ", "stash", "tar ", "-xf ", "xargs ", "$(", ")", "'", '"',
    "~", "*", "{a,b}", "CDPATH=", "sudo -i ", "find . -exec ", " {} +", "\n",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(SOUP), max_size=14).map("".join))
def test_any_command_gets_an_answer_never_an_error(tmp_path_factory, text):
    root = tmp_path_factory.mktemp("soup")
    found = protected_files(workdir=root, environ={"HOME": str(root)}).exec_target(text)
    assert found is None or isinstance(found, str)


def test_removing_a_workspace_removes_the_project_layer_it_may_hold(tmp_path):
    # Even a guard told of no file, in a workspace with no .agents yet: `rm -rf .`
    # would take a project layer created before it runs.
    from mdagent.safety.protected import Protected

    guard = Protected(str(tmp_path), {}, {}, {}, ())
    assert guard.exec_target("rm -rf .") == ". (holds .agents)"
    assert guard.exec_target("rm -rf src") is None
