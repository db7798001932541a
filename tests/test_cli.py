"""End-to-end: the real ``agent`` executable in a temporary workspace (DESIGN §6)."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import tty
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import agent_executable, gone_soon, write


def skill(ws: Path, name: str, tool: str, mode: str = "raw", extra: str = "") -> None:
    write(
        ws / ".agents" / "skills" / name / "SKILL.md",
        f"---\nname: {name}\ndescription: {name} command\ncommand-dispatch: tool\n"
        f"command-tool: {tool}\ncommand-arg-mode: {mode}\n{extra}---\nRuns {tool}.\n",
    )


def config(ws: Path, name: str, text: str) -> None:
    write(ws / ".agents" / "config" / name, text)


# -- the main job ---------------------------------------------------------------


def test_raw_exec_skill_prints_output(workspace, run_agent):
    skill(workspace, "my-command", "exec")
    result = run_agent("/my-command", "echo", "hi")
    assert (result.returncode, result.stdout, result.stderr) == (0, "hi\n", "")


def test_raw_exec_failure_exits_with_the_commands_status(workspace, run_agent):
    skill(workspace, "my-command", "exec")
    assert run_agent("/my-command", "false").returncode == 1
    assert run_agent("/my-command", "exit 7").returncode == 7


def test_raw_keeps_pipelines_and_quoting(workspace, run_agent):
    skill(workspace, "t", "exec")
    (workspace / "a b.txt").write_text("x\ny\n")
    assert run_agent("/t", "cat 'a b.txt' | wc -l").stdout.strip() == "2"
    assert run_agent("/t", "cat", "a b.txt").stdout == "x\ny\n"


def test_case_and_underscore_insensitive_names(workspace, run_agent):
    skill(workspace, "my-command", "exec")
    assert run_agent("/My_Command", "echo ok").stdout == "ok\n"


def test_parsed_mode_with_a_run_tool(workspace, run_agent):
    config(
        workspace,
        "greet.yaml",
        "tools:\n  greet:\n    description: Greet\n"
        "    params:\n      name: {type: string}\n      times: {type: integer, default: 1}\n"
        "      loud: {type: boolean}\n    required: [name]\n"
        "    run: [python3, -c, 'import sys; n, t, l = sys.argv[1:]; print((n.upper() if l == \"true\" else n) * int(t))', '{name}', '{times}', '{loud}']\n"
        "commands:\n  greet:\n    tool: greet\n    arg-mode: parsed\n",
    )
    assert run_agent("/greet", "bob", "--times", "2", "--loud").stdout == "BOBBOB\n"
    assert run_agent("/greet", "name=al", "--no-loud").stdout == "al\n"
    bad = run_agent("/greet", "bob", "--times", "many")
    assert bad.returncode == 2
    assert "'many' is not a valid integer" in bad.stderr and "usage: /greet <name>" in bad.stderr


def test_json_mode_and_validation_exit_2(workspace, run_agent):
    config(
        workspace,
        "j.yaml",
        "tools:\n  echo-json:\n    description: Echo\n    params: {n: {type: integer}}\n    required: [n]\n"
        "    shell: 'echo got {n}'\ncommands:\n  ej:\n    tool: echo-json\n    arg-mode: json\n",
    )
    assert run_agent("/ej", '{"n": 3}').stdout == "got 3\n"
    wrong = run_agent("/ej", '{"n": "three"}')
    assert wrong.returncode == 2 and "value at `/n` is not of type 'integer'" in wrong.stderr
    assert run_agent("/ej", "{bad").returncode == 2


def test_handler_tool(workspace, run_agent):
    write(
        workspace / ".agents" / "config" / "handlers" / "shout.py",
        "def run(args, ctx):\n    return {'output': args['text'].upper() + ' in ' + Path(ctx.workdir).name}\n"
        "from pathlib import Path\n",
    )
    config(
        workspace,
        "h.yaml",
        "tools:\n  shout:\n    description: Shout\n    params: {text: {type: string}}\n"
        "    handler: handlers/shout.py:run\ncommands:\n  shout: {tool: shout, arg-mode: parsed}\n",
    )
    assert run_agent("/shout", "hey").stdout == "HEY in project\n"


def test_handler_that_raises_is_one_line_exit_1(workspace, run_agent):
    write(
        workspace / ".agents" / "config" / "handlers" / "boom.py",
        "def run(args):\n    raise ValueError('kaboom')\n",
    )
    config(
        workspace,
        "b.yaml",
        "tools:\n  boom:\n    description: B\n    handler: handlers/boom.py\ncommands:\n  boom: {tool: boom}\n",
    )
    result = run_agent("/boom")
    assert result.returncode == 1
    assert result.stderr == "agent: /boom: kaboom\n"


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        body = json.dumps({"path": self.path}).encode()
        self.send_response(404 if "missing" in self.path else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def http_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_http_tool_against_a_local_server(workspace, run_agent, http_server):
    config(
        workspace,
        "w.yaml",
        "tools:\n  lookup:\n    description: Look up\n    params: {city: {type: string}}\n"
        f"    http: {{method: GET, url: '{http_server}/weather/{{city}}'}}\n"
        "commands:\n  weather: {tool: lookup, arg-mode: parsed}\n",
    )
    result = run_agent("--json", "/weather", "São Paulo")
    data = json.loads(result.stdout)
    assert result.returncode == 0 and data["status"] == 200
    assert data["json"] == {"path": "/weather/S%C3%A3o%20Paulo"}
    missing = run_agent("/weather", "missing")
    assert missing.returncode == 1 and "HTTP 404" in missing.stderr


def test_tool_composition(workspace, run_agent):
    config(
        workspace,
        "c.yaml",
        "tools:\n  count-lines:\n    description: Count lines\n    params: {path: {type: string}}\n"
        "    tool: exec\n    with: {command: 'wc -l < {path}'}\n"
        "commands:\n  lines: {tool: count-lines, arg-mode: parsed}\n",
    )
    (workspace / "f.txt").write_text("1\n2\n3\n")
    assert run_agent("/lines", "f.txt").stdout.strip() == "3"


# -- built-in tools through commands ----------------------------------------------


def test_every_builtin_tool_through_a_command(workspace, run_agent, http_server):
    for name, tool, mode in [
        ("rf", "read_file", "parsed"),
        ("wf", "write_file", "json"),
        ("ef", "edit_file", "json"),
        ("gl", "glob", "parsed"),
        ("gr", "grep", "parsed"),
        ("fe", "fetch", "parsed"),
        ("sk", "skill", "parsed"),
        ("ex", "exec", "raw"),
    ]:
        skill(workspace, name, tool, mode)
    wrote = run_agent("/wf", json.dumps({"path": "notes/a.txt", "content": "alpha\nbeta\n"}))
    assert wrote.returncode == 0 and (workspace / "notes" / "a.txt").read_text() == "alpha\nbeta\n"
    assert run_agent("/rf", "notes/a.txt").stdout == "     1\talpha\n     2\tbeta\n"
    edited = run_agent(
        "/ef", json.dumps({"path": "notes/a.txt", "old_string": "beta", "new_string": "gamma"})
    )
    assert edited.returncode == 0 and "gamma" in (workspace / "notes" / "a.txt").read_text()
    assert "notes/a.txt" in run_agent("/gl", "**/*.txt").stdout.split()
    assert run_agent("/gr", "gam+a").stdout.strip() == "notes/a.txt:2:gamma"
    assert '"path": "/x"' in run_agent("/fe", f"{http_server}/x").stdout
    assert "Runs read_file." in run_agent("/sk", "rf").stdout
    assert run_agent("/ex", "pwd").stdout.strip() == str(workspace.resolve())


def test_file_tools_refuse_to_leave_the_workspace(workspace, run_agent, tmp_path):
    skill(workspace, "rf", "read_file", "parsed")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    (workspace / "link").symlink_to(outside)
    for path in ("../outside.txt", str(outside), "link"):
        result = run_agent("/rf", path)
        assert result.returncode == 126, (path, result.stderr)
        assert "secret" not in result.stdout and "workspace" in result.stderr


# -- exit statuses ---------------------------------------------------------------------


def test_unknown_command_exit_2_with_list_and_suggestion(workspace, run_agent):
    skill(workspace, "deploy", "exec")
    result = run_agent("/deplyo")
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0] == "agent: unknown command /deplyo"
    assert "did you mean /deploy?" in lines
    assert any(line.startswith("commands: ") and "/deploy" in line for line in lines)


def test_command_whose_skill_is_broken_says_why(workspace, run_agent):
    skill(workspace, "broke", "nothing-here")
    result = run_agent("/broke")
    assert result.returncode == 2 and "names no tool" in result.stderr


def test_broken_settings_exit_2(workspace, run_agent):
    skill(workspace, "t", "exec")
    config(workspace, "agent.yaml", "policy:\n  mode: sometimes\n")
    result = run_agent("/t", "echo hi")
    assert result.returncode == 2 and "agent.yaml:2" in result.stderr and result.stdout == ""


def test_timeout_exit_124_kills_grandchild(workspace, run_agent):
    config(workspace, "agent.yaml", "exec: {timeout: 1}\n")
    skill(workspace, "t", "exec")
    pidfile = workspace / "grandchild.pid"
    result = run_agent("/t", f"(sleep 60; echo late) & echo $! > {pidfile}; wait")
    assert result.returncode == 124 and "late" not in result.stdout  # killed, not waited for
    assert "timed out" in result.stderr
    pid = int(pidfile.read_text())
    assert gone_soon(pid)


def test_deny_rule_blocks_a_typed_command_exit_126(workspace, run_agent):
    config(workspace, "agent.yaml", "policy:\n  deny: ['exec(rm *)']\n")
    skill(workspace, "t", "exec")
    (workspace / "keep").write_text("x")
    result = run_agent("/t", "echo hi && rm -f keep")
    assert result.returncode == 126 and (workspace / "keep").exists()
    assert "denied" in result.stderr or "deny" in result.stderr
    row = json.loads(run_agent("logs", "--json").stdout)[0]
    assert row["code"] == "DENIED" and row["approved_by"] is None
    assert "denied: " in run_agent("logs").stdout


def test_ctrl_c_exits_130_and_stops_the_child(workspace):
    skill(workspace, "t", "exec")
    pidfile = workspace / "child.pid"
    proc = subprocess.Popen(
        [agent_executable(), "/t", f"echo $$ > {pidfile}; exec sleep 60"],
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30  # a hang guard: start-up on a busy machine
        while (
            not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline
        ):
            time.sleep(0.05)
        child = int(pidfile.read_text())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "interrupted" in err
    assert gone_soon(child)
    logged = subprocess.run(
        [agent_executable(), "logs", "--json"], cwd=workspace, capture_output=True, text=True
    )
    row = json.loads(logged.stdout)[0]
    assert (row["tool"], row["ok"], row["error"]) == ("exec", False, "interrupted")


def test_json_prints_the_whole_result(workspace, run_agent):
    skill(workspace, "t", "exec")
    data = json.loads(run_agent("--json", "/t", "echo hi; echo err >&2; exit 3").stdout)
    assert data["stdout"] == "hi\n" and data["stderr"] == "err\n"
    assert data["exit_code"] == 3 and data["ok"] is False and data["error"] == "exit status 3"


# -- output: the child's bytes, exactly ------------------------------------------------


def test_binary_output_to_a_file_is_byte_for_byte(workspace):
    # `agent /t cat image.png > copy.png`: nothing decoded, nothing replaced.
    skill(workspace, "t", "exec")
    data = os.urandom(20 << 20)
    (workspace / "random.bin").write_bytes(data)
    with open(workspace / "copy.bin", "wb") as out:
        done = subprocess.run(
            [agent_executable(), "/t", "cat random.bin"], cwd=workspace, stdout=out, timeout=60
        )
    assert done.returncode == 0
    assert (workspace / "copy.bin").read_bytes() == data


def test_binary_output_through_a_pipe_is_byte_for_byte(workspace):
    skill(workspace, "t", "exec")
    data = os.urandom(1 << 20) + b"\xff\xfe no newline at the end \xc3"
    (workspace / "random.bin").write_bytes(data)
    done = subprocess.run(
        [agent_executable(), "/t", "cat random.bin; echo err >&2"],
        cwd=workspace,
        capture_output=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, data, b"err\n")


def test_binary_output_to_a_terminal_is_byte_for_byte(workspace):
    # A terminal still gets the child's output through mdagent's pipe (so
    # programs do not start pagers): the bytes are copied as they are. Raw
    # mode turns off the terminal's own newline translation.
    skill(workspace, "t", "exec")
    data = os.urandom(256 << 10)
    (workspace / "random.bin").write_bytes(data)
    master, slave = os.openpty()
    tty.setraw(slave)
    proc = subprocess.Popen(
        [agent_executable(), "/t", "cat random.bin"],
        cwd=workspace,
        stdout=slave,
        stderr=subprocess.PIPE,
    )
    os.close(slave)
    received = bytearray()
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal is gone
                break
            if not chunk:
                break
            received += chunk
    finally:
        os.close(master)
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
        proc.stderr.close()
    assert bytes(received) == data


def test_output_that_is_not_utf8_is_decoded_for_the_json_result_and_says_so(workspace, run_agent):
    skill(workspace, "t", "exec")
    data = json.loads(run_agent("--json", "/t", r"printf 'caf\xc3\xa9 \xff!'").stdout)
    assert data["stdout"] == "caf\u00e9 \ufffd!"
    assert "not UTF-8" in data["undecodable"] and "U+FFFD" in data["undecodable"]
    assert "undecodable" not in json.loads(run_agent("--json", "/t", "echo café").stdout)


# -- what start-up imports ----------------------------------------------------------------

PROBE = (
    "import sys\n"
    "from mdagent.cli.cli import main\n"
    "try:\n    status = main(sys.argv[1:])\nexcept SystemExit as exc:\n    status = exc.code\n"
    "watched = ('jsonschema', 'pydantic', 'typer', 'rich', 'yaml', 'httpx', 'typing', 'datetime')\n"
    "print(status, *[m for m in watched if m in sys.modules], file=sys.stderr)\n"
)


def imported(workspace, *args: str) -> list[str]:
    """The exit status and which expensive modules ``agent ARGS`` imported."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stderr.strip().splitlines()[-1].split()


def test_a_typed_command_with_valid_arguments_imports_no_jsonschema_nor_typing(workspace):
    config(
        workspace,
        "hi.yaml",
        "tools:\n  hi:\n    description: Say hi\n"
        "    params: {name: {type: string, description: Who}}\n"
        '    required: [name]\n    run: [echo, "hi {name}"]\n'
        "commands:\n  hi: {tool: hi, arg-mode: parsed}\n",
    )
    imported(workspace, "/hi", "world")  # the first run compiles the registry (with jsonschema)
    assert imported(workspace, "/hi", "world") == ["0"]
    # A missing one is said before any schema check (exit 2, the usage line).
    assert imported(workspace, "/hi") == ["2"]


def test_version_is_as_cheap_as_a_typed_command(workspace):
    # `agent --version` and `-V` print the package version on the fast path:
    # no typer, no click, none of the modules a typed command does without.
    for flag in ("--version", "-V"):
        assert imported(workspace, flag) == ["0"]


def test_ask_and_check_do_not_import_pydantic(workspace):
    (workspace / "script.yaml").write_text("- Hello.\n")
    assert "pydantic" not in imported(workspace, "check")
    ask = imported(workspace, "--provider", "fake", "--script", "script.yaml", "ask", "hi")
    assert ask[0] == "0" and "pydantic" not in ask


def test_ask_skips_typer_and_rich_and_its_options_still_reach_typer_when_odd(workspace):
    # issue 33: a script's `agent ask` is parsed on the fast path (no typer, click, rich).
    (workspace / "script.yaml").write_text("- Hello.\n")
    fake = ("--provider", "fake", "--script", "script.yaml")
    fast = imported(workspace, *fake, "ask", "--max-steps", "3", "--mode=plan", "hi")
    assert fast[0] == "0" and "typer" not in fast and "rich" not in fast
    # What the fast path does not take (--help, an unknown option) typer parses and reports.
    assert imported(workspace, *fake, "ask", "--max-steps", "0", "hi")[:2] == ["2", "typer"]
    assert imported(workspace, "ask", "--help")[:2] == ["0", "typer"]


def test_ask_words_parse_as_typer_would_or_not_at_all():
    from mdagent.cli.cli import ask_words

    got = ask_words(["fix", "-y", "--allow", "exec(git *)", "--allow=read_file", "it", "-c"])
    assert got == {
        "prompt": ["fix", "it"],
        "yes": True,
        "continue_": True,
        "allow": ["exec(git *)", "read_file"],
        "deny": [],
    }
    assert ask_words(["--max-steps=2", "x"])["max_steps"] == 2
    for odd in (["--help"], ["-h"], ["--", "-x"], ["--session"], ["--max-steps", "x"], ["--nope"]):
        assert ask_words(odd) is None, odd


# -- help and completion ---------------------------------------------------------------


def test_help_lists_commands_and_command_help(workspace, run_agent):
    skill(workspace, "my-command", "exec", extra="argument-hint: <shell command>\n")
    listing = run_agent("/help")
    assert listing.returncode == 0 and "/my-command" in listing.stdout and "/term" in listing.stdout
    one = run_agent("/my-command", "--help")
    assert one.returncode == 0
    assert one.stdout.splitlines()[:2] == [
        "/my-command - my-command command",
        "usage: /my-command <shell command>",
    ]


def test_global_options_before_the_command(workspace, run_agent, tmp_path):
    extra = tmp_path / "extra-layer"
    skill(extra.parent / "x", "unused", "exec")  # a decoy outside the layer
    write(
        extra / "skills" / "only-here" / "SKILL.md",
        "---\ndescription: d\ncommand-dispatch: tool\ncommand-tool: exec\n---\n",
    )
    assert run_agent("/only-here", "echo x").returncode == 2
    assert run_agent("--layer", str(extra), "--no-user", "/only-here", "echo x").stdout == "x\n"


def test_completion_lists_registry_commands(workspace, run_agent):
    skill(workspace, "my-command", "exec")
    result = run_agent(
        env={"_AGENT_COMPLETE": "complete_bash", "COMP_WORDS": "agent /my", "COMP_CWORD": "1"}
    )
    assert result.returncode == 0
    assert "/my-command" in result.stdout


def test_install_completion_is_offered(run_agent):
    assert "--install-completion" in run_agent("--help").stdout


def test_python_m_runs_slash_commands(workspace):
    skill(workspace, "t", "exec")
    result = subprocess.run(
        [sys.executable, "-m", "mdagent", "/t", "echo via-m"],
        cwd=workspace,
        capture_output=True,
        text=True,
    )
    assert result.stdout == "via-m\n"


def test_completion_of_a_commands_arguments(workspace, run_agent):
    (workspace / "notes.txt").write_text("x")
    (workspace / "src").mkdir()
    config(
        workspace,
        "c.yaml",
        "commands:\n  env-cmd:\n    tool: exec\n    completions: [staging, production]\n",
    )

    def complete(words: str, cword: str) -> list[str]:
        env = {"_AGENT_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": cword}
        return run_agent(env=env).stdout.split()

    assert complete("agent /count ", "2") == ["notes.txt", "src/"]
    assert complete("agent /count no", "2") == ["notes.txt"]
    assert complete("agent /env-cmd pro", "2") == ["production"]


def test_a_command_starting_with_a_dash_is_the_command(workspace, run_agent):
    skill(workspace, "t", "exec")
    result = run_agent("/t", "--version")  # bash's own --version, were it an option
    assert result.returncode == 127 and "--version: command not found" in result.stderr


def test_a_tool_may_reuse_another_through_a_merge_key_and_change_values(workspace, run_agent):
    # YAML's `<<` is for exactly this: a shared block with some values replaced.
    config(
        workspace,
        "hi.yaml",
        "tools:\n  hi: &base\n    description: Say hi\n"
        "    params: {name: {type: string, description: Who}}\n"
        '    required: [name]\n    run: [echo, "hi {name}"]\n'
        '  hey:\n    <<: *base\n    description: Say hey\n    run: [echo, "hey {name}"]\n'
        "commands:\n  hey: {tool: hey, arg-mode: parsed}\n",
    )
    checked = run_agent("check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    done = run_agent("/hey", "bob")
    assert (done.returncode, done.stdout) == (0, "hey bob\n")
