"""Notices: the modules below the edges hand them over; the edge shows them."""

from __future__ import annotations

import logging

from mdagent.core import notices


def test_a_sink_gets_each_notice_and_says_whether_it_warns():
    seen = []
    previous = notices.show_with(lambda message, warning: seen.append((message, warning)))
    try:
        notices.tell("a note")
        notices.warn("a warning")
    finally:
        notices.show_with(previous)
    assert seen == [("a note", False), ("a warning", True)]


def test_without_an_edge_a_notice_goes_to_the_log_not_the_screen(caplog, capsys):
    previous = notices.show_with(None)
    try:
        with caplog.at_level(logging.INFO, logger="mdagent"):
            notices.tell("a note")
            notices.warn("a warning")
    finally:
        notices.show_with(previous)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, "a note"),
        (logging.WARNING, "a warning"),
    ]
    assert capsys.readouterr() == ("", "")


def test_a_note_told_once_is_told_again_only_after_forget():
    seen = []
    previous = notices.show_with(lambda message, warning: seen.append(message))
    try:
        notices.forget()
        notices.tell_once("no Landlock here")
        notices.tell_once("no Landlock here")
        notices.forget()  # a new run in this process
        notices.tell_once("no Landlock here")
    finally:
        notices.show_with(previous)
        notices.forget()
    assert seen == ["no Landlock here", "no Landlock here"]


def test_the_console_shows_a_notice_as_one_line_on_stderr(capsys):
    from mdagent.ui.console import show_notice

    show_notice("added allow rule `exec(make)`")
    show_notice("hook failed", warning=True)
    assert (
        capsys.readouterr().err
        == "agent: added allow rule `exec(make)`\nagent: warning: hook failed\n"
    )


def test_the_entry_point_shows_notices_on_stderr(run_agent, workspace):
    # A before hook that fails with on_error: warn: its warning comes from
    # mdagent.tools.hooks, below the edge, and reaches the person through the sink.
    skill = workspace / ".agents" / "skills" / "t" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: t\ndescription: t\ncommand-dispatch: tool\ncommand-tool: exec\n"
        "command-arg-mode: raw\n---\nRuns exec.\n"
    )
    config = workspace / ".agents" / "config" / "agent.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "hooks:\n  before:\n    - run: 'echo oops >&2; exit 1'\n      on_error: warn\n"
    )
    result = run_agent("/t", "echo hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hi\n"
    assert "agent: warning: before hook" in result.stderr and "oops" in result.stderr
