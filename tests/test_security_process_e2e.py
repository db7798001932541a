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
import random
import signal
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import (
    ask,
    command_skill,
    config,
    gone_soon,
    processes_running,
    provider_args,
    scripted_model,
    settings,
    start_agent,
    tool_results,
    wait_for_process,
    wait_for_text,
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
    http_tool(workspace, f"{web.url}/to/{to_localhost}")
    settings(workspace, "policy:\n  deny: ['fetch(domain:localhost)']\n")
    result = run_agent("--json", "/web")
    data = json.loads(result.stdout)
    assert result.returncode == 126, result.stderr
    assert data["code"] == "DENIED"
    assert data["error"] == (
        f"redirect to http://localhost:{web.port}/hello refused: "
        "denied by policy rule `fetch(domain:localhost)`"
    )
    assert web.paths == [f"/to/{to_localhost}"]  # /hello was never asked for


def test_an_http_tool_url_meets_the_fetch_deny_rules(workspace, run_agent, web):
    http_tool(workspace, f"http://127.1:{web.port}/hello")
    settings(workspace, "policy:\n  deny: ['fetch(domain:127.0.0.1)']\n")
    result = run_agent("/web")
    assert result.returncode == 126
    assert "denied by policy rule `fetch(domain:127.0.0.1)`" in result.stderr
    assert web.paths == []


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
    settings(workspace, "policy:\n  mode: full\n  deny: ['fetch(domain:127.0.0.1)']\n")
    urls = [f"http://{host}:{web.port}/hello" for host in HOST_SPELLINGS]
    with scripted_model(*(("fetch", {"url": u}) for u in urls)) as server:
        result = ask(run_agent, server)
        results = tool_results(server)
    assert result.returncode == 0, result.stderr
    assert len(results) == len(urls)
    for url, outcome in zip(urls, results, strict=True):
        assert outcome.get("code") == "DENIED", (url, outcome)
        assert "fetch(domain:127.0.0.1)" in outcome["error"]
    assert web.paths == []  # not one of them reached the server


@pytest.mark.parametrize("tool", ["fetch", "http"])
def test_a_trickling_server_cannot_hold_a_call_past_its_timeout(workspace, run_agent, web, tool):
    trickle = f"{web.url}/trickle"
    if tool == "fetch":
        config(workspace, "get.yaml", "commands:\n  get: {tool: fetch, arg-mode: parsed}\n")
        settings(workspace, "fetch: {timeout: 2}\n")
        argv = ["/get", trickle]
    else:
        http_tool(workspace, trickle, timeout=2)
        argv = ["/web"]
    result = run_agent(*argv, timeout=60)
    # Each byte comes well within a read timeout; the whole call's deadline ends it
    # while the server still has 30 s to send.
    assert result.returncode == 124, result.stderr
    assert "timed out after 2 s" in result.stderr
    assert web.finished == []


# -- item 13: SIGTERM and SIGHUP --------------------------------------------------------


# A command whose grandchild (a background sleep, found by its odd duration:
# a model's command runs in a PID namespace, where $! is no pid out here;
# random, for other test runs on the machine) has started, then waits.
SLEEP = f"sleep 100.{random.randrange(10**6):06d}"
GRANDCHILD = f"{SLEEP} & echo started > grandchild.pid; sleep 100"

# Ways the command comes to run: the agent's arguments (given the model
# server); what is typed into its stdin (None: nothing, stdin is closed); and
# whether the agent says on stderr what stopped it (a typed command does).
STARTS = {
    "typed": (lambda server: ["/t", GRANDCHILD], None, True),
    "models": (lambda server: [*provider_args(server), "ask", "go"], None, False),
    # the session's stdin is held open: it would read on for ever
    "sessions": (lambda server: [], f"/t {GRANDCHILD}\n", False),
}


def interrupted_calls(run_agent) -> list[dict]:
    rows = json.loads(run_agent("logs", "--json").stdout)
    return [r for r in rows if r["tool"] == "exec" and r.get("error") == "interrupted"]


@pytest.mark.parametrize(
    ("start", "sig"),
    [
        ("typed", signal.SIGTERM),
        ("typed", signal.SIGHUP),
        ("models", signal.SIGTERM),
        ("sessions", signal.SIGTERM),
    ],
    ids=["typed-SIGTERM", "typed-SIGHUP", "models-SIGTERM", "sessions-SIGTERM"],
)
def test_a_stop_signal_ends_the_running_command_and_its_group(workspace, run_agent, start, sig):
    command_skill(workspace)
    settings(workspace, "policy:\n  mode: full\n")
    argv, typed, says_why = STARTS[start]
    with scripted_model(("exec", {"command": GRANDCHILD})) as server:
        stdin = subprocess.DEVNULL if typed is None else subprocess.PIPE
        agent = start_agent(workspace, *argv(server), stdin=stdin)
        if typed is not None:
            agent.stdin.write(typed)
            agent.stdin.flush()
        try:
            wait_for_text(workspace / "grandchild.pid", agent)
            grandchild = wait_for_process(SLEEP)
            agent.send_signal(sig)
            _, err = agent.communicate(timeout=20)
        finally:
            agent.kill()
            agent.wait()
            for pid in processes_running(SLEEP):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert agent.returncode == 128 + sig, err
    if says_why:
        assert "interrupted" in err and sig.name in err
    assert gone_soon(grandchild), "the grandchild outlived the agent"
    assert len(interrupted_calls(run_agent)) == 1


def test_nohup_keeps_sighup_ignored(workspace):
    """``nohup agent …``: a process started ignoring SIGHUP keeps ignoring it."""
    command_skill(workspace)
    agent = start_agent(
        workspace,
        "/t",
        "echo started > started.txt; sleep 2; echo done",
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    wait_for_text(workspace / "started.txt", agent)
    agent.send_signal(signal.SIGHUP)
    out, err = agent.communicate(timeout=20)
    assert agent.returncode == 0, err
    assert out.endswith("done\n")
