"""Which file, folder or host a rule names, and which calls touch the agent's own files.

Path rules (anchored, literal, case, `~`, outside the workspace), domain rules
(every spelling of a host), and the protected-file question (where an
``exec`` runs, its environment, the project layer, the registry's layers).
Each case asserts the decision a user relies on: allowed or not, and the rule
or the protected file named in the refusal. Helpers are tests/test_policy.py's.
"""

from __future__ import annotations

import os
import pwd
import threading
from types import SimpleNamespace

import pytest

from mdagent.core.calls import ToolContext
from test_policy import MODEL, check, make_policy


def _refused_by(decision, rule):
    """A refusal that names ``rule`` (a `.code` check alone passes for allowed calls too)."""
    return not decision.allowed and f"`{rule}`" in decision.reason


# -- path rules ---------------------------------------------------------------------

ME = pwd.getpwuid(os.getuid()).pw_name

# (rule, path, allowed): an allow rule in allowlist mode; paths are the model's.
ALLOW_ROWS = [
    # `~` alone is the home folder itself (anchored, literal: exact), not its files.
    ("read_file(~)", "~", True),
    ("read_file(~)", "~/notes.txt", False),
    # `~/notes` names that path exactly, not what a folder of that name holds.
    ("read_file(~/notes)", "~/notes", True),
    ("read_file(~/notes)", "~/notes/a.txt", False),
    # A wildcard is not literal: `./docs/*` covers docs/sub and so its files (gitignore).
    ("read_file(./docs/*)", "docs/sub/a.md", True),
    # A trailing slash covers the folder's files, one level down too.
    ("read_file(./docs/)", "docs/a.md", True),
    # `.//x` is `./x`: the extra slash does not make it absolute.
    ("read_file(.//notes.md)", "notes.md", True),
    ("read_file(./Xray.txt)", "Xray.txt", True),
    # Allow rules keep case, absolute ones too.
    ("read_file({out}/Keys/Id)", "{out}/Keys/Id", True),
    ("read_file({out}/Keys/Id)", "{out}/keys/id", False),
]


@pytest.mark.parametrize(("rule", "path", "allowed"), ALLOW_ROWS)
def test_what_an_allow_rule_covers(root, box, tmp_path, rule, path, allowed):
    out = tmp_path / "outside"
    rule, path = rule.format(out=out), path.format(out=out)
    policy = make_policy(root, {"mode": "allowlist", "allow": [rule]})
    decision = check(policy, box, "read_file", {"path": path})
    assert decision.allowed is allowed, (rule, path, decision.reason)


# (rule, path, denied): a deny rule in full mode.
DENY_ROWS = [
    # `.` as a deny rule is the whole workspace, not a component named ".".
    ("read_file(.)", "src/a.py", True),
    ("read_file(.)", "{out}/a.py", False),
    # Deny rules ignore case: rooted, absolute, and relative ones outside the workspace.
    ("read_file(./Secret.txt)", "secret.txt", True),
    ("read_file({out}/Keys/Id)", "{out}/keys/ID", True),
    ("read_file(.env)", "{out}/.ENV", True),
    # Only `~` and `~/` mean the home folder: `~name` is a file of that name.
    (f"read_file(~{ME})", f"./~{ME}", True),
    # Absolute rules and, outside the workspace, relative rules with a slash start
    # at the file system's root (whatever the first letter).
    ("read_file(/Xnowhere/secret)", "/Xnowhere/secret", True),
    ("read_file(Xnowhere/secret)", "/Xnowhere/secret", True),
    ("read_file(etc/passwd)", "/etc/passwd", True),
    ("read_file(etc/passwd)", "/srv/etc/passwd", False),
    # `/` is the file system's root: it holds every file, inside the workspace too.
    ("read_file(/)", "/etc/passwd", True),
    ("read_file(/)", "src/a.py", True),
    ("read_file(//)", "{out}/a.py", True),
]


@pytest.mark.parametrize(("rule", "path", "denied"), DENY_ROWS)
def test_what_a_deny_rule_refuses(root, box, tmp_path, rule, path, denied):
    out = tmp_path / "outside"
    rule, path = rule.format(out=out), path.format(out=out)
    policy = make_policy(root, {"mode": "full", "deny": [rule]})
    decision = check(policy, box, "read_file", {"path": path})
    if denied:
        assert _refused_by(decision, rule), (rule, path, decision)
    else:
        assert decision.allowed, (rule, path, decision.reason)


# -- domain rules -------------------------------------------------------------------

LONG = "a" * 63

# (domain, url, matches): a deny rule `fetch(domain:…)` in full mode.
DOMAIN_ROWS = [
    # A leading dot means the domain and its subdomains, internationalised names too.
    (".bücher.example", "https://www.bücher.example/", True),
    # The URL's own non-ASCII host is the punycode name httpx connects to.
    ("bücher.example", "https://bücher.example/", True),
    # A dotless ı is another letter: its domain is not the one with an i.
    ("ıexample.com", "https://iexample.com/", False),
    # A name idna refuses (a label over 63 characters) is still compared, lower case,
    # without its leading dot, letter for letter.
    (f".{LONG}a.example", f"http://x.{LONG}a.example/", True),
    (f"ı{LONG}.example", f"http://i{LONG}.example/", False),
    # IPv6: brackets, zone ids (in the URL or the rule) pick no other address.
    ("[::1]", "http://[0:0::1]/", True),
    ("fe80::1", "http://[fe80:0::1%25eth0]/", True),
    ("fe80::1%a%b", "http://[fe80::1]/", True),
    # An address is only itself: a name that begins with it is another host.
    ("127.0.0.1", "http://127.0.0.1%20evil.com/", False),
    # A URL without a host matches no domain rule.
    ("xxxx", "http:///x\x00", False),
]


@pytest.mark.parametrize(("domain", "url", "matches"), DOMAIN_ROWS)
def test_what_a_domain_rule_names(root, box, domain, url, matches):
    rule = f"fetch(domain:{domain})"
    policy = make_policy(root, {"mode": "full", "deny": [rule]})
    decision = check(policy, box, "fetch", {"url": url})
    if matches:
        assert _refused_by(decision, rule), (rule, url, decision)
    else:
        assert decision.allowed, (rule, url, decision.reason)


# -- the agent's own files ------------------------------------------------------------

LAYER_FILE = ".agents/config/agent.yaml (the project layer)"


def test_an_exec_call_is_judged_in_the_folder_it_runs_in(root, box):
    policy = make_policy(root, {"mode": "full"}, approve_all=True)
    write = "echo x > config/agent.yaml"
    inside = check(policy, box, "exec", {"command": write, "cwd": ".agents"}, approve_all=True)
    assert not inside.allowed
    assert inside.extra["protected"] == LAYER_FILE
    # The same command at the root changes no file of the agent's.
    assert check(policy, box, "exec", {"command": write}, approve_all=True).allowed


def test_an_exec_call_is_judged_with_its_own_environment(root, box):
    policy = make_policy(root, {"mode": "full"}, approve_all=True)
    write = {"command": "echo x > $CONF/config/agent.yaml"}
    env = {"CONF": str(root / ".agents"), "PATH": os.environ.get("PATH", "")}
    decision = check(policy, box, "exec", write, approve_all=True, env=env)
    assert not decision.allowed
    assert decision.extra["protected"] == LAYER_FILE
    # Where the variable is unset the command writes /config/agent.yaml: not protected.
    assert "CONF" not in os.environ
    assert check(policy, box, "exec", write, approve_all=True).allowed


def test_a_project_layer_elsewhere_is_protected(root, box, tmp_path):
    layer = tmp_path / "team" / ".agents"
    layer.mkdir(parents=True)
    policy = make_policy(root, {"mode": "full"}, project_layer=layer, approve_all=True)
    decision = check(policy, box, "write_file", {"path": str(layer / "config" / "agent.yaml")})
    assert not decision.allowed
    assert decision.extra["protected"].endswith("(the project layer)")
    assert decision.extra["protected"].startswith(str(layer))


def test_a_registry_without_tools_still_protects_its_layers(root, box, tmp_path):
    team = tmp_path / "team-layer"
    team.mkdir()
    registry = SimpleNamespace(layers=[SimpleNamespace(kind="team", path=team)], settings={})
    policy = make_policy(root, {"mode": "full"})
    ctx = ToolContext(caller=MODEL, workdir=str(root), registry=registry)
    decision = policy.check(box.tool_for("write_file"), {"path": str(team / "x.yaml")}, ctx)
    assert not decision.allowed
    assert "a layer folder (team)" in decision.reason


def test_the_question_about_a_protected_file_gets_the_calls_cancel_event(
    root, box, monkeypatch, tmp_path
):
    import mdagent.ui.approval

    seen = []

    def ask_terminal(tool_name, args, *, cancel=None, always=True, note=None, workdir=None, **_):
        seen.append((cancel, workdir))
        return "no"

    monkeypatch.setattr(mdagent.ui.approval, "ask_terminal", ask_terminal)
    policy = make_policy(root, interactive=True)
    event = threading.Event()
    ctx = ToolContext(caller=MODEL, workdir=str(root), cancel=event)
    decision = policy.check(box.tool_for("write_file"), {"path": ".agents/config/agent.yaml"}, ctx)
    assert not decision.allowed
    assert seen == [(event, str(root))]


def test_a_call_without_its_path_or_command_is_judged_as_changing_nothing_else(root, box, tmp_path):
    # `agent policy check`'s tests judge calls as written, unvalidated: `exec(cwd=…)`
    # without a command runs nothing, `write_file()` without a path names the
    # workspace folder itself.
    policy = make_policy(root, {"mode": "full"})
    ctx = ToolContext(caller=MODEL, workdir=str(root))
    verdict = policy.evaluate(box.tool_for("exec"), {"cwd": ".agents"}, ctx)
    assert verdict.decision == "allow", verdict
    team = tmp_path / "team-layer"
    team.mkdir()
    registry = SimpleNamespace(layers=[SimpleNamespace(kind="team", path=team)], settings={})
    inside = ToolContext(caller=MODEL, workdir=str(team), registry=registry)
    verdict = policy.evaluate(box.tool_for("write_file"), {}, inside)
    assert (verdict.decision, verdict.protected) == ("ask", ". (a layer folder (team))")
