"""Table tests of the guard's small decisions (mutation-testing survivors of protected.py).

Each row is a decision the guard makes about a command or a path: which
archiver call unpacks, which option moves a program to another folder, what
a word may name. A wrong answer here is a protected file missed or a harmless
command asked about.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mdagent.core.layers import Layer
from mdagent.safety.commandwrites import (
    braces,
    candidates,
    changes_folder,
    chdir_options,
    expand_user,
    extracts,
    git_subcommand,
    only_reads,
)
from mdagent.safety.gitfolders import git_dirs_of, git_top
from mdagent.safety.protectedfiles import protected_files


@pytest.fixture
def ws(layer_project) -> Path:
    return layer_project


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "AGENT_HOME": str(home / "agent")}


@pytest.fixture
def guard(ws, env):
    return protected_files(workdir=ws, environ=env)


def target(guard, command: str, cwd: str | None = None, **env: str) -> str | None:
    return guard.exec_target(command, cwd, {**guard.environ, **env})


# -- which archiver and patcher calls unpack into their folder ----------------------------


@pytest.mark.parametrize(
    ("program", "args", "writes"),
    [
        ("tar", ("xf", "a.tar"), True),  # the old style: the first word is a cluster
        ("tar", ("-xf", "a.tar"), True),
        ("bsdtar", ("-xf", "a.tar"), True),
        ("bsdtar", ("-cf", "a.tar", "src"), False),
        ("tar", ("-cf", "x.tar", "src"), False),  # an x in a file name is no cluster
        ("tar", ("--exclude=x", "-cf", "a.tar", "src"), False),  # nor in a long option
        ("tar", ("-c", "-f", "a.tar", "--exclude=x"), False),
        ("tar", ("tzf", "a.tgz"), False),
        ("tar", ("--extract", "--file=a.tar"), True),
        ("tar", ("--get", "--file=a.tar"), True),
        ("tar", (), False),
        ("unzip", ("a.zip",), True),
        ("unzip", ("-o", "a.zip"), True),
        *[("unzip", (opt, "a.zip"), False) for opt in ("-l", "-t", "-v", "-Z", "-p", "-z")],
        ("ar", ("x", "lib.a"), True),
        ("ar", ("t", "lib.a"), False),
        ("ar", ("rcs", "x.a"), False),
        ("ar", (), False),
        ("cpio", ("-i",), True),
        ("cpio", ("-idv",), True),
        ("cpio", ("-vid",), True),  # copy-in anywhere in the cluster
        ("cpio", ("-dvi",), True),
        ("cpio", ("-d", "-v", "-i"), True),
        ("cpio", ("--extract",), True),
        ("cpio", ("-p", "dest"), True),  # pass-through writes into dest
        ("cpio", ("--pass-through", "dest"), True),
        ("cpio", ("-i", "-Ftest.cpio"), True),  # the t of a value is no listing
        ("cpio", ("-i", "-F", "t"), True),
        ("cpio", ("-o",), False),
        ("cpio", ("-ov", "-Hbin"), False),  # the i of a value is no copy-in
        ("cpio", ("-o", "-H", "bin"), False),
        ("cpio", ("-F", "a.cpio", "-t"), False),  # only the one word after -F is its value
        ("cpio", ("-o", "-F", "-i"), False),  # an archive named -i: a value, not copy-in
        ("cpio", ("-o", "--list"), True),  # modes that do not go together: fail closed
        ("cpio", ("-it",), False),  # a listing
        ("cpio", ("-t",), False),
        ("cpio", ("--list", "-i"), False),
        ("cpio", ("i",), True),  # no mode understood: fail closed
        ("cpio", ("-oi",), True),
        ("cpio", ("-op", "dest"), True),  # copy-out and pass-through: fail closed
        ("cpio", ("-o", "--pass-through", "dest"), True),
        ("cpio", (), True),
        # Other archivers read with the rules of the one whose command line they share.
        ("bsdcpio", ("-vid",), True),
        ("bsdcpio", ("-o",), False),
        ("gtar", ("-xf", "a.tar"), True),
        ("star", ("-x", "-f", "a.tar"), True),
        ("jar", ("xf", "a.jar"), True),
        ("jar", ("cf", "a.jar", "src"), False),
        ("bsdunzip", ("a.zip",), True),
        ("bsdunzip", ("-l", "a.zip"), False),
        ("7zz", ("x", "a.7z"), True),
        ("lha", ("x", "a.lzh"), True),
        ("arj", ("e", "a.arj"), True),
        ("arj", ("l", "a.arj"), False),
        ("unar", ("a.zip",), True),
        ("pax", ("-rf", "a.pax"), True),
        ("pax", ("-r", "-v"), True),
        ("pax", ("-rw", "src", "dest"), True),
        ("pax", ("-wf", "a.pax", "src"), False),
        ("pax", ("-f", "r.pax"), False),  # a listing; the r is the archive's name
        ("pax", ("-vf", "r"), False),
        *[(p, ("x", "a.7z"), True) for p in ("7z", "7za", "7zr", "unrar")],
        *[(p, ("e", "a.7z"), True) for p in ("7z", "7za", "7zr", "unrar")],
        *[(p, ("l", "a.7z"), False) for p in ("7z", "7za", "7zr", "unrar")],
        ("7z", (), False),
        ("patch", (), True),
        ("patch", ("-p1",), True),
    ],
)
def test_which_archiver_calls_unpack(program, args, writes):
    assert extracts(program, args) is writes


# -- what changes the files of a folder without naming them ------------------------------


@pytest.mark.parametrize(
    ("core", "changes"),
    [
        (("git", "init", "--template=t"), "git init"),
        (("git", "init", "--separate-git-dir=x"), "git init"),
        (("git", "init"), None),
        (("git", "status", "--template=t"), None),
        (("git", "reset", "--hard"), "git reset"),
        (("git", "reset", "--merge"), "git reset"),
        (("git", "reset", "--keep"), "git reset"),
        (("git", "reset", "HEAD~1"), None),
        (("git", "checkout", "main"), "git checkout"),
        (("git", "switch", "main"), "git switch"),
        *[(("git", "switch", opt, "new"), None) for opt in ("-b", "-B", "-c", "-C", "--orphan")],
        *[(("git", "checkout", o, "new"), None) for o in ("-b", "-B", "-c", "-C", "--orphan")],
        # a new branch from another start point checks that one out
        (("git", "checkout", "-b", "new", "origin/main"), "git checkout"),
        (("git", "switch", "-c", "new", "origin/main"), "git switch"),
        (("git", "checkout", "-q", "main"), "git checkout"),
        (("git", "stash", "list"), None),
        (("git", "stash", "push", "list"), "git stash"),  # only the first word is a verb
        (("git", "stash", "-u"), "git stash"),
        (("git", "clean", "-fd", "-n"), None),
        (("git", "clean", "-fd", "x", "-n"), None),
        (("git", "apply", "x.diff", "--check"), None),
        (("git", "apply", "--cached", "x.diff"), None),
        (("git", "apply", "x.diff"), "git apply"),
        (("git",), None),
        (("tar", "xf", "a.tar"), "tar"),
        (("/usr/bin/unzip", "a.zip"), "unzip"),
        (("tar", "cf", "a.tar"), None),
        (("gzip", "x"), None),
    ],
)
def test_what_changes_a_folder_unnamed(core, changes):
    assert changes_folder(core) == changes


# -- the options that move a program to another folder -----------------------------------


@pytest.mark.parametrize(
    ("core", "folders"),
    [
        (("make", "-C", "dir"), ["dir"]),
        (("make", "-s", "-C", "dir", "all"), ["dir"]),
        (("git", "-C"), [None]),  # the value is missing: not knowable
        (("make", "--directory=a=b"), ["a=b"]),
        (("env", "--chdir=src", "x"), ["src"]),
        (("make", "--directory", "d"), ["d"]),
        (("make", "-Cdir"), ["dir"]),
        (("make", "-Cx"), ["x"]),
        (("make", "all"), []),
        (("make", "-j4", "all"), []),
        (("C", "-C", "d"), ["d"]),
    ],
)
def test_which_options_move_a_program(core, folders):
    assert chdir_options(core) == folders


# -- brace expansion -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "variants"),
    [
        ("a{b,c}d", ["a{b,c}d", "abd", "acd"]),
        ("{a,b}", ["{a,b}", "a", "b"]),
        ("{1..3}", ["{1..3}"]),  # a sequence is kept as written
        ("x{a..b,c}", ["x{a..b,c}", "xa..b", "xc"]),  # a list holding dots is a list
        ("plain", ["plain"]),
        (".{agents,git}/config", [".{agents,git}/config", ".agents/config", ".git/config"]),
    ],
)
def test_braces_expand_lists(word, variants):
    assert braces(word) == variants


def test_braces_stop_at_the_limit():
    many = "{" + ",".join(str(i) for i in range(100)) + "}"
    assert len(braces(many)) == 64
    assert braces(many)[:3] == [many, "0", "1"]
    assert len(braces(many, limit=5)) == 5


# -- what a word may name ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "names"),
    [
        ("x.txt", ["x.txt"]),
        ("-", ["-"]),  # stdin/stdout, a word of its own
        ("--output=a=b", ["a=b"]),
        ("key=value", ["key=value", "value"]),
        ("-oFILE", ["FILE", "ILE", "LE", "E"]),
        ("-oF", ["F"]),
        ("-o=x", ["x", "=x"]),
        ("--force", []),
        ("-v", []),
    ],
)
def test_what_a_word_may_name(word, names):
    assert candidates(word) == names


# -- which programs only read --------------------------------------------------------------


@pytest.mark.parametrize(
    ("core", "reads"),
    [
        (("git", "-p", "status"), True),
        (("git", "-c", "core.pager=x", "status"), False),
        (("git", "-C", "d", "status"), True),
        (("git", "--config-env=core.pager=X", "status"), False),
        (("git", "--exec-path=/tmp", "status"), False),
        (("git", "log", "--output=x"), False),
        (("cat", "-n", "x"), True),
        (("less", "-o", "x"), False),
        (("gzip", "x"), False),
    ],
)
def test_which_programs_only_read(core, reads):
    assert only_reads(core) is reads


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("args", "found"),
    [
        (("-C", "d", "status"), ("status", 2)),
        (("--no-pager", "-C", "d", "status"), ("status", 3)),
        (("-C", "d", "-p", "status"), ("status", 3)),
        (("-p", "status"), ("status", 1)),
        (("--no-pager", "status"), ("status", 1)),
        (("-p",), (None, 1)),
    ],
)
def test_git_subcommand(args, found):
    assert git_subcommand(args) == found


def test_expand_user_only_expands_a_leading_tilde(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert expand_user("~/x") == str(tmp_path / "x")
    assert expand_user("a~/x") == "a~/x"


def test_git_top_is_the_folder_holding_dot_git(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "a" / "b").mkdir(parents=True)
    assert git_top(str(tmp_path / "repo" / "a" / "b")) == str(tmp_path / "repo")
    (tmp_path / "none" / "c").mkdir(parents=True)
    assert git_top(str(tmp_path / "none" / "c")) == str(tmp_path / "none" / "c")


# -- what protected_files collects, and what it tells the person -------------------------


def test_every_source_of_policy_is_protected_and_named(tmp_path, ws, env, monkeypatch):
    home = Path(env["HOME"])
    monkeypatch.setenv("HOME", str(home))  # `~` in AGENT_PATH is the process's home
    extra = tmp_path / "extra"
    bundled = tmp_path / "bundled"
    real = tmp_path / "real"
    for name in ("skills", "config", "claude"):
        (real / name).mkdir(parents=True)
    bundled.mkdir()
    # Symlinked folders: the real place is protected too, not only the link.
    (bundled / "skills").symlink_to(real / "skills")
    (bundled / "config").symlink_to(real / "config")
    (ws / ".claude").mkdir()
    (ws / ".claude" / "skills").symlink_to(real / "claude")
    (ws / "hooks").mkdir()
    (ws / "hooks" / "guard.sh").write_text("#!/bin/sh\n")
    environ = {
        **env,
        "GIT_CONFIG_GLOBAL": str(tmp_path / "gitglobal"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "AGENT_PATH": os.pathsep.join([str(extra), " ", "~/more"]),
    }

    class Spec:
        implementation = {"handler": "tools/run.py:main", "base_dir": str(tmp_path / "h")}

    guard = protected_files(
        workdir=ws,
        layers=[Layer(bundled, "bundled"), tmp_path / "plain", Layer(tmp_path / "opt", "option")],
        settings={"hooks": {"before": [{"run": "./hooks/guard.sh --check"}]}},
        tools=[Spec()],
        environ=environ,
    )
    expected = {
        str(ws / ".agents" / "x"): ".agents/x (the project layer)",
        str(
            tmp_path / "gitglobal"
        ): f"{tmp_path}/gitglobal (git's user configuration: it can run programs)",
        str(
            home / ".gitconfig"
        ): f"{home}/.gitconfig (git's user configuration: it can run programs)",
        str(
            tmp_path / "xdg/git/config"
        ): f"{tmp_path}/xdg/git/config (git's user configuration: it can run programs)",
        str(home / "agent/x"): f"{home}/agent/x (the user layer ($AGENT_HOME))",
        str(extra / "x"): f"{extra}/x (a layer folder (AGENT_PATH))",
        str(home / "more/x"): f"{home}/more/x (a layer folder (AGENT_PATH))",
        str(real / "skills/x"): f"{real}/skills/x (the bundled layer)",
        str(real / "config/x"): f"{real}/config/x (the bundled layer)",
        str(bundled / "skills/x"): f"{bundled}/skills/x (the bundled layer)",
        str(tmp_path / "plain/x"): f"{tmp_path}/plain/x (a layer folder (layer))",
        str(tmp_path / "opt/x"): f"{tmp_path}/opt/x (a layer folder (option))",
        str(ws / ".claude/skills/x"): ".claude/skills/x (a skill folder read as a layer)",
        str(real / "claude/x"): f"{real}/claude/x (a skill folder read as a layer)",
        str(tmp_path / "h/tools/run.py"): f"{tmp_path}/h/tools/run.py (a handler module)",
        str(ws / "hooks/guard.sh"): "hooks/guard.sh (a hook script)",
    }
    for path, found in expected.items():
        assert guard.file_target(path) == found, path
    # Only the bundled layer's declarations are policy, not its whole folder.
    assert guard.file_target(str(bundled / "README.md")) is None
    assert guard.file_target(str(tmp_path / "h" / "tools" / "other.py")) is None
    assert guard.file_target(str(ws / "hooks" / "other.sh")) is None


def test_a_handler_without_a_base_is_in_the_workspace(ws, env):
    class Spec:
        implementation = {"handler": "~/tools/run.py:main"}

    class NoHandler:
        implementation = {"handler": 5}

    guard = protected_files(workdir=ws, tools=[NoHandler(), Spec(), object()], environ=env)
    # `~` is the user's home, not a folder named ~ in the workspace
    home = os.path.expanduser("~")
    assert guard.file_target(f"{home}/tools/run.py") == f"{home}/tools/run.py (a handler module)"

    class Local:
        implementation = {"handler": "tools/run.py"}

    guard = protected_files(workdir=ws, tools=[Local()], environ=env)
    assert guard.file_target("tools/run.py") == "tools/run.py (a handler module)"
    assert guard.file_target("tools/run.pyc") is None


@pytest.mark.parametrize("when", ["before", "after", "session_start", "prompt", "stop"])
def test_every_hook_event_names_protected_scripts(ws, env, when):
    (ws / "a.sh").write_text("#!/bin/sh\n")
    (ws / "b.sh").write_text("#!/bin/sh\n")
    (ws / "c.sh").write_text("#!/bin/sh\n")
    (ws / "d.sh").write_text("#!/bin/sh\n")
    hooks = {
        when: [
            "not a mapping",
            {"run": 5},  # not a command: skipped, the rest still read
            {"run": ["./a.sh", 3]},  # an argv
            {"run": "./b.sh"},
            {"run": "./c.sh ${x@P}"},  # cannot be parsed: split on spaces
        ],
        "other": [{"run": "./d.sh"}],
    }
    guard = protected_files(workdir=ws, settings={"hooks": hooks}, environ=env)
    for name in ("a.sh", "b.sh", "c.sh"):
        assert guard.file_target(name) == f"{name} (a hook script)", name
    assert guard.file_target("d.sh") is None  # not an event


# -- skill folders linked into a layer from elsewhere -----------------------------------


def _skill(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\nbody\n")
    return folder


def test_a_skill_folder_linked_into_a_layer_is_protected(tmp_path, ws, env):
    user = tmp_path / "u"
    (user / "skills").mkdir(parents=True)
    outside = _skill(tmp_path / "elsewhere" / "mine")
    _skill(user / "skills" / "inside")
    (user / "skills" / "mine").symlink_to(outside)
    guard = protected_files(workdir=ws, layers=[Layer(user, "user")], environ=env)
    assert guard.file_target(str(outside / "SKILL.md")) == (
        f"{outside}/SKILL.md (a skill folder linked from a layer (user))"
    )
    assert guard.file_target(str(tmp_path / "elsewhere" / "x")) is None
    assert guard.file_target(str(tmp_path / "None")) is None


def test_a_project_layer_links_only_inside_the_workspace(tmp_path, ws, env):
    shared = _skill(ws / "shared" / "s")
    stranger = _skill(tmp_path / "stranger" / "s")
    skills = ws / ".agents" / "skills"
    skills.mkdir()
    (skills / "shared").symlink_to(shared)
    (skills / "stranger").symlink_to(stranger)
    layer = Layer(ws / ".agents", "project")
    guard = protected_files(workdir=ws, layers=[layer], environ=env)
    assert guard.file_target(str(shared / "SKILL.md")) == (
        "shared/s/SKILL.md (a skill folder linked from a layer (project))"
    )
    # a link leading out of the workspace is refused, not made policy
    assert guard.file_target(str(stranger / "SKILL.md")) is None


def test_a_layer_without_skills_adds_no_links(tmp_path, ws, env):
    guard = protected_files(workdir=ws, layers=[Layer(tmp_path / "bare", "user")], environ=env)
    assert guard.file_target(str(tmp_path / "bare" / "x")).endswith("(a layer folder (user))")


# -- the git folder of a worktree or submodule ---------------------------------------------


def test_a_gitdir_file_with_a_relative_path_and_odd_bytes(tmp_path):
    real = tmp_path / "real" / "wt"
    real.mkdir(parents=True)
    (real / "commondir").write_text("../..\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").write_bytes(b"gitdir: ../real/wt\n\xff\xfe junk\n")
    assert git_dirs_of(str(work)) == [
        str(work / ".git"),
        str(work / "../real/wt"),
        str(work / "../real/wt/../.."),
    ]


def test_a_gitdir_line_is_read_up_to_4096_characters(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    (work / ".git").write_text("gitdir: " + "a" * 5000 + "\n")
    found = git_dirs_of(str(work))
    assert found == [str(work / ".git"), str(work / ("a" * (4096 - len("gitdir: "))))]
    target = work / ("b" * 10)
    target.mkdir()
    (target / "commondir").write_text("c" * 5000)
    (work / ".git").write_text(f"gitdir: {target}\n")
    assert git_dirs_of(str(work))[2] == str(target / ("c" * 4096))


def test_git_configuration_behind_dotfile_links_is_protected(tmp_path, ws, monkeypatch):
    # No HOME in the given environment: the process's home is used.
    home = tmp_path / "h"
    dotfiles = tmp_path / "dotfiles"
    (dotfiles / "config" / "git").mkdir(parents=True)
    (dotfiles / "gitconfig").write_text("[core]\n")
    home.mkdir()
    (home / ".gitconfig").symlink_to(dotfiles / "gitconfig")
    (home / ".config").symlink_to(dotfiles / "config")
    monkeypatch.setenv("HOME", str(home))
    guard = protected_files(workdir=ws, environ={"AGENT_HOME": str(tmp_path / "agent")})
    what = "(git's user configuration: it can run programs)"
    assert guard.file_target(str(home / ".gitconfig")) == f"{home}/.gitconfig {what}"
    assert guard.file_target(str(dotfiles / "gitconfig")) == f"{dotfiles}/gitconfig {what}"
    hook = dotfiles / "config" / "git" / "hooks"
    assert guard.file_target(str(hook)) == f"{hook} {what}"


# -- where cd/pushd/popd may lead ----------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cd -P .agents; echo x > config/agent.yaml",  # cd's own options are skipped
        "cd -L -P .agents; echo x > config/agent.yaml",
        "cd -- -x/../.agents; echo x > config/agent.yaml",  # after --, a folder
        "pushd X/../.agents; echo x > config/agent.yaml",
    ],
)
def test_cd_options_and_operands(guard, command):
    assert target(guard, command).startswith(".agents/config/agent.yaml")


@pytest.mark.parametrize(
    "command",
    [
        "popd; echo x > agent.yaml",  # back to a folder already listed
        "pushd; echo x > agent.yaml",  # swaps the two top folders
        "pushd +x/../.agents; echo x > config/agent.yaml",  # rotates the stack
    ],
)
def test_folders_popd_and_pushd_rotate_are_already_listed(guard, ws, command):
    assert target(guard, command, HOME=str(ws / ".agents" / "config")) is None


def test_cd_alone_goes_home(guard, ws):
    home = str(ws / ".agents" / "config")
    assert target(guard, "cd; echo x > agent.yaml", HOME=home).startswith(".agents/config")
    assert target(guard, "cd; echo x > home") is None


def test_a_glob_in_cd_is_matched_from_where_the_command_runs(guard):
    assert target(guard, "cd ../.ag*; echo x > config/agent.yaml", cwd="src")


def test_why_a_folder_is_unknown_is_told(guard):
    found = guard.exec_target("cd $(x); make", None, guard.environ)
    assert "`cd $(x)` goes to a folder named at run time" in found
    found = guard.exec_target("cd $u; make", None, {})
    assert "`cd $u` may go to $HOME, which is not set" in found
    found = guard.exec_target("cd; make", None, {})
    assert "may go to $HOME, which is not set" in found
    found = target(guard, "CDPATH=x; cd sub; make")
    assert "`cd sub` searches a CDPATH set by the command" in found


def test_cd_without_home_still_follows_named_folders(guard):
    found = guard.exec_target("cd .agents/config && echo x > agent.yaml", None, {})
    assert found.startswith(".agents/config/agent.yaml")


@pytest.mark.parametrize(
    ("command", "cwd"),
    [
        ("CDPATH=x; cd /tmp && make", None),
        ("CDPATH=x; cd ./src && make", None),
        ("CDPATH=x; cd ../src && make", "src"),
        ("CDPATH=x; cd . && make", None),
        ("CDPATH=x; cd .. && make", "src"),
    ],
)
def test_a_path_cd_does_not_search_cdpath(guard, command, cwd):
    assert target(guard, command, cwd=cwd) is None


def test_cdpath_entries(guard, ws, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    layer = str(ws / ".agents")
    assert target(guard, "cd ./config && echo x > agent.yaml", CDPATH=layer) is None
    found = target(guard, "cd config && echo x > agent.yaml", CDPATH=f"/nonexistent:{layer}")
    assert found.startswith(".agents/config")
    # a relative entry is taken from where the command runs
    assert target(guard, "cd config && echo x > agent.yaml", CDPATH=".agents")
    # without CDPATH nothing is searched
    (ws / "XXXX").symlink_to(ws / ".agents")
    assert target(guard, "cd config && echo x > agent.yaml") is None


# -- a call's protected files --------------------------------------------------------------


def test_a_calls_protected_files_are_its_policys_else_built_from_its_registry(
    ws, tmp_path, monkeypatch
):
    from types import SimpleNamespace

    from mdagent.safety.protectedfiles import protected_for

    # The policy on the call, or on its toolbox, keeps them (cached per registry).
    kept = object()
    policy = SimpleNamespace(protected_files=lambda ctx: (kept, ctx))
    ctx = SimpleNamespace(policy=policy)
    assert protected_for(ctx) == (kept, ctx)
    ctx = SimpleNamespace(policy=None, toolbox=SimpleNamespace(policy=policy))
    assert protected_for(ctx) == (kept, ctx)
    # Without one, built from the call's workspace and registry: its layers, its
    # tools' handler modules and the hook scripts its settings name.
    (ws / "guard.sh").write_text("#!/bin/sh\n")
    (ws / "handler.py").write_text("")
    layer = tmp_path / "extra-layer"
    hooks = {"hooks": {"before": [{"run": "./guard.sh"}]}}
    tool = SimpleNamespace(implementation={"handler": "handler.py:run"})
    registry = SimpleNamespace(layers=[Layer(layer, "user")], settings=hooks, tools={"t": tool})
    guard = protected_for(SimpleNamespace(workdir=str(ws), registry=registry))
    assert guard.workdir == str(ws)
    assert guard.file_target(str(layer / "x")).endswith("(a layer folder (user))")
    assert guard.file_target("guard.sh") == "guard.sh (a hook script)"
    assert guard.file_target("handler.py") == "handler.py (a handler module)"
    # The call's own settings come first; no workspace is the current folder.
    monkeypatch.chdir(ws)
    guard = protected_for(SimpleNamespace(registry=registry, settings={"hooks": {}}))
    assert guard.workdir == str(ws)
    assert guard.file_target("guard.sh") is None
    assert guard.file_target("handler.py") == "handler.py (a handler module)"
    no_tools = protected_for(SimpleNamespace(workdir=str(ws), registry=SimpleNamespace()))
    assert no_tools.file_target(".agents/x") == ".agents/x (the project layer)"
    bare = protected_for(SimpleNamespace(workdir=str(ws)))
    assert bare.file_target("handler.py") is None
    assert bare.file_target(".agents/x") == ".agents/x (the project layer)"


def test_after_a_double_dash_every_word_is_an_operand():
    from mdagent.safety.commandwrites import plain_writes
    from mdagent.safety.shell.shellparse import parse

    assert plain_writes(parse("rm -f -- -x y")[0]) == [("-x", True), ("y", True)]
    assert plain_writes(parse("cp -- -a -b")[0]) == [("-b", False)]


# -- what protected_files lists, and why it says so (survivors after issue 31's split) ------


def test_mcp_servers_scripts_are_protected_from_the_folder_they_run_in(ws, env):
    (ws / "tools").mkdir()
    (ws / "tools" / "srv.py").write_text("print(1)\n")
    (ws / "top.py").write_text("print(1)\n")
    settings = {
        "mcp_servers": {
            "below": {"command": "python3", "args": ["./srv.py"], "cwd": "tools"},
            "top": {"command": "python3", "args": ["top.py"]},
        }
    }
    guard = protected_files(workdir=ws, environ=env, settings=settings)
    why = "(an MCP server's script (it runs outside the sandbox))"
    assert guard.file_target("tools/srv.py") == f"tools/srv.py {why}"
    assert guard.file_target("top.py") == f"top.py {why}"
    assert guard.file_target("srv.py") is None


def test_each_git_folder_is_named_for_what_it_is(tmp_path, ws, env):
    import subprocess

    other = tmp_path / "other"
    for repo in (ws, other):
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    settings = {"policy": {"paths": [str(other)]}}
    guard = protected_files(workdir=ws, environ=env, settings=settings)
    assert guard.file_target(".git/config") == (
        ".git/config (the workspace's git folder: its config and hooks run programs)"
    )
    assert guard.file_target(str(other / ".git" / "config")).endswith(
        "(a policy.paths root's git folder: its config and hooks run programs)"
    )


def test_a_hooks_path_in_the_xdg_git_configuration_is_protected(tmp_path, ws, env):
    xdg = tmp_path / "xdg"
    hooks = tmp_path / "myhooks"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "config").write_text(f"[core]\n\thooksPath = {hooks}\n")
    guard = protected_files(workdir=ws, environ={**env, "XDG_CONFIG_HOME": str(xdg)})
    assert guard.file_target(str(hooks / "pre-commit")) == (
        f"{hooks}/pre-commit (git's hooks folder (core.hooksPath): git runs what it holds)"
    )


def test_a_foreign_layer_is_not_protected_as_a_whole(tmp_path, ws, env):
    from types import SimpleNamespace

    mine = tmp_path / "mine"
    layers = [SimpleNamespace(kind="project", path=mine, foreign=True)]
    guard = protected_files(workdir=ws, layers=layers, environ=env)
    assert guard.file_target(str(mine / "notes.txt")) is None


def test_a_link_from_a_layer_of_no_kind_says_layer(tmp_path, ws, env):
    user = tmp_path / "u"
    (user / "skills").mkdir(parents=True)
    outside = _skill(tmp_path / "elsewhere" / "mine")
    (user / "skills" / "mine").symlink_to(outside)
    guard = protected_files(workdir=ws, layers=[Layer(user, "")], environ=env)
    assert guard.file_target(str(outside / "SKILL.md")).endswith(
        "(a skill folder linked from a layer (layer))"
    )


@pytest.mark.parametrize(
    ("interop", "protected"),
    [
        # off by default, turned on: OpenClaw's workspace skills/ is a layer then
        ({"openclaw-workspace-skills": True}, {"skills", ".codex-home"}),
        # turned off: still protected (protecting more only tightens)
        (False, {".codex-home"}),
        ({}, {".codex-home"}),
    ],
)
def test_other_agents_skill_folders_are_protected_as_settings_say(ws, env, interop, protected):
    guard = protected_files(workdir=ws, environ=env, settings={"skills": {"interop": interop}})
    codex = Path(env["HOME"]) / ".codex" / "skills" / "x" / "SKILL.md"
    found = {
        "skills": guard.file_target("skills/x/SKILL.md"),
        ".codex-home": guard.file_target(str(codex)),
    }
    assert {name for name, why in found.items() if why} == protected
    assert all("a skill folder read as a layer" in why for why in found.values() if why)


def test_other_agents_settings_are_named_for_what_they_are(ws, env):
    guard = protected_files(workdir=ws, environ=env)
    assert guard.file_target(".mcp.json") == (
        ".mcp.json (another agent's settings read as ours (claude-mcp))"
    )
    assert guard.file_target(".claude/commands/x.md").endswith(
        "(another agent's commands read as ours (claude-commands))"
    )


# -- what the guard tells about a command (survivors after issue 31's split) ---------------


@pytest.mark.parametrize(
    ("command", "told"),
    [
        ("make -C", "a wrapper runs it in a folder not named on the line"),
        ("d=x; make all -C $d", "`$d` is a folder named at run time"),
        (
            "git config core.pager less",
            "git's configuration (`git config`: its settings can run programs)",
        ),
    ],
)
def test_why_a_command_is_asked_about_is_told(guard, command, told):
    found = target(guard, command)
    assert found is not None and told in found, found


def test_a_protected_path_mentioned_in_code_is_shown(guard, env):
    agent_home = env["AGENT_HOME"]
    code = f"open('{agent_home}/config/agent.yaml', 'w')"
    assert target(guard, f'python3 -c "{code}"') == (
        f"{agent_home} (mentioned in `{code}`: the user layer ($AGENT_HOME))"
    )


def test_a_glob_names_hidden_folders_too(guard):
    found = target(guard, "rm -rf */config")
    assert found is not None and ".agents/config" in found, found


def test_a_glob_is_matched_from_the_folder_the_command_runs_in(guard, ws):
    (ws / "sub").mkdir()
    assert target(guard, "rm -rf ../.ag*", "sub") == ".agents (the project layer)"


def test_an_unparseable_command_naming_a_script_by_its_file_name_is_caught(ws, env):
    (ws / "scripts").mkdir()
    (ws / "scripts" / "guard.sh").write_text("#!/bin/sh\n")
    settings = {"hooks": {"before": [{"run": "./scripts/guard.sh"}]}}
    guard = protected_files(workdir=ws, environ=env, settings=settings)
    assert target(guard, "sh guard.sh 'unclosed") == (
        "scripts/guard.sh (the command cannot be parsed and names a hook script)"
    )
