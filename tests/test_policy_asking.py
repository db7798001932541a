"""The policy's answers in detail: refusals, questions, "always", rate limits, rule sources.

What a person reads (the exact refusal, the note under a question), what a
model gets back (code, extra) and what the settings say when they are wrong.
Helpers are tests/test_policy.py's.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from mdagent.core.calls import Decision, ToolContext
from mdagent.core.errors import ConfigError
from mdagent.safety.policy import Policy
from mdagent.safety.rules import Source, rule_for, rule_sources
from mdagent.tools.toolbox import Toolbox
from test_policy import MODEL, PERSON, check, cmd, make_policy


@pytest.fixture
def questions(monkeypatch):
    """The terminal question, answered "no": what it was asked with, one dict per question."""
    asked = []

    def ask_terminal(
        tool_name,
        args,
        *,
        cancel=None,
        always=True,
        note=None,
        workdir=None,
        protected=False,
        **scope,
    ):
        asked.append(
            {
                "tool": tool_name,
                "cancel": cancel,
                "always": always,
                "note": note,
                "workdir": workdir,
                "protected": protected,
            }
        )
        return "no"

    monkeypatch.setattr("mdagent.ui.approval.ask_terminal", ask_terminal)
    return asked


# -- refusals --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deny", "tool", "args", "reason", "extra"),
    [
        # A bare rule matches no particular text: nothing in parentheses.
        ("fetch", "fetch", {"url": "https://x.example/"}, "denied by policy rule `fetch`", {}),
        (
            "exec(rm *)",
            "exec",
            cmd("rm -rf x"),
            "denied by policy rule `exec(rm *)` (rm -rf x)",
            {},
        ),
        (
            {"rule": "exec(rm *)", "reason": "use trash"},
            "exec",
            cmd("rm -rf x"),
            "denied by policy rule `exec(rm *)` (rm -rf x): use trash",
            {"reason": "use trash"},
        ),
        (
            {"rule": "weather", "reason": "no"},
            "weather",
            {"city": "Oslo"},
            "denied by policy rule `weather`: no",
            {"reason": "no"},
        ),
    ],
)
def test_a_deny_refusal_names_the_rule_what_it_matched_and_only_a_given_reason(
    root, box, deny, tool, args, reason, extra
):
    policy = make_policy(root, {"deny": [deny]})
    rule = deny if isinstance(deny, str) else deny["rule"]
    expected = Decision(False, reason, code="DENIED", extra={"rule": rule, **extra})
    for caller in (MODEL, PERSON):
        assert check(policy, box, tool, args, caller=caller) == expected


def test_what_a_deny_rule_matched_is_shown_whole_up_to_120_characters(root, box):
    policy = make_policy(root, {"deny": ["exec(rm *)"]})
    fits = "rm " + "x" * 117  # 120 characters
    assert check(policy, box, "exec", cmd(fits)).reason.endswith(f"({fits})")
    longer = fits + "y"
    assert check(policy, box, "exec", cmd(longer)).reason.endswith(f"({longer[:119]}…)")


def test_the_decline_names_the_tool(root, box):
    policy = make_policy(root, interactive=True, prompt=lambda *a: "n")
    assert check(policy, box, "exec", cmd("make")) == Decision(
        False, "the user declined this exec call; do not retry it", code="DENIED"
    )


@pytest.mark.parametrize(
    "tool, args", [("exec", cmd("make")), ("write_file", {"path": ".agents/config/agent.yaml"})]
)
def test_a_prompt_closed_by_the_person_is_a_refusal(root, box, tool, args):
    def closed(*a):
        raise EOFError("input closed")

    policy = make_policy(root, interactive=True, prompt=closed)
    assert check(policy, box, tool, args) == Decision(
        False,
        f"the user closed the approval prompt for this {tool} call; do not retry it",
        code="DENIED",
    )


def test_the_settings_file_named_in_a_refusal(root, box, tmp_path):
    how = "exec needs approval: no terminal to ask on; rerun with --yes or add `exec(make)` to"
    # No project layer: the file "always" would write in one.
    policy = Policy({}, workdir=root)
    assert check(policy, box, "exec", cmd("make")).reason == (
        f"{how} policy.allow in {Path('.agents/config/agent.yaml')}"
    )
    # A project layer outside the workspace: its full path.
    elsewhere = tmp_path / "elsewhere" / ".agents"
    policy = make_policy(root, project_layer=elsewhere)
    assert check(policy, box, "exec", cmd("make")).reason == (
        f"{how} policy.allow in {elsewhere / 'config' / 'agent.yaml'}"
    )
    allowlist = make_policy(root, {"mode": "allowlist"}, project_layer=elsewhere)
    assert check(allowlist, box, "exec", cmd("make")).reason.endswith(
        f"add `exec(make)` to policy.allow in {elsewhere / 'config' / 'agent.yaml'}"
    )


# -- the question ----------------------------------------------------------------


def test_the_question_is_asked_in_the_calls_folder_with_its_cancel_event(
    root, box, tmp_path, questions
):
    other = tmp_path / "other"
    other.mkdir()
    policy = make_policy(root, interactive=True)
    ctx = ToolContext(caller=MODEL, workdir=str(other))
    assert not policy.check(box.tool_for("exec"), cmd("make"), ctx).allowed
    ctx_root = ToolContext(caller=MODEL, workdir=str(root))
    target = {"path": ".agents/config/agent.yaml"}
    assert not policy.check(box.tool_for("write_file"), target, ctx_root).allowed
    assert [(q["tool"], q["workdir"], q["cancel"]) for q in questions] == [
        ("exec", str(other), ctx.cancel),
        ("write_file", str(root), ctx_root.cancel),
    ]
    assert ctx.cancel is not ctx_root.cancel


def test_the_note_under_the_question_names_the_rule_or_hook_and_only_a_given_reason(
    root, box, questions
):
    rules = {"ask": ["exec(git push*)", {"rule": "exec(git tag*)", "reason": "shared"}]}
    policy = make_policy(root, rules, interactive=True)
    ctx = ToolContext(caller=MODEL, workdir=str(root))
    exec_tool = box.tool_for("exec")
    policy.check(exec_tool, cmd("git push"), ctx)
    policy.check(exec_tool, cmd("git tag v1"), ctx)
    full = make_policy(root, {"mode": "full"}, interactive=True)
    for reason in ("check first", None):
        hook = SimpleNamespace(decision="ask", hook="guard", reason=reason)
        assert not full.check(exec_tool, cmd("make"), ctx, hook=hook).allowed
    assert [(q["always"], q["note"]) for q in questions] == [
        (False, "Asked because of policy rule `exec(git push*)`"),
        (False, "Asked because of policy rule `exec(git tag*)`: shared"),
        (False, "Asked because hook guard asks: check first"),
        (False, "Asked because hook guard asks"),
    ]
    assert not any(q["protected"] for q in questions)


def test_a_change_to_the_agents_own_configuration_is_asked_to_be_shown_whole(root, box, questions):
    # The question then shows every changed line and what changes in the settings.
    policy = make_policy(root, interactive=True)
    ctx = ToolContext(caller=MODEL, workdir=str(root))
    args = {"path": ".agents/config/agent.yaml", "content": "policy:\n  mode: full\n"}
    assert not policy.check(box.tool_for("write_file"), args, ctx).allowed
    other = {"path": "a.txt", "content": "x"}
    assert not policy.check(box.tool_for("write_file"), other, ctx).allowed
    assert [q["protected"] for q in questions] == [True, False]


class _Gate:
    """The policy's question lock, telling when a second call is waiting at it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.arrived = threading.Semaphore(0)

    def __enter__(self):
        self.arrived.release()
        self.lock.acquire()
        return self

    def __exit__(self, *exc):
        self.lock.release()


@pytest.mark.parametrize("given", ["always", "session"])
def test_a_call_waiting_for_the_question_is_answered_by_an_always_given_meanwhile(root, box, given):
    answers = iter([given, "no"])  # a second question would be declined
    asked, results = [], {}

    def second_call():
        results["second"] = check(policy, box, "exec", cmd("make"))

    waiting = threading.Thread(target=second_call)

    def prompt(tool, args):
        asked.append(args)
        if len(asked) == 1:
            # Ask the same call again while this question is open; answer once it waits.
            waiting.start()
            gate.arrived.acquire()  # this call's own entry
            gate.arrived.acquire()  # the waiting call's
        return next(answers)

    policy = make_policy(root, interactive=True, prompt=prompt)
    gate = _Gate()
    policy._asking = gate
    first = check(policy, box, "exec", cmd("make"))
    waiting.join()
    assert first == Decision(True, approved_by=given)
    assert results["second"] == Decision(True, approved_by=given)
    assert asked == [cmd("make")]


def test_a_failed_save_of_always_is_logged_and_said(root, box, caplog):
    settings_file = root / ".agents" / "config" / "agent.yaml"
    settings_file.parent.mkdir()
    settings_file.write_text("policy: [unclosed\n")
    told = []
    asked = []
    policy = make_policy(root, interactive=True, prompt=lambda *a: asked.append(a) or "always")
    policy.approver.tell = told.append
    with caplog.at_level("WARNING", logger="mdagent.safety.policy"):
        assert check(policy, box, "exec", cmd("make")) == Decision(True, approved_by="always")
    assert len(told) == 1 and told[0].startswith(
        f"warning: could not add `exec(make:*)` to {settings_file}: "
    )
    # Not saved, still remembered: the same call runs unasked for the rest of the session.
    assert check(policy, box, "exec", cmd("make")) == Decision(True, approved_by="always")
    assert len(asked) == 1
    error = told[0].removeprefix(f"warning: could not add `exec(make:*)` to {settings_file}: ")
    error = error.removesuffix("; allowed for this session only")
    assert [r.getMessage() for r in caplog.records] == [
        f"could not save allow rule 'exec(make:*)': {error}"
    ]
    assert settings_file.read_text() == "policy: [unclosed\n"  # nothing lost


# -- rate limits -------------------------------------------------------------------


class _Store:
    """A store whose rate limit says ``wait_ms`` (or raises ``error``), recording each check."""

    def __init__(self, wait_ms=None, error=None):
        self.wait_ms, self.error, self.checked = wait_ms, error, []

    def rate_limit(self, name, max_calls, window_ms):
        self.checked.append((name, max_calls, window_ms))
        if self.error is not None:
            raise self.error
        return self.wait_ms


def _limited_box() -> Toolbox:
    box = Toolbox()
    for name, limit in (
        ("per_minute", {"max_calls": 3}),  # the window defaults to a minute
        ("per_5s", {"max_calls": 2, "window_ms": 5000}),
    ):
        box.add(name, description=name, handler=dict, security="safe", rate_limit=limit)
    return box


@pytest.mark.parametrize(
    ("tool", "max_calls", "window_ms"), [("per_minute", 3, 60_000), ("per_5s", 2, 5000)]
)
def test_a_rate_limited_call_says_the_limit_and_when_to_retry(root, tool, max_calls, window_ms):
    store = _Store(wait_ms=250)
    policy = make_policy(root, store=store)
    assert check(policy, _limited_box(), tool, {}) == Decision(
        False,
        f"rate limited: {tool} allows {max_calls} calls per {window_ms} ms; retry in 250 ms",
        code="RATE_LIMITED",
        extra={"retryable": True, "retry_after_ms": 250},
    )
    assert store.checked == [(tool, max_calls, window_ms)]
    free = _Store()
    assert check(make_policy(root, store=free), _limited_box(), tool, {}).allowed
    assert free.checked == [(tool, max_calls, window_ms)]


def test_a_rate_limit_that_cannot_be_checked_refuses_the_call(root):
    store = _Store(error=OSError("database is locked"))
    policy = make_policy(root, store=store)
    for caller in (MODEL, PERSON):
        assert check(policy, _limited_box(), "per_5s", {}, caller=caller) == Decision(
            False,
            "not run: the rate limit of per_5s cannot be checked: database is locked",
            code="UNRECORDED",
        )


# -- settings --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (["allow"], "policy: expected a mapping"),
        ("full", "policy: expected a mapping"),
        (
            {"mode": "yolo"},
            "policy.mode: 'yolo' is not one of ask, accept-edits, plan, allowlist, deny, full",
        ),
        ({"inline_eval": "never"}, "policy.inline_eval: 'never' is not ask or allow"),
        *(
            (
                {key: ["exec(ls"]},
                f"policy.{key}: invalid rule 'exec(ls': expected `tool` or `tool(pattern)`",
            )
            for key in ("allow", "ask", "deny")
        ),
    ],
)
def test_bad_policy_settings_say_which_key_is_wrong(root, section, message):
    with pytest.raises(ConfigError) as raised:
        Policy({"policy": section}, workdir=root)
    assert str(raised.value) == message


def test_where_a_rule_was_written_defaults_to_line_1_column_1(root):
    written = [
        {
            "section": "deny",
            "entry": "fetch",
            "path": "a.yaml",
            "line": 4,
            "col": 9,
            "layer": "user",
        },
        {"section": "deny", "entry": "exec(rm *)"},  # nothing known but the entry
        {"section": "deny", "entry": "fetch", "path": "b.yaml", "line": 1},  # a lower layer's
        {"section": "allow", "entry": "exec(rm *)", "path": "c.yaml"},
    ]
    assert rule_sources(written, "deny") == {
        '"fetch"': Source("a.yaml", 4, 9, "user"),
        '"exec(rm *)"': Source("", 1, 1, ""),
    }
    policy = Policy(
        {"policy": {"deny": ["fetch", "exec(rm *)"]}},
        workdir=root,
        sources=written,
    )
    assert [r.source for r in policy.deny] == [
        Source("a.yaml", 4, 9, "user"),
        Source("", 1, 1, ""),
    ]


# -- answers with a scope: session, tell, always's suggestion and layer (issue 35) ------------


def scripted(root, answers, **kw):
    from mdagent.runtime.approvers import ScriptedApprover

    kw.setdefault("project_layer", root / ".agents")
    approver = ScriptedApprover(answers, kw["project_layer"], workdir=root, tell=lambda m: None)
    return approver, Policy({"policy": kw.pop("policy", {})}, workdir=root, approver=approver, **kw)


@pytest.mark.parametrize(
    ("command", "allow", "suggested"),
    [
        ("git status --short", [], ("exec(git status:*)",)),
        ("ls -1 && git status --short", [], ("exec(ls:*)", "exec(git status:*)")),
        ("ls -1 && git status --short", ["exec(ls:*)"], ("exec(git status:*)",)),
        ("git status && git status -s", [], ("exec(git status:*)",)),  # once
        ("./build.sh --fast", [], ("exec(./build.sh:*)",)),
        ("/usr/bin/git status --short", [], ("exec(/usr/bin/git status:*)",)),
        # A folder of the program's path that is not a plain name: the part as written.
        ("/@x/bin/tool run", [], ("exec(/@x/bin/tool run)",)),
        ("/opt/@x/tool run", [], ("exec(/opt/@x/tool run)",)),
        ("make", [], ("exec(make:*)",)),
        ("FOO=1 make lint", [], ("exec(FOO=1 make lint)",)),  # no prefix fits: the part as written
        ("cat 'a b' | wc -l", [], ("exec(cat:*)", "exec(wc:*)")),
    ],
)
def test_always_suggests_a_prefix_rule_per_uncovered_part_never_the_literal_line(
    root, box, command, allow, suggested
):
    policy = make_policy(root, {"allow": allow})
    rules = policy.suggest_rules(box.tool_for("exec"), cmd(command), str(root))
    assert rules == suggested
    if "&&" in command or "|" in command:
        assert f"exec({command})" not in rules
    # What is suggested covers the call: saved, the same call runs unasked.
    covered = make_policy(root, {"allow": [*allow, *rules]})
    assert check(covered, box, "exec", cmd(command)).allowed


@pytest.mark.parametrize("command", ["echo $HOME", "python3 -c 'print(1)'", 'ls && eval "$X"'])
def test_nothing_is_suggested_where_no_pattern_may_cover_a_part_and_always_is_not_offered(
    root, box, command
):
    approver, policy = scripted(root, ["always"])
    assert policy.suggest_rules(box.tool_for("exec"), cmd(command), str(root)) == ()
    decision = check(policy, box, "exec", cmd(command))
    assert decision.approved_by == "user"  # "always" not offered: this call only
    assert approver.asked[0].always is False and approver.asked[0].session is True
    assert not (root / ".agents" / "config" / "agent.yaml").exists()


def test_an_exec_call_without_a_command_suggests_nothing(root, box):
    policy = make_policy(root)
    assert policy.suggest_rules(box.tool_for("exec"), {}, str(root)) == ()


def test_other_tools_suggest_the_policys_own_rule(root, box):
    policy = make_policy(root)
    tool = box.tool_for("write_file")
    args = {"path": "src/a.py"}
    assert policy.suggest_rules(tool, args, str(root)) == (rule_for(tool, args, str(root)),)


def test_yes_for_this_session_is_the_exact_call_and_ends_with_the_session(root, box):
    session: set[str] = set()
    approver, policy = scripted(root, ["session"], session=session)
    assert check(policy, box, "exec", cmd("make lint")).approved_by == "session"
    assert check(policy, box, "exec", cmd("make lint")).approved_by == "session"
    assert len(approver.asked) == 1 and approver.asked[0].session is True
    # Never widened: other arguments, a cwd, another spelling are other calls.
    for other in (
        cmd("make lint "),
        cmd("make lint; rm -rf x"),
        {**cmd("make lint"), "cwd": "sub"},
    ):
        assert not check(policy, box, "exec", other).allowed, other
    assert len(approver.asked) == 4
    # A policy built again for the same session (a reload, /mode) keeps it ...
    _, rebuilt = scripted(root, [], session=session)
    assert check(rebuilt, box, "exec", cmd("make lint")).approved_by == "session"
    # ... a new session does not, and nothing was written.
    _, fresh = scripted(root, [])
    assert not check(fresh, box, "exec", cmd("make lint")).allowed
    assert not (root / ".agents" / "config").exists()


def test_a_session_answer_never_lifts_an_ask_rule_a_hook_or_a_stricter_mode(root, box):
    session: set[str] = set()
    approver, asking = scripted(
        root, ["session", "session"], session=session, policy={"ask": ["exec(git push*)"]}
    )
    assert check(asking, box, "exec", cmd("git push")).approved_by == "user"  # this call only
    assert approver.asked[0].session is False and approver.asked[0].always is False
    assert check(asking, box, "exec", cmd("git push")).approved_by == "user"  # asked again
    assert len(approver.asked) == 2
    _, plain = scripted(root, ["session"], session=session)
    assert check(plain, box, "exec", cmd("make")).approved_by == "session"
    _, strict = scripted(root, [], session=session, policy={"mode": "allowlist"})
    assert not check(strict, box, "exec", cmd("make")).allowed  # allowlist: rules only


def test_session_and_always_are_not_offered_for_the_agents_own_files(root, box):
    approver, policy = scripted(root, ["session", "no"])
    target = {"path": ".agents/config/agent.yaml", "content": "policy: {}\n"}
    assert check(policy, box, "write_file", target).approved_by == "user"  # once
    assert not check(policy, box, "write_file", target).allowed  # asked again: "no"
    assert [(q.session, q.always) for q in approver.asked] == [(False, False)] * 2


def test_tell_gives_the_model_the_persons_reason(root, box):
    from mdagent.safety.questions import Answer

    _, policy = scripted(root, [Answer("tell", reason="  use\n make lint  "), "t"])
    decision = check(policy, box, "exec", cmd("make"))
    assert decision == Decision(
        False,
        "the user declined this exec call and says: use make lint",
        code="DENIED",
        extra={"user_reason": "use make lint"},
    )
    assert check(policy, box, "exec", cmd("make")).reason == (
        "the user declined this exec call; do not retry it"  # no reason given
    )


def test_always_saves_the_persons_edited_rule_in_the_layer_they_chose(root, box, tmp_path):
    from mdagent.runtime.approvers import ScriptedApprover
    from mdagent.safety.questions import Answer

    user = tmp_path / "user-layer"
    told = []
    approver = ScriptedApprover(
        [Answer("always", rules=("exec(make *)", "not a (rule"), layer="user")],
        root / ".agents",
        user_layer=user,
        workdir=root,
        tell=told.append,
    )
    policy = Policy({}, workdir=root, approver=approver, project_layer=root / ".agents")
    assert check(policy, box, "exec", cmd("make lint")).approved_by == "always"
    saved = yaml_load(user / "config" / "agent.yaml")
    assert saved == {"policy": {"allow": ["exec(make *)"]}}  # the broken one never saved
    assert not (root / ".agents" / "config" / "agent.yaml").exists()
    assert check(policy, box, "exec", cmd("make test")).approved_by == "rule:exec(make *)"


@pytest.mark.parametrize(
    ("untrusted", "layers"), [(True, ("user", "project")), (False, ("project", "user"))]
)
def test_the_default_layer_is_the_users_in_a_folder_not_trusted(root, tmp_path, untrusted, layers):
    from mdagent.runtime.approvers import ScriptedApprover

    approver = ScriptedApprover(
        [], root / ".agents", user_layer=tmp_path / "u", untrusted=lambda: untrusted
    )
    assert approver.layers() == layers
    approver.tell = lambda m: None
    approver.remember("exec(make:*)")  # no layer named: the default
    default = (tmp_path / "u") if untrusted else (root / ".agents")
    assert yaml_load(default / "config" / "agent.yaml") == {"policy": {"allow": ["exec(make:*)"]}}
    assert ScriptedApprover([], None, user_layer=tmp_path / "u").layers() == ("user",)


def test_the_decision_says_how_long_it_waited_for_the_answer(root, box):
    _, policy = scripted(root, ["y"])
    ctx = ToolContext(caller=MODEL, workdir=str(root))
    asked = policy.check(box.tool_for("exec"), cmd("make"), ctx)
    assert asked.allowed and asked.waited_s > 0  # asked: the wait is on the decision
    unasked = policy.check(box.tool_for("read_file"), {"path": "a"}, ctx)
    assert unasked.allowed and unasked.waited_s == 0.0


def yaml_load(path):
    import yaml

    return yaml.safe_load(path.read_text())
