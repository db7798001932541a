"""The scripted model server other tests rely on: its extras and its command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from mdagent.core.errors import ProviderError
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


def test_sse_entries_are_sent_byte_exact_one_chunk_each(model_server):
    pieces = ['data: {"a":1}\r\n\r\n', b"\xff raw bytes\n", ": comment\n\n"]
    model_server.add({"sse": pieces, "headers": {"x-extra": "1"}})
    with httpx.stream("POST", f"{model_server.url}/chat/completions", json={}) as response:
        assert response.headers["content-type"] == "text/event-stream"
        assert response.headers["x-extra"] == "1"
        received = list(response.iter_raw())
    assert b"".join(received) == b"".join(p if isinstance(p, bytes) else p.encode() for p in pieces)


@pytest.mark.parametrize(
    "end, error", [("close", httpx.RemoteProtocolError), ("reset", httpx.ReadError)]
)
def test_sse_entries_can_break_the_body(model_server, end, error):
    model_server.add({"sse": ["data: half\n\n"], "end": end})
    with (
        pytest.raises(error),
        httpx.stream("POST", f"{model_server.url}/chat/completions", json={}) as response,
    ):
        for _ in response.iter_raw():
            pass


def test_a_reset_right_after_the_headers(model_server):
    model_server.add({"sse": [], "end": "reset", "gap": 0.1})
    with httpx.stream("POST", f"{model_server.url}/chat/completions", json={}) as response:
        assert response.status_code == 200  # the headers arrived
        with pytest.raises(httpx.ReadError):
            response.read()


def test_stopping_the_server_ends_a_stream_still_being_sent():
    server = ModelServer([{"sse": ["data: x\n\n"] * 1000, "gap": 0.05}]).start()
    with httpx.stream("POST", f"{server.url}/chat/completions", json={}) as response:
        chunks = response.iter_raw()
        assert next(chunks) == b"data: x\n\n"
        server.stop()
        with pytest.raises(httpx.RemoteProtocolError):  # cut short, not 50 s of the rest
            for _ in chunks:
                pass
