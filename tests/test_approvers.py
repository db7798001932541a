"""The approvers the runtime hands the policy: nobody, a script, a person at the terminal."""

from __future__ import annotations

import yaml

from mdagent.core.calls import ToolContext
from mdagent.runtime.approvers import RefusingApprover, ScriptedApprover, TerminalApprover
from mdagent.runtime.runtime import Runtime
from mdagent.safety.policy import Policy
from mdagent.tools.toolbox import Toolbox


def _box():
    box = Toolbox()
    box.add("exec", description="run", params={"command": {"type": "string"}}, handler=dict)
    return box


def _check(policy, command):
    ctx = ToolContext(caller="model", workdir=str(policy.workdir))
    return policy.check(_box().tool_for("exec"), {"command": command}, ctx)


def test_nobody_to_ask_refuses_with_how_to_allow(tmp_path):
    for approver in (None, RefusingApprover()):
        decision = _check(Policy({}, workdir=tmp_path, approver=approver), "make")
        assert not decision.allowed and "no terminal to ask on" in decision.reason
        assert decision.extra["allow_rule"] == "exec(make)"


def test_a_script_answers_and_always_is_saved_in_the_projects_settings(tmp_path):
    told = []
    layer = tmp_path / ".agents"
    script = ScriptedApprover(["no", "always"], layer, workdir=tmp_path, tell=told.append)
    policy = Policy({}, workdir=tmp_path, approver=script, project_layer=layer)
    assert not _check(policy, "make").allowed
    assert _check(policy, "make").approved_by == "always"
    assert _check(policy, "make").approved_by == "always"  # not asked again
    # "always" saves the suggested prefix rule (the person may edit it), not the literal line.
    assert [(q.tool, q.args, q.always, q.rules) for q in script.asked] == [
        ("exec", {"command": "make"}, True, ("exec(make:*)",))
    ] * 2
    saved = yaml.safe_load((layer / "config" / "agent.yaml").read_text())
    assert saved == {"policy": {"allow": ["exec(make:*)"]}}
    assert told == ["added allow rule `exec(make:*)` to .agents/config/agent.yaml"]
    assert _check(policy, "make test").approved_by == "rule:exec(make:*)"  # the prefix covers it
    assert _check(policy, "ls").allowed is False  # the script ran out: "no"


def test_the_terminal_question_is_looked_up_when_asked(tmp_path, monkeypatch):
    asked = []

    def ask_terminal(tool_name, args, **kw):
        asked.append((tool_name, args, kw["workdir"], kw["always"], kw["protected"]))
        return "Y"

    monkeypatch.setattr("mdagent.ui.approval.ask_terminal", ask_terminal)
    policy = Policy({}, workdir=tmp_path, approver=TerminalApprover(None))
    assert _check(policy, "make").approved_by == "user"
    assert asked == [("exec", {"command": "make"}, str(tmp_path), True, False)]


def test_the_runtime_asks_a_person_only_where_a_terminal_is(tmp_path):
    runtime = Runtime(cwd=tmp_path)
    assert isinstance(runtime.approver(interactive=False), RefusingApprover)
    assert isinstance(runtime.approver(interactive=True), TerminalApprover)
    assert isinstance(runtime.policy(approver=RefusingApprover()).approver, RefusingApprover)


def test_always_defaults_to_the_user_layer_in_a_folder_not_trusted(tmp_path, hermetic):
    from conftest import trust_as_is, write

    project = tmp_path / "project"
    write(project / ".agents" / "config" / "agent.yaml", "policy:\n  allow: [read_file]\n")
    untrusted = Runtime(cwd=project).approver(interactive=True)
    assert untrusted.layers() == ("user", "project")
    assert untrusted.user_layer == hermetic["home"].resolve()
    trust_as_is(project)
    assert Runtime(cwd=project).approver(interactive=True).layers() == ("project", "user")


def test_the_runtimes_policies_share_the_sessions_answers(tmp_path):
    runtime = Runtime(cwd=tmp_path)
    first = runtime.policy(approver=ScriptedApprover(["session"]))
    assert _check(first, "make").approved_by == "session"
    rebuilt = runtime.policy(approver=ScriptedApprover([]))  # a reload, /mode
    assert _check(rebuilt, "make").approved_by == "session"
    assert not _check(Runtime(cwd=tmp_path).policy(approver=ScriptedApprover([])), "make").allowed
