"""Keeping paths inside the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mdagent.errors import PolicyDenied
from mdagent.toolbox import ToolContext
from mdagent.workspace import confine, display_path, open_entry, open_parent, roots_from


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("s\n")
    return root


def test_relative_and_absolute_paths_inside_are_fine(ws):
    root = ws.resolve()
    assert confine("src/a.py", ws) == root / "src" / "a.py"
    assert confine(str(root / "src" / "a.py"), ws) == root / "src" / "a.py"
    assert confine("src/../src/a.py", ws) == root / "src" / "a.py"
    assert confine(".", ws) == root
    assert confine("new/dir/file.txt", ws) == root / "new" / "dir" / "file.txt"


@pytest.mark.parametrize("path", ["../outside/secret.txt", "..", "/etc/passwd", "src/../../x"])
def test_escapes_are_refused(ws, path):
    with pytest.raises(PolicyDenied) as err:
        confine(path, ws)
    assert str(err.value) == f"path escapes the workspace: {path}"
    assert err.value.exit_code == 126


def test_a_sibling_with_the_same_prefix_is_outside(ws, tmp_path):
    (tmp_path / "ws2").mkdir()
    with pytest.raises(PolicyDenied):
        confine(str(tmp_path / "ws2"), ws)


def test_symlinks_are_judged_by_their_target(ws, tmp_path):
    (ws / "link-out").symlink_to(tmp_path / "outside")
    (ws / "secret-link").symlink_to(tmp_path / "outside" / "secret.txt")
    (ws / "link-in").symlink_to(ws / "src")
    with pytest.raises(PolicyDenied):
        confine("link-out/secret.txt", ws)
    with pytest.raises(PolicyDenied):
        confine("secret-link", ws)
    with pytest.raises(PolicyDenied):  # even for a file that does not exist yet
        confine("link-out/new.txt", ws)
    assert confine("link-in/a.py", ws) == (ws / "src" / "a.py").resolve()


def test_extra_roots_are_allowed(ws, tmp_path):
    target = confine(str(tmp_path / "outside" / "secret.txt"), ws, [tmp_path / "outside"])
    assert target == (tmp_path / "outside" / "secret.txt").resolve()


def test_a_root_reached_through_a_symlink_still_works(ws, tmp_path):
    (tmp_path / "alias").symlink_to(ws)
    assert confine("src/a.py", tmp_path / "alias") == (ws / "src" / "a.py").resolve()


def test_roots_from_context(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = {"policy": {"paths": ["../outside", "~/shared", str(tmp_path / "abs")]}}
    root, extras = roots_from(ToolContext(workdir=str(ws), settings=settings))
    assert root == ws.resolve()
    base = tmp_path.resolve()
    assert extras == (base / "outside", base / "shared", base / "abs")


def test_roots_from_defaults_to_the_current_directory(ws, monkeypatch):
    monkeypatch.chdir(ws)
    assert roots_from(ToolContext()) == (Path(os.getcwd()).resolve(), ())


def test_display_path(ws):
    root = ws.resolve()
    assert display_path(root / "src" / "a.py", root) == "src/a.py"
    assert display_path(root, root) == "."
    assert display_path(Path("/etc/passwd"), root) == "/etc/passwd"


def test_open_parent_walks_the_resolved_path_and_creates_folders(ws, tmp_path):
    (ws / "link-in").symlink_to(ws / "src")
    path = confine("link-in/a.py", ws)
    with open_parent(path, ws) as (folder, name):
        fd = open_entry(folder, name, os.O_RDONLY, path)
        assert os.read(fd, 10) == b"a\n"
        os.close(fd)
    new = confine("new/deep/file.txt", ws)
    with open_parent(new, ws, create=True) as (folder, name):
        assert name == "file.txt" and os.listdir(folder) == []
    assert (ws / "new" / "deep").is_dir()
    extra = confine(str(tmp_path / "outside" / "secret.txt"), ws, [tmp_path / "outside"])
    with open_parent(extra, ws, [tmp_path / "outside"]) as (folder, name):
        assert name == "secret.txt" and "secret.txt" in os.listdir(folder)
    with open_parent(ws.resolve(), ws) as (folder, name):
        assert name == "." and "src" in os.listdir(folder)


def test_open_parent_refuses_a_component_that_became_a_symlink(ws, tmp_path):
    path = confine("src/a.py", ws)
    (ws / "src").rename(ws / "src.moved")
    (ws / "src").symlink_to(tmp_path / "outside")
    refused = pytest.raises(PolicyDenied, match="'src' in .* became a symlink")
    with refused, open_parent(path, ws, create=True):
        pass
    with pytest.raises(PolicyDenied), open_parent(path, ws):
        pass
    assert sorted(os.listdir(tmp_path / "outside")) == ["secret.txt"]


def test_open_parent_missing_folder_or_file_in_the_way(ws):
    with pytest.raises(FileNotFoundError), open_parent(confine("nope/x.txt", ws), ws):
        pass
    in_the_way = confine("src/a.py/x.txt", ws)
    with pytest.raises(NotADirectoryError), open_parent(in_the_way, ws, create=True):
        pass


def test_open_parent_refuses_a_path_outside_every_root(ws, tmp_path):
    with pytest.raises(PolicyDenied), open_parent(tmp_path / "outside" / "secret.txt", ws):
        pass
