"""Approval answers with a scope (issue 35, item 2), in tmux through the real ``agent``.

``s`` (yes for this session), ``t`` (no, and the reason goes to the model),
``a`` (always: a suggested prefix rule the person may edit, in a layer they
choose) and the time waited for the person kept apart from the run time.
The model is the scripted server on 127.0.0.1; what it is sent next is read
from the server's record.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import write
from model_server import ModelServer
from test_session_daily_e2e import PROMPT, Tmux, model, sent

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

QUESTION = re.escape("Run it? [y]es / [s]ession / [t]ell / [n]o / [a]lways:")  # blanks trimmed


def exec_call(command: str) -> dict:
    return {"tool_calls": [{"name": "exec", "arguments": {"command": command}}]}


def files_under(*roots: Path) -> dict[str, str]:
    """Every file under ``roots`` (but the state), with its text: what "nothing written" compares."""
    found = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                found[str(path)] = path.read_text(errors="replace")
    return found


def tool_results(server: ModelServer) -> list[str]:
    """The tool results the model was sent, in order, in the last request."""
    messages = server.requests[-1]["json"]["messages"]
    return [str(m.get("content")) for m in messages if m.get("role") == "tool"]


def test_yes_for_this_session_runs_the_same_call_unasked_and_a_new_session_asks_again(
    workspace, tmp_path, hermetic
):
    before = files_under(workspace, hermetic["home"])
    script = [
        exec_call("echo scoped-run"),
        {"text": "first done"},
        exec_call("echo scoped-run"),  # the very same call: runs unasked
        {"text": "second done"},
        exec_call("echo scoped-run --more"),  # another call: asked
        {"text": "third done"},
    ]
    with (
        ModelServer(script) as server,
        Tmux(tmp_path, *model(server), cwd=workspace, columns=100) as pane,
    ):
        pane.expect(PROMPT)
        pane.type("run it")
        pane.expect(QUESTION)
        pane.type("s")
        pane.expect("first done")
        pane.expect(PROMPT)
        pane.type("again")
        pane.expect("second done")
        pane.expect(PROMPT)
        assert pane.screen().count("Run it?") == 1
        pane.type("once more, a little different")
        pane.expect(QUESTION)  # never widened: other arguments are another call
        pane.type("n")
        pane.expect("third done")
        pane.type("/exit")
        assert pane.exit_status() == 0
        results = tool_results(server)
    assert [json.loads(r)["ok"] for r in results] == [True, True, False]
    assert "scoped-run" in results[1]
    assert files_under(workspace, hermetic["home"]) == before  # nothing written

    # A new session asks again.
    with (
        ModelServer([exec_call("echo scoped-run"), {"text": "asked again"}]) as server,
        Tmux(tmp_path, *model(server), cwd=workspace, columns=100) as pane,
    ):
        pane.expect(PROMPT)
        pane.type("run it")
        pane.expect(QUESTION)
        pane.type("n")
        pane.expect("asked again")
        pane.type("/exit")
        assert pane.exit_status() == 0
    assert files_under(workspace, hermetic["home"]) == before


def test_always_saves_the_edited_suggestion_not_the_literal_line(workspace, tmp_path, hermetic):
    project = write(
        workspace / ".agents" / "config" / "agent.yaml",
        "# mine\npolicy:\n  allow: ['exec(ls:*)']\n",
    )
    with (
        ModelServer([exec_call("ls -1 && git status --short"), {"text": "ok"}]) as server,
        Tmux(tmp_path, *model(server), cwd=workspace, columns=120) as pane,
    ):
        pane.expect(PROMPT)
        pane.type("look")
        # `ls` is allowed already: the suggestion is a prefix rule for the rest.
        pane.expect(
            re.escape("[a]lways saves exec(git status:*) in the project layer\n(to change it: a ")
        )
        pane.expect(QUESTION)
        pane.type("a user exec(git status --short)")
        pane.expect(r"added allow rule `exec\(git status --short\)` to .*config/agent\.yaml")
        pane.expect("ok")
        pane.type("/exit")
        assert pane.exit_status() == 0
    user = yaml.safe_load((hermetic["home"] / "config" / "agent.yaml").read_text())
    assert user["policy"]["allow"] == ["exec(git status --short)"]
    assert project.read_text() == "# mine\npolicy:\n  allow: ['exec(ls:*)']\n"


def test_always_with_enter_alone_saves_the_suggested_prefix_rule(workspace, tmp_path, hermetic):
    with (
        ModelServer(
            [exec_call("ls -1 && git status --short"), {"text": "ok"}, exec_call("git status")]
            + [{"text": "covered"}]
        ) as server,
        Tmux(tmp_path, *model(server), cwd=workspace, columns=120) as pane,
    ):
        pane.expect(PROMPT)
        pane.type("look")
        pane.expect(re.escape("[a]lways saves exec(ls:*), exec(git status:*) in the project layer"))
        pane.expect(QUESTION)
        pane.type("a")
        pane.expect("ok")
        pane.expect(PROMPT)
        pane.type("and status")
        pane.expect("covered")  # the saved prefix covers `git status` alone: not asked
        assert pane.screen().count("Run it?") == 1
        pane.type("/exit")
        assert pane.exit_status() == 0
    saved = yaml.safe_load((workspace / ".agents" / "config" / "agent.yaml").read_text())
    assert saved["policy"]["allow"] == ["exec(ls:*)", "exec(git status:*)"]
    text = (workspace / ".agents" / "config" / "agent.yaml").read_text()
    assert "ls -1 && git status --short" not in text  # never the literal line
    assert not (hermetic["home"] / "config" / "agent.yaml").exists()


def test_tell_sends_the_reason_to_the_model(workspace, tmp_path):
    with (
        ModelServer([exec_call("make test"), {"text": "understood"}]) as server,
        Tmux(tmp_path, *model(server), cwd=workspace, columns=100) as pane,
    ):
        pane.expect(PROMPT)
        pane.type("test it")
        pane.expect(QUESTION)
        pane.type("t")
        pane.expect(re.escape("Tell the model why (Enter: no reason):"))
        pane.type("the full suite is slow; run pytest -k policy")
        pane.expect("✗ exec: the user declined this exec call and says: the full suite")
        pane.expect("understood")
        pane.type("/exit")
        assert pane.exit_status() == 0
    request = sent(server)
    assert (
        "the user declined this exec call and says: the full suite is slow; run pytest -k policy"
        in request
    )
    assert len(server.requests) == 2  # the reason went with the next request


def test_the_call_line_and_the_audit_log_show_run_time_and_waiting_apart(
    workspace, tmp_path, run_agent
):
    with (
        ModelServer([exec_call("echo waited-for"), {"text": "ran"}]) as server,
        Tmux(tmp_path, *model(server), cwd=workspace, columns=100) as pane,
    ):
        pane.expect(PROMPT)
        pane.type("go")
        pane.expect(QUESTION)
        pane.type("y")
        pane.expect(r"✓ exec · exit 0 · [\d.]+ s \(waited [\d.]+ s for you\)")
        pane.expect("ran")
        pane.type("/exit")
        assert pane.exit_status() == 0
    rows = json.loads(run_agent("logs", "--json").stdout)
    row = next(r for r in rows if r["args"] == {"command": "echo waited-for"})
    assert row["approved_by"] == "user"
    assert row["wait_ms"] is not None and row["duration_ms"] is not None  # kept apart
    listing = run_agent("logs").stdout.splitlines()
    assert listing[0].split()[5:7] == ["TOOK", "WAITED"]
