"""The scripted model server other tests rely on: its extras and its command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from mdagent.errors import ProviderError
from mdagent.providers import ProviderConfig, get_provider
from model_server import ModelServer

pytest_plugins = ["model_server"]


def openai(url, **config):
    return get_provider(ProviderConfig(base_url=url, model="m", **config), environ={})


def test_fixture_records_requests(model_server):
    model_server.add("plain string entry")
    reply = openai(model_server.url).complete("sys", [{"role": "user", "content": "hi"}], [])
    assert reply.text == "plain string entry"
    (request,) = model_server.requests
    assert request["method"] == "POST"
    assert request["json"]["messages"][-1] == {"role": "user", "content": "hi"}
    assert model_server.remaining == 0


def test_callable_entries_see_the_request(model_server):
    model_server.add(lambda body: {"text": f"you said {body['messages'][-1]['content']}"})
    reply = openai(model_server.url).complete("", [{"role": "user", "content": "ping"}], [])
    assert reply.text == "you said ping"


def test_exhausted_script_is_a_clear_client_error(model_server):
    with pytest.raises(ProviderError, match="model_server: script exhausted after 0 responses"):
        openai(model_server.url).complete("", [{"role": "user", "content": "hi"}], [])


def test_repeat_cycles_the_script():
    with ModelServer(["a", "b"], repeat=True) as server:
        provider = openai(server.url, stream=False)
        texts = [
            provider.complete("", [{"role": "user", "content": "x"}], []).text for _ in range(5)
        ]
    assert texts == ["a", "b", "a", "b", "a"]


def test_unknown_path_is_404(model_server):
    response = httpx.post(f"{model_server.anthropic_url}/v2/nothing", json={})
    assert response.status_code == 404


def test_command_line_serves_a_yaml_script(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text("- text: from the command line\n")
    server_py = Path(__file__).with_name("model_server.py")
    process = subprocess.Popen(
        [sys.executable, str(server_py), str(script)], stdout=subprocess.PIPE, text=True
    )
    try:
        openai_url = process.stdout.readline().split()[-1]
        anthropic_url = process.stdout.readline().split()[-1]
        assert openai_url == anthropic_url + "/v1"
        reply = openai(openai_url).complete("", [{"role": "user", "content": "hi"}], [])
        assert reply.text == "from the command line"
    finally:
        process.terminate()
        process.wait(timeout=10)
