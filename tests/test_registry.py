import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import write
from mdagent.core.layers import Layer, find_layers
from mdagent.registry.compile import COMPILER_MODULES, compile_registry
from mdagent.registry.registry import load_registry


def skill(layer: Path, name: str, extra: str = "", folder: str | None = None) -> Path:
    return write(
        layer / "skills" / (folder or name) / "SKILL.md",
        f"---\nname: {name}\ndescription: {name} skill\n{extra}---\nBody of {name}\n",
    )


def only(tmp_path, *dirs):
    return [Layer(Path(d), "option") for d in dirs]


def index_file(cache: Path) -> Path:
    """The cache's index (``registry-KEY.json``), not its shards or the rest."""
    return next(p for p in cache.glob("registry-*.json") if p.name.count(".") == 1)


def messages(registry, severity=None):
    return [p.message for p in registry.problems if severity in (None, p.severity)]


def test_tools_commands_skills_compiled(tmp_path):
    layer = tmp_path / "l"
    write(
        layer / "config" / "t.yaml",
        "tools:\n  hello:\n    description: Say hi\n    params: {who: {type: string}}\n"
        "    run: [echo, 'hi {who}']\ncommands:\n  hi:\n    tool: hello\n    arg-mode: parsed\n",
    )
    skill(layer, "term", "command-dispatch: tool\ncommand-tool: exec\n")
    skill(layer, "explain")
    registry, _ = compile_registry(only(tmp_path, layer))
    assert registry.errors == []
    assert registry.tool("hello").implementation == {"run": ["echo", "hi {who}"]}
    assert registry.command("hi").tool == "hello"
    assert registry.command("term").kind == "tool" and registry.command("term").tool == "exec"
    assert registry.command("explain").kind == "prompt"
    assert registry.skill_body("explain") == "Body of explain\n"
    assert "exec" in registry.tools and registry.tool("bash").name == "exec"


def test_case_and_underscores_not_significant(tmp_path):
    layer = tmp_path / "l"
    skill(layer, "my-command", "command-dispatch: tool\ncommand-tool: exec\n")
    registry, _ = compile_registry(only(tmp_path, layer))
    assert registry.command("/My_Command").name == "my-command"


def test_higher_layer_wins_and_shadowing_is_info(tmp_path):
    high, low = tmp_path / "high", tmp_path / "low"
    skill(high, "same", "command-dispatch: tool\ncommand-tool: exec\n")
    skill(low, "same")
    registry, _ = compile_registry(only(tmp_path, high, low))
    assert registry.command("same").kind == "tool"
    assert registry.skills["same"].path.startswith(str(high))
    infos = [p for p in registry.problems if p.severity == "info"]
    assert infos and "shadowed" in infos[0].message and infos[0].path.startswith(str(low))


def test_same_name_twice_in_one_layer_is_an_error(tmp_path):
    layer = tmp_path / "l"
    skill(layer, "dup", folder="one")
    skill(layer, "dup", folder="two")
    registry, _ = compile_registry(only(tmp_path, layer))
    assert any("also declared" in m for m in messages(registry, "error"))


def test_yaml_command_and_skill_colliding_in_one_layer(tmp_path):
    layer = tmp_path / "l"
    write(layer / "config" / "c.yaml", "commands:\n  deploy:\n    tool: exec\n")
    skill(layer, "deploy")
    registry, _ = compile_registry(only(tmp_path, layer))
    assert any("already declared" in m for m in messages(registry, "error"))


@pytest.mark.parametrize("name", ["help", "tools", "exit", "sessions", "rewind"])
def test_reserved_names_are_errors(tmp_path, name):
    layer = tmp_path / "l"
    skill(layer, name)
    write(layer / "config" / "c.yaml", f"commands:\n  {name}:\n    tool: exec\n")
    registry, _ = compile_registry(only(tmp_path, layer))
    errors = messages(registry, "error")
    assert len(errors) == 2 and all("built-in" in m for m in errors)
    assert registry.command(name) is None


def test_tool_taking_a_builtin_name_is_an_error(tmp_path):
    layer = tmp_path / "l"
    write(layer / "config" / "t.yaml", "tools:\n  bash:\n    description: d\n    run: [x]\n")
    registry, _ = compile_registry(only(tmp_path, layer))
    assert registry.tool("bash").name == "exec"
    assert any("built-in tool" in m for m in messages(registry, "error"))


def test_command_tool_naming_no_tool_is_an_error(tmp_path):
    layer = tmp_path / "l"
    skill(layer, "ghost", "command-dispatch: tool\ncommand-tool: nothing\n")
    write(layer / "config" / "c.yaml", "commands:\n  phantom:\n    tool: missing\n")
    registry, _ = compile_registry(only(tmp_path, layer))
    errors = messages(registry, "error")
    assert any("command-tool 'nothing' names no tool" in m for m in errors)
    assert any("tool 'missing' names no tool" in m for m in errors)
    assert registry.command("ghost") is None and registry.command("phantom") is None


@pytest.mark.parametrize(
    ("decl", "needle"),
    [
        ("handler: handlers/missing.py:run", "missing.py"),
        ("tool: nothing\n    with: {}", "nothing"),
        ("run: [echo, '{nope}']", "nope"),
    ],
)
def test_load_time_implementation_errors(tmp_path, decl, needle):
    layer = tmp_path / "l"
    write(layer / "config" / "t.yaml", f"tools:\n  t:\n    description: d\n    {decl}\n")
    registry, _ = compile_registry(only(tmp_path, layer))
    errors = [p for p in registry.problems if p.severity == "error"]
    # At the implementation key's line (4), not the tool name's (2).
    assert errors and needle in errors[0].message and errors[0].line == 4
    assert registry.tool("t") is None


def test_bad_files_do_not_stop_the_rest_of_the_layer(tmp_path):
    layer = tmp_path / "l"
    skill(layer, "good")
    write(layer / "skills" / "broken" / "SKILL.md", "---\nname: broken\n")
    write(layer / "skills" / "binary" / "SKILL.md", bytes(range(256)))
    write(layer / "skills" / "empty" / "SKILL.md", "")
    write(layer / "config" / "bad.yaml", "tools:\n\tx: 1\n")
    write(layer / "config" / "ok.yaml", 'tools:\n  fine:\n    description: d\n    run: ["true"]\n')
    (layer / "skills" / "loop").symlink_to(layer / "skills" / "loop")
    registry, _ = compile_registry(only(tmp_path, layer))
    assert "good" in registry.skills and registry.tool("fine") is not None
    by_file = {
        Path(p.path).parent.name if p.path.endswith(".md") else Path(p.path).name
        for p in registry.errors
    }
    assert {"broken", "binary", "empty", "bad.yaml", "loop"} <= by_file


def test_settings_merge_across_layers(tmp_path):
    high, low = tmp_path / "high", tmp_path / "low"
    write(high / "config" / "agent.yaml", "policy:\n  deny: ['exec(rm *)']\n")
    write(low / "config" / "agent.yaml", "policy:\n  mode: full\n  deny: ['read_file(.env)']\n")
    registry, _ = compile_registry(only(tmp_path, high, low))
    assert registry.settings["policy"]["mode"] == "full"
    assert registry.settings["policy"]["deny"] == ["exec(rm *)", "read_file(.env)"]


def test_cache_is_used_then_rebuilt_on_change(tmp_path):
    layer = tmp_path / "l"
    skill(layer, "one")
    layers = only(tmp_path, layer)
    cache = tmp_path / "state"
    first = load_registry(layers, cache)
    assert not first.from_cache
    second = load_registry(layers, cache)
    assert second.from_cache and set(second.skills) == set(first.skills)
    skill(layer, "two")
    third = load_registry(layers, cache)
    assert not third.from_cache and "two" in third.skills
    time.sleep(0.01)
    write(layer / "skills" / "one" / "SKILL.md", "---\nname: one\ndescription: changed text\n---\n")
    assert load_registry(layers, cache).skills["one"].description == "changed text"
    (layer / "skills" / "two" / "SKILL.md").unlink()
    assert "two" not in load_registry(layers, cache).skills


def test_a_shard_of_another_compile_is_never_used(tmp_path):
    layer = tmp_path / "l"
    skill(layer, "one")
    cache = tmp_path / "state"
    load_registry(only(tmp_path, layer), cache)
    for shard in cache.glob("registry-*.shard-*.json"):
        data = json.loads(shard.read_text())
        data["token"] = "another-compile"
        data["skills"] = {}
        shard.write_text(json.dumps(data))
    warm = load_registry(only(tmp_path, layer), cache)
    assert warm.from_cache
    assert set(warm.skills) == {"one"}  # the mismatch is noticed: compiled again
    assert not warm.from_cache


def test_corrupt_cache_is_rebuilt(tmp_path):
    layer = tmp_path / "l"
    skill(layer, "one")
    cache = tmp_path / "state"
    load_registry(only(tmp_path, layer), cache)
    for f in cache.glob("registry-*.json"):
        f.write_text("{not json")
    assert "one" in load_registry(only(tmp_path, layer), cache).skills


def test_plain_yaml_is_compiled_without_pyyaml_and_a_warm_load_reads_no_yaml(tmp_path):
    layer = tmp_path / "l"
    skill(layer, "one", "command-dispatch: tool\ncommand-tool: exec\n")
    write(layer / "config" / "t.yaml", 'tools:\n  t:\n    description: d\n    run: ["true"]\n')
    code = (
        "import sys; from pathlib import Path\n"
        "from mdagent.core.layers import Layer\nfrom mdagent.registry.registry import load_registry\n"
        f"r = load_registry([Layer(Path({str(layer)!r}), 'option')], Path({str(tmp_path / 's')!r}))\n"
        "print(r.from_cache, 'yaml' in sys.modules, 'frontmatter' in sys.modules, 'u' in r.tools)\n"
    )

    def run() -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        return done.stdout.split()

    assert run() == ["False", "False", "False", "False"]  # cold: mdagent.core.yamlfast read it all
    assert run() == ["True", "False", "False", "False"]
    # YAML beyond the fast reader's part (an anchor) is read by PyYAML, as before.
    write(
        layer / "config" / "t.yaml",
        'tools:\n  t: &a\n    description: d\n    run: ["true"]\n  u: *a\n',
    )
    assert run() == ["False", "True", "False", "True"]


def test_many_processes_compiling_at_once_never_break_the_cache(tmp_path):
    layer = tmp_path / "l"
    for i in range(30):
        skill(layer, f"s{i}")
    state = tmp_path / "s"
    code = (
        "from pathlib import Path\nfrom mdagent.core.layers import Layer\n"
        "from mdagent.registry.registry import load_registry\n"
        f"r = load_registry([Layer(Path({str(layer)!r}), 'option')], Path({str(state)!r}))\n"
        "print(len(r.skills))\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert outs == ["30"] * 8
    index = json.loads(index_file(state).read_text())
    shards = [json.loads(f.read_text()) for f in state.glob("registry-*.shard-*.json")]
    assert len(shards) == index["shards"]
    assert sum(len(shard["skills"]) for shard in shards) == 30
    # whichever compile won, the registry always reads a complete set of skills
    assert len(load_registry([Layer(layer, "option")], state).skills) == 30
    assert not list(state.glob(".registry-*"))


def test_bundled_layer_is_clean():
    layers = [layer for layer in find_layers([], no_user=True) if layer.kind == "bundled"]
    registry, _ = compile_registry(layers)
    assert [p for p in registry.problems if p.severity != "info"] == []
    assert {"term", "count", "recent", "todos", "commit-message"} <= set(registry.commands)
    assert registry.command("count").arg_mode == "parsed"
    assert registry.command("recent").arg_mode == "parsed"
    assert registry.tool("wc").kind == "handler"
    assert registry.tool("recent-commits").kind == "run"
    assert registry.tool("todos").kind == "tool"
    assert registry.command("term").tool == "exec" and registry.command("term").arg_mode == "raw"
    assert registry.command("commit-message").kind == "prompt"
    assert os.path.basename(registry.skills["term"].path) == "SKILL.md"


def test_a_named_layer_that_does_not_exist_is_a_warning(tmp_path):
    registry, _ = compile_registry([Layer(tmp_path / "typo", "option")])
    assert [(p.severity, p.message) for p in registry.problems] == [
        ("warning", "--layer names no folder")
    ]


def test_raw_mode_on_a_tool_that_needs_other_parameters_is_an_error(tmp_path):
    layer = tmp_path / "l"
    write(
        layer / "config" / "t.yaml",
        "tools:\n  greet:\n    description: d\n    params: {name: {type: string}}\n    required: [name]\n"
        "    run: [echo, '{name}']\n  opt:\n    description: d\n    params: {name: {type: string}}\n"
        "    run: [echo, '{name}']\ncommands:\n  greet: {tool: greet}\n  opt: {tool: opt}\n",
    )
    registry, _ = compile_registry(only(tmp_path, layer))
    assert registry.command("greet") is None and registry.command("opt") is not None
    found = {(p.severity, p.message.split(":")[0]) for p in registry.problems}
    assert ("error", "/greet") in found and ("warning", "/opt") in found


# -- issue 14: broken command parts, interop layers, command-with ---------------------


def test_a_skill_whose_command_is_broken_stays_for_the_model(tmp_path):
    high, low = tmp_path / "high", tmp_path / "low"
    skill(high, "ghost", "command-dispatch: tool\ncommand-tool: exce\n")
    skill(low, "ghost", "command-dispatch: tool\ncommand-tool: exec\n")
    skill(high, "help")
    registry, _ = compile_registry(only(tmp_path, high, low))
    errors = {p.message.split(";")[0]: p.line for p in registry.errors}
    assert errors == {
        "/ghost: command-tool 'exce' names no tool (did you mean 'exec'?)": 5,
        "/help: 'help' is the name of a built-in command": 1,
    }
    # The skill loads; its /name does not, and the lower layer's never answers instead.
    assert registry.skills["ghost"].path.startswith(str(high))
    assert registry.skills["ghost"].command_error.startswith("/ghost: command-tool 'exce'")
    assert registry.command("ghost") is None and "help" in registry.skills
    assert registry.skills["help"].command_error


def test_unknown_command_tool_in_a_yaml_command_suggests_the_nearest(tmp_path):
    layer = tmp_path / "l"
    write(layer / "config" / "c.yaml", "commands:\n  x:\n    tool: reed_file\n")
    registry, _ = compile_registry(only(tmp_path, layer))
    assert [(p.line, p.message) for p in registry.errors] == [
        (2, "/x: tool 'reed_file' names no tool (did you mean 'read_file'?)")
    ]


@pytest.mark.parametrize(
    ("with_", "needle", "line"),
    [
        ("{comand: 'x'}", "'exec' has no parameter 'comand' (did you mean 'command'?)", 6),
        ("{timeout: 5}", "gives 'exec' no command, which it requires", 6),
        ("\n  command: 'echo {who}'", "{who} is not a typed word", 7),
        ("\n  command: 'echo ${0}'", "command-with.command:", 7),
        ("\n  command: 'echo {0'", "unclosed", 7),
    ],
)
def test_command_with_mistakes_refuse_the_command_at_their_line(tmp_path, with_, needle, line):
    layer = tmp_path / "l"
    skill(layer, "w", f"command-dispatch: tool\ncommand-tool: exec\ncommand-with: {with_}\n")
    registry, _ = compile_registry(only(tmp_path, layer))
    assert registry.errors, registry.problems
    first = registry.errors[0]
    assert needle in first.message and first.line == line, registry.errors
    assert registry.command("w") is None and registry.skills["w"].command_error


def test_command_with_compiles_into_the_command(tmp_path):
    layer = tmp_path / "l"
    skill(
        layer,
        "w",
        "command-dispatch: tool\ncommand-tool: exec\narguments: [a]\n"
        "command-with: {command: 'echo {a} {ARGUMENTS}'}\n",
    )
    registry, _ = compile_registry(only(tmp_path, layer))
    assert registry.errors == []
    command = registry.command("w")
    assert command.command_with == {"command": "echo {a} {ARGUMENTS}"} and command.arguments == [
        "a"
    ]


def test_interop_layers_load_skills_only_and_can_be_turned_off(tmp_path):
    project, claude = tmp_path / "p" / ".agents", tmp_path / "p" / ".claude" / "skills"
    write(claude / "group" / "lint" / "SKILL.md", "---\nname: lint\ndescription: d\n---\n")
    write(
        claude / "config" / "agent.yaml", "policy: {mode: full}\n"
    )  # a skill folder, not settings
    layers = [Layer(project, "project"), Layer(claude, "project-claude")]
    registry, _ = compile_registry(layers)
    assert "lint" in registry.skills and registry.settings["policy"]["mode"] == "ask"
    assert any(
        p.severity == "info" and "1 skill(s) read from project .claude/skills" in p.message
        for p in registry.problems
    )
    write(project / "config" / "agent.yaml", "skills:\n  interop: false\n")
    registry, _ = compile_registry(layers)
    assert "lint" not in registry.skills and registry.errors == []


def test_a_skill_added_to_a_group_folder_is_noticed_by_the_cache(tmp_path):
    layer = tmp_path / "l"
    skill(layer, "one", folder="group/one")
    layers = only(tmp_path, layer)
    assert "one" in load_registry(layers, tmp_path / "cache").skills
    time.sleep(0.01)
    skill(layer, "two", folder="group/two")
    registry = load_registry(layers, tmp_path / "cache")
    assert not registry.from_cache and "two" in registry.skills


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d.update(sources={"a": 1}),
        lambda d: d.update(registry=[]),
        lambda d: d["registry"].update(tools=["x"]),
        lambda d: d["registry"].update(settings_errors=[["too", "short"]]),
        lambda d: d.update(shards=0),
        lambda d: d["registry"]["tools"].update(t="not a record"),
        lambda d: d.pop("token"),
    ],
)
def test_a_cache_of_the_wrong_shape_is_rebuilt(tmp_path, damage):
    layer = tmp_path / "l"
    skill(layer, "one")
    write(layer / "config" / "t.yaml", 'tools:\n  t:\n    description: d\n    run: ["true"]\n')
    cache = tmp_path / "state"
    load_registry(only(tmp_path, layer), cache)
    main = index_file(cache)
    data = json.loads(main.read_text())
    damage(data)
    main.write_text(json.dumps(data))
    registry = load_registry(only(tmp_path, layer), cache)
    assert not registry.from_cache
    assert registry.tool("t") is not None and "one" in registry.skills


def test_a_file_saved_while_compiling_is_compiled_again_next_run(tmp_path, monkeypatch):
    """Stamp before read: the cache never pairs a new stamp with old content."""
    import mdagent.declarations.skills

    layer = tmp_path / "l"
    path = skill(layer, "one")
    real_load = mdagent.declarations.skills.load_skill

    def load_then_another_agent_saves(skill_file, *args, **kwargs):
        result = real_load(skill_file, *args, **kwargs)
        write(Path(skill_file), "---\nname: one\ndescription: saved during the compile\n---\n")
        return result

    monkeypatch.setattr(mdagent.declarations.skills, "load_skill", load_then_another_agent_saves)
    cache = tmp_path / "state"
    first = load_registry(only(tmp_path, layer), cache)
    assert first.skills["one"].description == "one skill"  # read before the save
    monkeypatch.setattr(mdagent.declarations.skills, "load_skill", real_load)
    second = load_registry(only(tmp_path, layer), cache)
    # The index is fresh; the skill's own stamp is not: looking it up compiles again.
    assert second.skills["one"].description == "saved during the compile"
    assert not second.from_cache
    assert path.read_text().count("saved during the compile") == 1


def test_every_compiler_module_the_cache_stamps_exists():
    # A path left behind by a move would stamp nothing: a changed compiler
    # would then leave old caches looking fresh.
    package = Path(__import__("mdagent").__file__).parent
    assert [m for m in COMPILER_MODULES if not (package / m).is_file()] == []
