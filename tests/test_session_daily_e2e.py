"""The session as a daily driver (issue 35), in tmux: what the screen shows, what the model is sent.

Each test runs the real ``agent`` in a tmux pane of a private tmux server
(its own socket in the test's temp folder, killed at the end) and reads the
pane with ``capture-pane -J``: a line the terminal wrapped comes back joined,
so a line wider than the pane is one the program wrote too wide. The model is
the scripted server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import agent_executable, trust_as_is
from model_server import ModelServer

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

PROMPT = "›"


class Tmux:
    """``agent ARGS`` in a ``columns`` x ``rows`` tmux pane of a private tmux server."""

    def __init__(
        self,
        tmp: Path,
        *args: str,
        cwd: Path,
        columns: int = 60,
        rows: int = 40,
        env: dict[str, str] | None = None,
    ) -> None:
        name = f"tmux-{os.getpid()}-{time.monotonic_ns()}"
        self.socket = str(tmp / f"{name}.sock")
        inherited = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
        self.env = dict(inherited, **(env or {}))
        trust_as_is(cwd, self.env)
        status = tmp / f"{name}.status"
        self.status = status
        command = " ".join(shlex.quote(a) for a in [agent_executable(), *args])
        # The pane stays after agent ends (its last screen can be read), and says how it ended.
        script = f"{command}; echo $? > {shlex.quote(str(status))}; exec sleep 600"
        self._tmux(
            "-f", "/dev/null", "new-session", "-d", "-x", str(columns), "-y", str(rows),
            "-c", str(cwd), "sh", "-c", script,
        )  # fmt: skip
        self._tmux("set-option", "-g", "history-limit", "5000")
        self._tmux("set-option", "-s", "escape-time", "10")  # Esc reaches agent at once
        self.seen = 0  # where the next expect starts looking

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", self.socket, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=10,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def __enter__(self) -> Tmux:
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=10)
        Path(self.socket).unlink(missing_ok=True)

    def screen(self) -> str:
        """The pane and its history, wrapped lines joined, trailing blanks dropped."""
        text = self._tmux("capture-pane", "-p", "-J", "-S", "-")
        return "\n".join(line.rstrip() for line in text.splitlines()).rstrip("\n")

    def lines(self) -> list[str]:
        return self.screen().splitlines()

    def expect(self, pattern: str, timeout: float = 10.0) -> re.Match[str]:
        """Wait for ``pattern`` on the screen after the last match (a deadline, never forever)."""
        regex = re.compile(pattern, re.MULTILINE)
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            match = regex.search(text, self.seen)
            if match:
                self.seen = match.end()
                return match
            if time.monotonic() >= deadline:
                raise AssertionError(f"no {pattern!r} within {timeout} s; the pane shows:\n{text}")
            time.sleep(0.05)

    def wait_for(self, holds, what: str, timeout: float = 10.0) -> None:
        """Wait until ``holds(lines)`` is true of the screen's lines."""
        deadline = time.monotonic() + timeout
        while not holds(self.lines()):
            assert time.monotonic() < deadline, f"never {what}; the pane shows:\n{self.screen()}"
            time.sleep(0.05)

    def type(self, line: str) -> None:
        self._tmux("send-keys", "-l", line)
        self._tmux("send-keys", "Enter")

    def keys(self, *names: str) -> None:
        self._tmux("send-keys", *names)

    def exit_status(self, timeout: float = 10.0) -> int:
        deadline = time.monotonic() + timeout
        while not self.status.exists() or not self.status.read_text().strip():
            assert time.monotonic() < deadline, (
                f"agent still runs; the pane shows:\n{self.screen()}"
            )
            time.sleep(0.05)
        return int(self.status.read_text())


def model(server: ModelServer) -> list[str]:
    return ["--provider", "openai", "--base-url", server.url]


def sent(server: ModelServer, request: int = -1) -> str:
    """What request ``request`` sent the model, as text."""
    return json.dumps(server.requests[request]["json"]["messages"], ensure_ascii=False)


def assert_fits(lines: list[str], width: int) -> None:
    too_wide = [line for line in lines if len(line) > width]
    assert not too_wide, f"wider than {width}:\n" + "\n".join(too_wide)


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- item 4: a narrow terminal --------------------------------------------------------------


def test_at_60_columns_nothing_on_the_screen_is_wider_or_cut_mid_word(
    workspace, tmp_path, run_agent
):
    usage = {"input_tokens": 123456, "output_tokens": 7890}
    # Each listing, and the end of what it prints (the next line is typed only then:
    # keys typed while output is printed are echoed into it).
    listings = {
        "/help": r"Ctrl-D\s+leaves",
        "/sessions": r"^\* \w{12}",
        "/tools": r"^todos +Find",
        "/commands": r"^/todos",
        "/skills": r"^term +Run a shell",
    }
    with (
        ModelServer([{"text": "Fine.", "usage": usage}]) as server,
        Tmux(tmp_path, *model(server), cwd=workspace) as pane,
    ):
        pane.expect(r"^mdagent")
        pane.type("a first message so there is a session")
        pane.expect("Fine.")
        pane.expect(PROMPT)
        for line, end in listings.items():
            pane.type(line)
            pane.expect(re.escape(line))
            pane.expect(end)
            pane.expect(PROMPT)
        lines = pane.lines()
        pane.type("/exit")
        assert pane.exit_status() == 0
    assert_fits(lines, 60)
    assert lines[0] == "mdagent — /help for commands, /exit to leave"  # 44 wide: it fits
    # Every word on the screen is whole, or cut with "…": the same listings
    # piped (nothing shortened) give the words; the keys line is wrapped between them.
    piped = run_agent(input="\n".join(listings) + "\n").stdout
    vocabulary = set(piped.split()) | set(lines[0].split()) | {"*", PROMPT}
    from mdagent.session.session_commands import KEYS

    typed = "a first message so there is a session Fine."
    vocabulary |= set(typed.split()) | set(KEYS.split())  # KEYS: only on a terminal
    bar = lines[-1]
    for line in lines[:-1]:
        for word in line.split():
            assert word in vocabulary or word.endswith("…"), (word, line)
    assert any(line.startswith("Keys:") for line in lines)
    # The status bar: the model, and the tokens in their shorter form, within the width.
    assert "gpt-4o-mini" in bar and "123k in / 7.9k out" in bar, bar


def test_narrower_than_the_banner_it_shortens(workspace, tmp_path):
    with (
        ModelServer([]) as server,
        Tmux(tmp_path, *model(server), cwd=workspace, columns=30) as pane,
    ):
        pane.expect(r"^mdagent — /help, /exit$")
        pane.type("/exit")
        assert pane.exit_status() == 0
        assert_fits(pane.lines(), 30)


@pytest.mark.parametrize("command", [["commands"], ["tools"], ["logs", "--all"], ["sessions"]])
def test_the_shell_tables_fit_60_columns_and_cut_at_a_word_with_an_ellipsis(
    workspace, tmp_path, run_agent, command
):
    with ModelServer([{"text": "hi"}]) as server:
        assert run_agent(*model(server), "ask", "a title for the sessions table").returncode == 0
    assert run_agent("/term", "echo", "something logged").returncode == 0
    whole = run_agent(*command).stdout  # piped: nothing shortened
    vocabulary = set(whole.split()) | {workspace.name}  # logs: a long path by its name
    # logs: on a terminal the time is MM-DD HH:MM (the ISO form piped)
    vocabulary |= {w[5:16].replace("T", " ") for w in whole.split() if w[:2] == "20"}
    vocabulary |= {part for w in list(vocabulary) for part in w.split()}
    with Tmux(tmp_path, *command, cwd=workspace) as pane:
        assert pane.exit_status() == 0
        lines = pane.lines()
    assert len(lines) >= 2, lines
    assert_fits(lines, 60)
    for line in lines:
        for word in line.split():
            assert word in vocabulary or word.endswith("…"), (word, line)
    assert any("…" in line for line in lines)  # the check can fail: something was cut


# -- item 5: messages that tell the truth ---------------------------------------------------


def test_a_broken_command_file_is_named_broken_at_its_line_not_unknown(workspace, tmp_path):
    skill = workspace / ".agents" / "skills" / "broken"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\ndescription: [unclosed\n---\n")
    commands = workspace / ".agents" / "config" / "commands.yaml"
    commands.parent.mkdir(parents=True, exist_ok=True)
    commands.write_text('commands:\n  deploy:\n    tool: exec\n    description: "unclosed\n')
    with ModelServer([]) as server, Tmux(tmp_path, *model(server), cwd=workspace) as pane:
        pane.expect(PROMPT)
        pane.type("/broken")
        pane.expect(r"agent: /broken is broken: \S*broken/SKILL\.md:\d+:\d+: invalid YAML")
        pane.type("/deploy")
        pane.expect(r"agent: /deploy is broken: \S*commands\.yaml:\d+:\d+: invalid YAML")
        pane.type("/nothere")
        pane.expect(r"unknown command /nothere")
        assert "unknown command /broken" not in pane.screen()
        assert "unknown command /deploy" not in pane.screen()
        pane.type("/exit")
        assert pane.exit_status() == 0


def test_a_refused_local_endpoint_is_said_at_once_without_retries(workspace, tmp_path):
    url = f"http://127.0.0.1:{unused_port()}/v1"
    with Tmux(tmp_path, "--provider", "openai", "--base-url", url, cwd=workspace) as pane:
        pane.expect(PROMPT)
        pane.type("hello")
        pane.expect(r"connection refused, nothing listens at that port on this machine")
        pane.expect(PROMPT)
        assert "retrying" not in pane.screen()  # no silent (or spoken) waiting
        pane.type("/exit")
        assert pane.exit_status() == 0


def test_no_key_at_the_providers_own_host_fails_when_the_session_opens(workspace, tmp_path):
    no_keys = {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}
    with Tmux(tmp_path, cwd=workspace, env=no_keys) as pane:
        assert pane.exit_status() == 2
        screen = pane.screen()
    assert screen.startswith("agent: no API key: the model would be openai")
    assert PROMPT not in screen and "mdagent —" not in screen  # before any prompt
    # Another endpoint (a local server) needs no key: the session opens.
    with (
        ModelServer([{"text": "local answer"}]) as server,
        Tmux(tmp_path, *model(server), cwd=workspace, env=no_keys) as pane,
    ):
        pane.expect(PROMPT)
        pane.type("hi")
        pane.expect("local answer")
        pane.type("/exit")
        assert pane.exit_status() == 0


def test_resume_keeps_the_token_count(workspace, tmp_path):
    usage = {"input_tokens": 1500, "output_tokens": 40}
    with (
        ModelServer([{"text": "counted", "usage": usage}]) as server,
        Tmux(tmp_path, *model(server), cwd=workspace, columns=100) as pane,
    ):
        pane.expect(PROMPT)
        pane.type("spend some tokens")
        pane.expect("counted")
        pane.expect(PROMPT)
        bar = re.compile(r"session (\w{12})")
        # The bar is drawn after the prompt: wait for it, never read it once.
        pane.wait_for(lambda lines: bar.search(lines[-1]), "the session id in the bar")
        session = bar.search(pane.lines()[-1]).group(1)
        pane.type(f"/resume {session}")
        pane.expect(r"resumed session")
        pane.expect(PROMPT)
        pane.type("/context")
        pane.expect(r"tokens this session: 1,500 in, 40 out")
        pane.expect(PROMPT)
        pane.wait_for(lambda lines: "tokens 1,500 in / 40 out" in lines[-1], "the count kept")
        pane.type("/exit")
        assert pane.exit_status() == 0


def test_logs_show_this_workspace_by_default_and_all_with_a_workspace_column(
    workspace, tmp_path, run_agent
):
    other = tmp_path / "other-project"
    (other / ".agents").mkdir(parents=True)
    trust_as_is(other)
    assert run_agent("/term", "echo", "here-call").returncode == 0
    assert run_agent("/term", "echo", "there-call", cwd=other).returncode == 0
    here = run_agent("logs")
    assert "here-call" in here.stdout and "there-call" not in here.stdout
    assert here.stdout.splitlines()[0].split()[:2] == ["TIME", "WORKSPACE"]
    every = run_agent("logs", "--all")
    assert "here-call" in every.stdout and "there-call" in every.stdout
    rows = {
        json.dumps(r["args"]): r["workspace"]
        for r in json.loads(run_agent("logs", "--all", "--json").stdout)
    }
    assert str(workspace.resolve()) in rows.values() and str(other.resolve()) in rows.values()
    there = [line for line in every.stdout.splitlines() if "there-call" in line]
    assert there and str(other.resolve()).replace(str(Path.home()), "~") in there[0]


# -- item 1: `!command` ---------------------------------------------------------------------


def test_bang_command_runs_live_and_the_next_request_carries_it(workspace, tmp_path):
    with (
        ModelServer([{"text": "I see forty-two."}]) as server,
        Tmux(tmp_path, *model(server), cwd=workspace) as pane,
    ):
        pane.expect(PROMPT)
        pane.type("!echo bang-$((6*7)); echo to-stderr >&2; exit 3")
        pane.expect(r"agent: exit status 3")
        shown = pane.lines()
        assert "bang-42" in shown and "to-stderr" in shown  # the shell ran it: $((6*7)) is 42
        pane.expect(PROMPT)
        assert server.requests == []  # nothing went to the model yet
        pane.type("what did it print?")
        pane.expect("I see forty-two.")
        pane.type("/exit")
        assert pane.exit_status() == 0
    request = sent(server)
    assert "echo bang-$((6*7))" in request and "bang-42" in request and "to-stderr" in request
    assert "exit status 3" in request
    assert request.index("bang-42") < request.index("what did it print?")


def test_bang_alone_is_a_shell_mode_until_esc(workspace, tmp_path):
    with (
        ModelServer([{"text": "noted both"}]) as server,
        Tmux(tmp_path, *model(server), cwd=workspace) as pane,
    ):
        pane.expect(PROMPT)
        pane.type("!")
        pane.expect(r"shell mode")
        pane.expect(r"^! $|^!$")  # the prompt says so
        pane.type("echo first-in-mode")
        pane.expect(r"^first-in-mode$")
        pane.type("printf '%s\\n' second-in-mode")
        pane.expect(r"^second-in-mode$")
        pane.expect(r"^!")
        pane.keys("Escape")
        # The prompt is › again (drawn where ! was).
        pane.wait_for(lambda lines: [x for x in lines if x][-2] == "›", "back to ›")
        pane.type("and now a message")
        pane.expect("noted both")
        pane.type("/exit")
        assert pane.exit_status() == 0
    (request,) = server.requests
    text = sent(server)
    assert "first-in-mode" in text and "second-in-mode" in text
    assert request["json"]["messages"][-1]["content"] == "and now a message"


def test_bang_follows_the_persons_policy(workspace, tmp_path):
    config = workspace / ".agents" / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "agent.yaml").write_text(
        'policy:\n  deny:\n    - {rule: "exec(rm *)", reason: "use trash instead"}\n'
    )
    (workspace / "keep.txt").write_text("kept\n")
    with ModelServer([]) as server, Tmux(tmp_path, *model(server), cwd=workspace) as pane:
        pane.expect(PROMPT)
        pane.type("!rm keep.txt")
        pane.expect(r"agent: not run: .*use trash instead")
        pane.type("/context")
        pane.expect(r"session: \(new, not started\)")  # nothing added to the conversation
        pane.type("/exit")
        assert pane.exit_status() == 0
    assert (workspace / "keep.txt").read_text() == "kept\n"


# -- item 3: live output, nothing hidden ----------------------------------------------------


def test_a_running_commands_first_lines_show_while_it_runs(workspace, tmp_path):
    flag = workspace / "done.flag"
    command = "echo early-line; while [ ! -e done.flag ]; do sleep 0.05; done; echo late-line"
    script = [
        {"tool_calls": [{"name": "exec", "arguments": {"command": command}}]},
        {"text": "finished"},
    ]
    with (
        ModelServer(script) as server,
        Tmux(tmp_path, "--yes", *model(server), cwd=workspace) as pane,
    ):
        pane.expect(PROMPT)
        pane.type("run it")
        pane.expect(r"running exec")  # the spinner, once the call takes a moment
        pane.expect(r"^  early-line$")  # under it, while the command still waits for the flag
        assert not flag.exists() and "late-line" not in pane.screen()
        flag.write_text("")
        # The spinner's lines are drawn over: look at the whole screen, not after a match.
        pane.wait_for(lambda lines: "finished" in lines, "the answer")
        lines = pane.lines()
        assert any(line.startswith("  ✓ exec · exit 0") for line in lines)
        assert not any("running exec" in line for line in lines)  # the spinner is gone
        assert_fits(lines, 60)
        pane.type("/exit")
        assert pane.exit_status() == 0


def test_ctrl_o_shows_a_folded_result_whole_and_history_reads_as_a_conversation(
    workspace, tmp_path
):
    command = "for i in $(seq 1 20); do echo row-$i; done"
    script = [
        {"tool_calls": [{"name": "exec", "arguments": {"command": command}}]},
        {"text": "Twenty rows."},
    ]
    with (
        ModelServer(script) as server,
        Tmux(tmp_path, "--yes", *model(server), cwd=workspace, env={"PAGER": ""}) as pane,
    ):
        pane.expect(PROMPT)
        pane.type("count to twenty")
        pane.expect(r"… 17 more lines")  # folded: three rows shown
        pane.expect("Twenty rows.")
        pane.expect(PROMPT)
        assert "row-17" not in pane.screen()
        pane.keys("C-o")  # the pager, on the whole screen
        pane.wait_for(lambda lines: "  row-20" in lines, "row-20 in the pager")
        shown = pane.lines()
        assert [f"  row-{i}" for i in range(1, 21)] == [x for x in shown if x.startswith("  row-")]
        pane.keys("q")
        pane.wait_for(lambda lines: "  row-17" not in lines, "the pager gone")
        pane.type("/history")
        pane.expect(r"^You: count to twenty$")
        pane.expect(r"^→ exec  for i in")
        pane.expect(r"^  ✓ exec · exit 0$")
        pane.expect(r"^    row-1$")
        pane.expect(r"^    … 17 more lines$")
        pane.expect(r"^Assistant: Twenty rows\.$")
        pane.type("/exit")
        assert pane.exit_status() == 0


def test_logs_of_a_session_are_shown_from_another_workspace(workspace, tmp_path, run_agent):
    script = [
        {"tool_calls": [{"name": "exec", "arguments": {"command": "echo in-a-session"}}]},
        {"text": "ok"},
    ]
    with ModelServer(script) as server:
        assert run_agent(*model(server), "--yes", "ask", "run it").returncode == 0
    (session,) = json.loads(run_agent("sessions", "--json").stdout)
    other = tmp_path / "elsewhere"
    (other / ".agents").mkdir(parents=True)
    trust_as_is(other)
    assert "in-a-session" not in run_agent("logs", cwd=other).stdout
    shown = run_agent("logs", "--session", session["id"], cwd=other)
    assert "in-a-session" in shown.stdout, shown.stdout + shown.stderr


def test_the_model_gets_the_whole_output_of_a_call_whose_tail_was_shown(workspace, tmp_path):
    command = "seq 1 500; echo done-on-stderr >&2"
    script = [
        {"tool_calls": [{"name": "exec", "arguments": {"command": command}}]},
        {"text": "read it"},
    ]
    with (
        ModelServer(script) as server,
        Tmux(tmp_path, "--yes", *model(server), cwd=workspace) as pane,
    ):
        pane.expect(PROMPT)
        pane.type("go")
        pane.expect("read it")
        pane.type("/exit")
        assert pane.exit_status() == 0
    (result,) = [m for m in server.requests[1]["json"]["messages"] if m["role"] == "tool"]
    data = json.loads(result["content"])
    assert data["stdout"].splitlines() == [str(i) for i in range(1, 501)]
    assert data["stderr"] == "done-on-stderr\n"
    assert "streamed" not in data  # the person saw a tail, not all of it
