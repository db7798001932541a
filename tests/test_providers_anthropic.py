"""The Anthropic Messages backend against a real local HTTP server."""

from __future__ import annotations

import json

import pytest

from conftest import EXEC_TOOL, ProviderClient
from mdagent.core.errors import ProviderError
from mdagent.providers.anthropic import AnthropicProvider, to_anthropic_messages
from mdagent.providers.config import ProviderConfig
from mdagent.providers.reply import ToolCall
from model_server import unused_port


class Client(ProviderClient):
    provider_class = AnthropicProvider
    name = "anthropic"
    model = "claude-test"


def test_plain_text_answer(server, stream):
    server.add({"text": "Hello there, world!"})
    client = Client(server.anthropic_url, stream)
    reply = client.ask()
    assert reply.text == "Hello there, world!"
    assert reply.tool_calls == ()
    assert reply.stop_reason == "end_turn"
    assert "".join(client.deltas) == "Hello there, world!"
    assert len(client.deltas) == (3 if stream else 1)


def test_one_tool_call(server, stream):
    server.add(
        {"tool_calls": [{"name": "exec", "arguments": {"command": "echo hi"}, "id": "toolu_7"}]}
    )
    reply = Client(server.anthropic_url, stream).ask()
    assert reply.tool_calls == (
        ToolCall("toolu_7", "exec", {"command": "echo hi"}, '{"command": "echo hi"}', None),
    )
    assert reply.text == ""
    assert reply.stop_reason == "tool_use"


def test_two_tool_calls_after_text(server, stream):
    server.add(
        {
            "text": "Running both.",
            "tool_calls": [
                {"name": "exec", "arguments": {"command": "ls -la /tmp"}},
                {"name": "read", "arguments": {"path": "README.md", "lines": [1, 20]}},
            ],
        }
    )
    client = Client(server.anthropic_url, stream)
    reply = client.ask()
    assert reply.text == "Running both."
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("exec", {"command": "ls -la /tmp"}),
        ("read", {"path": "README.md", "lines": [1, 20]}),
    ]
    ids = [c.id for c in reply.tool_calls]
    assert all(ids) and len(set(ids)) == 2


def test_a_tool_without_arguments(server, stream):
    server.add({"tool_calls": [{"name": "pwd", "arguments": {}}]})
    (call,) = Client(server.anthropic_url, stream).ask().tool_calls
    assert (call.arguments, call.error) == ({}, None)


def test_arguments_that_are_not_json_become_an_error(server, stream):
    server.add({"tool_calls": [{"name": "exec", "arguments": '{"command": "echo'}]})
    (call,) = Client(server.anthropic_url, stream).ask().tool_calls
    assert call.arguments is None
    assert call.raw_arguments == '{"command": "echo'
    assert call.error.startswith("arguments are not valid JSON")


def test_usage_figures(server, stream):
    server.add({"text": "ok", "usage": {"input_tokens": 321, "output_tokens": 12}})
    reply = Client(server.anthropic_url, stream).ask()
    assert reply.usage == {"input_tokens": 321, "output_tokens": 12}


def test_429_waits_as_long_as_retry_after_says(server, stream):
    server.add({"status": 429, "headers": {"retry-after": "7"}}, {"text": "ok"})
    client = Client(server.anthropic_url, stream)
    assert client.ask().text == "ok"
    assert client.sleeps == [7.0]


def test_overloaded_529_is_retried(server):
    server.add({"status": 529}, {"text": "ok"})
    client = Client(server.anthropic_url)
    assert client.ask().text == "ok"
    assert client.sleeps == [0.5]


def test_500_three_times_then_success_backs_off(server, stream):
    server.add(*[{"status": 500}] * 3, {"text": "finally"})
    client = Client(server.anthropic_url, stream)
    assert client.ask().text == "finally"
    assert client.sleeps == [0.5, 1.0, 2.0]


def test_500_four_times_fails_clearly(server, stream):
    server.add(*[{"status": 500, "message": "Internal server error"}] * 4)
    with pytest.raises(ProviderError) as err:
        Client(server.anthropic_url, stream).ask()
    assert str(err.value) == (
        f"server error (HTTP 500) from {server.anthropic_url}/v1/messages (anthropic) "
        "after 3 retries: Internal server error"
    )
    assert len(server.requests) == 4


def test_max_retries_zero_means_one_attempt(server):
    server.add({"status": 503}, {"text": "never reached"})
    with pytest.raises(
        ProviderError,
        match=r"server error \(HTTP 503\) from http://\S+ \(anthropic\) after 0 retries",
    ):
        Client(server.anthropic_url, max_retries=0).ask()


def test_401_names_the_key_variable(server):
    server.add({"status": 401, "message": "invalid x-api-key"})
    with pytest.raises(ProviderError) as err:
        Client(server.anthropic_url).ask()
    assert str(err.value) == (
        f"authentication failed (HTTP 401) at {server.anthropic_url}/v1/messages (anthropic): "
        "set ANTHROPIC_API_KEY: invalid x-api-key"
    )


def test_404_names_model_and_url(server):
    server.add({"status": 404})
    with pytest.raises(ProviderError) as err:
        Client(server.anthropic_url).ask()
    assert str(err.value).startswith(
        f"model or URL not found (HTTP 404): model 'claude-test' at {server.anthropic_url}/v1/messages"
    )


def test_a_refused_local_connection_is_said_at_once_not_retried(stream):
    url = f"http://127.0.0.1:{unused_port()}"
    client = Client(url, stream)
    with pytest.raises(ProviderError) as err:
        client.ask()
    assert str(err.value) == (
        f"cannot connect to {url}/v1/messages (anthropic): connection refused, nothing listens "
        "at that port on this machine; start the model server (or set model.base_url)"
    )
    assert client.sleeps == []  # waiting would not start the server


def test_timeout(server):
    server.add({"text": "too late", "delay": 1.0})
    with pytest.raises(ProviderError) as err:
        Client(server.anthropic_url, timeout=0.2).ask()
    assert str(err.value) == (
        f"timed out after 0.2 s (model.timeout) waiting for {server.anthropic_url}/v1/messages "
        "(anthropic)"
    )


def test_a_stream_cut_off_mid_way_is_an_error_not_a_short_answer(server):
    server.add({"text": "The answer is forty two, as everyone knows.", "cut_off": True})
    client = Client(server.anthropic_url)
    with pytest.raises(
        ProviderError,
        match=r"^the model's answer from http://\S+/v1/messages \(anthropic\) was cut off mid-stream$",
    ):
        client.ask()
    assert client.deltas
    assert client.sleeps == []


def test_an_error_event_mid_stream(server):
    events = [
        'event: message_start\ndata: {"type": "message_start", "message": {"usage": {}}}\n\n',
        'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n',
    ]
    server.add(
        {"status": 200, "headers": {"Content-Type": "text/event-stream"}, "body": "".join(events)}
    )
    with pytest.raises(ProviderError, match="reported an error: overloaded_error: Overloaded"):
        Client(server.anthropic_url).ask()


def test_request_shape(server, stream):
    server.add({"text": "done"})
    history = [
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {"id": "toolu_1", "name": "exec", "arguments": {"command": "ls"}},
                {"id": "toolu_2", "name": "exec", "arguments": None, "raw_arguments": "{oops"},
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "name": "exec", "content": '{"stdout": "a"}'},
        {"role": "tool", "tool_call_id": "toolu_2", "name": "exec", "content": '{"error": "bad"}'},
        {"role": "user", "content": "and now?"},
    ]
    client = Client(
        server.anthropic_url + "/", stream, max_tokens=100, environ={"ANTHROPIC_API_KEY": "sk-ant"}
    )
    client.ask(history, system="You are terse.")
    (request,) = server.requests
    assert request["path"] == "/v1/messages"
    assert request["headers"]["x-api-key"] == "sk-ant"
    assert request["headers"]["anthropic-version"] == "2023-06-01"
    body = request["json"]
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == 100
    assert body["system"] == "You are terse."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "list files"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "exec", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "toolu_2", "name": "exec", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"stdout": "a"}'},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": '{"error": "bad"}'},
                {"type": "text", "text": "and now?"},
            ],
        },
    ]
    assert body["tools"] == [
        {
            "name": "exec",
            "description": "Run a shell command",
            "input_schema": EXEC_TOOL["parameters"],
        }
    ]
    assert body.get("stream", False) is stream


def test_no_key_no_header_and_no_empty_fields(server):
    server.add({"text": "ok"})
    Client(server.anthropic_url).ask(tools=(), system="")
    request = server.requests[0]
    assert "x-api-key" not in request["headers"]
    assert "system" not in request["json"] and "tools" not in request["json"]


def test_defaults():
    provider = AnthropicProvider(ProviderConfig(provider="anthropic"), environ={})
    assert provider.base_url == "https://api.anthropic.com"
    assert provider.model == "claude-sonnet-4-5"
    assert provider.api_key_env == "ANTHROPIC_API_KEY"


# -- issue 13: thinking, stop reasons, errors, outcomes -------------------------------------


def sse(name, data) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def start(index, block) -> str:
    return sse(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def delta(index, payload) -> str:
    return sse(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": payload}
    )


HEAD = sse("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 3}}})


def tail(stop_reason) -> list[str]:
    return [
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason},
                "usage": {"output_tokens": 2},
            },
        ),
        sse("message_stop", {"type": "message_stop"}),
    ]


THINKING = {"type": "thinking", "thinking": "Let me see. Yes.", "signature": "c2lnbmVk=="}
REDACTED = {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"}


def test_streamed_thinking_is_rebuilt_exactly_and_shown_apart(server):
    server.add(
        {
            "sse": [
                HEAD,
                start(0, {"type": "thinking", "thinking": "", "signature": ""}),
                delta(0, {"type": "thinking_delta", "thinking": "Let me see. "}),
                delta(0, {"type": "thinking_delta", "thinking": "Yes."}),
                delta(0, {"type": "signature_delta", "signature": "c2lnbmVk=="}),
                start(1, REDACTED),
                start(2, {"type": "text", "text": ""}),
                delta(2, {"type": "text_delta", "text": "Answer."}),
                *tail("end_turn"),
            ]
        }
    )
    client = Client(server.anthropic_url)
    thoughts = []
    reply = client.provider.complete(
        "",
        [{"role": "user", "content": "q"}],
        [],
        on_text=client.deltas.append,
        on_reasoning=thoughts.append,
    )
    assert reply.thinking == (THINKING, REDACTED)
    assert (reply.text, client.deltas, thoughts) == (
        "Answer.",
        ["Answer."],
        ["Let me see. ", "Yes."],
    )
    assert reply.to_message() == {
        "role": "assistant",
        "content": "Answer.",
        "thinking": [THINKING, REDACTED],
    }


def test_thinking_goes_back_first_and_unchanged():
    history = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "Looking.",
            "thinking": [THINKING, REDACTED],
            "tool_calls": [{"id": "toolu_1", "name": "exec", "arguments": {"command": "ls"}}],
        },
        {
            "role": "tool",
            "tool_call_id": "toolu_1",
            "name": "exec",
            "content": '{"ok": false}',
            "is_error": True,
        },
    ]
    wire = to_anthropic_messages(history)
    assert wire[1]["content"] == [
        THINKING,
        REDACTED,
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "exec", "input": {"command": "ls"}},
    ]
    assert wire[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": '{"ok": false}',
            "is_error": True,
        }
    ]


def test_a_thinking_budget_is_sent_when_set():
    config = ProviderConfig(provider="anthropic", thinking_budget=2048)
    body = AnthropicProvider(config, environ={}).request_body(
        "", [{"role": "user", "content": "q"}], []
    )
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    plain = AnthropicProvider(ProviderConfig(provider="anthropic"), environ={})
    assert "thinking" not in plain.request_body("", [{"role": "user", "content": "q"}], [])


@pytest.mark.parametrize(
    "reason, short",
    [
        ("end_turn", None),
        ("tool_use", None),
        ("max_tokens", "max_tokens"),
        ("refusal", "refusal"),
        ("model_context_window_exceeded", "context_window"),
    ],
)
def test_stop_reasons_are_read(server, stream, reason, short):
    server.add({"text": "x", "stop_reason": reason})
    assert Client(server.anthropic_url, stream).ask().cut_short == short


def test_an_error_event_without_its_type_in_the_data(server):
    server.add(
        {
            "sse": [
                HEAD,
                'event: error\ndata: {"error": {"type": "api_error", "message": "Internal server error"}}\n\n',
            ]
        }
    )
    with pytest.raises(ProviderError) as err:
        Client(server.anthropic_url).ask()
    assert str(err.value) == (
        f"the model server at {server.anthropic_url}/v1/messages (anthropic) reported an error: "
        "Internal server error"
    )


def test_pings_are_not_data(server):
    ping = sse("ping", {"type": "ping"})
    server.add({"sse": [HEAD] + [ping] * 40, "gap": 0.02})
    with pytest.raises(ProviderError, match="sent only keep-alives, no data, for 0.3 s"):
        Client(server.anthropic_url, timeout=0.3).ask()


# -- issue 32: server tools and their blocks --------------------------------------------------


def test_server_tool_blocks_keep_the_whole_content_citations_and_all(server):
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    found = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "u", "encrypted_content": "Eq=="}],
    }
    citation = {"type": "web_search_result_location", "url": "u", "encrypted_index": "Eo=="}
    server.add(
        {
            "sse": [
                HEAD,
                start(0, use),
                delta(0, {"type": "input_json_delta", "partial_json": '{"query": "x"}'}),
                start(1, found),
                start(2, {"type": "text", "text": ""}),
                delta(2, {"type": "citations_delta", "citation": citation}),
                delta(2, {"type": "text_delta", "text": "It is x."}),
                start(3, {"type": "tool_use", "id": "toolu_9", "name": "exec", "input": {}}),
                delta(3, {"type": "input_json_delta", "partial_json": "{broken"}),
                *tail("tool_use"),
            ]
        }
    )
    client = Client(server.anthropic_url)
    reply = client.ask()
    assert reply.text == "It is x." and [c.id for c in reply.tool_calls] == ["toolu_9"]
    blocks = [
        use | {"input": {"query": "x"}},
        found,
        {"type": "text", "text": "It is x.", "citations": [citation]},
        {"type": "tool_use", "id": "toolu_9", "name": "exec", "input": {}},  # broken: {}
    ]
    assert list(reply.blocks) == blocks
    history = [{"role": "user", "content": "q"}, reply.to_message()]
    assert to_anthropic_messages(history)[1] == {"role": "assistant", "content": blocks}


def test_a_reply_with_only_neutral_blocks_keeps_no_copy(server, stream):
    server.add({"text": "Plain.", "tool_calls": [{"name": "exec", "arguments": {}}]})
    reply = Client(server.anthropic_url, stream).ask()
    assert reply.blocks == () and "blocks" not in reply.to_message()


def test_tool_result_images_go_inside_the_tool_result():
    from mdagent.providers.anthropic import to_anthropic_messages

    image = {"mime": "image/jpeg", "data": "QUJD"}
    wire = to_anthropic_messages(
        [{"role": "tool", "tool_call_id": "a", "name": "s", "content": "{}", "images": [image]}]
    )
    [block] = wire[0]["content"]
    assert block["content"] == [
        {"type": "text", "text": "{}"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "QUJD"}},
    ]
