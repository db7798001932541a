"""The exec policy against an attacker, through the real ``agent`` executable (issue 9).

Each test has a model ask for commands that bash runs but that a weaker
reading of the line would judge wrongly, and checks the tool result the model
got and that nothing happened on disk.
"""

import os
import shutil
import subprocess

from conftest import write
from model_server import ModelServer
from test_security_e2e import ask, settings, term, tool_results


def model(*commands: str) -> ModelServer:
    script = [{"tool_calls": [{"name": "exec", "arguments": {"command": c}}]} for c in commands]
    return ModelServer([*script, {"text": "done"}])


def victims(ws, count: int) -> list:
    paths = [ws / f"victim{i}" for i in range(count)]
    for path in paths:
        path.write_text("keep me")
    return paths


def run_denied(run_agent, ws, commands: list[str], *extra: str) -> list[dict]:
    """Have a model run ``commands`` (one per call); every result must be a denial."""
    with model(*commands) as server:
        result = ask(run_agent, server, *extra)
        results = tool_results(server)
    assert result.returncode == 0, result.stderr
    assert len(results) == len(commands)
    for command, got in zip(commands, results, strict=True):
        assert got["ok"] is False and got["code"] == "DENIED", (command, got)
    return results


def test_an_allow_rule_covers_only_literal_commands(workspace, run_agent):
    # `${x@P}` runs the substitution held in x: the whole line is one segment
    # `git status ...`, which `git status*` used to allow.
    settings(workspace, "policy:\n  mode: allowlist\n  allow: ['exec(git status*)']\n")
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    commands = [
        "git status ${x:='$(touch pwned0)'} ${x@P}",
        # arithmetic in a for ((...)) header evaluates x, whose subscript runs touch
        "for x in a[\\$\\(touch\\ pwned1\\)]; do for ((x;0;)); do git status; done; done",
        "git status $HOME",
    ]
    results = run_denied(run_agent, workspace, commands)
    assert not list(workspace.glob("pwned*"))
    assert "not allowed" in results[0]["error"]
    with model("git status --short") as server:
        ask(run_agent, server)
        [plain] = tool_results(server)
    assert plain["ok"] is True


def test_deny_rules_see_the_program_by_any_path_or_quoting(workspace, run_agent):
    term(workspace)
    settings(workspace, "policy:\n  mode: full\n  deny: ['exec(rm *)']\n")
    rm = os.path.realpath(shutil.which("rm"))
    relative = os.path.relpath(rm, workspace)
    spellings = [rm, relative, "\\rm", '"rm"', "r''m", f"'{rm}'"]
    paths = victims(workspace, len(spellings))
    commands = [f"{s} {p.name}" for s, p in zip(spellings, paths, strict=True)]
    run_denied(run_agent, workspace, commands)
    assert all(p.exists() for p in paths)
    typed = run_agent("/t", f"{rm} {paths[0].name}")
    assert typed.returncode == 126 and paths[0].exists()


def test_deny_rules_see_through_wrappers_and_their_options(workspace, run_agent):
    settings(workspace, "policy:\n  mode: full\n  deny: ['exec(rm *)']\n")
    lock = workspace / "lock"
    wrappers = [
        "timeout -s KILL 5",
        "timeout --kill-after=1 5",
        "env -u HOME",
        "env -i PATH=/usr/bin:/bin",
        "exec -a x",
        "stdbuf -o L",
        "nice -n 5",
        "ionice -c 3",
        "taskset -c 0",
        f"flock {lock}",
        "xargs -I{} -a /dev/null -r",  # xargs -r with no input runs nothing; still denied
        "time -p",
        "setsid -w",
        "nohup",
        "command -p",
        "builtin command",
        "nice -n 1 timeout -s TERM 9",
    ]
    paths = victims(workspace, len(wrappers) + 3)
    commands = [f"{w} rm {p.name}" for w, p in zip(wrappers, paths, strict=False)]
    rest = paths[len(wrappers) :]
    commands += [
        f"env -S 'rm {rest[0].name}'",
        f"flock {lock} -c 'rm {rest[1].name}'",
        # an option no table knows: what runs cannot be read, so it is denied
        f"timeout --no-such-option 5 rm {rest[2].name}",
    ]
    results = run_denied(run_agent, workspace, commands)
    assert all(p.exists() for p in paths)
    assert "could not be checked" in results[-1]["error"]


def test_what_cannot_be_parsed_is_denied_under_a_deny_rule(workspace, run_agent):
    settings(workspace, "policy:\n  mode: full\n  deny: ['exec(rm *)']\n")
    paths = victims(workspace, 3)
    commands = [
        # bash: x='$', then rm runs; tree-sitter reads it otherwise
        f"x=$ r''m {paths[0].name}",
        # bash reads `true\r` as one word and runs `\rm` on the next line
        f"true\r\n\\rm {paths[1].name}",
        f"(sh) <<< 'rm {paths[2].name}'",
    ]
    results = run_denied(run_agent, workspace, commands)
    assert all(p.exists() for p in paths)
    assert all("could not be checked" in r["error"] for r in results)


def test_here_strings_fed_to_a_shell_in_a_compound_statement_are_checked(workspace, run_agent):
    settings(workspace, "policy:\n  mode: full\n  deny: ['exec(rm *)']\n")
    paths = victims(workspace, 5)
    commands = [
        f"while sh; do break; done <<< 'rm {paths[0].name}'",
        f"if true; then sh; fi <<< 'rm {paths[1].name}'",
        f"{{ bash; }} <<EOF\nrm {paths[2].name}\nEOF",
        # a shell reading a pipe runs whatever comes before it: not checkable
        f"echo 'rm {paths[3].name}' | sh",
        f"sed 's/^/r/' <<EOF | sh\nm {paths[4].name}\nEOF",
    ]
    results = run_denied(run_agent, workspace, commands)
    assert all(p.exists() for p in paths)
    assert "exec(rm *)" in results[0]["error"]
    assert "could not be checked" in results[-1]["error"]


def test_commands_users_rely_on_still_run(workspace, run_agent):
    settings(
        workspace,
        "policy:\n  mode: allowlist\n  allow: ['exec(ls *)', 'exec(wc *)', 'exec(echo *)']\n"
        "  deny: ['exec(rm *)']\n",
    )
    write(workspace / "a.py", "x\n")
    with model("ls *.py && wc -l *.py", "echo 'rm -rf is dangerous'") as server:
        ask(run_agent, server)
        listed, echoed = tool_results(server)
    assert listed["ok"] is True and "a.py" in listed["stdout"]
    assert echoed["ok"] is True and "rm -rf" in echoed["stdout"]
