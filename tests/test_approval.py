"""Asking a person, and saving "always" into agent.yaml without losing anything."""

from __future__ import annotations

import contextlib
import io
import threading

import pytest
import yaml

from mdagent import approval
from mdagent.approval import add_allow_rule, ask_terminal, format_call, remove_allow_rule
from mdagent.errors import ConfigError


def test_format_call_is_compact_and_shows_what_matters_in_full():
    long_command = "echo " + "a" * 500 + " ; rm -rf ~"
    text = format_call("exec", {"command": long_command, "content": "x" * 1000, "n": 3})
    assert text.splitlines()[0] == "exec"
    assert "rm -rf ~" in text  # never shortened: the tail is what matters
    assert "more chars" in text and len(text) < 1000
    assert "  n: 3" in text


def test_format_call_escapes_control_characters():
    text = format_call("exec", {"command": "ls\rrm -rf ~ \x1b[2K\u202eevil"})
    assert "\r" not in text and "\x1b" not in text and "\u202e" not in text
    assert "\\r" in text and "\\x1b" in text and "\\u202e" in text


@pytest.fixture
def terminal(monkeypatch):
    """Feed ``ask_terminal`` typed lines; returns what it wrote."""
    typed = io.StringIO()
    shown = io.StringIO()

    @contextlib.contextmanager
    def fake_input():
        yield typed

    monkeypatch.setattr(approval, "_terminal_input", fake_input)

    def answer(text):
        typed.seek(0)
        typed.truncate()
        typed.write(text)
        typed.seek(0)
        return shown

    return answer


@pytest.mark.parametrize(
    ("typed", "expected"),
    [("y\n", "yes"), ("YES\n", "yes"), ("a\n", "always"), ("\n", "no"), ("what\nn\n", "no")],
)
def test_ask_terminal(terminal, typed, expected):
    shown = terminal(typed)
    assert ask_terminal("exec", {"command": "make"}, out=shown) == expected
    assert "Allow exec" in shown.getvalue() and "command: make" in shown.getvalue()


def test_ask_terminal_without_an_answer_raises_eof(terminal):
    shown = terminal("")
    with pytest.raises(EOFError):
        ask_terminal("exec", {"command": "make"}, out=shown)


def test_no_terminal_is_eof(monkeypatch):
    monkeypatch.setattr("builtins.open", _no_tty(open))
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    with pytest.raises(EOFError):
        ask_terminal("exec", {"command": "make"}, out=io.StringIO())
    assert approval.terminal_available() is False


def _no_tty(real_open):
    def fake(path, *args, **kwargs):
        if str(path) == "/dev/tty":
            raise OSError("no tty")
        return real_open(path, *args, **kwargs)

    return fake


LAYOUTS = {
    "block list": (
        "# settings\npolicy:\n  mode: ask\n  allow:\n    - read_file  # reads\n  deny: [x]\n# end\n"
    ),
    "compact list": "policy:\n  allow:\n  - a\n  - b\n",
    "flow list": "policy:\n  allow: [read_file]  # reads\n",
    "empty flow list": "policy:\n  allow: []  # none\n",
    "no allow": "policy:  # rules\n  # how to ask\n  mode: ask\n",
    "empty allow": "policy:\n  allow:\n  deny: []  # none\n",
    "no policy": "model:\n  name: llama3  # small\n",
    "empty policy": "policy:\n# later\nmodel: {}\n",
    "comments only": "# nothing yet\n",
    "no final newline": "model: {name: x}  # c",
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_add_allow_rule_keeps_content_and_comments(tmp_path, layout):
    original = LAYOUTS[layout]
    target = tmp_path / "agent.yaml"
    target.write_text(original)
    before = yaml.safe_load(original) or {}
    assert add_allow_rule(target, 'exec(git log --format="%H")') is True
    text = target.read_text()
    for line in original.splitlines():
        if "#" in line:
            assert line.split("#", 1)[1] in text  # every comment survives
    after = yaml.safe_load(text)
    policy = before.get("policy") or {}
    expected_allow = [*(policy.get("allow") or []), 'exec(git log --format="%H")']
    assert after["policy"]["allow"] == expected_allow
    assert {k: v for k, v in after.items() if k != "policy"} == {
        k: v for k, v in before.items() if k != "policy"
    }
    assert {k: v for k, v in after["policy"].items() if k != "allow"} == {
        k: v for k, v in policy.items() if k != "allow"
    }


def test_add_allow_rule_creates_the_file_and_skips_duplicates(tmp_path):
    target = tmp_path / ".agents" / "config" / "agent.yaml"
    assert add_allow_rule(target, "read_file") is True
    assert add_allow_rule(target, "read_file") is False
    assert yaml.safe_load(target.read_text()) == {"policy": {"allow": ["read_file"]}}


def test_add_allow_rule_reformats_only_comment_free_files(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("policy: {mode: ask}\n")
    add_allow_rule(target, "read_file")
    assert yaml.safe_load(target.read_text()) == {"policy": {"mode": "ask", "allow": ["read_file"]}}
    target.write_text("policy: {mode: ask}  # keep me\n")
    with pytest.raises(ConfigError, match="by hand"):
        add_allow_rule(target, "read_file")
    assert target.read_text() == "policy: {mode: ask}  # keep me\n"


def test_add_allow_rule_refuses_broken_yaml(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("policy: [unclosed\n")
    with pytest.raises(ConfigError):
        add_allow_rule(target, "read_file")
    assert target.read_text() == "policy: [unclosed\n"


def test_add_allow_rule_refuses_a_file_with_a_duplicate_key(tmp_path):
    # The registry refuses such a file; editing it would hide that behind a
    # rule that seems saved.
    target = tmp_path / "agent.yaml"
    text = "policy:\n  mode: ask\n  mode: full\n"
    target.write_text(text)
    with pytest.raises(ConfigError, match="duplicate key 'mode'") as err:
        add_allow_rule(target, "read_file")
    assert err.value.line == 3
    assert target.read_text() == text


def test_concurrent_always_answers_lose_no_rule(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("# mine\npolicy:\n  allow:\n    - read_file\n")
    rules = [f"exec(make target{i})" for i in range(12)]
    threads = [threading.Thread(target=add_allow_rule, args=(target, r)) for r in rules]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    saved = yaml.safe_load(target.read_text())["policy"]["allow"]
    assert sorted(saved) == sorted(["read_file", *rules])
    assert target.read_text().startswith("# mine\n")
    assert not list(tmp_path.glob(".*.tmp"))


def test_ask_terminal_without_always_offers_yes_and_no_only(terminal):
    shown = terminal("a\ny\n")
    answer = ask_terminal(
        "write_file", {"path": ".agents/config/agent.yaml"}, out=shown, always=False, note="Mind."
    )
    assert answer == "yes"
    text = shown.getvalue()
    assert "Run it? [y]es / [n]o: " in text and "[a]lways" not in text
    assert "Please answer y or n." in text and "Mind." in text


# -- revoking: the reverse edit ------------------------------------------------------

RULE = 'exec(git log --format="%H")'


@pytest.mark.parametrize("layout", LAYOUTS)
def test_remove_allow_rule_undoes_add_allow_rule_and_keeps_comments(tmp_path, layout):
    original = LAYOUTS[layout]
    target = tmp_path / "agent.yaml"
    target.write_text(original)
    add_allow_rule(target, RULE)
    added = target.read_text()
    assert remove_allow_rule(target, RULE) == next(
        i for i, line in enumerate(added.splitlines(), 1) if "git log" in line
    )
    text = target.read_text()
    for line in added.splitlines():
        if "#" in line and "git log" not in line:
            assert line.split("#", 1)[1] in text  # every other comment survives
    before = yaml.safe_load(original) or {}
    after = yaml.safe_load(text) or {}
    allow = ((before.get("policy") or {}).get("allow")) or []
    assert ((after.get("policy") or {}).get("allow") or []) == allow
    assert {k: v for k, v in after.items() if k != "policy"} == {
        k: v for k, v in before.items() if k != "policy"
    }
    assert remove_allow_rule(target, RULE) is None  # gone: nothing more to remove


@pytest.mark.parametrize(
    ("text", "left"),
    [
        (
            "policy:\n  allow:\n    - a\n    - rule: x\n      reason: why\n  # next\n  deny: [d]\n",
            "policy:\n  allow:\n    - a\n  # next\n  deny: [d]\n",
        ),
        ("policy:\n  allow: [a, x, b]  # c\n", "policy:\n  allow: [a, b]  # c\n"),
        ("policy:\n  allow: [a, x]  # c\n", "policy:\n  allow: [a]  # c\n"),
        ("policy:\n  allow:\n    - x  # saved\n  # more\n", "policy:\n  allow: []\n  # more\n"),
    ],
)
def test_remove_allow_rule_layouts(tmp_path, text, left):
    target = tmp_path / "agent.yaml"
    target.write_text(text)
    assert remove_allow_rule(target, "x") is not None
    assert target.read_text() == left


def test_remove_allow_rule_without_the_rule_or_the_file(tmp_path):
    assert remove_allow_rule(tmp_path / "missing.yaml", "x") is None
    target = tmp_path / "agent.yaml"
    target.write_text("policy:\n  deny: [x]\n  allow: [y]\n")
    assert remove_allow_rule(target, "x") is None
    assert target.read_text() == "policy:\n  deny: [x]\n  allow: [y]\n"


def test_remove_allow_rule_refuses_to_lose_comments(tmp_path):
    target = tmp_path / "agent.yaml"
    # The list is shared through an anchor: removing the item would change `base` too.
    original = "base: &rules [x, y]\npolicy:\n  allow: *rules  # shared\n"
    target.write_text(original)
    with pytest.raises(ConfigError, match="remove it by hand"):
        remove_allow_rule(target, "x")
    assert target.read_text() == original
    target.write_text("base: &rules [x, y]\npolicy:\n  allow: *rules\n")
    assert remove_allow_rule(target, "x") == 1
    assert yaml.safe_load(target.read_text()) == {"base": ["x", "y"], "policy": {"allow": ["y"]}}
