"""The SQLite store: sessions, the audit log, rate limits, shared by many processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from mdagent.core.calls import ToolContext
from mdagent.core.errors import UsageError
from mdagent.store.audit import AuditLog
from mdagent.store.redact import REDACTED
from mdagent.store.schema import MIGRATIONS
from mdagent.store.store import Store
from mdagent.tools.toolbox import Toolbox


@pytest.fixture
def store(hermetic):
    with Store() as s:
        yield s


def run_python(code: str, count: int = 1) -> list[str]:
    """Run ``code`` in ``count`` concurrent interpreters (same env); their outputs."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        outputs.append(out)
    return outputs


def test_nothing_is_created_until_first_use(hermetic):
    state = hermetic["state"] / "nested"
    s = Store(state / "mdagent.db")
    assert not state.exists()
    s.sessions()
    assert (state / "mdagent.db").exists()
    s.close()


def test_the_database_lives_in_the_state_dir_in_wal_mode(store, hermetic):
    store.sessions()
    assert store.path == hermetic["state"] / "mdagent.db"
    db = store._connection()
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000


def test_sessions_round_trip(store):
    sid = store.new_session("/work/p", "gpt-test")
    messages = [
        {"role": "user", "content": "summarise README.md\nplease"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "name": "read_file"}]},
        {"role": "tool", "tool_call_id": "1", "content": "ünïcode ✓"},
    ]
    assert [store.add_message(sid, m) for m in messages] == [1, 2, 3]
    assert store.messages(sid) == messages
    info = store.session(sid)
    assert info["title"] == "summarise README.md"
    assert info["messages"] == 3 and info["cwd"] == "/work/p" and info["model"] == "gpt-test"

    # Reopened (another process, later): everything is there.
    again = Store(store.path)
    assert again.messages(sid) == messages
    again.close()


def test_session_ids_are_distinct_at_a_glance_and_resolve_by_prefix(store):
    first = store.new_session("/a", "m")
    second = store.new_session("/b", "m", title="second")
    assert len(first) == len(second) == 12
    assert store.session(second[:-1] + "?") is None
    assert store.session(first)["id"] == first
    assert store.session("no-such") is None
    store.add_message(first, {"role": "user", "content": "hi"})
    assert store.latest_session() == first  # most recently updated
    assert store.latest_session("/b") == second
    assert store.latest_session("/c") is None
    assert [s["id"] for s in store.sessions()] == [first, second]
    assert store.sessions(limit=1)[0]["messages"] == 1
    by_start: dict[str, str] = {}
    while True:  # two ids that start alike (pigeonhole: at most 37 sessions)
        sid = store.new_session("/e", "m")
        if sid[0] in by_start:
            break
        by_start[sid[0]] = sid
    with pytest.raises(UsageError, match="ambiguous"):
        store.session(sid[0])
    assert store.session(sid)["id"] == sid
    # Not from the clock: ids made moments apart do not share a prefix.
    starts = {store.new_session("/d", "m")[:3] for _ in range(20)}
    assert len(starts) >= 18


def test_add_message_to_an_unknown_session(store):
    with pytest.raises(KeyError):
        store.add_message("nope", {"role": "user", "content": "x"})


def test_calls_newest_first(store):
    store.record_call("person", "exec", {"command": "ls"}, True, None, None, 5, "person")
    store.record_call(
        "model", "read_file", {"path": "x"}, False, "not found", None, 1, "safe", "s1"
    )
    store.record_call("model", "exec", {"command": "rm"}, False, "denied", "DENIED", 0, None)
    rows = store.calls()
    assert [r["tool"] for r in rows] == ["exec", "read_file", "exec"]
    assert rows[0]["code"] == "DENIED" and rows[0]["ok"] is False
    assert rows[1]["args"] == {"path": "x"} and rows[1]["session_id"] == "s1"
    assert [r["args"]["command"] for r in store.calls(tool="exec")] == ["rm", "ls"]
    assert len(store.calls(limit=1)) == 1


def test_rate_limit_window(store):
    import time

    first = time.time_ns() // 1_000_000  # the store's clock: the wait is the window's rest
    assert store.rate_limit("t", 2, 60_000) is None
    assert store.rate_limit("t", 2, 60_000) is None
    wait = store.rate_limit("t", 2, 60_000)
    now = time.time_ns() // 1_000_000
    # However long the calls took on a busy machine: what is left of the window.
    assert wait is not None and 60_000 - (now - first) <= wait <= 60_000
    assert store.rate_limit("other", 2, 60_000) is None
    assert store.rate_limit("short", 1, 1) is None
    import time

    time.sleep(0.01)
    assert store.rate_limit("short", 1, 1) is None  # the window slid past


def test_rate_limit_holds_across_processes(hermetic):
    code = """
        import json
        from mdagent.store.store import Store
        s = Store()
        print(json.dumps([s.rate_limit("fetch", 5, 60_000) for _ in range(4)]))
    """
    results = [json.loads(out) for out in run_python(code, count=2)]
    flat = results[0] + results[1]
    assert flat.count(None) == 5
    assert all(isinstance(r, int) and r > 0 for r in flat if r is not None)
    assert Store().rate_limit("fetch", 5, 60_000) is not None


def test_many_processes_writing_at_once_lose_no_row(hermetic):
    code = """
        import os
        from mdagent.store.store import Store
        s = Store()
        for i in range(50):
            s.record_call("model", "exec", {"i": i, "pid": os.getpid()}, True, None, None, 1, "safe")
        sid = s.new_session("/w", "m")
        s.add_message(sid, {"role": "user", "content": "x"})
    """
    run_python(code, count=20)
    store = Store()
    assert len(store.calls(limit=5000)) == 1000
    assert len({(r["args"]["pid"], r["args"]["i"]) for r in store.calls(limit=5000)}) == 1000
    assert len(store.sessions(limit=100)) == 20
    store.close()


def test_audit_log_records_every_call_with_secrets_redacted(store, monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "sk-verysecret123")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_abcdef")
    monkeypatch.setenv("SHORT_TOKEN", "abc")  # too short to redact safely
    monkeypatch.setenv("HOME_DIR_NAME", "sk-verysecret123-not-secret-name")
    box = Toolbox()
    box.add(
        "exec",
        description="run",
        params={"command": {"type": "string"}},
        handler=lambda a: {"error": "failed with ghp_abcdef"},
    )
    box.audit = AuditLog(store, session_id="s1")
    box.run(
        "exec",
        {
            "command": "curl -H 'Authorization: sk-verysecret123' x; echo abc",
            "api_key": "anything",
            "headers": {"X-Auth-Token": "t", "Accept": "json"},
            "list": ["ghp_abcdef"],
        },
        ToolContext(caller="model"),
    )
    [row] = store.calls()
    assert row["caller"] == "model" and row["session_id"] == "s1" and row["ok"] is False
    assert row["args"] == {
        "command": f"curl -H 'Authorization: {REDACTED}' x; echo abc",
        "api_key": REDACTED,
        "headers": {"X-Auth-Token": REDACTED, "Accept": "json"},
        "list": [REDACTED],
    }
    assert row["error"] == f"failed with {REDACTED}"
    assert "sk-verysecret123" not in json.dumps(row)


def test_audit_log_records_policy_decisions(store, hermetic, tmp_path):
    from mdagent.safety.policy import Policy

    box = Toolbox(policy=Policy({}, workdir=tmp_path, store=store))
    box.add("exec", description="run", params={"command": {"type": "string"}}, handler=dict)
    box.add("read_file", description="read", handler=dict, security="safe")
    box.audit = AuditLog(store)
    box.run("exec", {"command": "ls"}, ToolContext(caller="model"))
    box.run("read_file", {}, ToolContext(caller="model", conversation_id="conv"))
    box.run("exec", {"command": "ls"}, ToolContext(caller="person"))
    rows = store.calls()
    assert [(r["caller"], r["approved_by"], r["ok"], r["code"]) for r in rows] == [
        ("person", "person", True, None),
        ("model", "safe", True, None),
        ("model", None, False, "DENIED"),
    ]
    assert rows[1]["session_id"] == "conv"


def test_a_new_migration_upgrades_an_existing_database(store, monkeypatch):
    sid = store.new_session("/w", "m")
    store.close()

    def add_tags(db):
        db.execute("ALTER TABLE sessions ADD COLUMN tags TEXT NOT NULL DEFAULT ''")

    monkeypatch.setattr("mdagent.store.schema.MIGRATIONS", [*MIGRATIONS, add_tags])
    upgraded = Store(store.path)
    db = upgraded._connection()
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) + 1
    assert db.execute("SELECT tags FROM sessions WHERE id = ?", (sid,)).fetchone()[0] == ""
    upgraded.close()


def test_messages_survive_a_crash(hermetic):
    code = """
        import os
        from mdagent.store.store import Store
        s = Store()
        sid = s.new_session("/w", "m")
        s.add_message(sid, {"role": "user", "content": "first"})
        s.add_message(sid, {"role": "assistant", "content": "second"})
        print(sid, flush=True)
        os._exit(9)
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 9
    sid = proc.stdout.strip()
    assert [m["content"] for m in Store().messages(sid)] == ["first", "second"]


# -- data at rest (issue 9: 15-16) -------------------------------------------------------------

SECRET = "sk-live-0123456789abcdef"
THINKING = {
    "type": "thinking",
    "thinking": f"The user's key is {SECRET}; I must not print it.",
    "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxsigned+bytes==",
}


def test_messages_are_stored_redacted_except_provider_signed_blocks(store, monkeypatch):
    from mdagent.agent.conversation import Conversation

    monkeypatch.setenv("MY_API_KEY", SECRET)
    conversation = Conversation.start(store, cwd="/w", model="m")
    messages = [
        {"role": "user", "content": f"use {SECRET} please"},
        {
            "role": "assistant",
            "content": [THINKING, {"type": "redacted_thinking", "data": f"x{SECRET}"}],
            "tool_calls": [
                {"id": "1", "name": "login", "arguments": {"api_key": "other", "user": "bob"}}
            ],
        },
        # A tool result is JSON text: a secret with a quote in it is escaped there.
        {"role": "tool", "tool_call_id": "1", "content": json.dumps({"out": f"{SECRET}!"})},
    ]
    for message in messages:
        conversation.add(message)
    assert conversation.messages == messages  # what goes back to the model in this run
    user, assistant, tool = store.messages(conversation.session_id)
    assert user["content"] == f"use {REDACTED} please"
    assert store.session(conversation.session_id)["title"] == f"use {REDACTED} please"
    assert assistant["content"] == messages[1]["content"]  # byte-exact, secret and all
    assert assistant["tool_calls"][0]["arguments"] == {"api_key": REDACTED, "user": "bob"}
    assert json.loads(tool["content"]) == {"out": f"{REDACTED}!"}


def test_a_tool_calls_opaque_provider_fields_are_stored_as_they_came(hermetic, monkeypatch):
    # Gemini checks its thought signature byte for byte; a policy that counts
    # *SIGNATURE* as secret must not blank it, while the arguments stay redacted.
    monkeypatch.setenv("MY_API_KEY", SECRET)
    with Store(settings={"policy": {"env": {"exclude": ["*SIGNATURE*", "*KEY*"]}}}) as store:
        _opaque_fields_kept(store)


def _opaque_fields_kept(store: Store) -> None:
    extra = {"extra_content": {"google": {"thought_signature": f"Cv8B{SECRET}=="}}}
    sid = store.new_session("/w", "m")
    call = {"id": "c", "name": "login", "arguments": {"key": SECRET}, "extra": extra}
    store.add_message(sid, {"role": "assistant", "content": "", "tool_calls": [call]})
    (stored,) = store.messages(sid)
    assert stored["tool_calls"][0]["extra"] == extra
    assert stored["tool_calls"][0]["arguments"] == {"key": REDACTED}
    # Only an assistant's calls: the same key anywhere else is redacted as usual.
    store.add_message(sid, {"role": "user", "content": "x", "extra": {"thought_signature": "s"}})
    assert store.messages(sid)[-1]["extra"] == {"thought_signature": REDACTED}


def test_a_secret_in_its_json_escaped_spelling_is_redacted(store, monkeypatch):
    monkeypatch.setenv("DB_PASSWORD", 'pa"ss\\word')
    sid = store.new_session("/w", "m")
    content = json.dumps({"stdout": 'pa"ss\\word'})
    store.add_message(sid, {"role": "tool", "content": content})
    assert store.messages(sid)[0]["content"] == json.dumps({"stdout": REDACTED})


def test_policy_env_settings_decide_what_is_secret(hermetic, monkeypatch):
    monkeypatch.setenv("DEPLOY_PHRASE", "open-sesame-123")
    monkeypatch.setenv("PUBLIC_KEY", "ssh-ed25519 AAAAC3")
    settings = {"policy": {"env": {"exclude": ["*PHRASE*"], "include": ["PUBLIC_KEY"]}}}
    with Store(settings=lambda: settings) as s:
        sid = s.new_session("/w", "m")
        s.add_message(sid, {"role": "user", "content": "open-sesame-123 ssh-ed25519 AAAAC3"})
        assert s.messages(sid)[0]["content"] == f"{REDACTED} ssh-ed25519 AAAAC3"


def test_the_audit_row_is_started_then_finished(store, monkeypatch):
    monkeypatch.setenv("MY_TOKEN", SECRET)
    row = store.start_call("model", "exec", {"command": f"echo {SECRET}"}, "rule:exec", "s1")
    [started] = store.calls()
    assert (started["status"], started["ok"], started["duration_ms"]) == ("started", False, None)
    assert started["args"] == {"command": f"echo {REDACTED}"}
    store.finish_call(row, False, f"failed: {SECRET}", None, 12, interrupted=True)
    [done] = store.calls()
    assert (done["status"], done["error"], done["duration_ms"]) == (
        "interrupted",
        f"failed: {REDACTED}",
        12,
    )


def test_files_are_created_private_and_loose_modes_tightened(hermetic, tmp_path):
    folder = tmp_path / "state"
    with Store(folder / "mdagent.db") as s:
        s.new_session("/w", "m")
        modes = {p.name: p.stat().st_mode & 0o777 for p in folder.iterdir()}
    assert modes == {"mdagent.db": 0o600, "mdagent.db-wal": 0o600, "mdagent.db-shm": 0o600}
    assert folder.stat().st_mode & 0o777 == 0o700
    folder.chmod(0o775)
    (folder / "mdagent.db").chmod(0o666)
    with Store(folder / "mdagent.db") as s:
        s.sessions()
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / "mdagent.db").stat().st_mode & 0o777 == 0o600


def test_a_shared_folder_is_reported_not_changed(hermetic, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: not ours to lock others out of
    said = []
    with Store(shared / "mdagent.db", notice=said.append) as s:
        s.sessions()
    assert shared.stat().st_mode & 0o7777 == 0o1777
    [line] = said
    assert str(shared) in line and "AGENT_STATE_DIR" in line


def test_a_damaged_file_is_moved_aside_once(hermetic, tmp_path):
    path = tmp_path / "mdagent.db"
    path.write_bytes(b"\x00garbage" * 1000)
    said = []
    with Store(path, notice=said.append) as s:
        assert s.sessions() == []
        s.new_session("/w", "m")
    [line] = said
    [aside] = tmp_path.glob("mdagent.db.corrupt-*")
    assert aside.read_bytes() == b"\x00garbage" * 1000
    assert str(path) in line and str(aside) in line
    with Store(path, notice=said.append) as s:
        assert len(s.sessions()) == 1
    assert len(said) == 1


def test_damage_found_after_opening_is_one_clear_error(hermetic, tmp_path, monkeypatch):
    import sqlite3

    from mdagent.core.errors import StateError

    with Store(tmp_path / "mdagent.db") as s:
        s.sessions()

        def malformed(*args):
            raise sqlite3.DatabaseError("database disk image is malformed")

        monkeypatch.setattr(s, "_connection", lambda: type("Db", (), {"execute": malformed})())
        with pytest.raises(StateError, match="damaged .* moved it to .*run the command again"):
            s.calls()
    assert list(tmp_path.glob("mdagent.db.corrupt-*"))


def test_a_state_dir_that_cannot_be_used_is_one_clear_error(hermetic, tmp_path):
    from mdagent.core.errors import StateError

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with pytest.raises(StateError) as caught:
        Store(blocker / "mdagent.db").new_session("/w", "m")
    message = str(caught.value)
    assert "\n" not in message and str(blocker) in message and "AGENT_STATE_DIR" in message


def test_the_audit_log_keeps_the_wait_for_an_answer_apart_from_the_run_time(store, tmp_path):
    from mdagent.runtime.approvers import ScriptedApprover
    from mdagent.safety.policy import Policy

    approver = ScriptedApprover(["y", "n"])
    box = Toolbox(policy=Policy({}, workdir=tmp_path, store=store, approver=approver))
    box.add("exec", description="run", params={"command": {"type": "string"}}, handler=dict)
    box.add("read_file", description="read", handler=dict, security="safe")
    box.audit = AuditLog(store)
    box.run("exec", {"command": "ls"}, ToolContext(caller="model"))  # asked: yes
    asked_wait = box.waited()
    box.run("exec", {"command": "make"}, ToolContext(caller="model"))  # asked: no
    box.run("read_file", {}, ToolContext(caller="model"))  # not asked
    assert box.waited() == 0.0 and asked_wait > 0
    unasked, declined, ran = store.calls()
    assert ran["approved_by"] == "user" and ran["wait_ms"] is not None
    assert ran["duration_ms"] is not None  # the run time, a column of its own
    assert declined["code"] == "DENIED" and declined["wait_ms"] is not None
    assert unasked["wait_ms"] is None


def test_an_audit_log_from_before_the_wait_column_gains_it(hermetic, tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    with Store(path) as old:
        old.record_call("model", "exec", {"command": "ls"}, True, None, None, 5, "user")
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE audit DROP COLUMN wait_ms")
    db.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
    db.commit()
    db.close()
    with Store(path) as upgraded:
        [row] = upgraded.calls()
        assert row["duration_ms"] == 5 and row["wait_ms"] is None
        upgraded.record_call("model", "exec", {}, True, None, None, 1, "user", wait_ms=2600)
        assert upgraded.calls()[0]["wait_ms"] == 2600
