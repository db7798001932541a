"""What a command runs besides itself, against an attacker, through the real ``agent`` (issue 30).

Four classes the policy lost to: an abbreviated long option that names a
program (``git ls-remote --upl=…``), git pointed at a repository a model
wrote (``git -C src/evil st``), shell code fed through a redirection, a
descriptor or a start-up hook (``sh < <(…)``, ``PROMPT_COMMAND=… bash -i``),
and programs that run code from their options or scripts (``sed 's///e'``,
``tar --to-command``, ``vim -c '!…'``). Each test has a model ask for the
commands and checks the tool results it got and that the victim file is
still there.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import ask, scripted_model, settings, tool_results, write

RM_DENIED = "policy:\n  mode: full\n  deny: ['exec(rm *)']\n"


def model(*commands: str):
    return scripted_model(*(("exec", {"command": c}) for c in commands))


def run_all(run_agent, commands: list[str]) -> list[dict]:
    """Have a model run ``commands`` (one call each); the results it was sent."""
    with model(*commands) as server:
        result = ask(run_agent, server)
        results = tool_results(server)
    assert result.returncode == 0, result.stderr
    assert len(results) == len(commands), result.stderr
    return results


def assert_denied(commands: list[str], results: list[dict], why: str = "") -> None:
    for command, got in zip(commands, results, strict=True):
        assert got["ok"] is False and got["code"] == "DENIED", (command, got)
        assert why in got["error"], (command, got["error"])


def victim(ws, name: str = "victim"):
    path = ws / name
    path.write_text("keep me")
    return path


def git(ws, *args: str) -> None:
    subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)


# -- 1. abbreviated long options -------------------------------------------------------

ABBREVIATED = [
    "git ls-remote --upl='touch pwned' .",
    "git ls-remote --upload-p='touch pwned' .",
    "git ls-remote --u 'touch pwned' .",
    "git fetch --upl='touch pwned' .",
    "git grep --open='touch pwned' -e x",
    "git grep --open-files='touch pwned' -e x",
]


def test_an_abbreviated_option_that_names_a_program_is_not_covered_by_an_allow_rule(
    workspace, run_agent
):
    settings(
        workspace,
        "policy:\n  mode: allowlist\n"
        "  allow: ['exec(git ls-remote*)', 'exec(git fetch*)', 'exec(git grep*)']\n",
    )
    git(workspace, "init", "-q")
    (workspace / "x.txt").write_text("x\n")
    git(workspace, "add", "x.txt")
    results = run_all(run_agent, [*ABBREVIATED, "git grep -e x"])
    assert_denied(ABBREVIATED, results[:-1], "not allowed")
    assert results[-1]["ok"] is True  # the plain command still runs
    assert not (workspace / "pwned").exists()


def test_an_abbreviated_option_is_denied_under_any_deny_rule(workspace, run_agent):
    settings(workspace, RM_DENIED)
    git(workspace, "init", "-q")
    target = victim(workspace)
    commands = [
        "git ls-remote --upl='rm -f victim' .",
        "git ls-remote --upload-pa 'rm -f victim' .",
        "git fetch --upl='rm -f victim' .",
        "git -c protocol.version=0 ls-remote --receive-p='rm -f victim' .",
        "printf 'all:\\n\\trm -f victim\\n' | make --f=- all",
        "make --ev='all:; rm -f victim' all",
        "sed --exp='1e rm -f victim' victim",
    ]
    results = run_all(run_agent, commands)
    assert_denied(commands, results, "could not be checked")
    assert target.exists()


# -- 2. git pointed at another repository ---------------------------------------------

README_POLICY = "policy:\n  allow: [exec(git *), read_file, write_file(src/**)]\n"


def bare_repository(path: str) -> list[tuple[str, dict]]:
    """The write_file calls a model makes to lay out a bare repository whose
    alias `st` and core.fsmonitor run `touch pwned`."""
    config = (
        "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
        "\tfsmonitor = touch pwned-fsmonitor\n"
        "[alias]\n\tst = !touch pwned\n"
    )
    files = {
        "HEAD": "ref: refs/heads/main\n",
        "config": config,
        "objects/info/keep": "",
        "refs/heads/keep": "",
    }
    return [
        ("write_file", {"path": f"{path}/{name}", "content": text}) for name, text in files.items()
    ]


def test_git_pointed_at_a_repository_a_model_wrote_is_never_allowed_by_a_pattern(
    workspace, run_agent
):
    # The README's own example: git is allowed, and so is writing under src/.
    settings(workspace, README_POLICY)
    git(workspace, "init", "-q")
    commands = [
        "git -C src/evil st",
        "git --git-dir=src/evil st",
        "git --git-dir src/evil status",
        "git -C src -C evil st",
        "git --work-tree=. --git-dir=src/evil/ status",
        "git -C src/evil --bare st",
    ]
    calls = [*bare_repository("src/evil"), *(("exec", {"command": c}) for c in commands)]
    calls.append(("exec", {"command": "git -C src status --short"}))  # the workspace's own
    with scripted_model(*calls) as server:
        result = ask(run_agent, server)
        results = tool_results(server)
    assert result.returncode == 0, result.stderr
    written, ran, own = results[:4], results[4:-1], results[-1]
    assert all(r["ok"] for r in written), written
    assert_denied(commands, ran, "uses a repository other than the workspace's")
    assert own["ok"] is True, own
    assert not list(workspace.rglob("pwned*"))


def test_git_elsewhere_and_its_variables_are_denied_under_any_deny_rule(workspace, run_agent):
    settings(workspace, RM_DENIED)
    git(workspace, "init", "-q")
    target = victim(workspace)
    for call in bare_repository("src/evil"):
        write(workspace / call[1]["path"], call[1]["content"])
    config = workspace / "src/evil/config"
    config.write_text(config.read_text().replace("touch pwned", f"rm -f {target}"))
    # A user configuration where HOME would point git.
    write(workspace / "src/home/.gitconfig", f"[alias]\n\tst = !rm -f {target}\n")
    commands = [
        "git -C src/evil st",
        "git --git-dir=src/evil st",
        "GIT_DIR=src/evil git st",
        "env GIT_DIR=src/evil git st",
        "export GIT_DIR=src/evil; git st",
        "GIT_CONFIG_GLOBAL=src/evil/config git st",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.st GIT_CONFIG_VALUE_0='!rm -f victim' git st",
        "git -c alias.st='!rm -f victim' st",
        "git --config-env=alias.st=X st",
        "cd src && git -C evil st",
        "HOME=src/home git st",
        "HOME=$PWD/src/home; git st",
        "export XDG_CONFIG_HOME=src; git st",
    ]
    results = run_all(run_agent, commands)
    assert_denied(commands, results, "could not be checked")
    assert target.exists()


def test_git_does_not_find_a_bare_repository_a_model_wrote_by_itself(workspace, run_agent):
    # No option points git there: it would discover src/evil walking up from
    # the folder. A model's commands get safe.bareRepository=explicit.
    settings(workspace, RM_DENIED)
    git(workspace, "init", "-q")
    for call in bare_repository("src/evil"):
        write(workspace / call[1]["path"], call[1]["content"])
    with scripted_model(
        ("exec", {"command": "cd src/evil && git st"}),
        ("exec", {"command": "git st", "cwd": "src/evil"}),
        # Red team 11: git's safe.bareRepository=explicit is a variable a command can drop.
        ("exec", {"command": "unset GIT_CONFIG_COUNT; cd src/evil && git st"}),
        ("exec", {"command": "env -u GIT_CONFIG_COUNT git st", "cwd": "src/evil"}),
        ("exec", {"command": "env -i PATH=/usr/bin:/bin git st", "cwd": "src/evil"}),
        ("exec", {"command": "export -n GIT_CONFIG_COUNT; pushd src/evil; git st"}),
    ) as server:
        result = ask(run_agent, server)
        results = tool_results(server)
    assert result.returncode == 0, result.stderr
    # The policy places git in the folder the line goes to: another repository,
    # which deny rules cannot see through, so every spelling is refused.
    assert [r.get("code") for r in results] == ["DENIED"] * 6, results
    assert all("uses a repository other than the workspace's" in r["error"] for r in results)
    assert not list(workspace.rglob("pwned*"))
    # A person's own commands are theirs: git finds the repository as usual.
    person = subprocess.run(["git", "st"], cwd=workspace / "src/evil", capture_output=True)
    assert person.returncode == 0 and (workspace / "src/evil/pwned").exists()


def test_a_model_cannot_write_a_git_file_pointing_at_another_repository(workspace, run_agent):
    # A worktree's `.git` is a file naming its git folder: writing one is a
    # change to git's configuration, asked about (refused without a terminal).
    settings(workspace, README_POLICY)
    git(workspace, "init", "-q")
    calls = [
        *bare_repository("src/evil-repo"),
        ("write_file", {"path": "src/work/.git", "content": "gitdir: ../evil-repo\n"}),
    ]
    with scripted_model(*calls) as server:
        ask(run_agent, server)
        results = tool_results(server)
    assert results[-1]["ok"] is False and "own configuration" in results[-1]["error"]
    assert not (workspace / "src/work/.git").exists()


# -- 3. shell code fed where the deny check never reads it -----------------------------

REDIRECTED = [
    "sh < <(printf 'rm -f victim0')",
    "exec 3< <(printf 'rm -f victim1'); sh <&3",
    "PROMPT_COMMAND='rm -f victim2' bash -i < /dev/null",
    "bash -c sh < <(printf 'rm -f victim3')",
    "exec < <(printf 'rm -f victim4'); bash",
    "printf 'rm -f victim5' > >(sh)",
    ". /dev/fd/3 3< <(printf 'rm -f victim6')",
    "bash /dev/fd/3 3< <(printf 'rm -f victim7')",
    "printf 'rm -f victim8' > rc; bash --rcfile rc -i < /dev/null",
    "printf 'rm -f victim9' > rc; ENV=rc sh -i < /dev/null",
    "printf 'rm -f victim10' > rc; BASH_ENV=rc bash -c true",
    "PS4='$(rm -f victim11)'; set -x; true",
    "printf 'rm -f victim12' > s.sh; sh < s.sh",
    "f() { sh; }; f < <(printf 'rm -f victim13')",
]


def test_shell_code_from_a_redirection_a_descriptor_or_start_up_is_denied(workspace, run_agent):
    settings(workspace, RM_DENIED)
    targets = [victim(workspace, f"victim{i}") for i in range(len(REDIRECTED))]
    results = run_all(run_agent, REDIRECTED)
    assert_denied(REDIRECTED, results, "could not be checked")
    assert [t.name for t in targets if not t.exists()] == []


# -- 4. programs that run code from their options or scripts --------------------------


def test_programs_that_run_code_from_options_or_scripts_are_denied(workspace, run_agent):
    settings(workspace, RM_DENIED)
    (workspace / "f.txt").write_text("line\n")
    subprocess.run(["tar", "-cf", "a.tar", "f.txt"], cwd=workspace, check=True)
    commands = [
        "sed -n '1e rm -f victim0' f.txt",
        "sed 's/.*/rm -f victim1/e' f.txt",
        "sed -n -e p -e '$e rm -f victim2' f.txt",
        "sed -f - f.txt <<< '1e rm -f victim3'",
        "tar --to-command='rm -f victim4' -xf a.tar",
        "tar --checkpoint=1 --checkpoint-action=exec='rm -f victim5' -cf b.tar f.txt",
        "tar -I 'rm -f victim6; gzip' -cf c.tar f.txt",
        "TAR_OPTIONS='--to-command=rm\\ -f\\ victim7' tar -xf a.tar",
        "vim -es -c '!rm -f victim8' -c 'q!' f.txt",
        "vim -es '+!rm -f victim9' '+q!' f.txt",
        "printf 'all:\\n\\trm -f victim10\\n' | make -f - all",
        "git -c alias.x='!rm -f victim11' x",
        "zip -q -T -TT 'rm -f victim12; true' z.zip f.txt",
    ]
    targets = [victim(workspace, f"victim{i}") for i in range(len(commands))]
    results = run_all(run_agent, commands)
    assert_denied(commands, results, "could not be checked")
    assert [t.name for t in targets if not t.exists()] == []


PROGRAM_OPTIONS = [
    "less '+!touch pwned' f.txt",
    "less '+|touch pwned' f.txt",
    "LESSOPEN='|touch pwned %s' less f.txt",
    "less -k keys f.txt",
    "man -P 'touch pwned' ls",
    "MANPAGER='touch pwned' man ls",
    "man --pag='touch pwned' ls",
    "rg --pre ./p x",
    "rg --pre=./p x",
    "RIPGREP_CONFIG_PATH=rc rg x",
    "vim -S s.vim f.txt",
    "view -c '!touch pwned' f.txt",
    "ex f.txt",
    "zip --unzip-command='touch pwned' -T z.zip f.txt",
]


def test_an_allow_rule_for_the_program_does_not_cover_what_its_options_run(workspace, run_agent):
    programs = ["sed", "tar", "less", "man", "rg", "vim", "view", "ex", "zip", "make", "git"]
    allow = ", ".join(f"'exec({p} *)'" for p in programs)
    settings(workspace, f"policy:\n  mode: allowlist\n  allow: [{allow}]\n")
    (workspace / "f.txt").write_text("line\n")
    commands = [
        *PROGRAM_OPTIONS,
        "sed -n 's/x/y/w out.txt' f.txt",
        "tar -cf a.tar --use-comp='touch pwned' f.txt",
    ]
    results = run_all(run_agent, [*commands, "sed -n 1p f.txt", "less +G f.txt"])
    assert_denied(commands, results[: len(commands)], "not allowed")
    assert [r["ok"] for r in results[len(commands) :]] == [True, True]
    assert not (workspace / "pwned").exists() and not (workspace / "out.txt").exists()


def test_policy_check_says_what_the_option_runs(workspace, run_agent):
    settings(workspace, "policy:\n  allow: ['exec(git *)']\n  deny: ['exec(rm *)']\n")
    shown = run_agent("policy", "check", "--json", "exec", "git ls-remote --upl='rm -f x' .")
    verdict = json.loads(shown.stdout)
    assert verdict["decision"] == "deny"
    assert "--upload-pack" in shown.stdout and "could not be checked" in shown.stdout


@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is not installed")
def test_rg_pre_is_denied_under_a_deny_rule(workspace, run_agent):
    settings(workspace, RM_DENIED)
    target = victim(workspace)
    write(workspace / "p", '#!/bin/sh\nrm -f victim\ncat "$1"\n').chmod(0o755)
    results = run_all(run_agent, ["rg --pre ./p keep", "rg --pr=./p keep"])
    assert_denied(["rg --pre", "rg --pr"], results, "could not be checked")
    assert target.exists()


def test_what_pagers_searchers_and_editors_are_told_to_run_is_denied_under_any_deny_rule(
    workspace, run_agent
):
    # Without a terminal these would not reach their commands here; a deny
    # rule must refuse them all the same: on one they would.
    settings(workspace, RM_DENIED)
    (workspace / "f.txt").write_text("line\n")
    commands = [
        "less '+!rm -f victim' f.txt",
        "LESSOPEN='|rm -f victim %s' less f.txt",
        "LESS='+!rm -f victim' less f.txt",
        "man -P 'rm -f victim' ls",
        "MANPAGER='rm -f victim' man ls",
        "man --pa='rm -f victim' ls",
        "rg --pre 'rm -f victim' x",
        "rg --pr='rm -f victim' x",
        "vim '+!rm -f victim' f.txt",
        "EDITOR='rm -f victim' git commit",
        "GIT_PAGER='rm -f victim' git log",
        "PAGER='rm -f victim' git log",
    ]
    results = run_all(run_agent, commands)
    assert_denied(commands, results, "could not be checked")


# -- red team 27-30: findings 7, 8, 12, 16 ---------------------------------------------


def test_the_readmes_example_rules_do_not_run_a_template_or_a_nested_repository(
    workspace, run_agent
):
    # Finding 7: `--temp=` is `--template=` to git init/clone, and `cd DIR && git`
    # used the nested repository the line had just made.
    settings(
        workspace,
        "policy:\n  allow: [exec(git *), exec(cd *), read_file, write_file(src/**)]\n"
        "  deny: [exec(rm *)]\n",
    )
    git(workspace, "init", "-q")
    target = victim(workspace)
    fsmonitor = f'[core]\n\tfsmonitor = "rm -f {target}; false"\n'
    calls = [
        ("write_file", {"path": "src/tpl/config", "content": fsmonitor}),
        ("exec", {"command": "git init -q --temp=src/tpl src/x"}),
        ("exec", {"command": "git clone -q --temp=src/tpl . src/y"}),
        ("exec", {"command": "git init -q src/z && cd src/z && git status --short"}),
    ]
    with scripted_model(*calls) as server:
        result = ask(run_agent, server)
        results = tool_results(server)
    assert result.returncode == 0, result.stderr
    assert results[0]["ok"] is True
    assert_denied([c[1]["command"] for c in calls[1:]], results[1:], "could not be checked")
    assert target.exists()


RUNNERS = [
    "split --fil='rm -f victim0' f.txt",
    "sort --compress-program='rm -f victim1' f.txt",
    "rsync -e 'rm -f victim2' f.txt h:x",
    "git daemon --access-hook='rm -f victim3' --export-all --port=1 .",
    "git remote-ext x 'rm -f victim4' <<< 'connect git-upload-pack'",
    "printf '!rm -f victim5\\nq\\n' | ed -s f.txt",
    "sed -f cmds.sed f.txt",  # finding 16: the script runs `e rm -f victim6`
    "sed -nf cmds.sed f.txt",
    "ssh-agent sh < s.sh",  # finding 12: a shell behind a program outside the table
    "script -qc sh /dev/null < s.sh",
]


def test_programs_that_run_what_an_option_or_their_input_names_are_denied(workspace, run_agent):
    # Finding 8 (and 12, 16): `exec(PROG *)`-style freedom under a deny rule.
    settings(workspace, RM_DENIED)
    (workspace / "f.txt").write_text("line\n")
    (workspace / "cmds.sed").write_text("1e rm -f victim6\n")
    (workspace / "s.sh").write_text("rm -f victim8\n")
    targets = [victim(workspace, f"victim{i}") for i in range(10)]
    results = run_all(run_agent, RUNNERS)
    assert_denied(RUNNERS, results, "could not be checked")
    assert [t.name for t in targets if not t.exists()] == []
