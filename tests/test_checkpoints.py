"""Checkpoints and rewind at engine level: real git, real files, real subprocesses.

The turns here are what a model's calls do to a workspace (file writes, and
commands run by a real shell); the checkpoints are recorded around them the
way the agent loop records them. The end-to-end test through the agent
itself comes with the rewind command.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from mdagent.core.errors import UsageError
from mdagent.rewind import rewind
from mdagent.rewind.checkpoints import (
    Checkpoints,
    CheckpointSettings,
    CheckpointsUnavailable,
    prune,
    remove_session,
    stores,
)
from mdagent.rewind.checkpointstore import CheckpointError, store_root

GIT_ID = ["-c", "user.name=Person", "-c", "user.email=person@example.com"]


def sh(command: str, cwd: Path, **env: str) -> str:
    """A command as a model's exec would run it: bash, in the workspace."""
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=True,
    )
    return done.stdout


def git(ws: Path, *args: str) -> str:
    """git as the person (or a model's command) runs it in the project."""
    done = subprocess.run(
        ["git", "--no-optional-locks", *GIT_ID, *args],
        cwd=ws,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def files_of(root: Path) -> dict[str, tuple]:
    """Everything under ``root`` but .git: kind, exact mode, bytes or link target."""
    found = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                found[rel] = ("file", stat.S_IMODE(st.st_mode), full.read_bytes())
    return found


def dot_git_of(ws: Path) -> dict[str, str]:
    """Every file under the project's .git, by content digest and mode."""
    found = {}
    for dirpath, _dirs, files in os.walk(ws / ".git"):
        for name in files:
            full = Path(dirpath) / name
            st = os.lstat(full)
            found[str(full.relative_to(ws))] = (
                f"{stat.S_IMODE(st.st_mode):o}:{hashlib.sha256(full.read_bytes()).hexdigest()}"
            )
    return found


def project(root: Path, with_git: bool = True) -> Path:
    """A small project: text, binary, executable, private, CRLF files, a symlink, folders."""
    ws = root / "project"
    (ws / "src" / "deep").mkdir(parents=True)
    (ws / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (ws / "old.txt").write_text("old file\n")
    (ws / "edit.md").write_text("# Title\n\nkeep me\n")
    (ws / "src" / "main.py").write_text("print('hi')\n")
    (ws / "src" / "deep" / "data.bin").write_bytes(bytes(range(256)) * 4)
    (ws / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(ws / "run.sh", 0o755)
    (ws / "secret.env").write_text("TOKEN=x\n")
    os.chmod(ws / "secret.env", 0o600)
    (ws / "dos.txt").write_bytes(b"line one\r\nline two\r\n")
    os.symlink("src/main.py", ws / "link-to-main")
    if with_git:
        sh("git init -q -b main .", ws)
        git(ws, "add", "-A")
        git(ws, "commit", "-qm", "first")
    return ws


def model_turn(ws: Path) -> None:
    """The issue's turn: write_file, edit_file, then rm, sed -i and mkdir+touch through exec."""
    (ws / "new.txt").write_text("a new file\n")  # write_file
    text = (ws / "edit.md").read_text()
    (ws / "edit.md").write_text(text.replace("keep me", "edited by the model"))  # edit_file
    sh("rm old.txt", ws)
    sh("sed -i s/a/b/ notes.txt", ws)
    sh("mkdir -p build && touch build/x", ws)


def git_view(ws: Path) -> tuple[str, str, str, str]:
    """What git itself says: status, refs, HEAD, and the index's own listing."""
    return (
        git(ws, "status", "--porcelain=v1", "--untracked-files=all"),
        git(ws, "for-each-ref"),
        git(ws, "rev-parse", "HEAD"),
        git(ws, "ls-files", "--stage"),
    )


@pytest.fixture
def ws(tmp_path):
    return project(tmp_path)


def test_the_issue_turn_is_rewound_byte_for_byte_and_git_is_untouched(ws):
    before_files = files_of(ws)
    before_git = dot_git_of(ws)
    before_view = git_view(ws)
    # git_view itself may not write either (--no-optional-locks): checked here.
    assert dot_git_of(ws) == before_git
    cps = Checkpoints(ws)

    start = cps.record("s1", 1, "tidy up the project", "before")
    model_turn(ws)
    end = cps.record("s1", 1, "tidy up the project", "after")
    assert end.pair == start.seq
    changed = files_of(ws)
    assert changed != before_files

    target = cps.default_target()
    assert target == start
    plan = rewind.plan(cps, target)
    assert plan.remove == ("build/x", "new.txt")
    assert plan.restore == ("old.txt",)
    assert plan.revert == ("edit.md", "notes.txt")
    assert plan.conflicts == () and not plan.blocked
    result = rewind.apply(cps, plan, session_id="s1", turn=2)

    assert files_of(ws) == before_files  # bytes, modes, symlinks, and build/ is gone
    assert result.removed_folders == ("build",)
    assert result.failed == () and result.mismatched == ()
    assert dot_git_of(ws) == before_git
    assert git_view(ws) == before_view


def test_a_workspace_that_is_not_a_git_repository_works_the_same(tmp_path):
    ws = project(tmp_path, with_git=False)
    before_files = files_of(ws)
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    model_turn(ws)
    cps.record("s1", 1, "go", "after")
    plan = rewind.plan(cps, cps.default_target())
    assert plan.refs_moved == ()
    rewind.apply(cps, plan)
    assert files_of(ws) == before_files
    assert not (ws / ".git").exists()


def test_a_repository_a_model_made_is_reported_and_left(tmp_path):
    ws = project(tmp_path, with_git=False)
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    sh("git init -q -b main . && echo x > new.txt", ws)
    cps.record("s1", 1, "go", "after")
    plan = rewind.plan(cps, 1)
    assert [(m.name, m.before, m.after) for m in plan.refs_moved] == [
        ("HEAD", None, "ref: refs/heads/main")
    ]
    rewind.apply(cps, plan)
    assert (ws / ".git" / "HEAD").exists() and not (ws / "new.txt").exists()


def test_modes_symlinks_and_type_changes_come_back(ws):
    before = files_of(ws)
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    sh(
        "chmod 644 secret.env && chmod 600 notes.txt && chmod -x run.sh && chmod +x edit.md"
        " && ln -sfn notes.txt link-to-main"  # retargeted
        " && rm src/main.py && mkdir src/main.py && echo x > src/main.py/inner"  # file -> folder
        " && rm dos.txt && ln -s run.sh dos.txt"  # file -> symlink
        " && rm -r src/deep"  # a folder deleted
        " && ln -s /etc escape",  # a symlink pointing out, created
        ws,
    )
    cps.record("s1", 1, "go", "after")
    plan = rewind.plan(cps, 1)
    assert set(plan.chmod) >= {"secret.env", "notes.txt", "run.sh", "edit.md"}
    result = rewind.apply(cps, plan)
    assert result.failed == () and result.mismatched == ()
    assert files_of(ws) == before


def test_file_names_that_are_not_utf8_or_hold_newlines_and_spaces(ws):
    odd = [b"caf\xe9.txt", b"two\nlines.txt", b" lead and trail ", b"-dash", b"*[glob]?"]
    root = os.fsencode(ws)
    for name in odd[:2]:
        Path(os.fsdecode(root + b"/" + name)).write_bytes(b"before\n")
    os.chmod(os.fsdecode(root + b"/" + odd[0]), 0o600)
    before = files_of(ws)
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    for name in odd:
        Path(os.fsdecode(root + b"/" + name)).write_bytes(b"after\n")
    os.chmod(os.fsdecode(root + b"/" + odd[0]), 0o644)
    cps.record("s1", 1, "go", "after")
    plan = rewind.plan(cps, 1)
    assert {os.fsencode(p) for p in plan.remove} == set(odd[2:])
    assert rewind.apply(cps, plan).mismatched == ()
    assert files_of(ws) == before


def test_a_same_size_edit_in_place_right_after_a_checkpoint_is_seen(ws):
    # git's racy-clean case: same inode, same size, same second as the index.
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    with open(ws / "notes.txt", "r+b") as fh:
        fh.write(b"A")
    cps.record("s1", 1, "go", "after")
    plan = rewind.plan(cps, 1)
    assert plan.revert == ("notes.txt",)
    rewind.apply(cps, plan)
    assert (ws / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"


def test_diff_shows_what_the_rewind_would_do_permission_bits_too(ws):
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    model_turn(ws)
    sh("chmod 640 src/main.py", ws)
    cps.record("s1", 1, "go", "after")
    plan = rewind.plan(cps, 1)
    text = rewind.diff_text(cps, plan)
    assert "-edited by the model\n+keep me" in text
    assert "diff --git a/old.txt b/old.txt\nnew file mode 100644" in text
    assert "diff --git a/src/main.py b/src/main.py\nold mode 100640\nnew mode 100644\n" in text
    # Asking what it would do changed nothing.
    assert (ws / "new.txt").exists() and not (ws / "old.txt").exists()


def test_a_file_the_person_edited_after_the_turn_stops_the_rewind_and_is_kept(ws):
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    model_turn(ws)
    cps.record("s1", 1, "go", "after")
    (ws / "notes.txt").write_text("the person's own words\n")  # not through a model
    after_edit = files_of(ws)

    plan = rewind.plan(cps, 1)
    assert [c.path for c in plan.conflicts] == ["notes.txt"]
    assert "changed after turn 1 ended (not by a model)" in plan.conflicts[0].reason
    assert plan.blocked
    with pytest.raises(rewind.RewindConflict) as stopped:
        rewind.apply(cps, plan)
    assert "notes.txt" in str(stopped.value) and "--force" in str(stopped.value)
    assert stopped.value.code == "REWIND_CONFLICT"
    assert files_of(ws) == after_edit  # nothing changed at all

    forced = rewind.apply(cps, rewind.plan(cps, 1, force=True))
    assert (ws / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"
    # The person's words are in the rewind's own checkpoint: rewinding the rewind brings them back.
    back = rewind.plan(cps, forced.before)
    assert back.conflicts == ()
    rewind.apply(cps, back)
    assert files_of(ws) == after_edit


def test_a_persons_edit_between_two_turns_is_a_conflict_too(ws):
    cps = Checkpoints(ws)
    cps.record("s1", 1, "one", "before")
    (ws / "notes.txt").write_text("model one\n")
    cps.record("s1", 1, "one", "after")
    (ws / "notes.txt").write_text("person\n")  # between the turns
    cps.record("s1", 2, "two", "before")
    (ws / "notes.txt").write_text("model two\n")
    cps.record("s1", 2, "two", "after")
    plan = rewind.plan(cps, 1)
    assert [c.path for c in plan.conflicts] == ["notes.txt"]
    # Rewinding only turn 2 takes back the model's change, not the person's.
    plan = rewind.plan(cps, cps.default_target())
    assert plan.target.turn == 2 and plan.conflicts == ()
    rewind.apply(cps, plan)
    assert (ws / "notes.txt").read_text() == "person\n"


def test_a_file_only_the_person_changed_is_left_alone(ws):
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    model_turn(ws)
    cps.record("s1", 1, "go", "after")
    (ws / "src" / "main.py").write_text("print('mine')\n")
    (ws / "mine.txt").write_text("a file of my own\n")
    plan = rewind.plan(cps, 1)
    assert plan.conflicts == ()
    assert set(plan.kept) == {"src/main.py", "mine.txt"}
    rewind.apply(cps, plan)
    assert (ws / "src" / "main.py").read_text() == "print('mine')\n"
    assert (ws / "mine.txt").exists() and not (ws / "new.txt").exists()


def test_a_turn_whose_end_was_not_recorded_asks_before_overwriting(ws):
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    model_turn(ws)  # mdagent was killed here: no "after"
    [turn] = cps.turns()
    assert not turn.finished and {c.path for c in turn.changes} >= {"new.txt", "old.txt"}
    plan = rewind.plan(cps, 1)
    assert plan.blocked
    assert "whose end was not recorded" in plan.conflicts[0].reason
    rewind.apply(cps, rewind.plan(cps, 1, force=True))
    assert (ws / "old.txt").exists() and not (ws / "new.txt").exists()


def test_refs_a_model_moved_are_reported_not_moved_back(ws):
    head = git(ws, "rev-parse", "HEAD").strip()
    cps = Checkpoints(ws)
    cps.record("s1", 1, "commit it", "before")
    (ws / "new.txt").write_text("x\n")
    git(ws, "add", "new.txt")
    git(ws, "commit", "-qm", "by the model")
    git(ws, "checkout", "-qb", "feature")
    cps.record("s1", 1, "commit it", "after")
    new_head = git(ws, "rev-parse", "HEAD").strip()

    plan = rewind.plan(cps, 1)
    moved = {m.name: (m.before, m.after) for m in plan.refs_moved}
    assert moved["refs/heads/main"] == (head, new_head)
    assert moved["refs/heads/feature"] == (None, new_head)
    assert moved["HEAD"] == ("ref: refs/heads/main", "ref: refs/heads/feature")
    rewind.apply(cps, plan)
    assert not (ws / "new.txt").exists()
    assert git(ws, "rev-parse", "HEAD").strip() == new_head  # .git is never rewound
    assert git(ws, "symbolic-ref", "HEAD").strip() == "refs/heads/feature"


def test_filters_attributes_and_the_persons_git_configuration_never_apply(
    ws, tmp_path, monkeypatch
):
    marker = tmp_path / "marker"
    driver = f"sh -c 'echo ran >> {marker}; cat'"
    for config in (Path.home() / ".gitconfig", Path.home() / ".config" / "git" / "config"):
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            f'[filter "mark"]\n\tclean = {driver}\n\tsmudge = {driver}\n\trequired = true\n'
            f'[diff "mark"]\n\ttextconv = {driver}\n'
            "[core]\n\tautocrlf = true\n\thooksPath = /nonexistent\n"
        )
    (Path.home() / ".config" / "git" / "attributes").write_text("* filter=mark diff=mark\n")
    (Path.home() / ".config" / "git" / "ignore").write_text("*.txt\n")
    sh(f'git config filter.mark.clean "{driver}" && git config diff.mark.textconv "{driver}"', ws)
    (ws / ".gitattributes").write_text(
        "* filter=mark diff=mark\n*.txt text eol=crlf\n*.md ident\n*.u16 working-tree-encoding=UTF-16\n"
    )
    (ws / "id.md").write_text("$Id: not expanded $\n")
    (ws / "wide.u16").write_bytes("wide\n".encode("utf-16"))
    # A hook's environment pointing at the project's repository is not followed either.
    monkeypatch.setenv("GIT_DIR", str(ws / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(ws / ".git" / "index"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.hooksPath'='/nonexistent'")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(Path.home() / ".config"))
    before_git = dot_git_of(ws)
    before = files_of(ws)

    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    model_turn(ws)
    (ws / "dos.txt").write_bytes(b"changed\r\n")
    (ws / "id.md").write_text("$Id: changed $\n")
    (ws / "wide.u16").write_bytes("other\n".encode("utf-16"))
    cps.record("s1", 1, "go", "after")
    plan = rewind.plan(cps, 1)
    assert "notes.txt" in plan.revert  # *.txt in the person's global ignore file: still covered
    rewind.diff_text(cps, plan)
    rewind.apply(cps, plan)

    assert not marker.exists()
    assert files_of(ws) == before
    assert dot_git_of(ws) == before_git
    assert "-filter" in (cps.store.git_dir / "info" / "attributes").read_text()


def test_ignored_files_are_never_recorded_or_touched(ws):
    (ws / ".gitignore").write_text("*.log\nbuild/\n")
    (ws / "app.log").write_text("log before\n")
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    model_turn(ws)  # build/x is ignored
    (ws / "app.log").write_text("log written during the turn\n")
    (ws / "more.log").write_text("new ignored file\n")
    cps.record("s1", 1, "go", "after")
    plan = rewind.plan(cps, 1)
    assert not {"app.log", "more.log", "build/x"} & set(plan.paths)
    rewind.apply(cps, plan)
    assert (ws / "app.log").read_text() == "log written during the turn\n"
    assert (ws / "more.log").exists() and (ws / "build" / "x").exists()
    assert (ws / "old.txt").exists() and not (ws / "new.txt").exists()


def test_files_over_the_size_cap_are_named_not_covered_and_never_overwritten(ws):
    settings = {"checkpoints": {"max_file_bytes": 2000}}
    (ws / "big.bin").write_bytes(b"x" * 5000)
    cps = Checkpoints(ws, settings)
    start = cps.record("s1", 1, "go", "before")
    assert [(n.path, n.reason) for n in start.not_covered] == [
        ("big.bin", "larger than 2000 bytes")
    ]
    (ws / "big.bin").write_bytes(b"y" * 6000)
    (ws / "notes.txt").write_bytes(b"z" * 3000)  # was small: grew over the cap
    cps.record("s1", 1, "go", "after")
    plan = rewind.plan(cps, 1)
    assert {n.path for n in plan.not_covered} == {"big.bin", "notes.txt"}
    [conflict] = plan.conflicts
    assert conflict.path == "notes.txt" and not conflict.forceable
    assert "not covered now" in conflict.reason
    result = rewind.apply(cps, rewind.plan(cps, 1, force=True))
    assert result.failed == ()
    assert (ws / "notes.txt").read_bytes() == b"z" * 3000  # kept even with force
    assert (ws / "big.bin").read_bytes() == b"y" * 6000


def test_more_files_than_the_cap_means_no_checkpoint_said_once(ws):
    cps = Checkpoints(ws, {"checkpoints": {"max_files": 5}})
    with pytest.raises(CheckpointsUnavailable) as first:
        cps.record("s1", 1, "go", "before")
    assert str(first.value) == (
        "no checkpoint: the workspace has more than 5 files (checkpoints.max_files)"
    )
    with pytest.raises(CheckpointsUnavailable):
        cps.record("s1", 2, "go", "before")
    assert cps.list() == []


def test_without_git_checkpoints_are_unavailable_in_one_line(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))
    with pytest.raises(CheckpointsUnavailable) as missing:
        Checkpoints(ws).record("s1", 1, "go", "before")
    assert str(missing.value) == "checkpoints are unavailable: git is not installed"


def test_disabled_checkpoints_record_nothing(ws):
    cps = Checkpoints(ws, {"checkpoints": {"enabled": False}})
    assert cps.record("s1", 1, "go", "before") is None
    assert not store_root().exists()


def test_before_is_recorded_once_per_turn_and_after_only_with_a_before(ws):
    cps = Checkpoints(ws)
    assert cps.record("s1", 1, "read only", "after") is None  # the turn wrote nothing
    first = cps.record("s1", 2, "go", "before")
    (ws / "new.txt").write_text("x\n")
    assert cps.record("s1", 2, "go", "before") == first
    end = cps.record("s1", 2, "go", "after")
    assert cps.record("s1", 2, "go", "after") == end
    assert [c.seq for c in cps.list()] == [1, 2]
    with pytest.raises(UsageError):
        cps.record("s1", 3, "go", "during")
    with pytest.raises(UsageError, match="no checkpoint 9"):
        rewind.plan(cps, 9)


def test_turns_list_what_each_changed_and_the_default_target_skips_rewound_ones(ws):
    cps = Checkpoints(ws)
    cps.record("s1", 1, "first", "before")
    (ws / "one.txt").write_text("1\n2\n")
    cps.record("s1", 1, "first", "after")
    cps.record("s1", 2, "looks only", "before")
    cps.record("s1", 2, "looks only", "after")
    cps.record("s2", 1, "second", "before")
    (ws / "notes.txt").write_text("alpha\n")
    cps.record("s2", 1, "second", "after")

    turns = cps.turns()
    assert [(t.session_id, t.turn, t.prompt) for t in turns] == [
        ("s1", 1, "first"),
        ("s1", 2, "looks only"),
        ("s2", 1, "second"),
    ]
    assert [(c.path, c.status, c.added, c.deleted) for c in turns[0].changes] == [
        ("one.txt", "created", 2, 0)
    ]
    assert turns[1].changes == ()
    assert [(c.path, c.status, c.added, c.deleted) for c in turns[2].changes] == [
        ("notes.txt", "modified", 0, 2)
    ]
    assert [t.turn for t in cps.turns("s1")] == [1, 2]

    assert cps.default_target().session_id == "s2"
    first = rewind.apply(cps, rewind.plan(cps, cps.default_target()))
    # Turn s2/1 is rewound, s1/2 changed nothing: next is s1/1.
    assert cps.default_target().prompt == "first"
    assert [t.kind for t in cps.turns()][-1] == "rewind"
    rewind.apply(cps, rewind.plan(cps, cps.default_target()))
    assert not (ws / "one.txt").exists() and cps.default_target() is None
    # Back to before the first rewind: both rewinds are taken back, both turns count again.
    plan = rewind.plan(cps, first.before)
    assert plan.conflicts == ()
    assert [t.kind for t in plan.turns] == ["rewind", "rewind"]
    rewind.apply(cps, plan)
    assert (ws / "notes.txt").read_text() == "alpha\n" and (ws / "one.txt").exists()
    assert cps.default_target().session_id == "s2"


def test_nothing_is_written_through_a_symlink_the_store_does_not_hold(ws, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / ".gitignore").write_text("src\n!src/\n")  # keeps src/ covered at first
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    sh(f"rm -r src && ln -s {outside} src && printf 'src\\n' > .gitignore", ws)
    cps.record("s1", 1, "go", "after")
    plan = rewind.plan(cps, 1, force=True)
    assert {c.path for c in plan.conflicts} == {"src/main.py", "src/deep/data.bin"}
    assert all("src is in the way" in c.reason for c in plan.conflicts)
    rewind.apply(cps, plan)
    assert list(outside.iterdir()) == []
    assert (ws / ".gitignore").read_text() == "src\n!src/\n"


def test_a_nested_repository_is_named_not_covered(ws):
    sh("mkdir vendor && cd vendor && git init -q && echo v > v.txt", ws)
    start = Checkpoints(ws).record("s1", 1, "go", "before")
    assert ("vendor", "a git repository of its own") in [tuple(n) for n in start.not_covered]


def test_names_git_will_not_record_are_named_not_covered_and_never_written(ws):
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    sh(
        "mkdir .GIT GIT~1 && echo x > .GIT/config && echo y > GIT~1/y && echo z > '.git ' && echo n > new",
        ws,
    )
    end = cps.record("s1", 1, "go", "after")
    assert {n.path: n.reason for n in end.not_covered} == {
        ".GIT/config": "a name git does not record (like .git)",
        "GIT~1/y": "a name git does not record (like .git)",
        ".git ": "a name git does not record (like .git)",
    }
    assert end.files == cps.list()[0].files + 1
    plan = rewind.plan(cps, 1)
    assert plan.remove == ("new",)
    rewind.apply(cps, plan)
    assert (ws / ".GIT" / "config").read_text() == "x\n" and not (ws / "new").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file: run the suite as a user")
def test_unreadable_files_and_folders_are_named_and_the_rest_recorded(ws):
    sh("echo s > private && chmod 000 private && mkdir closed && echo c > closed/c", ws)
    sh("mkdir shut && echo k > shut/k", ws)
    cps = Checkpoints(ws)
    first = cps.record("s1", 1, "go", "before")
    sh("chmod 000 closed shut", ws)
    try:
        start = cps.record("s1", 2, "go", "before")
    finally:
        sh("chmod 700 closed shut && chmod 600 private", ws)
    assert {n.path: n.reason for n in first.not_covered} == {"private": "cannot be read"}
    assert {n.path: n.reason for n in start.not_covered} == {
        "private": "cannot be read",
        "closed": "a folder that cannot be read",
        "shut": "a folder that cannot be read",
        "shut/k": "cannot be read",
        "closed/c": "cannot be read",
    }
    assert start.files == first.files - 2


def test_a_file_git_could_not_read_is_named_and_the_rest_recorded(ws, monkeypatch):
    # Root reads every file, so the refusal is what os.access says here; the test
    # above runs the real one where the suite runs as a user.
    real_access = os.access
    monkeypatch.setattr(
        os,
        "access",
        lambda path, mode, **kw: path != b"secret.env" and real_access(path, mode, **kw),
    )
    start = Checkpoints(ws).record("s1", 1, "go", "before")
    assert [tuple(n) for n in start.not_covered] == [("secret.env", "cannot be read")]
    assert "secret.env" not in Checkpoints(ws).store.entries(start.tree)


def test_the_state_dir_inside_the_workspace_is_never_recorded(ws, monkeypatch):
    monkeypatch.setenv("AGENT_STATE_DIR", str(ws / "state"))
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    (ws / "new.txt").write_text("x\n")
    (ws / "state" / "mdagent.db").write_text("the turn's messages\n")  # the sessions beside
    cps.record("s1", 1, "go", "after")
    assert [c.path for c in cps.turns()[0].changes] == ["new.txt"]
    rewind.apply(cps, rewind.plan(cps, 1))
    assert (ws / "state" / "checkpoints").is_dir()
    assert (ws / "state" / "mdagent.db").read_text() == "the turn's messages\n"


def test_the_store_is_private_and_outside_the_project(ws):
    Checkpoints(ws).record("s1", 1, "go", "before")
    [folder] = [p for p in store_root().iterdir() if p.is_dir()]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert (folder / "workspace").read_text().strip() == str(ws.resolve())
    assert not (ws / ".git" / "refs" / "mdagent").exists()


def test_two_sessions_recording_at_once_get_their_own_checkpoints(ws):
    import threading

    errors = []

    def session(name: str) -> None:
        try:
            cps = Checkpoints(ws)  # each with its own store handle, as two processes would
            for turn in range(1, 4):
                cps.record(name, turn, "go", "before")
                cps.record(name, turn, "go", "after")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=session, args=(n,)) for n in ("s1", "s2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    listed = Checkpoints(ws).list()
    assert [c.seq for c in listed] == list(range(1, 13))
    for checkpoint in listed:
        if checkpoint.phase == "after":
            before = next(c for c in listed if c.seq == checkpoint.pair)
            assert (before.session_id, before.turn) == (checkpoint.session_id, checkpoint.turn)


def test_a_workspace_changed_after_the_plan_is_not_rewound(ws):
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    model_turn(ws)
    cps.record("s1", 1, "go", "after")
    plan = rewind.plan(cps, 1)
    (ws / "late.txt").write_text("written after the plan\n")
    with pytest.raises(CheckpointError, match="changed since the rewind was planned"):
        rewind.apply(cps, plan)
    assert (ws / "new.txt").exists() and not (ws / "old.txt").exists()


def test_a_rewind_with_nothing_to_do_records_nothing(ws):
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    cps.record("s1", 1, "go", "after")
    plan = rewind.plan(cps, 1)
    assert plan.empty
    result = rewind.apply(cps, plan)
    assert result.before is None and len(cps.list()) == 2


def test_a_deleted_index_or_a_stale_lock_costs_only_time(ws):
    cps = Checkpoints(ws)
    first = cps.record("s1", 1, "go", "before")
    folder = cps.store.folder
    Path(str(folder / "index") + ".lock").write_text("")  # a run killed mid-write
    second = cps.record("s1", 2, "go", "before")
    (folder / "index").write_bytes(b"garbage")
    third = cps.record("s1", 3, "go", "before")
    assert first.tree == second.tree == third.tree


def test_prune_by_age_and_by_size_and_sessions_take_theirs_along(tmp_path):
    one = project(tmp_path / "a", with_git=False)
    two = project(tmp_path / "b", with_git=False)
    first, second = Checkpoints(one), Checkpoints(two)
    for turn in (1, 2):
        first.record("s1", turn, "go", "before")
        (one / f"f{turn}").write_text("x\n")
        first.record("s1", turn, "go", "after")
    second.record("s2", 1, "go", "before")
    second.record("s3", 1, "go", "before")
    assert sorted(s.checkpoints for s in stores()) == [2, 4]

    assert remove_session("s2") == 1
    assert [c.session_id for c in second.list()] == ["s3"]
    assert remove_session("s3") == 1
    assert [s.workspace for s in stores()] == [str(one.resolve())]  # an empty store goes

    report = prune(keep_days=30)
    assert report.removed == 0 and len(first.list()) == 4
    cut = first.list()[2].time - 0.0005  # keep the second turn's checkpoints
    report = prune(keep_days=30, now=cut + 30 * 86400)
    assert report.removed == 2 and [c.turn for c in first.list()] == [2, 2]
    # Pruned objects are gone for good, and the next checkpoint still works.
    first.record("s1", 3, "go", "before")
    plan = rewind.plan(first, first.list()[0])
    assert plan.remove == ("f2",)
    assert rewind.apply(first, plan).mismatched == ()
    assert (one / "f1").exists() and not (one / "f2").exists()

    report = prune(keep_mib=0)
    assert report.stores_removed == 1 and report.size_after == 0 and stores() == []


def test_prune_packs_a_store_full_of_loose_objects(tmp_path):
    # git packs when objects/17/ holds more than 6700 / 256 objects: file
    # contents whose blob ids start with 17 put them there, without 7,000 files.
    ws = project(tmp_path, with_git=False)
    made = 0
    for n in range(100_000):
        data = f"content {n}\n".encode()
        if hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest().startswith("17"):
            (ws / f"f{n}.txt").write_bytes(data)
            made += 1
            if made == 30:
                break
    cps = Checkpoints(ws)
    cps.record("s1", 1, "go", "before")
    loose = cps.store.git_dir / "objects" / "17"
    assert len(list(loose.iterdir())) >= 30
    before = cps.store.size()
    prune()
    assert not loose.exists() or not list(loose.iterdir())
    assert cps.store.size() < before
    assert rewind.plan(cps, 1).empty  # everything still readable


def test_settings_defaults_agree_and_the_schema_checks_them(tmp_path):
    from mdagent.core.defaults import DEFAULT_SETTINGS
    from mdagent.declarations.declarations import load_settings

    assert CheckpointSettings.from_settings(None) == CheckpointSettings()
    assert CheckpointSettings.from_settings(DEFAULT_SETTINGS) == CheckpointSettings()
    good = tmp_path / "good.yaml"
    good.write_text("checkpoints: {enabled: false, max_file_bytes: 5, keep_days: 7}\n")
    settings, problems = load_settings(good)
    assert problems == []
    assert CheckpointSettings.from_settings(settings).keep_days == 7
    bad = tmp_path / "bad.yaml"
    bad.write_text("checkpoints:\n  max_files: many\n")
    _, problems = load_settings(bad)
    assert problems and "max_files" in str(problems[0])
    assert json.dumps(DEFAULT_SETTINGS["checkpoints"])
