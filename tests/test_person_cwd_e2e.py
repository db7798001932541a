"""A person's command typed in a subfolder works where it was typed; a model's at the root.

Through the real executable, run in ``workspace/sub``: file tools read the
subfolder's files, ``exec`` and ``run:`` tools run there, the workspace still
confines every path and the deny rules judge the path the tool opens; shell
completion (as ``agent`` and as ``mdagent``) lists the same folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import config, provider_args, scripted_model, settings, tool_results, write

COMMANDS = """\
tools:
  count:
    description: Count the lines of a file
    params: {path: {type: string}}
    required: [path]
    run: [wc, -l, "{path}"]
commands:
  cat: {tool: read_file, arg-mode: parsed, completions: files}
  sh: {tool: exec}
  shj: {tool: exec, arg-mode: json}
  count: {tool: count, arg-mode: parsed}
  find: {tool: glob, arg-mode: parsed}
"""


@pytest.fixture
def sub(workspace):
    """``workspace/sub``, holding a ``note.txt`` of its own; the root has another."""
    config(workspace, "commands.yaml", COMMANDS)
    write(workspace / "note.txt", "at the root\n")
    write(workspace / "sub" / "note.txt", "in sub\nsecond\n")
    return workspace / "sub"


def test_a_file_tool_reads_the_file_in_the_folder_it_was_typed_in(sub, run_agent):
    result = run_agent("/cat", "note.txt", cwd=sub)
    assert result.returncode == 0, result.stderr
    assert "in sub" in result.stdout and "at the root" not in result.stdout
    # `..` leads up to the root's file, still inside the workspace.
    assert "at the root" in run_agent("/cat", "../note.txt", cwd=sub).stdout
    # From the root nothing changes.
    assert "at the root" in run_agent("/cat", "note.txt").stdout


def test_glob_without_a_path_searches_the_folder_typed_in(sub, run_agent):
    write(sub.parent / "other.txt", "x\n")
    result = run_agent("/find", "*.txt", cwd=sub)
    assert result.returncode == 0, result.stderr
    assert "sub/note.txt" in result.stdout and "other.txt" not in result.stdout


def test_exec_runs_in_the_folder_typed_in(sub, run_agent):
    result = run_agent("/sh", "pwd", cwd=sub)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(sub.resolve())
    assert run_agent("/sh", "pwd").stdout.strip() == str(sub.parent.resolve())


def test_a_run_tool_takes_its_path_argument_as_typed_there(sub, run_agent):
    result = run_agent("/count", "note.txt", cwd=sub)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", "note.txt"]


def test_a_handler_tools_path_is_taken_from_the_folder_typed_in(sub, run_agent):
    # The bundled `wc` tool is a Python handler (config/handlers/wc.py), not a built-in.
    config(sub.parent, "wc.yaml", "commands:\n  lines: {tool: wc, arg-mode: parsed}\n")
    write(sub / "only.txt", "a\nb\nc\n")
    result = run_agent("--json", "/lines", "only.txt", cwd=sub)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["lines"] == 3
    again = run_agent("--json", "/lines", "note.txt", cwd=sub)
    assert json.loads(again.stdout)["lines"] == 2  # sub's note.txt, not the root's


def test_a_tool_names_its_own_files_from_the_root_with_agent_workspace(sub, run_agent):
    write(sub.parent / "scripts" / "where.sh", 'echo "ran in $(pwd)"\n')
    config(
        sub.parent,
        "script.yaml",
        "tools:\n  where:\n    description: d\n"
        '    shell: sh "$AGENT_WORKSPACE/scripts/where.sh"\n'
        "commands:\n  where: {tool: where, arg-mode: parsed}\n",
    )
    result = run_agent("/where", cwd=sub)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"ran in {sub.resolve()}"


def test_a_path_leading_out_of_the_workspace_is_still_refused(sub, run_agent, tmp_path):
    write(tmp_path / "outside", "secret\n")
    result = run_agent("/cat", "../../outside", cwd=sub)
    assert result.returncode == 126
    assert "path escapes the workspace" in result.stderr and "secret" not in result.stdout
    # exec's own `cwd` starts there too, and stays inside.
    up = run_agent("/shj", json.dumps({"command": "pwd", "cwd": ".."}), cwd=sub)
    assert up.stdout.strip() == str(sub.parent.resolve()), up.stderr
    out = run_agent("/shj", json.dumps({"command": "pwd", "cwd": "../.."}), cwd=sub)
    assert out.returncode == 126 and "path escapes the workspace" in out.stderr
    assert out.stdout == ""


def test_a_deny_rule_judges_the_path_the_tool_would_open(sub, run_agent):
    settings(sub.parent, "policy:\n  deny: ['read_file(./secrets/*)']\n")
    write(sub.parent / "secrets" / "key", "hunter2\n")
    for cwd, path in ((sub, "../secrets/key"), (sub.parent / "secrets", "key")):
        result = run_agent("/cat", path, cwd=cwd)
        assert result.returncode == 126, (cwd, result.stdout)
        assert "denied by policy rule `read_file(./secrets/*)`" in result.stderr
        assert "hunter2" not in result.stdout
    # A file of the same name elsewhere is not covered by the rule.
    write(sub / "key", "fine\n")
    assert "fine" in run_agent("/cat", "key", cwd=sub).stdout


def test_a_command_typed_in_the_interactive_session_works_there_too(sub, run_agent):
    result = run_agent(input="/cat note.txt\n/sh pwd\n/quit\n", cwd=sub)
    assert result.returncode == 0, result.stderr
    assert "in sub" in result.stdout and str(sub.resolve()) in result.stdout


def test_a_models_calls_keep_the_workspace_root(sub, run_agent):
    settings(sub.parent, "policy:\n  mode: full\n")
    calls = (("read_file", {"path": "note.txt"}), ("exec", {"command": "pwd"}))
    with scripted_model(*calls) as server:
        result = run_agent(*provider_args(server), "ask", "go", cwd=sub)
        assert result.returncode == 0, result.stderr
        read, ran = tool_results(server)
    assert "at the root" in read["output"] and "in sub" not in read["output"]
    assert ran["stdout"].strip() == str(sub.parent.resolve())


# -- shell completion -------------------------------------------------------------


def _executable(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def _complete(name: str, variable: str, words: str, cwd: Path) -> subprocess.CompletedProcess:
    """What the bash completion script asks ``name`` for ``words`` (the last one being typed)."""
    env = dict(os.environ, COMP_WORDS=words, COMP_CWORD=str(len(words.split()) - 1))
    env[variable] = "complete_bash"
    return subprocess.run(
        [_executable(name)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )


@pytest.mark.parametrize("name", ["agent", "mdagent"])
def test_completion_lists_the_files_of_the_folder_typed_in(sub, name):
    write(sub / "notes-2.txt", "x\n")
    variable = f"_{name.upper()}_COMPLETE"
    done = _complete(name, variable, f"{name} /cat not", sub)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["note.txt", "notes-2.txt"]
    # The command names complete too.
    assert "/cat" in _complete(name, variable, f"{name} /ca", sub).stdout.split()


def test_a_script_installed_for_one_name_completes_the_other(sub):
    done = _complete("mdagent", "_AGENT_COMPLETE", "mdagent /cat not", sub)
    assert done.stdout.split() == ["note.txt"]


@pytest.mark.parametrize("name", ["agent", "mdagent"])
def test_the_completion_script_is_set_up_for_the_name_it_was_asked_by(workspace, name):
    # typer finds the shell among the process's parents: run it from bash (a
    # suite started by `sh`, e.g. under nohup, would otherwise be "sh"; the
    # `exit` keeps bash from exec-ing the command in its place).
    done = subprocess.run(
        ["bash", "-c", '"$0" --show-completion; exit $?', _executable(name)],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert done.returncode == 0, done.stderr
    assert f"_{name.upper()}_COMPLETE=complete_bash" in done.stdout
    assert done.stdout.rstrip().endswith(f"-F _{name}_completion {name}")
