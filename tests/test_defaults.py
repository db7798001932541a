"""Every default is written once, in mdagent.core.defaults; the records that mirror a section read it."""

from __future__ import annotations

import pytest

from mdagent.core.defaults import (
    DEFAULT_SETTINGS,
    PROJECT_DIR,
    SETTINGS_FILE,
    setting,
    settings_path,
)
from mdagent.declarations.mcpconfig import ServerConfig
from mdagent.providers.config import ProviderConfig
from mdagent.rewind.checkpoints import CheckpointSettings
from mdagent.safety.sandboxsettings import SandboxSettings


def test_the_records_of_a_settings_section_take_their_defaults_from_it():
    model = ProviderConfig()
    for key in ("stream", "timeout", "request_timeout", "max_retries", "max_tokens"):
        assert getattr(model, key) == DEFAULT_SETTINGS["model"][key], key
    sandbox = SandboxSettings()
    for key, value in DEFAULT_SETTINGS["sandbox"].items():
        assert getattr(sandbox, key) == (tuple(value) if isinstance(value, list) else value), key
    assert CheckpointSettings()._asdict() == DEFAULT_SETTINGS["checkpoints"]
    server = ServerConfig("s")
    assert server.timeout == DEFAULT_SETTINGS["mcp"]["timeout"]
    assert server.startup_timeout == DEFAULT_SETTINGS["mcp"]["startup_timeout"]


def test_a_setting_falls_back_to_its_default_and_none_counts_as_missing():
    assert setting(None, "grep", "timeout") == DEFAULT_SETTINGS["grep"]["timeout"] == 60
    assert setting({"grep": {"timeout": None}}, "grep", "timeout") == 60
    assert setting({"grep": "oops"}, "grep", "timeout") == 60
    assert setting({"grep": {"timeout": 5}}, "grep", "timeout") == 5
    assert setting({}, "agent", "instructions", "") == ""  # no default there: the caller's
    with pytest.raises(KeyError):
        setting({}, "agent", "no-such-key")


def test_a_layers_settings_file():
    assert settings_path(PROJECT_DIR).as_posix() == f".agents/config/{SETTINGS_FILE}"
