"""The OpenAI Chat Completions backend against a real local HTTP server."""

from __future__ import annotations

import json

import pytest

from conftest import EXEC_TOOL, ProviderClient
from mdagent.core.errors import ProviderError
from mdagent.providers.config import ProviderConfig
from mdagent.providers.openai import OpenAIProvider
from mdagent.providers.reply import Reply, ToolCall
from mdagent.providers.wire import retry_after_seconds, retry_wait, should_retry
from model_server import unused_port

#: How a stream that breaks off is reported: the endpoint and the provider named.
CUT_OFF = r"^the model's answer from http://127\.0\.0\.1:\d+/v1/chat/completions \(openai\) was cut off mid-stream$"


class Client(ProviderClient):
    provider_class = OpenAIProvider
    name = "openai"
    model = "test-model"


def test_plain_text_answer(server, stream):
    server.add({"text": "Hello there, world!"})
    client = Client(server.url, stream)
    reply = client.ask()
    assert reply.text == "Hello there, world!"
    assert reply.tool_calls == ()
    assert reply.stop_reason == "stop"
    assert "".join(client.deltas) == "Hello there, world!"
    # Streaming shows text as it arrives; otherwise on_text gets it once.
    assert len(client.deltas) == (3 if stream else 1)


def test_one_tool_call(server, stream):
    server.add(
        {"tool_calls": [{"name": "exec", "arguments": {"command": "echo hi"}, "id": "call_7"}]}
    )
    reply = Client(server.url, stream).ask()
    assert reply.tool_calls == (
        ToolCall("call_7", "exec", {"command": "echo hi"}, '{"command": "echo hi"}', None),
    )
    assert reply.text == ""
    assert reply.stop_reason == "tool_calls"


@pytest.mark.parametrize("interleave", [False, True], ids=["sequential", "interleaved"])
def test_two_tool_calls_in_one_answer(server, stream, interleave):
    server.add(
        {
            "text": "Running both.",
            "interleave": interleave,
            "tool_calls": [
                {"name": "exec", "arguments": {"command": "ls -la /tmp"}},
                {"name": "read", "arguments": {"path": "README.md", "lines": [1, 20]}},
            ],
        }
    )
    reply = Client(server.url, stream).ask()
    assert reply.text == "Running both."
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("exec", {"command": "ls -la /tmp"}),
        ("read", {"path": "README.md", "lines": [1, 20]}),
    ]
    ids = [c.id for c in reply.tool_calls]
    assert all(ids) and len(set(ids)) == 2


def test_arguments_that_are_not_json_become_an_error(server, stream):
    server.add({"tool_calls": [{"name": "exec", "arguments": '{"command": "echo'}]})
    (call,) = Client(server.url, stream).ask().tool_calls
    assert call.arguments is None
    assert call.raw_arguments == '{"command": "echo'
    assert call.error.startswith("arguments are not valid JSON")


def test_usage_figures(server, stream):
    server.add({"text": "ok", "usage": {"input_tokens": 321, "output_tokens": 12}})
    reply = Client(server.url, stream).ask()
    assert reply.usage == {"input_tokens": 321, "output_tokens": 12}


def test_429_waits_as_long_as_retry_after_says(server, stream):
    server.add({"status": 429, "headers": {"Retry-After": "7"}}, {"text": "ok"})
    client = Client(server.url, stream)
    assert client.ask().text == "ok"
    assert client.sleeps == [7.0]
    assert len(server.requests) == 2


def test_retry_after_is_capped(server):
    server.add({"status": 503, "headers": {"Retry-After": "86400"}}, {"text": "ok"})
    client = Client(server.url)
    assert client.ask().text == "ok"
    assert client.sleeps == [60.0]


def test_retry_after_http_date():
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:30 GMT", now=1445412480.0) == 30.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480.0) == 0.0
    assert retry_after_seconds("soon") is None


def test_500_three_times_then_success_backs_off(server, stream):
    server.add(*[{"status": 500}] * 3, {"text": "finally"})
    client = Client(server.url, stream)
    assert client.ask().text == "finally"
    assert client.sleeps == [0.5, 1.0, 2.0]


def test_500_four_times_fails_clearly(server, stream):
    server.add(*[{"status": 500, "body": {"error": {"message": "boom"}}}] * 4)
    client = Client(server.url, stream)
    with pytest.raises(ProviderError) as err:
        client.ask()
    assert str(err.value) == (
        f"server error (HTTP 500) from {server.url}/chat/completions (openai) after 3 retries: boom"
    )
    assert len(server.requests) == 4


def test_401_names_the_key_variable(server):
    server.add({"status": 401, "body": {"error": {"message": "Incorrect API key"}}})
    with pytest.raises(
        ProviderError,
        match=r"authentication failed \(HTTP 401\) at http://\S+/chat/completions \(openai\): "
        r"set OPENAI_API_KEY",
    ):
        Client(server.url).ask()


def test_401_with_a_custom_key_variable_that_is_set(server):
    server.add({"status": 403})
    client = Client(server.url, api_key_env="MY_KEY", environ={"MY_KEY": "sk-wrong"})
    with pytest.raises(ProviderError, match=r"\(HTTP 403\) at http://\S+ \(openai\): check MY_KEY"):
        client.ask()


def test_404_names_model_and_url(server):
    server.add({"status": 404})
    with pytest.raises(ProviderError) as err:
        Client(server.url).ask()
    assert str(err.value).startswith(
        f"model or URL not found (HTTP 404): model 'test-model' at {server.url}/chat/completions"
    )


def test_other_client_errors_pass_the_server_message_on(server):
    server.add({"status": 400, "body": {"error": {"message": "tools[0] is invalid"}}})
    with pytest.raises(
        ProviderError, match=r"request rejected \(HTTP 400\).*tools\[0\] is invalid"
    ):
        Client(server.url).ask()


def test_a_refused_local_connection_is_said_at_once_not_retried(stream):
    url = f"http://127.0.0.1:{unused_port()}/v1"
    client = Client(url, stream)
    with pytest.raises(ProviderError) as err:
        client.ask()
    assert str(err.value) == (
        f"cannot connect to {url}/chat/completions (openai): connection refused, nothing listens "
        "at that port on this machine; start the model server (or set model.base_url)"
    )
    assert client.sleeps == []  # waiting would not start the server


def test_a_dropped_connection_before_the_answer_is_retried(server, stream):
    server.add({"disconnect": True}, {"text": "second try"})
    client = Client(server.url, stream)
    assert client.ask().text == "second try"
    assert client.sleeps == [0.5]


def test_timeout(server):
    server.add({"text": "too late", "delay": 1.0})
    with pytest.raises(ProviderError) as err:
        Client(server.url, timeout=0.2).ask()
    assert str(err.value) == (
        f"timed out after 0.2 s (model.timeout) waiting for {server.url}/chat/completions (openai)"
    )


def test_a_stream_cut_off_mid_way_is_an_error_not_a_short_answer(server):
    server.add({"text": "The answer is forty two, as everyone knows.", "cut_off": True})
    client = Client(server.url)
    with pytest.raises(ProviderError, match=CUT_OFF):
        client.ask()
    assert client.deltas  # some text had already been shown
    assert client.sleeps == []  # never retried: the user saw part of it


def test_a_cut_off_body_without_streaming_is_retried(server):
    server.add({"text": "lost", "cut_off": True}, {"text": "whole"})
    client = Client(server.url, stream=False)
    assert client.ask().text == "whole"
    assert client.deltas == ["whole"]


def test_a_server_that_ignores_stream_true_still_works(server):
    body = {"choices": [{"message": {"content": "plain JSON"}, "finish_reason": "stop"}]}
    server.add({"status": 200, "body": body})
    assert Client(server.url).ask().text == "plain JSON"


def test_request_shape(server, stream):
    server.add({"text": "done"})
    history = [
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "call_1", "name": "exec", "arguments": {"command": "ls"}},
                {"id": "call_2", "name": "exec", "arguments": None, "raw_arguments": "{oops"},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "exec", "content": '{"stdout": "a"}'},
        {"role": "tool", "tool_call_id": "call_2", "name": "exec", "content": '{"error": "bad"}'},
    ]
    Client(server.url + "/", stream, max_tokens=100).ask(history, system="You are terse.")
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"  # the trailing slash was dropped
    assert "authorization" not in request["headers"]  # no key, no header (Ollama & co.)
    body = request["json"]
    assert body["model"] == "test-model"
    assert body["max_tokens"] == 100
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "exec", "arguments": '{"command": "ls"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "exec", "arguments": "{oops"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"stdout": "a"}'},
        {"role": "tool", "tool_call_id": "call_2", "content": '{"error": "bad"}'},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "exec",
                "description": "Run a shell command",
                "parameters": EXEC_TOOL["parameters"],
            },
        }
    ]
    if stream:
        assert body["stream"] is True
        assert body["stream_options"] == {"include_usage": True}
    else:
        assert "stream" not in body


def test_bearer_key_sent_when_set(server):
    server.add({"text": "ok"})
    Client(server.url, environ={"OPENAI_API_KEY": "sk-test"}).ask(tools=())
    request = server.requests[0]
    assert request["headers"]["authorization"] == "Bearer sk-test"
    assert "tools" not in request["json"]


def test_official_api_gets_max_completion_tokens():
    provider = OpenAIProvider(ProviderConfig(max_tokens=50), environ={})
    body = provider.request_body("", [{"role": "user", "content": "hi"}], [])
    assert body["max_completion_tokens"] == 50 and "max_tokens" not in body
    assert body["model"] == "gpt-4o-mini"


def test_reply_round_trips_into_the_next_request(server):
    server.add(
        {"tool_calls": [{"name": "exec", "arguments": {"command": "pwd"}}]},
        lambda request: {"text": "tool said " + request["messages"][-1]["content"]},
    )
    client = Client(server.url)
    history = [{"role": "user", "content": "where am I?"}]
    reply = client.ask(history)
    history.append(reply.to_message())
    (call,) = reply.tool_calls
    history.append(
        {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": json.dumps("/work")}
    )
    assert client.ask(history).text == 'tool said "/work"'
    sent = server.requests[1]["json"]["messages"]
    assert sent[2]["tool_calls"][0]["id"] == sent[3]["tool_call_id"] == call.id


def test_a_stream_that_ends_cleanly_without_done_is_cut_off(server):
    chunk = {"choices": [{"index": 0, "delta": {"content": "Half"}, "finish_reason": None}]}
    body = f"data: {json.dumps(chunk)}\n\n"
    server.add({"status": 200, "headers": {"Content-Type": "text/event-stream"}, "body": body})
    with pytest.raises(ProviderError, match=CUT_OFF):
        Client(server.url).ask()


# -- issue 13: the wire as servers really send it ----------------------------------------


def data(payload) -> str:
    return f"data: {json.dumps(payload)}\n\n"


def piece(delta, finish=None) -> str:
    return data({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def test_retry_after_ms_is_read_before_retry_after(server):
    server.add({"status": 429, "headers": {"retry-after-ms": "1500", "retry-after": "9"}}, "ok")
    client = Client(server.url)
    assert client.ask().text == "ok"
    assert client.sleeps == [1.5]


def test_retry_after_ms_is_capped_and_garbage_falls_back(server):
    server.add(
        {"status": 429, "headers": {"retry-after-ms": "86400000"}},
        {"status": 429, "headers": {"retry-after-ms": "soon", "retry-after": "2"}},
        {"status": 429, "headers": {"retry-after-ms": "nan"}},
        "ok",
    )
    client = Client(server.url)
    assert client.ask().text == "ok"
    assert client.sleeps == [60.0, 2.0, 2.0]  # the last: no usable header, the third backoff


def test_retry_wait_and_should_retry_as_the_sdks_read_headers():
    assert retry_wait({"retry-after-ms": "250", "retry-after": "3"}) == 0.25
    assert retry_wait({"retry-after": "3"}) == 3.0
    assert retry_wait({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, now=1445412480.0) == 30.0
    assert retry_wait({}) is None
    assert [should_retry(s, {}) for s in (400, 401, 404, 408, 409, 422, 429, 500, 529)] == [
        False, False, False, True, True, False, True, True, True,
    ]  # fmt: skip
    assert should_retry(400, {"x-should-retry": "true"})
    assert not should_retry(503, {"x-should-retry": "False"})


@pytest.mark.parametrize("status", [408, 409])
def test_timeouts_and_conflicts_are_retried(server, status):
    server.add({"status": status}, "ok")
    client = Client(server.url)
    assert client.ask().text == "ok"
    assert client.sleeps == [0.5]


def test_x_should_retry_true_retries_even_a_400(server):
    server.add({"status": 400, "headers": {"x-should-retry": "true"}}, "ok")
    client = Client(server.url)
    assert client.ask().text == "ok"
    assert len(server.requests) == 2


def test_a_408_that_never_clears_says_so(server):
    server.add(*[{"status": 408, "message": "request timeout"}] * 2)
    with pytest.raises(ProviderError) as err:
        Client(server.url, max_retries=1).ask()
    assert str(err.value) == (
        f"request failed (HTTP 408) at {server.url}/chat/completions (openai) after 1 retry: "
        "request timeout"
    )


def test_each_retry_is_told_in_one_line(server):
    server.add({"status": 503, "headers": {"retry-after": "1"}}, "ok")
    client = Client(server.url)
    told = []
    client.provider.complete("", [{"role": "user", "content": "hi"}], [], on_retry=told.append)
    assert told == [
        "the model server answered HTTP 503 (service unavailable); retrying in 1 s (1 of 3)"
    ]


def test_a_reset_after_the_headers_is_retried_but_a_reset_after_a_byte_is_not(server):
    server.add({"sse": [], "end": "reset", "gap": 0.1}, "second try")
    client = Client(server.url)
    assert client.ask().text == "second try"
    assert client.sleeps == [0.5]
    server.add({"sse": [piece({"content": "Hal"})], "end": "reset", "gap": 0.1}, "never")
    with pytest.raises(ProviderError, match=CUT_OFF):
        client.ask()
    assert client.deltas[-1] == "Hal" and client.sleeps == [0.5]


def test_sse_line_ends_crlf_split_across_chunks_and_multiline_data(server):
    first = json.dumps({"choices": [{"index": 0, "delta": {"content": "a"}}]})
    server.add(
        {
            "sse": [
                f"data: {first}\r",  # the CR here, its LF in the next chunk
                "\n\r\n",
                'data: {"choices": [{"index": 0,\n',  # one event, data over two lines
                'data: "delta": {"content": "b"}, "finish_reason": "stop"}]}\r\r',
                "data: [DONE]",  # no line end at all before the body ends
            ]
        }
    )
    client = Client(server.url)
    assert client.ask().text == "ab"
    assert client.deltas == ["a", "b"]


@pytest.mark.parametrize(
    "error, words",
    [
        (
            'error: {"code":500,"message":"slot unavailable","type":"server_error"}\n\n',
            "server_error: slot unavailable",
        ),
        (
            '{"error":{"message":"runner stopped","type":"api_error","param":null,"code":null}}\n',
            "runner stopped",
        ),
        (
            data({"object": "error", "message": "bad", "type": "BadRequestError", "code": 400}),
            "bad",
        ),
        (
            data(
                {
                    "error": {"message": "Overloaded", "code": 502},
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "error"}],
                }
            ),
            "Overloaded",
        ),
        (piece({}, "error"), "finish_reason error"),
    ],
    ids=["llama.cpp", "ollama", "vllm", "openrouter", "finish-error"],
)
def test_errors_inside_the_stream_raise_the_servers_words(server, error, words):
    server.add({"sse": [piece({"content": "so far"}), error, "data: [DONE]\n\n"]})
    with pytest.raises(ProviderError) as err:
        Client(server.url).ask()
    assert str(err.value) == (
        f"the model server at {server.url}/chat/completions (openai) reported an error: {words}"
    )


def test_a_200_body_that_is_an_error_is_an_error(server):
    server.add({"status": 200, "body": {"object": "error", "message": "no such model"}})
    with pytest.raises(ProviderError, match="reported an error: no such model$"):
        Client(server.url, stream=False).ask()


def test_a_finish_without_done_is_complete_and_keeps_its_usage(server):
    usage_only = data({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}})
    server.add({"sse": [piece({"content": "whole"}), piece({}, "stop"), usage_only]})
    reply = Client(server.url).ask()
    assert (reply.text, reply.stop_reason, reply.cut_short) == ("whole", "stop", None)
    assert reply.usage == {"input_tokens": 5, "output_tokens": 2}


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_goes_to_on_reasoning_never_to_the_text(server, stream, field):
    if stream:
        server.add(
            {
                "sse": [
                    piece({field: "hm, "}),
                    piece({field: "four"}),
                    piece({"content": "4"}, "stop"),
                ]
            }
        )
    else:
        message = {"role": "assistant", "content": "4", field: "hm, four"}
        server.add(
            {"status": 200, "body": {"choices": [{"message": message, "finish_reason": "stop"}]}}
        )
    client = Client(server.url, stream)
    thoughts = []
    reply = client.provider.complete(
        "",
        [{"role": "user", "content": "2+2"}],
        [],
        on_text=client.deltas.append,
        on_reasoning=thoughts.append,
    )
    assert (reply.text, reply.reasoning, "".join(client.deltas)) == ("4", "hm, four", "4")
    assert "".join(thoughts) == "hm, four"
    assert reply.to_message() == {
        "role": "assistant",
        "content": "4",
        "reasoning": "hm, four",
        "reasoning_field": field,
    }
    body = client.provider.request_body("", [reply.to_message()], [])
    # No tool call: not sent back (DeepSeek ignores it there, others reject it).
    assert body["messages"] == [{"role": "assistant", "content": "4"}]


def test_a_refusal_is_the_text_and_cuts_the_answer_short(server, stream):
    if stream:
        server.add(
            {
                "sse": [
                    piece({"refusal": "I can't "}),
                    piece({"refusal": "help."}, "stop"),
                    "data: [DONE]\n\n",
                ]
            }
        )
    else:
        message = {"role": "assistant", "content": None, "refusal": "I can't help."}
        server.add(
            {"status": 200, "body": {"choices": [{"message": message, "finish_reason": "stop"}]}}
        )
    client = Client(server.url, stream)
    reply = client.ask()
    assert (reply.text, reply.refusal, reply.cut_short) == (
        "I can't help.",
        "I can't help.",
        "refusal",
    )
    assert "".join(client.deltas) == "I can't help."


@pytest.mark.parametrize(
    "reason, short",
    [
        ("stop", None),
        ("tool_calls", None),
        ("length", "max_tokens"),
        ("content_filter", "content_filter"),
    ],
)
def test_stop_reasons_are_read(server, reason, short):
    server.add({"text": "x", "stop_reason": reason})
    assert Client(server.url).ask().cut_short == short


def test_request_timeout_bounds_a_trickled_body_too(server):
    trickle = ["{" + " " * 10] * 100  # a JSON body that never gets anywhere, 0.05 s a piece
    server.add({"sse": trickle, "headers": {"Content-Type": "application/json"}, "gap": 0.05})
    client = Client(server.url, stream=False, timeout=5.0, request_timeout=0.5)
    with pytest.raises(ProviderError) as err:
        client.ask()
    assert str(err.value) == (
        f"timed out: the request to {server.url}/chat/completions (openai) took longer than "
        "0.5 s "
        "(model.request_timeout)"
    )


# -- issue 32: gateways, Gemini, Mistral -----------------------------------------------------


def call_part(**fields) -> dict:
    return {"tool_calls": [fields]}


@pytest.mark.parametrize(
    "parts, calls",
    [
        # No index, empty ids: a piece with a name starts a call, one without goes on.
        (
            [
                call_part(id="", function={"name": "a", "arguments": '{"x":'}),
                call_part(id="", function={"arguments": " 1}"}),
                call_part(id="", function={"name": "b", "arguments": "{}"}),
            ],
            [("call_1", "a", {"x": 1}), ("call_2", "b", {})],
        ),
        # No index: a new id starts a call even without a name, the same id goes on.
        (
            [
                call_part(id="k1", function={"name": "a", "arguments": "{"}),
                call_part(id="k1", function={"name": "a", "arguments": "}"}),
                call_part(id="k2", function={"name": "b"}),
            ],
            [("k1", "a", {}), ("k2", "b", {})],
        ),
        # With an index, a repeated name is the same call.
        (
            [
                call_part(index=0, id="k", function={"name": "a", "arguments": '{"x"'}),
                call_part(index=0, function={"name": "a", "arguments": ": 2}"}),
            ],
            [("k", "a", {"x": 2})],
        ),
    ],
    ids=["empty-ids", "ids", "index"],
)
def test_tool_call_pieces_are_told_apart(server, parts, calls):
    server.add({"sse": [piece(p) for p in parts] + [piece({}, "tool_calls"), "data: [DONE]\n\n"]})
    reply = Client(server.url).ask()
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == calls


def test_a_calls_opaque_fields_are_kept_and_sent_back_unchanged(server, stream):
    signature = {"google": {"thought_signature": "Cq8B+/x=="}}
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "exec", "arguments": "{}"},
        "extra_content": signature,
    }
    if stream:
        server.add({"sse": [piece({"tool_calls": [call | {"index": 0}]}, "tool_calls")]})
    else:
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        server.add(
            {
                "status": 200,
                "body": {"choices": [{"message": message, "finish_reason": "tool_calls"}]},
            }
        )
    client = Client(server.url, stream)
    (got,) = client.ask().tool_calls
    assert got.extra == {"extra_content": signature}
    history = [Reply("", (got,)).to_message()]
    assert client.provider.request_body("", history, [])["messages"][0]["tool_calls"] == [call]


def test_content_parts_without_streaming_are_read_too(server):
    message = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": "hm"}]},
            {"type": "text", "text": "4"},
        ],
    }
    server.add(
        {"status": 200, "body": {"choices": [{"message": message, "finish_reason": "stop"}]}}
    )
    reply = Client(server.url, stream=False).ask()
    assert (reply.text, reply.reasoning, reply.reasoning_field) == ("4", "hm", "")


def test_a_legacy_calls_result_is_a_function_message_only_after_that_call():
    from mdagent.providers.openai import to_openai_messages

    def turn(legacy: bool) -> list[dict]:
        call = {"id": "call_1", "name": "exec", "arguments": {}} | (
            {"legacy": True} if legacy else {}
        )
        result = {"role": "tool", "tool_call_id": "call_1", "name": "exec", "content": "{}"}
        return [{"role": "assistant", "content": "", "tool_calls": [call]}, result]

    wire = to_openai_messages([*turn(True), *turn(False)])
    assert [m["role"] for m in wire] == ["assistant", "function", "assistant", "tool"]
    assert wire[0]["function_call"] == {"name": "exec", "arguments": "{}"}
    assert "function_call" not in wire[2] and wire[2]["tool_calls"][0]["id"] == "call_1"


def test_tool_result_images_follow_the_results_of_their_call_as_image_parts():
    from mdagent.providers.openai import to_openai_messages

    image = {"mime": "image/png", "data": "QUJD"}
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "name": "shot", "arguments": {}},
            {"id": "b", "name": "other", "arguments": {}},
        ]},
        {"role": "tool", "tool_call_id": "a", "name": "shot", "content": "{}", "images": [image]},
        {"role": "tool", "tool_call_id": "b", "name": "other", "content": "{}"},
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip
    wire = to_openai_messages(messages)
    assert [m["role"] for m in wire] == ["user", "assistant", "tool", "tool", "user", "assistant"]
    assert wire[2] == {"role": "tool", "tool_call_id": "a", "content": "{}"}
    assert wire[4]["content"] == [
        {"type": "text", "text": "Images from shot:"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
    ]
    # The last message a tool result with an image: the images end the list.
    assert to_openai_messages(messages[:3])[-1]["role"] == "user"
