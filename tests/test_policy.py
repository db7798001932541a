"""The policy: rules, modes, approval and rate limits, as a model or a person meets them."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
import yaml

from mdagent.core.calls import Decision, ToolContext
from mdagent.core.errors import ConfigError
from mdagent.runtime.approvers import TerminalApprover
from mdagent.safety.policy import Policy
from mdagent.safety.rules import Rule, rule_for
from mdagent.safety.shell.shellparse import try_parse
from mdagent.tools.toolbox import Toolbox

MODEL = "model"
PERSON = "person"


def make_toolbox() -> Toolbox:
    box = Toolbox()
    box.add(
        "exec",
        description="run",
        params={"command": {"type": "string"}},
        aliases=["bash", "sh"],
        handler=lambda a: {"stdout": a["command"]},
        security="dangerous",
    )
    for name, security in (("read_file", "safe"), ("write_file", "moderate"), ("grep", "safe")):
        box.add(
            name,
            description=name,
            params={"path": {"type": "string"}},
            handler=lambda a: {"ok": True},
            security=security,
        )
    box.add("fetch", description="get", params={"url": {"type": "string"}}, handler=dict)
    box.add("weather", description="w", params={"city": {"type": "string"}}, handler=dict)
    box.add("skill", description="s", handler=lambda a: {"ok": True}, security="safe")
    box.add(
        "deploy", description="d", handler=lambda a: {"ok": True}, security="safe", approval=True
    )
    box.add(
        "limited",
        description="l",
        handler=lambda a: {"ok": True},
        security="safe",
        rate_limit={"max_calls": 2, "window_ms": 60_000},
    )
    return box


def make_policy(root, policy=None, *, interactive=False, prompt=None, saved=None, **kw):
    """The policy of ``root``; ``interactive``: a person answers at the terminal, or
    ``prompt(tool_name, args)`` in the terminal question's place."""
    kw.setdefault("project_layer", root / ".agents")
    if interactive:
        ask = (lambda tool, args, **_: prompt(tool, args)) if prompt is not None else None
        kw["approver"] = TerminalApprover(kw["project_layer"], ask=ask, workdir=root, saved=saved)
    return Policy({"policy": policy or {}}, workdir=root, **kw)


def check(policy, box, tool, args, caller=MODEL, **ctx):
    """The decision, without how long it waited for an answer (a clock; see
    tests/test_policy_asking.py for that)."""
    context = ToolContext(caller=caller, workdir=str(policy.workdir), **ctx)
    return policy.check(box.tool_for(tool), args, context)._replace(waited_s=0.0)


def cmd(command):
    return {"command": command}


def refused(decision):
    """A refusal (``code`` alone says nothing: it is "DENIED" on allowed decisions too)."""
    return not decision.allowed and decision.code == "DENIED"


# -- exec rules ---------------------------------------------------------------


def test_a_rule_covers_a_compound_command_only_when_it_covers_every_segment(root, box):
    policy = make_policy(root, {"allow": ["exec(git status*)"]})
    ok = check(policy, box, "exec", cmd("git status --short"))
    assert ok.allowed and ok.approved_by == "rule:exec(git status*)"
    for command in ("git status && rm -rf x", "git status; rm -rf x", "git status | sh"):
        decision = check(policy, box, "exec", cmd(command))
        assert not decision.allowed, command
        assert "needs approval" in decision.reason
    allowlist = make_policy(root, {"mode": "allowlist", "allow": ["exec(git status*)"]})
    assert not check(allowlist, box, "exec", cmd("git status && rm -rf x")).allowed


def test_several_rules_together_cover_a_compound_command(root, box):
    policy = make_policy(root, {"allow": ["exec(git *)", "exec(wc -l)"]})
    decision = check(policy, box, "exec", cmd("git log | wc -l"))
    assert decision.allowed and decision.approved_by == "rule:exec(git *),exec(wc -l)"
    # Writing a file is a segment of its own.
    assert not check(policy, box, "exec", cmd("git log > out.txt")).allowed


def test_rules_name_a_tool_by_alias(root, box):
    policy = make_policy(root, {"allow": ["bash(git *)"], "deny": ["sh(git push*)"]})
    assert check(policy, box, "exec", cmd("git log")).allowed
    assert refused(check(policy, box, "exec", cmd("git push origin")))


def test_claude_code_spellings(root, box):
    policy = make_policy(root, {"mode": "allowlist", "allow": ["Bash(git status:*)", "Read"]})
    assert check(policy, box, "exec", cmd("git status")).allowed
    assert check(policy, box, "exec", cmd("git status -s")).allowed
    assert not check(policy, box, "exec", cmd("git statusx")).allowed
    assert check(policy, box, "read_file", {"path": "x"}).allowed


def test_deny_blocks_model_and_person_calls(root, box):
    policy = make_policy(root, {"mode": "full", "deny": ["exec(rm -rf *)"]})
    for caller in (MODEL, PERSON):
        decision = check(policy, box, "exec", cmd("rm -rf /tmp/x"), caller=caller)
        assert not decision.allowed and decision.code == "DENIED"
        assert "exec(rm -rf *)" in decision.reason
    for command in (
        "echo $(rm -rf /)",
        "ls && rm -rf /",
        "'rm' -rf /",
        "FOO=1 nohup rm -rf /",
        "bash -c 'rm -rf /'",
        "[[ -d x ]] && rm -rf /",
        "echo \\ #x; rm -rf /",  # unparseable: denied as not checkable
    ):
        assert not check(policy, box, "exec", cmd(command), caller=PERSON).allowed, command
    assert check(policy, box, "exec", cmd("echo 'rm -rf is dangerous'"), caller=PERSON).allowed


def test_a_person_runs_what_they_type(root, box):
    policy = make_policy(root, {"mode": "deny"})
    decision = check(policy, box, "exec", cmd("make clean"), caller=PERSON)
    assert decision.allowed and decision.approved_by == "person"


def test_unparseable_commands_are_never_allowed_by_a_pattern(root, box):
    policy = make_policy(root, {"mode": "allowlist", "allow": ["exec(echo *)", "exec(*)"]})
    assert check(policy, box, "exec", cmd("echo hi")).allowed
    assert not check(policy, box, "exec", cmd("echo ${x:-`rm -rf /`}")).allowed
    bare = make_policy(root, {"mode": "allowlist", "allow": ["exec"]})
    assert check(bare, box, "exec", cmd("echo ${x:-`rm -rf /`}")).allowed


def test_a_wildcard_free_rule_covers_the_exact_compound_command(root, box):
    policy = make_policy(root, {"mode": "allowlist", "allow": ["exec(make && make test)"]})
    assert check(policy, box, "exec", cmd("make && make test")).allowed
    assert not check(policy, box, "exec", cmd("make && make test && rm x")).allowed


def test_deny_rules_see_the_program_by_path_or_basename(root, box):
    policy = make_policy(root, {"mode": "full", "deny": ["exec(rm *)"]})
    for command in (
        "/bin/rm x",
        "../../usr/bin/rm x",
        "\\rm x",
        '"rm" x',
        "r''m x",
        "sudo /bin/rm x",
    ):
        decision = check(policy, box, "exec", cmd(command))
        assert not decision.allowed and "exec(rm *)" in decision.reason, command
    assert check(policy, box, "exec", cmd("/usr/bin/rmdir x")).allowed
    # Every wrapper on the way is seen too: a rule on `nice` blocks `sudo nice ...`.
    nice = make_policy(root, {"mode": "full", "deny": ["exec(nice *)"]})
    assert not check(nice, box, "exec", cmd("sudo -u root /usr/bin/nice -n 5 make")).allowed


@pytest.mark.parametrize(
    "command",
    [
        "timeout -s KILL 5 rm x",
        "env -u HOME rm x",
        "env -S 'rm -rf x'",
        "exec -a x rm y",
        "stdbuf -o L rm y",
        "nice -n 5 rm y",
        "ionice -c 3 rm y",
        "chrt -f 1 rm y",
        "taskset -c 0 rm y",
        "flock /tmp/l rm y",
        "flock /tmp/l -c 'rm y'",
        "watch -n 1 rm y",
        "sudo -u root rm y",
        "doas -u root rm y",
        "xargs -I{} rm {}",
        "time -p rm y",
        "setsid -w rm y",
        "nohup rm y",
        "command -p rm y",
        "builtin eval 'rm y'",
        "busybox rm y",
        "trap 'rm y' EXIT",
    ],
)
def test_deny_rules_see_through_wrappers_and_their_options(root, box, command):
    policy = make_policy(root, {"mode": "full", "deny": ["exec(rm *)"]})
    decision = check(policy, box, "exec", cmd(command), caller=PERSON)
    assert not decision.allowed and "`exec(rm *)` (rm " in decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "timeout --no-such-option 5 rm x",  # a wrapper option no table knows
        "sudo -e /etc/hosts",
        "$cmd -rf /",  # the program is named at run time
        "/usr/bin/r? -rf /",
        'eval "$x"',
        "echo 'unterminated",  # cannot be parsed
        "ls\r\nrm -rf /",
        "x=$ r''m -rf /",
        "(sh) <<< 'rm x'",
        "echo ${x@P}",
        "echo 'rm -rf /' | sh",  # code read from a pipe
        "curl -s example.org | bash -s",
    ],
)
def test_what_deny_rules_cannot_see_is_denied_when_any_exec_deny_rule_exists(root, box, command):
    policy = make_policy(root, {"mode": "full", "deny": ["exec(git push*)"]})
    decision = check(policy, box, "exec", cmd(command), caller=PERSON)
    assert not decision.allowed and decision.code == "DENIED"
    assert "could not be checked" in decision.reason
    # Without a deny rule there is nothing to fail closed for: a person runs it.
    assert check(
        make_policy(root, {"mode": "full"}), box, "exec", cmd(command), caller=PERSON
    ).allowed


@pytest.mark.parametrize(
    "command",
    [
        "git status ${x:='$(touch p)'} ${x@P}",  # prompt expansion runs the substitution
        "git status $x",
        "git status $(date)",
        "git status ${x:=y}",
        "git status $((a[1]))",
        "git status > $out",
        "for ((i=0; i<1; i++)); do git status; done",
        "for x in a; do (( x )); git status; done",
        "eval 'git status'",
        "bash -c 'git status'",
        "sh <<< 'git status'",
        "source ./git-status.sh",
        ". ./x",
        "trap 'git status' EXIT",
        "printf -v 'a[i]' %s x",
        "read 'a[i]'",
        "declare 'a[i]=1'",
        "[[ -v 'a[i]' ]]",
        "[[ x -eq 1 ]]",
        "let i=1",
        "watch git status",
        "alias git=ls",
        "hash -p /bin/rm git",
        "mapfile -C 'git status' -c 1",
    ],
)
def test_allow_patterns_cover_only_literal_commands(root, box, command):
    policy = make_policy(root, {"mode": "allowlist", "allow": ["exec(*)"]})
    assert not check(policy, box, "exec", cmd(command)).allowed
    bare = make_policy(root, {"mode": "allowlist", "allow": ["exec"]})
    assert check(bare, box, "exec", cmd(command)).allowed
    # The exact command, as "always" saves it, is the person's own approval of
    # that text; `${x@P}` is not even parsed, so only a bare rule allows it.
    exact_rule = rule_for(box.tool_for("exec"), cmd(command), str(root))
    exact = make_policy(root, {"mode": "allowlist", "allow": [exact_rule]})
    assert check(exact, box, "exec", cmd(command)).allowed == (try_parse(command) is not None)


def test_literal_commands_are_still_covered(root, box):
    policy = make_policy(root, {"mode": "allowlist", "allow": ["exec(*)"]})
    for command in (
        "git status --short",
        "ls *.py && wc -l *.py",
        "git log --format='%H %s'",
        "echo 'rm -rf $HOME'",
        "[[ -d .git ]] && git status",
        "[ 1 -eq 1 ]",
        "bash scripts/test.sh",
        "echo {a,b}.txt > out",
        "cat <<'EOF'\n$(x)\nEOF",
    ):
        assert check(policy, box, "exec", cmd(command)).allowed, command


# -- file rules ---------------------------------------------------------------


def test_read_file_env_deny(root, box):
    (root / "sub").mkdir()
    (root / ".env").write_text("SECRET=1")
    (root / "notes.txt").symlink_to(root / ".env")
    policy = make_policy(root, {"mode": "full", "deny": ["read_file(**/.env)"]})
    for path in (".env", "sub/.env", "./sub/../.env", str(root / ".env"), "notes.txt", ".ENV"):
        for caller in (MODEL, PERSON):
            decision = check(policy, box, "read_file", {"path": path}, caller=caller)
            assert not decision.allowed, (path, caller)
    assert check(policy, box, "read_file", {"path": "README.md"}).allowed
    assert check(policy, box, "read_file", {"path": ".envrc"}).allowed


def test_path_rules_are_gitignore_style(root, box):
    (root / "src").mkdir()
    (root / "src" / "escape").symlink_to(root / "secrets.txt")
    policy = make_policy(root, {"mode": "allowlist", "allow": ["write_file(src/**)"]})
    assert check(policy, box, "write_file", {"path": "src/a/b.py"}).allowed
    assert check(policy, box, "write_file", {"path": str(root / "src" / "x.py")}).allowed
    for path in ("src/../x.py", "other/src/x.py", "x.py", "src/escape", "/etc/passwd"):
        assert not check(policy, box, "write_file", {"path": path}).allowed, path
    anywhere = make_policy(root, {"mode": "allowlist", "allow": ["read_file(*.md)"]})
    assert check(anywhere, box, "read_file", {"path": "docs/deep/x.md"}).allowed
    absolute = make_policy(root, {"mode": "allowlist", "allow": ["read_file(/etc/**)"]})
    assert check(absolute, box, "read_file", {"path": "/etc/hosts"}).allowed
    folder = make_policy(root, {"mode": "allowlist", "allow": ["read_file(docs)"]})
    assert check(folder, box, "read_file", {"path": "docs/a/b.txt"}).allowed


# -- fetch and other tools ---------------------------------------------------------


def test_fetch_domain_rule(root, box):
    policy = make_policy(root, {"mode": "allowlist", "allow": ["fetch(domain:example.org)"]})
    for url in ("https://example.org/x", "http://api.example.org:8080/", "https://EXAMPLE.org./"):
        assert check(policy, box, "fetch", {"url": url}).allowed, url
    for url in (
        "https://example.org.evil.com/",
        "https://notexample.org/",
        "https://example.org@evil.com/",
        "not a url",
    ):
        assert not check(policy, box, "fetch", {"url": url}).allowed, url
    glob = make_policy(root, {"mode": "allowlist", "allow": ["fetch(https://api.github.com/*)"]})
    assert check(glob, box, "fetch", {"url": "https://api.github.com/repos"}).allowed
    deny = make_policy(root, {"mode": "full", "deny": ["fetch(domain:evil.example)"]})
    assert (
        check(deny, box, "fetch", {"url": "https://x.evil.example/"}, caller=PERSON).code
        == "DENIED"
    )


def test_other_tools_match_an_argument_or_the_json_of_all(root, box):
    policy = make_policy(
        root, {"mode": "allowlist", "allow": ["weather(city=Par*)", 'weather(*"city":"Oslo"*)']}
    )
    assert check(policy, box, "weather", {"city": "Paris"}).allowed
    assert check(policy, box, "weather", {"city": "Oslo"}).allowed
    assert not check(policy, box, "weather", {"city": "Rome"}).allowed


# -- modes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "tool", "args", "rules", "expected"),
    [
        ("ask", "read_file", {"path": "a"}, [], "safe"),
        ("ask", "write_file", {"path": "a"}, [], None),
        ("ask", "write_file", {"path": "a"}, ["write_file"], "rule:write_file"),
        ("allowlist", "read_file", {"path": "a"}, [], None),
        ("allowlist", "read_file", {"path": "a"}, ["read_file"], "rule:read_file"),
        ("deny", "read_file", {"path": "a"}, [], None),
        ("deny", "exec", cmd("ls"), ["exec(ls)"], "rule:exec(ls)"),
        ("full", "exec", cmd("rm -rf build"), [], "mode:full"),
        ("full", "deploy", {}, [], "mode:full"),
    ],
)
def test_modes(root, box, mode, tool, args, rules, expected):
    asked = []
    policy = make_policy(
        root, {"mode": mode, "allow": rules}, interactive=True, prompt=lambda *a: asked.append(a)
    )
    decision = check(policy, box, tool, args)
    assert decision.approved_by == expected
    assert decision.allowed is (expected is not None)
    if mode != "ask":
        assert asked == []  # only ask mode ever asks


def test_approval_true_asks_even_when_safe_or_allowed(root, box):
    policy = make_policy(root, {"allow": ["deploy"]})
    decision = check(policy, box, "deploy", {})
    assert not decision.allowed and "needs approval" in decision.reason
    assert "--yes" in decision.reason
    asked = []
    interactive = make_policy(
        root, {"allow": ["deploy"]}, interactive=True, prompt=lambda *a: asked.append(a) or "yes"
    )
    decision = check(interactive, box, "deploy", {})
    assert decision.allowed and decision.approved_by == "user" and asked == [("deploy", {})]


def test_yes_approves_what_would_be_asked(root, box):
    policy = make_policy(root, approve_all=True)
    decision = check(policy, box, "exec", cmd("make"))
    assert decision.allowed and decision.approved_by == "--yes"
    decision = check(make_policy(root), box, "exec", cmd("make"), approve_all=True)
    assert decision.allowed and decision.approved_by == "--yes"
    # --yes never overrides a deny rule.
    denied = make_policy(root, {"deny": ["exec(make*)"]}, approve_all=True)
    assert not check(denied, box, "exec", cmd("make")).allowed


def test_without_a_terminal_asking_means_denied_with_how_to_allow(root, box):
    decision = check(make_policy(root), box, "exec", cmd("git status"))
    assert not decision.allowed and decision.code == "DENIED"
    assert decision.reason == (
        "exec needs approval: no terminal to ask on; rerun with --yes or add "
        f"`exec(git status)` to policy.allow in {Path('.agents/config/agent.yaml')}"
    )
    result = make_toolbox()
    result.policy = make_policy(root)
    out = result.run("exec", cmd("git status"), ToolContext(caller=MODEL, workdir=str(root)))
    assert not out.ok and out.data["code"] == "DENIED"
    assert out.data["allow_rule"] == "exec(git status)"


def test_declining(root, box):
    policy = make_policy(root, interactive=True, prompt=lambda *a: "no")
    decision = check(policy, box, "exec", cmd("make"))
    assert not decision.allowed and "declined" in decision.reason


def test_always_saves_the_rule_keeping_the_file_and_stops_asking(root, box):
    settings_file = root / ".agents" / "config" / "agent.yaml"
    settings_file.parent.mkdir()
    original = (
        "# project settings\n"
        "model:\n"
        "  name: llama3  # the small one\n"
        "policy:\n"
        "  mode: ask\n"
        "  allow:\n"
        "    - read_file   # reading is fine\n"
        '  deny: ["exec(rm -rf *)"]\n'
    )
    settings_file.write_text(original)
    asked = []

    def prompt(tool, args):
        asked.append(args)
        return "always"

    policy = make_policy(root, interactive=True, prompt=prompt)
    first = check(policy, box, "exec", cmd("ls *.py && wc -l *.py"))
    assert first.allowed and first.approved_by == "always"
    second = check(policy, box, "exec", cmd("ls *.py && wc -l *.py"))
    assert second.allowed and len(asked) == 1

    text = settings_file.read_text()
    assert (
        "# project settings" in text and "# the small one" in text and "# reading is fine" in text
    )
    saved = yaml.safe_load(text)
    assert saved["model"] == {"name": "llama3"}
    assert saved["policy"]["deny"] == ["exec(rm -rf *)"]
    # **Changed**: a prefix rule for each part of the command, never the literal line.
    assert saved["policy"]["allow"] == ["read_file", "exec(ls:*)", "exec(wc:*)"]

    # A new process reads the rule: the same call runs, a different one still asks.
    fresh = Policy(saved, workdir=root)
    assert check(fresh, box, "exec", cmd("ls *.py && wc -l *.py")).allowed
    assert not check(fresh, box, "exec", cmd("ls a.py; rm -rf /; x.py && wc -l b.py")).allowed


def test_always_for_a_file_saves_its_path(root, box):
    policy = make_policy(root, interactive=True, prompt=lambda *a: "always")
    assert check(policy, box, "write_file", {"path": "src/new[1].py"}).allowed
    saved = yaml.safe_load((root / ".agents" / "config" / "agent.yaml").read_text())
    assert saved == {"policy": {"allow": ["write_file(./src/new\\[1].py)"]}}
    fresh = Policy(saved, workdir=root)
    assert check(fresh, box, "write_file", {"path": "src/new[1].py"}).allowed
    assert not check(fresh, box, "write_file", {"path": "src/new1.py"}).allowed


def test_one_question_at_a_time_and_always_is_seen_by_waiting_calls(root, box):
    active, overlaps, asked = [], [], []

    def prompt(tool, args):
        active.append(1)
        if len(active) > 1:
            overlaps.append(1)
        time.sleep(0.05)
        asked.append(args)
        active.pop()
        return "always"

    policy = make_policy(root, interactive=True, prompt=prompt)
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(check(policy, box, "exec", cmd("make"))))
        for _ in range(5)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == [] and len(asked) == 1
    assert all(d.allowed for d in results)


# -- rate limits -------------------------------------------------------------------


def test_rate_limit(root, box, tmp_path):
    from mdagent.store.store import Store

    policy = make_policy(root, store=Store(tmp_path / "db.sqlite"))
    assert check(policy, box, "limited", {}).allowed
    assert check(policy, box, "limited", {}, caller=PERSON).allowed
    decision = check(policy, box, "limited", {})
    assert not decision.allowed and decision.code == "RATE_LIMITED"
    assert decision.reason.startswith("rate limited: ")
    assert decision.extra["retryable"] is True
    assert 0 < decision.extra["retry_after_ms"] <= 60_000


def test_a_rate_limit_without_a_store_refuses_the_call_and_opens_nothing(root, box, hermetic):
    # The policy decides on what it is given: the runtime hands it the store.
    policy = make_policy(root)
    assert check(policy, box, "read_file", {"path": "x"}).allowed
    refused = check(policy, box, "limited", {})
    assert not refused.allowed and refused.code == "UNRECORDED"
    assert "no store of rate-limit windows" in refused.reason
    assert not (hermetic["state"] / "mdagent.db").exists()


def test_the_runtimes_policy_counts_rate_limits_in_the_state_dir(root, box, hermetic):
    from mdagent.runtime.runtime import Runtime

    (root / ".agents").mkdir(exist_ok=True)
    policy = Runtime(cwd=root).policy()
    assert not (hermetic["state"] / "mdagent.db").exists()  # nothing touched until needed
    check(policy, box, "read_file", {"path": "x"})
    assert not (hermetic["state"] / "mdagent.db").exists()
    check(policy, box, "limited", {})
    assert (hermetic["state"] / "mdagent.db").exists()


# -- settings -------------------------------------------------------------------


def test_bad_settings_are_config_errors(root):
    with pytest.raises(ConfigError, match="policy.mode"):
        make_policy(root, {"mode": "yolo"})
    with pytest.raises(ConfigError, match="invalid rule"):
        make_policy(root, {"allow": ["exec(git"]})


def test_rule_parsing():
    assert Rule.parse("exec(echo $(date))") == Rule("exec(echo $(date))", "exec", "echo $(date)")
    assert Rule.parse(" read_file ").pattern is None
    assert Rule.parse("mcp_*").names(["mcp_github_search"])


def test_policy_paths_have_one_reader(root):
    """Extra roots are the workspace's business; the policy keeps no second copy."""
    from mdagent.safety.workspace import roots_from

    (root / "extra").mkdir()
    policy = make_policy(root, {"paths": ["extra"]})
    assert not hasattr(policy, "paths")
    ctx = ToolContext(workdir=str(root), settings={"policy": {"paths": ["extra"]}})
    assert roots_from(ctx)[1] == ((root / "extra").resolve(),)


def test_names_for_and_names_match():
    from mdagent.safety.rules import names_for, names_match

    assert names_for("exec") == ("exec", "bash", "sh", "shell", "execute")
    assert names_for("wc", ["count"]) == ("wc", "count")
    assert names_match("BASH", names_for("exec")) and names_match("read*", names_for("read_file"))
    assert not names_match("bash", names_for("read_file"))


def test_policy_module_imports_nothing_heavy():
    import subprocess
    import sys

    code = (
        "import sys, mdagent.safety.policy; "
        "print(sorted(m for m in ('tree_sitter', 'sqlite3', '_sqlite3', 'yaml', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert os.environ.get("AGENT_STATE_DIR")  # the hermetic fixture is in place


# -- issue 9: anchored "always" rules and files a model may not change unasked ----------


def test_a_leading_dot_slash_anchors_a_path_rule_at_the_workspace_root(root, box):
    anchored = make_policy(root, {"mode": "allowlist", "allow": ["write_file(./agent.yaml)"]})
    assert check(anchored, box, "write_file", {"path": "agent.yaml"}).allowed
    assert check(anchored, box, "write_file", {"path": str(root / "agent.yaml")}).allowed
    for other in ("sub/agent.yaml", ".agents/config/agent.yaml", "/tmp/agent.yaml"):
        assert not check(anchored, box, "write_file", {"path": other}).allowed
    folder = make_policy(root, {"mode": "allowlist", "allow": ["read_file(./docs/)"]})
    assert check(folder, box, "read_file", {"path": "docs/a/b.md"}).allowed
    assert not check(folder, box, "read_file", {"path": "x/docs/b.md"}).allowed
    absolute = make_policy(root, {"mode": "allowlist", "allow": [f"read_file({root}/*.md)"]})
    assert check(absolute, box, "read_file", {"path": "a.md"}).allowed


def test_always_for_a_file_saves_an_anchored_rule_and_says_so(root, box):
    told = []
    policy = make_policy(root, interactive=True, prompt=lambda *a: "always")
    policy.approver.tell = told.append
    assert check(policy, box, "write_file", {"path": "agent.yaml"}).allowed
    saved = yaml.safe_load((root / ".agents" / "config" / "agent.yaml").read_text())
    assert saved == {"policy": {"allow": ["write_file(./agent.yaml)"]}}
    assert told == [
        f"added allow rule `write_file(./agent.yaml)` to {Path('.agents/config/agent.yaml')}"
    ]
    asked = []
    policy.approver.ask_terminal = lambda tool, args, **_: asked.append(args) or "no"
    assert not check(policy, box, "write_file", {"path": "sub/agent.yaml"}).allowed
    assert asked == [{"path": "sub/agent.yaml"}]


@pytest.mark.parametrize("mode", ["ask", "full", "allowlist"])
def test_a_model_never_writes_a_layer_file_unasked(root, box, mode):
    policy = make_policy(root, {"mode": mode, "allow": ["write_file", "exec"]}, approve_all=True)
    for tool, args in [
        ("write_file", {"path": ".agents/config/agent.yaml"}),
        ("exec", cmd("echo x > .agents/config/agent.yaml")),
        ("exec", cmd("cd .agents && sed -i s/a/b/ config/agent.yaml")),
    ]:
        decision = check(policy, box, tool, args, approve_all=True)
        assert not decision.allowed, (tool, args)
        assert "agent's own configuration" in decision.reason
        assert decision.extra["protected"].startswith(".agents")
    assert check(policy, box, "write_file", {"path": "src/a.py"}).allowed
    # A person's typed command is the person's.
    assert check(policy, box, "exec", cmd("echo x > .agents/x"), caller=PERSON).allowed


def test_at_a_terminal_a_layer_file_is_asked_each_time_and_never_saved(root, box):
    answers = iter(["always", "yes"])
    asked = []

    def prompt(tool, args):
        asked.append(args)
        return next(answers)

    policy = make_policy(root, {"mode": "full"}, interactive=True, prompt=prompt)
    call = {"path": ".agents/config/agent.yaml"}
    assert check(policy, box, "write_file", call).approved_by == "user"
    assert check(policy, box, "write_file", call).approved_by == "user"
    assert len(asked) == 2
    assert not (root / ".agents" / "config" / "agent.yaml").exists()


# -- issue 11: ask rules, reasons, inline code, verdicts ----------------------------


@pytest.mark.parametrize("mode", ["ask", "allowlist", "deny", "full"])
def test_an_ask_rule_asks_in_every_mode_even_where_an_allow_rule_covers(root, box, mode):
    asked = []
    policy = make_policy(
        root,
        {"mode": mode, "allow": ["exec(git *)"], "ask": ["exec(git push*)"]},
        interactive=True,
        prompt=lambda *a: asked.append(a) or "yes",
    )
    decision = check(policy, box, "exec", cmd("git push --force"))
    assert decision.allowed and decision.approved_by == "user"
    assert asked == [("exec", {"command": "git push --force"})]
    assert check(policy, box, "exec", cmd("git log")).allowed and len(asked) == 1


def test_an_ask_rule_without_a_terminal_is_a_refusal_that_yes_answers(root, box):
    rules = {"mode": "full", "ask": [{"rule": "exec(git push*)", "reason": "others see it"}]}
    refused = check(make_policy(root, rules), box, "exec", cmd("git status && git push"))
    assert not refused.allowed and refused.code == "DENIED"
    assert refused.reason == (
        "exec needs approval: policy rule `exec(git push*)` asks for it: others see it; "
        "no terminal to ask on; rerun with --yes (allow rules do not cover a call an ask "
        "rule matches)"
    )
    assert refused.extra == {
        "needs_approval": True,
        "rule": "exec(git push*)",
        "reason": "others see it",
    }
    yes = check(make_policy(root, rules, approve_all=True), box, "exec", cmd("git push"))
    assert yes.allowed and yes.approved_by == "--yes"


def test_ask_rules_see_through_wrappers_and_unparseable_commands(root, box):
    policy = make_policy(root, {"mode": "full", "ask": ["exec(git push*)"]})
    for command in ("sudo /usr/bin/git push", "ls; git push", "echo \\ #x; ls"):
        assert not check(policy, box, "exec", cmd(command)).allowed, command
    assert check(policy, box, "exec", cmd("git log")).allowed


def test_ask_rules_do_not_apply_to_what_a_person_types(root, box):
    policy = make_policy(root, {"ask": ["exec(git push*)"]})
    assert check(policy, box, "exec", cmd("git push"), caller=PERSON).allowed


def test_an_ask_question_offers_no_always(root, box, monkeypatch):
    offered = []

    def fake_ask(tool_name, args, *, cancel=None, always=True, note=None, workdir=None, **_):
        offered.append((always, note))
        return "yes"

    monkeypatch.setattr("mdagent.ui.approval.ask_terminal", fake_ask)
    policy = make_policy(
        root, {"ask": [{"rule": "write_file(*.lock)", "reason": "lock files"}]}, interactive=True
    )
    assert check(policy, box, "write_file", {"path": "x.lock"}).allowed
    assert offered == [(False, "Asked because of policy rule `write_file(*.lock)`: lock files")]
    assert not (root / ".agents" / "config" / "agent.yaml").exists()


def test_a_deny_reason_is_in_the_refusal(root, box):
    policy = make_policy(root, {"deny": [{"rule": "exec(rm *)", "reason": "use trash instead"}]})
    decision = check(policy, box, "exec", cmd("rm -rf x"), caller=PERSON)
    assert decision.reason == "denied by policy rule `exec(rm *)` (rm -rf x): use trash instead"
    assert decision.extra == {"rule": "exec(rm *)", "reason": "use trash instead"}
    assert decision.to_result().data["reason"] == "use trash instead"


@pytest.mark.parametrize(
    "entry",
    [{"rule": 3}, {"reason": "x"}, {"rule": "exec(ls)", "reason": 5}, "exec(ls", {"rule": "a b"}],
)
def test_bad_rule_entries(entry):
    with pytest.raises(ConfigError, match=r"^policy.ask"):
        Rule.parse(entry, "policy.ask[0]")


@pytest.mark.parametrize(
    "command",
    [
        "python3 -c 'print(1)'",
        "python -Ic 'x'",
        "sudo -u root /usr/bin/python3.12 -c x",
        "env X=1 nice node -e 1",
        "node --eval=1",
        "perl -lne 'print'",
        "ruby -r json -e 1",
        "php -r 'echo 1;'",
        "deno eval 1",
        "bun -e 1",
        "lua -e x",
        "Rscript -e 1",
        "osascript -e 'x'",
        "git log | python3 -c 'import sys'",
    ],
)
def test_inline_code_is_not_covered_by_an_allow_pattern(root, box, command):
    rules = ["exec(git *)", "exec(python*)", "exec(*)"]
    policy = make_policy(root, {"allow": rules})
    decision = check(policy, box, "exec", cmd(command))
    assert not decision.allowed and "runs inline code" in decision.reason, command
    assert "policy.inline_eval: ask" in decision.reason
    loose = make_policy(root, {"allow": rules, "inline_eval": "allow"})
    assert check(loose, box, "exec", cmd(command)).allowed, command


def test_inline_eval_allow_never_covers_shell_strings(root, box):
    policy = make_policy(root, {"allow": ["exec(*)"], "inline_eval": "allow"})
    for command in ("bash -c 'ls'", "eval ls", "sh -c ls"):
        assert not check(policy, box, "exec", cmd(command)).allowed, command


def test_scripts_and_exact_always_rules_are_not_inline_code(root, box):
    policy = make_policy(root, {"allow": ["exec(python3 *)", "exec(python3 -c 'print(1)')"]})
    assert check(policy, box, "exec", cmd("python3 tool.py -c x")).allowed
    assert check(policy, box, "exec", cmd("python3 -m pytest -c setup.cfg")).allowed
    # What "always" saves (the exact command) still covers exactly that command.
    assert check(policy, box, "exec", cmd("python3 -c 'print(1)'")).allowed
    assert not check(policy, box, "exec", cmd("python3 -c 'print(2)'")).allowed


def test_inline_eval_is_checked(root):
    with pytest.raises(ConfigError, match="policy.inline_eval: 'sometimes'"):
        make_policy(root, {"inline_eval": "sometimes"})


def test_explain_gives_each_segment_its_own_verdict(root, box):
    policy = make_policy(
        root,
        {
            "allow": ["exec(git status*)", "exec(python3 *)"],
            "ask": ["exec(git push*)"],
            "deny": ["exec(rm *)"],
        },
    )
    verdict = policy.explain(
        box.tool_for("exec"), cmd("git status && rm -rf x; git push; python3 -c 1; make")
    )
    assert verdict.decision == "deny" and verdict.rule.text == "exec(rm *)"
    assert [(s.text, s.decision) for s in verdict.segments] == [
        ("git status", "allow"),
        ("rm -rf x", "deny"),
        ("git push", "ask"),
        ("python3 -c 1", "ask"),
        ("make", "ask"),
    ]
    assert verdict.segments[3].why.startswith("`python3 -c` runs inline code")
    assert verdict.segments[4].why == "no rule in policy.allow covers it"
    allowlist = make_policy(root, {"mode": "allowlist"})
    (only,) = allowlist.explain(box.tool_for("exec"), cmd("make")).segments
    assert only.decision == "deny"


def test_evaluate_asks_nobody(root, box):
    def never(*a):
        raise AssertionError("asked")

    policy = make_policy(root, interactive=True, prompt=never)
    verdict = policy.evaluate(box.tool_for("write_file"), {"path": "src/x.py"})
    assert verdict.decision == "ask" and verdict.asks == "unmatched"
    assert verdict.suggestion.startswith("write_file(./src/x.py")  # the rule "always" saves
    assert (
        policy.evaluate(box.tool_for("read_file"), {"path": "x"}).why == "read_file is a safe tool"
    )


def test_rules_carry_where_they_were_written(tmp_path, root, box):
    from mdagent.declarations.declarations import read_settings

    settings_file = tmp_path / "agent.yaml"
    settings_file.write_text(
        "# mine\npolicy:\n  allow:\n    - read_file\n    - {rule: 'exec(ls)', reason: fine}\n"
        "  deny: [fetch, 'exec(rm *)']\n  tests:\n    - {call: fetch, expect: deny}\n"
    )
    settings, sources, problems = read_settings(settings_file, "project")
    assert problems == []
    assert [(s["section"], s["line"], s["col"]) for s in sources] == [
        ("deny", 6, 10),
        ("deny", 6, 17),
        ("allow", 4, 7),
        ("allow", 5, 7),
        ("tests", 8, 7),
    ]
    policy = Policy(settings, workdir=root, sources=sources)
    ls = policy.allow[1]
    assert (ls.text, ls.reason, ls.source.line, ls.source.layer) == (
        "exec(ls)",
        "fine",
        5,
        "project",
    )
    assert str(ls.source) == f"{settings_file}:5"


def test_a_tool_denied_without_a_pattern_is_withheld(box):
    from mdagent.safety.policy import withheld

    hidden = withheld(
        {"policy": {"deny": ["Fetch", "exec(rm *)", {"rule": "read", "reason": "x"}]}}
    )
    assert [t.name for t in box if hidden(t)] == ["read_file", "fetch"]


def test_a_malformed_rule_or_hook_run_says_what_is_expected(tmp_path):
    from mdagent.declarations.declarations import read_settings

    target = tmp_path / "agent.yaml"
    target.write_text(
        "policy:\n  ask:\n    - 5\n    - {rule: 'exec(ls)', why: x}\n"
        "hooks:\n  stop:\n    - {run: 7}\n"
    )
    settings, sources, problems = read_settings(target)
    assert (settings, sources) == ({}, [])  # a broken file contributes nothing
    assert [(p.line, p.col, p.message) for p in problems] == [
        (
            3,
            7,
            'policy.ask.0: expected a rule: "tool(pattern)", or {rule: "tool(pattern)", reason: text}',
        ),
        (
            4,
            7,
            'policy.ask.1: expected a rule: "tool(pattern)", or {rule: "tool(pattern)", reason: text}',
        ),
        (
            7,
            8,
            "hooks.stop.0.run: expected a command (run with sh -c) or a list of words (run without a shell)",
        ),
    ]


# -- decisions the mutation tests found unguarded (docs/mutation.md) -----------------


def test_file_rules_in_folder_trailing_slash_and_exact_forms(root, box):
    (root / "docs" / "deep").mkdir(parents=True)
    exact = make_policy(root, {"mode": "allowlist", "allow": ["read_file(./docs)"]})
    # An anchored literal allow rule names that path only, not what the folder holds.
    assert check(exact, box, "read_file", {"path": "docs"}).allowed
    assert not check(exact, box, "read_file", {"path": "docs/a.md"}).allowed
    for rule in ("read_file(./docs/)", "read_file(./docs/**)", "read_file(docs/)"):
        folder = make_policy(root, {"mode": "allowlist", "allow": [rule]})
        assert check(folder, box, "read_file", {"path": "docs/deep/a.md"}).allowed, rule
        assert not check(folder, box, "read_file", {"path": "src/a.md"}).allowed, rule
    # A deny rule always covers what a folder holds, anchored and literal or not.
    for rule in ("read_file(./docs)", "read_file(docs)", f"read_file({root}/docs)"):
        deny = make_policy(root, {"mode": "full", "deny": [rule]})
        for path in ("docs/deep/a.md", str(root / "docs" / "a.md"), "./docs"):
            assert refused(check(deny, box, "read_file", {"path": path})), (rule, path)
        assert check(deny, box, "read_file", {"path": "src/docs.md"}).allowed, rule
    # An escaped wildcard is a literal character: the rule stays exact.
    star = make_policy(root, {"mode": "allowlist", "allow": [r"read_file(./a\*b)"]})
    assert check(star, box, "read_file", {"path": "a*b"}).allowed
    assert not check(star, box, "read_file", {"path": "a*b/c"}).allowed
    assert not check(star, box, "read_file", {"path": "axb"}).allowed


def test_the_workspace_root_rule(root, box):
    whole = make_policy(root, {"mode": "allowlist", "allow": ["read_file(./)"]})
    assert check(whole, box, "read_file", {"path": "a/b.txt"}).allowed
    assert not check(whole, box, "read_file", {"path": "/etc/hosts"}).allowed
    dot = make_policy(root, {"mode": "allowlist", "allow": ["read_file(.)"]})
    assert check(dot, box, "read_file", {"path": "."}).allowed
    assert not check(dot, box, "read_file", {"path": "a/b.txt"}).allowed  # exact: the folder
    deny = make_policy(root, {"mode": "full", "deny": ["write_file(.)"]})
    assert refused(check(deny, box, "write_file", {"path": "a/b.txt"}))
    assert check(deny, box, "write_file", {"path": "/tmp/x.txt"}).allowed


def test_home_rules(root, box, tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    deny = make_policy(root, {"mode": "full", "deny": ["read_file(~/.ssh)", "write_file(~)"]})
    for path in ("~/.ssh/id_rsa", str(home / ".ssh" / "id_rsa"), "~/.ssh"):
        assert refused(check(deny, box, "read_file", {"path": path})), path
    assert check(deny, box, "read_file", {"path": "~/notes.txt"}).allowed
    assert refused(check(deny, box, "write_file", {"path": "~/x/y.txt"}))
    allow = make_policy(root, {"mode": "allowlist", "allow": ["read_file(~/notes.txt)"]})
    assert check(allow, box, "read_file", {"path": "~/notes.txt"}).allowed
    assert check(allow, box, "read_file", {"path": str(home / "notes.txt")}).allowed
    assert not check(allow, box, "read_file", {"path": "~/other.txt"}).allowed
    assert not check(allow, box, "read_file", {"path": "notes.txt"}).allowed


def test_path_rules_judged_from_another_working_folder(root, box, tmp_path):
    (root / "sub").mkdir()
    policy = make_policy(
        root,
        {
            "mode": "allowlist",
            "allow": ["read_file(./docs/**)", "read_file(*.md)"],
            "deny": ["read_file(.env)", "read_file(/etc/shadow)"],
        },
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ctx = {"workdir": str(elsewhere)}

    def run(path, workdir):
        return policy.check(
            box.tool_for("read_file"), {"path": path}, ToolContext(caller=MODEL, workdir=workdir)
        )

    # Anchored rules are relative to the call's workspace, not the policy's.
    assert run("docs/a.txt", str(elsewhere)).allowed
    assert not run(str(root / "docs" / "a.txt"), str(elsewhere)).allowed
    # Outside the call's workspace a relative allow rule covers nothing…
    assert not run(str(root / "x.md"), str(elsewhere)).allowed
    # …but a relative deny rule still matches at any depth, and absolute ones anywhere.
    assert refused(run(str(root / "sub" / ".env"), str(elsewhere)))
    assert refused(run("/etc/shadow", ctx["workdir"]))
    assert refused(run("../elsewhere/.env", str(root)))


def test_absolute_path_rules_match_the_path_and_its_folders(root, box):
    (root / "data").mkdir()
    deny = make_policy(root, {"mode": "full", "deny": [f"write_file({root}/data)"]})
    assert refused(check(deny, box, "write_file", {"path": "data/x/y.csv"}))
    assert check(deny, box, "write_file", {"path": "data2/y.csv"}).allowed
    exact = make_policy(root, {"mode": "allowlist", "allow": [f"write_file({root}/data/a.csv)"]})
    assert check(exact, box, "write_file", {"path": "data/a.csv"}).allowed
    assert not check(exact, box, "write_file", {"path": "data/a.csv/b"}).allowed


def test_deny_path_rules_ignore_case_and_allow_rules_do_not(root, box):
    deny = make_policy(root, {"mode": "full", "deny": ["read_file(*.pem)", "read_file(./Keys/)"]})
    for path in ("a/KEY.PEM", "keys/x", "KEYS/x"):
        assert refused(check(deny, box, "read_file", {"path": path})), path
    allow = make_policy(root, {"mode": "allowlist", "allow": ["read_file(./docs/**)"]})
    assert not check(allow, box, "read_file", {"path": "DOCS/a.md"}).allowed


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://127.1/",
        "http://0x7f.0.0.1/",
        "http://0177.0.0.1/",
        "http://2130706433/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://127.0.0.1./",
        "http://%31%32%37.0.0.1/",
    ],
)
def test_a_domain_rule_on_an_address_sees_every_spelling(root, box, url):
    deny = make_policy(root, {"mode": "full", "deny": ["fetch(domain:127.0.0.1)"]})
    assert refused(check(deny, box, "fetch", {"url": url})), url
    allow = make_policy(root, {"mode": "allowlist", "allow": ["fetch(domain:127.1)"]})
    assert check(allow, box, "fetch", {"url": url}).allowed, url


def test_domain_rules_on_ipv6_and_names(root, box):
    v6 = make_policy(root, {"mode": "full", "deny": ["fetch(domain:fe80::1)"]})
    for url in ("http://[fe80::1]/", "http://[fe80:0::1%25eth0]/", "http://[FE80::0:1]:8/"):
        assert refused(check(v6, box, "fetch", {"url": url})), url
    assert check(v6, box, "fetch", {"url": "http://[fe80::2]/"}).allowed
    loop = make_policy(root, {"mode": "full", "deny": ["fetch(domain:[::1])"]})
    assert refused(check(loop, box, "fetch", {"url": "http://[0:0::1]/"}))
    # An address matches only itself: never as the tail of a name or a longer address.
    ip = make_policy(root, {"mode": "allowlist", "allow": ["fetch(domain:10.0.0.1)"]})
    for url in ("http://evil.10.0.0.1/", "http://110.0.0.1/", "http://10.0.0.12/"):
        assert not check(ip, box, "fetch", {"url": url}).allowed, url
    tail = make_policy(root, {"mode": "allowlist", "allow": ["fetch(domain:0.0.1)"]})
    assert not check(tail, box, "fetch", {"url": "http://127.0.0.1/"}).allowed
    # Names: case, trailing dots and internationalised spellings are one host.
    name = make_policy(root, {"mode": "full", "deny": ["fetch(domain: Example.ORG. )"]})
    for url in ("https://EXAMPLE.org/", "https://a.b.example.org./x"):
        assert refused(check(name, box, "fetch", {"url": url})), url
    assert check(name, box, "fetch", {"url": "https://example.org.evil/"}).allowed
    idn = make_policy(root, {"mode": "full", "deny": ["fetch(domain:bücher.example)"]})
    for url in ("https://xn--bcher-kva.example/", "https://www.BÜCHER.example/"):
        assert refused(check(idn, box, "fetch", {"url": url})), url
    empty = make_policy(root, {"mode": "allowlist", "allow": ["fetch(domain:.)"]})
    assert not check(empty, box, "fetch", {"url": "https://example.org/"}).allowed


def test_a_url_httpx_refuses_is_judged_by_the_host_a_lenient_client_would_use(root, box):
    deny = make_policy(root, {"mode": "full", "deny": ["fetch(domain:evil.example)"]})
    for url in ("http://evil.example:99999/", "http://evil.example/\x00"):
        assert refused(check(deny, box, "fetch", {"url": url})), url
    allow = make_policy(root, {"mode": "allowlist", "allow": ["fetch(domain:example.org)"]})
    assert not check(allow, box, "fetch", {"url": "http://[::1/"}).allowed


def test_keyed_argument_rules_match_any_value_type(root, box):
    box.add("scale", description="s", params={"n": {"type": "integer"}}, handler=dict)
    policy = make_policy(
        root,
        {"mode": "allowlist", "allow": ["scale(n=1*)", "weather(city=*\nx)", "weather(when=*)"]},
    )
    assert check(policy, box, "scale", {"n": 12}).allowed
    assert not check(policy, box, "scale", {"n": 21}).allowed
    # `=` patterns span lines; an argument the call lacks falls back to the JSON.
    assert check(policy, box, "weather", {"city": "a\nx"}).allowed
    assert not check(policy, box, "weather", {"city": "Oslo"}).allowed
    lower = make_policy(root, {"mode": "allowlist", "allow": ["weather(city=Oslo)"]})
    assert check(lower, box, "weather", {"city": "Oslo"}).allowed
    assert not check(lower, box, "weather", {"city": "oslo"}).allowed
    dated = make_policy(root, {"mode": "allowlist", "allow": ["scale(n=*)"]})
    assert check(dated, box, "scale", {"n": Path("x")}).allowed  # any JSON-able value


def test_explain_says_why_for_each_segment(root, box):
    from mdagent.safety.verdicts import SegmentVerdict

    rules = {
        "allow": ["exec(git status*)", "exec(ls)"],
        "ask": ["exec(git push*)"],
        "deny": ["exec(rm *)"],
    }
    policy = make_policy(root, rules)
    deny, ask, allow = (policy.deny[0], policy.ask[0], policy.allow[0])
    got = policy.explain(box.tool_for("exec"), cmd("rm x; git push; git status; echo $(id)"))
    assert got.segments == (
        SegmentVerdict("rm x", "deny", "policy rule `exec(rm *)`", deny),
        SegmentVerdict("git push", "ask", "policy rule `exec(git push*)`", ask),
        SegmentVerdict("git status", "allow", "policy rule `exec(git status*)`", allow),
        SegmentVerdict("echo $(id)", "ask", "`$(id)` is computed at run time"),
        SegmentVerdict("id", "ask", "no rule in policy.allow covers it"),
    )
    full = make_policy(root, {"mode": "full", "allow": ["exec"]})
    (only,) = full.explain(box.tool_for("exec"), cmd("make")).segments
    assert only == SegmentVerdict("make", "allow", "policy.mode is full")
    bare = make_policy(root, {"mode": "allowlist", "allow": ["exec(git *)", "bash"]})
    (only,) = bare.explain(box.tool_for("exec"), cmd("make")).segments
    assert only == SegmentVerdict("make", "allow", "policy rule `bash`", bare.allow[1])
    strict = make_policy(root, {"mode": "deny"})
    (only,) = strict.explain(box.tool_for("exec"), cmd("make")).segments
    assert only == SegmentVerdict("make", "deny", "no rule in policy.allow covers it")


def test_explain_a_segment_that_cannot_be_checked_under_a_rule(root, box):

    policy = make_policy(root, {"deny": ["exec(rm *)", "exec(shred *)"], "ask": ["exec(dd *)"]})
    got = policy.explain(box.tool_for("exec"), cmd('"$prog" x'))
    assert got.decision == "deny"
    (seg,) = got.segments
    assert seg.text == '"$prog" x' and seg.decision == "deny"
    assert seg.why.startswith("could not be checked (") and seg.rule is policy.deny[0]
    asking = make_policy(root, {"ask": ["exec(dd *)", "exec(cp *)"]})
    (seg,) = asking.explain(box.tool_for("exec"), cmd('"$prog" x')).segments
    assert seg.decision == "ask" and seg.rule is asking.ask[0]
    assert seg.why.startswith("could not be checked (")


PROTECTED = ".agents/config/agent.yaml (the project layer)"
PROTECTED_REFUSAL = (
    f"write_file would change {PROTECTED}, part of the agent's own configuration: a model may"
    " do that only with a person's approval at a terminal (allow rules, policy.mode, hooks,"
    ' "always" and --yes do not cover it)'
)


def test_a_layer_file_without_a_terminal_is_refused_saying_why(root, box):
    policy = make_policy(root, {"mode": "full"}, approve_all=True)
    decision = check(policy, box, "write_file", {"path": ".agents/config/agent.yaml"})
    assert decision == Decision(
        False,
        PROTECTED_REFUSAL,
        code="DENIED",
        extra={"protected": PROTECTED, "needs_approval": True},
    )


@pytest.mark.parametrize(
    ("answer", "allowed"), [("y", True), ("yes", True), ("always", True), ("n", False)]
)
def test_a_layer_file_at_a_terminal_is_the_persons_call_each_time(root, box, answer, allowed):
    asked = []
    policy = make_policy(root, interactive=True, prompt=lambda *a: asked.append(a) or answer)
    args = {"path": ".agents/config/agent.yaml"}
    for _ in range(2):  # "always" is never saved for these: asked again
        decision = check(policy, box, "write_file", args)
        if allowed:
            assert decision == Decision(True, approved_by="user")
        else:
            assert decision == Decision(
                False, "the user declined this write_file call; do not retry it", code="DENIED"
            )
    assert asked == [("write_file", args)] * 2
    assert not (root / ".agents" / "config" / "agent.yaml").exists()


def test_the_terminal_question_says_what_is_asked_and_offers_always_only_where_it_saves(
    root, box, monkeypatch
):
    import mdagent.ui.approval

    questions = []

    def ask_terminal(tool_name, args, *, cancel=None, always=True, note=None, workdir=None, **_):
        questions.append((tool_name, args, always, note))
        return "n"

    monkeypatch.setattr(mdagent.ui.approval, "ask_terminal", ask_terminal)
    rules = {"ask": [{"rule": "exec(git push*)", "reason": "shared"}], "allow": []}
    policy = make_policy(root, rules, interactive=True)
    check(policy, box, "write_file", {"path": ".agents/config/agent.yaml"})
    check(policy, box, "exec", cmd("git push"))
    check(policy, box, "exec", cmd("make"))
    check(policy, box, "deploy", {})
    assert questions == [
        (
            "write_file",
            {"path": ".agents/config/agent.yaml"},
            False,
            f"This changes {PROTECTED}, part of the agent's own configuration.",
        ),
        (
            "exec",
            {"command": "git push"},
            False,
            "Asked because of policy rule `exec(git push*)`: shared",
        ),
        ("exec", {"command": "make"}, True, None),
        ("deploy", {}, True, None),
    ]


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (
            "input closed",
            "the user closed the approval prompt for this {tool} call; do not retry it",
        ),
        ("no terminal", None),
    ],
)
def test_a_closed_prompt_is_a_refusal_never_a_yes(root, box, message, reason):
    def closed(*a):
        raise EOFError(message)

    policy = make_policy(root, interactive=True, prompt=closed)
    for tool, args in (
        ("exec", cmd("make")),
        ("write_file", {"path": ".agents/config/agent.yaml"}),
    ):
        decision = check(policy, box, tool, args)
        assert not decision.allowed and decision.code == "DENIED"
        if reason:
            assert decision.reason == reason.format(tool=tool)
        else:
            assert "no terminal to ask on" in decision.reason or "would change" in decision.reason


def test_refusals_without_a_terminal_say_how_to_allow(root, box):
    policy = make_policy(
        root, {"ask": [{"rule": "exec(git push*)", "reason": "shared"}, "exec(git tag*)"]}
    )
    got = check(policy, box, "exec", cmd("git push"))
    assert got == Decision(
        False,
        "exec needs approval: policy rule `exec(git push*)` asks for it: shared; no terminal to"
        " ask on; rerun with --yes (allow rules do not cover a call an ask rule matches)",
        code="DENIED",
        extra={"needs_approval": True, "rule": "exec(git push*)", "reason": "shared"},
    )
    got = check(policy, box, "exec", cmd("git tag v1"))
    assert got.reason.startswith("exec needs approval: policy rule `exec(git tag*)` asks for it;")
    assert got.extra == {"needs_approval": True, "rule": "exec(git tag*)"}
    assert check(policy, box, "deploy", {}) == Decision(
        False,
        "deploy needs approval: no terminal to ask on; rerun with --yes (it is declared"
        " `approval: true`, so allow rules do not skip the question)",
        code="DENIED",
        extra={"needs_approval": True, "allow_rule": "deploy"},
    )
    assert check(policy, box, "exec", cmd("make")) == Decision(
        False,
        "exec needs approval: no terminal to ask on; rerun with --yes or add `exec(make)` to"
        " policy.allow in .agents/config/agent.yaml",
        code="DENIED",
        extra={"needs_approval": True, "allow_rule": "exec(make)"},
    )
    computed = check(policy, box, "exec", cmd("echo $(id)"))
    assert computed.reason.startswith(
        "exec needs approval (`$(id)` is computed at run time): no terminal to ask on;"
    )


def test_a_hook_that_asks(root, box):
    from types import SimpleNamespace

    hook = SimpleNamespace(decision="ask", hook="guard", reason="check first")
    policy = make_policy(root, {"mode": "full"})
    ctx = ToolContext(caller=MODEL, workdir=str(root))
    got = policy.check(box.tool_for("exec"), cmd("make"), ctx, hook=hook)
    assert got == Decision(
        False,
        "exec needs approval: hook guard asks for it: check first; no terminal to ask on;"
        " rerun with --yes",
        code="DENIED",
        extra={"needs_approval": True, "reason": "check first"},
    )
    asked = []
    interactive = make_policy(root, {"mode": "full"}, interactive=True, prompt=lambda *a: "always")
    interactive.approver.ask_terminal = lambda *a, **_: asked.append(a) or "always"
    got = interactive.check(box.tool_for("exec"), cmd("make"), ctx, hook=hook)
    assert got._replace(waited_s=0.0) == Decision(
        True, approved_by="user"
    )  # "always" saves nothing for a hook
    assert not (root / ".agents" / "config" / "agent.yaml").exists()
    yes = ToolContext(caller=MODEL, workdir=str(root), approve_all=True)
    assert policy.check(box.tool_for("exec"), cmd("make"), yes, hook=hook) == Decision(
        True, approved_by="--yes"
    )


def test_the_screen_is_the_deny_rules_refusal(root, box):
    policy = make_policy(root, {"deny": [{"rule": "exec(rm *)", "reason": "no deleting"}]})
    ctx = ToolContext(caller=PERSON, workdir=str(root))
    got = policy.screen(box.tool_for("exec"), cmd("rm -rf x"), ctx)
    assert got == Decision(
        False,
        "denied by policy rule `exec(rm *)` (rm -rf x): no deleting",
        code="DENIED",
        extra={"rule": "exec(rm *)", "reason": "no deleting"},
    )
    assert policy.screen(box.tool_for("exec"), cmd("ls"), ctx) is None
    long = "rm " + "x" * 200
    shown = policy.screen(box.tool_for("exec"), cmd(long), ctx).reason
    assert f"({long[:119]}…)" in shown


def test_withheld_reads_any_policy_shape_and_names_bad_rules(box):
    from mdagent.safety.policy import withheld

    assert not any(withheld({"policy": ["fetch"]})(t) for t in box)
    assert not any(withheld({})(t) for t in box)
    with pytest.raises(ConfigError, match=r"^policy\.deny"):
        withheld({"policy": {"deny": 5}})


def test_a_relative_allow_rule_never_covers_a_path_outside_the_workspace(root, box):
    for rule in ("read_file(*)", "read_file(**)"):
        policy = make_policy(root, {"mode": "allowlist", "allow": [rule]})
        assert check(policy, box, "read_file", {"path": "a.txt"}).allowed, rule
        assert not check(policy, box, "read_file", {"path": "/etc/hosts"}).allowed, rule


def test_rules_judged_with_the_filesystem_root_as_workspace(box):
    policy = make_policy(Path("/"), {"mode": "allowlist", "allow": ["read_file(./etc/**)"]})
    assert check(policy, box, "read_file", {"path": "/etc/hosts"}).allowed
    assert check(policy, box, "read_file", {"path": "etc/hosts"}).allowed
    assert not check(policy, box, "read_file", {"path": "/usr/x"}).allowed


def test_a_deny_rule_naming_a_program_by_path_sees_it_behind_a_wrapper(root, box):
    policy = make_policy(root, {"mode": "full", "deny": ["exec(/bin/rm *)"]})
    for command in ("/bin/rm x", "sudo /bin/rm x", "nice -n 1 /bin/rm x"):
        assert refused(check(policy, box, "exec", cmd(command))), command
    assert check(policy, box, "exec", cmd("rm x")).allowed


def test_keyed_rules_name_arguments_in_any_case_and_lists(root, box):
    box.add("region", description="r", params={"Region": {"type": "string"}}, handler=dict)
    box.add("tags", description="t", params={"tags": {"type": "array"}}, handler=dict)
    policy = make_policy(
        root, {"mode": "allowlist", "allow": ["region(Region=EU)", 'tags(tags=["a", *)']}
    )
    assert check(policy, box, "region", {"Region": "EU"}).allowed
    assert not check(policy, box, "region", {"Region": "US"}).allowed
    assert check(policy, box, "tags", {"tags": ["a", "b"]}).allowed
    assert not check(policy, box, "tags", {"tags": ["b", "a"]}).allowed


@pytest.mark.parametrize(("typed", "saved"), [(" A ", True), ("Always", True), ("Y", False)])
def test_answers_are_read_in_any_case_and_short_form(root, box, typed, saved):
    policy = make_policy(root, interactive=True, prompt=lambda *a: typed)
    policy.approver.tell = lambda message: None
    assert check(policy, box, "exec", cmd("make")).allowed
    rules = root / ".agents" / "config" / "agent.yaml"
    assert rules.exists() is saved


def test_the_terminal_question_gets_the_calls_cancel_event(root, box, monkeypatch):
    import threading as th

    import mdagent.ui.approval

    seen = []

    def ask_terminal(tool_name, args, *, cancel=None, always=True, note=None, workdir=None, **_):
        seen.append(cancel)
        return "no"

    monkeypatch.setattr(mdagent.ui.approval, "ask_terminal", ask_terminal)
    policy = make_policy(root, interactive=True)
    event = th.Event()
    check(policy, box, "exec", cmd("make"), cancel=event)
    assert seen == [event]


def test_what_the_registry_declares_is_protected_from_a_models_writes(root, box, tmp_path):
    from types import SimpleNamespace

    (root / "guard.sh").write_text("#!/bin/sh\n")
    (root / "handlers").mkdir()
    (root / "handlers" / "mod.py").write_text("def run(): pass\n")
    elsewhere = tmp_path / "team-layer"
    elsewhere.mkdir()
    registry = SimpleNamespace(
        layers=[SimpleNamespace(kind="team", path=elsewhere)],
        settings={"hooks": {"before": [{"run": "./guard.sh"}]}},
        tools={"t": SimpleNamespace(implementation={"handler": "handlers/mod.py:run"})},
    )
    policy = make_policy(root, {"mode": "full"})
    plain = ToolContext(caller=MODEL, workdir=str(root))
    declared = plain.replace(registry=registry)
    for path, what in (
        (str(elsewhere / "x.yaml"), "a layer folder (team)"),
        ("guard.sh", "a hook script"),
        ("handlers/mod.py", "a handler module"),
    ):
        args = {"path": path}
        assert policy.check(box.tool_for("write_file"), args, plain).allowed, path
        refused = policy.check(box.tool_for("write_file"), args, declared)
        assert not refused.allowed and what in refused.reason, (path, refused.reason)
    # The call's own settings name the hooks when it has them.
    other = SimpleNamespace(layers=[], settings=registry.settings, tools={})
    own = plain.replace(registry=other, settings={"hooks": {}})
    assert policy.check(box.tool_for("write_file"), {"path": "guard.sh"}, own).allowed


def test_the_rule_always_would_save_names_exactly_this_call(root, box, tmp_path):
    (root / "real").mkdir()
    (root / "link").symlink_to(root / "real")

    def exact(tool, args, workdir=str(root)):
        return rule_for(tool, args, workdir)

    assert exact(box.tool_for("exec"), cmd("  ls *.py  ")) == "exec(ls [*].py)"
    assert exact(box.tool_for("exec"), {}) == "exec()"
    assert exact(box.tool_for("write_file"), {"path": "a/b[1].txt"}) == r"write_file(./a/b\[1].txt)"
    assert exact(box.tool_for("write_file"), {"path": "."}) == "write_file(.)"
    assert exact(box.tool_for("write_file"), {"path": "/etc/x"}) == "write_file(/etc/x)"
    # The path as written (through the link), relative to the call's own folder.
    assert exact(box.tool_for("read_file"), {"path": "link/f"}) == "read_file(./link/f)"
    other = tmp_path / "other"
    assert exact(box.tool_for("read_file"), {"path": "f"}, str(other)) == "read_file(./f)"
    assert exact(box.tool_for("read_file"), {}) == "read_file"
    assert exact(box.tool_for("weather"), {"path": "x"}) == "weather"
    assert exact(box.tool_for("fetch"), {"url": "https://A.example.org/x"}) == (
        "fetch(domain:a.example.org)"
    )
    assert exact(box.tool_for("fetch"), {"url": ""}) == "fetch"


def test_an_allowlist_refusal_says_which_rule_would_allow_it(root, box):
    policy = make_policy(root, {"mode": "allowlist"})
    assert check(policy, box, "exec", cmd("make")) == Decision(
        False,
        "exec is not allowed: policy.mode is allowlist and no rule in policy.allow covers this"
        " call; add `exec(make)` to policy.allow in .agents/config/agent.yaml",
        code="DENIED",
        extra={"allow_rule": "exec(make)"},
    )


def test_always_that_cannot_be_saved_allows_for_the_session_and_warns(root, box, caplog):
    (root / ".agents" / "config").write_text("not a folder")
    told = []
    policy = make_policy(root, interactive=True, prompt=lambda *a: "always")
    policy.approver.tell = told.append
    with caplog.at_level("WARNING"):
        assert check(policy, box, "exec", cmd("make")).allowed
        assert check(policy, box, "exec", cmd("make")).allowed  # not asked again
    assert len(told) == 1 and told[0].startswith("warning: could not add `exec(make:*)` to ")
    assert told[0].endswith("; allowed for this session only")
    assert [r.text for r in policy.allow].count("exec(make:*)") == 1
    assert "could not save allow rule 'exec(make:*)': " in caplog.text
    layerless = make_policy(root, interactive=True, prompt=lambda *a: "always", project_layer=None)
    layerless.approver.tell = told.append
    assert check(layerless, box, "exec", cmd("make test")).allowed
    assert told[-1] == (
        "note: no project layer (.agents/); `exec(make test:*)` is allowed for this session only"
    )


def test_a_domain_rule_written_with_a_leading_dot_covers_the_domain(root, box):
    deny = make_policy(root, {"mode": "full", "deny": ["fetch(domain:.evil.example)"]})
    for url in ("https://evil.example/", "https://x.evil.example/"):
        assert refused(check(deny, box, "fetch", {"url": url})), url
    assert check(deny, box, "fetch", {"url": "https://notevil.example/"}).allowed
    box_domain = make_policy(root, {"mode": "full", "deny": ["fetch(domain:mail.box)"]})
    assert refused(check(box_domain, box, "fetch", {"url": "https://mail.box/"}))
    assert check(box_domain, box, "fetch", {"url": "https://mail.bo/"}).allowed


def test_json_rules_see_the_arguments_sorted_compact_and_unescaped(root, box):
    box.add("multi", description="m", params={"a": {}, "b": {}}, handler=dict)
    policy = make_policy(root, {"mode": "allowlist", "allow": ['multi(*"a":"x","b":"Zürich"*)']})
    assert check(policy, box, "multi", {"b": "Zürich", "a": "x"}).allowed
    assert not check(policy, box, "multi", {"b": "Zurich", "a": "x"}).allowed


def test_a_context_without_approve_all_is_not_a_yes(root, box):
    from types import SimpleNamespace

    policy = make_policy(root)
    ctx = SimpleNamespace(caller=MODEL, workdir=str(root))
    decision = policy.check(box.tool_for("exec"), cmd("make"), ctx)
    assert not decision.allowed and "no terminal to ask on" in decision.reason


def test_the_screen_judges_file_rules_on_the_calls_arguments_from_its_folder(root, box):
    # The screen runs before the hooks: a deny rule on a file must hold there
    # too, the path read from the folder the call runs in.
    (root / "sub").mkdir()
    policy = make_policy(root, {"deny": [f"read_file({root.as_posix()}/sub/key)"]})
    inside = ToolContext(caller=MODEL, workdir=str(root / "sub"))
    denied = policy.screen(box.tool_for("read_file"), {"path": "key"}, inside)
    assert denied is not None and not denied.allowed and denied.code == "DENIED"
    top = ToolContext(caller=MODEL, workdir=str(root))
    assert policy.screen(box.tool_for("read_file"), {"path": "key"}, top) is None
    assert policy.screen(box.tool_for("read_file"), {"path": "sub/key"}, top) is not None


@pytest.mark.parametrize(
    "deny",
    ["exec(rm *)", {"rule": "exec(rm *)"}, {"rule": "exec(rm *)", "reason": " \n "}],
)
def test_a_rule_without_a_reason_refuses_saying_only_the_rule(root, box, deny):
    policy = make_policy(root, {"deny": [deny]})
    ctx = ToolContext(caller=PERSON, workdir=str(root))
    assert policy.screen(box.tool_for("exec"), cmd("rm -rf x"), ctx) == Decision(
        False,
        "denied by policy rule `exec(rm *)` (rm -rf x)",
        code="DENIED",
        extra={"rule": "exec(rm *)"},
    )


class _NoCaller:
    """A context that does not say who calls (a plugin's own object, a future caller)."""

    def __init__(self, workdir):
        self.workdir = str(workdir)
        self.settings = {}


def test_a_context_that_does_not_say_who_calls_is_judged_as_a_model(root, box):
    # Fail closed: not knowing the caller never grants a person's trust.
    policy = make_policy(root)
    unknown = policy.check(box.tool_for("exec"), cmd("rm -rf x"), _NoCaller(root))
    assert not unknown.allowed
    person = check(policy, box, "exec", cmd("rm -rf x"), caller=PERSON)
    assert person.allowed and person.approved_by == "person"


def test_without_a_caller_option_values_and_the_sandbox_are_a_models():
    from mdagent.tools.implementations import allowed_options
    from mdagent.tools.process import sandbox_for

    assert allowed_options(_NoCaller("."), frozenset({"flags"})) == frozenset({"flags"})
    # A person's call skips the sandbox (None); one without a caller is not skipped.
    person = ToolContext(caller=PERSON, workdir=".")
    assert sandbox_for(person, {}, Path("."), ()) is None
    try:
        confined = sandbox_for(_NoCaller("."), {}, Path("."), ())
    except Exception as exc:  # no Landlock here: refusing is not skipping either
        confined = exc
    assert confined is not None


@pytest.mark.parametrize(
    ("command", "denied"),
    [
        ("setpriv rm x", True),
        ("strace -f -o /dev/null rm -rf x", True),
        ("/lib64/ld-linux-x86-64.so.2 /bin/rm x", True),
        ("script -qc 'rm x' /dev/null", True),
        ("su -c 'rm x'", True),
        ("git rm x", True),  # the program named anywhere: fail closed
        ("git commit -m 'rm old files'", False),  # a message, not a command line
        ("strace -e 'trace=open file' rm x", True),  # text before the program: read on
        ("setpriv /bin/rm a/b c", True),  # the program's own basename, not an argument's
        ("setpriv rm$IFS x", True),  # $IFS splits `rm` off: still rm
        ("setpriv /bin/rm$IFS -rf x", True),  # and by path: the stem's basename
        ("setpriv ./rm$IFS x", True),
        ("setpriv /bin/rm`true` x", True),
        ("echo 'rm -rf is dangerous'", False),
        ("ls -l", False),
    ],
)
def test_a_deny_rule_meets_its_program_named_by_a_wrapper_it_does_not_know(
    root, box, command, denied
):
    policy = make_policy(root, {"mode": "full", "deny": ["exec(rm *)"]})
    decision = check(policy, box, "exec", cmd(command))
    assert refused(decision) is denied, (command, decision.reason)


@pytest.mark.parametrize(
    ("command", "plain"),
    [
        ("NODE_OPTIONS='--import=data:text/javascript,x' node a.js", "node a.js"),
        ("env PERL5OPT='-Mstrict;system(1)' perl x.pl", "perl x.pl"),
        ("PYTHONINSPECT=1 python3 tool.py", "python3 tool.py"),
    ],
)
def test_variables_that_give_an_interpreter_code_are_inline_code(root, box, command, plain):
    # `exec(*)` is a pattern: it covers the plain command, never inline code.
    policy = make_policy(root, {"mode": "allowlist", "allow": ["exec(*)"]})
    assert not check(policy, box, "exec", cmd(command)).allowed, command
    assert check(policy, box, "exec", cmd(plain)).allowed, plain


@pytest.mark.parametrize("command", ["setpriv /bin/rm", "setpriv rm$IFS", "setpriv /bin/rm$IFS"])
def test_an_exact_deny_rule_meets_the_program_named_alone_by_path(root, box, command):
    policy = make_policy(root, {"mode": "full", "deny": ["exec(rm)"]})
    assert refused(check(policy, box, "exec", cmd(command))), command
    assert refused(check(policy, box, "exec", cmd(command), caller=PERSON)), command


@pytest.mark.parametrize(
    "command", ["setpriv $x 'rm -rf /'", "setpriv `x` -f rm", "setpriv rm$IFS", "a $b"]
)
def test_deny_candidates_are_trimmed_command_strings(command):
    # A rule is matched against each candidate as a whole: a leading or
    # trailing blank would make `exec(rm)` miss and `exec(?rm *)` hit.
    from mdagent.safety.views import exec_view

    candidates = exec_view(command).deny_candidates()
    assert candidates and all(c == c.strip() for c in candidates), candidates


def test_an_assignment_after_the_program_is_an_argument_not_a_variable(root, box):
    policy = make_policy(root, {"mode": "allowlist", "allow": ["exec(*)"]})
    assert check(policy, box, "exec", cmd("node tool.js NODE_OPTIONS=--import=data:x")).allowed


# -- git pointed at another repository (issue 30) --------------------------------------


@pytest.fixture
def git_root(root):
    """The policy tests' project as a git repository holding a bare one a model wrote."""
    import subprocess

    subprocess.run(["git", "init", "-q", str(root)], check=True)
    evil = root / "src" / "evil"
    (evil / "objects").mkdir(parents=True)
    (evil / "refs").mkdir()
    (evil / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "src" / "plain").mkdir()
    return root


@pytest.mark.parametrize(
    "command",
    ["git -C src/evil log", "git --git-dir=src/evil log", "cd src && git -C plain log"],
)
def test_git_pointed_at_another_repository_is_asked_and_denied_under_deny_rules(
    git_root, box, command
):
    allowed = make_policy(git_root, {"allow": ["exec(git *)", "exec(cd *)"]})
    decision = check(allowed, box, "exec", cmd(command))
    assert refused(decision) and "needs approval" in decision.reason
    denied = make_policy(git_root, {"mode": "full", "deny": ["exec(rm *)"]})
    decision = check(denied, box, "exec", cmd(command))
    assert refused(decision) and "could not be checked" in decision.reason
    verdict = denied.explain(box.tool_for("exec"), cmd(command), ToolContext(caller=MODEL))
    assert any("could not be checked" in s.why for s in verdict.segments)


def test_git_in_the_workspaces_own_repository_is_left_to_the_rules(git_root, box):
    policy = make_policy(git_root, {"allow": ["exec(git *)"], "deny": ["exec(rm *)"]})
    for command in ("git -C src/plain log", "git --git-dir=.git log", "git -C src log"):
        assert check(policy, box, "exec", cmd(command)).allowed, command


def test_where_git_is_pointed_from_is_the_calls_folder(git_root, box):
    policy = make_policy(git_root, {"allow": ["exec(git *)"]})
    assert check(policy, box, "exec", {"command": "git -C evil log", "cwd": "src"}).allowed is False
    assert check(policy, box, "exec", {"command": "git -C plain log", "cwd": "src"}).allowed
    # A person's command starts where it was typed.
    denied = make_policy(git_root, {"deny": ["exec(rm *)"]})
    typed = {"cwd": str(git_root / "src")}
    assert check(denied, box, "exec", cmd("git -C plain log"), caller=PERSON, **typed).allowed
    person = check(denied, box, "exec", cmd("git -C evil log"), caller=PERSON, **typed)
    assert refused(person) and "`git -C src/evil`" in person.reason


def test_the_repository_is_looked_at_on_every_call(git_root, box):
    # Never cached: a folder a model makes a repository of after one call.
    policy = make_policy(git_root, {"allow": ["exec(git *)"]})
    assert check(policy, box, "exec", cmd("git -C src/plain log")).allowed
    (git_root / "src" / "plain" / "HEAD").write_text("ref: refs/heads/main\n")
    assert not check(policy, box, "exec", cmd("git -C src/plain log")).allowed


def test_a_change_of_folder_on_the_line_leaves_a_relative_git_folder_unplaced(git_root, box):
    policy = make_policy(git_root, {"allow": ["exec(git *)", "exec(cd *)", "exec(pushd *)"]})
    for command in (
        "pushd src && git -C plain log",
        "env -C src git -C plain log",
        "cd src && git -C . log",  # `.` is no longer the root
        "popd; git -C . log",
    ):
        decision = check(policy, box, "exec", cmd(command))
        assert refused(decision) and "after a change of folder" in decision.reason, command


def test_policy_check_places_git_from_where_a_person_typed(git_root, box):
    policy = make_policy(git_root, {"deny": ["exec(rm *)"]})
    typed = ToolContext(caller=PERSON, workdir=str(git_root), cwd=str(git_root / "src"))
    verdict = policy.explain(box.tool_for("exec"), cmd("git -C plain log"), typed)
    # The person's call runs; its segment is judged as written, not as unknown.
    assert verdict.decision == "allow" and [s.decision for s in verdict.segments] == ["ask"]


# -- permission modes (issue 33) ---------------------------------------------------


def test_effective_mode_is_the_request_then_the_settings_then_ask():
    from mdagent.safety.modes import effective_mode

    assert effective_mode({}) == ("ask", "default")
    assert effective_mode({"policy": {"mode": "full"}}) == ("full", "policy.mode")
    chosen = effective_mode({"policy": {"mode": "full"}}, "plan", "/mode")
    assert (chosen.mode, chosen.source, chosen.plan) == ("plan", "/mode", True)
    with pytest.raises(ConfigError, match="--mode: 'yolo' is not one of"):
        effective_mode({}, "yolo")


@pytest.mark.parametrize("caller", [MODEL, PERSON])
def test_plan_refuses_write_tools_and_tools_the_sandbox_cannot_hold(root, box, caller):
    policy = make_policy(root, {"mode": "plan", "allow": ["write_file", "weather"]})
    for tool, args in (("write_file", {"path": "a"}), ("weather", {"city": "x"})):
        decision = check(policy, box, tool, args, caller=caller, approve_all=True)
        assert not decision.allowed and decision.code == "DENIED", tool
        assert "refused in plan mode" in decision.reason
    assert check(policy, box, "read_file", {"path": "a"}, caller=caller).allowed
    # exec stays (its processes run in the read-only sandbox); it still asks a model
    assert check(policy, box, "exec", cmd("ls"), caller=caller, approve_all=True).allowed


def test_plan_refuses_before_the_hooks_run(root, box):
    policy = make_policy(root, {"mode": "plan"})
    refusal = policy.screen(box.tool_for("write_file"), {"path": "a"}, None)
    assert refusal.code == "DENIED" and refusal.extra == {"mode": "plan"}
    assert policy.screen(box.tool_for("read_file"), {"path": "a"}, None) is None


def test_a_declared_run_tool_stays_in_plan_and_a_handler_tool_does_not(root):
    from mdagent.safety.modes import plan_refusal

    box = Toolbox()
    box.add("lint", description="l", handler=dict, kind="run")
    box.add("py", description="p", handler=dict, kind="handler")
    box.add("read_file", description="r", handler=dict, kind="handler")  # a look-alike
    assert plan_refusal(box.tool_for("lint")) is None
    assert "its Python handler: runs outside the read-only sandbox" in plan_refusal(
        box.tool_for("py")
    )
    box.add("docs__search", description="m", handler=dict, kind="?")  # an MCP server's tool
    assert "its server (MCP) runs it outside" in plan_refusal(box.tool_for("docs__search"))
    assert plan_refusal(box.tool_for("read_file")) is not None


_BEYOND = "outside the read-only sandbox, so nothing could hold it to changing nothing"


@pytest.mark.parametrize(
    ("name", "kind", "reason"),
    [
        ("read_file", None, None),
        ("exec", None, None),
        ("lint", "run", None),
        ("check", "shell", None),
        (
            "write_file",
            None,
            "write_file is refused in plan mode: nothing changes (policy.mode is plan)",
        ),
        (
            "edit_file",
            "builtin",
            "edit_file is refused in plan mode: nothing changes (policy.mode is plan)",
        ),
        ("weather", None, f"weather is refused in plan mode: it runs {_BEYOND}"),
        ("py", "handler", f"py is refused in plan mode: its Python handler: runs {_BEYOND}"),
        ("api", "http", f"api is refused in plan mode: its http: request goes {_BEYOND}"),
        ("wrap", "tool", f"wrap is refused in plan mode: the tool it wraps runs {_BEYOND}"),
        (
            "docs__search",
            "mcp",
            f"docs__search is refused in plan mode: its server (MCP) runs it {_BEYOND}",
        ),
    ],
)
def test_plan_refusal_says_why_each_kind_of_tool_is_refused(name, kind, reason):
    from mdagent.safety.modes import plan_refusal

    box = Toolbox()
    box.add(name, description=name, handler=dict, **({"kind": kind} if kind else {}))
    assert plan_refusal(box.tool_for(name)) == reason


def test_accept_edits_says_why_it_approved(root, box):
    policy = make_policy(root, {"mode": "accept-edits"})
    verdict = policy.evaluate(box.tool_for("write_file"), {"path": "src/a.py"})
    assert verdict.decision == "allow" and verdict.approved_by == "mode:accept-edits"
    assert verdict.why == "policy.mode is accept-edits: a file edit inside the workspace"


def test_accept_edits_approves_workspace_writes_only(root, box, tmp_path):
    policy = make_policy(root, {"mode": "accept-edits", "paths": [str(tmp_path)]})
    assert check(policy, box, "write_file", {"path": "src/a.py"}).allowed
    outside = check(policy, box, "write_file", {"path": str(tmp_path / "b")})
    assert not outside.allowed and outside.extra.get("needs_approval")
    assert not check(policy, box, "exec", cmd("touch x")).allowed


def test_accept_edits_never_lifts_deny_rules_or_protected_files(root, box):
    policy = make_policy(root, {"mode": "accept-edits", "deny": ["write_file(secret/**)"]})
    assert not check(policy, box, "write_file", {"path": "secret/a"}).allowed
    protected = check(policy, box, "write_file", {"path": ".agents/config/agent.yaml"})
    assert not protected.allowed and protected.extra.get("protected")


def test_run_settings_add_rules_in_memory_and_plan_requires_the_read_only_sandbox():
    from mdagent.safety.modes import run_settings

    base = {"policy": {"allow": "read_file", "deny": ["fetch"]}, "sandbox": {"mode": "off"}}
    got = run_settings(base, mode="plan", allow=["exec(git *)"], deny=["exec(rm *)"])
    assert got["policy"] == {
        "allow": ["read_file", "exec(git *)"],
        "deny": ["fetch", "exec(rm *)"],
        "mode": "plan",
    }
    assert got["sandbox"] == {"mode": "read-only", "required": True, "applies_to": "all"}
    assert base == {"policy": {"allow": "read_file", "deny": ["fetch"]}, "sandbox": {"mode": "off"}}
    assert run_settings(base, mode="full")["sandbox"] == {"mode": "off"}
    # Plan keeps the sandbox's other settings; only what makes it read-only is set.
    own = {"policy": {"mode": "plan"}, "sandbox": {"mode": "off", "network": True}}
    assert run_settings(own)["sandbox"] == {
        "mode": "read-only",
        "network": True,
        "required": True,
        "applies_to": "all",
    }


@pytest.mark.parametrize(
    "command",
    [
        "cd src/evil && git st",  # into a nested (bare) repository
        "cd -P src/evil && git status --short",
        "pushd src/evil; git st",
        "f() { cd src/evil; }; f; git st",
        "(cd src/evil; git st)",
        "cd src && cd evil && git st",
        "cd src; cd ./evil || true; git log",
        "cd s* && git st",  # a glob: the folder is unknown
        "cd $D && git st",
        "cd - && git st",
        "cd && git st",  # home
        "popd; git st",
        "CDPATH=/elsewhere; cd evil && git st",
        "CDPATH=/elsewhere; cd src && git st",  # `src` may be /elsewhere/src
        "cd src/evil && /usr/bin/git st",  # git by its path
    ],
)
def test_git_after_a_change_of_folder_is_placed_where_the_line_goes(
    git_root, box, command, monkeypatch
):
    monkeypatch.delenv("CDPATH", raising=False)
    # Red team 7: `cd sub && git st` used the nested repository's aliases and fsmonitor.
    allowed = make_policy(git_root, {"allow": ["exec(git *)", "exec(cd *)", "exec(pushd *)"]})
    assert not check(allowed, box, "exec", cmd(command)).allowed, command
    denied = make_policy(git_root, {"mode": "full", "deny": ["exec(rm *)"]})
    decision = check(denied, box, "exec", cmd(command))
    assert refused(decision) and "could not be checked" in decision.reason, command


def test_git_after_a_change_of_folder_in_the_same_repository_is_left_to_the_rules(git_root, box):
    policy = make_policy(git_root, {"allow": ["exec(git *)", "exec(cd *)"], "deny": ["exec(rm *)"]})
    for command in (
        "cd src && git st",
        "cd src/plain && git log",
        "cd ./src; git st",
    ):
        assert check(policy, box, "exec", cmd(command)).allowed, command


def test_with_cdpath_set_only_a_folder_spelled_from_here_is_placed(git_root, box, monkeypatch):
    monkeypatch.setenv("CDPATH", "/elsewhere")
    policy = make_policy(git_root, {"allow": ["exec(git *)", "exec(cd *)"]})
    for command in ("cd ./src && git st", f"cd {git_root}/src && git st", "cd src/../src; git st"):
        allowed = check(policy, box, "exec", cmd(command)).allowed
        assert allowed is command.startswith(("cd ./", "cd /")), command


def test_cd_dash_goes_back_and_not_into_a_folder_named_dash(git_root, box):
    (git_root / "-").mkdir()  # the same repository: `cd ./-` would be left to the rules
    policy = make_policy(git_root, {"deny": ["exec(rm *)"]})
    decision = policy.screen(box.tool_for("exec"), cmd("cd - && git st"), None)
    assert refused(decision) and "could not be checked" in decision.reason
    assert "`git` after a change of folder: which repository it uses is unknown" in decision.reason


def test_the_deny_screen_places_git_where_a_person_typed(git_root, box):
    policy = make_policy(git_root, {"deny": ["exec(rm *)"]})
    typed = ToolContext(caller=PERSON, workdir=str(git_root), cwd=str(git_root / "src"))
    # src/plain: the workspace's repository, so deny rules see the command through.
    assert policy.screen(box.tool_for("exec"), cmd("git -C plain log"), typed) is None
