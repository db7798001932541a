"""The interactive session as a person uses it: the real ``agent`` on a real pseudo-terminal.

prompt_toolkit reads the keys (paste, history, Tab menu, Ctrl-C), rich renders
the answers, and the model is the scripted server on 127.0.0.1. The screen is
matched as a stream of text (:meth:`Terminal.expect_stream`): prompt_toolkit
redraws with cursor moves, so whole-line matching would not hold.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from model_server import ModelServer
from test_terminal_e2e import Terminal

PROMPT = "›"
PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"
UP, TAB, ENTER, CTRL_C, CTRL_D = b"\x1b[A", b"\t", b"\r", b"\x03", b"\x04"
# SGR parameters that set a colour (30-49 and 90-107; 38/48 start 256-colour and RGB).
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9;]*)?m")


def session(workspace: Path, server: ModelServer, *extra: str, env=None) -> Terminal:
    return Terminal(
        "--provider", "openai", "--base-url", server.url, *extra, cwd=workspace, env=env
    )


def user_messages(server: ModelServer, request: int = -1) -> list[str]:
    messages = server.requests[request]["json"]["messages"]
    return [m["content"] for m in messages if m.get("role") == "user"]


def leave(term: Terminal) -> None:
    term.type("/exit")
    assert term.wait() == 0
    assert "Traceback" not in term.stream


def test_a_pasted_block_is_one_message_and_backslash_or_esc_enter_continue(workspace):
    with (
        ModelServer([{"text": "got the paste"}, {"text": "got the lines"}]) as server,
        session(workspace, server) as term,
    ):
        term.expect_stream(PROMPT)
        term.press(PASTE_START + b"first line\nsecond line\nthird line" + PASTE_END)
        term.press(ENTER)
        term.expect_stream("got the paste")
        assert len(server.requests) == 1
        assert user_messages(server)[-1] == "first line\nsecond line\nthird line"

        term.expect_stream(PROMPT)
        term.press(b"one \\" + ENTER + b"two" + b"\x1b" + ENTER + b"three" + ENTER)
        term.expect_stream("got the lines")
        assert len(server.requests) == 2
        assert user_messages(server)[-1] == "one \ntwo\nthree"
        leave(term)


def test_history_survives_a_restart(workspace):
    with ModelServer([{"text": "first answer"}, {"text": "second answer"}]) as server:
        with session(workspace, server) as term:
            term.expect_stream(PROMPT)
            term.type("remember this line")
            term.expect_stream("first answer")
            leave(term)
        with session(workspace, server) as term:
            term.expect_stream(PROMPT)
            # Up twice: the last line typed was /exit, the one before it the message.
            # (What the redraw shows is checked by what the model receives.)
            term.press(UP + UP + ENTER)
            term.expect_stream("second answer")
            leave(term)
        assert user_messages(server)[-1] == "remember this line"


def test_tab_shows_a_menu_of_commands_with_descriptions(workspace):
    with ModelServer([]) as server, session(workspace, server) as term:
        term.expect_stream(PROMPT)
        term.press(b"/co" + TAB)
        menu = term.expect_stream(r"/count[^\n]*").string[term.stream_pos - 400 :]
        assert "/commands" in term.stream and "/count" in menu
        assert "List the declared commands" in term.stream  # the description beside it
        term.press(b"\x15")  # Ctrl-U: drop the line
        leave(term)


def test_tab_completes_a_file_path_relative_to_the_working_directory(workspace):
    (workspace / "sub").mkdir()
    (workspace / "sub" / "notes-for-tab.txt").write_text("tab-completed-content\n")
    with ModelServer([]) as server, session(workspace, server, env={}) as term:
        term.expect_stream(PROMPT)
        term.press(b"/term cat sub/notes-f" + TAB)
        term.expect_stream("notes-for-tab.txt")
        term.press(ENTER)
        term.expect_stream("tab-completed-content")
        leave(term)


def test_a_skill_written_while_the_session_runs_is_usable_on_the_next_line(workspace):
    with ModelServer([]) as server, session(workspace, server) as term:
        term.expect_stream(PROMPT)
        term.type("/greet hi")
        term.expect_stream(r"unknown command /greet")
        term.expect_stream(PROMPT)
        skill = workspace / ".agents" / "skills" / "greet"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            "---\ndescription: Greet\ncommand-dispatch: tool\ncommand-tool: exec\n"
            "command-arg-mode: raw\n---\n"
        )
        broken = workspace / ".agents" / "skills" / "broken"
        broken.mkdir()
        (broken / "SKILL.md").write_text("---\ndescription: [unclosed\n---\n")
        term.type("/greet echo hello-from-a-new-skill")
        term.expect_stream(r"broken/SKILL\.md:\d+")  # the broken file, at its line
        term.expect_stream("hello-from-a-new-skill")
        term.expect_stream(PROMPT)
        term.type("/hlep")
        term.expect_stream(r"did you mean /help\?")
        leave(term)


def test_compact_shrinks_the_history_and_the_next_turn_works(workspace):
    script = [
        {"text": "Answer one."},
        {"text": "Answer two."},
        {"text": "SUMMARY: two questions answered"},
        {"text": "Answer three."},
    ]
    with ModelServer(script) as server, session(workspace, server) as term:
        term.expect_stream(PROMPT)
        term.type("first question")
        term.expect_stream("Answer one.")
        term.type("second question")
        term.expect_stream("Answer two.")
        term.type("/compact")
        term.expect_stream(r"compacted 4 messages")
        term.type("/context")
        term.expect_stream(r"messages: 1 \(1 user\)")
        term.type("third question")
        term.expect_stream("Answer three.")
        leave(term)
    before, after = server.requests[1]["json"]["messages"], server.requests[3]["json"]["messages"]
    assert len(after) < len(before) + 2
    sent = json.dumps(after)
    assert "SUMMARY: two questions answered" in sent and "third question" in sent
    assert "first question" not in sent


def _processes_with(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(pid))
    return found


def test_ctrl_c_cancels_a_running_tool_and_the_session_goes_on(workspace):
    marker = "sleep 300.4321"  # no other test sleeps this long
    script = [
        {"tool_calls": [{"name": "exec", "arguments": {"command": marker}}]},
        {"text": "after the interruption"},
    ]
    with ModelServer(script) as server, session(workspace, server, "--yes") as term:
        term.expect_stream(PROMPT)
        term.type("run it")
        term.expect_stream(re.escape(f"exec  {marker}"))
        deadline = time.monotonic() + 30
        while not _processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _processes_with(marker), "the command never started"
        term.press(CTRL_C)
        # Back at the prompt with the command killed: it had five minutes to go.
        term.expect_stream(r"interrupted", timeout=30)
        term.expect_stream(PROMPT, timeout=30)
        assert not _processes_with(marker)
        term.type("go on")
        term.expect_stream("after the interruption")
        leave(term)


def test_a_failing_tool_call_shows_a_cross_and_its_exit_status(workspace):
    script = [
        {"tool_calls": [{"name": "exec", "arguments": {"command": "ls /no-such-dir-xyz"}}]},
        {"text": "it failed"},
    ]
    with ModelServer(script) as server, session(workspace, server, "--yes") as term:
        term.expect_stream(PROMPT)
        term.type("list it")
        term.expect_stream(r"✗ exec · exit 2")
        term.expect_stream("it failed")
        leave(term)


def test_no_color_means_no_colour_codes(workspace):
    answer = "# A heading\n\n- an item with **bold** text\n\n```python\nprint('hi')\n```\n"
    script = [
        {"tool_calls": [{"name": "exec", "arguments": {"command": "echo ok"}}]},
        {"text": answer},
    ]
    shown = {}
    for name, env in (("colour", {}), ("no colour", {"NO_COLOR": "1"})):
        with ModelServer(script) as server, session(workspace, server, "--yes", env=env) as term:
            term.expect_stream(PROMPT)
            term.press(b"/co" + TAB)  # the completion menu, coloured unless NO_COLOR
            term.expect_stream("/commands")
            term.press(b"\x15")
            term.type("answer in markdown")
            term.expect_stream("A heading")
            term.expect_stream(PROMPT)
            leave(term)
            shown[name] = term.raw.decode("utf-8", errors="replace")
    assert COLOUR.search(shown["colour"])  # the check can fail: colour is there without it
    assert not COLOUR.findall(shown["no colour"])
    assert "# A heading" not in shown["no colour"]  # still rendered as Markdown


@pytest.mark.parametrize("pause", [0, 0.001, 0.003, 0.01])
def test_ctrl_c_twice_in_quick_succession_always_leaves(workspace, pause):
    # The second Ctrl-C lands while the prompt gives the terminal back or takes
    # it again (a SIGINT, not a key): it was lost, or ended the session with 1.
    with ModelServer([{"text": "noted"}]) as server, session(workspace, server) as term:
        term.expect_stream(PROMPT)
        term.type("keep this")
        term.expect_stream("noted")
        term.expect_stream(PROMPT)
        term.press(CTRL_C)
        time.sleep(pause)
        term.press(CTRL_C)
        assert term.wait() == 0, term.text


def test_ctrl_c_twice_at_an_empty_prompt_leaves_and_continue_reopens(workspace):
    with ModelServer([{"text": "noted"}, {"text": "still here"}]) as server:
        with session(workspace, server) as term:
            term.expect_stream(PROMPT)
            term.type("keep this")
            term.expect_stream("noted")
            term.expect_stream(PROMPT)
            term.press(CTRL_C)
            term.expect_stream(r"Ctrl-C again or Ctrl-D to leave")
            term.press(CTRL_C)
            assert term.wait() == 0
        with session(workspace, server, "--continue") as term:
            term.expect_stream(r"continuing session \w+: 2 messages")
            term.expect_stream(PROMPT)
            term.type("and now?")
            term.expect_stream("still here")
            term.expect_stream(PROMPT)
            term.press(CTRL_D)
            assert term.wait() == 0
        assert user_messages(server)[-2:] == ["keep this", "and now?"]


# -- sessions belong to a workspace ------------------------------------------------------


def test_sessions_list_export_and_rm_in_this_workspace(workspace, run_agent, tmp_path):
    other = tmp_path / "other"
    (other / ".agents").mkdir(parents=True)
    with ModelServer([{"text": "Here **it** is."}, {"text": "elsewhere"}]) as server:
        model = ["--provider", "openai", "--base-url", server.url]
        assert run_agent(*model, "ask", "show me").returncode == 0
        assert run_agent(*model, "ask", "other project", cwd=other).returncode == 0
    listed = run_agent("sessions", "--json")
    (mine,) = json.loads(listed.stdout)  # the other workspace's session is not listed
    assert mine["title"] == "show me"
    assert len(json.loads(run_agent("sessions", "--all", "--json").stdout)) == 2

    exported = run_agent("sessions", "export", mine["id"][:4])
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.startswith("# show me\n")
    assert "## User\n\nshow me" in exported.stdout
    assert "## Assistant\n\nHere **it** is." in exported.stdout

    removed = run_agent("sessions", "rm", mine["id"])
    assert removed.returncode == 0 and removed.stdout.strip() == f"removed {mine['id']}"
    assert json.loads(run_agent("sessions", "--json").stdout) == []
    gone = run_agent("sessions", "export", mine["id"])
    assert gone.returncode == 2 and f"no session {mine['id']!r}" in gone.stderr
    # --continue does not reach into another workspace's conversation.
    with ModelServer([{"text": "fresh"}]) as server:
        model = ["--provider", "openai", "--base-url", server.url]
        again = run_agent(*model, "ask", "--continue", "hello")
        assert "no session to continue" in again.stderr
        assert user_messages(server, 0) == ["hello"]


def test_sigterm_and_sighup_at_the_prompt_end_the_session_with_their_status(workspace):
    import signal

    for signum, status in ((signal.SIGTERM, 143), (signal.SIGHUP, 129)):
        with ModelServer([]) as server, session(workspace, server) as term:
            term.expect_stream(PROMPT)
            os.kill(term.proc.pid, signum)  # the wrapper exec'd agent: the same process
            assert term.wait() == status
            assert "Traceback" not in term.stream


def test_a_stop_signal_while_the_history_loads_ends_the_session_cleanly(workspace):
    import signal

    from mdagent.session.lineinput import history_file

    # A long history is still loading (a task in the prompt's event loop)
    # when the prompt is drawn: the signal must end the session, not be
    # printed by the loop as an "unhandled exception" while the prompt waits.
    lines = "".join(f"\n# 2026-01-01 00:00:00\n+message number {n}\n" for n in range(400_000))
    history_file(workspace.resolve()).write_text(lines)
    for signum, status, delay in ((signal.SIGTERM, 143, 0), (signal.SIGHUP, 129, 0.1)):
        with ModelServer([]) as server, session(workspace, server) as term:
            term.expect_stream(PROMPT)
            time.sleep(delay)  # the load takes ~0.4 s on these machines
            os.kill(term.proc.pid, signum)
            assert term.wait() == status
            assert "Traceback" not in term.stream
            assert "Unhandled" not in term.stream


def test_rewind_lists_the_turns_and_takes_back_the_files_and_the_conversation(workspace):
    (workspace / "notes.txt").write_text("alpha\n")
    script = [
        {"text": "nothing to change"},
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "new.txt", "content": "x\n"}}
            ]
        },
        {"tool_calls": [{"name": "exec", "arguments": {"command": "sed -i s/a/b/ notes.txt"}}]},
        {"text": "changed them"},
        {"text": "after the rewind"},
    ]
    with ModelServer(script) as server, session(workspace, server, "--yes") as term:
        term.expect_stream(PROMPT)
        term.type("first question")
        term.expect_stream("nothing to change")
        term.type("change the files")
        term.expect_stream("changed them")
        assert (workspace / "new.txt").exists()
        term.type("/rewind")
        term.expect_stream(r"1  [-0-9: ]+session \w+  turn 2: change the files")
        term.expect_stream(r"new\.txt\s+\| 1 \+ \(new\)")
        term.expect_stream(r"notes\.txt \| 2 \+-")
        term.expect_stream(r"/rewind N takes the files back")
        term.type("/rewind --files-only")
        term.expect_stream(r"agent: /rewind: which checkpoint\?")
        term.type("/rewind 9")
        term.expect_stream(r"agent: no checkpoint 9 in ")
        assert (workspace / "new.txt").exists()
        term.type("/rewind 1")
        term.expect_stream(r"files: rewound to checkpoint 1")
        term.expect_stream(r"this session goes on from there \(2 messages\)")
        assert not (workspace / "new.txt").exists()
        assert (workspace / "notes.txt").read_text() == "alpha\n"
        term.type("go on")
        term.expect_stream("after the rewind")
        leave(term)
    assert user_messages(server) == ["first question", "go on"]
