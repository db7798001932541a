import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import write
from mdagent.declarations.declarations import load_declarations, load_settings, merge_settings


def test_every_tool_field(tmp_path):
    path = write(
        tmp_path / "config" / "t.yaml",
        """tools:
  wc:
    description: Count
    params:
      path: {type: string}
    required: [path]
    aliases: [count]
    category: filesystem
    security: safe
    tier: essential
    approval: true
    requires: {bins: [wc], env: [], os: [linux, darwin]}
    rate_limit: {max_calls: 10, window_ms: 60000}
    timeout: 30
    run: [wc, "{path}"]
commands:
  count:
    description: Count a file
    tool: wc
    arg-mode: parsed
    completions: files
    argument-hint: <file>
""",
    )
    tools, commands, problems = load_declarations(path, "project")
    assert problems == []
    tool = tools[0]
    assert (tool.name, tool.aliases, tool.category, tool.security, tool.tier, tool.approval) == (
        "wc",
        ["count"],
        "filesystem",
        "safe",
        "essential",
        True,
    )
    assert tool.requires == {"bins": ["wc"], "env": [], "os": ["linux", "darwin"]}
    assert tool.rate_limit == {"max_calls": 10, "window_ms": 60000} and tool.timeout == 30
    assert tool.implementation == {"run": ["wc", "{path}"]} and tool.line == 2
    command = commands[0]
    assert (command.name, command.tool, command.arg_mode, command.completions) == (
        "count",
        "wc",
        "parsed",
        "files",
    )
    assert command.line == 17


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("tools:\n  a:\n    description: d\n    security: unsafe\n    run: [x]\n", 4, "security"),
        ("tools:\n  a:\n    description: d\n    category: nope\n    run: [x]\n", 4, "category"),
        ("tools:\n  a:\n    description: d\n    tier: huge\n    run: [x]\n", 4, "tier"),
        (
            "tools:\n  a:\n    description: d\n    runn: [x]\n",
            4,
            "unknown key (did you mean 'run'?)",
        ),
        ("tools:\n  a:\n    params: {}\n    run: [x]\n", 2, "description"),
        ("tools:\n  a:\n    description: d\n    run: x\n", 4, "run"),
        ("commands:\n  c:\n    tool: x\n    arg-mode: shell\n", 4, "arg-mode"),
        ("tools:\n  a:\n    description: d\n  a:\n    description: e\n", 4, "duplicate key"),
        ("tools:\n\ta: 1\n", 2, "tab"),
        ("tools: [\n", 2, "invalid YAML"),
    ],
)
def test_bad_declarations_are_problems_with_lines(tmp_path, text, line, needle):
    tools, commands, problems = load_declarations(write(tmp_path / "t.yaml", text))
    assert tools == [] and commands == []
    assert problems and problems[0].severity == "error"
    assert problems[0].line == line, problems
    assert needle in problems[0].message


def test_one_bad_tool_does_not_take_its_neighbours_down(tmp_path):
    text = "tools:\n  good:\n    description: d\n    run: [x]\n  bad:\n    description: d\n    security: no\n    run: [x]\n"
    tools, _, problems = load_declarations(write(tmp_path / "t.yaml", text))
    assert [t.name for t in tools] == ["good"]
    assert len(problems) == 1 and problems[0].line == 7


@pytest.mark.parametrize("names", [('"1"', "1"), ("1", '"1"'), ("'True'", "true")])
def test_tools_whose_names_read_alike_each_keep_their_own_declaration(tmp_path, names):
    """`1:` and `"1":` are one name once made text: neither may take the other's command."""
    first, second = names
    path = write(
        tmp_path / "t.yaml",
        f"tools:\n  {first}:\n    description: lists files\n    run: [ls]\n"
        f"  {second}:\n    description: other\n    run: [rm, -rf, /tmp/x]\n",
    )
    tools, _, _ = load_declarations(path)
    runs = {t.description: t.implementation["run"] for t in tools}
    assert runs == {"lists files": ["ls"], "other": ["rm", "-rf", "/tmp/x"]}


def test_empty_file_is_a_warning(tmp_path):
    tools, commands, problems = load_declarations(write(tmp_path / "t.yaml", "\n"))
    assert [(p.severity, p.message) for p in problems] == [("warning", "empty file")]


def test_settings_validated_and_merged(tmp_path):
    high, problems = load_settings(
        write(
            tmp_path / "h.yaml",
            "policy:\n  mode: allowlist\n  deny: ['exec(rm *)']\nexec: {timeout: 5}\n",
        )
    )
    assert problems == []
    low = {
        "policy": {"deny": ["read_file(**/.env)"], "allow": ["glob"]},
        "exec": {"max_output": 5000},
    }
    merged = merge_settings([high, low])
    assert merged["policy"]["mode"] == "allowlist"
    assert merged["policy"]["deny"] == ["exec(rm *)", "read_file(**/.env)"]
    assert merged["policy"]["allow"] == ["glob"]
    assert merged["exec"] == {"timeout": 5, "max_output": 5000}
    assert merged["agent"]["max_steps"] == 25


def test_bad_settings_are_refused_whole(tmp_path):
    settings, problems = load_settings(
        write(tmp_path / "a.yaml", "policy:\n  mode: sometimes\n  deny: [x]\n")
    )
    assert settings == {}
    assert problems[0].line == 2 and "mode" in problems[0].message


def test_unknown_settings_section_is_an_error(tmp_path):
    _, problems = load_settings(write(tmp_path / "a.yaml", "polcy:\n  mode: ask\n"))
    assert problems and "polcy" in problems[0].message


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)
tool_fields = st.dictionaries(
    st.sampled_from(
        [
            "description",
            "params",
            "required",
            "run",
            "shell",
            "security",
            "tier",
            "timeout",
            "with",
            "tool",
            "http",
        ]
    ),
    yaml_values,
    max_size=5,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.one_of(
        st.binary(max_size=200),
        st.text(max_size=200),
        st.dictionaries(
            st.sampled_from(["tools", "commands", "other"]),
            st.dictionaries(st.text(max_size=8), tool_fields, max_size=2),
            max_size=2,
        ),
    )
)
def test_generated_yaml_never_raises_and_problems_have_lines(tmp_path, data):
    path = tmp_path / "gen.yaml"
    if isinstance(data, bytes):
        path.write_bytes(data)
    elif isinstance(data, str):
        path.write_text(data)
    else:
        path.write_text(yaml.safe_dump(data, allow_unicode=True))
    tools, commands, problems = load_declarations(path)
    for problem in problems:
        assert problem.path == str(path) and problem.line >= 1 and problem.message
    if not any(p.severity == "error" for p in problems) and isinstance(data, dict):
        assert len(tools) == len(data.get("tools", {}))


# -- settings the runtime would refuse -------------------------------------------------


def test_the_provider_enum_is_the_providers_registry():
    from mdagent.declarations.schemas import schema
    from mdagent.providers import PROVIDERS

    assert schema("settings")["properties"]["model"]["properties"]["provider"]["enum"] == sorted(
        PROVIDERS
    )


def test_an_unknown_provider_is_refused_at_its_line(tmp_path):
    settings, problems = load_settings(
        write(tmp_path / "agent.yaml", "model:\n  name: x\n  provider: opneai\n")
    )
    assert settings == {}
    assert [(p.line, p.severity) for p in problems] == [(3, "error")]
    assert "model.provider" in problems[0].message and "'openai'" in problems[0].message


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ('policy:\n  deny: ["exec(rm -rf"]\n', 2, "policy.deny[0]: invalid rule 'exec(rm -rf'"),
        ("policy:\n  allow: [read_file, 'exec(git']\n", 2, "policy.allow[1]: invalid rule"),
        ('hooks:\n  before:\n    - {run: "  "}\n', 3, "hooks.before[0]: `run` is empty"),
        (
            "hooks:\n  after:\n    - {run: x}\n    - {tool: 'exec(git *)', run: x}\n",
            4,
            "hooks.after[1]: `tool` must be a tool name or glob",
        ),
    ],
)
def test_rules_and_hooks_are_checked_as_the_runtime_checks_them(tmp_path, text, line, needle):
    settings, problems = load_settings(write(tmp_path / "agent.yaml", text))
    assert settings == {}  # refused whole, like a schema error
    assert len(problems) == 1, problems
    problem = problems[0]
    assert (problem.path, problem.line, problem.severity) == (
        str(tmp_path / "agent.yaml"),
        line,
        "error",
    )
    assert problem.message.startswith(needle)


def test_a_list_the_schema_faults_is_reported_once(tmp_path):
    _, problems = load_settings(write(tmp_path / "a.yaml", "hooks:\n  before:\n    - {tool: x}\n"))
    assert len(problems) == 1 and "'run' is a required property" in problems[0].message


def test_valid_rules_and_hooks_pass(tmp_path):
    text = (
        "policy:\n  allow: ['bash(git status:*)', read_file, 'write_file(src/**)']\n"
        "  deny: ['exec(rm -rf *)']\n"
        "hooks:\n  before: [{tool: bash, run: ./guard.sh, timeout: 5}]\n"
    )
    settings, problems = load_settings(write(tmp_path / "agent.yaml", text))
    assert problems == [] and settings["hooks"]["before"][0]["tool"] == "bash"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("exec: {timeout: 5}\npolicy:\n  deny: ['exec(rm -rf']\n", 3),
        ("hooks:\n  before:\n    - {run: '  '}\n", 3),
        ("model:\n  provider: opneai\n", 2),
    ],
)
def test_agent_check_fails_where_every_command_would(workspace, run_agent, text, line):
    write(workspace / ".agents" / "config" / "agent.yaml", text)
    result = run_agent("check")
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"agent.yaml:{line}:" in result.stdout + result.stderr


# -- issue 14: every mistake at its key's line, as providers and jsonschema will judge ----


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("polcy:\n  deny: [x]\n", [(1, 1, "polcy: unknown key (did you mean 'policy'?)")]),
        ("exec: {timeout: 3}\nagent:\n  max_step: 3\n", [(3, 3, "agent.max_step: unknown key (did you mean 'max_steps'?)")]),
        ("policy:\n  deny: []\n  alow: [x]\n  zzz: 1\n", [(3, 3, "policy.alow: unknown key (did you mean 'allow'?)"), (4, 3, "policy.zzz: unknown key")]),
        ("skills:\n  interop: nope\n", [(2, 3, "skills.interop: expected true, false, or a mapping of source name to true/false")]),
    ],
)  # fmt: skip
def test_settings_mistakes_at_their_key_with_did_you_mean(tmp_path, text, expected):
    settings, problems = load_settings(write(tmp_path / "agent.yaml", text))
    assert settings == {}  # refused whole: a typo'd key never drops a deny list silently
    assert [(p.line, p.col, p.message) for p in problems] == expected


def test_skills_interop_is_a_setting(tmp_path):
    settings, problems = load_settings(write(tmp_path / "agent.yaml", "skills: {interop: false}\n"))
    assert problems == [] and settings == {"skills": {"interop": False}}
    assert merge_settings([])["skills"] == {"interop": True}


@pytest.mark.parametrize(
    ("params", "line", "col", "needle"),
    [
        ("a: {type: strng}", 5, 11, "params.a.type: 'strng' is not a JSON Schema type (did you mean 'string'?)"),
        ("a: {type: int}", 5, 11, "(did you mean 'integer'?)"),
        ("a: {type: [str, 'null']}", 5, 11, "'str' is not a JSON Schema type (did you mean 'string'?)"),
        ("a: {type: dict}", 5, 11, "(did you mean 'object'?)"),
        ("a: {type: string, maxLength: -1}", 5, 25, "params.a.maxLength: -1 is less than the minimum of 0"),
        ("'a b': {type: string}", 5, 7, "'a b' is not a parameter name providers accept"),
        ("'a': {type: object, properties: {x: {$ref: '#/defs/y'}}}", 5, 44, "params.a.properties.x.$ref: '#/defs/y' cannot be resolved"),
    ],
)  # fmt: skip
def test_param_schemas_are_checked_against_the_metaschema(tmp_path, params, line, col, needle):
    text = f"tools:\n  t:\n    description: d\n    params:\n      {params}\n    run: [x]\n"
    tools, _, problems = load_declarations(write(tmp_path / "t.yaml", text))
    assert tools == []
    assert [(p.line, p.col, p.severity) for p in problems][:1] == [(line, col, "error")], problems
    assert needle in problems[0].message


def test_good_params_pass_the_metaschema(tmp_path):
    text = (
        "tools:\n  t:\n    description: d\n    params:\n"
        "      path.name: {type: [string, 'null'], description: x}\n"
        "      n: {type: integer, minimum: 0}\n"
        "      o: {type: object, $defs: {s: {type: string}}, properties: {s: {$ref: '#/properties/o/$defs/s'}}}\n"
        "    run: [x]\n"
    )
    tools, _, problems = load_declarations(write(tmp_path / "t.yaml", text))
    assert problems == [] and len(tools) == 1


def test_a_schema_that_escaped_the_checks_fails_the_call_never_the_agent():
    from mdagent.tools.toolbox import Toolbox

    box = Toolbox()
    box.add("odd", description="d", params={"x": {"$ref": "#/nope"}}, handler=lambda a: {})
    result = box.run("odd", {"x": 1})
    assert not result.ok and result.error.startswith("cannot check arguments against the schema")


LAUGHS = "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9) if i else 'lol'}]\n" for i in range(9)
)


def test_alias_bombs_and_huge_files_are_refused(tmp_path):
    _, _, problems = load_declarations(write(tmp_path / "bomb.yaml", LAUGHS))
    assert [p.severity for p in problems] == ["error"]
    assert "YAML aliases expand this document" in problems[0].message
    _, problems = load_settings(write(tmp_path / "agent.yaml", "x: &a [1]\n" + LAUGHS))
    assert "YAML aliases" in problems[0].message
    big = write(tmp_path / "big.yaml", "tools: {}\n" + "#" * (2 << 20))
    _, _, problems = load_declarations(big)
    assert problems[0].message == "file too large: 2.0 MiB (a YAML file may be at most 1.0 MiB)"


def test_a_few_aliases_are_fine(tmp_path):
    text = (
        "tools:\n  a: {description: d, params: &p {path: {type: string}}, run: [x]}\n"
        "  b: {description: d, params: *p, run: [y]}\n"
    )
    tools, _, problems = load_declarations(write(tmp_path / "t.yaml", text))
    assert problems == [] and [t.name for t in tools] == ["a", "b"]
    assert tools[1].params == {"path": {"type": "string"}}
