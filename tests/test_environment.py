"""What children may see of the environment."""

from __future__ import annotations

import os

import pytest

from mdagent.core.calls import ToolContext
from mdagent.safety.environment import (
    DEFAULT_EXCLUDE,
    child_env,
    env_for,
    env_rules,
    is_secret_name,
    scrubbed_env,
    with_git_safety,
)

ENV = {
    "PATH": "/usr/bin",
    "HOME": "/home/me",
    "MY_API_KEY": "sk-1",
    "github_token": "ghp",
    "DB_PASSWORD": "hunter2",
    "AWS_SECRET_ACCESS_KEY": "x",
    "GOOGLE_APPLICATION_CREDENTIALS": "/creds.json",
    "KEYBOARD_LAYOUT": "us",
}


def test_secrets_are_dropped_case_insensitively_and_the_rest_kept():
    env = scrubbed_env(ENV)
    assert env == {"PATH": "/usr/bin", "HOME": "/home/me"}


def test_include_lets_named_or_globbed_variables_through():
    env = scrubbed_env(ENV, include=["MY_API_KEY", "KEYBOARD_*"])
    assert env["MY_API_KEY"] == "sk-1"
    assert env["KEYBOARD_LAYOUT"] == "us"
    assert "github_token" not in env


def test_child_env_reads_the_policy_settings():
    settings = {"policy": {"env": {"include": ["GITHUB_TOKEN"]}}}
    env = child_env(settings, ENV)
    assert env["github_token"] == "ghp"
    assert "MY_API_KEY" not in env


def test_child_env_defaults_without_settings(monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "sk-live")
    monkeypatch.setenv("PLAIN", "1")
    env = child_env({})
    assert "MY_API_KEY" not in env and env["PLAIN"] == "1"
    assert child_env(None, ENV) == scrubbed_env(ENV)


def test_exclude_from_settings_adds_to_the_defaults():
    settings = {"policy": {"env": {"exclude": ["HOME"]}}}
    assert env_rules(settings) == ([*DEFAULT_EXCLUDE, "HOME"], [])
    env = child_env(settings, ENV)
    # One more pattern never lets the default secrets through.
    assert "HOME" not in env and "MY_API_KEY" not in env
    # A missing or empty policy block means the defaults.
    assert env_rules({"policy": None}) == (DEFAULT_EXCLUDE, [])
    assert env_rules({"policy": {"env": {"exclude": "*KEY*"}}}) == (DEFAULT_EXCLUDE, [])


def test_is_secret_name():
    assert is_secret_name("OPENAI_API_KEY", {})
    assert not is_secret_name("PATH", {})
    assert not is_secret_name("OPENAI_API_KEY", {"policy": {"env": {"include": ["OPENAI_*"]}}})


def test_env_for_uses_the_context_env_else_scrubs_by_its_settings(monkeypatch):
    given = {"PATH": "/bin", "ONLY": "this"}
    env = env_for(ToolContext(env=given))
    assert env == given and env is not given  # a copy: the child's, not the caller's
    monkeypatch.setenv("MY_API_KEY", "sk-1")
    monkeypatch.setenv("OTHER_TOKEN", "t")
    settings = {"policy": {"env": {"include": ["MY_API_KEY"]}}}
    scrubbed = env_for(ToolContext(settings=settings))
    assert scrubbed["MY_API_KEY"] == "sk-1" and "OTHER_TOKEN" not in scrubbed
    assert "MY_API_KEY" not in env_for(object())  # no env, no settings: the defaults


def test_a_policy_or_env_block_of_the_wrong_shape_means_the_defaults():
    # A layer with `policy: [..]` or `env: "..."` must not crash start-up nor
    # drop the default secret patterns.
    for settings in ({"policy": ["env"]}, {"policy": {"env": ["*KEY*"]}}, {"policy": {"env": "x"}}):
        assert env_rules(settings) == (DEFAULT_EXCLUDE, [])
        assert "MY_API_KEY" not in child_env(settings, ENV)


def test_each_default_pattern_scrubs_on_its_own():
    # Every name below matches exactly one default pattern: dropping any one
    # pattern from the defaults lets its variable through.
    only = {
        "*KEY*": "STRIPE_KEY",
        "*SECRET*": "CLIENT_SECRET",
        "*TOKEN*": "slack_token",
        "*PASSWORD*": "PGPASSWORD",
        "*CREDENTIAL*": "AZURE_CREDENTIALS_FILE",
    }
    assert set(only) == set(DEFAULT_EXCLUDE)
    for pattern, name in only.items():
        others = [p for p in DEFAULT_EXCLUDE if p != pattern]
        assert name not in scrubbed_env({name: "v"})
        assert scrubbed_env({name: "v"}, exclude=others) == {name: "v"}, pattern
        assert is_secret_name(name, {})


def test_a_models_commands_get_git_safety_and_a_persons_do_not():
    given = {"PATH": "/bin"}
    model = env_for(ToolContext(env=given, caller="model"))
    assert model == {
        "PATH": "/bin",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "safe.bareRepository",
        "GIT_CONFIG_VALUE_0": "explicit",
    }
    assert env_for(ToolContext(env=given, caller="mcp"))["GIT_CONFIG_COUNT"] == "1"
    assert env_for(ToolContext(env=given, caller="person")) == given
    assert given == {"PATH": "/bin"}  # the caller's mapping is left alone


def test_git_safety_comes_after_the_configuration_already_given():
    env = {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "safe.bareRepository",
        "GIT_CONFIG_VALUE_0": "all",
        "GIT_CONFIG_KEY_1": "user.name",
        "GIT_CONFIG_VALUE_1": "me",
        "GIT_CONFIG_PARAMETERS": "'safe.bareRepository'='all'",
    }
    safe = with_git_safety(env)
    assert safe["GIT_CONFIG_COUNT"] == "3"
    assert (safe["GIT_CONFIG_KEY_2"], safe["GIT_CONFIG_VALUE_2"]) == (
        "safe.bareRepository",
        "explicit",
    )
    assert safe["GIT_CONFIG_KEY_0"] == "safe.bareRepository"  # kept, overridden by the last
    assert safe["GIT_CONFIG_PARAMETERS"] == (
        "'safe.bareRepository'='all' 'safe.bareRepository'='explicit'"
    )
    assert "GIT_CONFIG_PARAMETERS" not in with_git_safety({})


@pytest.mark.parametrize("count", ["x", "-1", " 1", "1 ", ""])
def test_a_count_git_cannot_read_is_left_alone(count):
    # git refuses to run at all with such a count: nothing to add to.
    env = {"GIT_CONFIG_COUNT": count}
    assert with_git_safety(env) == env


def test_git_safety_holds_against_gits_own_reading(tmp_path):
    import subprocess

    # A bare repository inside a work tree, whose alias would run.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    evil = tmp_path / "evil"
    (evil / "objects").mkdir(parents=True)
    (evil / "refs").mkdir()
    (evil / "HEAD").write_text("ref: refs/heads/main\n")
    (evil / "config").write_text("[core]\n\tbare = true\n[alias]\n\tst = !touch pwned\n")
    plain = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    for env in (with_git_safety(plain), with_git_safety({**plain, "GIT_CONFIG_COUNT": "0"})):
        subprocess.run(["git", "st"], cwd=evil, env=env, capture_output=True)
        assert not (evil / "pwned").exists()
    subprocess.run(["git", "st"], cwd=evil, env=plain, capture_output=True)
    assert (evil / "pwned").exists()  # without it, git uses the folder it found
