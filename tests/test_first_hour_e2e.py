"""The first hour (issue 20), through the real ``agent`` executable.

No test here may reach the network: a missing key is reported before any
request, which the proxy trap below proves (every HTTP(S) connection would
have to go through it, and it must accept none).
"""

from __future__ import annotations

import json
import socket

import pytest

from test_terminal_e2e import Terminal

NO_KEYS = {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "", "MY_KEY": ""}


@pytest.fixture
def trap():
    """A listening socket every proxied connection would reach; ``trap()`` counts them."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = {name: url for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy")}
    env |= {"NO_PROXY": "", "no_proxy": ""}

    def connections() -> int:
        count = 0
        while True:
            try:
                conn, _ = sock.accept()
            except BlockingIOError:
                return count
            conn.close()
            count += 1

    connections.env = env
    yield connections
    sock.close()


def settings(workspace, text):
    path = workspace / ".agents" / "config" / "agent.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- 1. the first model call with nothing configured ------------------------------


def test_ask_without_key_or_model_says_how_to_configure_one(run_agent, trap, state_sessions):
    result = run_agent("ask", "hi", env={**NO_KEYS, **trap.env})
    assert result.returncode == 2
    assert result.stdout == ""
    first = result.stderr.splitlines()[0]
    assert first.startswith("agent: no API key:")
    assert "openai gpt-4o-mini at https://api.openai.com/v1" in first
    assert "OPENAI_API_KEY is not set" in first
    # The three ways to configure a model, as the README shows them.
    for snippet in (
        "provider: openai\n      name: gpt-4o-mini",
        "provider: anthropic\n      name: claude-sonnet-4-5",
        "base_url: http://localhost:11434/v1\n      name: qwen2.5-coder:7b",
    ):
        assert snippet in result.stderr
    assert "model.api_key_env" in result.stderr
    assert "agent init" in result.stderr
    assert "is the server running" not in result.stderr
    assert "Traceback" not in result.stderr
    assert trap() == 0  # not even a connection was attempted
    assert state_sessions() == 0  # and no empty session was left behind


def test_anthropic_without_its_key_names_its_endpoint_and_variable(run_agent, trap):
    result = run_agent("--provider", "anthropic", "ask", "hi", env={**NO_KEYS, **trap.env})
    assert result.returncode == 2
    first = result.stderr.splitlines()[0]
    assert "anthropic claude-sonnet-4-5 at https://api.anthropic.com" in first
    assert "ANTHROPIC_API_KEY is not set" in first
    assert trap() == 0


def test_a_named_key_variable_is_required_even_at_another_url(run_agent, server, workspace):
    # OpenRouter and the like: model.api_key_env says a key is needed there.
    settings(workspace, f"model:\n  base_url: {server.url}\n  api_key_env: MY_KEY\n")
    server.add({"text": "never sent"})
    result = run_agent("ask", "hi", env=NO_KEYS)
    assert result.returncode == 2
    assert "MY_KEY is not set" in result.stderr
    assert server.url.rstrip("/") in result.stderr.splitlines()[0]
    assert server.requests == []  # the server received nothing
    # With the key set, the same configuration reaches the server.
    result = run_agent("ask", "hi", env={**NO_KEYS, "MY_KEY": "k"})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "never sent\n"
    assert len(server.requests) == 1


def test_a_local_server_needs_no_key(run_agent, server):
    server.add({"text": "local answer"})
    result = run_agent("--base-url", server.url, "ask", "hi", env=NO_KEYS)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "local answer\n"


def test_a_prompt_skill_without_key_is_refused_the_same_way(run_agent, workspace, trap):
    skill = workspace / ".agents" / "skills" / "summary" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: summary\ndescription: Summarise\n---\nSummarise $ARGUMENTS\n")
    result = run_agent("/summary", "README.md", env={**NO_KEYS, **trap.env})
    assert result.returncode == 2
    assert "OPENAI_API_KEY is not set" in result.stderr
    assert trap() == 0


# -- agent init -------------------------------------------------------------------


def test_init_with_a_flag_writes_a_working_project(run_agent, workspace, trap):
    result = run_agent("init", "--model", "anthropic", input="")
    assert result.returncode == 0, result.stderr
    config = workspace / ".agents" / "config" / "agent.yaml"
    skill = workspace / ".agents" / "skills" / "hello" / "SKILL.md"
    assert f"wrote {config}" in result.stdout
    assert f"wrote {skill}" in result.stdout
    text = config.read_text()
    assert text.startswith("# ")  # commented
    assert "\nmodel:\n  provider: anthropic\n" in text
    assert "# model:\n#   provider: openai\n" in text  # the other choices, commented out
    # What init wrote is valid and live: check is clean, the skill runs,
    # and ask now names the chosen provider's key.
    check = run_agent("check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "0 errors, 0 warnings" in check.stderr
    hello = run_agent("/hello", "world")
    assert (hello.returncode, hello.stdout) == (0, "hello world\n")
    ask = run_agent("ask", "hi", env={**NO_KEYS, **trap.env})
    assert ask.returncode == 2
    assert "ANTHROPIC_API_KEY is not set" in ask.stderr
    assert trap() == 0


def test_init_never_overwrites(run_agent, workspace):
    config = settings(workspace, "model:\n  name: mine  # my own\n")
    result = run_agent("init", "--model", "openai")
    assert result.returncode == 0, result.stderr
    assert f"kept existing {config}" in result.stdout
    assert "model: unchanged" in result.stdout
    assert config.read_text() == "model:\n  name: mine  # my own\n"
    assert (workspace / ".agents" / "skills" / "hello" / "SKILL.md").exists()


def test_init_without_a_terminal_needs_the_flag(run_agent, workspace):
    result = run_agent("init", input="")
    assert result.returncode == 2
    assert result.stderr == "agent: init needs a model choice: --model openai|anthropic|ollama\n"
    assert not (workspace / ".agents" / "config" / "agent.yaml").exists()
    bad = run_agent("init", "--model", "gpt-5")
    assert bad.returncode == 2
    assert "--model must be one of openai, anthropic, ollama" in bad.stderr


def test_init_asks_for_the_model_on_a_terminal(workspace):
    with Terminal("init", cwd=workspace) as term:
        term.expect("ollama")
        term.expect("Which model")
        term.type("3")
        assert term.wait(timeout=30) == 0, term.text
    assert "wrote" in term.text
    text = (workspace / ".agents" / "config" / "agent.yaml").read_text()
    assert "\nmodel:\n  provider: openai\n  base_url: http://localhost:11434/v1\n" in text
    assert "tier: essential" in text


@pytest.fixture
def state_sessions(run_agent):
    """How many sessions the state database holds (``agent sessions --json``)."""
    import json

    def count() -> int:
        result = run_agent("sessions", "--json")
        assert result.returncode == 0, result.stderr
        return len(json.loads(result.stdout or "[]"))

    return count


# -- 2. the effective configuration ------------------------------------------------


def test_config_show_says_where_each_setting_came_from(run_agent, workspace, server, tmp_path):
    user = tmp_path / "user-layer"
    (user / "config").mkdir(parents=True)
    (user / "config" / "agent.yaml").write_text("agent:\n  max_steps: 7\n")
    settings(workspace, f"model:\n  base_url: {server.url}\n  name: local-model\n")
    env = {**NO_KEYS, "AGENT_HOME": str(user), "OPENAI_API_KEY": "sk-secret-value"}
    result = run_agent("config", "show", env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"workspace: {workspace}" in out
    assert "state dir: " in out
    assert f"model: openai local-model at {server.url}" in out
    assert "(key variable OPENAI_API_KEY: set)" in out
    assert "sk-secret-value" not in out + result.stderr  # never the key itself
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert lines["model.name"].endswith("# project")
    assert lines["agent.max_steps"].split()[1:] == ["7", "#", "user"]
    assert lines["agent.tier"].endswith("# default")
    assert f"project    {workspace / '.agents'}" in out
    # `agent config` alone is `agent config show`.
    alone = run_agent("config", env=env)
    assert (alone.returncode, alone.stdout) == (0, out)
    # --json: the same facts, machine-readable.
    data = json.loads(run_agent("config", "show", "--json", env=env).stdout)
    assert data["settings"]["agent.max_steps"] == {"value": 7, "from": "user"}
    assert data["model"]["key_set"] is True
    assert data["model"]["api_key_env"] == "OPENAI_API_KEY"
    kinds = [layer["kind"] for layer in data["layers"]][:3]
    assert kinds == ["project", "project, other agents' files", "user"]
    assert server.requests == []


def test_config_show_without_a_key(run_agent):
    result = run_agent("config", "show", env=NO_KEYS)
    assert result.returncode == 0
    assert (
        "model: openai gpt-4o-mini at https://api.openai.com/v1 "
        "(key variable OPENAI_API_KEY: not set)" in result.stdout
    )


def test_doctor_reports_each_check(run_agent, workspace, server):
    result = run_agent("--base-url", server.url, "doctor", env=NO_KEYS)
    assert result.returncode == 0, result.stdout + result.stderr
    names = [line.split()[1] for line in result.stdout.splitlines()]
    assert names == ["python", "install", "layers", "check", "ripgrep", "state", "trust", "model"]
    for line in result.stdout.splitlines():
        assert line.startswith("✓") or line.startswith("- ripgrep  not installed (optional)")
        assert not (line.startswith("✓") and "not found" in line)


def test_doctor_marks_a_missing_ripgrep_as_optional_not_as_a_pass(run_agent, workspace, server):
    bare = workspace.parent / "bare-path"  # a PATH without rg, wherever rg is installed
    bare.mkdir()
    result = run_agent("--base-url", server.url, "doctor", env={**NO_KEYS, "PATH": str(bare)})
    assert result.returncode == 0, result.stdout + result.stderr  # optional: not a failure
    (line,) = [line for line in result.stdout.splitlines() if " ripgrep " in f" {line}"]
    assert line == "- ripgrep  not installed (optional): grep uses its slower Python search"
    shown = run_agent(
        "--base-url", server.url, "doctor", "--json", env={**NO_KEYS, "PATH": str(bare)}
    )
    (check,) = [c for c in json.loads(shown.stdout) if c["check"] == "ripgrep"]
    assert check["ok"] is None
    assert f"{server.url} reachable" in result.stdout
    assert "writable" in result.stdout


def test_doctor_fails_on_an_unreachable_model_and_a_broken_declaration(run_agent, workspace):
    with socket.socket() as sock:  # a port nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings(workspace, f"model:\n  base_url: http://127.0.0.1:{port}/v1\n")
    (workspace / ".agents" / "config" / "tools.yaml").write_text("tools:\n  - name: 3\n")
    result = run_agent("doctor", "--json", env=NO_KEYS)
    assert result.returncode == 1
    checks = {c["check"]: c for c in json.loads(result.stdout)}
    assert checks["model"]["ok"] is False
    assert "unreachable" in checks["model"]["detail"]
    assert checks["check"]["ok"] is False
    assert "agent check" in checks["check"]["detail"]
    assert checks["python"]["ok"] is True


def test_doctor_without_a_key_does_not_probe_the_hosted_endpoint(run_agent, trap):
    result = run_agent("doctor", env={**NO_KEYS, **trap.env})
    assert result.returncode == 1
    model = [line for line in result.stdout.splitlines() if " model " in line][0]
    assert model.startswith("✗")
    assert "OPENAI_API_KEY is not set (not probed" in model
    assert trap() == 0


# -- 3. help that answers (the parts outside the /name fast path) ----------------------


def test_agent_help_lists_subcommands_and_slash_commands(run_agent):
    result = run_agent("help")
    assert result.returncode == 0, result.stderr
    assert "Usage: agent [OPTIONS] COMMAND [ARGS]..." in result.stdout
    assert "doctor" in result.stdout and "init" in result.stdout
    assert "\n/count " in result.stdout  # the slash commands, as /help lists them


def test_agent_help_name_shows_that_ones_help(run_agent):
    slash = run_agent("/count", "--help")
    for name in ("count", "/count"):
        result = run_agent("help", name)
        assert (result.returncode, result.stdout) == (0, slash.stdout)
    sub = run_agent("help", "doctor")
    assert sub.returncode == 0
    assert sub.stdout.startswith("Usage: agent doctor [OPTIONS]")
    assert sub.stdout == run_agent("doctor", "--help").stdout
    unknown = run_agent("help", "cuont")
    assert unknown.returncode == 2
    assert "unknown command /cuont" in unknown.stderr
    assert "did you mean /count?" in unknown.stderr


# -- 4. suggestions that know both worlds (the `agent NAME` half) ----------------------


def test_a_slash_command_typed_as_a_subcommand_is_suggested(run_agent):
    result = run_agent("count", "README.md")
    assert result.returncode == 2
    assert "No such command 'count'. Did you mean `agent /count`?" in result.stderr
    near = run_agent("sesions")
    assert near.returncode == 2
    assert "Did you mean `agent sessions`?" in near.stderr
    nothing = run_agent("zzzzzz")
    assert nothing.returncode == 2
    assert "No such command 'zzzzzz'." in nothing.stderr
    assert "Did you mean" not in nothing.stderr
