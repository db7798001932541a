"""When a turn records checkpoints: which calls can write, plan mode, and the loop's part."""

from __future__ import annotations

import io
import os
import types
from pathlib import Path

import pytest

from mdagent.agent.checkpointing import (
    TurnCheckpoints,
    can_write,
    plan_mode_in_force,
    turn_checkpoints,
)
from mdagent.agent.loop import Agent
from mdagent.agent.prompts import model_tools
from mdagent.core.errors import ProviderError
from mdagent.core.specs import ToolSpec
from mdagent.rewind.checkpoints import Checkpoints
from mdagent.tools.toolbox import Toolbox
from mdagent.ui.display import Display
from test_agent import ScriptedModel, call, reply


class Registry:
    """The part of a registry can_write reads: ``tool(name)``."""

    def __init__(self, **implementations):
        self.tools = {
            name: ToolSpec(name=name, description=name, implementation=impl)
            for name, impl in implementations.items()
        }

    def tool(self, name):
        return self.tools.get(name)


def test_file_tools_exec_and_commands_can_write_reading_and_http_cannot():
    registry = Registry(
        write_file={"builtin": "write_file"},
        edit_file={"builtin": "edit_file"},
        exec={"builtin": "exec"},
        read_file={"builtin": "read_file"},
        grep={"builtin": "grep"},
        build={"run": ["make"]},
        deploy={"shell": "make deploy"},
        py={"handler": "tool.py:run"},
        weather={"http": {"url": "http://127.0.0.1/"}},
        make_it={"tool": "build", "with": {}},
        look={"tool": "grep"},
        loop_a={"tool": "loop_b"},
        loop_b={"tool": "loop_a"},
    )
    writing = {n for n in registry.tools if can_write(registry, n)}
    assert writing == {"write_file", "edit_file", "exec", "build", "deploy", "py", "make_it"}
    # A tool the registry does not declare (an MCP server's): its effects are its server's.
    assert not can_write(registry, "server__delete_everything")
    assert can_write(None, "exec") and not can_write(None, "read_file")


def runtime_with(workdir: Path, mode=None, settings=None):
    options = types.SimpleNamespace(mode=mode, mode_source="--mode" if mode else None)
    return types.SimpleNamespace(
        options=options, settings=settings or {}, workdir=workdir, registry=None
    )


def test_plan_mode_reads_the_option_then_the_settings(tmp_path):
    assert not plan_mode_in_force(runtime_with(tmp_path))
    assert plan_mode_in_force(runtime_with(tmp_path, mode="plan"))
    assert plan_mode_in_force(runtime_with(tmp_path, settings={"policy": {"mode": "plan"}}))
    assert not plan_mode_in_force(runtime_with(tmp_path, mode="ask"))
    off = {"checkpoints": {"enabled": False}}
    assert turn_checkpoints(runtime_with(tmp_path, settings=off), "s") is None
    assert isinstance(turn_checkpoints(runtime_with(tmp_path), "s"), TurnCheckpoints)


def test_plan_mode_is_asked_when_a_checkpoint_would_be_taken(tmp_path):
    # /mode and Shift+Tab change the mode during a session: it is read per turn.
    runtime = runtime_with(tmp_path, mode="plan")
    turns = turn_checkpoints(runtime, "s")
    turns.start_turn(1, "change it")
    turns.before_calls(["write_file"])
    assert not turns.recorded  # plan: nothing changes, nothing recorded
    runtime.options.mode = "full"
    turns.before_calls(["write_file"])
    assert turns.recorded


def writing_box(root: Path) -> Toolbox:
    box = Toolbox()
    box.add(
        "write_file",
        description="Write a file",
        params={"path": {"type": "string"}, "content": {"type": "string"}},
        required=["path", "content"],
        handler=lambda a: (root / a["path"]).write_text(a["content"]) and {"ok": True},
    )
    box.add(
        "read_file",
        description="Read a file",
        params={"path": {"type": "string"}},
        required=["path"],
        handler=lambda a: {"content": (root / a["path"]).read_text()},
        security="safe",
    )
    return box


def agent_in(root: Path, model) -> tuple[Agent, Checkpoints]:
    checkpoints = Checkpoints(root)
    box = writing_box(root)
    agent = Agent(
        model,
        box,
        system="be brief",
        tools=model_tools(box, {}),
        display=Display(io.StringIO(), io.StringIO(), spinner=False),
        checkpoints=TurnCheckpoints(checkpoints, None, "session-1"),
    )
    return agent, checkpoints


@pytest.fixture(autouse=True)
def fresh_unavailable(monkeypatch):
    monkeypatch.setattr("mdagent.agent.checkpointing._UNAVAILABLE", set())


@pytest.fixture
def root(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("a\n")
    return folder


def test_a_writing_turn_is_recorded_before_its_first_write_and_at_its_end(root):
    model = ScriptedModel(
        reply("", call("read_file", {"path": "a.txt"})),
        reply("", call("write_file", {"path": "b.txt", "content": "b\n"})),
        reply("", call("write_file", {"path": "c.txt", "content": "c\n"})),
        reply("done"),
    )
    agent, checkpoints = agent_in(root, model)
    agent.run("write two files")
    listed = checkpoints.list()
    assert [(c.phase, c.turn, c.prompt) for c in listed] == [
        ("before", 1, "write two files"),
        ("after", 1, "write two files"),
    ]
    [turn] = checkpoints.turns()
    assert [c.path for c in turn.changes] == ["b.txt", "c.txt"]  # both writes, one turn


def test_a_reading_turn_records_nothing_and_a_failed_turn_still_records_its_end(root):
    model = ScriptedModel(
        reply("", call("read_file", {"path": "a.txt"})),
        reply("read it"),
        reply("", call("write_file", {"path": "b.txt", "content": "b\n"})),
        ProviderError("the provider went away"),
    )
    agent, checkpoints = agent_in(root, model)
    agent.run("read it")
    assert checkpoints.list() == []
    with pytest.raises(ProviderError):
        agent.run("then write")
    # Turns are numbered by the person's messages: this is the second.
    assert [(c.phase, c.turn) for c in checkpoints.list()] == [("before", 2), ("after", 2)]
    assert checkpoints.turns()[0].finished


def test_checkpoints_that_cannot_be_made_are_said_once_and_the_turn_goes_on(root, capsys):
    # A workspace over max_files: no checkpoints, one line, the writes still happen.
    model = ScriptedModel(
        reply("", call("write_file", {"path": "b.txt", "content": "b\n"})),
        reply("done"),
        reply("", call("write_file", {"path": "c.txt", "content": "c\n"})),
        reply("done again"),
    )
    agent, checkpoints = agent_in(root, model)
    checkpoints.settings = checkpoints.settings._replace(max_files=1)
    (root / "more.txt").write_text("more\n")
    agent.run("one")
    agent.run("two")
    said = capsys.readouterr().err
    assert said.count("more than 1 files (checkpoints.max_files)") == 1
    assert "a rewind cannot take back what this run changes" in said
    assert os.path.exists(root / "c.txt")
    # The next agent in this process (the session's next turn) does not look again.
    assert turn_checkpoints(runtime_with(root), "s") is None


def test_a_turn_stopped_by_ctrl_c_still_records_its_end(root):
    from mdagent.core.errors import Interrupted

    class Stopped(ScriptedModel):
        def complete(self, *args, **kwargs):
            if not self.replies:
                raise KeyboardInterrupt
            return super().complete(*args, **kwargs)

    model = Stopped(reply("", call("write_file", {"path": "b.txt", "content": "b\n"})))
    agent, checkpoints = agent_in(root, model)
    with pytest.raises(Interrupted):
        agent.run("write, then Ctrl-C")
    assert [c.phase for c in checkpoints.list()] == ["before", "after"]
    [turn] = checkpoints.turns()
    assert turn.finished and [c.path for c in turn.changes] == ["b.txt"]
