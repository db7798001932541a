"""Output that fits the terminal (issue 20, item 5), through the real ``agent`` executable.

Tables are cut to the terminal's width (the last column, with ``…``) and
keep every character when piped; errors, warnings, ``✓`` and ``✗`` are
coloured on a terminal, never with ``NO_COLOR`` or in a pipe; with
``--json`` an error raised before any tool ran is one JSON object on stdout,
while a tool's own failure keeps its result's shape.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import command_skill, config, settings
from test_terminal_e2e import Terminal

LONG = (
    "Summarise the staged changes of the repository in one paragraph, "
    "naming every file that changed and why it matters to a reviewer"
)

COMMANDS = f"""\
commands:
  summary:
    tool: exec
    arg-mode: raw
    description: {LONG}
"""

TESTS = """\
tools:
  hello:
    description: Say hello
    run: [echo, hello]
    tests:
      - name: says hello
        approve: true
        expect: {ok: true, contains: hello}
      - name: says goodbye
        approve: true
        expect: {contains: goodbye}
"""

RED, GREEN, YELLOW = "\x1b[31m", "\x1b[32m", "\x1b[33m"


def error_object(stdout: str) -> dict:
    """The one JSON object --json prints for an error (exactly one line)."""
    assert stdout.count("\n") == 1, stdout
    found = json.loads(stdout)
    assert found["ok"] is False
    assert set(found["error"]) == {"code", "message"}
    return found["error"]


def screen(term: Terminal) -> list[str]:
    term.wait()
    return term.text.splitlines()


# -- tables ------------------------------------------------------------------------


def test_a_table_on_a_terminal_is_cut_to_its_width(workspace: Path):
    config(workspace, "commands.yaml", COMMANDS)
    with Terminal("commands", cwd=workspace, columns=120) as term:
        lines = screen(term)
    row = next(line for line in lines if line.startswith("/summary"))
    assert all(len(line) <= 120 for line in lines), lines
    assert row.endswith("…")
    assert row.split()[-1] != "…"  # cut after a whole word, not inside one
    assert "Summarise the staged changes" in row, lines


def test_columns_sets_the_width_of_the_command_listing(workspace: Path):
    config(workspace, "commands.yaml", COMMANDS)
    with Terminal("/help", cwd=workspace, columns=200, env={"COLUMNS": "60"}) as term:
        lines = screen(term)
    row = next(line for line in lines if line.startswith("/summary"))
    assert len(row) <= 60 and row.endswith("…")


def columns_of(line: str) -> int:
    """Terminal columns ``line`` takes: East Asian wide and full-width characters two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def test_wide_characters_take_two_columns_when_a_table_is_fitted(workspace: Path):
    wide = "把暂存的更改总结成一段简短的提交说明并且列出每一个被修改的文件和原因"
    config(
        workspace,
        "commands.yaml",
        f"commands:\n  summary:\n    tool: exec\n    description: {wide}\n",
    )
    with Terminal("/help", cwd=workspace, columns=200, env={"COLUMNS": "60"}) as term:
        lines = screen(term)
    row = next(line for line in lines if line.startswith("/summary"))
    assert row.endswith("…") and wide[:8] in row
    assert 57 <= columns_of(row) <= 60, row  # fills the width, never past it


def test_a_piped_table_keeps_every_character(workspace: Path, run_agent):
    config(workspace, "commands.yaml", COMMANDS)
    for args in (["commands"], ["/help"]):
        result = run_agent(*args, env={"COLUMNS": "40"})
        assert result.returncode == 0
        assert LONG in result.stdout, args
        assert "…" not in result.stdout


# -- colour ------------------------------------------------------------------------


def test_test_marks_and_error_lines_are_coloured_on_a_terminal(workspace: Path):
    config(workspace, "tools.yaml", TESTS)
    with Terminal("test", "hello", cwd=workspace, env={"NO_COLOR": ""}) as term:
        assert term.wait() == 1
        raw = term.raw.decode()
    assert f"{GREEN}✓\x1b[0m hello says hello" in raw
    assert f"{RED}✗\x1b[0m hello says goodbye" in raw
    with Terminal("/nope", cwd=workspace, env={"NO_COLOR": ""}) as term:
        assert term.wait() == 2
        raw = term.raw.decode()
    assert f"{RED}agent: unknown command /nope\x1b[0m" in raw
    assert "\ncommands: " in raw.replace("\r\n", "\n")  # the list after it stays plain


def test_check_colours_errors_red_and_warnings_yellow(workspace: Path):
    config(workspace, "commands.yaml", "")  # an empty file: a warning
    config(workspace, "tools.yaml", "tools:\n  broken:\n    run: 42\n")
    with Terminal("check", cwd=workspace, env={"NO_COLOR": ""}) as term:
        assert term.wait() == 1
        raw = term.raw.decode()
    assert f"commands.yaml:1:1: {YELLOW}warning\x1b[0m: empty file" in raw
    assert f": {RED}error\x1b[0m: " in raw


def test_no_color_turns_colour_off_on_a_terminal(workspace: Path):
    config(workspace, "tools.yaml", TESTS)
    for args in (["test", "hello"], ["/nope"]):
        with Terminal(*args, cwd=workspace, env={"NO_COLOR": "1"}) as term:
            term.wait()
            raw = term.raw.decode()
        assert "\x1b[" not in raw, (args, raw)
        assert "✗" in raw or "agent: unknown command /nope" in raw


def test_piped_output_has_no_colour(workspace: Path, run_agent):
    config(workspace, "tools.yaml", TESTS)
    tested = run_agent("test", "hello")
    assert tested.returncode == 1
    assert "✓ hello says hello" in tested.stdout.splitlines()
    assert "✗ hello says goodbye" in tested.stdout.splitlines()
    unknown = run_agent("/nope")
    assert unknown.stderr.startswith("agent: unknown command /nope\n")
    assert "\x1b" not in tested.stdout + tested.stderr + unknown.stderr


# -- --json errors -----------------------------------------------------------------


def test_an_unknown_slash_command_with_json_is_a_json_error(workspace: Path, run_agent):
    result = run_agent("--json", "/nope")
    assert result.returncode == 2
    assert result.stderr == ""
    error = error_object(result.stdout)
    assert error["code"] == "USAGE"
    assert error["message"].startswith("unknown command /nope")


def test_a_configuration_error_with_json_is_a_json_error(workspace: Path, run_agent):
    command_skill(workspace)
    settings(workspace, "model: [\n")
    fast = run_agent("--json", "/t", "echo", "hi")
    typed = run_agent("--json", "test")
    for result in (fast, typed):
        assert result.returncode == 2
        error = error_object(result.stdout)
        assert error["code"] == "CONFIG"
        assert error["message"].startswith(str(workspace / ".agents/config/agent.yaml") + ":2")
    plain = run_agent("test")
    assert plain.returncode == 2
    assert plain.stdout == ""
    assert plain.stderr.startswith("agent: ")


def test_usage_errors_of_subcommands_with_json_are_json_errors(workspace: Path, run_agent):
    unknown = run_agent("--json", "nosuch")
    assert unknown.returncode == 2
    assert error_object(unknown.stdout)["code"] == "USAGE"
    assert "nosuch" in error_object(unknown.stdout)["message"]
    bad_option = run_agent("tools", "--json", "--bogus")
    assert bad_option.returncode == 2
    assert error_object(bad_option.stdout) == {
        "code": "USAGE",
        "message": "No such option: --bogus",
    }
    assert bad_option.stderr == ""
    # Without --json: click's own usage message on stderr, as before.
    plain = run_agent("tools", "--bogus")
    assert plain.returncode == 2 and plain.stdout == ""
    assert "No such option: --bogus" in plain.stderr


def test_a_tools_own_failure_keeps_its_result_shape(workspace: Path, run_agent):
    command_skill(workspace)
    settings(workspace, "policy:\n  deny: ['exec(rm *)']\n")
    failed = run_agent("--json", "/t", "exit 3")
    assert failed.returncode == 3
    result = json.loads(failed.stdout)
    assert result["ok"] is False and result["exit_code"] == 3
    assert isinstance(result["error"], str)  # a result's error, not the error object
    denied = run_agent("--json", "/t", "rm -rf build")
    assert denied.returncode == 126
    result = json.loads(denied.stdout)
    assert result["ok"] is False and result["code"] == "DENIED"
    assert isinstance(result["error"], str)


def test_check_with_json_keeps_its_list_of_problems(workspace: Path, run_agent):
    settings(workspace, "model: [\n")
    result = run_agent("--json", "check")
    assert result.returncode == 1
    problems = json.loads(result.stdout)
    assert isinstance(problems, list) and problems[0]["severity"] == "error"


def test_json_as_an_options_value_does_not_ask_for_json(workspace, run_agent):
    result = run_agent("new", "tool", "count-file", "--run", "--json")
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr.startswith("agent: ")
