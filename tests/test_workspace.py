"""Keeping paths inside the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mdagent.core.calls import ToolContext
from mdagent.core.errors import PolicyDenied
from mdagent.safety.workspace import (
    confine,
    confine_for,
    display_path,
    open_entry,
    open_parent,
    roots_from,
)


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
    refused = pytest.raises(PolicyDenied, match=f"'src' in {path} became a symlink")
    with refused, open_parent(path, ws, create=True):
        pass
    with pytest.raises(PolicyDenied, match=f"'src' in {path} became"), open_parent(path, ws):
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


def test_confine_for_judges_a_call_by_its_workdir_and_extra_roots(ws, tmp_path):
    ctx = ToolContext(workdir=str(ws), settings={"policy": {"paths": [str(tmp_path / "outside")]}})
    assert confine_for(ctx, "src/a.py") == (ws / "src" / "a.py").resolve()
    secret = tmp_path / "outside" / "secret.txt"
    assert confine_for(ctx, str(secret)) == secret.resolve()
    with pytest.raises(PolicyDenied, match="escapes the workspace"):
        confine_for(ToolContext(workdir=str(ws)), str(secret))


def test_roots_from_any_object_and_any_policy_shape(ws, tmp_path, monkeypatch):
    monkeypatch.chdir(ws)
    # A context without workdir or settings: the current folder, no extra root.
    assert roots_from(object()) == (ws.resolve(), ())
    # A policy that is not a mapping grants nothing (and does not crash).
    assert roots_from(ToolContext(workdir=str(ws), settings={"policy": ["paths"]})) == (
        ws.resolve(),
        (),
    )
    # A lone string is one extra root, not a list of characters.
    one = ToolContext(workdir=str(ws), settings={"policy": {"paths": "../outside"}})
    assert roots_from(one) == (ws.resolve(), ((tmp_path / "outside").resolve(),))


def test_open_entry_refuses_a_symlink_at_the_last_component(ws, tmp_path):
    (ws / "src" / "evil").symlink_to(tmp_path / "outside" / "secret.txt")
    path = ws.resolve() / "src" / "evil"
    with open_parent(path, ws) as (folder, name):
        with pytest.raises(PolicyDenied, match=f"'evil' in {path} became a symlink"):
            open_entry(folder, name, os.O_RDONLY, path)
        with pytest.raises(PolicyDenied, match=f"in {path} became a symlink"):
            open_entry(folder, name, os.O_WRONLY | os.O_TRUNC, path)
    assert (tmp_path / "outside" / "secret.txt").read_text() == "s\n"


def test_open_entry_creates_with_the_mode_and_keeps_the_descriptor_from_children(ws):
    path = ws.resolve() / "src" / "new.txt"
    old = os.umask(0)
    try:
        with open_parent(path, ws) as (folder, name):
            fd = open_entry(folder, name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, path)
            try:
                assert not os.get_inheritable(fd)
                os.write(fd, b"x")
            finally:
                os.close(fd)
            private = path.with_name("private.txt")
            fd = open_entry(folder, "private.txt", os.O_WRONLY | os.O_CREAT, private, 0o600)
            os.close(fd)
    finally:
        os.umask(old)
    assert path.read_bytes() == b"x"
    assert path.stat().st_mode & 0o777 == 0o666
    assert private.stat().st_mode & 0o777 == 0o600


def test_folders_made_on_the_way_get_the_usual_mode(ws):
    old = os.umask(0o022)
    try:
        new = confine("made/deeper/f.txt", ws)
        with open_parent(new, ws, create=True):
            pass
    finally:
        os.umask(old)
    for folder in (ws / "made", ws / "made" / "deeper"):
        assert folder.stat().st_mode & 0o7777 == 0o755


def test_a_folder_made_meanwhile_is_entered_like_any_other(ws, monkeypatch):
    # Another process makes the folder between the failed open and mkdir.
    real_mkdir = os.mkdir

    def racing_mkdir(name, mode=0o777, *, dir_fd=None):
        real_mkdir(name, mode, dir_fd=dir_fd)
        real_mkdir(name, mode, dir_fd=dir_fd)  # raises FileExistsError, as the race would

    monkeypatch.setattr(os, "mkdir", racing_mkdir)
    path = confine("raced/f.txt", ws)
    with open_parent(path, ws, create=True) as (folder, name):
        assert name == "f.txt" and os.listdir(folder) == []


def test_a_folder_swapped_for_a_link_right_after_mkdir_is_refused(ws, tmp_path, monkeypatch):
    def swapping_mkdir(name, mode=0o777, *, dir_fd=None):
        os.symlink(tmp_path / "outside", name, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", swapping_mkdir)
    path = confine("swapped/f.txt", ws)
    refused = pytest.raises(PolicyDenied, match=f"'swapped' in {path} became a symlink")
    with refused, open_parent(path, ws, create=True):
        pass
    assert sorted(os.listdir(tmp_path / "outside")) == ["secret.txt"]


def test_a_path_that_cannot_be_resolved_is_refused_with_the_reason(ws, monkeypatch):
    real_resolve = Path.resolve

    def failing_resolve(self, strict=False):
        if self.name == "a.py":  # a link swapped while it was read gives EINVAL
            raise OSError(22, "Invalid argument")
        return real_resolve(self, strict)

    monkeypatch.setattr(Path, "resolve", failing_resolve)
    with pytest.raises(PolicyDenied) as err:
        confine("src/a.py", ws)
    assert str(err.value) == "cannot check src/a.py: Invalid argument"


# -- a person's command typed in a subfolder ----------------------------------------


def test_a_persons_base_is_the_folder_typed_in_when_inside_the_workspace(ws, tmp_path):
    from mdagent.safety.workspace import base_for

    root = ws.resolve()
    typed = ToolContext(workdir=str(ws), caller="person", cwd=str(ws / "src"))
    assert base_for(typed) == root / "src"
    # A model's call (or any other caller's) never starts anywhere but the root.
    assert base_for(typed.replace(caller="model")) == root
    assert base_for(typed.replace(caller="mcp")) == root
    assert base_for(ToolContext(workdir=str(ws), caller="person")) == root
    # A folder outside the workspace never becomes the base.
    assert base_for(typed.replace(cwd=str(tmp_path / "outside"))) == root


def test_a_persons_relative_path_is_rebased_on_the_workspace_root(ws):
    from mdagent.safety.workspace import person_arguments

    ctx = ToolContext(workdir=str(ws), caller="person", cwd=str(ws / "src"))
    assert person_arguments("read_file", {"path": "a.py"}, ctx) == {"path": "src/a.py"}
    # `..` is kept, not folded away: the tool resolves it (and symlinks) itself.
    assert person_arguments("write_file", {"path": "../x", "content": ""}, ctx) == {
        "path": "src/../x",
        "content": "",
    }
    assert person_arguments("exec", {"command": "ls", "cwd": "d"}, ctx)["cwd"] == "src/d"
    assert person_arguments("exec", {"command": "ls"}, ctx) == {"command": "ls"}
    # A search without a path searches the folder typed in, as a shell's would.
    assert person_arguments("grep", {"pattern": "a"}, ctx) == {"pattern": "a", "path": "src"}
    assert person_arguments("glob", {"pattern": "*", "path": ""}, ctx)["path"] == "src"
    # Absolute and home paths mean what they say; other tools' arguments are left as typed.
    assert person_arguments("read_file", {"path": "/etc/x"}, ctx) == {"path": "/etc/x"}
    assert person_arguments("read_file", {"path": "~/x"}, ctx) == {"path": "~/x"}
    assert person_arguments("count", {"path": "a.py"}, ctx) == {"path": "a.py"}
    # Typed at the root, or by a model: unchanged.
    at_root = ctx.replace(cwd=str(ws))
    assert person_arguments("read_file", {"path": "a.py"}, at_root) == {"path": "a.py"}
    model = ctx.replace(caller="model")
    assert person_arguments("read_file", {"path": "a.py"}, model) == {"path": "a.py"}


def test_a_rebased_path_that_leaves_the_workspace_is_still_refused(ws):
    from mdagent.safety.workspace import person_arguments

    ctx = ToolContext(workdir=str(ws), caller="person", cwd=str(ws / "src"))
    # A built-in's path is rebased once and then taken from the root, as the tool does.
    rebased = person_arguments("read_file", {"path": "../../outside/secret.txt"}, ctx)
    with pytest.raises(PolicyDenied, match="escapes the workspace"):
        confine(rebased["path"], ws)
    assert confine(person_arguments("read_file", {"path": "a.py"}, ctx)["path"], ws) == (
        ws.resolve() / "src" / "a.py"
    )
    # A handler's path is not rebased: confine_for takes it from the folder typed in.
    assert confine_for(ctx, "a.py") == ws.resolve() / "src" / "a.py"
    with pytest.raises(PolicyDenied, match="escapes the workspace"):
        confine_for(ctx, "../../outside/secret.txt")
    model = ToolContext(workdir=str(ws), caller="model", cwd=str(ws / "src"))
    assert confine_for(model, "a.py") == ws.resolve() / "a.py"  # a model: the root


def test_a_context_without_those_fields_starts_at_the_root(ws, monkeypatch):
    # An embedding caller's context may lack cwd, caller or even workdir
    # (then the process's folder is the workspace): never an error.
    from types import SimpleNamespace

    from mdagent.safety.workspace import base_for, person_arguments

    root = ws.resolve()
    assert base_for(SimpleNamespace(workdir=str(ws))) == root
    assert base_for(SimpleNamespace(workdir=str(ws), cwd=str(ws / "src"))) == root
    monkeypatch.chdir(ws)
    bare = SimpleNamespace()
    assert base_for(bare) == root
    assert person_arguments("read_file", {"path": "a.py"}, bare) == {"path": "a.py"}


def test_a_path_argument_that_is_not_text_is_left_for_validation(ws):
    from mdagent.safety.workspace import person_arguments

    ctx = ToolContext(workdir=str(ws), caller="person", cwd=str(ws / "src"))
    for value in (5, ["a.py"], {"p": 1}):
        assert person_arguments("read_file", {"path": value}, ctx) == {"path": value}
