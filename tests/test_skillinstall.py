"""The pieces of skill installation: sources, hashes, the lock (issue 19)."""

from __future__ import annotations

import os

import pytest

from conftest import write
from mdagent.cli.skillinstall import (
    InstallError,
    file_hashes,
    lock_problems,
    read_lock,
    rename_skill,
    scripts,
    source_url,
    write_lock,
)
from mdagent.safety.skillfolder import changes, digest


def test_source_kinds(tmp_path):
    assert source_url("anthropics/skills") == "https://github.com/anthropics/skills.git"
    assert source_url("file:///srv/repo") == "file:///srv/repo"
    assert source_url("git@github.com:o/r.git") == "git@github.com:o/r.git"
    assert source_url(str(tmp_path)) is None  # a folder that exists
    with pytest.raises(InstallError, match="unsupported source"):
        source_url("ext::sh -c id")
    with pytest.raises(InstallError, match="unsupported source"):
        source_url("ftp://example.com/x")
    with pytest.raises(InstallError, match="no such folder"):
        source_url(str(tmp_path / "missing" / "deeper"))


def test_hashes_see_content_and_mode_and_refuse_links(tmp_path):
    write(tmp_path / "SKILL.md", "x")
    script = write(tmp_path / "run.sh", "echo")
    before = file_hashes(tmp_path)
    assert set(before) == {"SKILL.md", "run.sh"}
    script.chmod(0o755)
    after = file_hashes(tmp_path)
    assert after["run.sh"].startswith("x:") and digest(after) != digest(before)
    assert changes(before, after) == [("run.sh", "changed")]
    assert changes(before, {"SKILL.md": before["SKILL.md"], "new": "1"}) == [
        ("new", "added"),
        ("run.sh", "removed"),
    ]
    (tmp_path / "key").symlink_to("/etc/passwd")
    with pytest.raises(InstallError, match="symbolic link"):
        file_hashes(tmp_path)
    (tmp_path / "key").unlink()
    os.mkfifo(tmp_path / "pipe")  # read, it would hang the install; copied, it fails
    with pytest.raises(InstallError, match="a fifo; an installed skill carries files only"):
        file_hashes(tmp_path)


def test_scripts_are_executables_suffixes_and_shebangs(tmp_path):
    write(tmp_path / "SKILL.md", "---\n---\n")
    write(tmp_path / "a.py", "print(1)")
    write(tmp_path / "tool", "#!/bin/sh\n")
    write(tmp_path / "notes.txt", "plain")
    write(tmp_path / "bin" / "x", "data").chmod(0o700)
    assert sorted(scripts(tmp_path, file_hashes(tmp_path))) == [
        "a.py (script)",
        "bin/x (executable)",
        "tool (script)",
    ]


def test_rename_sets_or_adds_the_front_matter_name(tmp_path):
    one = write(tmp_path / "one.md", "---\nname: old\ndescription: d\n---\nname: body stays\n")
    rename_skill(one, "new")
    assert one.read_text() == "---\nname: new\ndescription: d\n---\nname: body stays\n"
    two = write(tmp_path / "two.md", "---\ndescription: d\n---\nbody\n")
    rename_skill(two, "new")
    assert two.read_text().startswith("---\nname: new\ndescription: d\n---")


def test_lock_round_trip_and_malformed_locks(tmp_path):
    assert read_lock(tmp_path) == {}
    entry = {"source": "s", "path": ".", "ref": None, "commit": None, "sha256": "0", "files": {}}
    write_lock(tmp_path, {"b": entry, "a": entry})
    assert list(read_lock(tmp_path)) == ["a", "b"]
    write(tmp_path / "skills.lock", "skills: [unclosed\n")
    with pytest.raises(InstallError, match=r"skills.lock:\d+: not valid YAML"):
        read_lock(tmp_path)
    write(tmp_path / "skills.lock", "- a\n- b\n")
    with pytest.raises(InstallError, match="expected 'skills:'"):
        read_lock(tmp_path)


def test_check_warns_about_a_missing_installed_skill(tmp_path):
    from mdagent.core.layers import Layer

    write_lock(tmp_path, {"gone": {"source": "s", "files": {}, "sha256": "0"}})
    problems = lock_problems([Layer(tmp_path, "project")])
    assert [p.severity for p in problems] == ["warning"]
    assert "installed skill 'gone' is missing" in problems[0].message
