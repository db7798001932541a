"""Policy you can read, test and trust, through the real ``agent`` executable (issue 11).

- ``ask:`` rules beside allow and deny, asking in every mode, answered by --yes;
- reasons on rules, shown to the person and returned to the model;
- ``policy.tests`` run by ``agent check``, a failing one reported at its line;
- ``agent policy check`` / ``rules`` / ``revoke``;
- a tool denied without a pattern is not offered to the model;
- inline code (``python3 -c``) is not covered by an allow pattern.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from conftest import ask, command_skill, scripted_model, settings, tool_results, write
from test_terminal_e2e import PROMPT, Terminal

POLICY = """\
# The project's policy (a comment to keep)
policy:
  mode: ask
  allow:
    - "exec(git *)"        # everyday git
    - read_file
  ask:
    - {rule: "exec(git push*)", reason: "others see what you push"}
  deny:
    - {rule: "exec(rm *)", reason: "use trash instead"}
"""


def table_rows(text: str) -> list[list[str]]:
    """The rows of a plain-text table, split on runs of two or more blanks."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


# -- 4. agent policy check / rules / revoke --------------------------------------------


def test_policy_check_shows_decision_rule_layer_and_each_segment(workspace, run_agent):
    settings(workspace, POLICY)
    result = run_agent("policy", "check", "exec", "git status && rm -rf x")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "decision:  deny\n"
        "call:      exec git status && rm -rf x\n"
        "why:       denied by policy rule `exec(rm *)` (rm -rf x)\n"
        "rule:      exec(rm *)\n"
        "layer:     .agents/config/agent.yaml:10 (project layer)\n"
        "reason:    use trash instead\n"
        "segments:\n"
        "  VERDICT  SEGMENT     RULE         WHERE\n"
        "  allow    git status  exec(git *)  .agents/config/agent.yaml:5 (project layer)\n"
        "  deny     rm -rf x    exec(rm *)   .agents/config/agent.yaml:10 (project layer)\n"
    )


def test_policy_check_json_and_the_call_form(workspace, run_agent):
    settings(workspace, POLICY)
    result = run_agent("policy", "check", "--json", "bash(git push --force)")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["tool"] == "exec" and data["args"] == {"command": "git push --force"}
    assert data["decision"] == "ask" and data["rule"] == "exec(git push*)"
    assert data["reason"] == "others see what you push"
    assert data["source"]["line"] == 8 and data["source"]["layer"] == "project"
    assert Path(data["source"]["path"]) == workspace / ".agents" / "config" / "agent.yaml"
    assert [(s["segment"], s["decision"]) for s in data["segments"]] == [
        ("git push --force", "ask")
    ]


def test_policy_check_of_other_tools(workspace, run_agent):
    settings(
        workspace,
        "policy:\n  mode: allowlist\n  allow: ['fetch(domain:example.org)']\n"
        "  deny: ['read_file(**/.env)']\n",
    )
    read = run_agent("policy", "check", "read_file", "config/.env")
    assert "decision:  deny" in read.stdout and "read_file(**/.env)" in read.stdout
    fetch = run_agent("policy", "check", "--json", "fetch", "https://api.example.org/x")
    assert json.loads(fetch.stdout)["decision"] == "allow"
    other = run_agent("policy", "check", "--json", "fetch", "https://example.com/")
    data = json.loads(other.stdout)
    assert data["decision"] == "deny" and data["allow_rule"] == "fetch(domain:example.com)"
    unknown = run_agent("policy", "check", "nosuch", "x")
    assert unknown.returncode == 2 and unknown.stderr.startswith("agent: unknown tool: nosuch.")


# The same deny and ask rules written in every YAML spelling settings come in:
# the fast reader (mdagent.core.yamlfast) takes most of them, libyaml the rest, and
# a rule must never be lost or changed on the way.
RULES_SPELLED = {
    "block list": "policy:\n  deny:\n    - exec(rm *)\n  ask:\n    - exec(git push*)\n",
    "flow list": "policy:\n  deny: [exec(rm *)]\n  ask: [exec(git push*)]\n",
    "quoted": "policy:\n  deny: [\"exec(rm *)\"]\n  ask: ['exec(git push*)']\n",
    "quoted keys": '"policy":\n  "deny": ["exec(rm *)"]\n  \'ask\': [exec(git push*)]\n',
    "rule mappings": "policy:\n  deny:\n    - rule: exec(rm *)\n      reason: use trash\n"
    "  ask:\n    - {rule: 'exec(git push*)', reason: others see it}\n",
    "over lines": 'policy:\n  deny: [\n      "exec(rm *)",  # no rm\n    ]\n  ask: [\n    ]\n',
    "comments": "# settings\npolicy:   # the policy\n  deny:   # never\n"
    "    - exec(rm *)   # trailing\n  ask: [exec(git push*)] # ask\n",
    "escapes": 'policy:\n  deny: ["exec(r\\x6d *)"]\n  ask: ["exec(git\\u0020push*)"]\n',
    "crlf": "policy:\r\n  deny:\r\n    - exec(rm *)\r\n  ask: [exec(git push*)]\r\n",
    "anchor": "policy:\n  deny: [&rm 'exec(rm *)']\n  ask: [exec(git push*), *rm]\n",
    "byte-order mark": "\ufeffpolicy:\n  deny: [exec(rm *)]\n  ask: [exec(git push*)]\n",
}


@pytest.mark.parametrize("spelling", sorted(RULES_SPELLED))
def test_deny_rules_hold_in_every_yaml_spelling(workspace, run_agent, spelling):
    settings(workspace, RULES_SPELLED[spelling])
    denied = run_agent("policy", "check", "--json", "exec", "ls && rm -rf x")
    assert denied.returncode == 0, denied.stderr
    data = json.loads(denied.stdout)
    assert data["decision"] == "deny" and data["rule"] == "exec(rm *)", data
    for sneaky in ("/bin/rm -rf x", "sh -c 'rm -rf x'", "env rm -rf x"):
        verdict = json.loads(run_agent("policy", "check", "--json", "exec", sneaky).stdout)
        assert verdict["decision"] == "deny", (sneaky, verdict)
    if "ask: [\n" not in RULES_SPELLED[spelling]:
        asked = json.loads(run_agent("policy", "check", "--json", "exec", "git push").stdout)
        assert asked["decision"] == "ask" and asked["rule"] == "exec(git push*)", asked


def test_most_of_those_spellings_take_the_fast_reader():
    """So the test above attacks mdagent.core.yamlfast, not only libyaml."""
    from mdagent.core.yamlfast import NOT_SIMPLE, read

    fast = [
        name
        for name, text in RULES_SPELLED.items()
        if read(text.removeprefix("\ufeff")) is not NOT_SIMPLE
    ]
    assert len(fast) >= 8, fast
    assert "anchor" not in fast and "crlf" not in fast  # libyaml's


@pytest.mark.parametrize(
    "broken", ["policy:\n\t# tab\n  deny: [exec(rm *)]\n", "policy:\n  deny: [exec(rm *)\n"]
)
def test_settings_yaml_that_cannot_be_read_stops_the_check(workspace, run_agent, broken):
    """Never judged without the file's rules: one line naming the file, exit 2."""
    settings(workspace, broken)
    result = run_agent("policy", "check", "exec", "rm -rf x")
    assert result.returncode == 2 and "agent.yaml:" in result.stderr, result
    assert "invalid YAML" in result.stderr and "decision" not in result.stdout


def test_policy_rules_lists_every_rule_with_layer_and_line(workspace, run_agent, hermetic):
    settings(workspace, POLICY)
    write(hermetic["home"] / "config" / "agent.yaml", "policy:\n  deny: [fetch]\n")
    result = run_agent("policy", "rules")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "mode: ask  inline_eval: ask"
    rows = table_rows("\n".join(lines[1:]))
    assert rows[0] == ["KIND", "RULE", "LAYER", "WHERE", "REASON"]
    user_file = hermetic["home"] / "config" / "agent.yaml"
    assert rows[1:] == [
        ["deny", "exec(rm *)", "project", ".agents/config/agent.yaml:10", "use trash instead"],
        ["deny", "fetch", "user", f"{user_file}:2"],
        [
            "ask",
            "exec(git push*)",
            "project",
            ".agents/config/agent.yaml:8",
            "others see what you push",
        ],
        ["allow", "exec(git *)", "project", ".agents/config/agent.yaml:5"],
        ["allow", "read_file", "project", ".agents/config/agent.yaml:6"],
    ]
    data = json.loads(run_agent("policy", "rules", "--json").stdout)
    user_rule = {k: data[1][k] for k in ("kind", "rule", "layer", "line")}
    assert user_rule == {"kind": "deny", "rule": "fetch", "layer": "user", "line": 2}


def test_revoke_removes_what_always_saved_keeping_comments(workspace, run_agent):
    # A person answers "always" at a real terminal; then revokes the rule.
    target = settings(workspace, POLICY)
    with (
        scripted_model(("exec", {"command": "make lint"})) as server,
        Terminal(
            "--provider", "openai", "--base-url", server.url, "ask", "go", cwd=workspace
        ) as term,
    ):
        term.expect(re.escape(PROMPT))
        term.type("a")
        term.wait()
    assert "exec(make lint:*)" in yaml.safe_load(target.read_text())["policy"]["allow"]
    check = ("policy", "check", "--json", "exec", "make lint")
    assert json.loads(run_agent(*check).stdout)["decision"] == "allow"
    revoked = run_agent("policy", "revoke", "exec(make lint:*)")
    assert revoked.returncode == 0, revoked.stderr
    assert re.fullmatch(
        r"removed allow rule `exec\(make lint:\*\)` from \.agents/config/agent\.yaml:\d+\n",
        revoked.stdout,
    )
    assert target.read_text() == POLICY  # exactly as before "always", comments and all
    assert json.loads(run_agent(*check).stdout)["decision"] == "ask"


def test_revoke_of_a_rule_that_is_not_there_says_where_it_is(workspace, run_agent, hermetic):
    settings(workspace, POLICY)
    user_file = write(hermetic["home"] / "config" / "agent.yaml", "policy:\n  allow: [grep]\n")
    result = run_agent("policy", "revoke", "grep")
    assert result.returncode == 2
    assert result.stderr == (
        "agent: no allow rule `grep` in .agents/config/agent.yaml (see: agent policy rules); "
        f"it is in {user_file}:2: edit that file\n"
    )
    assert user_file.read_text() == "policy:\n  allow: [grep]\n"


# -- 3. policy.tests in agent check ---------------------------------------------------


def test_agent_check_runs_the_policy_tests_and_reports_a_failing_one_at_its_line(
    workspace, run_agent
):
    target = settings(
        workspace,
        POLICY
        + "  tests:\n"
        + "    - {call: 'exec(git push --force)', expect: ask}\n"
        + "    - {call: 'exec(git status && rm -rf x)', expect: deny}\n"
        + "    - {call: 'read_file(README.md)', expect: allow}\n"
        + "    - {call: 'exec(git push)', expect: allow}\n"
        + "    - {call: 'nosuch(x)', expect: deny}\n",
    )
    result = run_agent("check")
    assert result.returncode == 1
    failing, unknown = result.stdout.splitlines()
    assert failing == (
        f"{target}:15:7: error: policy test failed: `exec(git push)` is ask, expected allow "
        "(policy rule `exec(git push*)` asks for it, .agents/config/agent.yaml:8 (project layer))"
    )
    assert unknown.startswith(
        f"{target}:16:7: error: policy test `nosuch(x)`: unknown tool: nosuch. Available: "
    )
    assert "exec" in unknown.split("Available: ")[1].split(", ")
    assert "2 errors" in result.stderr and "3 of 5 policy tests passed" in result.stderr


def test_agent_check_passes_when_every_policy_test_does(workspace, run_agent):
    settings(
        workspace,
        POLICY + "  tests:\n    - {call: 'exec(rm -rf build)', expect: deny}\n"
        "    - {call: \"exec(python3 -c 'print(1)')\", expect: ask}\n",
    )
    result = run_agent("check")
    assert result.returncode == 0, result.stdout
    assert "0 errors" in result.stderr and "2 of 2 policy tests passed" in result.stderr


def test_a_malformed_policy_test_is_a_settings_error(workspace, run_agent):
    target = settings(workspace, "policy:\n  tests:\n    - {call: ls, expect: maybe}\n")
    result = run_agent("check")
    assert result.returncode == 1
    assert result.stdout.startswith(f"{target}:3:")
    assert "policy.tests.0.expect" in result.stdout


# -- 1 and 2. ask rules and reasons, as a model meets them ------------------------------


def test_an_ask_rule_asks_even_in_full_mode_and_yes_answers_it(workspace, run_agent):
    settings(
        workspace,
        "policy:\n  mode: full\n  ask:\n"
        "    - {rule: 'exec(touch pushed*)', reason: 'others see what you push'}\n",
    )
    calls = [("exec", {"command": "touch pushed"}), ("exec", {"command": "touch other"})]
    with scripted_model(*calls) as server:
        result = ask(run_agent, server)
        refused, allowed = tool_results(server)
    assert result.returncode == 0, result.stderr
    assert not refused["ok"] and refused["reason"] == "others see what you push"
    assert refused["error"].startswith(
        "exec needs approval: policy rule `exec(touch pushed*)` asks for it: "
        "others see what you push; no terminal to ask on; rerun with --yes"
    )
    shown = [line for line in result.stderr.splitlines() if "✗" in line]
    assert "others see what you push" in shown[0]  # the person sees it too
    assert allowed["ok"] and not (workspace / "pushed").exists()
    with scripted_model(calls[0]) as server:
        assert ask(run_agent, server, "--yes").returncode == 0
    assert (workspace / "pushed").exists()


def test_yes_never_answers_for_the_agents_own_configuration(workspace, run_agent):
    target = settings(workspace, "policy:\n  mode: full\n  ask: [write_file]\n")
    with scripted_model(
        ("write_file", {"path": ".agents/config/agent.yaml", "content": "policy: {}\n"})
    ) as server:
        ask(run_agent, server, "--yes")
        (result,) = tool_results(server)
    assert not result["ok"] and "agent's own configuration" in result["error"]
    assert "ask:" in target.read_text()


def test_at_a_terminal_an_ask_rule_shows_its_reason_and_offers_no_always(workspace):
    target = settings(
        workspace,
        "policy:\n  mode: full\n  ask:\n    - {rule: 'exec(touch *)', reason: 'new files need review'}\n",
    )
    with (
        scripted_model(("exec", {"command": "touch made"})) as server,
        Terminal(
            "--provider", "openai", "--base-url", server.url, "ask", "go", cwd=workspace
        ) as term,
    ):
        term.expect(
            re.escape("Asked because of policy rule `exec(touch *)`: new files need review")
        )
        term.expect(re.escape("Run it? [y]es / [t]ell / [n]o: "))
        term.type("y")
        term.wait()
    assert (workspace / "made").exists()
    assert "allow" not in yaml.safe_load(target.read_text())["policy"]


def test_a_deny_reason_reaches_the_model_and_the_person(workspace, run_agent):
    settings(workspace, POLICY)
    command_skill(workspace)
    with scripted_model(("exec", {"command": "rm -rf build"})) as server:
        ask(run_agent, server)
        (refused,) = tool_results(server)
    assert (
        refused["error"] == "denied by policy rule `exec(rm *)` (rm -rf build): use trash instead"
    )
    assert refused["reason"] == "use trash instead" and refused["rule"] == "exec(rm *)"
    typed = run_agent("/t", "rm -rf build")
    assert typed.returncode == 126
    assert typed.stderr.strip().endswith(": use trash instead")


# -- 5. denied tools are not offered --------------------------------------------------


def test_a_tool_denied_without_a_pattern_is_not_sent_to_the_model(workspace, run_agent):
    settings(
        workspace, "policy:\n  deny: [fetch, {rule: write, reason: read-only}, 'exec(rm *)']\n"
    )
    with scripted_model(("fetch", {"url": "http://127.0.0.1:9/"})) as server:
        ask(run_agent, server)
        sent = [t["function"]["name"] for t in server.requests[0]["json"]["tools"]]
        (result,) = tool_results(server)
    assert "fetch" not in sent and "write_file" not in sent
    assert "exec" in sent and "read_file" in sent  # a pattern denies some calls, not the tool
    assert result["error"].startswith("unknown tool: fetch. Available:")
    listed = json.loads(run_agent("tools", "--format", "openai").stdout)
    assert "fetch" not in [t["function"]["name"] for t in listed]


# -- 7. inline code ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ['python3 -c \'open("made", "w")\'', 'env X=1 python3 -c \'open("made", "w")\''],
)
def test_inline_code_asks_although_an_allow_rule_covers_the_program(workspace, run_agent, command):
    settings(workspace, "policy:\n  allow: ['exec(python3 *)']\n")
    with scripted_model(("exec", {"command": command})) as server:
        ask(run_agent, server)
        (refused,) = tool_results(server)
    assert not refused["ok"] and "`python3 -c` runs inline code" in refused["error"]
    assert not (workspace / "made").exists()
    settings(
        workspace, "policy:\n  allow: ['exec(python3 *)', 'exec(env *)']\n  inline_eval: allow\n"
    )
    with scripted_model(("exec", {"command": command})) as server:
        ask(run_agent, server)
        (ran,) = tool_results(server)
    assert ran["ok"], ran
    assert (workspace / "made").exists()


def test_inline_eval_allow_does_not_let_a_pattern_cover_a_shell_string(workspace, run_agent):
    settings(workspace, "policy:\n  allow: ['exec(bash *)']\n  inline_eval: allow\n")
    with scripted_model(("exec", {"command": "bash -c 'touch made'"})) as server:
        ask(run_agent, server)
        (refused,) = tool_results(server)
    assert not refused["ok"] and "needs approval" in refused["error"]
    assert not (workspace / "made").exists()
