import pytest

from mdagent.core.errors import UsageError
from mdagent.core.specs import CommandSpec, ToolSpec
from mdagent.declarations.commandargs import check_command_with
from mdagent.tools.dispatch import (
    build_call,
    help_text,
    parse_words,
    template_arguments,
    usage,
)

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
    with pytest.raises(UsageError, match="missing argument: pattern"):
        build_call(cmd("json"), TOOL, text="")  # nothing: {} without the required key
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
    from mdagent.tools.dispatch import complete_argument

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


# -- command-with: templates over the typed words (issue 14, item 11) -------------------

EXEC = ToolSpec(
    name="exec",
    description="run",
    params={"command": {"type": "string"}, "timeout": {"type": "number"}},
    required=["command"],
)
FETCH = ToolSpec(
    name="fetch", description="get", params={"url": {"type": "string"}}, required=["url"]
)


def wrap(with_, arguments=(), tool=EXEC, **kw):
    return CommandSpec(
        name="w", tool=tool.name, command_with=with_, arguments=list(arguments), **kw
    )


@pytest.mark.parametrize(
    "word", ["a b", "x; rm -rf /", "$(id)", "`id`", "'quote", '"dq"', "-rf", "{0}", "*", "~"]
)
def test_every_word_reaches_the_command_as_one_literal_word(word):
    import subprocess

    args = template_arguments(
        wrap({"command": "printf '[%s]' {ARGUMENTS}"}), EXEC, ["x", word], None
    )
    out = subprocess.run(["sh", "-c", args["command"]], capture_output=True, text=True).stdout
    assert out == f"[x][{word}]"


def test_positions_names_and_a_typed_line():
    command = wrap({"command": "cp {src} {1}", "timeout": 5}, arguments=["src"])
    assert template_arguments(command, EXEC, ["a b", "c"], None) == {
        "command": "cp 'a b' c",
        "timeout": 5,
    }
    assert template_arguments(command, EXEC, None, "'a b' c")["command"] == "cp 'a b' c"


def test_other_tools_get_the_words_as_text():
    command = wrap({"url": "https://example.org/api/{0}?q={{x}}"}, tool=FETCH)
    assert template_arguments(command, FETCH, ["items"], None) == {
        "url": "https://example.org/api/items?q={x}"
    }


@pytest.mark.parametrize(
    ("words", "needle"),
    [([], "needs 2 arguments, got 0"), (["a", "b", "c"], "too many arguments: c")],
)
def test_word_counts_are_usage_errors_with_the_usage_line(words, needle):
    command = wrap({"command": "cp {0} {1}"})
    with pytest.raises(UsageError) as err:
        template_arguments(command, EXEC, words, None)
    assert needle in str(err.value) and "usage: /w <0> <1>" in str(err.value)


def test_all_words_take_any_count():
    command = wrap({"command": "ls {ARGUMENTS}"})
    assert template_arguments(command, EXEC, [], None)["command"] == "ls "
    assert usage(command, EXEC) == "usage: /w [args...]"
    named = wrap({"command": "echo {who} {ARGUMENTS}"}, arguments=["who"])
    assert usage(named, EXEC) == "usage: /w <who> [args...]"
    assert help_text(named, EXEC).splitlines()[2:4] == [
        "Runs tool exec with:",
        "  command: echo {who} {ARGUMENTS}",
    ]


def test_check_command_with():
    assert check_command_with(wrap({"command": "du -sh {ARGUMENTS}"}), EXEC) == []
    problems = dict(check_command_with(wrap({"comand": "x", "timeout": "{n}"}), EXEC))
    assert (
        problems["comand"]
        == "command-with: 'exec' has no parameter 'comand' (did you mean 'command'?)"
    )
    assert "{n} is not a typed word" in problems["timeout"]
    assert "no command, which it requires" in problems[""]
    (unsafe,) = check_command_with(wrap({"command": "sh -c {0}"}), EXEC)
    assert unsafe[0] == "command" and "sh -c" in unsafe[1]


EXEC_LIKE = ToolSpec(
    name="exec", description="d", params={"command": {"type": "string"}}, required=["command"]
)
SAY = ToolSpec(name="say", description="d", params={"command": {"type": "string"}})


@pytest.mark.parametrize("given", [{"argv": []}, {"argv": ["  "]}, {"text": ""}, {"text": " \t"}])
def test_raw_mode_with_nothing_is_missing_when_the_tool_requires_its_command(given):
    with pytest.raises(UsageError, match=r"missing argument: <line>\nusage: /x <line>"):
        build_call(cmd("raw", argument_hint="<line>"), EXEC_LIKE, **given)
    assert build_call(cmd("raw"), SAY, **given).args["command"].strip() == ""


def test_a_leading_double_dash_is_dropped_except_in_parsed_mode():
    assert build_call(cmd("raw"), EXEC_LIKE, argv=["--", "-h"]).args["command"] == "-h"
    # Typed in the session the same way: `/term -- -h` (`--` is no command in any shell).
    assert build_call(cmd("raw"), EXEC_LIKE, text="-- -h").args["command"] == "-h"
    assert build_call(cmd("raw"), EXEC_LIKE, text="--x").args["command"] == "--x"
    assert build_call(cmd("json"), TOOL, argv=["--", '{"pattern": "x"}']).args == {"pattern": "x"}
    assert build_call(cmd("parsed"), TOOL, argv=["--", "-h"]).args == {"pattern": "-h"}


def test_parsed_mode_names_what_is_missing():
    with pytest.raises(UsageError, match=r"^/x: missing argument: pattern\nusage: /x <pattern>"):
        build_call(cmd("parsed"), TOOL, argv=["--count", "2"])
