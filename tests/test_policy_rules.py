"""What decided a call, as `agent policy check` shows it: the decision, why, the rule, what matched.

Each verdict path of :meth:`Policy.evaluate` (deny, a person's call, the
agent's own configuration, hooks, ask rules, the modes, "always", allow
rules, approval, safe tools, unmatched) with every field a person or the
model reads; calls missing their main argument; rules judged from the
call's own folder; and how a rule entry is read.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mdagent.cli.policycheck import verdict_dict
from mdagent.core.calls import Decision, HookDecision, ToolContext
from mdagent.core.errors import ConfigError
from mdagent.safety.rules import Rule, rule_for
from test_policy import MODEL, PERSON, cmd, make_policy

PROTECTED = ".agents/config/agent.yaml (the project layer)"


def context(root, caller=MODEL, **kw):
    return ToolContext(caller=caller, workdir=str(root), **kw)


def shown(verdict):
    """What `agent policy check --json` prints, plus what the audit log records."""
    data = verdict_dict("t", {}, verdict)
    seen = {k: data[k] for k in ("decision", "why", "rule", "reason", "matched", "allow_rule")}
    seen["rules"] = [r.text for r in verdict.rules]
    seen["approved_by"] = verdict.approved_by
    seen["asks"] = verdict.asks
    seen["protected"] = verdict.protected
    return seen


def expect(decision, why, **fields):
    out = {
        "decision": decision,
        "why": why,
        "rule": None,
        "reason": None,
        "matched": None,
        "allow_rule": None,
        "rules": [],
        "approved_by": None,
        "asks": None,
        "protected": None,
    }
    out.update(fields)
    if out["rules"] and out["rule"] is None:
        out["rule"] = out["rules"][0]
    return out


ALLOW_GIT = "allowed by policy rule `exec(git *)`"
VERDICTS = [
    (
        "deny rule",
        {"deny": ["exec(rm *)"]},
        "exec",
        cmd("rm -rf x"),
        MODEL,
        expect(
            "deny", "denied by policy rule `exec(rm *)`", rules=["exec(rm *)"], matched="rm -rf x"
        ),
    ),
    (
        "a person's call",
        {"mode": "allowlist"},
        "exec",
        cmd("rm -rf x"),
        PERSON,
        expect("allow", "a person's command runs as typed", approved_by="person"),
    ),
    (
        "ask rule",
        {"ask": ["exec(git push*)"], "allow": ["exec(git *)"]},
        "exec",
        cmd("git push origin"),
        MODEL,
        expect(
            "ask",
            "policy rule `exec(git push*)` asks for it",
            rules=["exec(git push*)"],
            asks="rule",
            matched="git push origin",
        ),
    ),
    (
        "mode full",
        {"mode": "full"},
        "exec",
        cmd("rm -rf x"),
        MODEL,
        expect("allow", "policy.mode is full", approved_by="mode:full"),
    ),
    (
        "one allow rule",
        {"allow": ["exec(git *)"]},
        "exec",
        cmd("git log"),
        MODEL,
        expect("allow", ALLOW_GIT, rules=["exec(git *)"], approved_by="rule:exec(git *)"),
    ),
    (
        "allow rules together",
        {"allow": ["exec(git *)", "exec(wc -l)"]},
        "exec",
        cmd("git log | wc -l"),
        MODEL,
        expect(
            "allow",
            "allowed by policy rule `exec(git *)`, `exec(wc -l)`",
            rules=["exec(git *)", "exec(wc -l)"],
            approved_by="rule:exec(git *),exec(wc -l)",
        ),
    ),
    (
        "the first of two bare rules",
        {"allow": ["weather", "w*"]},
        "weather",
        {"city": "Paris"},
        MODEL,
        expect(
            "allow",
            "allowed by policy rule `weather`",
            rules=["weather"],
            approved_by="rule:weather",
        ),
    ),
    (
        "allowlist, not covered",
        {"mode": "allowlist"},
        "exec",
        cmd("make"),
        MODEL,
        expect(
            "deny",
            "policy.mode is allowlist and no rule in policy.allow covers it",
            allow_rule="exec(make)",
        ),
    ),
    (
        "deny mode, not covered",
        {"mode": "deny"},
        "weather",
        {"city": "Paris"},
        MODEL,
        expect(
            "deny",
            "policy.mode is deny and no rule in policy.allow covers it",
            allow_rule="weather",
        ),
    ),
    (
        "approval: true",
        {"allow": ["deploy"]},
        "deploy",
        {},
        MODEL,
        expect(
            "ask",
            "deploy is declared `approval: true`",
            asks="approval",
            allow_rule="deploy",
        ),
    ),
    (
        "safe tool",
        {},
        "read_file",
        {"path": "x"},
        MODEL,
        expect("allow", "read_file is a safe tool", approved_by="safe"),
    ),
    (
        "not covered",
        {},
        "weather",
        {"city": "Paris"},
        MODEL,
        expect("ask", "no rule in policy.allow covers it", asks="unmatched", allow_rule="weather"),
    ),
    (
        "the agent's own configuration",
        {"mode": "full"},
        "write_file",
        {"path": ".agents/config/agent.yaml"},
        MODEL,
        expect(
            "ask",
            f"it would change {PROTECTED}, part of the agent's own configuration",
            asks="protected",
            protected=PROTECTED,
        ),
    ),
]


@pytest.mark.parametrize(
    "settings, tool, args, caller, want", [v[1:] for v in VERDICTS], ids=[v[0] for v in VERDICTS]
)
def test_each_verdict_says_what_decided_it(root, box, settings, tool, args, caller, want):
    policy = make_policy(root, settings)
    assert shown(policy.evaluate(box.tool_for(tool), args, context(root, caller))) == want


def test_a_hooks_allow_or_ask_names_the_hook_and_carries_its_reason(root, box):
    policy = make_policy(root, {"mode": "ask"})
    ctx = context(root)
    allowed = policy.evaluate(
        box.tool_for("weather"),
        {"city": "Paris"},
        ctx,
        hook=HookDecision("allow", "a known city", hook="guard"),
    )
    assert shown(allowed) == expect(
        "allow", "allowed by hook guard", reason="a known city", approved_by="hook:guard"
    )
    assert allowed.hook.hook == "guard"
    asked = policy.evaluate(
        box.tool_for("weather"),
        {"city": "Paris"},
        ctx,
        hook=HookDecision("ask", "check the city", hook="guard"),
    )
    assert shown(asked) == expect(
        "ask", "hook guard asks for it", reason="check the city", asks="hook"
    )
    # What check() does with them: runs the allowed call, refuses the asked one here.
    assert policy.check(
        box.tool_for("weather"), {"city": "Paris"}, ctx, hook=HookDecision("allow", hook="guard")
    ) == Decision(True, approved_by="hook:guard")


@pytest.mark.parametrize("mode", ["allowlist", "deny"])
@pytest.mark.parametrize(
    "tool, args, allow",
    [
        ("write_file", {"path": ".agents/config/agent.yaml"}, ["write_file(*.txt)"]),
        ("exec", cmd("echo x > .agents/config/agent.yaml"), ["exec(echo *)"]),
    ],
)
def test_in_a_refusing_mode_an_uncovered_change_of_the_agents_configuration_is_refused(
    root, box, mode, tool, args, allow
):
    # Not asked: the mode would refuse the call anyway, so no question is put.
    policy = make_policy(root, {"mode": mode, "allow": allow})
    verdict = policy.evaluate(box.tool_for(tool), args, context(root))
    assert (verdict.decision, verdict.why) == (
        "deny",
        f"policy.mode is {mode} and no rule in policy.allow covers it",
    )
    decision = policy.check(box.tool_for(tool), args, context(root))
    assert not decision.allowed and "no rule in policy.allow covers this call" in decision.reason


def test_yes_for_this_session_is_what_allows_the_repeated_call(root, box):
    asked = []

    def prompt(name, args):
        asked.append(args["command"])
        return "always" if len(asked) == 1 else "session"

    policy = make_policy(root, {}, interactive=True, prompt=prompt)
    policy.approver.tell = lambda message: None
    ctx = context(root)
    # No allow pattern covers a substitution: no rule is suggested, "always"
    # is not offered, and answered anyway it is this call only.
    command = cmd("echo $(id)")
    first = policy.check(box.tool_for("exec"), command, ctx)
    assert first._replace(waited_s=0.0) == Decision(True, approved_by="user")
    second = policy.check(box.tool_for("exec"), command, ctx)
    assert second._replace(waited_s=0.0) == Decision(True, approved_by="session")
    verdict = policy.evaluate(box.tool_for("exec"), command, ctx)
    assert shown(verdict) == expect(
        "allow", 'answered "yes for this session"', approved_by="session"
    )
    assert policy.check(box.tool_for("exec"), command, ctx) == Decision(True, approved_by="session")
    assert asked == ["echo $(id)"] * 2
    # Only that exact call: other arguments are asked about.
    other = policy.evaluate(box.tool_for("exec"), cmd("echo $(id -u)"), ctx)
    assert other.decision == "ask"


MISSING = [
    # A call without its main argument is judged as the empty command, the
    # empty URL, the workspace root: never as a word like "None".
    ({"deny": ["exec()"]}, "exec", "deny", "denied by policy rule `exec()`", None),
    ({"deny": ["exec(None)"]}, "exec", "ask", "no rule in policy.allow covers it", None),
    ({"deny": ["fetch()"]}, "fetch", "deny", "denied by policy rule `fetch()`", None),
    ({"deny": ["fetch(None)"]}, "fetch", "ask", "no rule in policy.allow covers it", None),
    ({"deny": ["grep(.)"]}, "grep", "deny", "denied by policy rule `grep(.)`", "."),
    (
        {"allow": ["write_file(.)"]},
        "write_file",
        "allow",
        "allowed by policy rule `write_file(.)`",
        None,
    ),
]


@pytest.mark.parametrize("settings, tool, decision, why, matched", MISSING)
def test_a_call_without_its_main_argument(root, box, settings, tool, decision, why, matched):
    policy = make_policy(root, settings)
    verdict = shown(policy.evaluate(box.tool_for(tool), {}, context(root)))
    assert (verdict["decision"], verdict["why"], verdict["matched"]) == (decision, why, matched)


def test_the_suggestion_for_a_call_without_a_url_is_the_tool(root, box):
    assert rule_for(box.tool_for("fetch"), {}, str(root)) == "fetch"
    assert rule_for(box.tool_for("fetch"), {"url": "https://a.example/x"}, str(root)) == (
        "fetch(domain:a.example)"
    )


@pytest.mark.parametrize(
    "deny, tool, args, refusal",
    [
        ("weather", "weather", {"city": "Paris"}, "denied by policy rule `weather`"),
        (
            "weather(city=Paris)",
            "weather",
            {"city": "Paris"},
            "denied by policy rule `weather(city=Paris)`",
        ),
        (
            "fetch(domain:evil.example)",
            "fetch",
            {"url": "https://api.evil.example/x"},
            "denied by policy rule `fetch(domain:evil.example)`",
        ),
        ("grep(.)", "grep", {}, "denied by policy rule `grep(.)` (.)"),
        ("exec(rm *)", "exec", cmd("rm  -r x"), "denied by policy rule `exec(rm *)` (rm  -r x)"),
    ],
)
def test_a_refusal_names_the_rule_and_only_what_it_matched(root, box, deny, tool, args, refusal):
    policy = make_policy(root, {"deny": [deny]})
    decision = policy.check(box.tool_for(tool), args, context(root))
    assert decision == Decision(False, refusal, code="DENIED", extra={"rule": deny})
    assert policy.screen(box.tool_for(tool), args, context(root)) == decision


def test_an_unparseable_command_still_meets_the_rule_its_words_match(root, box):
    # Extra blanks and an open quote: the words still read `git push`, so the
    # refusal names that rule, not merely the first exec deny rule.
    policy = make_policy(root, {"deny": ["exec(rm *)", "exec(git push*)"]})
    verdict = policy.evaluate(box.tool_for("exec"), cmd("git   push 'oops"), context(root))
    assert shown(verdict) == expect(
        "deny",
        "denied by policy rule `exec(git push*)`",
        rules=["exec(git push*)"],
        matched="git push 'oops",
    )


@pytest.fixture
def elsewhere(tmp_path):
    """A folder outside the policy's workspace, where a call is made from."""
    other = tmp_path / "other"
    other.mkdir()
    return other


def test_rules_and_suggestions_are_judged_from_the_calls_folder(root, box, elsewhere):
    policy = make_policy(root, {"mode": "allowlist"})
    tool = box.tool_for("write_file")
    inside = {"path": str(elsewhere / "a.txt")}
    ctx = context(elsewhere)
    assert rule_for(tool, inside, str(elsewhere)) == "write_file(./a.txt)"
    assert rule_for(tool, {"path": str(root / "b.txt")}, str(root)) == "write_file(./b.txt)"
    assert rule_for(tool, inside, str(root)) == f"write_file({(elsewhere / 'a.txt').as_posix()})"
    assert policy.evaluate(tool, inside, ctx).suggestion == "write_file(./a.txt)"
    assert policy.explain(tool, inside, ctx).suggestion == "write_file(./a.txt)"
    refused = policy.check(tool, inside, ctx)
    assert refused.extra == {"allow_rule": "write_file(./a.txt)"}


def test_the_screen_judges_from_the_calls_folder(root, box, elsewhere):
    policy = make_policy(root, {"deny": ["write_file(./a.txt)"]})
    tool = box.tool_for("write_file")
    there = {"path": str(elsewhere / "a.txt")}
    denied = policy.screen(tool, there, context(elsewhere))
    assert denied == Decision(
        False,
        f"denied by policy rule `write_file(./a.txt)` ({there['path']})",
        code="DENIED",
        extra={"rule": "write_file(./a.txt)"},
    )
    # From the workspace, that path is outside it: `./a.txt` does not name it.
    assert policy.screen(tool, there, context(root)) is None


def test_explain_judges_the_call_as_its_caller_makes_it(root, box):
    policy = make_policy(root, {"deny": ["exec(rm *)"]})
    exec_tool = box.tool_for("exec")
    person = policy.explain(exec_tool, cmd("make"), context(root, PERSON))
    assert (person.decision, person.approved_by) == ("allow", "person")
    assert [s.text for s in person.segments] == ["make"]
    model = policy.explain(exec_tool, cmd("make"), context(root))
    assert (model.decision, model.asks) == ("ask", "unmatched")


def test_a_rule_entry_is_read_with_its_reason_on_one_line():
    assert Rule.parse("exec(git *)").reason is None
    assert Rule.parse({"rule": "exec(git *)"}).reason is None
    assert Rule.parse({"rule": "exec(git *)", "reason": None}).reason is None
    assert Rule.parse({"rule": "exec(git *)", "reason": "  no\n  pushing "}).reason == "no pushing"
    assert Rule.parse({"rule": "exec(git *)", "reason": " \n "}).reason is None
    with pytest.raises(ConfigError) as bad:
        Rule.parse("exec(")
    assert str(bad.value) == "policy: invalid rule 'exec(': expected `tool` or `tool(pattern)`"
    with pytest.raises(ConfigError) as bad:
        Rule.parse({"rule": 7})
    assert str(bad.value) == 'policy: expected {rule: "tool(pattern)", reason: text}'


def test_a_rule_without_a_reason_shows_none_in_policy_check_json(root, box):
    policy = make_policy(root, {"deny": ["exec(rm *)"]})
    verdict = policy.evaluate(box.tool_for("exec"), cmd("rm x"), context(root))
    assert verdict_dict("exec", cmd("rm x"), verdict)["reason"] is None


def test_a_rule_may_name_a_tool_by_its_declared_alias(root):
    from mdagent.tools.toolbox import Toolbox

    box = Toolbox()
    box.add("forecast", description="f", aliases=["wx"], handler=dict, security="safe")
    policy = make_policy(root, {"mode": "full", "deny": ["wx"]})
    decision = policy.check(box.tool_for("forecast"), {}, context(root))
    assert not decision.allowed and "`wx`" in decision.reason


def test_a_lone_rule_string_is_a_one_item_list():
    from mdagent.safety.rules import parse_rules

    assert [str(r) for r in parse_rules("exec(ls *)", "policy.allow")] == ["exec(ls *)"]


def test_an_entry_holding_a_date_still_has_a_key():
    import datetime

    from mdagent.safety.rules import entry_key

    # YAML reads `reason: 2024-01-01` as a date: looking up where it was written must not crash.
    key = entry_key({"rule": "exec(rm *)", "reason": datetime.date(2024, 1, 1)})
    assert "2024-01-01" in key


def test_a_tool_without_aliases_is_named_by_its_name_alone():
    from types import SimpleNamespace

    from mdagent.safety.rules import tool_names

    assert tool_names(SimpleNamespace(name="forecast")) == ("forecast",)


@pytest.mark.parametrize(
    ("segment", "pattern"),
    [
        ("", ""),  # nothing written: nothing to widen
        ("git status --short", "git status:*"),
        ("/usr/bin/git status --short", "/usr/bin/git status:*"),
        ("> out", "> out"),
    ],
)
def test_prefix_pattern_of_a_segment(segment, pattern):
    from mdagent.safety.rules import prefix_pattern

    assert prefix_pattern(segment) == pattern


def test_a_write_the_sandbox_holds_read_only_is_refused_saying_who_may_change_it():
    from mdagent.safety.verdicts import Verdict, refusal

    tool = SimpleNamespace(name="exec")
    verdict = Verdict("deny", "it would change .agents/config/agent.yaml", protected="x.yaml")
    decision = refusal(tool, verdict, "ask", "settings.yaml")
    assert not decision.allowed and decision.code == "DENIED"
    assert decision.extra == {"protected": "x.yaml"}
    assert decision.reason == (
        "exec would change x.yaml, part of the agent's own configuration, which the sandbox "
        "keeps read-only for a model's commands (write_file and edit_file can change it, "
        "with a person's approval at a terminal)"
    )
