import json
import logging
from pathlib import Path

import pytest

from mdagent import Result, Toolbox, ToolContext


def wc(args):
    path = Path(args["path"])
    if not path.exists():
        return {"error": f"not found: {args['path']}"}
    text = path.read_text()
    return {"lines": text.count("\n"), "words": len(text.split()), "bytes": len(text.encode())}


@pytest.fixture
def tb():
    box = Toolbox()
    box.add(
        "wc",
        description="Count lines, words, and bytes in a file",
        params={"path": {"type": "string", "description": "File to count"}},
        required=["path"],
        aliases=["count"],
        handler=wc,
        category="filesystem",
        security="safe",
    )
    return box


def test_design_worked_example_counts_a_file(tb, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("README.md").write_text("hello there\nworld\n")
    assert tb.run("wc", {"path": "README.md"}).to_dict() == {
        "lines": 2,
        "words": 3,
        "bytes": 18,
        "ok": True,
    }


def test_handler_error_is_a_failure(tb, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert tb.run("wc", {"path": "nope"}).to_dict() == {"error": "not found: nope", "ok": False}


def test_wrong_type_names_pointer_and_never_calls_handler():
    calls = []
    box = Toolbox()
    box.add(
        "wc",
        description="d",
        params={"path": {"type": "string"}},
        required=["path"],
        handler=lambda a: calls.append(a) or {},
    )
    result = box.run("wc", {"path": 5})
    assert not result.ok
    assert result.error == "value at `/path` is not of type 'string'"
    assert calls == []


def test_missing_required_names_pointer(tb):
    result = tb.run("wc", {})
    assert result.to_dict() == {"error": "value at `/path` is required", "ok": False}


def test_several_validation_errors_are_joined():
    box = Toolbox()
    box.add(
        "t",
        description="d",
        params={"a": {"type": "string"}, "b": {"type": "integer"}},
        required=["a", "b"],
        handler=lambda a: {},
    )
    error = box.run("t", {"a": 1, "b": "x"}).error
    assert error == "value at `/a` is not of type 'string', value at `/b` is not of type 'integer'"


def test_nested_pointer():
    box = Toolbox()
    box.add(
        "t",
        description="d",
        params={"items": {"type": "array", "items": {"type": "integer"}}},
        handler=lambda a: {},
    )
    assert box.run("t", {"items": [1, "two"]}).error.startswith("value at `/items/1`")


def test_extra_arguments_are_allowed(tb, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("f").write_text("x\n")
    assert tb.run("wc", {"path": "f", "extra": True}).ok


def test_plainly_valid_calls_need_no_jsonschema_and_invalid_ones_compile_it_once(
    tb, monkeypatch, tmp_path
):
    import jsonschema

    monkeypatch.chdir(tmp_path)
    Path("f").write_text("")
    built = []
    original = jsonschema.Draft202012Validator

    def counting(*a, **kw):
        built.append(1)
        return original(*a, **kw)

    monkeypatch.setattr(jsonschema, "Draft202012Validator", counting)
    for _ in range(5):
        assert tb.run("wc", {"path": "f"}).ok
    assert built == []  # the simple schema was checked without jsonschema
    for _ in range(3):
        assert "is not of type 'string'" in tb.run("wc", {"path": 5}).error
    assert len(built) == 1


def test_validation_failure_reaches_no_hook():
    seen = []
    box = Toolbox()
    box.add("t", description="d", params={"n": {"type": "integer"}}, handler=lambda a: {})
    box.before()(lambda args, tool_name: seen.append("global"))
    box.before("t")(lambda args: seen.append("tool"))
    box.after("t")(lambda args, result: seen.append("after"))
    assert not box.run("t", {"n": "x"}).ok
    assert seen == []


def test_alias_runs_the_tool(tb, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("f").write_text("a b\n")
    assert tb.run("count", {"path": "f"}).data["words"] == 2


def test_decorator_form_uses_function_name_and_docstring():
    box = Toolbox()

    @box.tool(params={"x": {"type": "integer"}}, required=["x"])
    def double(args):
        """Double a number."""
        return {"value": args["x"] * 2}

    assert box.tools["double"].description == "Double a number."
    assert box.run("double", {"x": 4}).data == {"value": 8}


def test_adding_existing_name_replaces_it_and_its_aliases():
    box = Toolbox()
    box.add("t", description="one", aliases=["old"], handler=lambda a: {"v": 1})
    box.add("t", description="two", aliases=["new"], handler=lambda a: {"v": 2})
    assert box.run("t").data == {"v": 2}
    assert box.aliases == {"new": "t"}
    assert list(box.tools) == ["t"]


def test_meta_is_kept():
    box = Toolbox()
    tool = box.add(
        "t",
        description="d",
        handler=lambda a: {},
        category="web",
        security="dangerous",
        tier="essential",
        approval=True,
        requires={"bins": ["x"]},
        rate_limit={"max_calls": 1, "window_ms": 10},
        timeout=5,
    )
    assert tool.meta == {
        "category": "web",
        "security": "dangerous",
        "tier": "essential",
        "approval": True,
        "requires": {"bins": ["x"]},
        "rate_limit": {"max_calls": 1, "window_ms": 10},
        "timeout": 5,
    }


def test_raised_exception_is_a_failure_with_details_and_logged(caplog):
    box = Toolbox()

    def boom(args):
        raise ValueError("bad value")

    box.add("boom", description="d", handler=boom)
    with caplog.at_level(logging.WARNING, logger="mdagent.tools.toolbox"):
        result = box.run("boom", {"a": 1})
    assert result.to_dict() == {
        "error": "bad value",
        "type": "ValueError",
        "name": "boom",
        "args": {"a": 1},
        "ok": False,
    }
    record = caplog.records[-1]
    assert record.levelno == logging.WARNING
    assert record.exc_info is not None and record.exc_info[0] is ValueError


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        (None, "tool returned no result"),
        ("text", "tool returned str, expected a dict"),
        ([1], "tool returned list, expected a dict"),
    ],
)
def test_non_dict_results_are_failures(returned, message):
    box = Toolbox()
    box.add("t", description="d", handler=lambda a: returned)
    assert box.run("t").to_dict() == {"error": message, "ok": False}


def test_hook_order():
    order = []
    box = Toolbox()
    box.add("t", description="d", handler=lambda a: order.append("handler") or {"x": 1})
    box.after("t")(lambda args, result: order.append("tool-after"))
    box.after()(lambda args, result, tool_name: order.append("global-after"))
    box.before("t")(lambda args: order.append("tool-before"))
    box.before()(lambda args, tool_name: order.append("global-before"))
    box.before()(lambda args, tool_name: order.append("global-before-2"))
    box.run("t")
    assert order == [
        "global-before",
        "global-before-2",
        "tool-before",
        "handler",
        "global-after",
        "tool-after",
    ]


def test_global_hooks_receive_tool_name():
    names = []
    box = Toolbox()
    box.add("t", description="d", handler=lambda a: {})
    box.before()(lambda args, tool_name: names.append(("before", tool_name)))
    box.after()(lambda args, result, tool_name: names.append(("after", tool_name)))
    box.run("t")
    assert names == [("before", "t"), ("after", "t")]


def test_raising_before_hook_stops_the_call():
    called = []
    box = Toolbox()
    box.add("t", description="d", handler=lambda a: called.append(1) or {})

    @box.before("t")
    def veto(args):
        raise RuntimeError("not today")

    result = box.run("t")
    assert not result.ok and result.error == "not today"
    assert called == []


def test_after_hook_gets_raw_dict_even_on_error():
    seen = []
    box = Toolbox()
    box.add("t", description="d", handler=lambda a: {"error": "nope"})
    box.after("t")(lambda args, result: seen.append(result))
    box.run("t")
    assert seen == [{"error": "nope"}]


def test_after_hook_gets_dict_without_ok():
    seen = []
    box = Toolbox()
    box.add("t", description="d", handler=lambda a: {"v": 1})
    box.after("t")(lambda args, result: seen.append(result))
    box.run("t")
    assert seen == [{"v": 1}]


def test_hooks_match_real_names_not_aliases():
    seen = []
    box = Toolbox()
    box.add("t", description="d", aliases=["a"], handler=lambda a: {})
    box.before("a")(lambda args: seen.append("alias hook"))
    box.before("t")(lambda args: seen.append("real hook"))
    box.run("a")
    assert seen == ["real hook"]


def test_unknown_tool_runs_no_hooks_and_lists_tools():
    seen = []
    box = Toolbox()
    box.add("b", description="d", handler=lambda a: {})
    box.add("a", description="d", handler=lambda a: {})
    box.before()(lambda args, tool_name: seen.append(tool_name))
    result = box.run("zzz", {})
    assert result.to_dict() == {"error": "unknown tool: zzz. Available: a, b", "ok": False}
    assert seen == []


def test_tool_for_follows_aliases_and_stands_in_for_unknown(tb):
    assert tb.tool_for("count").name == "wc"
    stand_in = tb.tool_for("nope")
    assert stand_in.name == "nope?"
    assert stand_in.run({}).error == "unknown tool: nope. Available: wc"


def test_tools_aliases_hooks_properties(tb):
    hook = tb.before("wc")(lambda args: None)
    assert list(tb.tools) == ["wc"]
    assert tb.aliases == {"count": "wc"}
    assert tb.hooks == {"before": {"wc": [hook]}, "after": {}}


def test_to_openai_and_anthropic_never_send_aliases(tb):
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "File to count"}},
        "required": ["path"],
    }
    assert tb.to_openai() == [
        {
            "type": "function",
            "function": {
                "name": "wc",
                "description": "Count lines, words, and bytes in a file",
                "parameters": schema,
            },
        }
    ]
    assert tb.to_anthropic() == [
        {
            "name": "wc",
            "description": "Count lines, words, and bytes in a file",
            "input_schema": schema,
        }
    ]
    names = [t["function"]["name"] for t in tb.to_openai()] + [t["name"] for t in tb.to_anthropic()]
    assert names == ["wc", "wc"]


def test_handler_with_context_can_call_another_tool_through_hooks():
    seen = []
    box = Toolbox()
    box.add(
        "inner",
        description="d",
        params={"n": {"type": "integer"}},
        handler=lambda a: {"n": a["n"] + 1},
    )
    box.before("inner")(lambda args: seen.append(args["n"]))

    def outer(args, ctx: ToolContext):
        assert ctx.toolbox is box
        good = ctx.toolbox.run("inner", {"n": 1})
        bad = ctx.toolbox.run("inner", {"n": "x"})
        return {"good": good.data, "bad": bad.error}

    box.add("outer", description="d", handler=outer)
    result = box.run("outer")
    assert result.data == {"good": {"n": 2}, "bad": "value at `/n` is not of type 'integer'"}
    assert seen == [1]


def test_context_fields_reach_the_handler():
    got = {}
    box = Toolbox()
    box.add("t", description="d", handler=lambda a, ctx: got.update(ctx=ctx) or {})
    ctx = ToolContext(tool_call_id="call_1", conversation_id="conv", workdir="/tmp", env={"A": "1"})
    box.run("t", {}, ctx)
    seen = got["ctx"]
    assert (seen.tool_call_id, seen.conversation_id, seen.workdir, seen.env["A"]) == (
        "call_1",
        "conv",
        "/tmp",
        "1",
    )
    assert seen.toolbox is box and not seen.cancel.is_set()


def test_result_accessors():
    ok = Result({"v": 1}, True)
    bad = Result.failure("broken", code="X")
    assert (ok.ok, ok.error, ok.data) == (True, None, {"v": 1})
    assert (bad.ok, bad.error) == (False, "broken")
    assert json.loads(bad.to_json()) == {"error": "broken", "code": "X", "ok": False}


def test_before_hook_refusal_is_a_denial():
    box = Toolbox()
    box.add("t", description="d", handler=lambda a: {})
    box.before("t")(lambda args: (_ for _ in ()).throw(RuntimeError("not allowed here")))
    assert box.run("t").to_dict() == {
        "error": "not allowed here",
        "code": "DENIED",
        "blocked_by": "hook",
        "ok": False,
    }


def test_handler_calling_exit_is_a_failure_not_the_end_of_the_process():
    box = Toolbox()

    def quits(args):
        raise SystemExit(3)

    box.add("quits", description="d", handler=quits)
    result = box.run("quits")
    assert not result.ok and result.error == "tool called exit(3)"


def test_policy_decision_and_observers():
    from mdagent.core.calls import Decision

    seen = []

    class Refuse:
        def check(self, tool, args, ctx):
            return (
                Decision(False, "no way", code="DENIED")
                if args.get("bad")
                else Decision(True, approved_by="test")
            )

    box = Toolbox(policy=Refuse())
    box.add("t", description="d", handler=lambda a: {"v": 1})
    box.observers.append(
        lambda name, args, result, decision, took, ctx: seen.append(
            (name, result.ok, decision.approved_by)
        )
    )
    assert box.run("t", {"bad": True}).to_dict() == {
        "error": "no way",
        "code": "DENIED",
        "ok": False,
    }
    assert box.run("t").ok
    assert seen == [("t", False, None), ("t", True, "test")]


class RecordingAudit:
    """An audit log in memory: ``start`` may fail, rows keep what ``finish`` said."""

    def __init__(self, fail_start=None, fail_finish=None):
        self.rows: list[dict] = []
        self.fail_start = fail_start
        self.fail_finish = fail_finish

    def start(self, tool_name, args, decision, ctx):
        if self.fail_start:
            raise self.fail_start
        self.rows.append({"tool": tool_name, "status": "started"})
        return len(self.rows) - 1

    def finish(self, row, tool_name, args, result, decision, took, ctx):
        if self.fail_finish:
            raise self.fail_finish
        if row is None:
            self.rows.append({"tool": tool_name, "status": "never ran"})
            row = len(self.rows) - 1
        self.rows[row].update(
            status="done", ok=result.ok, interrupted=result.data.get("interrupted")
        )


def test_the_audit_row_is_written_before_the_handler_runs():
    audit = RecordingAudit()
    box = Toolbox()
    seen = []
    box.add(
        "t",
        description="d",
        handler=lambda a: seen.append([dict(r) for r in audit.rows]) or {"v": 1},
    )
    box.audit = audit
    assert box.run("t").ok
    assert seen == [[{"tool": "t", "status": "started"}]]
    assert audit.rows == [{"tool": "t", "status": "done", "ok": True, "interrupted": None}]


def test_a_call_that_cannot_be_recorded_does_not_run():
    from mdagent.core.errors import StateError

    ran, told = [], []
    box = Toolbox()
    box.add("t", description="d", handler=lambda a: ran.append(a) or {})
    box.audit = RecordingAudit(fail_start=StateError("state database /s/mdagent.db: disk full"))
    box.observers.append(lambda name, args, result, *rest: told.append(result.data["code"]))
    result = box.run("t", {"x": 1})
    assert not result.ok and ran == [] and told == ["UNRECORDED"]
    assert (
        result.error == "not run: cannot record the call: state database /s/mdagent.db: disk full"
    )


def test_refused_calls_are_recorded_without_running():
    audit = RecordingAudit()
    box = Toolbox()
    box.add("t", description="d", params={"n": {"type": "integer"}}, handler=lambda a: {})
    box.audit = audit
    assert not box.run("t", {"n": "x"}).ok
    assert audit.rows == [{"tool": "t", "status": "done", "ok": False, "interrupted": None}]


def test_ctrl_c_completes_the_started_row_then_ends_the_call():
    audit = RecordingAudit()
    box = Toolbox()

    def interrupted(args):
        raise KeyboardInterrupt

    box.add("t", description="d", handler=interrupted)
    box.audit = audit
    with pytest.raises(KeyboardInterrupt):
        box.run("t")
    assert audit.rows == [{"tool": "t", "status": "done", "ok": False, "interrupted": True}]


def test_an_outcome_that_cannot_be_recorded_is_a_warning_on_the_result():
    box = Toolbox()
    box.add("t", description="d", handler=lambda a: {"v": 1})
    box.audit = RecordingAudit(fail_finish=OSError("disk full"))
    result = box.run("t")
    assert result.ok and result.data == {"v": 1, "audit_warning": "disk full"}
