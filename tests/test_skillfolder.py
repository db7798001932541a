"""A skill folder's manifest and digest: what consent to a skill is bound to (issue 28)."""

from __future__ import annotations

import os

import pytest

from conftest import write
from mdagent.safety import skillfolder
from mdagent.safety.skillfolder import (
    FolderError,
    FolderTooLarge,
    changes,
    digest,
    manifest,
    summary,
)


def test_every_file_counts_with_its_mode_and_folders_through_what_they_hold(tmp_path):
    write(tmp_path / "SKILL.md", "---\n---\n")
    write(tmp_path / "status.txt", "echo hi\n")
    write(tmp_path / "deep" / "er" / "data", "x")
    (tmp_path / "empty").mkdir()
    found = manifest(tmp_path)
    assert sorted(found) == ["SKILL.md", "deep/er/data", "status.txt"]
    assert all(len(entry) == 64 for entry in found.values())
    (tmp_path / "status.txt").chmod(0o755)
    assert manifest(tmp_path)["status.txt"] == "x:" + found["status.txt"]


def test_links_count_as_links_and_are_never_followed(tmp_path):
    write(tmp_path / "SKILL.md", "x")
    outside = write(tmp_path.parent / f"{tmp_path.name}-outside" / "secret", "s3cret")
    (tmp_path / "to-file").symlink_to(outside)
    (tmp_path / "to-folder").symlink_to(outside.parent)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    found = manifest(tmp_path)
    assert sorted(found) == ["SKILL.md", "dangling", "to-file", "to-folder"]
    assert all(found[n].startswith("l:") for n in ("dangling", "to-file", "to-folder"))
    before = digest(found)
    outside.write_text("changed")  # what a link points at is not the skill's
    assert digest(manifest(tmp_path)) == before
    (tmp_path / "to-file").unlink()
    (tmp_path / "to-file").symlink_to(outside.parent)  # where it points is
    assert changes(found, manifest(tmp_path)) == [("to-file", "changed")]
    with pytest.raises(FolderError, match="a symbolic link; an installed skill carries files only"):
        manifest(tmp_path, installs=True)


def test_a_fifo_is_named_never_opened(tmp_path):
    write(tmp_path / "SKILL.md", "x")
    os.mkfifo(tmp_path / "pipe")
    assert manifest(tmp_path)["pipe"] == "s:fifo"  # opening it would wait for a writer
    with pytest.raises(FolderError, match="a fifo; an installed skill carries files only"):
        manifest(tmp_path, installs=True)


def test_git_folders_are_left_out_at_any_depth(tmp_path):
    write(tmp_path / "SKILL.md", "x")
    write(tmp_path / ".git" / "HEAD", "ref")
    write(tmp_path / "vendored" / ".git" / "config", "[core]")
    write(tmp_path / ".gitignore", "*.tmp\n")
    assert sorted(manifest(tmp_path)) == [".gitignore", "SKILL.md"]


def test_the_digest_reads_one_way_only():
    assert digest({"a": "1", "b": "2"}) == digest({"b": "2", "a": "1"})
    assert digest({"a": "1"}) != digest({"a": "x:1"})
    assert digest({"a\nb": "1"}) != digest({"a": "1", "b": "1"})
    assert digest({"caf\udce9": "1"})  # a name that is not UTF-8 still has a digest


def test_changes_and_their_summary():
    old = {"a": "1", "b": "2", "c": "3"}
    new = {"a": "1", "b": "x:2", "d": "4"}
    assert changes(old, new) == [("b", "changed"), ("c", "removed"), ("d", "added")]
    assert summary(changes(old, new)) == "b changed, c removed, d added"
    many = [(f"f{i}", "added") for i in range(8)]
    assert summary(many, limit=2) == "f0 added, f1 added and 6 more"
    assert summary([("evil\nAllow exec", "added")]) == "evil\\nAllow exec added"
    assert summary([]) == "no file changed"


def test_the_cost_is_bounded(tmp_path, monkeypatch):
    write(tmp_path / "SKILL.md", "x")
    for i in range(5):
        write(tmp_path / f"f{i}", "0123456789")
    monkeypatch.setattr(skillfolder, "MAX_ENTRIES", 5)
    with pytest.raises(FolderTooLarge, match="holds more than 5 files"):
        manifest(tmp_path)
    monkeypatch.setattr(skillfolder, "MAX_ENTRIES", 100)
    monkeypatch.setattr(skillfolder, "MAX_BYTES", 45)
    with pytest.raises(FolderTooLarge, match="hold more than 0 MiB"):
        manifest(tmp_path)
    monkeypatch.setattr(skillfolder, "MAX_BYTES", 51)
    assert len(manifest(tmp_path)) == 6


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any folder")
def test_a_folder_that_cannot_be_read_is_an_error_not_a_gap(tmp_path):
    write(tmp_path / "SKILL.md", "x")
    hidden = write(tmp_path / "locked" / "run.sh", "echo")
    hidden.parent.chmod(0)
    try:
        with pytest.raises(FolderError, match="cannot read"):
            manifest(tmp_path)
    finally:
        hidden.parent.chmod(0o755)
