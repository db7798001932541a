"""The interactive session, driven through piped stdin."""

from __future__ import annotations

import io
import json

import pytest

from mdagent.runtime.runtime import Options, Runtime
from mdagent.session.repl import Repl, run_repl


@pytest.fixture
def declared(workspace):
    """A project layer with a parsed tool command and a prompt skill."""
    config = workspace / ".agents" / "config"
    config.mkdir()
    (config / "tools.yaml").write_text(
        "tools:\n"
        "  shout:\n"
        "    description: Print a word in capitals\n"
        "    params: {word: {type: string}}\n"
        "    required: [word]\n"
        "    run: [python3, -c, 'import sys; print(sys.argv[1].upper())', '{word}']\n"
        "commands:\n"
        "  shout: {description: Shout a word, tool: shout, arg-mode: parsed}\n"
    )
    skill = workspace / ".agents" / "skills" / "review"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: review\ndescription: Review a file\n---\nReview the file $ARGUMENTS carefully.\n"
    )
    return workspace


def repl_session(workspace, monkeypatch, lines, **options):
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{line}\n" for line in lines)))
    return run_repl(Runtime(Options(**options), cwd=workspace))


def test_builtin_commands_and_eof(declared, monkeypatch, capsys):
    status = repl_session(declared, monkeypatch, ["/help", "/skills", "/tools"])
    out = capsys.readouterr().out
    assert status == 0
    assert "/exit" in out and "/clear" in out  # the session's own commands
    assert "/shout" in out and "/review" in out  # the declared ones
    assert any(row.split(None, 1) == ["review", "Review a file"] for row in out.splitlines())
    assert "exec" in out and "shout" in out


def test_tools_lists_only_the_configured_tier(declared, monkeypatch, capsys):
    (declared / ".agents" / "config" / "agent.yaml").write_text("agent:\n  tier: essential\n")
    repl_session(declared, monkeypatch, ["/tools"])
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert "exec" in names and "grep" not in names and "shout" not in names


def test_exit_leaves_at_once(declared, monkeypatch, capsys):
    assert repl_session(declared, monkeypatch, ["/exit", "/help"]) == 0
    assert "/clear" not in capsys.readouterr().out


def test_a_tool_command_runs_as_the_cli_would(declared, monkeypatch, capsys):
    repl_session(declared, monkeypatch, ["/shout hello", "/shout"])
    captured = capsys.readouterr()
    assert "HELLO" in captured.out
    assert "agent: /shout: missing argument: word" in captured.err


def test_unknown_commands_are_reported_and_the_session_goes_on(declared, monkeypatch, capsys):
    assert repl_session(declared, monkeypatch, ["/shuot x", "/model"], provider="anthropic") == 0
    captured = capsys.readouterr()
    assert "unknown command /shuot" in captured.err and "did you mean /shout?" in captured.err
    assert captured.out.startswith("anthropic ")


def test_chat_turns_share_a_session_until_clear(declared, monkeypatch, capsys, server):
    server.add({"text": "First answer."}, {"text": "Second answer."}, {"text": "Fresh start."})
    lines = ["first question", "second question", "/clear", "third question"]
    status = repl_session(declared, monkeypatch, lines, provider="openai", base_url=server.url)
    assert status == 0
    out = capsys.readouterr().out
    assert "First answer.\n" in out and "Second answer.\n" in out and "Fresh start.\n" in out
    second = json.dumps(server.requests[1]["json"]["messages"])
    assert "first question" in second and "First answer." in second
    third = json.dumps(server.requests[2]["json"]["messages"])
    assert "first question" not in third and "third question" in third


def test_a_prompt_skill_is_an_agent_turn(declared, monkeypatch, capsys, server):
    server.add({"text": "Looks good."})
    repl_session(
        declared, monkeypatch, ["/review src/app.py"], provider="openai", base_url=server.url
    )
    assert "Looks good." in capsys.readouterr().out
    last = server.requests[0]["json"]["messages"][-1]
    assert last == {"role": "user", "content": "Review the file src/app.py carefully.\n"}


def test_a_provider_error_is_one_line_and_the_session_goes_on(
    declared, monkeypatch, capsys, server
):
    server.add({"status": 401}, {"text": "Back."})
    repl_session(declared, monkeypatch, ["hi", "again"], provider="openai", base_url=server.url)
    captured = capsys.readouterr()
    assert "agent: authentication failed (HTTP 401)" in captured.err
    assert "Back." in captured.out


def test_completions_cover_own_and_declared_commands(declared):
    names = Repl(Runtime(Options(), cwd=declared)).completions()
    assert {"/exit", "/help", "/shout", "/review"} <= set(names)


def test_the_real_executable_with_piped_stdin(run_agent, declared):
    result = run_agent(input="/shout piped\n/quit\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "PIPED"


def test_an_unavailable_skill_is_refused_as_from_the_shell(declared, monkeypatch, capsys):
    needs = declared / ".agents" / "skills" / "needs"
    needs.mkdir(parents=True)
    (needs / "SKILL.md").write_text(
        "---\ndescription: d\ncommand-dispatch: tool\ncommand-tool: exec\n"
        "metadata: {requires: {bins: [no-such-binary-xyz]}}\n---\n"
    )
    assert repl_session(declared, monkeypatch, ["/needs echo ran"]) == 0
    out, err = capsys.readouterr()
    assert "ran" not in out
    assert "/needs is unavailable: needs no-such-binary-xyz on PATH" in err


def test_unknown_builtin_suggests_the_nearest_and_help_shows_one_command(
    declared, monkeypatch, capsys
):
    repl_session(declared, monkeypatch, ["/hlep", "/help shout", "/help context", "/shout -h"])
    captured = capsys.readouterr()
    assert "unknown command /hlep" in captured.err and "did you mean /help?" in captured.err
    # `/help shout` and `/shout -h` both show the help; -h is not shouted.
    assert captured.out.count("usage: /shout <word>") == 2 and "-H" not in captured.out
    assert "/context - What the conversation holds" in captured.out


def test_context_history_sessions_and_resume(declared, monkeypatch, capsys, server):
    server.add({"text": "First answer."}, {"text": "Second answer."})
    lines = ["a question", "/context", "/history", "/clear", "/sessions", "/resume", "again"]
    repl_session(declared, monkeypatch, lines, provider="openai", base_url=server.url)
    out = capsys.readouterr().out
    assert "messages: 2 (1 user, 1 assistant)" in out
    assert "You: a question\n\nAssistant: First answer." in out
    assert "(resumed session " in out and ": 2 messages)" in out
    # /resume picked the conversation up: the model sees the first exchange again.
    assert "a question" in json.dumps(server.requests[1]["json"]["messages"])


def test_a_declaration_changed_on_disk_is_picked_up_before_the_next_line(
    declared, monkeypatch, capsys
):
    runtime = Runtime(Options(), cwd=declared)
    repl = Repl(runtime)
    repl.reload()
    tools = declared / ".agents" / "config" / "tools.yaml"
    tools.write_text(tools.read_text().replace("Shout a word", "Shout it loud"))
    assert repl.step("/commands") is True
    assert "Shout it loud" in capsys.readouterr().out
    tools.write_text("tools: [unclosed\n")
    repl.step("/commands")
    captured = capsys.readouterr()
    assert f"{tools}:2:1: error: invalid YAML" in captured.err  # the file at its line, once
    repl.step("/help")
    assert str(tools) not in capsys.readouterr().err


def test_a_bang_line_runs_piped_and_its_capped_output_is_context(
    declared, monkeypatch, capsys, server
):
    from mdagent.session.repl import SHELL_CONTEXT_CHARS

    server.add({"text": "Seen."})
    lines = [
        "!echo piped-bang",
        "!",
        "python3 -c 'print(\"x\" * 50000)'",
        "!",
        "what was it?",
    ]
    repl_session(declared, monkeypatch, lines, provider="openai", base_url=server.url)
    out = capsys.readouterr().out
    assert "piped-bang\n" in out  # echoed as it ran, though stdout is a pipe
    assert "x" * 1000 in out  # shown whole; only the conversation's copy is capped
    (request,) = server.requests
    messages = request["json"]["messages"]
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert users[-1] == "what was it?"
    assert "`echo piped-bang` (exit status 0)" in users[0] and "piped-bang" in users[0]
    assert "x" * 1000 in users[1] and len(users[1]) <= SHELL_CONTEXT_CHARS + 300
    assert "truncated" in users[1]


# -- permission modes (issue 33) ------------------------------------------------------


def test_mode_shows_and_switches_and_a_wrong_word_is_one_line(declared, monkeypatch, capsys):
    repl_session(declared, monkeypatch, ["/mode", "/mode plan", "/mode yolo", "/mode"])
    captured = capsys.readouterr()
    shown = [line for line in captured.out.splitlines() if line.startswith("mode:")]
    assert shown == ["mode: ask (policy.mode)", "mode: plan (/mode)", "mode: plan (/mode)"]
    assert "agent: /mode: 'yolo' is not one of ask, accept-edits, plan" in captured.err


def test_mode_plan_in_the_session_withholds_the_write_tools(declared, monkeypatch, capsys, server):
    server.add({"text": "ok"})
    repl_session(
        declared, monkeypatch, ["/mode plan", "plan something"],
        provider="openai", base_url=server.url,
    )  # fmt: skip
    offered = {t["function"]["name"] for t in server.requests[0]["json"]["tools"]}
    assert "exec" in offered and not offered & {"write_file", "edit_file"}


def test_the_toolbar_shows_the_mode_and_where_it_came_from(declared):
    from mdagent.session.lineinput import TerminalInput

    repl = Repl(Runtime(Options(mode="plan"), cwd=declared))
    term = TerminalInput.__new__(TerminalInput)  # the toolbar alone, no prompt_toolkit session
    term.repl = repl
    assert " · mode plan (--mode) · " in term.toolbar()
    repl.cycle_mode()
    assert " · mode full (/mode) · " in term.toolbar()
    repl.cycle_mode()
    assert " · mode ask (/mode) · " in term.toolbar()


def test_a_skill_named_mode_is_reserved(run_agent, workspace):
    skill = workspace / ".agents" / "skills" / "mode"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: mode\ndescription: mine\n---\nbody\n")
    result = run_agent("check")
    assert result.returncode == 1
    assert (
        "SKILL.md:1:1: error: /mode: 'mode' is the name of a built-in command; "
        "the skill still loads for the model, /mode is refused"
    ) in result.stdout


def test_a_new_conversation_ends_the_answers_given_for_the_session(declared):
    runtime = Runtime(Options(), cwd=declared)
    repl = Repl(runtime)
    runtime.session_approvals.add("exec\x00{}")
    repl.step("/context")  # any other command keeps them
    assert runtime.session_approvals == {"exec\x00{}"}
    repl.step("/clear")
    assert runtime.session_approvals == set()
