import pytest

from mdagent.dispatch import build_call, help_text, parse_words, usage
from mdagent.errors import UsageError
from mdagent.specs import CommandSpec, ToolSpec

TOOL = ToolSpec(
    name="grep-ish",
    description="d",
    params={
        "pattern": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "ignore_case": {"type": "boolean"},
        "meta": {"type": "object"},
        "files": {"type": "array", "items": {"type": "string"}},
    },
    required=["pattern"],
)


def cmd(mode: str, **kw) -> CommandSpec:
    return CommandSpec(name="x", tool=TOOL.name, arg_mode=mode, **kw)


def test_raw_single_argument_taken_verbatim():
    call = build_call(cmd("raw", skill="x"), TOOL, argv=["ls | wc -l"])
    assert call.args == {"command": "ls | wc -l", "commandName": "x", "skillName": "x"}


def test_raw_several_arguments_keep_quoting():
    call = build_call(cmd("raw"), TOOL, argv=["grep", "a b", "f"])
    assert call.args["command"] == "grep 'a b' f"


def test_raw_string_as_typed():
    assert build_call(cmd("raw"), TOOL, text="echo 'x'  y").args["command"] == "echo 'x'  y"


def test_parsed_positionals_fill_params_in_order_and_array_takes_rest():
    args = parse_words(
        ["TODO", "3", "0.5", "true", '{"a": 1}', "a.py", "b.py"], TOOL, cmd("parsed")
    )
    assert args == {
        "pattern": "TODO",
        "count": 3,
        "ratio": 0.5,
        "ignore_case": True,
        "meta": {"a": 1},
        "files": ["a.py", "b.py"],
    }


def test_parsed_named_forms():
    args = parse_words(
        [
            "--count",
            "2",
            "--ratio=1.5",
            "pattern=x",
            "--ignore-case",
            "--files",
            "a",
            "--files",
            "b",
        ],
        TOOL,
        cmd("parsed"),
    )
    assert args == {
        "count": 2,
        "ratio": 1.5,
        "pattern": "x",
        "ignore_case": True,
        "files": ["a", "b"],
    }


def test_parsed_no_flag_and_double_dash():
    args = parse_words(["--no-ignore-case", "--", "--literal"], TOOL, cmd("parsed"))
    assert args == {"ignore_case": False, "pattern": "--literal"}


def test_parsed_string_input_is_shell_split():
    call = build_call(cmd("parsed"), TOOL, text="'two words' --count 4")
    assert call.args == {"pattern": "two words", "count": 4}


@pytest.mark.parametrize(
    ("words", "needle"),
    [
        (["--count", "many"], "not a valid integer"),
        (["--nope", "1"], "unknown option --nope"),
        (["--count"], "needs a value"),
        (["--meta", "[1]"], "not a valid object"),
    ],
)
def test_parsed_errors_carry_usage(words, needle):
    with pytest.raises(UsageError) as info:
        parse_words(words, TOOL, cmd("parsed"))
    assert needle in str(info.value)
    assert "usage: /x <pattern>" in str(info.value)


def test_too_many_positionals():
    tool = ToolSpec(name="t", description="d", params={"a": {"type": "string"}})
    with pytest.raises(UsageError, match="too many arguments: b c"):
        parse_words(["a", "b", "c"], tool, cmd("parsed"))


def test_json_mode():
    assert build_call(cmd("json"), TOOL, argv=['{"pattern":', '"x"}']).args == {"pattern": "x"}
    assert build_call(cmd("json"), TOOL, text="").args == {}
    with pytest.raises(UsageError, match="not valid JSON"):
        build_call(cmd("json"), TOOL, text="{nope")
    with pytest.raises(UsageError, match="JSON object"):
        build_call(cmd("json"), TOOL, text="[1]")


def test_usage_generated_from_schema():
    assert usage(cmd("parsed"), TOOL) == (
        "usage: /x <pattern> [--count N] [--ratio X] [--ignore_case] [--meta JSON] [files...]"
    )
    assert usage(cmd("raw"), TOOL) == "usage: /x <text...>"
    assert usage(cmd("raw", argument_hint="<cmd>"), TOOL) == "usage: /x <cmd>"


def test_help_text_lists_parameters():
    text = help_text(cmd("parsed", description="Search"), TOOL)
    assert text.splitlines()[0] == "/x - Search"
    assert "pattern" in text and "(required)" in text


def test_complete_argument_files_and_lists(tmp_path):
    from mdagent.dispatch import complete_argument

    (tmp_path / "a.txt").write_text("")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "inner.py").write_text("")
    (tmp_path / ".hidden").write_text("")
    files = CommandSpec(name="f", completions="files")
    assert complete_argument(files, "", str(tmp_path)) == ["a.txt", "dir/"]
    assert complete_argument(files, "dir/i", str(tmp_path)) == ["dir/inner.py"]
    assert complete_argument(files, ".h", str(tmp_path)) == [".hidden"]
    listed = CommandSpec(name="l", completions=["alpha", "beta"])
    assert complete_argument(listed, "b") == ["beta"]
    assert complete_argument(CommandSpec(name="n"), "x") == []
