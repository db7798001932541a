"""The state folder's JSON caches: read only whole and of their format, written atomically."""

from __future__ import annotations

import os

import pytest

from mdagent.core.statefiles import read_json, write_json


def test_what_is_written_is_read_back_in_its_format(tmp_path):
    path = tmp_path / "state" / "cache.json"  # the folder is made on the first write
    write_json(path, {"format": 3, "rows": [["a", "b"]], "text": "héllo"})
    assert read_json(path, 3) == {"format": 3, "rows": [["a", "b"]], "text": "héllo"}
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in path.parent.iterdir()] == ["cache.json"]  # no temporary file left


@pytest.mark.parametrize(
    "content",
    ['{"format": 2, "rows": []}', '{"format": 3, "rows": [', "[1, 2]", "", "\xff"],
    ids=["another-format", "torn", "not-an-object", "empty", "not-utf8"],
)
def test_a_file_that_is_not_whole_or_of_the_format_reads_as_none(tmp_path, content):
    path = tmp_path / "cache.json"
    path.write_bytes(content.encode("latin-1"))
    assert read_json(path, 3) is None


def test_a_missing_file_reads_as_none(tmp_path):
    assert read_json(tmp_path / "nothing.json", 1) is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_state_folder_costs_the_cache_only(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        write_json(folder / "cache.json", {"format": 1})  # no error
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o700)


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path):
    path = tmp_path / "cache.json"
    write_json(path, {"format": 1, "n": 1})
    with pytest.raises(TypeError):
        write_json(path, {"format": 1, "n": object()})  # not JSON: raised, not half-written
    assert read_json(path, 1) == {"format": 1, "n": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["cache.json"]
