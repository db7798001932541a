from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CORPUS, write
from mdagent.declarations.skillbody import read_body, substitute
from mdagent.declarations.skills import load_skill, name_problem


def write_skill(root: Path, folder: str, text: str | bytes) -> Path:
    return write(root / folder / "SKILL.md", text)


def loud(problems):
    """The problems an author must look at: warnings and errors, not info."""
    return [p for p in problems if p.severity != "info"]


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
    assert skill.dispatch == "tool" and skill.tool == "exec" and loud(problems) == []


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


@pytest.mark.parametrize("bad", ["Upper", "-lead", "trail-", "dou--ble", "sp ace", "un_der", ""])
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


def test_dispatch_without_tool_refuses_only_the_command(tmp_path):
    skill, problems = load_skill(
        write_skill(tmp_path, "x", "---\ndescription: d\ncommand-dispatch: tool\n---\n")
    )
    (error,) = [p for p in problems if p.severity == "error"]
    assert "command-tool" in error.message and error.line == 3
    assert error.message.startswith("/x: ") and "/x is refused" in error.message
    assert skill.name == "x" and skill.command_error == error.message


def test_unknown_arg_mode_is_an_error(tmp_path):
    skill, problems = load_skill(
        write_skill(
            tmp_path,
            "x",
            "---\ndescription: d\ncommand-dispatch: tool\ncommand-tool: exec\ncommand-arg-mode: shell\n---\n",
        )
    )
    (error,) = [p for p in problems if p.severity == "error"]
    assert error.line == 5 and "command-arg-mode" in error.message
    assert skill.command_error == error.message and skill.description == "d"


def test_unknown_keys_are_kept(tmp_path):
    skill, problems = load_skill(
        write_skill(tmp_path, "x", "---\ndescription: d\nemoji: 🦀\nversion: 2\n---\n")
    )
    assert skill.extra == {"emoji": "🦀", "version": 2} and loud(problems) == []


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
    assert [p.severity for p in loud(problems)] == ["warning"]


def test_missing_description_skips_the_skill_with_a_warning(tmp_path):
    """The Agent Skills client guide: skip it, and say so (**Changed**: it used to load)."""
    for text in ("---\nname: x\n---\nbody", "---\nname: x\ndescription: ''\n---\nbody"):
        skill, problems = load_skill(write_skill(tmp_path, "x", text))
        assert skill is None
        assert [(p.severity, p.path) for p in problems] == [
            ("warning", str(tmp_path / "x" / "SKILL.md"))
        ]
        assert "no description: skill 'x' is not loaded" in problems[0].message


@pytest.mark.parametrize("value", ["5", "true", "[1, {a: b}]", "{Bash: x}"])
def test_a_malformed_allowed_tools_warns_and_the_skill_loads(tmp_path, value):
    """The client guide: don't block loading on allowed-tools; warn (it used to drop the skill)."""
    text = f"---\nname: x\ndescription: d\nallowed-tools: {value}\n---\nbody"
    skill, problems = load_skill(write_skill(tmp_path, "x", text))
    assert skill is not None and skill.allowed_tools == []
    assert [(p.severity, p.line) for p in problems] == [("warning", 4)]
    assert "allowed-tools" in problems[0].message and "ignored" in problems[0].message


@pytest.mark.parametrize("dashes", ["----", "-----"])
def test_longer_dash_lines_are_no_front_matter_boundary(tmp_path, dashes):
    """Both references read exactly `---` (**Changed**: `----` was taken too)."""
    text = f"{dashes}\nname: x\ndescription: d\n{dashes}\nbody"
    skill, problems = load_skill(write_skill(tmp_path, "x", text))
    assert skill is None
    assert [(p.severity, p.line) for p in problems] == [("error", 1)]
    assert f"front-matter opens with '{dashes}'" in problems[0].message
    # In the body, after a real boundary, such a line is text (a Markdown rule).
    path = write_skill(tmp_path, "y", "---\nname: y\ndescription: d\n---\nabove\n----\nbelow\n")
    skill, problems = load_skill(path)
    assert skill is not None and problems == []
    assert read_body(path) == "above\n----\nbelow\n"


@pytest.mark.parametrize(
    ("content", "line", "needle"),
    [
        ("---\ndescription: d\n", 1, "never closes"),
        ("no front matter\n", 1, "no front-matter"),
        ("", 1, "empty"),
        ("---\ndescription: d\n\tname: x\n---\n", 3, "tab"),
        ("---\nname: x\nname: y\n---\n", 3, "duplicate key"),
        ('---\ndescription: "unclosed\n---\n', 3, "invalid YAML"),
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
    errors = [p for p in problems if p.severity == "error"]
    skipped = [p for p in problems if p.message.startswith("no description: ")]
    # No skill means an error (or the warning of a skill without a description) says
    # why; a skill with errors has only its command refused.
    assert (
        (errors or skipped)
        if skill is None
        else (not errors or skill.command_error == errors[0].message)
    )
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
    assert loud(problems) == [] and skill.requires == {"bins": ["no-such-bin"], "os": ["linux"]}


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


# -- issue 14: leniency, gating parity, the command part, pathological input ----------


def test_a_bom_and_crlf_line_ends_load_and_leave_the_body_clean(tmp_path):
    text = "\ufeff---\r\nname: win\r\ndescription: From Windows\r\n---\r\nLine one.\r\nTwo.\r\n"
    path = write_skill(tmp_path, "win", text.encode())
    skill, problems = load_skill(path)
    assert problems == [] and skill.description == "From Windows"
    assert read_body(path) == "Line one.\nTwo.\n"


def test_old_mac_cr_line_ends_load_too(tmp_path):
    path = write_skill(tmp_path, "cr", b"---\rname: cr\rdescription: From a Mac\r---\rBody.\r")
    skill, problems = load_skill(path)
    assert problems == [] and skill.description == "From a Mac"
    assert read_body(path) == "Body.\n"


@pytest.mark.parametrize("odd", ["\x1c", "\u2028", "\x85"])
def test_characters_splitlines_breaks_at_are_not_line_ends_of_the_front_matter(tmp_path, odd):
    """The front-matter's lines are found as its `---` pattern finds them: one line, no traceback."""
    text = f"---{odd}name: odd\ndescription: d\n---\nBody{odd}\n"
    skill, problems = load_skill(write_skill(tmp_path, "odd", text.encode()))
    assert skill is None
    assert [(p.line, p.message) for p in problems] == [
        (1, "no front-matter: a SKILL.md starts with a '---' line")
    ]
    text = f"---\nname: odd\ndescription: d{odd}x\n---{odd}\nBody\n"
    skill, problems = load_skill(write_skill(tmp_path, "odd2", text.encode()))
    assert skill is None and len(problems) == 1 and "\n" not in problems[0].message
    if odd == "\x1c":
        assert (problems[0].line, problems[0].col) == (3, 15)
        assert "character U+001C is not allowed" in problems[0].message


def test_an_unquoted_colon_in_a_one_line_value_is_read_as_text_with_a_warning(tmp_path):
    path = write_skill(
        tmp_path,
        "x",
        "---\nname: x\ndescription: Use when: the user asks\nargument-hint: [file] [mode]\n---\n",
    )
    skill, problems = load_skill(path)
    assert skill.description == "Use when: the user asks"
    assert skill.argument_hint == "[file] [mode]"
    assert [(p.line, p.col, p.severity) for p in problems] == [
        (3, 14, "warning"),
        (4, 16, "warning"),
    ]
    assert "unquoted ': '" in problems[0].message and "quotes" in problems[0].message


@pytest.mark.parametrize(
    "text",
    ["---\nname: x\nname: y\n---\n", "---\nname: x\nmetadata: {a: [1, 2}\n---\n"],
)
def test_the_fallback_never_hides_a_real_mistake(tmp_path, text):
    skill, problems = load_skill(write_skill(tmp_path, "x", text))
    assert skill is None and [p.severity for p in problems] == ["error"]


def test_quoted_booleans_and_enum_case_read_as_openclaw_reads_them(tmp_path):
    skill, problems = load_skill(
        write_skill(
            tmp_path,
            "x",
            "---\nname: x\ndescription: d\nuser-invocable: 'no'\ndisable-model-invocation: 'True'\n"
            "command-dispatch: Tool\ncommand-tool: exec\ncommand-arg-mode: PARSED\n"
            "argument-hint: [file]\n---\n",
        )
    )
    assert problems == []
    assert (skill.user_invocable, skill.disable_model_invocation) == (False, True)
    assert (skill.dispatch, skill.arg_mode, skill.argument_hint) == ("tool", "parsed", "[file]")


def test_cosmetic_limits_warn_and_load(tmp_path):
    long_name = "n" * 70
    skill, problems = load_skill(
        write_skill(
            tmp_path,
            long_name,
            f"---\nname: {long_name}\ndescription: d\ncompatibility: {'c' * 501}\n"
            "license: 3\nhomepage: [a]\n---\n",
        )
    )
    assert skill.name == long_name and skill.compatibility == "c" * 501
    assert (skill.license, skill.homepage) == ("3", '["a"]')
    assert [(p.line, p.severity) for p in problems] == [
        (2, "warning"),
        (4, "warning"),
        (5, "warning"),
        (6, "warning"),
    ]
    assert "70 characters" in problems[0].message and "500" in problems[1].message


def test_a_missing_name_is_the_folders_with_an_info_line(tmp_path):
    skill, problems = load_skill(write_skill(tmp_path, "from-folder", "---\ndescription: d\n---\n"))
    assert skill.name == "from-folder"
    assert [(p.severity, p.message) for p in problems] == [
        ("info", "no name: loaded as 'from-folder', the folder's name")
    ]


def test_unknown_keys_close_to_a_known_one_warn_others_are_kept_quietly(tmp_path):
    skill, problems = load_skill(
        write_skill(
            tmp_path,
            "x",
            "---\nname: x\ndescription: d\ncommand_tools: exec\nuser-invokable: false\n"
            "version: 1.2.0\ntags: [a]\n---\n",
        )
    )
    assert [(p.line, p.message) for p in problems] == [
        (4, "unknown key 'command_tools' (did you mean 'command-tool'?); ignored"),
        (5, "unknown key 'user-invokable' (did you mean 'user-invocable'?); ignored"),
    ]
    assert skill.extra == {
        "command_tools": "exec",
        "user-invokable": False,
        "version": "1.2.0",
        "tags": ["a"],
    }
    assert skill.user_invocable is True  # the misspelt key changes nothing


@pytest.mark.parametrize(
    ("metadata", "requires"),
    [
        ('{"openclaw": {"requires": {"bins": "git, gh", "anyBins": "a,b"}}}', {"bins": ["git", "gh"], "anyBins": ["a", "b"]}),
        ('{"openclaw": {"always": true, "os": ["linux"], "requires": {"bins": ["x"], "env": ["Y"], "config": ["c"]}}}', {"os": ["linux"]}),
        ('{"openclaw": {"always": "true", "requires": {"bins": ["x"]}}}', {}),
        ('{"clawdbot": {"requires": {"env": ["TOKEN"]}, "os": ["darwin"]}}', {"env": ["TOKEN"], "os": ["darwin"]}),
        ('{"openclaw": {"requires": {"bins": ["new"]}}, "clawdbot": {"requires": {"bins": ["old"]}}}', {"bins": ["new"]}),
        ("'{\"openclaw\": {\"requires\": {\"bins\": [\"jq\"]}}}'", {"bins": ["jq"]}),
        ("'{\"openclaw\": {\"requires\": {\"bins\": [\"jq\"],},},}'", {"bins": ["jq"]}),
        ('{"requires": {"config": ["browser.enabled"]}}', {"config": ["browser.enabled"]}),
    ],
)  # fmt: skip
def test_openclaw_gating(tmp_path, metadata, requires):
    skill, problems = load_skill(
        write_skill(tmp_path, "x", f"---\nname: x\ndescription: d\nmetadata: {metadata}\n---\n")
    )
    assert skill.requires == requires
    assert isinstance(skill.metadata, dict) and skill.metadata
    infos = [p for p in problems if p.severity == "info"]
    assert [p.line for p in loud(problems)] == []
    assert bool(infos) == ("config" in requires), problems


def test_metadata_that_is_no_mapping_is_a_warning(tmp_path):
    skill, problems = load_skill(
        write_skill(tmp_path, "x", "---\nname: x\ndescription: d\nmetadata: 'not json'\n---\n")
    )
    assert skill.metadata == {} and [(p.line, p.severity) for p in problems] == [(4, "warning")]


def test_a_broken_command_part_keeps_the_skill(tmp_path):
    skill, problems = load_skill(
        write_skill(
            tmp_path,
            "x",
            "---\nname: x\ndescription: d\ncommand-dispatch: model\ncommand-tool: exec\n---\n",
        )
    )
    (error,) = loud(problems)
    assert error.line == 4 and error.message.startswith("/x: command-dispatch: 'model'")
    assert skill.command_error == error.message and skill.description == "d"


def test_command_with_and_arguments_are_read(tmp_path):
    skill, problems = load_skill(
        write_skill(
            tmp_path,
            "x",
            "---\nname: x\ndescription: d\ncommand-dispatch: tool\ncommand-tool: exec\n"
            "arguments: [who, mood]\ncommand-with:\n  command: 'echo {who} {1}'\n---\n",
        )
    )
    assert problems == []
    assert skill.command_with == {"command": "echo {who} {1}"}
    assert skill.arguments == ["who", "mood"]
    assert skill.lines["command-with.command"] == 8 and skill.lines["command-tool"] == 5


def test_command_with_without_dispatch_is_ignored_with_a_warning(tmp_path):
    skill, problems = load_skill(
        write_skill(tmp_path, "x", "---\nname: x\ndescription: d\ncommand-with: {a: b}\n---\n")
    )
    assert skill.dispatch is None and [(p.line, p.severity) for p in problems] == [(4, "warning")]


def test_huge_files_and_alias_bombs_are_refused_before_they_cost_anything(tmp_path):
    huge = write_skill(tmp_path, "huge", "---\nname: huge\ndescription: d\n---\n" + "x" * (2 << 20))
    skill, problems = load_skill(huge)
    assert skill is None and problems[0].message.startswith("file too large: 2.0 MiB")
    fat = write_skill(
        tmp_path, "fat", "---\nname: fat\ndescription: " + "d" * (70 << 10) + "\n---\n"
    )
    skill, problems = load_skill(fat)
    assert skill is None and "front-matter too large" in problems[0].message
    laughs = "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9) if i else 'lol'}]\n" for i in range(9)
    )
    bomb = write_skill(tmp_path, "bomb", "---\nname: bomb\ndescription: d\n" + laughs + "---\n")
    skill, problems = load_skill(bomb)
    assert skill is None and "YAML aliases expand this document" in problems[0].message
    assert problems[0].line >= 4


# -- the folders a model's read may reach (mdagent.safety.workspace.confine's extra roots) --


def test_skill_read_roots_asks_the_registry_about_the_resolved_path(tmp_path, monkeypatch):
    import mdagent.declarations.skills
    from mdagent.core.calls import ToolContext
    from mdagent.declarations.skills import skill_read_roots

    asked = []

    def folders(skills, near):
        asked.append((skills, near))
        return [Path("/skills/one")]

    monkeypatch.setattr(mdagent.declarations.skills, "model_skill_folders", folders)

    class Registry:
        skills = {"one": object()}

    ctx = ToolContext(workdir=str(tmp_path))
    root = tmp_path.resolve()
    assert skill_read_roots(ctx, "x", root) == ()  # no registry: no skill folder
    ctx = ctx.replace(registry=Registry())
    assert skill_read_roots(ctx, "refs/../a.md", root) == (Path("/skills/one"),)
    assert skill_read_roots(ctx, "/abs/b.md", root) == (Path("/skills/one"),)
    assert asked == [
        (Registry.skills, root / "a.md"),
        (Registry.skills, Path("/abs/b.md")),
    ]
    Registry.skills = {}
    assert skill_read_roots(ctx, "x", root) == ()


def test_skill_read_roots_of_a_context_without_a_registry(tmp_path):
    from mdagent.declarations.skills import skill_read_roots

    assert skill_read_roots(object(), "x", tmp_path.resolve()) == ()
