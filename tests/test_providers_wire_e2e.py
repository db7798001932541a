"""The real ``agent ask`` against the byte-exact streams real servers send (issue 13).

Every body here is built from the documented wire formats — OpenAI Chat
Completions chunks, Anthropic Messages events, and what Ollama, llama.cpp,
vLLM and OpenRouter put beside them (their servers' source and SDK fixtures) —
and served by tests/model_server.py exactly as written (``"sse"`` entries).
Each test asserts what the person sees, the exit status, what the next request
carried, and what the session store kept.
"""

from __future__ import annotations

import json
import re
import time
from email.utils import formatdate

import pytest

from conftest import settings
from mdagent.store.store import Store
from test_terminal_e2e import Terminal

# -- the wire formats ------------------------------------------------------------------


def compact(data: dict) -> str:
    # Servers send JSON without spaces (OpenAI, Anthropic, llama.cpp's dump(-1)).
    return json.dumps(data, separators=(",", ":"))


DONE = "data: [DONE]\n\n"
#: A duration as the display writes it (display.format_seconds): the event, whatever
#: the clock said on a busy machine.
DURATION = r"(?:\d+\.\d s|\d+ s|\d+ min \d+ s)"


def chunk(delta: dict | None = None, finish: str | None = None, **top) -> str:
    """One OpenAI ``chat.completion.chunk`` event."""
    body = {
        "id": "chatcmpl-9wire",
        "object": "chat.completion.chunk",
        "created": 1718000000,
        "model": "m",
        "system_fingerprint": "fp_1",
        "choices": [
            {
                "index": 0,
                "delta": {} if delta is None else delta,
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
    }
    return f"data: {compact(body | top)}\n\n"


def usage_chunk() -> str:
    """The last chunk with ``stream_options.include_usage``: no choices, only usage."""
    body = {
        "id": "chatcmpl-9wire",
        "object": "chat.completion.chunk",
        "created": 1718000000,
        "model": "m",
        "choices": [],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
    }
    return f"data: {compact(body)}\n\n"


def openai_stream(*pieces: str, finish: str = "stop", done: bool = True) -> list[str]:
    """A streamed answer: the role chunk, one chunk per piece, the finish, [DONE]."""
    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": p}) for p in pieces]
    events += [chunk({}, finish), usage_chunk()]
    return events + ([DONE] if done else [])


def completion(message: dict, finish: str = "stop") -> dict:
    """A non-streamed Chat Completions body."""
    return {
        "id": "chatcmpl-9wire",
        "object": "chat.completion",
        "created": 1718000000,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant"} | message, "finish_reason": finish}
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
    }


def event(name: str, data: dict) -> str:
    """One Anthropic event: ``event:`` line, ``data:`` line, blank line."""
    return f"event: {name}\ndata: {compact(data)}\n\n"


def message_start() -> str:
    message = {
        "id": "msg_01wire",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    }
    return event("message_start", {"type": "message_start", "message": message})


PING = event("ping", {"type": "ping"})


def block(index: int, content_block: dict, *deltas: dict) -> list[str]:
    """One content block: its start, its deltas, its stop."""
    start = {"type": "content_block_start", "index": index, "content_block": content_block}
    return [
        event("content_block_start", start),
        *[
            event(
                "content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}
            )
            for d in deltas
        ],
        event("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def text_block(index: int, *pieces: str) -> list[str]:
    return block(
        index, {"type": "text", "text": ""}, *[{"type": "text_delta", "text": p} for p in pieces]
    )


def message_end(stop_reason: str, output_tokens: int = 12) -> list[str]:
    delta = {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}}
    return [
        event("message_delta", delta | {"usage": {"output_tokens": output_tokens}}),
        event("message_stop", {"type": "message_stop"}),
    ]


def anthropic_stream(*pieces: str, stop: str = "end_turn") -> list[str]:
    return [message_start(), PING, *text_block(0, *pieces), *message_end(stop)]


def anthropic_message(content: list[dict], stop: str = "end_turn") -> dict:
    """A non-streamed Messages body."""
    return {
        "id": "msg_01wire",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 12},
    }


def body(data: dict) -> dict:
    """A server entry answering ``data`` as a 200 JSON body."""
    return {"status": 200, "body": data}


# -- running the agent ---------------------------------------------------------------------


def ask(run_agent, server, *args: str, api: str = "openai", env: dict | None = None):
    url = server.url if api == "openai" else server.anthropic_url
    return run_agent("--provider", api, "--base-url", url, "ask", *args, env=env)


def agent_lines(stderr: str) -> list[str]:
    """The ``agent: ...`` lines on stderr (messages, not tool lines)."""
    return [line for line in stderr.splitlines() if line.startswith("agent: ")]


def saved() -> list[dict]:
    """The messages of the latest session, as the store (SQLite in AGENT_STATE_DIR) kept them."""
    store = Store()
    return store.messages(store.latest_session())


def sent(server, index: int = -1) -> dict:
    return server.requests[index]["json"]


def endpoint(server, api: str = "openai") -> str:
    """The endpoint as failure messages name it: its URL and the provider."""
    if api == "openai":
        return f"{server.url}/chat/completions (openai)"
    return f"{server.anthropic_url}/v1/messages (anthropic)"


# -- 1. errors inside a stream are errors -----------------------------------------------

STREAM_ERRORS = {
    # llama.cpp: an `error:` SSE field, then data: [DONE] (server_sent_event(sink, "error", ...)).
    "llama.cpp": (
        "openai",
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Partial"}),
            "error: "
            + compact(
                {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                }
            )
            + "\n\n",
            DONE,
        ],
        "exceed_context_size_error: the request exceeds the available context size, "
        "try increasing it",
    ),
    # Ollama's OpenAI endpoint: the error JSON as a bare line, no data:, no [DONE].
    "ollama": (
        "openai",
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Partial"}),
            compact(
                {
                    "error": {
                        "message": "model runner has unexpectedly stopped",
                        "type": "api_error",
                        "param": None,
                        "code": None,
                    }
                }
            )
            + "\n",
        ],
        "model runner has unexpectedly stopped",
    ),
    # OpenRouter: comments while waiting, then an error object in a 200 stream.
    "openrouter": (
        "openai",
        [
            ": OPENROUTER PROCESSING\n\n",
            chunk({"role": "assistant", "content": "Partial"}),
            chunk(
                {"content": ""},
                "error",
                provider="openai",
                error={"code": 502, "message": "Provider disconnected unexpectedly"},
            ),
        ],
        "Provider disconnected unexpectedly",
    ),
    # OpenAI itself: an error object as the last data event.
    "openai": (
        "openai",
        [
            chunk({"role": "assistant", "content": "Partial", "refusal": None}),
            "data: "
            + compact(
                {
                    "error": {
                        "message": "The server had an error while processing your request.",
                        "type": "server_error",
                    }
                }
            )
            + "\n\n",
        ],
        "server_error: The server had an error while processing your request.",
    ),
    # vLLM (before ErrorInfo): {"object": "error", ...}, then data: [DONE].
    "vllm": (
        "openai",
        [
            chunk({"role": "assistant", "content": "Partial"}),
            "data: "
            + compact(
                {
                    "object": "error",
                    "message": "CUDA out of memory",
                    "type": "InternalServerError",
                    "param": None,
                    "code": 500,
                }
            )
            + "\n\n",
            DONE,
        ],
        "CUDA out of memory",
    ),
    # vLLM today: {"error": {...}} in a data event.
    "vllm-errorinfo": (
        "openai",
        [
            chunk({"role": "assistant", "content": "Partial"}),
            "data: "
            + compact(
                {
                    "error": {
                        "message": "prompt too long",
                        "type": "BadRequestError",
                        "param": None,
                        "code": 400,
                    }
                }
            )
            + "\n\n",
            DONE,
        ],
        "prompt too long",
    ),
    # Anthropic: `event: error` after the answer started.
    "anthropic": (
        "anthropic",
        [
            message_start(),
            PING,
            event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "Partial"},
                },
            ),
            event(
                "error",
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ),
        ],
        "overloaded_error: Overloaded",
    ),
}


@pytest.mark.parametrize("shape", sorted(STREAM_ERRORS))
def test_an_error_inside_a_stream_ends_the_turn_with_the_servers_words(shape, run_agent, server):
    api, pieces, words = STREAM_ERRORS[shape]
    server.add({"sse": pieces}, {"text": "a retry must not happen"})
    result = ask(run_agent, server, "hello", api=api)
    assert result.returncode == 1
    assert agent_lines(result.stderr) == [
        f"agent: the model server at {endpoint(server, api)} reported an error: {words}"
    ]
    assert result.stdout == "Partial\n"  # what had arrived, its line ended before the error
    assert len(server.requests) == 1  # shown to the person: never retried silently
    assert [m["role"] for m in saved()] == ["user"]  # no answer was saved


# -- 2. stop reasons are read -------------------------------------------------------------

CUT_BY_LIMIT = {
    "openai-stream": (
        "openai",
        True,
        {"sse": openai_stream("The first ", "half", finish="length")},
    ),
    "openai-json": (
        "openai",
        False,
        body(completion({"content": "The first half"}, "length")),
    ),
    "anthropic-stream": (
        "anthropic",
        True,
        {"sse": anthropic_stream("The first ", "half", stop="max_tokens")},
    ),
    "anthropic-json": (
        "anthropic",
        False,
        body(anthropic_message([{"type": "text", "text": "The first half"}], "max_tokens")),
    ),
}


@pytest.mark.parametrize("case", sorted(CUT_BY_LIMIT))
def test_an_answer_cut_off_by_the_token_limit_is_kept_and_said(case, run_agent, server, workspace):
    api, stream, entry = CUT_BY_LIMIT[case]
    settings(workspace, f"model:\n  max_tokens: 64\n  stream: {str(stream).lower()}\n")
    server.add(entry)
    result = ask(run_agent, server, "write a long essay", api=api)
    assert result.returncode == 1
    assert result.stdout == "The first half\n"
    assert agent_lines(result.stderr) == [
        "agent: the answer was cut off at the token limit (model.max_tokens: 64); raise "
        "model.max_tokens in agent.yaml, or continue with `agent ask --continue`"
    ]
    assert sent(server)["max_tokens"] == 64
    assert saved()[-1] == {"role": "assistant", "content": "The first half"}


def test_a_cut_off_answer_in_json_says_why(run_agent, server):
    server.add({"sse": openai_stream("The first half", finish="length")})
    result = ask(run_agent, server, "--json", "essay")
    data = json.loads(result.stdout)
    assert result.returncode == 1
    assert data["answer"] == "The first half" and data["stop_reason"] == "max_tokens"
    assert "model.max_tokens" in data["error"]


def test_a_tool_call_cut_off_by_the_limit_is_not_run_and_the_session_goes_on(
    run_agent, server, workspace
):
    tool_use = {"type": "tool_use", "id": "toolu_01cut", "name": "exec", "input": {}}
    server.add(
        {
            "sse": [
                message_start(),
                *text_block(0, "Creating it."),
                *block(
                    1,
                    tool_use,
                    {"type": "input_json_delta", "partial_json": '{"command": "touch '},
                    {"type": "input_json_delta", "partial_json": "made-by-a-cut"},
                ),
                *message_end("max_tokens"),
            ]
        },
        {"text": "Carrying on."},
    )
    first = ask(run_agent, server, "--yes", "make a file", api="anthropic")
    assert first.returncode == 1
    assert not (workspace / "made-by-a-cut").exists()
    assert agent_lines(first.stderr)[0].endswith("; its tool call was not run")
    second = ask(run_agent, server, "--continue", "go on", api="anthropic")
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Carrying on.\n"
    # The unrun call has its result, so the history is one the API accepts.
    result = sent(server)["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_01cut"
    assert result["is_error"] is True and "not run" in result["content"]


REFUSALS = {
    # OpenAI: the refusal streams in delta.refusal, finish_reason stop.
    "openai-stream": (
        "openai",
        True,
        {
            "sse": [
                chunk({"role": "assistant", "content": None, "refusal": ""}),
                chunk({"refusal": "I'm sorry, "}),
                chunk({"refusal": "I can't help with that."}),
                chunk({}, "stop"),
                DONE,
            ]
        },
        "I'm sorry, I can't help with that.",
    ),
    "openai-json": (
        "openai",
        False,
        body(completion({"content": None, "refusal": "I'm sorry, I can't help with that."})),
        "I'm sorry, I can't help with that.",
    ),
    # Anthropic: stop_reason refusal, here with no text at all.
    "anthropic-stream": (
        "anthropic",
        True,
        {"sse": [message_start(), PING, *message_end("refusal", 0)]},
        "",
    ),
    "anthropic-json": ("anthropic", False, body(anthropic_message([], "refusal")), ""),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refusal_is_shown_never_an_empty_success(case, run_agent, server, workspace):
    api, stream, entry, words = REFUSALS[case]
    settings(workspace, f"model:\n  stream: {str(stream).lower()}\n")
    server.add(entry)
    result = ask(run_agent, server, "do something bad", api=api)
    assert result.returncode == 1
    assert result.stdout == (f"{words}\n" if words else "")
    said = "agent: the model refused to answer" + ("" if words else " (it gave no reason)")
    assert agent_lines(result.stderr) == [said]
    assert saved()[-1]["content"] == words


def test_the_content_filter_is_said_with_what_arrived(run_agent, server):
    server.add({"sse": openai_stream("Here is how", finish="content_filter")})
    result = ask(run_agent, server, "hello")
    assert result.returncode == 1
    assert result.stdout == "Here is how\n"
    assert agent_lines(result.stderr) == [
        "agent: the provider's content filter stopped the answer (stop reason: content_filter)"
    ]


# -- 3. a complete answer is complete ------------------------------------------------------


def test_a_stream_that_ends_cleanly_after_its_finish_without_done_is_accepted(run_agent, server):
    server.add({"sse": openai_stream("Complete ", "answer.", done=False)})
    result = ask(run_agent, server, "hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Complete answer.\n"
    assert saved()[-1] == {"role": "assistant", "content": "Complete answer."}


def test_a_stream_that_ends_before_any_finish_is_cut_off(run_agent, server):
    server.add({"sse": [chunk({"role": "assistant", "content": "Half"})]})
    result = ask(run_agent, server, "hello")
    assert result.returncode == 1
    assert agent_lines(result.stderr) == [
        f"agent: the model's answer from {endpoint(server)} was cut off mid-stream"
    ]
    assert [m["role"] for m in saved()] == ["user"]


# -- 4. retry headers as the SDKs read them ------------------------------------------------


class Clock:
    """A script entry that notes when each request arrived, then answers ``entry``."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def __call__(self, entry: dict):
        def answer(_request: dict) -> dict:
            self.times.append(time.monotonic())
            return entry

        return answer


def test_retry_after_ms_comes_before_retry_after(run_agent, server):
    clock = Clock()
    server.add(
        clock({"status": 429, "headers": {"retry-after-ms": "300", "retry-after": "3600"}}),
        clock({"text": "ok"}),
    )
    # The hour of retry-after would outlast the run's time limit: answered at all
    # means retry-after-ms was read; a wait is never shorter than asked, however busy.
    result = ask(run_agent, server, "hello")
    assert result.returncode == 0, result.stderr
    assert clock.times[1] - clock.times[0] >= 0.25


def test_retry_after_as_an_http_date(run_agent, server):
    clock = Clock()
    # Dated well ahead: the date is fixed before the agent starts, and a busy
    # machine may take seconds to start it.
    when = formatdate(time.time() + 6, usegmt=True)
    server.add(clock({"status": 503, "headers": {"Retry-After": when}}), clock({"text": "ok"}))
    result = ask(run_agent, server, "hello")
    assert result.returncode == 0, result.stderr
    assert clock.times[1] - clock.times[0] >= 0.5  # waited for the date, never less


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 529])
def test_statuses_the_sdks_retry_are_retried(status, run_agent, server):
    server.add({"status": status, "headers": {"retry-after-ms": "10"}}, {"text": "ok"})
    result = ask(run_agent, server, "hello", api="anthropic")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n" and len(server.requests) == 2


def test_x_should_retry_false_is_obeyed(run_agent, server):
    server.add({"status": 503, "headers": {"x-should-retry": "false"}}, {"text": "never"})
    result = ask(run_agent, server, "hello")
    assert result.returncode == 1
    assert agent_lines(result.stderr) == [
        f"agent: server error (HTTP 503) from {endpoint(server)} after 0 retries: scripted HTTP 503"
    ]
    assert len(server.requests) == 1


def test_a_bad_request_is_not_retried(run_agent, server):
    server.add({"status": 400, "message": "messages: field required"}, {"text": "never"})
    result = ask(run_agent, server, "hello")
    assert result.returncode == 1 and len(server.requests) == 1
    assert agent_lines(result.stderr)[0].endswith("messages: field required")


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_reset_right_after_the_headers_is_retried(api, run_agent, server):
    server.add({"sse": [], "end": "reset", "gap": 0.2}, {"text": "second try"})
    result = ask(run_agent, server, "hello", api=api)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "second try\n" and len(server.requests) == 2
    assert [m["role"] for m in saved()] == ["user", "assistant"]


@pytest.mark.parametrize("end", ["reset", "close"])
def test_a_stream_that_breaks_after_text_was_shown_is_not_retried(end, run_agent, server):
    pieces = [chunk({"role": "assistant", "content": ""}), chunk({"content": "Half an ans"})]
    server.add({"sse": pieces, "end": end}, {"text": "never"})
    result = ask(run_agent, server, "hello")
    assert result.returncode == 1
    assert result.stdout == "Half an ans\n"
    assert agent_lines(result.stderr) == [
        f"agent: the model's answer from {endpoint(server)} was cut off mid-stream"
    ]
    assert len(server.requests) == 1


def test_a_retry_is_shown_on_the_terminal(server, workspace):
    server.add({"status": 429, "headers": {"retry-after-ms": "200"}}, {"text": "ok"})
    with Terminal(
        "--provider", "openai", "--base-url", server.url, "ask", "go", cwd=workspace
    ) as term:
        assert term.wait(timeout=20) == 0
        assert (
            "agent: the model server answered HTTP 429 (too many requests); "
            "retrying in 0.2 s (1 of 3)"
        ) in term.text.splitlines()


# -- 5. extended thinking round-trips -----------------------------------------------------

SECRET = "tok-4f9a8b7c6d5e4f3a2b1c"
THOUGHT = f"The user wants a file listing. The deploy token {SECRET} is not needed."
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+Gz/dt/signed=="
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"


def thinking_reply() -> list[str]:
    """Thinking (in pieces, then its signature), a redacted block, text, a tool call."""
    return [
        message_start(),
        PING,
        *block(
            0,
            {"type": "thinking", "thinking": "", "signature": ""},
            {"type": "thinking_delta", "thinking": THOUGHT[:30]},
            {"type": "thinking_delta", "thinking": THOUGHT[30:]},
            {"type": "signature_delta", "signature": SIGNATURE},
        ),
        *block(1, {"type": "redacted_thinking", "data": REDACTED}),
        *text_block(2, "Listing."),
        *block(
            3,
            {"type": "tool_use", "id": "toolu_01think", "name": "exec", "input": {}},
            {"type": "input_json_delta", "partial_json": '{"command": "echo listed"}'},
        ),
        *message_end("tool_use"),
    ]


THINKING = {"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE}
REDACTED_BLOCK = {"type": "redacted_thinking", "data": REDACTED}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_thinking_blocks_go_back_unchanged_in_the_turn_and_after_continue(
    stream, run_agent, server, workspace
):
    settings(
        workspace, f"model:\n  stream: {str(stream).lower()}\n  thinking: {{budget_tokens: 2048}}\n"
    )
    first = (
        {"sse": thinking_reply()}
        if stream
        else body(
            anthropic_message(
                [
                    THINKING,
                    REDACTED_BLOCK,
                    {"type": "text", "text": "Listing."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01think",
                        "name": "exec",
                        "input": {"command": "echo listed"},
                    },
                ],
                "tool_use",
            )
        )
    )
    server.add(first, {"text": "Done."}, {"text": "Again."})
    env = {"DEPLOY_TOKEN": SECRET}
    result = ask(run_agent, server, "--yes", "list", api="anthropic", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Listing.\nDone.\n"  # the thinking is not the answer
    assert sent(server, 0)["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    expected = [
        THINKING,
        REDACTED_BLOCK,
        {"type": "text", "text": "Listing."},
        {
            "type": "tool_use",
            "id": "toolu_01think",
            "name": "exec",
            "input": {"command": "echo listed"},
        },
    ]
    assert sent(server, 1)["messages"][1] == {"role": "assistant", "content": expected}
    # Kept byte for byte, the secret inside the signed thinking included (it is signed:
    # a redacted copy would be rejected), while the rest of the session is redacted.
    stored = saved()
    assert stored[1]["thinking"] == [THINKING, REDACTED_BLOCK]
    again = ask(run_agent, server, "--continue", f"and {SECRET}?", api="anthropic", env=env)
    assert again.returncode == 0, again.stderr
    assert sent(server, 2)["messages"][1] == {"role": "assistant", "content": expected}
    assert SECRET not in json.dumps(saved()[-2])  # the user's own words are redacted


def test_a_thinking_budget_must_fit_in_max_tokens(run_agent, server, workspace):
    settings(workspace, "model:\n  max_tokens: 4096\n  thinking: {budget_tokens: 8192}\n")
    result = ask(run_agent, server, "hello", api="anthropic")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "agent: model.thinking.budget_tokens (8192) must be less than model.max_tokens (4096): "
        "the thinking counts toward the limit"
    ]
    assert server.requests == []


REASONING = {
    # DeepSeek, vLLM and llama.cpp: delta.reasoning_content.
    "reasoning_content-stream": {
        "sse": [
            chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
            chunk({"reasoning_content": "Two plus two "}),
            chunk({"reasoning_content": "is four."}),
            chunk({"content": "4"}),
            chunk({}, "stop"),
            DONE,
        ]
    },
    # Ollama's OpenAI endpoint (and OpenRouter): delta.reasoning.
    "reasoning-stream": {
        "sse": [
            chunk({"role": "assistant", "content": "", "reasoning": "Two plus two "}),
            chunk({"content": "", "reasoning": "is four."}),
            chunk({"content": "4"}),
            chunk({"content": ""}, "stop"),
            DONE,
        ]
    },
    "reasoning_content-json": body(
        completion({"content": "4", "reasoning_content": "Two plus two is four."})
    ),
}


@pytest.mark.parametrize("case", sorted(REASONING))
def test_reasoning_is_never_the_answer(case, run_agent, server):
    server.add(REASONING[case], {"text": "8"})
    result = ask(run_agent, server, "--json", "2+2?")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["answer"] == "4"
    assert "Two plus two" not in result.stdout + result.stderr  # no terminal: not shown
    assert saved()[-1] == {
        "role": "assistant",
        "content": "4",
        "reasoning": "Two plus two is four.",
        "reasoning_field": case.split("-")[0],
    }
    again = ask(run_agent, server, "--continue", "and 4+4?")
    assert again.stdout == "8\n"
    # Kept for the record; a turn without tool calls does not send it back
    # (DeepSeek ignores it there, OpenAI-style servers want none).
    assert sent(server)["messages"][2] == {"role": "assistant", "content": "4"}


def test_reasoning_is_shown_dimmed_on_the_terminal_apart_from_the_answer(server, workspace):
    server.add(REASONING["reasoning_content-stream"])
    with Terminal(
        "--provider", "openai", "--base-url", server.url, "ask", "go", cwd=workspace
    ) as term:
        assert term.wait(timeout=20) == 0
        raw = term.raw.decode()
    assert "\x1b[2mTwo plus two \x1b[0m\x1b[2mis four.\x1b[0m" in raw
    assert "Two plus two is four.\n4" in term.text  # the answer on a line of its own


# -- 6. tool results carry their outcome -----------------------------------------------------


def test_each_call_shows_its_outcome_and_a_failure_is_an_error_result(run_agent, server):
    server.add(
        {
            "tool_calls": [
                {"name": "exec", "arguments": {"command": "echo fine"}, "id": "toolu_ok"},
                {"name": "exec", "arguments": {"command": "exit 3"}, "id": "toolu_bad"},
            ]
        },
        {"text": "One worked."},
    )
    result = ask(run_agent, server, "--yes", "try both", api="anthropic")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "→ exec  echo fine"
    assert re.fullmatch(rf"  ✓ exec · exit 0 · {DURATION}", lines[1])
    assert lines[2] == "→ exec  exit 3"
    assert re.fullmatch(rf"  ✗ exec · exit 3 · {DURATION}", lines[3])
    ok, bad = sent(server)["messages"][2]["content"]
    assert ok["tool_use_id"] == "toolu_ok" and "is_error" not in ok
    assert bad["tool_use_id"] == "toolu_bad" and bad["is_error"] is True
    assert [m.get("is_error") for m in saved() if m["role"] == "tool"] == [None, True]


def test_a_refused_call_shows_its_error_code(run_agent, server, workspace):
    server.add(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
        {"text": "Could not."},
    )
    result = ask(run_agent, server, "write it")
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "✗" in line]
    assert re.fullmatch(rf"  ✗ write_file needs approval: .*--yes.* · DENIED · {DURATION}", line)
    assert not (workspace / "a.txt").exists()


def test_a_long_call_shows_that_it_is_running(server, workspace):
    server.add(
        {"tool_calls": [{"name": "exec", "arguments": {"command": "sleep 2.5"}}]},
        {"text": "Slept."},
    )
    with Terminal(
        "--provider", "openai", "--base-url", server.url, "ask", "--yes", "go", cwd=workspace
    ) as term:
        # The spinner's line shows while the call runs (after a second of it),
        # then the outcome's; what the clock reads on a busy machine is not asserted.
        term.expect(rf"running exec · {DURATION}", timeout=60)
        assert term.wait(timeout=60) == 0
    assert re.search(rf"^  ✓ exec · exit 0 · {DURATION}$", term.text, re.MULTILINE)
    assert term.stream.index("running exec") < term.stream.index("✓ exec")


# -- 7. deadlines that mean something ----------------------------------------------------------

KEEPALIVES = {
    "anthropic-pings": ("anthropic", [message_start()] + [PING] * 300),
    "sse-comments": (
        "openai",
        [chunk({"role": "assistant", "content": ""})] + [": keep-alive\n\n"] * 300,
    ),
}


@pytest.mark.parametrize("case", sorted(KEEPALIVES))
def test_keepalives_alone_do_not_keep_a_request_alive(case, run_agent, server, workspace):
    api, pieces = KEEPALIVES[case]
    settings(workspace, "model:\n  timeout: 1\n")
    server.add({"sse": pieces, "gap": 0.1})  # 30 s of keep-alives if nobody hangs up
    result = ask(run_agent, server, "hello", api=api)
    assert result.returncode == 1
    (line,) = agent_lines(result.stderr)
    assert re.fullmatch(
        r"agent: timed out: http://127\.0\.0\.1:\d+/\S+ \((openai|anthropic)\) sent only "
        r"keep-alives, no data, for 1 s \(model\.timeout\)",
        line,
    )


def test_a_slow_steady_answer_is_not_cut_by_the_idle_limit(run_agent, server, workspace):
    settings(workspace, "model:\n  timeout: 1\n")
    words = [f"w{n} " for n in range(10)]
    server.add({"sse": openai_stream(*words), "gap": 0.3})  # ~4 s in all, 0.3 s apart
    result = ask(run_agent, server, "hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "".join(words) + "\n"


def test_request_timeout_bounds_a_whole_request(run_agent, server, workspace):
    settings(workspace, "model:\n  timeout: 5\n  request_timeout: 1\n")
    server.add({"sse": openai_stream(*["more "] * 300), "gap": 0.1})
    result = ask(run_agent, server, "hello")
    assert result.returncode == 1
    (line,) = agent_lines(result.stderr)
    assert re.fullmatch(
        r"agent: timed out: the request to http://\S+ \(openai\) took longer than 1 s "
        r"\(model\.request_timeout\)",
        line,
    )
