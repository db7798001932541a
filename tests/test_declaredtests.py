"""Declared tests (issue 21): finding them at their lines, choosing them, judging results."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write
from mdagent.cli.declaredtests import (
    DeclaredTest,
    collect,
    judge,
    output_text,
    resolve_pointer,
    select,
)
from mdagent.core.layers import Layer
from mdagent.registry.compile import compile_registry

TOOLS = """\
tools:
  hello:
    description: Say hello
    run: [echo, hello]
    tests:
      - expect: {output: hello}
      - name: second
        args: {}
        expect: {ok: true}
commands:
  hi:
    tool: hello
    tests:
      - argv: "x y"
        expect: {exit: 0}
"""


def registry_of(folder: Path):
    return compile_registry([Layer(folder, "project")])[0]


def test_collect_reads_each_test_with_its_line_and_kind(tmp_path):
    layer = tmp_path / ".agents"
    tools = write(layer / "config/tools.yaml", TOOLS)
    skill = write(
        layer / "skills/shout/SKILL.md",
        "---\nname: shout\ndescription: d\ncommand-dispatch: tool\ncommand-tool: exec\n"
        "tests:\n  - argv: echo hi\n    expect: {contains: hi}\n---\nBody.\n",
    )
    found = {(t.kind, t.name, t.line, t.col, t.path) for t in collect(registry_of(layer))}
    assert found == {
        ("tool", "hello", 6, 9, str(tools)),
        ("tool", "hello", 7, 9, str(tools)),
        ("command", "hi", 14, 9, str(tools)),
        ("command", "shout", 7, 5, str(skill)),
    }


def test_labels_use_the_name_else_the_words_else_the_arguments():
    def test(kind, entry):
        return DeclaredTest(kind, "x", entry, "f.yaml", 1, 1, "project")

    assert test("command", {"name": "counts", "argv": "a"}).label == "/x counts"
    assert test("command", {"argv": "a b"}).label == "/x a b"
    assert test("command", {"argv": ["a", "b c"]}).label == "/x a b c"
    assert test("tool", {"args": {"city": "Paris"}}).label == 'x {"city": "Paris"}'
    assert test("tool", {}).label == "x {}"


def test_select_by_name_layer_and_pattern(tmp_path):
    tests = [
        DeclaredTest("tool", "a", {"name": "one"}, str(tmp_path / "p/a.yaml"), 1, 1, "project"),
        DeclaredTest("command", "b", {"name": "two"}, "/elsewhere/b.yaml", 1, 1, "bundled"),
    ]
    assert select(tests, ["/b"]) == [tests[1]]
    assert select(tests, ["a", "b"]) == tests
    assert select(tests, layers=["bundled"]) == [tests[1]]
    assert select(tests, layers=[str(tmp_path / "p")]) == [tests[0]]
    assert select(tests, pattern="ONE") == [tests[0]]
    assert select(tests, ["a"], pattern="two") == []


RESULT = {"ok": True, "stdout": "2 README.md\n", "stderr": "", "exit_code": 0}


def test_a_result_that_meets_every_expectation_passes():
    expect = {
        "ok": True,
        "exit": 0,
        "output": "2 README.md",
        "contains": ["2", "README"],
        "matches": r"^\d+ README",
        "json": {"/exit_code": 0, "/ok": True},
    }
    assert judge(expect, RESULT, 0) == []


@pytest.mark.parametrize(
    ("expect", "status", "message"),
    [
        ({"ok": False}, 0, "expected ok: false, got true"),
        ({"exit": 3}, 0, "expected exit 3, got 0"),
        ({"output": "3 README.md"}, 0, 'expected output "3 README.md", got "2 README.md\\n"'),
        ({"contains": "nope"}, 0, 'expected output containing "nope"'),
        ({"matches": "^x"}, 0, "expected output matching /^x/"),
        ({"matches": "("}, 0, "matches: not a regular expression"),
        ({"json": {"/exit_code": 1}}, 0, "expected /exit_code = 1, got 0"),
        ({"json": {"/missing": 1}}, 0, "expected /missing = 1, got nothing there"),
        ({"error": "boom"}, 0, 'expected an error containing "boom", got no error'),
        ({"denied": True}, 0, "expected the call to be denied, got it ran"),
    ],
)
def test_each_expectation_that_does_not_hold_says_what_was_expected(expect, status, message):
    failures = judge(expect, RESULT, status)
    assert len(failures) == 1 and failures[0].startswith(message), failures


def test_a_multi_line_output_mismatch_carries_a_short_diff():
    failures = judge({"output": "a\nb\nc\n"}, {"ok": True, "output": "a\nB\nc\n"}, 0)
    assert failures[0].splitlines()[1:] == [
        "--- expected",
        "+++ got",
        "@@ -1,3 +1,3 @@",
        " a",
        "-b",
        "+B",
        " c",
    ]


def test_a_denial_meets_denied_and_error():
    denied = {"ok": False, "code": "DENIED", "error": "denied by policy rule `exec(rm *)`"}
    assert judge({"denied": True, "error": "exec(rm *)", "ok": False}, denied, 126) == []
    failed = {"ok": False, "error": "exit status 1"}
    assert judge({"denied": True}, failed, 1) == [
        'expected the call to be denied, got a failure that is not a denial ("exit status 1")'
    ]


def test_json_pointers_reach_into_a_json_text():
    result = {"ok": True, "output": '{"items": [{"a/b": 1}, {"~x": 2}]}'}
    assert resolve_pointer(result, "/output/items/0/a~1b") == 1
    assert resolve_pointer(result, "/output/items/1/~0x") == 2
    assert resolve_pointer(result, "") is result
    assert judge({"json": {"/output/items/2": 1}}, result, 0)
    assert judge({"json": {"/ok": True}}, result, 0) == []


def test_output_text_is_what_a_person_reads():
    assert output_text({"output": "x", "stdout": "y"}) == "x"
    assert output_text({"stdout": "out\n", "stderr": "err\n"}) == "out\nerr\n"
    assert output_text({"ok": True, "path": "a"}) == ""


def test_the_working_folder_stays_away_from_home_while_a_tests_thread_runs(tmp_path, monkeypatch):
    """A handler past its timeout is a thread still running: it must not write at home."""
    import contextlib
    import os
    import tempfile
    import threading

    from mdagent.cli.declaredtests import WorkingFolder

    home = tmp_path / "workspace"
    home.mkdir()
    monkeypatch.chdir(home)
    folder = WorkingFolder()
    release = threading.Event()

    def late() -> None:
        release.wait(30)
        # Where the copy it stood in is gone, nothing lands anywhere.
        with contextlib.suppress(OSError):
            Path("PWN_late").write_text("late")

    with tempfile.TemporaryDirectory() as copy:
        with folder.inside(Path(copy)):
            thread = threading.Thread(target=late, daemon=True)
            thread.start()
        assert Path(os.getcwd()).resolve() == Path(copy).resolve()  # not home: a thread runs
    folder.leave()
    assert not (home / "PWN_late").exists()
    with tempfile.TemporaryDirectory() as other:
        with folder.inside(Path(other)):
            release.set()
            thread.join(30)
        assert Path(other, "PWN_late").exists()  # it wrote into the copy in use, if anywhere
    assert Path(os.getcwd()).resolve() == home.resolve()  # the thread ended: home again
    folder.leave()
    assert not (home / "PWN_late").exists()


def test_without_straying_threads_each_test_goes_home(tmp_path, monkeypatch):
    import os

    from mdagent.cli.declaredtests import WorkingFolder

    monkeypatch.chdir(tmp_path)
    folder = WorkingFolder()
    copy = tmp_path / "copy"
    copy.mkdir()
    with folder.inside(copy):
        assert Path(os.getcwd()) == copy
    assert Path(os.getcwd()) == tmp_path
