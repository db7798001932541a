"""An attacker's review of issue 9, replayed through the real ``agent`` executable.

One test per class the review found open: a model rewriting its own policy
behind a folder change or through a program no list knew; git's configuration
turning an allowed ``git status`` into any command; deny rules dodged by
arguments added at run time or by renaming a program; option injection through
an empty neighbouring value; over-broad "always" rules; IPv6 zone ids.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import ask, command_skill, config, provider_args, scripted_model, settings
from conftest import tool_results as results_of
from model_server import ModelServer
from test_terminal_e2e import SESSION_PROMPT, Terminal, write_call

SETTINGS = Path(".agents") / "config" / "agent.yaml"
FULL_RM_DENIED = "policy:\n  mode: full\n  deny: ['exec(rm *)']\n"


def run_model(run_agent, calls: list[tuple[str, dict]], *extra: str) -> list[dict]:
    """Have a model make ``calls``; the tool results it got, one per call."""
    with scripted_model(*calls) as server:
        result = ask(run_agent, server, *extra)
        results = results_of(server)
    assert result.returncode == 0, result.stderr
    assert len(results) == len(calls)
    return results


def execs(*commands: str) -> list[tuple[str, dict]]:
    return [("exec", {"command": c}) for c in commands]


def git_repo(ws: Path) -> None:
    for args in (
        ["init", "-q"],
        ["config", "user.email", "a@b"],
        ["config", "user.name", "a"],
    ):
        subprocess.run(["git", *args], cwd=ws, check=True)
    (ws / "f").write_text("tracked\n")
    subprocess.run(["git", "add", "f"], cwd=ws, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=ws, check=True)


# -- 1. a folder change the guard cannot follow ---------------------------------------


def refused_or_held(got: dict, route: str) -> bool:
    """The parser's guard refused the call; or, in a namespace sandbox, it ran and the
    kernel refused the write ("Read-only file system": the guard leaves held files to it)."""
    if got["ok"] is not False:
        return False
    if "agent's own configuration" in got.get("error", ""):
        return True
    return route != "landlock" and "Read-only file system" in got.get("stderr", "")


def test_a_model_cannot_reach_its_settings_behind_a_hidden_folder_change(
    workspace, run_agent, route
):
    target = settings(workspace, FULL_RM_DENIED)
    commands = [
        "d=.agents/config; cd $d; printf 'policy: {mode: full}\\n' > agent.yaml",
        "cd \"$(echo .agents)\"; echo '{}' > config/agent.yaml",
        "printf 'policy: {mode: full}\\n' | env -C .agents/config tee agent.yaml",
        "builtin cd .agents; echo '{}' > config/agent.yaml",
        "command cd .agents/config && echo 'policy: {mode: full}' > agent.yaml",
        "CDPATH=.agents; cd config >/dev/null; echo '{}' > agent.yaml",
        "f() { echo '{}' > config/agent.yaml; }; cd .agents; f",
    ]
    results = run_model(run_agent, execs(*commands), "--yes")
    assert target.read_text() == FULL_RM_DENIED
    for command, got in zip(commands, results, strict=True):
        assert refused_or_held(got, route), (command, got)
    # Working in an ordinary folder is not affected.
    (workspace / "src").mkdir()
    [fine] = run_model(run_agent, execs("cd src && echo hi > out.txt"), "--yes")
    assert fine["ok"] is True and (workspace / "src" / "out.txt").read_text() == "hi\n"


# -- 2. programs no list knew ----------------------------------------------------------


def test_any_program_naming_a_layer_file_or_changing_the_whole_tree_is_asked(
    workspace, run_agent, route
):
    # No deny rule: nothing makes `xargs` fail closed but the guard itself.
    target = settings(workspace, "policy:\n  mode: full\n")
    git_repo(workspace)
    (workspace / "x.txt").write_text("policy: {mode: full}\n")
    commands = [
        "sort -o .agents/config/agent.yaml x.txt",
        "gzip .agents/config/agent.yaml",
        "git stash -u",  # stashes the untracked .agents/ away
        "git diff --output=.agents/config/agent.yaml",
        "echo .agents/config/agent.yaml | xargs gzip",
        "chmod -R a-w .",
    ]
    results = run_model(run_agent, execs(*commands), "--yes")
    assert target.read_text() == "policy:\n  mode: full\n"
    assert not list((workspace / ".agents" / "config").glob("*.gz"))
    assert (
        subprocess.run(
            ["git", "stash", "list"], cwd=workspace, capture_output=True, text=True
        ).stdout
        == ""
    )
    for command, got in zip(commands, results, strict=True):
        assert refused_or_held(got, route), (command, got)
    # Reading a layer file is not changing it.
    [read] = run_model(run_agent, execs("cat .agents/config/agent.yaml"), "--yes")
    assert read["ok"] is True and read["stdout"] == "policy:\n  mode: full\n"


# -- 3. git's configuration runs programs --------------------------------------------


def test_an_allowed_git_command_cannot_rewrite_gits_configuration(workspace, run_agent):
    settings(
        workspace,
        "policy:\n  mode: allowlist\n  allow: ['exec(git status*)', 'exec(git log *)']\n",
    )
    git_repo(workspace)
    config_before = (workspace / ".git" / "config").read_text()
    hook = "[core]%n%x09fsmonitor = touch PWNED"
    commands = [
        f"git log -1 --format='{hook}' --output=.git/config",
        f"git log -1 --format='{hook}' --output=notes.txt",  # a write no rule covers
        "git status --short",
    ]
    results = run_model(run_agent, execs(*commands))
    assert (workspace / ".git" / "config").read_text() == config_before
    assert not (workspace / "PWNED").exists() and not (workspace / "notes.txt").exists()
    assert results[0]["ok"] is False and results[1]["ok"] is False
    assert results[2]["ok"] is True
    # Whatever the mode, a model writing git's configuration or hooks is asked.
    settings(workspace, "policy:\n  mode: full\n  allow: ['exec(git *)']\n")
    results = run_model(
        run_agent,
        [
            *execs(
                f"git log -1 --format='{hook}' --output=.git/config",
                "git config core.fsmonitor 'touch PWNED'",
            ),
            ("write_file", {"path": ".git/hooks/pre-commit", "content": "touch PWNED"}),
        ],
        "--yes",
    )
    for got in results:
        assert got["ok"] is False and "agent's own configuration" in got["error"], got
    assert (workspace / ".git" / "config").read_text() == config_before
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    # `exec(git *)` does not cover git options that name a program to run.
    settings(workspace, "policy:\n  mode: allowlist\n  allow: ['exec(git *)']\n")
    results = run_model(
        run_agent, execs("git -c core.fsmonitor='touch PWNED' status", "git status")
    )
    assert results[0]["ok"] is False and results[1]["ok"] is True
    assert not (workspace / "PWNED").exists()


# -- 4. deny rules dodged by run-time arguments or a renamed program ------------------


def test_deny_rules_hold_against_added_arguments_and_renamed_programs(workspace, run_agent):
    settings(workspace, FULL_RM_DENIED)
    command_skill(workspace)
    victims = [workspace / f"victim{i}" for i in range(8)]
    for victim in victims:
        victim.write_text("keep me")
    (workspace / "list").write_text("victim1\n")
    commands = [
        "echo victim0 | xargs rm",
        "xargs -a list rm",
        "hash -p /bin/rm ls; ls victim2",
        "shopt -s expand_aliases\nalias ll=rm\nll victim3",
        "find . -name victim4 -exec rm {} +",
        "BASH_CMDS[ls]=/bin/rm; ls victim5",
        "n='BASH_CMDS[ls]'; printf -v \"$n\" /bin/rm; ls victim6",
        "source <(echo rm victim7)",  # code that exists only at run time
    ]
    results = run_model(run_agent, execs(*commands), "--yes")
    assert all(v.read_text() == "keep me" for v in victims)
    for command, got in zip(commands, results, strict=True):
        assert got["ok"] is False and "exec(rm *)" in got["error"], command
    assert "xargs" in results[0]["error"]
    assert "hash" in results[2]["error"] or "(rm ls)" in results[2]["error"]
    # A command typed by a person is held to deny rules too (exit 126).
    typed = run_agent("/t", "echo victim0 | xargs rm")
    assert typed.returncode == 126 and victims[0].exists()


# -- 5. option injection through an empty neighbour -----------------------------------

LISTERS = """\
tools:
  lister:
    description: list
    security: safe
    params: {prefix: {type: string}, name: {type: string}}
    required: [name]
    run: [ls, "{prefix}{name}"]
  lister-shell:
    description: list through sh
    security: safe
    params: {prefix: {type: string}, name: {type: string}}
    shell: "ls {prefix}{name}"
"""


def test_an_empty_value_does_not_let_the_next_one_become_an_option(workspace, run_agent):
    config(workspace, "listers.yaml", LISTERS)
    (workspace / ".hidden").write_text("")
    calls = [
        ("lister", {"prefix": "", "name": "-la"}),
        ("lister-shell", {"prefix": "", "name": "-la"}),
        ("lister", {"prefix": "x", "name": "-la"}),  # one argument, `x-la`
    ]
    results = run_model(run_agent, calls)
    for refused in results[:2]:
        assert refused["ok"] is False and "'name' starts with '-'" in refused["error"]
        assert ".hidden" not in str(refused)
    assert "x-la" in results[2]["stderr"]


# -- 6. "always" saves exactly the path ------------------------------------------------


def test_always_saves_a_rule_for_exactly_that_path(workspace):
    script = [
        write_call("1", "notes"),
        {"text": "one"},
        write_call("2", "notes/inside.txt"),
        {"text": "two"},
    ]
    with (
        ModelServer(script) as server,
        Terminal(*provider_args(server), cwd=workspace) as term,
    ):
        term.expect(rf"^{SESSION_PROMPT}$")
        term.type("write it")
        term.expect(r"\[a\]lways: $")
        term.type("a")
        term.expect(re.escape("added allow rule `write_file(./notes)`"))
        term.expect(r"^one$")
        term.expect(rf"^{SESSION_PROMPT}$")
        # The file becomes a folder: the rule for the file does not cover what it holds.
        (workspace / "notes").unlink()
        (workspace / "notes").mkdir()
        term.type("again")
        term.expect(r"\[a\]lways: $")
        term.type("n")
        term.expect(r"^two$")
        term.expect(rf"^{SESSION_PROMPT}$")
        term.type("/exit")
        assert term.wait() == 0
    saved = yaml.safe_load((workspace / SETTINGS).read_text())
    assert saved == {"policy": {"allow": ["write_file(./notes)"]}}
    assert not (workspace / "notes" / "inside.txt").exists()


@pytest.mark.parametrize(
    ("path", "rule", "covers", "not_covers"),
    [
        (".", "write_file(.)", ".", "src/a.py"),
        ("src/", "write_file(./src)", "src", "src/a.py"),
        ("a.txt", "write_file(./a.txt)", "a.txt", "a.txt/x"),
    ],
)
def test_the_rule_always_saves_covers_nothing_below_the_path(
    workspace, path, rule, covers, not_covers
):
    from mdagent.safety.rules import rule_for
    from mdagent.safety.views import path_matches, path_views

    (workspace / "src").mkdir()
    saved = rule_for(write_file_tool(), {"path": path}, str(workspace))
    assert saved == rule

    def allowed(pattern: str, target: str) -> bool:
        views = path_views(target, str(workspace))
        return all(path_matches(pattern, v, deny=False) for v in views)

    pattern = rule[len("write_file(") : -1]
    assert allowed(pattern, covers) and not allowed(pattern, not_covers)
    # A folder's files need a rule that says so; deny rules always cover them.
    assert allowed("./src/", "src/a.py") and allowed("./src/**", "src/a.py")
    assert all(path_matches("./src", v, deny=True) for v in path_views("src/a", str(workspace)))


def write_file_tool():
    class Tool:
        name = "write_file"

    return Tool()


# -- 7. IPv6 zone ids -------------------------------------------------------------------


def test_a_zone_id_does_not_hide_an_address_from_a_domain_rule(workspace, run_agent):
    settings(workspace, "policy:\n  mode: full\n  deny: ['fetch(domain:::1)']\n")
    urls = ["http://[::1%25lo]:9/", "http://[::1%25eth0]:9/x", "http://[0:0::1%251]:9/"]
    results = run_model(run_agent, [("fetch", {"url": u}) for u in urls])
    for url, got in zip(urls, results, strict=True):
        assert got["ok"] is False and "fetch(domain:::1)" in got["error"], url


def test_a_deny_rule_on_the_root_folder_denies_every_file(workspace, run_agent):
    # `write_file(/)` reads as "nowhere": it held nothing before (fail open).
    settings(workspace, "policy:\n  mode: full\n  deny: ['write_file(/)', 'read_file(/)']\n")
    (workspace / "notes.txt").write_text("kept\n")
    calls = [
        ("write_file", {"path": "notes.txt", "content": "overwritten\n"}),
        ("read_file", {"path": "/etc/hostname"}),
    ]
    for result in run_model(run_agent, calls):
        assert result["code"] == "DENIED", result
    assert (workspace / "notes.txt").read_text() == "kept\n"


# -- 8. inline code that an interpreter's allow rule covered ----------------------------


def test_code_given_to_an_allowed_interpreter_is_asked_not_run(workspace, run_agent):
    # `exec(python3 *)` is for scripts: a module that runs its arguments as
    # code, or a program read from stdin, is inline code and asks (and with
    # no one to ask, `agent ask` refuses it).
    settings(workspace, "policy:\n  allow: ['exec(python3 *)', 'exec(echo *)']\n")
    (workspace / "tool.py").write_text("open('ran-script', 'w').close()\n")
    commands = [
        "python3 -m timeit -n1 -r1 \"open('ran-timeit', 'w').close()\"",
        "python3 -m code <<< \"open('ran-code', 'w').close()\"",
        "python3 /dev/stdin <<< \"open('ran-stdin', 'w').close()\"",
        "echo \"open('ran-pipe', 'w').close()\" | python3 -",
    ]
    *refused, script = run_model(run_agent, execs(*commands, "python3 tool.py"))
    for command, got in zip(commands, refused, strict=True):
        assert got["ok"] is False and "runs inline code" in got["error"], (command, got)
    assert sorted(p.name for p in workspace.glob("ran-*")) == ["ran-script"]
    assert script["ok"] is True, script


def test_archivers_unpacking_where_they_run_are_asked_in_every_spelling(workspace, run_agent):
    # `cpio -vid` is copy-in like `cpio -id`: it writes what the archive names,
    # `.agents/config/agent.yaml` included. Found by mutation testing.
    target = settings(workspace, "policy:\n  mode: full\n")
    (workspace / "evil.cpio").write_bytes(b"070707")
    commands = [
        "cpio -vidu < evil.cpio",
        "cpio -dvi < evil.cpio",
        "cpio -d -u -i < evil.cpio",
        "sh -c 'cpio -vid < evil.cpio'",
        "sudo bsdcpio -vid < evil.cpio",
        "pax -r < evil.cpio",
        "jar xf evil.cpio",
    ]
    results = run_model(run_agent, execs(*commands), "--yes")
    assert target.read_text() == "policy:\n  mode: full\n"
    for command, got in zip(commands, results, strict=True):
        assert got["ok"] is False and "agent's own configuration" in got["error"], command
    [listing] = run_model(run_agent, execs("cpio -it < evil.cpio; true"), "--yes")
    assert "agent's own configuration" not in str(listing.get("error"))


# -- red team of issues 27-30 -------------------------------------------------------------

POINT_GIT_ELSEWHERE = """
import os, shutil
os.makedirs("build/cd", exist_ok=True)
for d in ("objects", "refs"):
    shutil.copytree(".git/" + d, "build/cd/" + d, symlinks=True)
shutil.copy(".git/HEAD", "build/cd/HEAD")
open("build/cd/config", "w").write(
    '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = "touch pwned; false"\\n'
)
open(".git/commondir", "w").write("../build/cd\\n")
os.makedirs(".git/objects/info", exist_ok=True)
open(".git/objects/info/alternates", "w").write(os.path.abspath("build/cd/objects") + "\\n")
if not os.path.exists(".git/config.worktree"):
    open(".git/config.worktree", "w").write("[core]\\n\\tpager = touch pwned2\\n")
os.makedirs(".git/modules/sub", exist_ok=True)
open(".git/modules/sub/config", "w").write("[core]\\n\\tfsmonitor = touch pwned3\\n")
"""


def test_a_script_cannot_point_git_at_a_configuration_it_wrote(workspace, run_agent, route):
    # Red team 1 (and 20): files git follows that do not exist get no mount
    # point; what a command makes of them is put back when it ends, on every route.
    settings(workspace, "policy:\n  mode: full\n")
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "i",
        ],
        cwd=workspace,
        check=True,
    )
    calls = [
        ("write_file", {"path": "evil.py", "content": POINT_GIT_ELSEWHERE}),
        ("exec", {"command": "python3 evil.py"}),
        ("exec", {"command": "git status --short"}),
    ]
    results = run_model(run_agent, calls)
    assert results[1]["exit_code"] == 0, results[1]
    said = results[1]["git"]
    for name in ("commondir", "objects/info/alternates", "config.worktree", "modules/sub/config"):
        assert f".git/{name}" in said, said
        assert not (workspace / ".git" / name).exists(), name
    # The person's own git afterwards runs nothing the model wrote.
    subprocess.run(["git", "status"], cwd=workspace, capture_output=True, check=True)
    assert not list(workspace.glob("pwned*"))
