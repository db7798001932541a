"""Data at rest, through the real ``agent`` executable: the state database
keeps no secrets, is private, survives damage and never lets a call run
unrecorded (issue 9, items 15-16)."""

import contextlib
import json
import os
import signal
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import ask, command_skill, config, scripted_model, start_agent, wait_for_text, write

SECRET = "sk-live-0123456789abcdef"


def database(hermetic) -> Path:
    return Path(hermetic["state"]) / "mdagent.db"


def dump(db: Path) -> str:
    """Every row of every table, as SQL text."""
    with sqlite3.connect(db) as connection:
        return "\n".join(connection.iterdump())


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("agent:")]


@pytest.fixture
def immutable():
    """``chattr +i`` (root can write a read-only file; not an immutable one), undone after."""
    done: list[Path] = []

    def make(path: Path) -> None:
        result = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if result.returncode != 0:
            pytest.skip(f"chattr +i is not available here: {result.stderr.strip()}")
        done.append(path)

    yield make
    for path in done:
        subprocess.run(["chattr", "-i", str(path)], check=False)


# -- 15: secrets redacted at rest, files private ---------------------------------------------


def test_secrets_are_redacted_in_the_session_store_and_audit_log(workspace, run_agent, hermetic):
    config(
        workspace,
        "login.yaml",
        "tools:\n  login:\n    description: Log in\n"
        "    params: {user: {type: string}, api_key: {type: string}}\n"
        "    run: [echo, 'logged in {user}']\n",
    )
    env = {"MY_API_KEY": SECRET}
    with scripted_model(
        ("exec", {"command": f"echo key={SECRET}"}),
        ("login", {"user": "bob", "api_key": "hunter2-xyz"}),
        answer=f"your key is {SECRET}",
    ) as server:
        result = ask(run_agent, server, "--yes", env=env)
        sent = server.requests[-1]["json"]["messages"]
    assert result.returncode == 0, result.stderr
    # The conversation in memory goes on unredacted: the model read the real output.
    assert any(SECRET in str(m.get("content")) for m in sent if m["role"] == "tool")
    stored = dump(database(hermetic))
    assert SECRET not in stored and "hunter2-xyz" not in stored
    assert "[REDACTED]" in stored and "logged in bob" in stored
    shown = run_agent(
        "sessions", "show", "--json", json.loads(run_agent("sessions", "--json").stdout)[0]["id"]
    )
    assert SECRET not in shown.stdout and "key=[REDACTED]" in shown.stdout


def test_the_state_database_and_its_folder_are_private(workspace, run_agent, tmp_path):
    command_skill(workspace)
    state = tmp_path / "fresh" / "state"
    result = run_agent("/t", "echo hi", env={"AGENT_STATE_DIR": str(state)})
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    files = [p for p in state.iterdir() if p.name.startswith("mdagent.db")]
    assert files and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)

    # Looser modes left by an older version are tightened.
    state.chmod(0o755)
    (state / "mdagent.db").chmod(0o644)
    assert run_agent("/t", "echo hi", env={"AGENT_STATE_DIR": str(state)}).returncode == 0
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE((state / "mdagent.db").stat().st_mode) == 0o600


def test_a_session_export_is_private_however_it_is_written(
    workspace, run_agent, hermetic, tmp_path
):
    """Issue 28, item 6: ``sessions export -o FILE`` wrote 0644 what the 0600 database holds."""
    with scripted_model(("exec", {"command": "echo TOOL-OUTPUT"}), answer="done") as server:
        assert ask(run_agent, server, "--yes").returncode == 0
    (session,) = json.loads(run_agent("sessions", "--json").stdout)
    old_umask = os.umask(0)  # the children inherit it: nothing may rely on the umask
    try:
        fresh = tmp_path / "fresh.md"
        done = run_agent("sessions", "export", session["id"], "-o", str(fresh))
        existing = write(tmp_path / "existing.md", "old\n")
        existing.chmod(0o666)
        over = run_agent("sessions", "export", session["id"], "-o", str(existing))
        target = write(tmp_path / "target.md", "old\n")
        target.chmod(0o644)
        link = tmp_path / "link.md"
        link.symlink_to(target)
        linked = run_agent("sessions", "export", session["id"], "-o", str(link))
        piped = run_agent("sessions", "export", session["id"], "-o", "/dev/stdout")
    finally:
        os.umask(old_umask)
    for result in (done, over, linked, piped):
        assert result.returncode == 0, result.stderr
    for path in (fresh, existing, target):
        assert "TOOL-OUTPUT" in path.read_text()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert link.is_symlink()  # followed, not replaced
    assert "TOOL-OUTPUT" in piped.stdout
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []
    # Everything else that holds the conversation: the database and its WAL and SHM files.
    held = [p for p in Path(hermetic["state"]).iterdir() if p.name.startswith("mdagent.db")]
    assert {p.name for p in held} >= {"mdagent.db"}
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in held), held


def test_an_export_that_cannot_be_written_is_one_line(workspace, run_agent, tmp_path):
    with scripted_model(answer="done") as server:
        assert ask(run_agent, server).returncode == 0
    (session,) = json.loads(run_agent("sessions", "--json").stdout)
    missing = tmp_path / "no" / "such" / "folder" / "x.md"
    done = run_agent("sessions", "export", session["id"], "-o", str(missing))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"agent: {missing}: cannot write: No such file or directory"
    ]


# -- 16: damage, unwritable databases, the record before the call ---------------------------------


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_database_is_moved_aside_and_a_new_one_started(
    workspace, run_agent, hermetic, damage
):
    command_skill(workspace)
    db = database(hermetic)
    if damage == "garbage":
        write(db, b"this is not a database at all\n" * 200)
    else:
        for i in range(40):
            assert run_agent("/t", f"echo {'x' * 2000} {i}").returncode == 0
        with db.open("r+b") as fh:
            fh.truncate(db.stat().st_size // 2)
    before = db.read_bytes()

    result = run_agent("/t", "echo hello")
    assert result.returncode == 0 and result.stdout == "hello\n"
    [line] = error_lines(result.stderr)
    assert str(db) in line and "moved it to" in line and "started a new one" in line
    [aside] = db.parent.glob("mdagent.db.corrupt-*[0-9]Z")
    assert aside.read_bytes() == before

    again = run_agent("logs", "--json")
    assert again.returncode == 0 and again.stderr == ""
    assert [row["args"]["command"] for row in json.loads(again.stdout)] == ["echo hello"]


def test_an_unwritable_database_fails_closed(workspace, run_agent, hermetic, immutable):
    command_skill(workspace)
    config(
        workspace,
        "limited.yaml",
        "tools:\n  ping:\n    description: Ping\n    run: [touch, pinged]\n"
        "    rate_limit: {max_calls: 5, window_ms: 60000}\n"
        "commands:\n  ping: {tool: ping}\n",
    )
    assert run_agent("/t", "echo ready").returncode == 0
    db = database(hermetic)
    immutable(db)

    typed = run_agent("/t", "touch typed")
    assert typed.returncode == 1 and not (workspace / "typed").exists()
    [line] = error_lines(typed.stderr)
    assert "not run" in line and str(db) in line and "readonly" in line

    limited = run_agent("/ping")
    assert limited.returncode == 1 and not (workspace / "pinged").exists()
    assert len(error_lines(limited.stderr)) == 1

    with scripted_model(("exec", {"command": "touch by-model"})) as server:
        asked = ask(run_agent, server, "--yes")
    assert asked.returncode == 1 and not (workspace / "by-model").exists()
    [line] = error_lines(asked.stderr)
    assert str(db) in line and "Traceback" not in asked.stderr


def sleeping(workspace: Path) -> tuple[subprocess.Popen, Path]:
    """``agent /t`` running a 60 s sleep, once the sleep has started; and its pid file."""
    pidfile = workspace / "child.pid"
    proc = start_agent(
        workspace,
        "/t",
        f"echo $$ > {pidfile}; exec sleep 60",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_text(pidfile, proc)
    return proc, pidfile


def stop(proc: subprocess.Popen, pidfile: Path) -> None:
    proc.kill()
    proc.wait()
    with contextlib.suppress(ProcessLookupError):
        os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_the_audit_row_is_written_before_the_call_runs(workspace, hermetic):
    command_skill(workspace)
    db = database(hermetic)
    proc, pidfile = sleeping(workspace)
    try:
        with sqlite3.connect(db) as connection:
            rows = connection.execute("SELECT tool, status FROM audit").fetchall()
        assert rows == [("exec", "started")]
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
    finally:
        stop(proc, pidfile)
    assert proc.returncode == 130
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT tool, status, ok, error FROM audit").fetchall()
    assert rows == [("exec", "interrupted", 0, "interrupted")]


def test_a_call_whose_process_died_stays_on_the_record(workspace, run_agent, hermetic):
    command_skill(workspace)
    proc, pidfile = sleeping(workspace)
    stop(proc, pidfile)  # SIGKILL: no chance to write anything more
    listing = run_agent("logs")
    assert "started, no outcome" in listing.stdout
    [row] = json.loads(run_agent("logs", "--json").stdout)
    assert row["status"] == "started" and row["args"]["command"].endswith("exec sleep 60")
