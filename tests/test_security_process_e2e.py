"""Network and process safety through the real ``agent`` executable (issue 9, items 11-13).

- every URL an ``http:`` tool connects to, redirects included, meets the
  ``fetch(domain:…)`` rules, and hosts are compared however they are spelt;
- a server trickling bytes cannot hold ``fetch`` or an ``http:`` tool past
  its timeout;
- SIGTERM and SIGHUP stop the running child's whole process group, put the
  call on the record as interrupted and exit 143 / 129.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

from conftest import agent_executable, alive, gone_soon, write
from model_server import ModelServer

# -- a web server that misbehaves on request ----------------------------------------


class Web(BaseHTTPRequestHandler):
    """``/hello``; ``/to/<location>`` redirects; ``/trickle`` sends a byte every 0.2 s for 30 s."""

    seen: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's naming
        self.seen.append(self.path)
        if self.path == "/hello":
            body = b"hello\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path.startswith("/to/"):
            location = unquote(self.path[len("/to/") :])
            self.send_response(302)
            self.send_header("Location", location.replace("{port}", str(self.server.server_port)))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "150")
            self.end_headers()
            with contextlib.suppress(OSError):
                for _ in range(150):  # 30 s in all, never 1 s without a byte
                    self.wfile.write(b".")
                    self.wfile.flush()
                    time.sleep(0.2)
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


@pytest.fixture
def web():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Web)
    httpd.daemon_threads = True
    Web.seen = []
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def config(ws: Path, name: str, text: str) -> None:
    write(ws / ".agents" / "config" / name, text)


def command(ws: Path, name: str, tool: str) -> None:
    """``/name ARGS`` runs the tool ``tool`` with ARGS as its one argument."""
    write(
        ws / ".agents" / "skills" / name / "SKILL.md",
        f"---\nname: {name}\ndescription: run\ncommand-dispatch: tool\ncommand-tool: {tool}\n---\n",
    )


def http_tool(ws: Path, url: str, timeout: float | None = None) -> None:
    """``/web`` calls an ``http:`` tool that GETs ``url``."""
    limit = f", timeout: {timeout}" if timeout else ""
    config(
        ws,
        "web.yaml",
        f"tools:\n  web:\n    description: Get a page\n    http: {{url: '{url}'{limit}}}\n"
        "commands:\n  web: {tool: web}\n",
    )


# -- item 11: one policy-checked fetch -------------------------------------------------


def test_an_http_tool_redirected_to_a_denied_domain_is_refused(workspace, run_agent, web):
    to_localhost = quote("http://localhost:{port}/hello", safe="")
    http_tool(workspace, f"http://127.0.0.1:{web}/to/{to_localhost}")
    config(workspace, "agent.yaml", "policy:\n  deny: ['fetch(domain:localhost)']\n")
    result = run_agent("--json", "/web")
    data = json.loads(result.stdout)
    assert result.returncode == 126, result.stderr
    assert data["code"] == "DENIED"
    assert data["error"] == (
        f"redirect to http://localhost:{web}/hello refused: "
        "denied by policy rule `fetch(domain:localhost)`"
    )
    assert Web.seen == [f"/to/{to_localhost}"]  # /hello was never asked for


def test_an_http_tool_url_meets_the_fetch_deny_rules(workspace, run_agent, web):
    http_tool(workspace, f"http://127.1:{web}/hello")
    config(workspace, "agent.yaml", "policy:\n  deny: ['fetch(domain:127.0.0.1)']\n")
    result = run_agent("/web")
    assert result.returncode == 126
    assert "denied by policy rule `fetch(domain:127.0.0.1)`" in result.stderr
    assert Web.seen == []


HOST_SPELLINGS = [
    "127.1",
    "0x7f.1",
    "2130706433",
    "0177.0.0.1",
    "[::ffff:127.0.0.1]",
    "127.0.0.1.",
    "0x7F.0.0.1",
]


def test_a_deny_rule_sees_every_spelling_of_an_address(workspace, run_agent, web):
    config(workspace, "agent.yaml", "policy:\n  mode: full\n  deny: ['fetch(domain:127.0.0.1)']\n")
    urls = [f"http://{host}:{web}/hello" for host in HOST_SPELLINGS]
    script = [{"tool_calls": [{"name": "fetch", "arguments": {"url": u}}]} for u in urls]
    with ModelServer([*script, {"text": "done"}]) as server:
        result = run_agent("--provider", "openai", "--base-url", server.url, "ask", "go")
        last = server.requests[-1]["json"]["messages"]
        results = [json.loads(m["content"]) for m in last if m.get("role") == "tool"]
    assert result.returncode == 0, result.stderr
    assert len(results) == len(urls)
    for url, outcome in zip(urls, results, strict=True):
        assert outcome.get("code") == "DENIED", (url, outcome)
        assert "fetch(domain:127.0.0.1)" in outcome["error"]
    assert Web.seen == []  # not one of them reached the server


@pytest.mark.parametrize("tool", ["fetch", "http"])
def test_a_trickling_server_cannot_hold_a_call_past_its_timeout(workspace, run_agent, web, tool):
    trickle = f"http://127.0.0.1:{web}/trickle"
    if tool == "fetch":
        config(workspace, "get.yaml", "commands:\n  get: {tool: fetch, arg-mode: parsed}\n")
        config(workspace, "agent.yaml", "fetch: {timeout: 2}\n")
        argv = ["/get", trickle]
    else:
        http_tool(workspace, trickle, timeout=2)
        argv = ["/web"]
    started = time.monotonic()
    result = run_agent(*argv, timeout=40)
    took = time.monotonic() - started
    # The server would take 30 s; each byte comes well within a read timeout.
    assert took < 15, took
    assert result.returncode == 124, result.stderr
    assert "timed out after 2 s" in result.stderr


# -- item 13: SIGTERM and SIGHUP --------------------------------------------------------


def start_agent(ws: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [agent_executable(), *args],
        cwd=ws,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
        start_new_session=True,
    )


def wait_for_pid(path: Path, proc: subprocess.Popen, within: float = 20.0) -> int:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        if proc.poll() is not None:
            raise AssertionError(f"agent ended early: {proc.communicate()}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the grandchild never started")


# A command whose grandchild (a background sleep) writes its pid, then waits.
GRANDCHILD = "sleep 100 & echo $! > grandchild.pid; sleep 100"


def interrupted_calls(run_agent) -> list[dict]:
    rows = json.loads(run_agent("logs", "--json").stdout)
    return [r for r in rows if r["tool"] == "exec" and r.get("error") == "interrupted"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_ends_a_typed_command_and_its_group(workspace, run_agent, sig):
    command(workspace, "t", "exec")
    agent = start_agent(workspace, "/t", GRANDCHILD)
    grandchild = wait_for_pid(workspace / "grandchild.pid", agent)
    try:
        agent.send_signal(sig)
        _, err = agent.communicate(timeout=20)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(grandchild, signal.SIGKILL)
    assert agent.returncode == 128 + sig, err
    assert "interrupted" in err and sig.name in err
    assert gone_soon(grandchild), "the grandchild outlived the agent"
    assert len(interrupted_calls(run_agent)) == 1


def test_sigterm_ends_a_models_command_and_its_group(workspace, run_agent):
    config(workspace, "agent.yaml", "policy:\n  mode: full\n")
    script = [{"tool_calls": [{"name": "exec", "arguments": {"command": GRANDCHILD}}]}]
    with ModelServer([*script, {"text": "done"}]) as server:
        agent = start_agent(
            workspace, "--provider", "openai", "--base-url", server.url, "ask", "go"
        )
        grandchild = wait_for_pid(workspace / "grandchild.pid", agent)
        try:
            agent.send_signal(signal.SIGTERM)
            _, err = agent.communicate(timeout=20)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(grandchild, signal.SIGKILL)
    assert agent.returncode == 143, err
    assert not alive(grandchild) or gone_soon(grandchild)
    assert len(interrupted_calls(run_agent)) == 1


def test_sigterm_ends_the_interactive_session_and_its_command(workspace, run_agent):
    command(workspace, "t", "exec")
    agent = subprocess.Popen(
        [agent_executable()],
        cwd=workspace,
        stdin=subprocess.PIPE,  # held open: the session would read on for ever
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    agent.stdin.write(f"/t {GRANDCHILD}\n")
    agent.stdin.flush()
    grandchild = wait_for_pid(workspace / "grandchild.pid", agent)
    try:
        agent.send_signal(signal.SIGTERM)
        _, err = agent.communicate(timeout=20)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(grandchild, signal.SIGKILL)
    assert agent.returncode == 143, err
    assert gone_soon(grandchild)
    assert len(interrupted_calls(run_agent)) == 1


def test_nohup_keeps_sighup_ignored(workspace, run_agent):
    """``nohup agent …``: a process started ignoring SIGHUP keeps ignoring it."""
    command(workspace, "t", "exec")
    agent = subprocess.Popen(
        [agent_executable(), "/t", "echo started > started.txt; sleep 2; echo done"],
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    end = time.monotonic() + 20
    while not (workspace / "started.txt").exists() and time.monotonic() < end:
        time.sleep(0.05)
    agent.send_signal(signal.SIGHUP)
    out, err = agent.communicate(timeout=20)
    assert agent.returncode == 0, err
    assert out.endswith("done\n")
