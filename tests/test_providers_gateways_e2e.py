"""The real ``agent ask`` against gateways, reasoning servers and proxies (issue 32).

The second set of recorded shapes: what older gateways, DeepSeek's thinking
mode, Gemini and Mistral through their OpenAI-compatible endpoints, Anthropic
server tools and the proxies in front of them send. Every body is built from
the documented wire formats (the providers' API references and the threads
where users recorded them) and served byte for byte by tests/model_server.py.
Each test asserts what ran, what the person sees, the exit status, and the
exact follow-up request: what a server needs back is there byte for byte, and
nothing is sent where it must not go.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import settings, write
from model_server import unused_port
from test_providers_wire_e2e import (
    DONE,
    PING,
    agent_lines,
    anthropic_message,
    ask,
    block,
    body,
    chunk,
    compact,
    completion,
    endpoint,
    event,
    message_end,
    message_start,
    saved,
    sent,
    text_block,
    usage_chunk,
)


def history(server, index: int = -1) -> list[dict]:
    """The messages of request ``index`` after the system prompt (OpenAI dialect)."""
    return [m for m in sent(server, index)["messages"] if m["role"] != "system"]


def last_line(stderr: str) -> str:
    lines = stderr.splitlines()
    return lines[-1] if lines else ""


def tool_lines(stderr: str) -> list[str]:
    """The ``→ tool  args`` lines: the calls that were run (or refused)."""
    return [line for line in stderr.splitlines() if line.startswith("→ ")]


# -- 1. legacy function_call: one tool call, run, and answered in its own form -------------

LEGACY_COMMAND = "echo legacy-ran > made.txt"
LEGACY_ARGUMENTS = json.dumps({"command": LEGACY_COMMAND})

LEGACY = {
    # Streamed: delta.function_call pieces, finish_reason "function_call" (no tool_calls).
    "stream": {
        "sse": [
            chunk({"role": "assistant", "content": None, "function_call": {"name": "exec"}}),
            chunk({"function_call": {"arguments": LEGACY_ARGUMENTS[:12]}}),
            chunk({"function_call": {"arguments": LEGACY_ARGUMENTS[12:]}}),
            chunk({}, "function_call"),
            usage_chunk(),
            DONE,
        ]
    },
    # Not streamed: message.function_call.
    "json": body(
        completion(
            {
                "content": None,
                "function_call": {"name": "exec", "arguments": LEGACY_ARGUMENTS},
            },
            "function_call",
        )
    ),
}


@pytest.mark.parametrize("case", sorted(LEGACY))
def test_a_legacy_function_call_runs_and_goes_back_in_its_own_form(
    case, run_agent, server, workspace
):
    settings(workspace, f"model:\n  stream: {str(case == 'stream').lower()}\n")
    server.add(LEGACY[case], {"text": "Made it."}, {"text": "Still here."})
    result = ask(run_agent, server, "--yes", "make a file")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Made it.\n"
    assert tool_lines(result.stderr) == [f"→ exec  {LEGACY_COMMAND}"]
    assert (workspace / "made.txt").read_text() == "legacy-ran\n"
    user, call, answer = history(server, 1)
    assert call == {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "exec", "arguments": LEGACY_ARGUMENTS},
    }
    assert answer["role"] == "function" and answer["name"] == "exec"
    assert json.loads(answer["content"])["exit_code"] == 0
    assert "tool_call_id" not in answer
    assert [m["role"] for m in saved()] == ["user", "assistant", "tool", "assistant"]
    # The session keeps the form, so --continue sends it the same way.
    again = ask(run_agent, server, "--continue", "still there?")
    assert again.returncode == 0, again.stderr
    assert history(server)[1:3] == [call, answer]


UNREAD = {
    # The finish says a tool was called; nothing in the stream is a call mdagent reads.
    "finish-without-call": (
        [chunk({"role": "assistant", "content": None}), chunk({}, "tool_calls"), DONE],
        "finish_reason 'tool_calls' but no tool call it can read",
    ),
    # An answer only in a field mdagent does not know (a Responses-style payload).
    "unknown-field": (
        [
            chunk({"role": "assistant", "content": None}),
            chunk({"output": [{"type": "message", "content": [{"text": "hidden"}]}]}),
            chunk({}, "stop"),
            DONE,
        ],
        "only output",
    ),
}


@pytest.mark.parametrize("case", sorted(UNREAD))
def test_an_answer_in_a_form_mdagent_does_not_read_is_said_not_taken_for_empty(
    case, run_agent, server
):
    pieces, detail = UNREAD[case]
    server.add({"sse": pieces})
    result = ask(run_agent, server, "--yes", "hello")
    assert result.returncode == 1
    assert result.stdout == ""
    assert agent_lines(result.stderr) == [
        f"agent: the model server at {endpoint(server)} answered in a form mdagent does not "
        f"read ({detail}); nothing was run"
    ]
    assert [m["role"] for m in saved()] == ["user"]  # no empty answer stored


# -- 2. tool-call pieces without index or id (Gemini behind a proxy) --------------------------

SIGNATURE = "CsIBAdHtim+8cZ0Ww2Qz/9s1gNfT4Kx0YyQ6hVb7Wg3+Q1e0q2Qx5r0b6c/aN1+ZQ=="
GEMINI_EXTRA = {"google": {"thought_signature": SIGNATURE}}


def gemini_call(name: str, arguments: dict, **extra) -> dict:
    """A whole call as Gemini's OpenAI endpoint streams it behind a proxy: no index,
    an empty id and type, the arguments in one piece."""
    call = {"id": "", "type": "", "function": {"name": name, "arguments": compact(arguments)}}
    return call | extra


SPLITS = {
    # Two whole calls in one chunk, told apart only by their names.
    "gemini-proxy": (
        [
            chunk(
                {
                    "role": "assistant",
                    "tool_calls": [
                        gemini_call("read_file", {"path": "hello.txt"}, extra_content=GEMINI_EXTRA),
                        gemini_call("glob", {"pattern": "*.md"}),
                    ],
                }
            ),
            chunk({}, "tool_calls"),
            DONE,
        ],
        ["read_file", "glob"],
    ),
    # A gateway repeating the name in every piece of one call, with an index.
    "name-repeated-with-index": (
        [
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_g1",
                            "function": {"name": "read_file", "arguments": '{"path": '},
                        }
                    ]
                }
            ),
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "function": {"name": "read_file", "arguments": '"hello.txt"}'}}
                    ]
                }
            ),
            chunk({}, "tool_calls"),
            DONE,
        ],
        ["read_file"],
    ),
    # ... or with its id, and no index.
    "name-repeated-with-id": (
        [
            chunk(
                {
                    "tool_calls": [
                        {
                            "id": "call_g1",
                            "function": {"name": "read_file", "arguments": '{"path": '},
                        }
                    ]
                }
            ),
            chunk(
                {
                    "tool_calls": [
                        {
                            "id": "call_g1",
                            "function": {"name": "read_file", "arguments": '"hello.txt"}'},
                        }
                    ]
                }
            ),
            chunk({}, "tool_calls"),
            DONE,
        ],
        ["read_file"],
    ),
}


@pytest.mark.parametrize("case", sorted(SPLITS))
def test_tool_call_pieces_without_an_index_are_told_apart_by_id_then_by_name(
    case, run_agent, server, workspace
):
    write(workspace / "hello.txt", "hello from a file\n")
    write(workspace / "notes.md", "# notes\n")
    pieces, names = SPLITS[case]
    server.add({"sse": pieces}, {"text": "Read."})
    result = ask(run_agent, server, "--yes", "look around")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Read.\n"
    assert [line.split()[1] for line in tool_lines(result.stderr)] == names
    assert "not valid JSON" not in json.dumps(sent(server))
    results = [m for m in history(server) if m["role"] == "tool"]
    assert "hello from a file" in results[0]["content"]
    if "glob" in names:
        assert "notes.md" in results[1]["content"]


GEMINI_REFUSAL = (
    "Function call is missing a thought_signature in functionCall parts. This is required "
    "for tools to work correctly, and missing thought_signature may lead to degraded model "
    "performance."
)


def gemini(request: dict) -> dict:
    """Gemini 3's check: every assistant tool-call turn carries its first call's
    thought signature, unchanged, or the request is refused (HTTP 400)."""
    for message in request["messages"]:
        calls = message.get("tool_calls") or []
        signature = (calls[0].get("extra_content") or {}).get("google", {}) if calls else {}
        if calls and signature.get("thought_signature") != SIGNATURE:
            return {
                "status": 400,
                "body": [
                    {
                        "error": {
                            "code": 400,
                            "message": GEMINI_REFUSAL,
                            "status": "INVALID_ARGUMENT",
                        }
                    }
                ],
            }
    return {"text": "Both read."}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_gemini_thought_signatures_go_back_byte_for_byte_and_after_continue(
    stream, run_agent, server, workspace
):
    settings(workspace, f"model:\n  stream: {str(stream).lower()}\n")
    write(workspace / "hello.txt", "hello from a file\n")
    write(workspace / "notes.md", "# notes\n")
    calls = [
        gemini_call("read_file", {"path": "hello.txt"}, extra_content=GEMINI_EXTRA),
        gemini_call("glob", {"pattern": "*.md"}),
    ]
    first = (
        {"sse": SPLITS["gemini-proxy"][0]}
        if stream
        else body(completion({"content": None, "tool_calls": calls}, "tool_calls"))
    )
    server.add(first, gemini, gemini)
    result = ask(run_agent, server, "--yes", "read them")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Both read.\n"
    expected = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "extra_content": GEMINI_EXTRA,
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "hello.txt"}'},
            },
            # The second call had no signature: none is made up for it.
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "glob", "arguments": '{"pattern": "*.md"}'},
            },
        ],
    }
    assert history(server, 1)[1] == expected
    assert saved()[1]["tool_calls"][0]["extra"] == {"extra_content": GEMINI_EXTRA}
    again = ask(run_agent, server, "--continue", "again?")
    assert again.returncode == 0, again.stderr
    assert history(server, 2)[1] == expected  # from the session store


def test_a_lost_signature_is_the_servers_400_naming_the_endpoint(run_agent, server):
    server.add(
        {"tool_calls": [{"name": "exec", "arguments": {"command": "true"}}]},
        gemini,  # the first call came without a signature, so none goes back
    )
    result = ask(run_agent, server, "--yes", "run")
    assert result.returncode == 1
    assert last_line(result.stderr) == (
        f"agent: request rejected (HTTP 400) by {endpoint(server)}: {GEMINI_REFUSAL}"
    )


# -- 3. DeepSeek thinking mode: reasoning_content goes back on tool-call turns ----------------

THOUGHT = "The user wants the date. I will run date -u, then read the answer."
FINAL_THOUGHT = "The command printed it; answer plainly."


def reasoning_turn(field: str, thought: str, *deltas: dict, finish: str) -> list[str]:
    """A DeepSeek-style stream: the reasoning in two pieces, then ``deltas``."""
    return [
        chunk({"role": "assistant", "content": None, field: ""}),
        chunk({field: thought[:20]}),
        chunk({field: thought[20:]}),
        *[chunk(d) for d in deltas],
        chunk({}, finish),
        usage_chunk(),
        DONE,
    ]


def thinking_call(field: str) -> list[str]:
    call = {
        "index": 0,
        "id": "call_00_Ds4kWq",
        "type": "function",
        "function": {"name": "exec", "arguments": compact({"command": "echo 2026-01-01"})},
    }
    return reasoning_turn(field, THOUGHT, {"tool_calls": [call]}, finish="tool_calls")


def thinking_answer(field: str) -> list[str]:
    return reasoning_turn(field, FINAL_THOUGHT, {"content": "It is 2026-01-01."}, finish="stop")


DEEPSEEK_REFUSAL = "The reasoning_content in the thinking mode must be passed back to the API."


def deepseek(answer: dict):
    """DeepSeek's check in thinking mode: every assistant turn with tool calls
    carries its reasoning_content, or the request is refused (HTTP 400)."""

    def check(request: dict) -> dict:
        for message in request["messages"]:
            if message.get("tool_calls") and not message.get("reasoning_content"):
                return {
                    "status": 400,
                    "body": {
                        "error": {
                            "message": DEEPSEEK_REFUSAL,
                            "type": "invalid_request_error",
                            "param": None,
                            "code": "invalid_request_error",
                        }
                    },
                }
        return answer

    return check


@pytest.mark.parametrize(
    "mode, field, on_call, on_answer",
    [
        (None, "reasoning_content", True, False),  # DeepSeek, detected
        ("echo", "reasoning_content", True, True),
        (None, "reasoning", False, False),  # Ollama, OpenRouter: not detected
        ("echo", "reasoning", True, True),
    ],
    ids=["detected", "echo", "ollama", "ollama-echo"],
)
def test_reasoning_goes_back_where_the_server_needs_it_and_after_continue(
    mode, field, on_call, on_answer, run_agent, server, workspace
):
    if mode:
        settings(workspace, f"model:\n  reasoning: {mode}\n")
    server.add(
        {"sse": thinking_call(field)},
        {"sse": thinking_answer(field)},
        {"text": "Yes."},
    )
    result = ask(run_agent, server, "--yes", "what date is it?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "It is 2026-01-01.\n"
    assert THOUGHT[:20] not in result.stdout + result.stderr  # not a terminal: not shown
    assert tool_lines(result.stderr) == ["→ exec  echo 2026-01-01"]
    call_turn = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_00_Ds4kWq",
                "type": "function",
                "function": {"name": "exec", "arguments": '{"command": "echo 2026-01-01"}'},
            }
        ],
    }
    if on_call:
        call_turn[field] = THOUGHT
    assert history(server, 1)[1] == call_turn
    assert saved()[1]["reasoning"] == THOUGHT and saved()[1]["reasoning_field"] == field
    again = ask(run_agent, server, "--continue", "sure?")
    assert again.returncode == 0, again.stderr
    again_sent = history(server, 2)
    assert again_sent[1] == call_turn  # the session kept it, so --continue sends it too
    answer_turn = {"role": "assistant", "content": "It is 2026-01-01."}
    if on_answer:
        answer_turn[field] = FINAL_THOUGHT
    assert again_sent[3] == answer_turn


def test_deepseek_accepts_the_follow_up_and_refuses_it_with_reasoning_dropped(
    run_agent, server, workspace
):
    done = {"sse": thinking_answer("reasoning_content")}
    server.add({"sse": thinking_call("reasoning_content")}, deepseek(done))
    result = ask(run_agent, server, "--yes", "what date is it?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "It is 2026-01-01.\n"
    # model.reasoning: drop overrides the detection: DeepSeek refuses the follow-up.
    settings(workspace, "model:\n  reasoning: drop\n")
    server.add({"sse": thinking_call("reasoning_content")}, deepseek(done))
    dropped = ask(run_agent, server, "--yes", "and now?")
    assert dropped.returncode == 1
    assert "reasoning_content" not in json.dumps(history(server))
    assert last_line(dropped.stderr) == (
        f"agent: request rejected (HTTP 400) by {endpoint(server)}: {DEEPSEEK_REFUSAL}"
    )


def test_a_reasoning_setting_that_is_neither_echo_nor_drop_is_refused(run_agent, server, workspace):
    settings(workspace, "model:\n  reasoning: always\n")
    result = ask(run_agent, server, "hello")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "agent.yaml:2" in line and "reasoning" in line
    assert server.requests == []


# -- 4. Mistral: content as typed parts -------------------------------------------------------


def test_mistral_thinking_parts_are_reasoning_and_text_parts_the_answer(run_agent, server):
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "Two and two "}]}
    server.add(
        {
            "sse": [
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": [thinking]}),
                chunk({"content": [{"type": "thinking", "thinking": [{"text": "make four."}]}]}),
                chunk({"content": [{"type": "text", "text": "4"}]}),
                chunk({"content": ""}, "stop"),
                DONE,
            ]
        }
    )
    result = ask(run_agent, server, "--json", "2+2?")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["answer"] == "4"
    assert saved()[-1] == {
        "role": "assistant",
        "content": "4",
        "reasoning": "Two and two make four.",
    }


# -- 5. Anthropic pause_turn with server-tool blocks --------------------------------------------

ENCRYPTED = "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2MSDIrXQ8mU=="
SEARCH_USE = {
    "type": "server_tool_use",
    "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
    "name": "web_search",
    "input": {"query": "mdagent latest release"},
}
SEARCH_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
    "content": [
        {
            "type": "web_search_result",
            "title": "mdagent releases",
            "url": "https://example.org/mdagent/releases",
            "encrypted_content": ENCRYPTED,
            "page_age": "April 30, 2026",
        }
    ],
}
PAUSED = [{"type": "text", "text": "Let me look that up. "}, SEARCH_USE, SEARCH_RESULT]


def paused_stream() -> list[str]:
    """Text, a server tool's call (input streamed as JSON) and its result, then pause_turn."""
    use_start = SEARCH_USE | {"input": {}}
    return [
        message_start(),
        PING,
        *text_block(0, "Let me look ", "that up. "),
        *block(
            1,
            use_start,
            {"type": "input_json_delta", "partial_json": '{"query": "mdagent'},
            {"type": "input_json_delta", "partial_json": ' latest release"}'},
        ),
        *block(2, SEARCH_RESULT),
        *message_end("pause_turn"),
    ]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_a_paused_turn_is_sent_back_as_it_is_and_the_model_goes_on(
    stream, run_agent, server, workspace
):
    settings(workspace, f"model:\n  stream: {str(stream).lower()}\n")
    first = {"sse": paused_stream()} if stream else body(anthropic_message(PAUSED, "pause_turn"))
    server.add(first, {"text": "The latest release is 1.2."}, {"text": "Yes."})
    result = ask(run_agent, server, "--json", "what is the latest release?", api="anthropic")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["answer"] == "Let me look that up. The latest release is 1.2."
    assert data["steps"] == 2 and data["tool_calls"] == []  # the server ran its own tool
    assert len(server.requests) == 2
    # The paused content goes back exactly, and no user message is added to it.
    user, paused = sent(server, 1)["messages"]
    assert user == sent(server, 0)["messages"][0]
    assert paused == {"role": "assistant", "content": PAUSED}
    # --continue: the paused turn and its continuation are one assistant message.
    again = ask(run_agent, server, "--continue", "sure?", api="anthropic")
    assert again.returncode == 0, again.stderr
    assert sent(server, 2)["messages"][1] == {
        "role": "assistant",
        "content": [*PAUSED, {"type": "text", "text": "The latest release is 1.2."}],
    }


def test_a_paused_turn_shows_its_text_as_it_arrives(run_agent, server):
    server.add({"sse": paused_stream()}, {"text": "It is 1.2."})
    result = ask(run_agent, server, "latest?", api="anthropic")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Let me look that up. It is 1.2.\n"
    assert [m["role"] for m in saved()] == ["user", "assistant", "assistant"]
    assert saved()[1]["blocks"] == PAUSED


def test_a_server_that_pauses_forever_stops_at_the_step_limit(run_agent, server, workspace):
    settings(workspace, "agent:\n  max_steps: 3\n")
    server.add(*[{"sse": paused_stream()}] * 4)
    result = ask(run_agent, server, "latest?", api="anthropic")
    assert result.returncode == 3  # the step limit's own status
    assert len(server.requests) == 3
    assert last_line(result.stderr) == (
        "agent: stopped after 3 steps without a final answer; raise agent.max_steps or "
        "continue with `agent ask --continue`"
    )


# -- 6. what a proxy's error page says ---------------------------------------------------------

NGINX_413 = (
    "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n"
    "<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)
NGINX_502 = NGINX_413.replace("413 Request Entity Too Large", "502 Bad Gateway")
CLOUDFLARE_524 = (
    '<!DOCTYPE html>\n<!--[if lt IE 7]> <html class="no-js ie6 oldie" lang="en-US"> '
    '<![endif]-->\n<html lang="en-US"><head>\n<title>api.example.com &#124; 524: A timeout '
    'occurred</title>\n<meta charset="UTF-8" /></head><body><h1>A timeout occurred</h1>'
    "</body></html>"
)
HTML = {"Content-Type": "text/html"}

PROXY_PAGES = {
    "nginx-413": (
        [{"status": 413, "headers": HTML, "body": NGINX_413}],
        "request rejected (HTTP 413) by {where}: 413 Request Entity Too Large",
    ),
    "nginx-502-after-retries": (
        [{"status": 502, "headers": HTML | {"retry-after-ms": "1"}, "body": NGINX_502}] * 4,
        "server error (HTTP 502) from {where} after 3 retries: 502 Bad Gateway",
    ),
    "cloudflare-524-no-content-type": (
        [{"status": 524, "headers": {"x-should-retry": "false"}, "body": CLOUDFLARE_524}],
        "server error (HTTP 524) from {where} after 0 retries: "
        "api.example.com | 524: A timeout occurred",
    ),
    "litellm-json": (
        [
            {
                "status": 400,
                "body": {
                    "error": {
                        "message": "litellm.BadRequestError: model 'x' is not in the allowed list",
                        "type": None,
                        "param": None,
                        "code": "400",
                    }
                },
            }
        ],
        "request rejected (HTTP 400) by {where}: "
        "litellm.BadRequestError: model 'x' is not in the allowed list",
    ),
    "detail-json": (
        [{"status": 404, "body": {"detail": "Not Found"}}],
        "model or URL not found (HTTP 404): model 'gpt-4o-mini' at {where}: Not Found",
    ),
    "login-page-with-200": (
        [
            {
                "status": 200,
                "headers": HTML,
                "body": "<!doctype html><html><head><title>Sign in - Corp Proxy</title>"
                "</head><body><form></form></body></html>",
            }
        ],
        "the answer from {where} is a web page, not JSON: Sign in - Corp Proxy",
    ),
}


@pytest.mark.parametrize("case", sorted(PROXY_PAGES))
def test_a_proxys_error_page_is_its_status_and_title_not_its_html(case, run_agent, server):
    entries, said = PROXY_PAGES[case]
    server.add(*entries)
    result = ask(run_agent, server, "hello")
    assert result.returncode == 1
    assert result.stdout == ""
    assert agent_lines(result.stderr) == ["agent: " + said.format(where=endpoint(server))]
    assert "<" not in result.stderr  # no HTML reaches the person
    assert len(server.requests) == len(entries)


# -- 7. the last line of every failing run names the endpoint and the provider ---------------


def anthropic_error(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


FAILURES = {
    "5xx-after-retries": (
        "anthropic",
        [
            {
                "status": 529,
                "headers": {"retry-after-ms": "1"},
                "body": anthropic_error("overloaded_error", "Overloaded"),
            }
        ]
        * 4,
        "server error (HTTP 529) from {where} after 3 retries: Overloaded",
    ),
    "error-in-stream": (
        "anthropic",
        [
            {
                "sse": [
                    message_start(),
                    event("error", anthropic_error("overloaded_error", "Overloaded")),
                ]
            }
        ],
        "the model server at {where} reported an error: overloaded_error: Overloaded",
    ),
    "error-in-200-body": (
        "openai",
        [{"status": 200, "body": {"object": "error", "message": "no such model"}}],
        "the model server at {where} reported an error: no such model",
    ),
    "401": (
        "openai",
        [{"status": 401, "message": "Incorrect API key provided"}],
        "authentication failed (HTTP 401) at {where}: set OPENAI_API_KEY: "
        "Incorrect API key provided",
    ),
    "429-after-retries": (
        "openai",
        [{"status": 429, "headers": {"retry-after-ms": "1"}, "message": "slow down"}] * 4,
        "rate limited (HTTP 429) by {where} after 3 retries: slow down",
    ),
    "cut-off": (
        "anthropic",
        [{"text": "This answer never ends properly", "cut_off": True}],
        "the model's answer from {where} was cut off mid-stream",
    ),
    "not-json": (
        "openai",
        [{"status": 200, "body": "upstream connect error or disconnect/reset before headers"}],
        "the answer from {where} is not valid JSON: Expecting value: line 1 column 1 (char 0)",
    ),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_every_failure_names_the_endpoint_and_the_provider(case, run_agent, server):
    api, entries, said = FAILURES[case]
    server.add(*entries)
    result = ask(run_agent, server, "hello", api=api)
    assert result.returncode == 1
    assert last_line(result.stderr) == "agent: " + said.format(where=endpoint(server, api))


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_server_that_is_not_there_is_named_with_its_provider(api, run_agent):
    port = unused_port()
    url = f"http://127.0.0.1:{port}" + ("/v1" if api == "openai" else "")
    result = run_agent("--provider", api, "--base-url", url, "ask", "hello", timeout=60)
    path = "/chat/completions" if api == "openai" else "/v1/messages"
    assert result.returncode == 1
    assert re.fullmatch(
        rf"agent: cannot connect to {re.escape(url + path)} \({api}\): connection refused, "
        r"nothing listens at that port on this machine; start the model server \(or set "
        r"model\.base_url\)",
        last_line(result.stderr),
    )
