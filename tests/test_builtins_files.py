"""read_file, write_file and edit_file on real files."""

from __future__ import annotations

import os
import threading
import tracemalloc

import pytest

from mdagent.core.calls import ToolContext
from mdagent.tools.builtins import files, register_builtins
from mdagent.tools.toolbox import Toolbox


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("top secret\n")
    return root


@pytest.fixture
def call(ws):
    tb = Toolbox()
    register_builtins(tb)

    def call(name, **args):
        return tb.run(name, args, ToolContext(workdir=str(ws)))

    return call


def numbered(*pairs):
    return "\n".join(f"{n:6d}\t{text}" for n, text in pairs)


# -- read_file -------------------------------------------------------------------


def test_read_numbers_lines_like_cat_n(call, ws):
    (ws / "notes.txt").write_text("alpha\nbeta\r\ngamma")
    result = call("read_file", path="notes.txt")
    assert result.ok
    assert result.data == {
        "path": "notes.txt",
        "output": numbered((1, "alpha"), (2, "beta"), (3, "gamma")),
        "total_lines": 3,
        "truncated": False,
    }


def test_read_pages_with_offset_and_limit(call, ws):
    (ws / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = call("read", path="long.txt", offset=4, limit=2)
    assert result.data["output"] == numbered((4, "line 4"), (5, "line 5"))
    assert result.data["truncated"] is True and result.data["next_offset"] == 6
    assert result.data["total_lines"] == 10
    tail = call("read_file", path="long.txt", offset=9)
    assert tail.data["output"] == numbered((9, "line 9"), (10, "line 10"))
    assert tail.data["truncated"] is False
    assert "past the end" in call("read_file", path="long.txt", offset=11).error


def test_read_defaults_to_2000_lines(call, ws):
    (ws / "big.txt").write_text("x\n" * 2500)
    result = call("read_file", path="big.txt")
    assert result.data["output"].count("\n") == 1999
    assert result.data["truncated"] is True and result.data["total_lines"] == 2500


def test_read_cuts_a_huge_line(call, ws):
    (ws / "min.js").write_text("a" * 10_000 + "\n")
    result = call("read_file", path="min.js")
    assert len(result.data["output"]) < 2100
    assert "8000 chars cut; read_file with offset=1, limit=1, column=2001" in result.data["output"]
    assert result.data["truncated"] is True


def test_read_pages_through_a_long_line_with_column(call, ws):
    (ws / "min.js").write_text("ab\n" + "x" * 2000 + "é" * 2000 + "y" * 10 + "\r\n")
    second = call("read_file", path="min.js", offset=2, limit=1, column=2001)
    assert second.data["output"] == numbered((2, "é" * 2000)) + (
        " [... 10 chars cut; read_file with offset=2, limit=1, column=4001 shows more]"
    )
    third = call("read_file", path="min.js", offset=2, limit=1, column=4001)
    assert third.data == {
        "path": "min.js",
        "output": numbered((2, "y" * 10)),
        "total_lines": 2,
        "truncated": False,
    }
    past = call("read_file", path="min.js", column=5000)
    assert past.data["output"] == numbered((1, ""), (2, ""))


def test_read_a_huge_line_without_newline_costs_no_memory(call, ws):
    with (ws / "huge.txt").open("wb") as fh:
        for _ in range(20):
            fh.write(b"a" * 1024 * 1024)
    tracemalloc.start()
    try:
        result = call("read_file", path="huge.txt")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.data["total_lines"] == 1
    assert f"{20 * 1024 * 1024 - 2000} chars cut" in result.data["output"]
    assert peak < 2 * 1024 * 1024  # the file is 20 MiB


def test_read_refuses_a_fifo_instead_of_hanging(call, ws):
    os.mkfifo(ws / "pipe")
    answer = []
    worker = threading.Thread(target=lambda: answer.append(call("read_file", path="pipe")))
    worker.start()
    worker.join(10)
    if worker.is_alive():  # unblock the old behaviour before failing
        os.close(os.open(ws / "pipe", os.O_WRONLY | os.O_NONBLOCK))
    assert answer and answer[0].error == "not a regular file: pipe"


def test_read_an_empty_file(call, ws):
    (ws / "empty").write_text("")
    assert call("read_file", path="empty").data == {
        "path": "empty",
        "output": "",
        "total_lines": 0,
        "truncated": False,
    }


def test_read_refuses_binary_files(call, ws):
    (ws / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    result = call("read_file", path="image.png")
    assert not result.ok and result.error == "binary file, not shown: image.png"


def test_read_missing_file_and_directory(call, ws):
    assert call("read_file", path="nope.txt").error == "not found: nope.txt"
    (ws / "dir").mkdir()
    assert call("read_file", path="dir").error.startswith("is a directory: dir")


@pytest.mark.parametrize("path", ["../outside/secret.txt", "/etc/passwd", "link/secret.txt"])
def test_read_refuses_paths_outside_the_workspace(call, ws, tmp_path, path):
    (ws / "link").symlink_to(tmp_path / "outside")
    result = call("read_file", path=path)
    assert not result.ok
    assert result.data["code"] == "DENIED"
    assert result.error == f"path escapes the workspace: {path}"
    assert "top secret" not in str(result.data)


def test_read_follows_a_symlink_that_stays_inside(call, ws):
    (ws / "real.txt").write_text("hello\n")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    assert call("read_file", path="alias.txt").data["output"] == numbered((1, "hello"))


# -- write_file ------------------------------------------------------------------


def test_write_creates_parent_folders(call, ws):
    result = call("write_file", path="a/b/c.txt", content="héllo\n")
    assert result.ok
    assert result.data == {
        "path": "a/b/c.txt",
        "bytes": 7,
        "created": True,
        "output": "created a/b/c.txt (7 bytes)",
    }
    assert (ws / "a" / "b" / "c.txt").read_text(encoding="utf-8") == "héllo\n"


def test_write_overwrites_keeping_the_mode_and_leaving_no_temp_file(call, ws):
    script = ws / "run.sh"
    script.write_text("old\n")
    script.chmod(0o755)
    result = call("write", path="run.sh", content="#!/bin/sh\necho new\n")
    assert result.data["created"] is False
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert script.stat().st_mode & 0o777 == 0o755
    assert sorted(os.listdir(ws)) == ["run.sh"]


def test_write_through_an_inside_symlink_updates_the_target(call, ws):
    (ws / "real.txt").write_text("old")
    (ws / "alias.txt").symlink_to("real.txt")
    call("write_file", path="alias.txt", content="new")
    assert (ws / "alias.txt").is_symlink()
    assert (ws / "real.txt").read_text() == "new"


@pytest.mark.parametrize("path", ["../outside/new.txt", "link/new.txt", "link/secret.txt"])
def test_write_refuses_paths_outside_the_workspace(call, ws, tmp_path, path):
    (ws / "link").symlink_to(tmp_path / "outside")
    result = call("write_file", path=path, content="pwned")
    assert not result.ok and result.data["code"] == "DENIED"
    assert sorted(os.listdir(tmp_path / "outside")) == ["secret.txt"]
    assert (tmp_path / "outside" / "secret.txt").read_text() == "top secret\n"


def test_write_refuses_a_directory(call, ws):
    (ws / "dir").mkdir()
    assert call("write_file", path="dir", content="x").error == "is a directory: dir"


# -- edit_file -------------------------------------------------------------------


def test_edit_replaces_a_unique_string(call, ws):
    (ws / "app.py").write_text("def greet():\n    return 'hi'\n")
    result = call("edit_file", path="app.py", old_string="'hi'", new_string="'hello'")
    assert result.ok
    assert result.data == {
        "path": "app.py",
        "replacements": 1,
        "output": "replaced 1 occurrence in app.py",
    }
    assert (ws / "app.py").read_text() == "def greet():\n    return 'hello'\n"


def test_edit_refuses_an_ambiguous_string(call, ws):
    (ws / "x.txt").write_text("a\na\na\n")
    result = call("edit", path="x.txt", old_string="a", new_string="b")
    assert not result.ok
    assert "occurs 3 times" in result.error and "replace_all" in result.error
    assert (ws / "x.txt").read_text() == "a\na\na\n"


def test_edit_replace_all(call, ws):
    (ws / "x.txt").write_text("a\na\na\n")
    result = call("edit_file", path="x.txt", old_string="a", new_string="b", replace_all=True)
    assert result.data["replacements"] == 3
    assert (ws / "x.txt").read_text() == "b\nb\nb\n"


def test_edit_errors(call, ws):
    (ws / "x.txt").write_text("hello\n")
    assert call("edit_file", path="x.txt", old_string="bye", new_string="b").error == (
        "old_string not found in x.txt"
    )
    assert (
        "nothing to change"
        in call("edit_file", path="x.txt", old_string="hello", new_string="hello").error
    )
    assert "empty" in call("edit_file", path="x.txt", old_string="", new_string="b").error
    assert (
        call("edit_file", path="no.txt", old_string="a", new_string="b").error
        == "not found: no.txt"
    )
    (ws / "bin").write_bytes(b"\xff\xfe\x00bad")
    assert (
        "not a UTF-8 text file"
        in call("edit_file", path="bin", old_string="bad", new_string="good").error
    )


def test_edit_refuses_paths_outside_the_workspace(call, ws, tmp_path):
    result = call("edit_file", path="../outside/secret.txt", old_string="top", new_string="no")
    assert result.data["code"] == "DENIED"
    assert (tmp_path / "outside" / "secret.txt").read_text() == "top secret\n"


# -- a folder swapped for a symlink between the check and the open ---------------


@pytest.fixture
def swap_after_check(ws, tmp_path, monkeypatch):
    """After the path is confined, replace folder ``d`` by a symlink to the outside."""
    (ws / "d").mkdir()
    (ws / "d" / "secret.txt").write_text("inside\n")
    confine = files.confine

    def confine_then_swap(*args, **kwargs):
        checked = confine(*args, **kwargs)
        (ws / "d").rename(ws / "d.moved")
        (ws / "d").symlink_to(tmp_path / "outside")
        return checked

    monkeypatch.setattr(files, "confine", confine_then_swap)


def _refused_as_a_race(result):
    assert not result.ok and result.data["code"] == "DENIED"
    assert result.error.startswith("path changed while it was being opened: 'd' in ")
    assert result.error.endswith("became a symlink")


@pytest.mark.parametrize("path", ["d/new.txt", "d/secret.txt", "d/deeper/new.txt"])
def test_write_never_follows_a_folder_swapped_after_the_check(
    call, ws, tmp_path, swap_after_check, path
):
    _refused_as_a_race(call("write_file", path=path, content="pwned"))
    assert sorted(os.listdir(tmp_path / "outside")) == ["secret.txt"]
    assert (tmp_path / "outside" / "secret.txt").read_text() == "top secret\n"


def test_edit_never_follows_a_folder_swapped_after_the_check(call, tmp_path, swap_after_check):
    _refused_as_a_race(call("edit_file", path="d/secret.txt", old_string="top", new_string="no"))
    assert sorted(os.listdir(tmp_path / "outside")) == ["secret.txt"]
    assert (tmp_path / "outside" / "secret.txt").read_text() == "top secret\n"


def test_read_never_follows_a_folder_swapped_after_the_check(call, swap_after_check):
    result = call("read_file", path="d/secret.txt")
    _refused_as_a_race(result)
    assert "top secret" not in str(result.data)


def test_a_file_swapped_for_a_symlink_after_the_check_is_not_followed(
    call, ws, tmp_path, monkeypatch
):
    (ws / "notes.txt").write_text("mine\n")
    confine = files.confine

    def confine_then_swap(*args, **kwargs):
        checked = confine(*args, **kwargs)
        (ws / "notes.txt").unlink()
        (ws / "notes.txt").symlink_to(tmp_path / "outside" / "secret.txt")
        return checked

    monkeypatch.setattr(files, "confine", confine_then_swap)
    for name, args in [
        ("read_file", {}),
        ("write_file", {"content": "pwned"}),
        ("edit_file", {"old_string": "top", "new_string": "no"}),
    ]:
        (ws / "notes.txt").unlink()
        (ws / "notes.txt").write_text("mine\n")
        result = call(name, path="notes.txt", **args)
        assert result.data["code"] == "DENIED" and "became a symlink" in result.error
        assert "top secret" not in str(result.data)
    assert (tmp_path / "outside" / "secret.txt").read_text() == "top secret\n"
