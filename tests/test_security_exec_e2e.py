"""The exec policy against an attacker, through the real ``agent`` executable (issue 9).

Each test has a model ask for commands that bash runs but that a weaker
reading of the line would judge wrongly, and checks the tool result the model
got and that nothing happened on disk.
"""

import os
import shutil
import subprocess

import pytest

from conftest import ask, command_skill, scripted_model, settings, tool_results, write

RM_DENIED = "policy:\n  mode: full\n  deny: ['exec(rm *)']\n"


def model(*commands: str):
    """A model that runs each of ``commands`` with exec, one call each."""
    return scripted_model(*(("exec", {"command": c}) for c in commands))


def victims(ws, count: int) -> list:
    paths = [ws / f"victim{i}" for i in range(count)]
    for path in paths:
        path.write_text("keep me")
    return paths


def run_denied(run_agent, commands: list[str], *extra: str) -> list[dict]:
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
    results = run_denied(run_agent, commands)
    assert not list(workspace.glob("pwned*"))
    assert "not allowed" in results[0]["error"]
    with model("git status --short") as server:
        ask(run_agent, server)
        [plain] = tool_results(server)
    assert plain["ok"] is True


def test_deny_rules_see_the_program_by_any_path_or_quoting(workspace, run_agent):
    command_skill(workspace)
    settings(workspace, RM_DENIED)
    rm = os.path.realpath(shutil.which("rm"))
    relative = os.path.relpath(rm, workspace)
    spellings = [rm, relative, "\\rm", '"rm"', "r''m", f"'{rm}'"]
    paths = victims(workspace, len(spellings))
    commands = [f"{s} {p.name}" for s, p in zip(spellings, paths, strict=True)]
    run_denied(run_agent, commands)
    assert all(p.exists() for p in paths)
    typed = run_agent("/t", f"{rm} {paths[0].name}")
    assert typed.returncode == 126 and paths[0].exists()


# Ways to run `rm {victim}` that bash takes and a weaker reading of the line
# would miss, each with what its denial must say ("" where a denial is enough).
# {lock} is a lock file in the workspace.
WRAPPED = [
    *(
        (f"{wrapper} rm {{victim}}", "")
        for wrapper in [
            "timeout -s KILL 5",
            "timeout --kill-after=1 5",
            "env -u HOME",
            "env -i PATH=/usr/bin:/bin",
            "exec -a x",
            "stdbuf -o L",
            "nice -n 5",
            "ionice -c 3",
            "taskset -c 0",
            "flock {lock}",
            "xargs -I{} -a /dev/null -r",  # xargs -r with no input runs nothing; still denied
            "time -p",
            "setsid -w",
            "nohup",
            "command -p",
            "builtin command",
            "nice -n 1 timeout -s TERM 9",
        ]
    ),
    ("env -S 'rm {victim}'", ""),
    ("flock {lock} -c 'rm {victim}'", ""),
    # an option no table knows: the program it names is still met (fail closed)
    ("timeout --no-such-option 5 rm {victim}", "(rm victim"),
]
UNKNOWN_WRAPPERS = [
    # programs the wrapper table does not know that run their arguments
    ("setpriv rm {victim}", "(rm victim"),
    ("prlimit --nofile=100 rm {victim}", "(rm victim"),
    ("/lib64/ld-linux-x86-64.so.2 /bin/rm {victim}", "(rm victim"),
    ("script -qc 'rm {victim}' /dev/null", "(rm victim"),
    ("strace -o /dev/null rm {victim}", "(rm victim"),
]
UNPARSEABLE = [
    # bash: x='$', then rm runs; tree-sitter reads it otherwise
    ("x=$ r''m {victim}", "could not be checked"),
    # bash reads `true\r` as one word and runs `\rm` on the next line
    ("true\r\n\\rm {victim}", "could not be checked"),
    ("(sh) <<< 'rm {victim}'", "could not be checked"),
    # bash runs a process substitution in an expansion's default; the grammar sees a word
    ("echo ${x:-<(rm {victim})}", "could not be checked"),
]
# An exact deny rule (no `*`): the words env -S or declare really see matter.
EXACT = [
    # GNU env ends an -S string at a word starting with `#`: the line is `rm {victim}`
    ("env -S 'rm {victim} #note'", "could not be checked"),
    # o=n makes it `declare -n`: r names a variable chosen at run time
    ("o=n; declare -$o r=$(printf x); rm {victim}", ""),
]
FED_TO_A_SHELL = [
    # here-strings and here-documents fed to a shell in a compound statement
    ("while sh; do break; done <<< 'rm {victim}'", "exec(rm *)"),
    ("if true; then sh; fi <<< 'rm {victim}'", ""),
    ("{ bash; } <<EOF\nrm {victim}\nEOF", ""),
    # ...and to the code a command runs in turn (eval, sh -c)
    ("eval sh <<< 'rm {victim}'", "exec(rm *)"),
    ("sh -c sh <<< 'rm {victim}'", "exec(rm *)"),
    # a shell reading a pipe runs whatever comes before it: not checkable
    ("echo 'rm {victim}' | sh", ""),
    ("sed 's/^/r/' <<EOF | sh\nm {victim}\nEOF", "could not be checked"),
]


@pytest.mark.parametrize(
    "attempts",
    [WRAPPED, UNKNOWN_WRAPPERS, UNPARSEABLE, FED_TO_A_SHELL],
    ids=["wrappers-and-their-options", "unknown-wrappers", "unparseable", "fed-to-a-shell"],
)
def test_a_deny_rule_sees_rm_however_it_is_run(workspace, run_agent, attempts):
    settings(workspace, RM_DENIED)
    paths = victims(workspace, len(attempts))
    lock = str(workspace / "lock")
    commands = [
        command.replace("{victim}", path.name).replace("{lock}", lock)
        for (command, _), path in zip(attempts, paths, strict=True)
    ]
    results = run_denied(run_agent, commands)
    assert all(p.exists() for p in paths)
    for command, (_, says), result in zip(commands, attempts, results, strict=True):
        assert says in result["error"], (command, result)


def test_an_exact_deny_rule_sees_through_env_split_comments_and_computed_options(
    workspace, run_agent
):
    paths = victims(workspace, len(EXACT))
    rules = ", ".join(f"'exec(rm {p.name})'" for p in paths)
    settings(workspace, f"policy:\n  mode: full\n  deny: [{rules}]\n")
    commands = [c.replace("{victim}", p.name) for (c, _), p in zip(EXACT, paths, strict=True)]
    results = run_denied(run_agent, commands)
    assert all(p.exists() for p in paths)
    for command, (_, says), result in zip(commands, EXACT, results, strict=True):
        assert says in result["error"], (command, result)
    unchecked = run_agent("policy", "check", "exec", "o=n; declare -$o r=$(printf x)")
    assert "decision:  deny" in unchecked.stdout
    assert "option `-$o` is computed at run time" in unchecked.stdout


def test_arithmetic_in_a_here_document_is_never_covered_by_allow_rules(workspace, run_agent):
    # bash evaluates $((ls)) in the body: ls holds `a[$(touch pwned)]` read from
    # a file, and the subscript runs; the grammar reads it as `$( (ls) )`.
    settings(
        workspace,
        "policy:\n  mode: allowlist\n  allow: ['exec(read *)', 'exec(cat*)', 'exec(ls*)']\n",
    )
    write(workspace / "f", "a[$(touch pwned)]\n")
    results = run_denied(run_agent, ["read ls < f; cat <<EOF\n$((ls))\nEOF"])
    assert "not allowed" in results[0]["error"]
    assert not (workspace / "pwned").exists()


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
