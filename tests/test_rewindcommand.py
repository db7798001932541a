"""``/rewind``'s arguments and the ``--stat``-like lines of ``agent rewind --list``."""

from __future__ import annotations

import pytest

from mdagent.agent.rewindcommand import STAT_FILES, Request, parse_request, stat_lines
from mdagent.core.errors import UsageError
from mdagent.rewind.checkpoints import Change


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, Request()),
        ("", Request()),
        ("3", Request(target=3)),
        ("3 --files-only", Request(target=3, conversation=False)),
        ("--conversation-only 12", Request(target=12, files=False)),
        ("--force 2", Request(target=2, force=True)),
    ],
)
def test_rewind_arguments(text, expected):
    assert parse_request(text) == expected


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("3 4", "unexpected '4'"),
        ("-1", "unexpected '-1'"),
        ("three", "unexpected 'three'"),
        ("--files", "unexpected '--files'"),
        ("1 --files-only --conversation-only", "do not go together"),
    ],
)
def test_bad_rewind_arguments_are_one_usage_line(text, words):
    with pytest.raises(UsageError) as caught:
        parse_request(text)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_stat_lines_show_each_file_and_a_summary():
    changes = [
        Change("build/x", "created", 0, 0),
        Change("new.txt", "created", 1, 0),
        Change("notes.txt", "modified", 3, 3),
        Change("old.txt", "deleted", 0, 1),
        Change("logo.png", "modified", None, None),
        Change("run.sh", "mode"),
    ]
    assert stat_lines(changes, "") == [
        "build/x   | 0 (new)",
        "new.txt   | 1 + (new)",
        "notes.txt | 6 +++---",
        "old.txt   | 1 - (deleted)",
        "logo.png  | binary (modified)",
        "run.sh    | mode",
        "6 files changed, 4 insertions(+), 4 deletions(-)",
    ]
    assert stat_lines([], "") == ["(no files changed)"]
    assert stat_lines([Change("a", "modified", 1, 0)], "")[-1] == (
        "1 file changed, 1 insertion(+), 0 deletions(-)"
    )


def test_a_long_turn_names_its_first_files_and_counts_the_rest():
    changes = [Change(f"f{i:03d}", "created", 1, 0) for i in range(STAT_FILES + 5)]
    lines = stat_lines(changes, "")
    assert lines[STAT_FILES] == "... and 5 more"
    assert (
        lines[-1]
        == f"{STAT_FILES + 5} files changed, {STAT_FILES + 5} insertions(+), 0 deletions(-)"
    )


def _checkpoint(session_id, turn, phase="before", kind="turn"):
    from mdagent.rewind.checkpoints import Checkpoint

    return Checkpoint(
        seq=5, commit="", tree="", phase=phase, kind=kind, session_id=session_id,
        turn=turn, prompt="", time=0.0, files=0, not_covered=(),
    )  # fmt: skip


@pytest.fixture
def session(tmp_path):
    import types

    from mdagent.store.store import Store

    store = Store(tmp_path / "state.db")
    sid = store.new_session(str(tmp_path), "m", "t")
    for message in (
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "exec"}]},
        {"role": "tool", "tool_call_id": "c1", "name": "exec", "content": "{}"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "three"},
        {"role": "assistant", "content": "c"},
    ):
        store.add_message(sid, message)
    yield types.SimpleNamespace(store=store, workdir=tmp_path), sid
    store.close()


@pytest.mark.parametrize(
    ("turn", "phase", "kept"),
    [
        (1, "before", []),
        (2, "before", ["one", "a"]),
        (2, "after", ["one", "a", "two", "", "{}", "b"]),
        (3, "before", ["one", "a", "two", "", "{}", "b"]),
        (3, "after", ["one", "a", "two", "", "{}", "b", "three", "c"]),
    ],
)
def test_the_conversation_goes_back_to_a_turn_in_a_new_session(session, turn, phase, kept):
    from mdagent.agent.rewindcommand import rewind_conversation

    runtime, sid = session
    new, said = rewind_conversation(runtime, _checkpoint(sid, turn, phase))
    assert new is not None and new.session_id != sid
    assert [m["content"] for m in runtime.store.messages(new.session_id)] == kept
    assert len(runtime.store.messages(sid)) == 8  # the old session is whole
    assert f"the full history stays in session {sid}" in said


def test_a_conversation_that_cannot_go_back_is_left_and_said(session):
    from mdagent.agent.rewindcommand import rewind_conversation

    runtime, sid = session
    for checkpoint, words in (
        (_checkpoint(sid, 4), f"session {sid} has no turn 4"),
        (_checkpoint(sid, 0), "has no turn 0"),
        (_checkpoint("gone00000000", 1), "session gone00000000 is gone"),
        (_checkpoint(sid, 1, kind="rewind"), "belongs to no conversation"),
    ):
        new, said = rewind_conversation(runtime, checkpoint)
        assert new is None and said.startswith("conversation: not changed") and words in said
    assert len(runtime.store.sessions()) == 1
