"""Asking a person, and saving "always" into agent.yaml without losing anything."""

from __future__ import annotations

import contextlib
import io

import pytest

from mdagent.ui import approval
from mdagent.ui.approval import ask_terminal, format_call


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

    monkeypatch.setattr(approval, "terminal_input", fake_input)

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


def test_ask_terminal_without_always_offers_yes_and_no_only(terminal):
    shown = terminal("a\ny\n")
    answer = ask_terminal(
        "write_file", {"path": ".agents/config/agent.yaml"}, out=shown, always=False, note="Mind."
    )
    assert answer == "yes"
    text = shown.getvalue()
    assert "Run it? [y]es / [t]ell / [n]o: " in text and "[a]lways" not in text
    assert "Please answer y, t or n." in text and "Mind." in text


# -- revoking: the reverse edit ------------------------------------------------------


# -- answers with a scope (issue 35) ---------------------------------------------------------

SCOPED = {
    "session": True,
    "rules": ("exec(ls:*)", "exec(git status:*)"),
    "layers": ("user", "project"),
    "check_rule": lambda text: None if text.startswith("exec(") else f"{text}: not exec",
}


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("s\n", "session"),
        ("a\n", {"kind": "always", "rules": SCOPED["rules"], "layer": "user"}),
        ("a project\n", {"kind": "always", "rules": SCOPED["rules"], "layer": "project"}),
        ("A P exec(git *)\n", {"kind": "always", "rules": ("exec(git *)",), "layer": "project"}),
        (
            "a exec(git status:*), exec(ls -1)\n",
            {"kind": "always", "rules": ("exec(git status:*)", "exec(ls -1)"), "layer": "user"},
        ),
        ("a nope\ny\n", "yes"),  # a wrong rule is said, and the question asked again
        ("t use make\n", {"kind": "tell", "reason": "use make"}),
        ("t\nnot now, thanks\n", {"kind": "tell", "reason": "not now, thanks"}),
        ("t\n\n", {"kind": "tell", "reason": ""}),
    ],
)
def test_scoped_answers(terminal, typed, expected):
    shown = terminal(typed)
    command = {"command": "ls -1 && git status --short"}
    assert ask_terminal("exec", command, out=shown, **SCOPED) == expected
    text = shown.getvalue()
    assert "Run it? [y]es / [s]ession / [t]ell / [n]o / [a]lways: " in text
    assert (
        "[a]lways saves exec(ls:*), exec(git status:*) in the user layer\n"
        "(to change it: a [user|project] [RULE, …])"
    ) in text
    if typed.startswith("a nope"):
        assert "Not a rule: nope: not exec" in text


def test_session_is_no_answer_where_it_is_not_offered(terminal):
    shown = terminal("s\nn\n")
    assert ask_terminal("exec", {"command": "make"}, out=shown) == "no"
    assert "Please answer y, t, n or a." in shown.getvalue()
    assert "[s]ession" not in shown.getvalue()
