"""What a turn did, said plainly (issue 20, item 7), through the real ``agent`` executable.

- answering "always" names the rule it added and the file it went to;
- ``agent ask`` shows the tokens a turn took, and the cost when ``model.price``
  is known: one dim line on a terminal's stderr, ``usage``/``cost`` in ``--json``;
- ``agent logs --session ID`` shows one session's calls.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import provider_args, settings, write
from model_server import ModelServer
from test_terminal_e2e import Terminal

PRICED = "model:\n  name: test-model\n  price: {input: 0.5, output: 10}\n"


def exec_call(command: str, usage: dict | None = None) -> dict:
    entry: dict = {"tool_calls": [{"name": "exec", "arguments": {"command": command}}]}
    return entry | ({"usage": usage} if usage else {})


def two_steps() -> list[dict]:
    """A turn of two model calls: 1,000 + 234 tokens in, 20 + 36 out."""
    return [
        exec_call("echo hi", {"input_tokens": 1000, "output_tokens": 20}),
        {"text": "done", "usage": {"input_tokens": 234, "output_tokens": 36}},
    ]


def ask_json(run_agent, server, *extra: str, provider: str = "openai"):
    url = server.url if provider == "openai" else server.anthropic_url
    result = run_agent(
        "--provider", provider, "--base-url", url, "ask", "--yes", "--json", *extra, "go"
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


# -- "always" says what it saved where -----------------------------------------------


def test_always_names_the_rule_and_the_file_it_was_added_to(workspace):
    write(workspace / "build.sh", "#!/bin/sh\necho built\n").chmod(0o755)
    with (
        ModelServer([exec_call("./build.sh"), {"text": "ok"}]) as server,
        Terminal(*provider_args(server), "ask", "build it", cwd=workspace) as term,
    ):
        term.expect(r"\[a\]lways: $")
        term.type("a")
        term.expect(
            r"^agent: added allow rule `exec\(\./build\.sh:\*\)` to \.agents/config/agent\.yaml$"
        )
        assert term.wait() == 0
    saved = (workspace / ".agents" / "config" / "agent.yaml").read_text()
    assert "exec(./build.sh:*)" in saved


# -- tokens and cost ------------------------------------------------------------------


@pytest.mark.parametrize("stream", ["true", "false"])
def test_json_has_the_turns_usage_and_its_cost_at_the_configured_price(
    workspace, run_agent, stream
):
    settings(workspace, PRICED + f"  stream: {stream}\n")
    with ModelServer(two_steps()) as server:
        data, _ = ask_json(run_agent, server)
        if stream == "true":  # OpenAI sends usage in a stream only when asked to
            assert server.requests[0]["json"]["stream_options"] == {"include_usage": True}
    assert data["answer"] == "done"
    assert data["usage"] == {"input_tokens": 1234, "output_tokens": 56}
    # 1,234 × 0.5 + 56 × 10 per million tokens.
    assert data["cost"] == pytest.approx(0.001177)


def test_anthropic_usage_from_message_start_and_message_delta(workspace, run_agent):
    settings(workspace, "model:\n  name: claude-test\n  price: {input: 3, output: 15}\n")
    with ModelServer(two_steps()) as server:
        data, _ = ask_json(run_agent, server, provider="anthropic")
    assert data["usage"] == {"input_tokens": 1234, "output_tokens": 56}
    assert data["cost"] == pytest.approx((1234 * 3 + 56 * 15) / 1e6)


def test_without_a_price_there_is_no_cost(workspace, run_agent):
    with ModelServer(two_steps()) as server:
        data, _ = ask_json(run_agent, server)
    assert data["usage"] == {"input_tokens": 1234, "output_tokens": 56}
    assert "cost" not in data


def test_the_price_is_model_names_another_model_given_on_the_command_line_has_none(
    workspace, run_agent
):
    settings(workspace, PRICED)
    with ModelServer(two_steps()) as server:
        data, _ = ask_json(run_agent, server, "--model", "another-model")
    assert data["usage"] == {"input_tokens": 1234, "output_tokens": 56}
    assert "cost" not in data


def test_a_terminal_sees_one_line_of_tokens_and_cost_after_the_answer(workspace):
    settings(workspace, PRICED + "policy: {mode: full}\n")
    with (
        ModelServer(two_steps()) as server,
        Terminal(*provider_args(server), "ask", "go", cwd=workspace, env={"NO_COLOR": ""}) as term,
    ):
        term.expect(r"^done$")
        term.expect(r"^tokens: 1,234 in · 56 out · \$0\.0012$")
        assert term.wait() == 0
    assert "\x1b[2mtokens: 1,234 in" in term.raw.decode()  # dimmed


def test_piped_stderr_gets_no_usage_line(workspace, run_agent):
    settings(workspace, PRICED)
    with ModelServer(two_steps()) as server:
        result = run_agent(*provider_args(server), "ask", "--yes", "go")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"
    assert "tokens:" not in result.stderr


@pytest.mark.parametrize(
    ("price", "problem"),
    [
        ("{input: 1}", "'output' is a required property"),
        ("{input: cheap, output: 1}", "model.price.input"),
        ("{input: -1, output: 1}", "model.price.input"),
    ],
)
def test_a_bad_price_is_one_line_at_its_place_and_exit_2(workspace, run_agent, price, problem):
    settings(workspace, f"model:\n  name: m\n  price: {price}\n")
    result = run_agent("--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "ask", "go")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert re.match(r"agent: \S*\.agents/config/agent\.yaml:3:\d+: ", line), line
    assert problem in line


# -- agent logs --session ---------------------------------------------------------------


def test_logs_session_shows_only_that_sessions_calls(workspace, run_agent):
    settings(workspace, "policy: {mode: full}\n")
    sessions = []
    for word in ("first", "second"):
        with ModelServer([exec_call(f"echo {word}"), {"text": "ok"}]) as server:
            data, _ = ask_json(run_agent, server)
        sessions.append(data["session"])

    result = run_agent("logs", "--session", sessions[0], "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["args"] for r in rows] == [{"command": "echo first"}]
    assert {r["session_id"] for r in rows} == {sessions[0]}

    shown = run_agent("logs", "--session", sessions[1][:6])  # a prefix, as elsewhere
    assert shown.returncode == 0, shown.stderr
    assert "echo second" in shown.stdout and "echo first" not in shown.stdout

    both = run_agent("logs", "--json")
    assert len(json.loads(both.stdout)) == 2


def test_logs_for_an_unknown_session_says_so_and_exits_2(workspace, run_agent):
    result = run_agent("logs", "--session", "nosuch")
    assert result.returncode == 2
    assert result.stderr.strip() == "agent: no session 'nosuch' (see: agent sessions)"
