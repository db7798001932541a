import os
from pathlib import Path

from conftest import write
from mdagent.core.layers import (
    Layer,
    bundled_layer_path,
    find_layers,
    interop_paths,
    project_layer,
    project_root,
    trust_root,
    walk_skills,
)


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
    assert kinds(layers) == [
        "option",
        "option",
        "env",
        "project",
        "project-foreign",
        "user",
        "user-foreign",
        "bundled",
    ]
    assert layers[0].path == one.resolve() and layers[1].path == two.resolve()
    assert layers[3].path == (project / ".agents").resolve()
    # Other agents' files (issue 34): the workspace root's and the home folder's.
    assert layers[4].path == project.resolve() and layers[4].foreign
    assert layers[5].path == Path(os.environ["AGENT_HOME"]).resolve()
    assert layers[6].path == Path(os.environ["HOME"]).resolve()


def test_no_user_skips_user_layer(tmp_path):
    assert "user" not in kinds(find_layers([], no_user=True, cwd=tmp_path))


def test_user_layer_is_never_found_as_project(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".agents").mkdir(parents=True)
    monkeypatch.setenv("AGENT_HOME", str(home / ".agents"))
    work = home / "work"
    work.mkdir()
    assert kinds(find_layers([], cwd=work)) == [
        "project-foreign",
        "user",
        "user-foreign",
        "bundled",
    ]


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

    from mdagent.core.errors import UsageError

    with pytest.raises(UsageError, match="AGENT_PATH"):
        find_layers([], cwd=tmp_path, environ={"AGENT_PATH": "~no-such-user-xyz/layer"})


# -- other agents' skill folders and walking a skills folder (issue 14) ----------------


def test_other_agents_skill_folders_sit_below_the_layer_they_belong_with(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    for folder in (
        project / ".agents",
        project / ".claude" / "skills",
        home / ".claude" / "skills",
        tmp_path / "codex" / "skills",
        home / ".openclaw" / "skills",
    ):
        folder.mkdir(parents=True)
    environ = {
        "HOME": str(home),
        "AGENT_HOME": str(home / ".agents"),
        "CODEX_HOME": str(tmp_path / "codex"),
    }
    layers = find_layers([], cwd=project, environ=environ)
    assert kinds(layers) == [
        "project",
        "project-claude",
        "project-foreign",
        "user",
        "user-claude",
        "user-codex",
        "user-openclaw",
        "user-foreign",
        "bundled",
    ]
    codex = next(layer for layer in layers if layer.kind == "user-codex")
    assert codex.path == (tmp_path / "codex" / "skills").resolve()
    assert codex.skills_dir == codex.path and codex.config_dir is None and codex.skills_only
    assert codex.label == "~/.codex/skills" and codex.scope == "user"
    no_user = find_layers([], no_user=True, cwd=project, environ=environ)
    assert kinds(no_user) == ["project", "project-claude", "project-foreign", "bundled"]


def test_only_existing_interop_folders_are_layers_but_all_are_known(tmp_path):
    environ = {"HOME": str(tmp_path / "home"), "OPENCLAW_STATE_DIR": str(tmp_path / "oc")}
    assert interop_paths(tmp_path, environ) == []
    every = dict(interop_paths(tmp_path, environ, existing_only=False))
    assert every == {
        "project-claude": tmp_path / ".claude" / "skills",
        "project-github": tmp_path / ".github" / "skills",
        "project-openclaw": tmp_path / "skills",
        "user-claude": tmp_path / "home" / ".claude" / "skills",
        "user-codex": tmp_path / "home" / ".codex" / "skills",
        "user-openclaw": tmp_path / "oc" / "skills",
    }


def test_working_in_the_home_folder_reads_claude_skills_once_as_the_users(tmp_path):
    home = tmp_path / "home"
    (home / ".claude" / "skills").mkdir(parents=True)
    layers = find_layers(
        [], cwd=home, environ={"HOME": str(home), "AGENT_HOME": str(tmp_path / "a")}
    )
    assert [k for k in kinds(layers) if "claude" in k] == ["user-claude"]


def found(root, confine_to=None):
    return [
        (f.kind, f.path.relative_to(root).as_posix(), f.severity)
        for f in walk_skills(root, confine_to)
    ]


def test_walk_finds_grouped_skills_up_to_six_levels_and_stops_at_a_skill(tmp_path):
    root = tmp_path / "skills"
    write(root / "top" / "SKILL.md", "x")
    write(root / "top" / "inner" / "SKILL.md", "not searched: top is a skill")
    write(root / "g" / "h" / "deep" / "SKILL.md", "x")
    write(root / "1" / "2" / "3" / "4" / "5" / "six" / "SKILL.md", "x")
    write(root / "1" / "2" / "3" / "4" / "5" / "6" / "seven" / "SKILL.md", "x")
    write(root / ".hidden" / "SKILL.md", "x")
    write(root / "node_modules" / "pkg" / "SKILL.md", "x")
    write(root / "empty" / "README.md", "x")
    write(root / "README.md", "x")
    skills = [path for kind, path, _ in found(root) if kind == "skill"]
    assert skills == ["1/2/3/4/5/six", "g/h/deep", "top"]
    problems = [(path, severity) for kind, path, severity in found(root) if kind == "problem"]
    assert problems == [("1/2/3/4/5/6", "warning"), ("empty/SKILL.md", "warning")]


def test_walk_reports_what_it_cannot_open_or_will_not_follow(tmp_path):
    root = tmp_path / "skills"
    root.mkdir()
    (root / "loop").symlink_to(root / "loop")
    (root / "dangling").symlink_to(tmp_path / "nowhere")
    write(tmp_path / "outside" / "far" / "SKILL.md", "x")
    (root / "far").symlink_to(tmp_path / "outside" / "far")
    (root / "again").symlink_to(root / "far")
    write(root / "SKILL.md", "x")
    result = found(root, confine_to=root)
    assert ("problem", "SKILL.md", "warning") in result
    assert ("problem", "loop", "error") in result and ("problem", "dangling", "error") in result
    assert ("problem", "far", "warning") in result and ("problem", "again", "warning") in result
    followed = found(root)
    assert [p for k, p, _ in followed if k == "skill"] == ["again"]  # the same folder once


def test_a_projects_links_must_stay_in_the_project(tmp_path):
    project = Layer(tmp_path / "p" / ".agents", "project")
    claude = Layer(tmp_path / "p" / ".claude" / "skills", "project-claude")
    assert trust_root(project) == trust_root(claude) == (tmp_path / "p").resolve()
    assert trust_root(Layer(tmp_path / "u", "user")) is None
    assert trust_root(Layer(tmp_path / "c", "user-claude")) is None
