"""What children may see of the environment."""

from __future__ import annotations

from mdagent.environment import (
    DEFAULT_EXCLUDE,
    child_env,
    env_for,
    env_rules,
    is_secret_name,
    scrubbed_env,
)
from mdagent.toolbox import ToolContext

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
