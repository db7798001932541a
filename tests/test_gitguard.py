"""mdagent.safety.gitguard: git's pointer and configuration files put back after a command."""

from __future__ import annotations

import os
import subprocess

import pytest

from mdagent.safety.gitguard import restore, snapshot


@pytest.fixture
def repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path / ".git"


def test_nothing_changed_is_nothing_put_back(repo):
    before = snapshot([str(repo)])
    (repo.parent / "work.txt").write_text("a model's ordinary work\n")
    (repo / "objects" / "ab").mkdir()
    assert restore(before, [str(repo)]) == []


@pytest.mark.parametrize(
    "path",
    [
        "commondir",  # red team 1: git's config and hooks from another folder
        "gitdir",
        "config.worktree",  # red team 20: created where it did not exist
        "objects/info/alternates",
        "objects/info/http-alternates",
        "hooks/pre-commit",
        "info/attributes",
        "worktrees/w/gitdir",
        "worktrees/w/commondir",
        "modules/sub/config",
        "modules/sub/hooks/post-checkout",
        "modules/a/modules/b/commondir",
    ],
)
def test_a_pointer_or_configuration_file_made_by_a_command_is_removed(repo, path):
    for nested in ("worktrees/w", "modules/sub", "modules/a/modules/b"):
        (repo / nested).mkdir(parents=True)
    before = snapshot([str(repo)])
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("../../evil\n")
    assert str(target) in restore(before, [str(repo)])
    assert not target.exists()


def test_a_missing_hooks_folder_made_by_a_command_goes_with_its_hooks(repo):
    import shutil

    shutil.rmtree(repo / "hooks")  # a clone made without it
    before = snapshot([str(repo)])
    (repo / "hooks").mkdir()
    (repo / "hooks" / "pre-commit").write_text("#!/bin/sh\ntouch pwned\n")
    changed = restore(before, [str(repo)])
    assert changed == sorted([str(repo / "hooks"), str(repo / "hooks" / "pre-commit")])
    assert not (repo / "hooks").exists()


def test_a_changed_file_gets_its_content_and_mode_back(repo):
    hook = repo / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o644)  # present but not run by git
    config = (repo / "config").read_bytes()
    before = snapshot([str(repo)])
    hook.chmod(0o755)
    (repo / "config").write_text("[core]\n\tfsmonitor = touch pwned\n")
    assert restore(before, [str(repo)]) == sorted([str(repo / "config"), str(hook)])
    assert (repo / "config").read_bytes() == config
    assert oct(hook.stat().st_mode & 0o777) == "0o644"


def test_a_file_replaced_by_a_symlink_or_a_folder_is_put_back(repo):
    config = (repo / "config").read_bytes()
    before = snapshot([str(repo)])
    (repo / "config").unlink()
    os.symlink("/tmp/elsewhere", repo / "config")
    (repo / "commondir").mkdir()
    (repo / "commondir" / "x").write_text("x")
    restore(before, [str(repo)])
    assert not (repo / "config").is_symlink() and (repo / "config").read_bytes() == config
    assert not (repo / "commondir").exists()


def test_a_rebase_todo_is_put_back_only_when_it_gained_exec_lines(repo):
    todo = repo / "rebase-merge" / "git-rebase-todo"
    todo.parent.mkdir()
    before = snapshot([str(repo)])
    todo.write_text("pick abc one\npick def two\n")  # a rebase the model runs keeps its state
    assert restore(before, [str(repo)]) == []
    before = snapshot([str(repo)])
    todo.write_text("pick abc one\nexec touch pwned\n")
    assert restore(before, [str(repo)]) == [str(todo)]
    assert todo.read_text() == "pick abc one\npick def two\n"
    before = snapshot([str(repo)])
    todo.write_text("pick abc one\n  x touch pwned\n")
    assert restore(before, [str(repo)]) == [str(todo)]


def test_a_file_too_large_to_keep_is_named_not_destroyed(repo, monkeypatch):
    import mdagent.safety.gitguard as gitguard

    monkeypatch.setattr(gitguard, "MAX_BYTES", 8)
    (repo / "info" / "exclude").write_text("a long exclude file\n")
    before = snapshot([str(repo)])
    (repo / "info" / "exclude").write_text("changed by a command\n")
    changed = restore(before, [str(repo)])
    assert changed == [f"{repo / 'info' / 'exclude'} (could not be put back)"]
    assert (repo / "info" / "exclude").read_text() == "changed by a command\n"


@pytest.mark.parametrize("folder", ["hooks", "objects/info", "info"])
def test_nothing_outside_is_written_or_removed_through_a_link_a_command_made(
    repo, tmp_path, folder
):
    # Attacking the fix: a folder turned into a link to ~/.ssh must not lead the
    # put-back to delete the files there or write the hooks' samples into it.
    import shutil

    outside = tmp_path / "ssh"
    outside.mkdir()
    (outside / "id_rsa").write_text("private key\n")
    (outside / "alternates").write_text("keep\n")
    (repo / "objects" / "info").mkdir(exist_ok=True)
    before = snapshot([str(repo)])
    shutil.rmtree(repo / folder)
    os.symlink(outside, repo / folder)
    changed = restore(before, [str(repo)])
    assert str(repo / folder) in changed
    assert sorted(p.name for p in outside.iterdir()) == ["alternates", "id_rsa"]
    assert (outside / "id_rsa").read_text() == "private key\n"
    assert (outside / "alternates").read_text() == "keep\n"
    assert (repo / folder).is_dir() and not (repo / folder).is_symlink()
    if folder == "hooks":
        assert sorted(p.name for p in (repo / "hooks").iterdir()) == sorted(
            p.name for p in (repo / "hooks").iterdir()
        ) and any(p.name.endswith(".sample") for p in (repo / "hooks").iterdir())


def test_a_link_that_was_there_before_stays(repo, tmp_path):
    elsewhere = tmp_path / "objects-elsewhere"
    (repo / "objects").rename(elsewhere)
    os.symlink(elsewhere, repo / "objects")
    before = snapshot([str(repo)])
    (repo.parent / "work.txt").write_text("x")
    assert restore(before, [str(repo)]) == []
    assert (repo / "objects").is_symlink()
