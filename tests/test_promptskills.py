"""Named arguments, command quoting and includes of prompt skills (mdagent.agent.promptskills)."""

from __future__ import annotations

import pytest

from conftest import write
from mdagent.agent.promptskills import bind_arguments, capped, command_script, is_foreign
from mdagent.core.errors import UsageError
from mdagent.core.specs import CommandSpec
from mdagent.declarations.skills import load_skill
from mdagent.tools.dispatch import complete_argument


def skill(tmp_path, front: str, body: str = "b\n", layer: str = "project"):
    path = write(
        tmp_path / "skills" / "s" / "SKILL.md", f"---\nname: s\ndescription: d\n{front}---\n{body}"
    )
    loaded, problems = load_skill(path, layer)
    assert loaded is not None, problems
    return loaded


ARGS = "arguments:\n  - name: base\n    default: main\n  - path\n"


def test_named_arguments_bind_by_option_then_position_then_default(tmp_path):
    s = skill(tmp_path, ARGS)
    assert bind_arguments(s, ["--base=dev", "x"]) == ({"base": "dev", "path": "x"}, [])
    assert bind_arguments(s, ["--path", "p"]) == ({"base": "main", "path": "p"}, [])
    assert bind_arguments(s, ["a", "b", "c"]) == ({"base": "a", "path": "b"}, ["c"])
    with pytest.raises(UsageError, match="missing argument: path"):
        bind_arguments(s, [])
    assert bind_arguments(s, [], strict=False) == ({"base": "main", "path": ""}, [])


def test_the_argument_hint_is_generated_unless_given(tmp_path):
    assert skill(tmp_path, ARGS).argument_hint == "[base] <path>"
    assert skill(tmp_path, ARGS + "argument-hint: '<p> [b]'\n").argument_hint == "<p> [b]"


def test_a_bad_argument_entry_or_model_is_reported(tmp_path):
    path = write(
        tmp_path / "skills" / "s" / "SKILL.md",
        "---\nname: s\ndescription: d\narguments: [{description: x}]\n---\n",
    )
    loaded, problems = load_skill(path)
    assert loaded is None and any("arguments" in p.message for p in problems)


@pytest.mark.parametrize(
    "raw, words, expected",
    [
        ("echo {0}", ["$(id)"], "echo '$(id)'"),
        ("git log -n {1} $HOME $1", ["a", "3"], "git log -n 3 $HOME $1"),
        ("echo $ARGUMENTS", ["a b", "c"], "echo 'a b' c"),
        ("awk '{print $1}' {0}", ["f"], "awk '{print $1}' f"),
    ],
)
def test_arguments_in_a_command_are_quoted_as_one_word(tmp_path, raw, words, expected):
    assert command_script(raw, skill(tmp_path, ""), words, {}) == expected


def test_only_skills_written_here_run_commands_without_asking(tmp_path):
    assert not is_foreign(skill(tmp_path, "", layer="project"))
    assert is_foreign(skill(tmp_path, "", layer="user"))
    assert is_foreign(skill(tmp_path, "", layer="user-claude"))
    write(tmp_path / "skills.lock", "skills:\n  s: {source: x}\n")
    assert is_foreign(skill(tmp_path, "", layer="project"))


def test_capped_output_says_how_much_was_cut():
    assert capped("abc", 5) == "abc"
    assert capped("x" * 10, 4) == "xxxx\n[... cut: 6 of 10 characters left out]"


def test_named_arguments_complete_as_options():
    command = CommandSpec(name="review", kind="prompt", arguments=["base", "path"])
    assert complete_argument(command, "--b") == ["--base"]
