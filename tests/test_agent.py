"""The agent loop with a scripted in-process model and unit-level toolboxes."""

from __future__ import annotations

import copy
import io
import json
import os
import re
import signal
import threading
import time

import pytest

from conftest import trust_as_is
from mdagent.agent.ask import run_ask, run_prompt_skill
from mdagent.agent.conversation import Conversation, capped, repair_history
from mdagent.agent.loop import Agent
from mdagent.agent.prompts import find_agents_md, model_tools, skill_index, system_prompt
from mdagent.core.calls import Decision
from mdagent.core.errors import Interrupted, ProviderError, UsageError
from mdagent.providers.reply import Reply, ToolCall
from mdagent.runtime.runtime import Options, Runtime
from mdagent.tools.toolbox import Toolbox
from mdagent.ui.display import Display, short_arguments


class ScriptedModel:
    """A provider that answers from a list; each request is kept (deep-copied)."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests: list[dict] = []

    def complete(self, system, messages, tools, on_text=None, *, on_reasoning=None, on_retry=None):
        self.requests.append(
            {"system": system, "messages": copy.deepcopy(messages), "tools": tools}
        )
        if not self.replies:
            raise ProviderError("script exhausted")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if on_text and reply.text:
            on_text(reply.text)
        return reply


_ids = iter(range(1, 10_000))


def call(name, arguments=None, raw=None):
    """A tool call as a provider would decode it."""
    text = raw if raw is not None else json.dumps(arguments or {})
    return ToolCall.from_json(f"call_{next(_ids)}", name, text)


def reply(text="", *calls):
    return Reply(text, tuple(calls), {"input_tokens": 10, "output_tokens": 2})


def make_box():
    box = Toolbox()
    box.add(
        "echo",
        description="Echo text",
        params={"text": {"type": "string"}},
        required=["text"],
        handler=lambda args: {"output": args["text"]},
        security="moderate",
    )
    return box


def agent_for(model, box=None, *, tools=None, max_steps=25, display=None, conversation=None):
    box = box or make_box()
    tools = tools if tools is not None else model_tools(box, {})
    display = display or Display(io.StringIO(), io.StringIO(), spinner=False)
    return Agent(
        model,
        box,
        system="be brief",
        tools=tools,
        max_steps=max_steps,
        display=display,
        conversation=conversation,
    )


def tool_messages(messages):
    return [m for m in messages if m["role"] == "tool"]


# -- the loop -------------------------------------------------------------------------


def test_a_final_answer_ends_the_turn():
    model = ScriptedModel(reply("Hello!"))
    agent = agent_for(model)
    outcome = agent.run("hi")
    assert outcome.answer == "Hello!"
    assert outcome.steps == 1 and outcome.exit_status == 0
    assert outcome.usage == {"input_tokens": 10, "output_tokens": 2}
    assert agent.display.out.getvalue() == "Hello!\n"
    assert model.requests[0]["messages"] == [{"role": "user", "content": "hi"}]


def test_a_tool_result_goes_back_to_the_model():
    model = ScriptedModel(reply("Looking.", call("echo", {"text": "pong"})), reply("It said pong."))
    agent = agent_for(model)
    outcome = agent.run("ping?")
    assert outcome.answer == "It said pong."
    assert outcome.steps == 2
    sent = model.requests[1]["messages"]
    assert sent[1]["tool_calls"][0]["name"] == "echo"
    result = tool_messages(sent)[0]
    assert result["tool_call_id"] == sent[1]["tool_calls"][0]["id"]
    assert json.loads(result["content"]) == {"output": "pong", "ok": True}
    assert outcome.tool_calls == [
        {
            "name": "echo",
            "arguments": {"text": "pong"},
            "ok": True,
            "result": {"output": "pong", "ok": True},
        }
    ]
    # The call's line, then its outcome: ✓, and how long it took.
    assert re.fullmatch(
        r"→ echo  pong\n  ✓ echo · (\d+\.\d s|\d+ s|\d+ min \d+ s)\n", agent.display.err.getvalue()
    )
    # Text before a tool call ends its line before the answer's text starts.
    assert agent.display.out.getvalue() == "Looking.\nIt said pong.\n"


def test_the_tools_sent_are_name_description_parameters():
    model = ScriptedModel(reply("ok"))
    agent_for(model).run("hi")
    assert model.requests[0]["tools"] == [
        {
            "name": "echo",
            "description": "Echo text",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        }
    ]


def test_a_validation_error_is_fed_back_and_the_model_corrects_itself():
    model = ScriptedModel(
        reply("", call("echo", {"text": 5})),
        reply("", call("echo", {"text": "five"})),
        reply("done"),
    )
    outcome = agent_for(model).run("go")
    first, second = tool_messages(model.requests[2]["messages"])
    assert json.loads(first["content"]) == {
        "error": "value at `/text` is not of type 'string'",
        "ok": False,
    }
    assert json.loads(second["content"])["output"] == "five"
    assert outcome.answer == "done"


def test_arguments_that_are_not_json_come_back_as_an_error_without_a_run():
    ran = []
    box = make_box()
    box.before("echo")(lambda args: ran.append(args))
    model = ScriptedModel(reply("", call("echo", raw='{"text": "x"')), reply("sorry"))
    outcome = agent_for(model, box).run("go")
    content = json.loads(tool_messages(model.requests[1]["messages"])[0]["content"])
    assert content["ok"] is False and "not valid JSON" in content["error"]
    assert ran == []
    assert outcome.tool_calls[0]["arguments"] == '{"text": "x"'


def test_a_tool_that_was_not_sent_is_unknown_to_the_model():
    box = make_box()
    box.add("hidden", description="Not for models", handler=lambda a: {"output": "secret"})
    tools = [t for t in model_tools(box, {}) if t["name"] == "echo"]
    model = ScriptedModel(reply("", call("hidden")), reply("ok"))
    agent_for(model, box, tools=tools).run("go")
    content = json.loads(tool_messages(model.requests[1]["messages"])[0]["content"])
    assert content == {"error": "unknown tool: hidden. Available: echo", "ok": False}


def test_a_denied_call_is_a_failure_the_model_reads_and_the_loop_goes_on():
    class DenyAll:
        def check(self, tool, args, ctx):
            return Decision(False, f"{tool.name} needs approval: no terminal to ask on")

    box = make_box()
    box.policy = DenyAll()
    model = ScriptedModel(reply("", call("echo", {"text": "x"})), reply("I was not allowed."))
    outcome = agent_for(model, box).run("go")
    content = json.loads(tool_messages(model.requests[1]["messages"])[0]["content"])
    assert content["ok"] is False and content["code"] == "DENIED"
    assert "needs approval" in content["error"]
    assert outcome.answer == "I was not allowed." and outcome.exit_status == 0


def test_the_same_call_a_fourth_time_gets_a_notice_instead_of_a_run():
    runs = []
    box = make_box()
    box.before("echo")(lambda args: runs.append(args))
    same = [reply("", call("echo", {"text": "again"})) for _ in range(4)]
    model = ScriptedModel(*same, reply("giving up"))
    outcome = agent_for(model, box).run("go")
    assert len(runs) == 3
    notice = json.loads(tool_messages(model.requests[4]["messages"])[3]["content"])
    assert notice["code"] == "REPEATED" and "3 times in a row" in notice["error"]
    assert outcome.answer == "giving up"


def test_a_different_call_in_between_resets_the_repeat_count():
    runs = []
    box = make_box()
    box.before("echo")(lambda args: runs.append(args["text"]))
    texts = ["a", "a", "a", "b", "a"]
    model = ScriptedModel(*[reply("", call("echo", {"text": t})) for t in texts], reply("ok"))
    agent_for(model, box).run("go")
    assert runs == texts


def test_max_steps_stops_the_loop_with_a_message():
    model = ScriptedModel(*[reply("", call("echo", {"text": str(i)})) for i in range(5)])
    agent = agent_for(model, max_steps=3)
    outcome = agent.run("loop forever")
    # Changed: its own status (3), not 1, so a script can tell it from a failure.
    assert outcome.answer is None and outcome.exit_status == 3 and outcome.stopped == "max_steps"
    assert outcome.steps == 3 and len(model.requests) == 3
    assert outcome.message == (
        "stopped after 3 steps without a final answer; raise agent.max_steps or "
        "continue with `agent ask --continue`"
    )
    # The last step's results are kept, so the session can be continued.
    assert agent.conversation.messages[-1]["role"] == "tool"
    assert outcome.to_dict()["error"] == outcome.message


def test_provider_errors_propagate_and_close_an_open_line():
    model = ScriptedModel(ProviderError("server error (HTTP 500) after 3 retries"))
    agent = agent_for(model)
    with pytest.raises(ProviderError, match="HTTP 500"):
        agent.run("hi")
    assert agent.conversation.messages == [{"role": "user", "content": "hi"}]


def test_very_long_results_are_capped_with_a_note():
    box = make_box()
    box.add("big", description="Big", handler=lambda a: {"output": "x" * 200_000})
    model = ScriptedModel(reply("", call("big")), reply("ok"))
    agent_for(model, box).run("go")
    content = tool_messages(model.requests[1]["messages"])[0]["content"]
    assert len(content) < 51_000
    assert "result truncated" in content
    assert content.endswith('"ok": true}')


def test_capped_keeps_short_text():
    assert capped("short") == "short"
    text = capped("a" * 100 + "b" * 100, limit=50)
    assert text.startswith("a" * 40) and text.endswith("b" * 10) and "150 of 200" in text


# -- concurrency ------------------------------------------------------------------------


def recording_box(security_of, *, meet: int = 0):
    """Tools that log ``("start", tag)`` and ``("end", tag)`` as they run.

    With ``meet``, each call waits (up to 60 s) until that many calls run at
    once: calls run one after another never get there, however fast or busy
    the machine. Without it, each call pauses a little, room for another to
    start if one could.
    """
    events: list[tuple[str, str]] = []
    lock = threading.Lock()
    meeting = threading.Barrier(meet, timeout=60) if meet else None
    box = Toolbox()
    for name, security in security_of.items():

        def handler(args, _name=name):
            tag = args.get("tag", _name)
            with lock:
                events.append(("start", tag))
            if meeting is not None:
                meeting.wait()
            else:
                time.sleep(0.05)
            with lock:
                events.append(("end", tag))
            return {"output": tag}

        box.add(
            name,
            description=name,
            params={"tag": {"type": "string"}},
            handler=handler,
            security=security,
        )
    return box, events


def test_independent_safe_calls_run_concurrently():
    box, events = recording_box({"glob": "safe", "read_file": "safe"}, meet=2)
    model = ScriptedModel(
        reply("", call("glob", {"tag": "g"}), call("read_file", {"tag": "r"})), reply("ok")
    )
    agent_for(model, box).run("go")
    # Both started before either ended: they met.
    assert sorted(events[:2]) == [("start", "g"), ("start", "r")]
    # Results come back in the model's order, whichever finished first.
    results = tool_messages(model.requests[1]["messages"])
    assert [json.loads(m["content"])["output"] for m in results] == ["g", "r"]


def test_other_calls_run_alone_and_in_order():
    box, events = recording_box({"read_file": "safe", "write_file": "moderate"})
    model = ScriptedModel(
        reply(
            "",
            call("read_file", {"tag": "r1"}),
            call("write_file", {"tag": "w"}),
            call("read_file", {"tag": "r2"}),
        ),
        reply("ok"),
    )
    agent_for(model, box).run("go")
    assert events == [(edge, tag) for tag in ("r1", "w", "r2") for edge in ("start", "end")]
    results = tool_messages(model.requests[1]["messages"])
    assert [json.loads(m["content"])["output"] for m in results] == ["r1", "w", "r2"]


# -- Ctrl-C -----------------------------------------------------------------------------------


def test_ctrl_c_cancels_the_running_tool_and_keeps_the_session_consistent():
    cancelled = threading.Event()

    def slow(args, ctx):
        if ctx.cancel.wait(5):
            cancelled.set()
            return {"error": "interrupted", "interrupted": True}
        return {"output": "finished"}

    box = make_box()
    box.add("slow", description="Slow", handler=slow, security="moderate")
    model = ScriptedModel(reply("", call("slow"), call("echo", {"text": "later"})))
    agent = agent_for(model, box)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(Interrupted, match="--continue"):
            agent.run("go")
    finally:
        timer.cancel()
    assert cancelled.is_set()
    messages = agent.conversation.messages
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    assert json.loads(messages[2]["content"])["error"] == "interrupted"
    assert json.loads(messages[3]["content"])["error"] == "interrupted by the user"


# -- sessions -----------------------------------------------------------------------------------


def test_every_message_is_stored_as_it_arrives(tmp_path):
    from mdagent.store.store import Store

    store = Store(tmp_path / "db.sqlite")
    conversation = Conversation.start(store, cwd=str(tmp_path), model="m")
    model = ScriptedModel(reply("", call("echo", {"text": "x"})), reply("done"))
    agent_for(model, conversation=conversation).run("go")
    roles = [m["role"] for m in store.messages(conversation.session_id)]
    assert roles == ["user", "assistant", "tool", "assistant"]


def test_repair_adds_interrupted_results_for_calls_without_one():
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "a", "name": "echo", "arguments": {}},
                {"id": "b", "name": "exec", "arguments": {}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "name": "echo", "content": "{}"},
    ]
    repaired = repair_history(messages)
    assert repaired[:3] == messages
    assert repaired[3]["tool_call_id"] == "b" and repaired[3]["name"] == "exec"
    assert "interrupted" in json.loads(repaired[3]["content"])["error"]
    assert repair_history(repaired) == repaired


def test_resume_stores_the_repair(tmp_path):
    from mdagent.store.store import Store

    store = Store(tmp_path / "db.sqlite")
    sid = store.new_session(str(tmp_path), "m")
    store.add_message(sid, {"role": "user", "content": "go"})
    store.add_message(
        sid,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "a", "name": "x", "arguments": {}}],
        },
    )
    conversation = Conversation.resume(store, sid)
    assert [m["role"] for m in conversation.messages] == ["user", "assistant", "tool"]
    assert store.messages(sid) == conversation.messages


# -- what the model is told --------------------------------------------------------------------


def tiered_box():
    box = Toolbox()
    for name, tier in (("a", "essential"), ("b", "standard"), ("c", "full")):
        box.add(name, description=name, handler=lambda a: {}, tier=tier)
    box.add("needs", description="x", handler=lambda a: {}, requires={"bins": ["no-such-bin-xyz"]})
    return box


@pytest.mark.parametrize(
    ("tier", "expected"),
    [
        ("essential", ["a"]),
        ("standard", ["a", "b"]),
        ("full", ["a", "b", "c"]),
        (None, ["a", "b", "c"]),
    ],
)
def test_tools_are_filtered_by_tier_and_availability(tier, expected):
    settings = {"agent": {"tier": tier}} if tier else {}
    assert [t["name"] for t in model_tools(tiered_box(), settings)] == expected


def test_system_prompt_has_instructions_agents_md_and_skill_index(workspace):
    (workspace / "AGENTS.md").write_text("Always run the tests with `make test`.\n")
    config = workspace / ".agents" / "config"
    config.mkdir()
    (config / "agent.yaml").write_text("agent:\n  instructions: Answer in French.\n")
    skills = workspace / ".agents" / "skills"
    for name, extra in (("visible", ""), ("hidden", "disable-model-invocation: true\n")):
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: The {name} skill\n{extra}---\nBody of {name}.\n"
        )
    sub = workspace / "src" / "deep"
    sub.mkdir(parents=True)
    runtime = Runtime(Options(), cwd=sub)
    prompt = system_prompt(
        workdir=runtime.workdir,
        cwd=runtime.cwd,
        settings=runtime.settings,
        registry=runtime.registry,
        tool_names=["skill"],
    )
    assert prompt.startswith("You are mdagent")
    assert "Answer in French." in prompt
    assert "Always run the tests with `make test`." in prompt
    assert "- visible: The visible skill" in prompt
    assert "hidden" not in prompt
    assert "`skill` tool" in prompt
    # Without the skill tool there is nothing to load skills with.
    assert "visible" not in system_prompt(
        workdir=runtime.workdir, cwd=runtime.cwd, settings={}, registry=runtime.registry
    )


def test_skill_index_leaves_out_skills_with_unmet_requirements(workspace):
    skill = workspace / ".agents" / "skills" / "needy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: needy\ndescription: Needs a tool\n"
        "metadata: {requires: {bins: [no-such-bin-xyz]}}\n---\nBody\n"
    )
    assert "needy" not in skill_index(Runtime(Options(), cwd=workspace).registry)


def test_agents_md_search_stops_at_the_project_root(tmp_path):
    (tmp_path / "AGENTS.md").write_text("outside")
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    sub = project / "a" / "b"
    sub.mkdir(parents=True)
    assert find_agents_md(sub, project) is None
    (project / "a" / "AGENTS.md").write_text("nearest")
    assert find_agents_md(sub, project) == project / "a" / "AGENTS.md"
    # Outside any project, the walk goes up to the filesystem root.
    loose = tmp_path / "loose" / "x"
    loose.mkdir(parents=True)
    assert find_agents_md(loose, loose) == tmp_path / "AGENTS.md"


def test_short_arguments():
    assert short_arguments({"command": "git status"}) == "git status"
    assert short_arguments({"path": "a.txt", "offset": 3}) == "a.txt"
    assert short_arguments({"a": 1, "b": 2}) == '{"a": 1, "b": 2}'
    assert short_arguments({"command": "x\n" * 100}).endswith("…")
    assert short_arguments({}) == ""


# -- entry points with a runtime ------------------------------------------------------------------


@pytest.fixture
def scripted(monkeypatch):
    """Replace the configured provider by a ScriptedModel; returns a setter."""
    holder = {}

    def use(*replies):
        holder["model"] = ScriptedModel(*replies)
        return holder["model"]

    from mdagent.agent import ask
    from mdagent.providers import ProviderConfig

    monkeypatch.setattr(
        ask,
        "make_provider",
        lambda runtime: (holder["model"], ProviderConfig(provider="openai", model="scripted")),
    )
    return use


def test_run_ask_json_and_continue(workspace, scripted, capsys):
    scripted(reply("", call("glob", {"pattern": "*.txt"})), reply("No text files."))
    runtime = Runtime(Options(json=True), cwd=workspace)
    assert run_ask(runtime, "any text files?") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["answer"] == "No text files."
    assert data["steps"] == 2 and data["session"]
    assert data["tool_calls"][0]["name"] == "glob" and data["tool_calls"][0]["ok"] is True
    assert data["usage"] == {"input_tokens": 20, "output_tokens": 4}

    model = scripted(reply("You asked about text files."))
    runtime = Runtime(Options(), cwd=workspace)
    assert run_ask(runtime, "what did I ask?", continue_=True) == 0
    sent = model.requests[0]["messages"]
    assert sent[0] == {"role": "user", "content": "any text files?"}
    assert sent[-1] == {"role": "user", "content": "what did I ask?"}
    assert "You asked about text files." in capsys.readouterr().out


def test_run_ask_with_an_unknown_session_is_a_usage_error(workspace, scripted):
    scripted(reply("hi"))
    with pytest.raises(UsageError, match="no session 'nope'"):
        run_ask(Runtime(Options(), cwd=workspace), "hi", session="nope")


def test_prompt_skill_allowed_tools_are_pre_approved_but_deny_rules_apply(workspace, scripted):
    skill = workspace / ".agents" / "skills" / "shout"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: shout\ndescription: Shout\nallowed-tools: [exec]\n---\nShout $ARGUMENTS.\n"
    )
    config = workspace / ".agents" / "config"
    config.mkdir()
    (config / "agent.yaml").write_text("policy:\n  deny: ['exec(rm *)']\n")
    model = scripted(
        reply("", call("exec", {"command": "echo LOUD"}), call("exec", {"command": "rm -f x"})),
        reply("done"),
    )
    trust_as_is(workspace)  # the person's own skill: its allowed-tools apply once trusted
    runtime = Runtime(Options(), cwd=workspace)
    command = runtime.registry.command("shout")
    assert run_prompt_skill(runtime, command, ["it", "out loud"]) == 0
    assert model.requests[0]["messages"][0]["content"] == "Shout it 'out loud'.\n"
    allowed, denied = tool_messages(model.requests[1]["messages"])
    assert json.loads(allowed["content"])["stdout"] == "LOUD\n"
    assert "denied by policy rule `exec(rm *)`" in json.loads(denied["content"])["error"]

    # The pre-approval was for that turn only: a plain ask has no terminal, no --yes.
    model = scripted(reply("", call("exec", {"command": "echo LOUD"})), reply("ok"))
    assert run_ask(Runtime(Options(), cwd=workspace), "again") == 0
    refused = json.loads(tool_messages(model.requests[1]["messages"])[0]["content"])
    assert refused["code"] == "DENIED" and "needs approval" in refused["error"]
