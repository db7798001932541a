from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CORPUS, write
from mdagent.skills import load_skill, name_problem, read_body, substitute


def write_skill(root: Path, folder: str, text: str | bytes) -> Path:
    return write(root / folder / "SKILL.md", text)


def test_dispatch_skill_keys(tmp_path):
    path = write_skill(
        tmp_path,
        "my-command",
        "---\nname: my-command\ndescription: Mine\ncommand-dispatch: tool\n"
        "command-tool: exec\ncommand-arg-mode: parsed\nargument-hint: <x>\n---\nBody\n",
    )
    skill, problems = load_skill(path)
    assert problems == []
    assert (skill.name, skill.dispatch, skill.tool, skill.arg_mode, skill.argument_hint) == (
        "my-command",
        "tool",
        "exec",
        "parsed",
        "<x>",
    )


def test_underscore_spelling_of_dispatch_is_accepted(tmp_path):
    path = write_skill(
        tmp_path, "x", "---\ndescription: d\ncommand_dispatch: tool\ncommand_tool: exec\n---\n"
    )
    skill, problems = load_skill(path)
    assert skill.dispatch == "tool" and skill.tool == "exec" and problems == []


def test_folder_name_used_when_name_absent(tmp_path):
    skill, _ = load_skill(write_skill(tmp_path, "from-folder", "---\ndescription: d\n---\nx"))
    assert skill.name == "from-folder"


def test_name_differing_from_folder_is_a_warning(tmp_path):
    skill, problems = load_skill(
        write_skill(tmp_path, "folder", "---\nname: other\ndescription: d\n---\n")
    )
    assert skill.name == "other"
    assert [(p.severity, p.line) for p in problems] == [("warning", 2)]
    assert "differs from its folder" in problems[0].message


@pytest.mark.parametrize(
    "bad", ["Upper", "-lead", "trail-", "dou--ble", "sp ace", "x" * 65, "un_der"]
)
def test_bad_names_are_errors(tmp_path, bad):
    skill, problems = load_skill(
        write_skill(tmp_path, "f", f"---\nname: '{bad}'\ndescription: d\n---\n")
    )
    assert skill is None
    assert problems[0].severity == "error" and problems[0].line == 2


def test_name_rules():
    assert name_problem("pdf-tools2") is None
    assert name_problem("a" * 64) is None
    assert name_problem("") is not None


def test_dispatch_without_tool_is_an_error(tmp_path):
    skill, problems = load_skill(
        write_skill(tmp_path, "x", "---\ndescription: d\ncommand-dispatch: tool\n---\n")
    )
    assert skill is None
    assert problems[0].severity == "error" and "command-tool" in problems[0].message
    assert problems[0].line == 3


def test_unknown_arg_mode_is_an_error(tmp_path):
    skill, problems = load_skill(
        write_skill(
            tmp_path,
            "x",
            "---\ndescription: d\ncommand-dispatch: tool\ncommand-tool: exec\ncommand-arg-mode: shell\n---\n",
        )
    )
    assert skill is None
    assert problems[0].line == 5 and "command-arg-mode" in problems[0].message


def test_unknown_keys_are_kept(tmp_path):
    skill, problems = load_skill(
        write_skill(tmp_path, "x", "---\ndescription: d\nemoji: 🦀\nversion: 2\n---\n")
    )
    assert skill.extra == {"emoji": "🦀", "version": 2} and problems == []


def test_flags_and_allowed_tools(tmp_path):
    skill, _ = load_skill(
        write_skill(
            tmp_path,
            "x",
            "---\ndescription: d\nuser-invocable: false\ndisable-model-invocation: true\n"
            "allowed-tools: exec, read_file\nlicense: MIT\nhomepage: https://x.org\n---\n",
        )
    )
    assert not skill.user_invocable and skill.disable_model_invocation
    assert skill.allowed_tools == ["exec", "read_file"]
    assert (skill.license, skill.homepage) == ("MIT", "https://x.org")


def test_requires_from_metadata_and_openclaw(tmp_path):
    skill, _ = load_skill(
        write_skill(
            tmp_path,
            "x",
            '---\ndescription: d\nmetadata: {"openclaw": {"os": ["darwin"], "requires": {"bins": ["memo"], "env": ["TOKEN"]}}}\n---\n',
        )
    )
    assert skill.requires == {"bins": ["memo"], "env": ["TOKEN"], "os": ["darwin"]}
    other, _ = load_skill(
        write_skill(
            tmp_path, "y", "---\ndescription: d\nmetadata:\n  requires:\n    anyBins: [a, b]\n---\n"
        )
    )
    assert other.requires == {"anyBins": ["a", "b"]}


def test_long_description_loads_with_a_warning(tmp_path):
    skill, problems = load_skill(
        write_skill(tmp_path, "x", f"---\ndescription: {'a' * 1100}\n---\n")
    )
    assert skill is not None
    assert [p.severity for p in problems] == ["warning"]


def test_missing_description_loads_with_a_warning(tmp_path):
    skill, problems = load_skill(write_skill(tmp_path, "x", "---\nname: x\n---\nbody"))
    assert skill is not None and [p.severity for p in problems] == ["warning"]


@pytest.mark.parametrize(
    ("content", "line", "needle"),
    [
        ("---\ndescription: d\n", 1, "never closes"),
        ("no front matter\n", 1, "no front-matter"),
        ("", 1, "empty"),
        ("---\ndescription: d\n\tname: x\n---\n", 3, "tab"),
        ("---\nname: x\nname: y\n---\n", 3, "duplicate key"),
        ("---\ndescription: [unclosed\n---\n", 3, "invalid YAML"),
        ("---\n- a list\n---\n", 2, "mapping"),
        ("---\ndescription: 5\n---\n", 2, "description"),
    ],
)
def test_bad_files_are_one_problem_with_line(tmp_path, content, line, needle):
    skill, problems = load_skill(write_skill(tmp_path, "x", content))
    assert skill is None
    assert len(problems) == 1
    assert problems[0].severity == "error" and problems[0].line == line
    assert needle in problems[0].message


def test_non_utf8_names_the_line(tmp_path):
    skill, problems = load_skill(
        write_skill(tmp_path, "x", b"---\ndescription: ok\nname: \xff\n---\n")
    )
    assert skill is None
    assert problems[0].line == 3 and "UTF-8" in problems[0].message


def test_binary_file_named_skill_md(tmp_path):
    skill, problems = load_skill(write_skill(tmp_path, "x", bytes(range(256)) * 4))
    assert skill is None and "binary" in problems[0].message


def test_read_body_and_substitute(tmp_path):
    path = write_skill(
        tmp_path, "x", "---\ndescription: d\n---\nSay $ARGUMENTS[1] then $0 in ${SKILL_DIR}\n"
    )
    body = read_body(path)
    assert body == "Say $ARGUMENTS[1] then $0 in ${SKILL_DIR}\n"
    assert substitute(body, 'one "two words"', "/s") == "Say two words then one in /s\n"


def test_substitute_whole_arguments_and_append():
    assert substitute("Do $ARGUMENTS now", "a b", "/d") == "Do a b now"
    assert substitute("Do it", "a b", "/d") == "Do it\n\nARGUMENTS: a b\n"
    assert substitute("Do it", "", "/d") == "Do it"


front_matter_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.text(max_size=300),
        st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "description",
                    "command-dispatch",
                    "command-tool",
                    "command-arg-mode",
                    "metadata",
                    "x",
                ]
            ),
            front_matter_values,
            max_size=5,
        ),
    )
)
def test_generated_input_never_raises(tmp_path, data):
    import yaml

    if isinstance(data, dict):
        content = "---\n" + yaml.safe_dump(data, allow_unicode=True) + "---\nbody\n"
    elif isinstance(data, str):
        content = "---\n" + data + "\n---\n"
    else:
        content = data
    skill, problems = load_skill(write_skill(tmp_path, "gen", content))
    assert (skill is None) == any(p.severity == "error" for p in problems)
    for p in problems:
        assert p.path.endswith("SKILL.md") and p.line >= 1 and p.message


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus/openclaw-skills is absent")
def test_openclaw_corpus_loads_without_errors():
    folders = sorted(p.parent for p in CORPUS.glob("*/SKILL.md"))
    assert len(folders) >= 50
    for folder in folders:
        skill, problems = load_skill(folder / "SKILL.md")
        assert [p for p in problems if p.severity == "error"] == [], folder
        assert skill.name == folder.name
        assert skill.description


def test_a_string_requirement_is_a_one_item_list(tmp_path):
    skill, problems = load_skill(
        write_skill(
            tmp_path,
            "x",
            "---\ndescription: d\nmetadata: {requires: {bins: no-such-bin, os: linux}}\n---\n",
        )
    )
    assert problems == [] and skill.requires == {"bins": ["no-such-bin"], "os": ["linux"]}


def test_allowed_tools_become_rules_keeping_parentheses_whole(tmp_path):
    path = tmp_path / "review" / "SKILL.md"
    path.parent.mkdir()
    path.write_text(
        "---\nname: review\ndescription: d\n"
        "allowed-tools: Bash(git diff:*) Read(src/**), Bash(git log --oneline *) grep\n---\n"
    )
    skill, problems = load_skill(path)
    assert skill.allowed_tools == [
        "exec(git diff)",
        "exec(git diff *)",
        "read_file(src/**)",
        "exec(git log --oneline *)",
        "grep",
    ]
    assert problems == []


@pytest.mark.parametrize("entry", ["Bash", "exec", "Bash(*)", "Bash(:*)"])
def test_an_allowed_tools_entry_covering_every_command_is_a_warning_at_its_line(tmp_path, entry):
    path = tmp_path / "review" / "SKILL.md"
    path.parent.mkdir()
    path.write_text(
        f"---\nname: review\ndescription: d\nallowed-tools:\n  - Read\n  - {entry}\n---\n"
    )
    skill, problems = load_skill(path)
    (warning,) = problems
    assert (warning.line, warning.col, warning.severity) == (6, 5, "warning")
    assert "pre-approves every command" in warning.message
    assert skill is not None
