from mdagent import Commands


def test_register_and_run_passes_text_after_name():
    got = []
    cmds = Commands()

    @cmds.register("echo", "Echo text")
    def echo(args):
        got.append(args)

    assert cmds.run("echo", "hello world") is True
    assert cmds.run("/echo") is True
    assert got == ["hello world", None]


def test_unknown_command_returns_false():
    assert Commands().run("nope", "x") is False


def test_reregistering_replaces():
    got = []
    cmds = Commands()
    cmds.register("x", "first")(lambda a: got.append(1))
    cmds.register("x", "second")(lambda a: got.append(2))
    cmds.run("x")
    assert got == [2]
    assert list(cmds) == [("/x", "second")]


def test_names_sorted_with_slash_and_iteration():
    cmds = Commands()
    cmds.register("tools", "List tools")(lambda a: None)
    cmds.register("exit", "Leave")(lambda a: None)
    assert cmds.names() == ["/exit", "/tools"]
    assert list(cmds) == [("/exit", "Leave"), ("/tools", "List tools")]


def test_completions_from_list_and_callable():
    cmds = Commands()
    cmds.register("model", completions=["gpt-4o", "gpt-4o-mini", "claude"])(lambda a: None)
    cmds.register("skill", completions=lambda: ["alpha", "beta"])(lambda a: None)
    cmds.register("plain")(lambda a: None)
    assert cmds.completions_for("model", "gpt") == ["gpt-4o", "gpt-4o-mini"]
    assert cmds.completions_for("/skill") == ["alpha", "beta"]
    assert cmds.completions_for("plain", "x") == []
    assert cmds.completions_for("missing") == []


def test_clear():
    cmds = Commands()
    cmds.register("x")(lambda a: None)
    cmds.clear()
    assert cmds.names() == [] and cmds.run("x") is False


def test_case_and_underscore_are_not_significant():
    got = []
    cmds = Commands()
    cmds.register("my-command")(lambda a: got.append(a))
    assert cmds.run("/My_Command", "x")
    assert got == ["x"]
