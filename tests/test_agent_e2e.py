"""The real ``agent`` executable against a scripted model server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time

import pytest

from conftest import agent_executable, gone_soon, trust_as_is, wait_for_process
from mdagent.store.store import Store


def settings(workspace, text):
    config = workspace / ".agents" / "config"
    config.mkdir(parents=True, exist_ok=True)
    with open(config / "agent.yaml", "a", encoding="utf-8") as fh:
        fh.write(text)


class Api:
    """One provider dialect, streamed or not; ``flags(server)`` points agent at it."""

    def __init__(self, name, stream):
        self.name = name
        self.stream = stream

    def flags(self, server):
        url = server.url if self.name == "openai" else server.anthropic_url
        return ["--provider", self.name, "--base-url", url]

    def endpoint(self, server):
        """The endpoint as failure messages name it: its URL and the provider."""
        if self.name == "openai":
            return f"{server.url}/chat/completions (openai)"
        return f"{server.anthropic_url}/v1/messages (anthropic)"

    def configure(self, workspace):
        path = workspace / ".agents" / "config" / "agent.yaml"
        if not self.stream and "stream: false" not in (path.read_text() if path.exists() else ""):
            settings(workspace, "model:\n  stream: false\n")  # once: a second ask reuses it


ALL = [Api("openai", True), Api("openai", False), Api("anthropic", True), Api("anthropic", False)]
TWO = [Api("openai", True), Api("anthropic", False)]
IDS = lambda api: f"{api.name}-{'stream' if api.stream else 'json'}"  # noqa: E731


@pytest.fixture
def ask(run_agent, server, workspace):
    """Run ``agent [flags] ask ARGS`` against the server with dialect ``api``."""

    def run(api, *args, input="", env=None):
        api.configure(workspace)
        return run_agent(*api.flags(server), "ask", *args, input=input, env=env)

    return run


def sent(server, index):
    """Request ``index`` as JSON text (search it for what the model was sent)."""
    return json.dumps(server.requests[index]["json"])


@pytest.mark.parametrize("api", ALL, ids=IDS)
def test_the_model_calls_exec_then_answers(api, ask, server):
    server.add(
        {"tool_calls": [{"name": "exec", "arguments": {"command": "echo hello-from-exec"}}]},
        {"text": "The command printed hello-from-exec."},
    )
    result = ask(api, "--yes", "run echo")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The command printed hello-from-exec.\n"
    assert "→ exec  echo hello-from-exec" in result.stderr
    assert "hello-from-exec\\\\n" in sent(server, 1)  # the tool result, JSON in JSON
    assert len(server.requests) == 2


@pytest.mark.parametrize("api", TWO, ids=IDS)
def test_two_tool_calls_in_one_response(api, ask, server, workspace):
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    server.add(
        {
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.txt"}},
                {"name": "read_file", "arguments": {"path": "b.txt"}},
            ]
        },
        {"text": "alpha and beta"},
    )
    result = ask(api, "read both")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("→ read_file") == 2
    second = sent(server, 1)
    assert "alpha" in second and "beta" in second
    assert second.index("alpha") < second.index("beta")


@pytest.mark.parametrize("api", TWO, ids=IDS)
def test_a_validation_error_is_fed_back_and_corrected(api, ask, server):
    server.add(
        {"tool_calls": [{"name": "exec", "arguments": {"command": 42}}]},
        {"tool_calls": [{"name": "exec", "arguments": {"command": "echo fixed"}}]},
        {"text": "Fixed it."},
    )
    result = ask(api, "--yes", "go")
    assert result.returncode == 0, result.stderr
    assert "value at `/command` is not of type 'string'" in sent(server, 1)
    assert "fixed\\\\n" in sent(server, 2)
    assert result.stdout == "Fixed it.\n"


@pytest.mark.parametrize("api", TWO, ids=IDS)
def test_a_denied_call_is_fed_back_and_the_loop_goes_on(api, ask, server):
    server.add(
        {"tool_calls": [{"name": "exec", "arguments": {"command": "touch created"}}]},
        {"text": "I am not allowed to run commands here."},
    )
    result = ask(api, "make a file")  # no terminal, no --yes
    assert result.returncode == 0, result.stderr
    assert "exec needs approval: no terminal to ask on" in sent(server, 1)
    assert result.stdout == "I am not allowed to run commands here.\n"


@pytest.mark.parametrize("api", TWO, ids=IDS)
def test_429_with_retry_after_then_success(api, ask, server):
    server.add({"status": 429, "headers": {"Retry-After": "0"}}, {"text": "Worth the wait."})
    result = ask(api, "hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Worth the wait.\n"
    assert len(server.requests) == 2


@pytest.mark.parametrize("api", TWO, ids=IDS)
def test_500_more_times_than_the_retries_allow_is_a_clear_failure(api, ask, server):
    server.add(*[{"status": 500, "headers": {"Retry-After": "0"}} for _ in range(4)])
    result = ask(api, "hi")
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"agent: server error (HTTP 500) from {api.endpoint(server)} after 3 retries"
    )
    assert len(server.requests) == 4


@pytest.mark.parametrize("api", [Api("openai", True), Api("anthropic", True)], ids=IDS)
def test_a_stream_cut_off_midway_is_an_error_not_an_answer(api, ask, server):
    server.add({"text": "This answer will never reach its proper ending", "cut_off": True})
    result = ask(api, "--json", "hi")
    assert result.returncode == 1
    # No answer object: with --json the error is the one JSON object on stdout.
    session = Store().latest_session()
    # The error names the saved session: a script can continue it (`--session ID`).
    assert json.loads(result.stdout) == {
        "ok": False,
        "error": {
            "code": "PROVIDER",
            "message": f"the model's answer from {api.endpoint(server)} was cut off mid-stream",
        },
        "session": session,
    }
    assert "This answer" not in result.stdout + result.stderr
    assert [m["role"] for m in Store().messages(session)] == ["user"]


@pytest.mark.parametrize("api", TWO, ids=IDS)
def test_a_failure_after_tools_ran_names_the_saved_session_to_continue(api, ask, server):
    server.add(
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
        *[{"status": 500, "headers": {"Retry-After": "0"}} for _ in range(4)],
    )
    failed = ask(api, "--json", "list the files")
    assert failed.returncode == 1
    error = json.loads(failed.stdout)
    assert error["ok"] is False and error["error"]["code"] == "PROVIDER"
    roles = [m["role"] for m in Store().messages(error["session"])]
    assert roles[0] == "user" and "tool" in roles  # the tool's result is kept
    server.add({"text": "carried on"})
    resumed = ask(api, "--json", "--session", error["session"], "go on")
    assert json.loads(resumed.stdout)["answer"] == "carried on"
    assert json.loads(resumed.stdout)["session"] == error["session"]


def test_max_steps_from_the_project_settings(ask, server, workspace):
    settings(workspace, "agent:\n  max_steps: 3\n")
    server.add(
        *[{"tool_calls": [{"name": "glob", "arguments": {"pattern": f"*{i}"}}]} for i in range(5)]
    )
    result = ask(TWO[0], "loop")
    assert result.returncode == 3  # the step limit's own status
    assert len(server.requests) == 3
    assert (
        "agent: stopped after 3 steps without a final answer; raise agent.max_steps "
        "or continue with `agent ask --continue`"
    ) in result.stderr


def test_the_repeated_call_notice(ask, server):
    server.add(*[{"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.md"}}]}] * 4)
    server.add({"text": "OK, stopping."})
    result = ask(TWO[0], "go")
    assert result.returncode == 0, result.stderr
    assert "3 times in a row" not in sent(server, 3)
    assert "3 times in a row" in sent(server, 4)


def test_ask_json(ask, server):
    server.add(
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.nothing"}}]},
        {"text": "Nothing matches.", "usage": {"input_tokens": 7, "output_tokens": 3}},
    )
    result = ask(TWO[0], "--json", "find")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["answer"] == "Nothing matches."
    assert data["steps"] == 2 and data["session"]
    assert data["tool_calls"][0]["name"] == "glob"
    assert data["tool_calls"][0]["arguments"] == {"pattern": "*.nothing"}
    assert data["tool_calls"][0]["ok"] is True
    assert data["usage"]["output_tokens"] >= 3


def test_the_prompt_from_stdin(ask, server):
    server.add({"text": "Got it."})
    result = ask(TWO[1], input="a question from a pipe\n")
    assert result.returncode == 0, result.stderr
    assert "a question from a pipe" in sent(server, 0)


@pytest.mark.parametrize("api", TWO, ids=IDS)
def test_a_prompt_skill_gets_its_arguments_substituted(api, run_agent, server, workspace):
    skill = workspace / ".agents" / "skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: greet\ndescription: Greet someone\nallowed-tools: [exec]\n---\n"
        "Greet $ARGUMENTS[0] warmly. All arguments: $ARGUMENTS\n"
    )
    api.configure(workspace)
    server.add(
        {"tool_calls": [{"name": "exec", "arguments": {"command": "echo pre-approved"}}]},
        {"text": "Hello, Ada!"},
    )
    result = run_agent(*api.flags(server), "/greet", "Ada", "the Countess", input="")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hello, Ada!\n"
    assert "Greet Ada warmly. All arguments: Ada 'the Countess'" in sent(server, 0)
    assert "pre-approved\\\\n" in sent(server, 1)  # allowed-tools: ran without --yes


def _spawn(api, server, *args):
    trust_as_is(os.getcwd())  # the workspace fixture's folder: the person's own project
    return subprocess.Popen(
        [agent_executable(), *api.flags(server), "ask", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait_for(condition, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def _kill(process):
    process.kill()  # SIGKILL: no cleanup, as in a crash
    process.communicate(timeout=10)


def test_continue_after_the_process_was_killed_waiting_for_the_model(run_agent, server, workspace):
    api = Api("openai", True)
    release = threading.Event()

    def stall(request):
        release.wait(20)
        return {"text": "too late"}

    server.add(
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.cfg"}}]},
        stall,
        {"text": "Resumed fine."},
    )
    process = _spawn(api, server, "first question")
    try:
        _wait_for(lambda: len(server.requests) >= 2)
    finally:
        _kill(process)
        release.set()
    result = run_agent(*api.flags(server), "ask", "--continue", "second question", input="")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Resumed fine.\n"
    resumed = server.requests[2]["json"]["messages"]
    text = json.dumps(resumed)
    assert text.index("first question") < text.index("*.cfg") < text.index("second question")
    assert [m["role"] for m in resumed] == ["system", "user", "assistant", "tool", "user"]


def test_continue_repairs_a_session_killed_while_a_tool_ran(run_agent, server, workspace):
    # A safe in-process tool that sleeps: killed with the agent, nothing left behind.
    handlers = workspace / ".agents" / "config" / "handlers"
    handlers.mkdir(parents=True)
    (handlers / "slow.py").write_text(
        "import pathlib, time\n\n"
        "def run(args, ctx):\n"
        "    pathlib.Path(ctx.workdir, 'started').write_text('yes')\n"
        "    time.sleep(30)\n"
        "    return {'output': 'finished'}\n"
    )
    (workspace / ".agents" / "config" / "tools.yaml").write_text(
        "tools:\n  slow:\n    description: A slow tool\n    security: safe\n"
        "    handler: handlers/slow.py:run\n"
    )
    api = Api("anthropic", True)
    server.add({"tool_calls": [{"name": "slow", "arguments": {}}]}, {"text": "Picked up again."})
    process = _spawn(api, server, "run the slow tool")
    try:
        _wait_for(lambda: (workspace / "started").exists())
    finally:
        _kill(process)
    result = run_agent(*api.flags(server), "ask", "--continue", "what happened?", input="")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Picked up again.\n"
    messages = server.requests[1]["json"]["messages"]
    # Anthropic needs a tool_result for every tool_use: the repair supplied it.
    results = [
        block
        for m in messages
        if isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == 1 and "interrupted" in json.dumps(results[0])
    assert "what happened?" in json.dumps(messages[-1])


def test_continue_with_an_unknown_session_is_a_usage_error(run_agent, server):
    result = run_agent(*TWO[0].flags(server), "ask", "--session", "zzzz", "hi", input="")
    assert result.returncode == 2
    assert "no session 'zzzz'" in result.stderr


def test_ctrl_c_stops_the_running_command_saves_the_session_and_exits_130(server, workspace):
    # Found by its command line: in the sandbox's PID namespace $$ is no pid out here.
    sleep = f"sleep 30.{random.randrange(10**6):06d}"
    command = f"echo started > pid; exec {sleep}"
    server.add({"tool_calls": [{"name": "exec", "arguments": {"command": command}}]})
    api = Api("openai", True)
    process = _spawn(api, server, "--yes", "sleep a while")
    try:
        _wait_for(lambda: (workspace / "pid").exists() and (workspace / "pid").read_text().strip())
        pid = wait_for_process(sleep)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            _kill(process)
    assert process.returncode == 130
    assert b"interrupted" in err
    assert gone_soon(pid)  # the command's process group was stopped
    messages = Store().messages(Store().latest_session())
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert json.loads(messages[-1]["content"])["interrupted"] is True


def test_with_json_a_turn_cut_short_says_so_once_in_the_object(workspace, run_agent):
    script = workspace / "cut.yaml"
    script.write_text("- {text: partial, stop_reason: max_tokens}\n")
    result = run_agent("--json", "--script", str(script), "ask", "q")
    assert result.returncode == 1
    found = json.loads(result.stdout)
    assert found["stop_reason"] == "max_tokens" and "cut off" in found["error"]
    assert result.stderr == ""  # not a second time on stderr
