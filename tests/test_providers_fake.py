"""The scripted fake provider, and the package surface: get_provider and ProviderConfig."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mdagent.core.errors import ProviderError
from mdagent.providers import PROVIDERS, ProviderConfig, Reply, ToolCall, get_provider

SCRIPT = """\
- text: Let me look.
  tool_calls:
    - name: exec
      arguments: {command: echo hi}
    - name: read
      arguments: {path: README.md}
      id: custom
- Just text.
- tool_calls:
    - name: exec
      arguments: '{"command": "echo'
- text: Done.
  usage: {input_tokens: 120, output_tokens: 8}
"""


def fake(tmp_path, text, name="script.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return get_provider(ProviderConfig(provider="fake", script=str(path)))


def test_replays_the_script_in_order(tmp_path):
    provider = fake(tmp_path, SCRIPT)
    shown = []
    first = provider.complete("sys", [{"role": "user", "content": "go"}], [], on_text=shown.append)
    assert first.text == "Let me look."
    assert first.tool_calls == (
        ToolCall("call_1", "exec", {"command": "echo hi"}, '{"command": "echo hi"}', None),
        ToolCall("custom", "read", {"path": "README.md"}, '{"path": "README.md"}', None),
    )
    assert shown == ["Let me look."]
    assert provider.complete("sys", [], []) == Reply(
        "Just text.", (), {"input_tokens": 0, "output_tokens": 0}, "stop"
    )
    (broken,) = provider.complete("sys", [], []).tool_calls
    assert broken.arguments is None and broken.error.startswith("arguments are not valid JSON")
    last = provider.complete("sys", [], [])
    assert (last.text, last.usage) == ("Done.", {"input_tokens": 120, "output_tokens": 8})
    assert provider.requests[0]["messages"] == [{"role": "user", "content": "go"}]


def test_exhausted_script(tmp_path):
    provider = fake(tmp_path, "- one\n- two\n")
    provider.complete("", [], [])
    provider.complete("", [], [])
    with pytest.raises(ProviderError, match="^fake script exhausted after 2 replies$"):
        provider.complete("", [], [])


def test_replies_key_and_scripted_errors(tmp_path):
    provider = fake(tmp_path, "replies:\n  - error: simulated outage\n  - text: back\n")
    with pytest.raises(ProviderError, match="^simulated outage$"):
        provider.complete("", [], [])
    assert provider.complete("", [], []).text == "back"


def test_bad_yaml_names_the_file_and_line(tmp_path):
    with pytest.raises(ProviderError) as err:
        fake(tmp_path, "- text: fine\n- text: [unclosed\n", name="bad.yaml")
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 'bad.yaml'}:")
    assert "not valid YAML" in message and "\n" not in message


def test_a_duplicate_key_is_an_error_not_a_silent_override(tmp_path):
    with pytest.raises(ProviderError) as err:
        fake(tmp_path, "- text: first\n  tool_calls: []\n  text: second\n", name="dup.yaml")
    assert str(err.value).startswith(f"{tmp_path / 'dup.yaml'}:3: not valid YAML: duplicate key")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("text: not a list\n", "a fake script is a list of replies"),
        ("- 42\n", "reply 1: must be a mapping"),
        ("- {txt: typo}\n", "reply 1: unknown key(s) txt"),
        ("- tool_calls: [{arguments: {}}]\n", "reply 1, tool call 1: needs a name"),
    ],
)
def test_malformed_scripts(tmp_path, text, expected):
    with pytest.raises(ProviderError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        fake(tmp_path, text)


def test_missing_script(tmp_path):
    with pytest.raises(ProviderError, match="cannot read the fake script"):
        get_provider(ProviderConfig(provider="fake", script=str(tmp_path / "nope.yaml")))
    with pytest.raises(ProviderError, match="needs a script"):
        get_provider(ProviderConfig(provider="fake"))


# -- get_provider -----------------------------------------------------------------------


def test_unknown_provider_lists_the_known_ones():
    with pytest.raises(ProviderError) as err:
        get_provider(ProviderConfig(provider="gemini"))
    assert str(err.value) == "unknown provider 'gemini' (known: anthropic, fake, openai)"


def test_backends_are_built_by_name():
    for name in ("openai", "anthropic"):
        provider = get_provider(ProviderConfig(provider=name), environ={})
        assert type(provider).__module__ == PROVIDERS[name].split(":")[0]


def test_importing_the_package_does_not_import_httpx_or_yaml():
    code = "import sys, mdagent.providers; print(sorted({'httpx', 'yaml'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- ProviderConfig.from_settings -------------------------------------------------------


def test_defaults_per_provider():
    assert ProviderConfig.from_settings({}, {}, {}) == ProviderConfig(
        provider="openai",
        model="gpt-4o-mini",
        base_url="https://api.openai.com/v1",
        api_key_env="OPENAI_API_KEY",
    )
    anthropic = ProviderConfig.from_settings({}, {"provider": "anthropic"}, {})
    assert (anthropic.model, anthropic.base_url, anthropic.api_key_env) == (
        "claude-sonnet-4-5",
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
    )


def test_flag_beats_env_beats_settings():
    settings = {
        "model": {
            "provider": "openai",
            "name": "llama3",
            "base_url": "http://localhost:11434/v1",
            "stream": False,
            "timeout": 30,
            "max_tokens": 512,
        }
    }
    config = ProviderConfig.from_settings(settings, {}, {})
    assert (config.model, config.base_url, config.stream, config.timeout, config.max_tokens) == (
        "llama3",
        "http://localhost:11434/v1",
        False,
        30,
        512,
    )
    env = {"AGENT_MODEL": "qwen", "AGENT_BASE_URL": "http://gpu:8000/v1"}
    config = ProviderConfig.from_settings(settings, {"model": None}, env)
    assert (config.model, config.base_url) == ("qwen", "http://gpu:8000/v1")
    config = ProviderConfig.from_settings(settings, {"model": "mistral", "base_url": None}, env)
    assert (config.model, config.base_url) == ("mistral", "http://gpu:8000/v1")


def test_switching_provider_drops_the_other_providers_settings():
    settings = {"model": {"provider": "openai", "name": "gpt-4o", "base_url": "http://x/v1"}}
    config = ProviderConfig.from_settings(settings, {}, {"AGENT_PROVIDER": "anthropic"})
    assert (config.provider, config.model, config.base_url) == (
        "anthropic",
        "claude-sonnet-4-5",
        "https://api.anthropic.com",
    )


def test_fake_script_from_the_command_line():
    config = ProviderConfig.from_settings({}, {"provider": "fake", "script": "demo.yaml"}, {})
    assert (config.provider, config.script) == ("fake", "demo.yaml")


def test_bad_values_are_one_line_errors():
    with pytest.raises(ProviderError, match="model.timeout must be a positive number"):
        ProviderConfig.from_settings({"model": {"timeout": "soon"}}, {}, {})
    with pytest.raises(ProviderError, match="unknown provider option"):
        ProviderConfig.from_settings({}, {"modle": "x"}, {})


def test_the_defaults_are_the_settings_defaults():
    from mdagent.core.defaults import DEFAULT_SETTINGS

    config = ProviderConfig()
    assert {name: getattr(config, name) for name in DEFAULT_SETTINGS["model"]} == DEFAULT_SETTINGS[
        "model"
    ]


def test_timeout_is_the_idle_limit_and_request_timeout_is_off_by_default():
    config = ProviderConfig.from_settings({"model": {"timeout": 30}}, {}, {})
    assert (config.timeout, config.request_timeout) == (30, None)
    config = ProviderConfig.from_settings({"model": {"request_timeout": 600}}, {}, {})
    assert config.request_timeout == 600
    with pytest.raises(ProviderError, match="model.request_timeout must be a positive number"):
        ProviderConfig.from_settings({"model": {"request_timeout": 0}}, {}, {})


def test_a_thinking_budget_is_for_anthropic_and_fits_in_max_tokens():
    section = {"provider": "anthropic", "thinking": {"budget_tokens": 2048}}
    assert ProviderConfig.from_settings({"model": section}, {}, {}).thinking_budget == 2048
    with pytest.raises(ProviderError) as err:
        ProviderConfig.from_settings({"model": section | {"max_tokens": 2048}}, {}, {})
    assert str(err.value) == (
        "model.thinking.budget_tokens (2048) must be less than model.max_tokens (2048): "
        "the thinking counts toward the limit"
    )
    with pytest.raises(ProviderError, match=r"budget_tokens must be a whole number >= 1024"):
        ProviderConfig.from_settings(
            {"model": section | {"thinking": {"budget_tokens": 10}}}, {}, {}
        )
    with pytest.raises(ProviderError, match="model.thinking is an Anthropic setting"):
        ProviderConfig.from_settings({"model": {"thinking": {"budget_tokens": 2048}}}, {}, {})
    # A flag that switches to OpenAI leaves agent.yaml's Anthropic thinking behind.
    config = ProviderConfig.from_settings({"model": section}, {"provider": "openai"}, {})
    assert (config.provider, config.thinking_budget) == ("openai", None)


def test_the_fake_takes_the_callbacks_of_every_provider(tmp_path):
    provider = fake(tmp_path, "- hello\n")
    seen = []
    reply = provider.complete(
        "", [], [], on_text=seen.append, on_reasoning=seen.append, on_retry=seen.append
    )
    assert (reply.text, seen) == ("hello", ["hello"])
