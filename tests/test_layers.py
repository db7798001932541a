import os
from pathlib import Path

from mdagent.layers import bundled_layer_path, find_layers, project_layer, project_root


def kinds(layers):
    return [layer.kind for layer in layers]


def test_order_options_env_project_user_bundled(tmp_path, monkeypatch):
    project = tmp_path / "proj"
    (project / ".agents").mkdir(parents=True)
    deep = project / "a" / "b"
    deep.mkdir(parents=True)
    one, two, env1 = tmp_path / "one", tmp_path / "two", tmp_path / "env1"
    monkeypatch.setenv("AGENT_PATH", str(env1))
    layers = find_layers([str(one), str(two)], cwd=deep)
    assert kinds(layers) == ["option", "option", "env", "project", "user", "bundled"]
    assert layers[0].path == one.resolve() and layers[1].path == two.resolve()
    assert layers[3].path == (project / ".agents").resolve()
    assert layers[4].path == Path(os.environ["AGENT_HOME"]).resolve()


def test_no_user_skips_user_layer(tmp_path):
    assert "user" not in kinds(find_layers([], no_user=True, cwd=tmp_path))


def test_user_layer_is_never_found_as_project(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".agents").mkdir(parents=True)
    monkeypatch.setenv("AGENT_HOME", str(home / ".agents"))
    work = home / "work"
    work.mkdir()
    assert kinds(find_layers([], cwd=work)) == ["user", "bundled"]


def test_bundled_layer_has_skills_and_config():
    root = bundled_layer_path()
    assert (root / "skills" / "term" / "SKILL.md").is_file()
    assert (root / "config" / "files.yaml").is_file()


def test_project_root_and_layer(tmp_path):
    (tmp_path / "p" / ".agents").mkdir(parents=True)
    (tmp_path / "p" / "sub").mkdir()
    assert project_root(tmp_path / "p" / "sub") == (tmp_path / "p").resolve()
    layers = find_layers([], cwd=tmp_path / "p" / "sub")
    assert project_layer(layers, tmp_path / "p" / "sub") == (tmp_path / "p" / ".agents").resolve()
    (tmp_path / "q").mkdir()
    assert (
        project_layer(find_layers([], cwd=tmp_path / "q"), tmp_path / "q")
        == (tmp_path / "q" / ".agents").resolve()
    )


def test_unknown_user_in_a_layer_path_is_a_usage_error(tmp_path):
    import pytest

    from mdagent.errors import UsageError

    with pytest.raises(UsageError, match="AGENT_PATH"):
        find_layers([], cwd=tmp_path, environ={"AGENT_PATH": "~no-such-user-xyz/layer"})
