"""``agent rewind`` through the real executable: a scripted model turn, then taking it back.

The turn is the issue's: ``write_file`` a new file, ``edit_file`` another,
and through ``exec`` ``rm old.txt``, ``sed -i s/a/b/ notes.txt`` and
``mkdir -p build && touch build/x``, run by the fake provider's script with
the agent's real tools, policy and sandbox. The workspace is compared byte
for byte (modes and symlinks included) and the project's ``.git`` file by
file, in a git repository and in a plain folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_checkpoints import dot_git_of, files_of, git_view, project

TURN = [
    {"name": "write_file", "arguments": {"path": "new.txt", "content": "a new file\n"}},
    {
        "name": "edit_file",
        "arguments": {"path": "edit.md", "old_string": "keep me", "new_string": "edited"},
    },
    {"name": "exec", "arguments": {"command": "rm old.txt"}},
    {"name": "exec", "arguments": {"command": "sed -i s/a/b/ notes.txt"}},
    {"name": "exec", "arguments": {"command": "mkdir -p build && touch build/x"}},
]


def script(tmp_path: Path, *replies: dict | str, name: str = "turn.yaml") -> Path:
    """A fake provider's script (outside the workspace): one reply per model call."""
    path = tmp_path / name
    path.write_text(json.dumps(list(replies)))  # JSON is YAML
    return path


def turn_script(tmp_path: Path, calls=TURN, answer: str = "done") -> Path:
    return script(tmp_path, {"tool_calls": calls}, {"text": answer})


def model_turn(run_agent, tmp_path: Path, *extra: str, calls=TURN, prompt: str = "tidy up"):
    done = run_agent(
        "--script", str(turn_script(tmp_path, calls)), "--yes", "ask", *extra, prompt, input=""
    )
    assert done.returncode == 0, done.stderr
    return done


def rewind(run_agent, *args: str):
    return run_agent("rewind", *args, input="")


@pytest.fixture(params=[True, False], ids=["git", "no-git"])
def ws(request, workspace):
    return project(workspace.parent, with_git=request.param)


def test_agent_rewind_takes_the_turn_back_byte_for_byte_and_leaves_git_alone(
    ws, run_agent, tmp_path
):
    files, dot_git = files_of(ws), dot_git_of(ws)
    view = git_view(ws) if (ws / ".git").exists() else None

    model_turn(run_agent, tmp_path)
    assert (ws / "new.txt").read_text() == "a new file\n"
    assert "edited" in (ws / "edit.md").read_text()
    assert not (ws / "old.txt").exists()
    assert (ws / "notes.txt").read_text().startswith("blpha")
    assert (ws / "build" / "x").exists()

    done = rewind(run_agent)
    assert done.returncode == 0, done.stderr
    assert "files: rewound to checkpoint 1" in done.stdout
    assert files_of(ws) == files  # bytes, modes (0600, 0755), the symlink; build/ gone
    assert dot_git_of(ws) == dot_git
    if view is not None:
        assert git_view(ws) == view  # status, refs, HEAD and the index as git sees them
    assert done.stderr == ""


def test_a_file_the_person_changed_after_the_turn_stops_the_rewind_until_force(
    ws, run_agent, tmp_path
):
    files = files_of(ws)
    model_turn(run_agent, tmp_path)
    (ws / "notes.txt").write_text("the person's own words\n")
    changed = files_of(ws)

    stopped = rewind(run_agent)
    assert stopped.returncode == 1
    assert stopped.stderr.count("\n") == 1  # one line
    assert "notes.txt changed after turn 1 ended" in stopped.stderr and "--force" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert files_of(ws) == changed  # nothing changed: the person's file kept

    forced = rewind(run_agent, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "overwritten (--force): notes.txt" in forced.stdout
    assert files_of(ws) == files

    # The rewind is a turn of its own: rewinding it brings the person's words back.
    listed = rewind(run_agent, "--list").stdout
    assert "rewind to 1" in listed and "(rewound)" in listed
    back = rewind(run_agent, "3", "--files-only")
    assert back.returncode == 0, back.stderr
    assert files_of(ws) == changed


def test_a_file_only_the_person_changed_is_kept_and_said(ws, run_agent, tmp_path):
    files = files_of(ws)
    model_turn(run_agent, tmp_path)
    (ws / "src" / "main.py").write_text("print('mine')\n")

    done = rewind(run_agent)
    assert done.returncode == 0, done.stderr
    assert "kept (changed, but not by a model): src/main.py" in done.stdout
    assert (ws / "src" / "main.py").read_text() == "print('mine')\n"
    files.pop("src/main.py")
    now = files_of(ws)
    now.pop("src/main.py")
    assert now == files


def test_list_diff_and_the_audit_log(workspace, run_agent, tmp_path):
    ws = project(workspace.parent)
    model_turn(run_agent, tmp_path, prompt="tidy up the notes")

    listed = rewind(run_agent, "--list")
    assert listed.returncode == 0
    assert "turn 1: tidy up the notes" in listed.stdout
    for line in (
        "build/x   | 0 (new)",
        "edit.md   | 2 +-",
        "new.txt   | 1 + (new)",
        "notes.txt | 6 +++---",  # sed changed each of its three lines
        "old.txt   | 1 - (deleted)",
        "5 files changed, 5 insertions(+), 5 deletions(-)",
    ):
        assert line in listed.stdout

    [turn] = json.loads(rewind(run_agent, "--list", "--json").stdout)
    assert (turn["checkpoint"], turn["after"], turn["turn"]) == (1, 2, 1)
    assert turn["prompt"] == "tidy up the notes" and turn["finished"] and not turn["rewound"]
    assert {"path": "notes.txt", "status": "modified", "added": 3, "deleted": 3} in turn["changes"]
    assert {c["path"]: c["status"] for c in turn["changes"]}["old.txt"] == "deleted"

    shown = rewind(run_agent, "--diff", "1")
    assert shown.returncode == 0
    assert "remove new.txt" in shown.stdout and "bring back old.txt" in shown.stdout
    assert "-blpha\n-betb\n-gbmma\n+alpha\n+beta\n+gamma\n" in shown.stdout
    assert (ws / "new.txt").exists()  # --diff changes nothing

    assert rewind(run_agent).returncode == 0
    logged = json.loads(run_agent("logs", "--tool", "rewind", "--json").stdout)
    assert len(logged) == 1 and logged[0]["ok"] and logged[0]["caller"] == "person"
    assert logged[0]["args"]["checkpoint"] == 1
    assert "new.txt" in logged[0]["args"]["files"]


def test_the_conversation_goes_back_to_before_the_turn(workspace, run_agent, tmp_path):
    project(workspace.parent)
    first = script(tmp_path, {"text": "hello there"}, name="first.yaml")
    assert run_agent("--script", str(first), "ask", "say hello", input="").returncode == 0
    model_turn(run_agent, tmp_path, "--continue")
    sessions = json.loads(run_agent("sessions", "--json").stdout)
    assert len(sessions) == 1 and sessions[0]["messages"] > 2

    done = rewind(run_agent, "--conversation-only")
    assert done.returncode == 0, done.stderr
    assert (workspace / "new.txt").exists()  # files untouched
    newest = json.loads(run_agent("sessions", "--json").stdout)[0]
    assert newest["id"] != sessions[0]["id"]
    kept = json.loads(run_agent("sessions", "show", newest["id"], "--json").stdout)["messages"]
    assert [m["content"] for m in kept] == ["say hello", "hello there"]
    old = json.loads(run_agent("sessions", "show", sessions[0]["id"], "--json").stdout)
    assert len(old["messages"]) == sessions[0]["messages"]  # the old session is whole


def test_sessions_rm_takes_the_checkpoints_along(workspace, run_agent, tmp_path):
    project(workspace.parent)
    model_turn(run_agent, tmp_path)
    session = json.loads(run_agent("sessions", "--json").stdout)[0]["id"]
    removed = run_agent("sessions", "rm", session)
    assert removed.returncode == 0
    assert f"removed {session} and its 2 checkpoints" in removed.stdout
    assert "(no checkpoints in this workspace)" in rewind(run_agent, "--list").stdout


def test_errors_are_one_line_with_their_status(workspace, run_agent, tmp_path):
    project(workspace.parent)
    nothing = rewind(run_agent)
    assert nothing.returncode == 1
    assert nothing.stderr.startswith("agent: nothing to rewind") and nothing.stderr.count("\n") == 1

    # A read-only turn records no checkpoint.
    reading = [{"name": "read_file", "arguments": {"path": "notes.txt"}}]
    model_turn(run_agent, tmp_path, calls=reading)
    assert "(no checkpoints in this workspace)" in rewind(run_agent, "--list").stdout

    for args, words in (
        (("7",), "no checkpoint 7"),
        (("--list", "--diff"), "do not go together"),
        (("--files-only", "--conversation-only"), "do not go together"),
    ):
        done = rewind(run_agent, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert words in done.stderr and done.stderr.count("\n") == 1


def test_checkpoints_off_records_nothing(workspace, run_agent, tmp_path):
    from conftest import settings

    project(workspace.parent)
    settings(workspace, "checkpoints:\n  enabled: false\n")
    model_turn(run_agent, tmp_path)
    assert (workspace / "new.txt").exists()
    assert "(no checkpoints in this workspace)" in rewind(run_agent, "--list").stdout


def test_prune_keeps_recent_checkpoints(workspace, run_agent, tmp_path):
    project(workspace.parent)
    model_turn(run_agent, tmp_path)
    pruned = rewind(run_agent, "--prune")
    assert pruned.returncode == 0
    assert pruned.stdout.startswith("pruned 0 checkpoint(s)")
    assert "tidy up" in rewind(run_agent, "--list").stdout


def test_a_commit_the_model_made_stays_and_the_ref_that_moved_is_named(
    workspace, run_agent, tmp_path
):
    ws = project(workspace.parent)
    head = git_view(ws)[2].strip()
    commit = "sed -i s/a/b/ notes.txt && git -c user.name=m -c user.email=m@x commit -qam wip"
    model_turn(run_agent, tmp_path, calls=[{"name": "exec", "arguments": {"command": commit}}])
    moved = git_view(ws)[2].strip()
    assert moved != head

    done = rewind(run_agent)
    assert done.returncode == 0, done.stderr
    assert (ws / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"  # the work tree back
    assert git_view(ws)[2].strip() == moved  # the commit stays: git's history is the person's
    assert (
        f"not rewound: the project's refs/heads/main moved during the turn at checkpoint 1 "
        f"({head[:12]} -> {moved[:12]})" in done.stdout
    )


def test_on_a_terminal_agent_rewind_asks_first(workspace, run_agent, tmp_path):
    from test_terminal_e2e import Terminal

    ws = project(workspace.parent)
    files = files_of(ws)
    model_turn(run_agent, tmp_path)
    with Terminal("rewind", cwd=ws) as term:
        term.expect_stream(r"rewind to checkpoint 1 \(before 'tidy up'\)\? \[y/N\]")
        term.type("n")
        assert term.wait() == 0
        assert "not rewound" in term.stream
    assert (ws / "new.txt").exists()
    with Terminal("rewind", cwd=ws) as term:
        term.expect_stream(r"\[y/N\]")
        term.type("y")
        assert term.wait() == 0
    assert files_of(ws) == files


def test_a_declared_shell_tool_and_a_tool_calling_it_are_turns_to_rewind(
    workspace, run_agent, tmp_path
):
    from conftest import config

    ws = project(workspace.parent)
    config(
        ws,
        "tools.yaml",
        "tools:\n"
        "  stamp:\n    description: Stamp the notes\n    security: safe\n"
        "    shell: 'echo stamped >> notes.txt && mkdir -p out && echo x > out/made.txt'\n"
        "  restamp:\n    description: Stamp again\n    security: safe\n    tool: stamp\n",
    )
    files = files_of(ws)
    for name in ("stamp", "restamp"):
        model_turn(run_agent, tmp_path, calls=[{"name": name, "arguments": {}}], prompt=name)
        assert (ws / "out" / "made.txt").exists()
        done = rewind(run_agent)
        assert done.returncode == 0, done.stderr
        assert files_of(ws) == files, name
