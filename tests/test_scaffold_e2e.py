"""``agent new tool`` and ``agent new command`` (issue 20, item 8) through the real executable.

Each appends a declaration as text (what the file held stays byte for byte),
runs check on it and says what it did; an entry check refuses is taken back.
"""

from __future__ import annotations

import re

import pytest
import yaml

from conftest import config, write

TOOLS = ".agents/config/tools.yaml"
COMMANDS = ".agents/config/commands.yaml"


def test_new_tool_declares_a_required_parameter_per_placeholder_and_runs(workspace, run_agent):
    result = run_agent("new", "tool", "lines", "--run", "wc -l {path}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [
        f"added tool lines to {TOOLS} (lines 2-7)",
        "check: no problems",
    ]
    tool = yaml.safe_load((workspace / TOOLS).read_text())["tools"]["lines"]
    assert tool["params"] == {"path": {"type": "string", "description": "path"}}
    assert tool["required"] == ["path"]
    assert tool["run"] == ["wc", "-l", "{path}"]  # argv: no shell for a plain command

    shown = run_agent("tools", "lines").stdout
    assert re.search(r"^ *path +string +path \(required\)$", shown, re.MULTILINE), shown
    assert run_agent("check").returncode == 0

    # And it works: a command for it, then typed as /lines.
    made = run_agent("new", "command", "lines", "--tool", "lines")
    assert made.returncode == 0, made.stderr
    assert f"added command lines to {COMMANDS}" in made.stdout
    write(workspace / "notes.txt", "a\nb\nc\n")
    ran = run_agent("/lines", "notes.txt")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "3 notes.txt"
    missing = run_agent("/lines")
    assert missing.returncode == 2  # the placeholder's parameter is required


def test_a_command_with_shell_syntax_becomes_a_shell_tool_with_each_value_quoted(
    workspace, run_agent
):
    made = run_agent("new", "tool", "shout", "--run", "echo hello {name} | tr a-z A-Z")
    assert made.returncode == 0, made.stderr
    tool = yaml.safe_load((workspace / TOOLS).read_text())["tools"]["shout"]
    assert tool["shell"] == "echo hello {name} | tr a-z A-Z"
    assert run_agent("new", "command", "shout", "--tool", "shout").returncode == 0
    ran = run_agent("/shout", "ada; rm -rf x")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "HELLO ADA; RM -RF X\n"  # one literal word, not a second command


def test_existing_content_and_comments_stay_byte_for_byte(workspace, run_agent):
    before = (
        "# my tools: keep this comment\n"
        "tools:\n"
        "  hello:   # says hello\n"
        "    description: Say hello\n"
        "    run: [echo, hello]\n"
        "\n"
        "# commands follow\n"
        "commands:\n"
        "  hi: {tool: hello, description: Say hi}\n"
    )
    config(workspace, "tools.yaml", before)
    made = run_agent("new", "tool", "bye", "--run", "echo bye {who}")
    assert made.returncode == 0, made.stderr
    after = (workspace / TOOLS).read_text()
    # Inserted after the last tool, before the blank line and the commands.
    head, tail = before.split("\n\n", 1)
    assert after.startswith(head + "\n  bye:\n")
    assert after.endswith("\n\n" + tail)
    data = yaml.safe_load(after)
    assert list(data["tools"]) == ["hello", "bye"]
    assert data["commands"] == {"hi": {"tool": "hello", "description": "Say hi"}}
    assert run_agent("/hi").stdout == "hello\n"


def test_new_command_appends_to_commands_yaml_and_defaults_the_arg_mode(workspace, run_agent):
    config(workspace, "commands.yaml", "# mine\ncommands:\n  one: {tool: exec, description: x}\n")
    made = run_agent("new", "command", "sh", "--tool", "exec")
    assert made.returncode == 0, made.stderr
    text = (workspace / COMMANDS).read_text()
    assert text.startswith("# mine\ncommands:\n  one: {tool: exec, description: x}\n")
    assert yaml.safe_load(text)["commands"]["sh"]["arg-mode"] == "raw"  # exec takes a command
    assert made.stdout.splitlines()[-1] == "try: agent /sh --help"
    ran = run_agent("--yes", "/sh", "echo", "hi there")
    assert ran.stdout == "hi there\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tool", "wc", "--run", "wc {path}"], "a tool called 'wc' already exists (bundled layer"),
        (["tool", "exec", "--run", "ls"], "a tool called 'exec' already exists (built in)"),
        (["tool", "bad name", "--run", "ls"], "name 'bad name' must be"),
        (["tool", "t", "--run", "echo {}"], "--run: empty placeholder"),
        (["command", "count", "--tool", "wc"], "a command called /count already exists"),
        (["command", "help", "--tool", "wc"], "'help' is a built-in command name"),
        (["command", "c2", "--tool", "nosuch"], "unknown tool: nosuch"),
        (["command", "c2", "--tool", "wc", "--arg-mode", "odd"], "--arg-mode must be one of"),
    ],
)
def test_refusals_are_one_line_exit_2_and_write_nothing(workspace, run_agent, args, message):
    result = run_agent("new", *args)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("agent: ") and message in line, line
    assert not (workspace / ".agents" / "config").exists()


def test_an_existing_name_in_the_file_is_refused_and_the_file_unchanged(workspace, run_agent):
    assert run_agent("new", "tool", "lines", "--run", "wc -l {path}").returncode == 0
    before = (workspace / TOOLS).read_bytes()
    again = run_agent("new", "tool", "lines", "--run", "cat {path}")
    assert again.returncode == 2
    assert "a tool called 'lines' already exists (project layer" in again.stderr
    assert (workspace / TOOLS).read_bytes() == before


def test_an_entry_check_refuses_is_reported_at_its_line_and_taken_back(workspace, run_agent):
    config(workspace, "tools.yaml", "# keep\ntools:\n  a: {description: A, run: [echo, a]}\n")
    before = (workspace / TOOLS).read_bytes()
    # `sh -c` runs its script as code: a placeholder there is refused by check.
    result = run_agent("new", "tool", "say", "--run", 'sh -c "echo {x}"')
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].endswith(
        "cannot be used as the script of `sh -c` (run as code) in run "
        "template ['sh', '-c', 'echo {x}']"
    )
    assert f"{TOOLS}:" in lines[0] and ": error: tool 'say': run: placeholder {x}" in lines[0]
    assert lines[1] == f"agent: check failed on the new tool say; {TOOLS} is unchanged"
    assert result.stdout == ""
    assert (workspace / TOOLS).read_bytes() == before
    assert run_agent("check").returncode == 0


def test_a_new_file_is_removed_again_when_check_refuses_its_entry(workspace, run_agent):
    result = run_agent("new", "tool", "say", "--run", 'sh -c "echo {x}"')
    assert result.returncode == 1
    assert not (workspace / TOOLS).exists()


def test_a_flow_style_section_is_refused_with_the_entry_to_add_by_hand(workspace, run_agent):
    before = "tools: {a: {description: A, run: [echo, a]}}  # flow\n"
    config(workspace, "tools.yaml", before)
    result = run_agent("new", "tool", "b", "--run", "echo b")
    assert result.returncode == 2  # a configuration the edit cannot handle
    assert "cannot add tool 'b' as text to this layout; add it under `tools:` by hand" in (
        result.stderr
    )
    assert "  run: [echo, b]" in result.stderr
    assert "Traceback" not in result.stderr
    assert (workspace / TOOLS).read_text() == before


def test_a_crlf_file_keeps_its_line_ends(workspace, run_agent):
    before = b"# windows\r\ncommands:\r\n  one: {tool: exec, description: x}\r\n"
    write(workspace / COMMANDS, before)
    made = run_agent("new", "command", "two", "--tool", "wc")
    assert made.returncode == 0, made.stderr
    after = (workspace / COMMANDS).read_bytes()
    assert after.startswith(before)
    assert after[len(before) :] == (
        b"  two:\r\n    description: Runs the wc tool\r\n    tool: wc\r\n    arg-mode: parsed\r\n"
    )


def test_a_symlinked_tools_file_is_edited_through_its_link(workspace, run_agent):
    shared = write(
        workspace / "shared" / "tools.yaml", "tools:\n  a: {description: a, run: [true]}\n"
    )
    (workspace / ".agents" / "config").mkdir(parents=True)
    (workspace / TOOLS).symlink_to(shared)
    result = run_agent("new", "tool", "b", "--run", "echo b")
    assert result.returncode == 0, result.stderr
    assert (workspace / TOOLS).is_symlink()
    assert set(yaml.safe_load(shared.read_text())["tools"]) == {"a", "b"}


def test_a_built_in_name_is_refused_in_any_case(workspace, run_agent):
    result = run_agent("new", "command", "Help", "--tool", "wc")
    assert result.returncode == 2 and "built-in command name" in result.stderr
    assert not (workspace / COMMANDS).exists()


def test_with_json_the_outcome_is_one_object(workspace, run_agent):
    import json

    made = run_agent("--json", "new", "tool", "hi", "--run", "echo {x}")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout) == {
        "ok": True,
        "tool": "hi",
        "file": TOOLS,
        "lines": [2, 7],
        "problems": [],
    }
    refused = run_agent("--json", "new", "tool", "bad", "--run", "echo # {x}")
    assert refused.returncode == 1 and refused.stderr == ""
    found = json.loads(refused.stdout)
    assert found["ok"] is False and found["error"]["code"] == "CHECK_FAILED"
    assert (
        found["problems"][0]["severity"] == "error" and "comment" in found["problems"][0]["message"]
    )
