"""Mapping other agents' files to ours (mdagent.declarations.interop), one rule at a time."""

from __future__ import annotations

import json

import pytest

from conftest import write
from mdagent.core.errors import ConfigError
from mdagent.declarations import interop


@pytest.mark.parametrize(
    "entry, section, rules",
    [
        ("Bash(curl:*)", "deny", ["exec(curl)", "exec(curl *)"]),
        ("Bash(npm run test)", "allow", ["exec(npm run test)"]),
        ("Bash", "deny", ["exec"]),
        ("Read(./.env)", "deny", ["read_file(.env)", "read_file(**/.env)"]),
        ("Read(./.env)", "allow", ["read_file(.env)"]),
        ("Read(./secrets/**)", "deny", ["read_file(secrets/**)"]),
        ("Read(//etc/passwd)", "deny", ["read_file(/etc/passwd)"]),
        ("Read(/src/**)", "allow", ["read_file(src/**)"]),
        ("Edit(docs/**)", "allow", ["edit_file(docs/**)", "write_file(docs/**)"]),
        ("WebFetch(domain:example.com)", "deny", ["fetch(domain:example.com)"]),
        ("mcp__github__create_issue", "deny", ["github__create_issue"]),
        ("mcp__github", "deny", ["github__*"]),
        ("mcp__github__*", "deny", ["github__*"]),
    ],
)
def test_claude_code_rules_as_ours(entry, section, rules):
    assert interop.claude_rules(entry, section) == rules


@pytest.mark.parametrize("entry", ["WebSearch", "Task(x)", "mcp__", "not a rule("])
def test_a_rule_with_no_counterpart_is_refused(entry):
    with pytest.raises(ConfigError):
        interop.claude_rules(entry, "deny")


def test_an_unmapped_deny_is_a_warning_and_an_unmapped_allow_is_info(tmp_path):
    path = write(
        tmp_path / ".claude" / "settings.json",
        json.dumps({"permissions": {"deny": ["WebSearch"], "allow": ["Task"]}}, indent=1),
    )
    settings, sources, problems = interop.read_settings("claude-permissions", path, "x")
    assert settings == {}
    assert [(p.severity, p.line) for p in problems] == [("warning", 4), ("info", 7)]
    assert "not mapped" in problems[0].message


def test_gemini_prompt_syntax_as_ours():
    got = interop.gemini_prompt("Fix {{args}}: !{git diff {{args}}} and @{README.md} !{a {b} c}")
    assert got == "Fix $ARGUMENTS: !`git diff $ARGUMENTS` and @{README.md} !`a {b} c`"
    # What our one-line live context cannot hold stays text, never half-run.
    assert interop.gemini_prompt("!{echo `x`}") == "!{echo `x`}"
    assert interop.gemini_prompt("!{unclosed") == "!{unclosed"


@pytest.mark.parametrize(
    "source, entry, mapped",
    [
        ("claude-mcp", {"command": "npx", "args": ["-y", "x"], "env": {"T": "${T:-d}"}},
         {"command": "npx", "args": ["-y", "x"], "env": {"T": "${T}"}}),
        ("claude-mcp", {"type": "http", "url": "https://h/mcp", "headers": {"A": "b"}},
         {"url": "https://h/mcp", "headers": {"A": "b"}}),
        ("gemini-mcp", {"httpUrl": "http://127.0.0.1:1/mcp", "timeout": 5000,
                        "excludeTools": ["rm"]},
         {"url": "http://127.0.0.1:1/mcp", "timeout": 5.0, "tools": {"deny": ["rm"]}}),
        ("codex-mcp", {"command": "srv", "startup_timeout_sec": 3, "tool_timeout_sec": 9,
                       "enabled": False, "enabled_tools": ["a"]},
         {"command": "srv", "args": [], "startup_timeout": 3, "timeout": 9, "enabled": False,
          "tools": {"allow": ["a"]}}),
    ],
)  # fmt: skip
def test_mcp_server_entries_as_ours(source, entry, mapped):
    assert interop.mcp_server(entry, source) == (mapped, "")


@pytest.mark.parametrize(
    "source, entry",
    [
        ("claude-mcp", {"type": "sse", "url": "http://h/sse"}),
        ("gemini-mcp", {"url": "http://h/sse"}),
        ("claude-mcp", {"command": "x", "url": "http://h"}),
        ("claude-mcp", {}),
        ("claude-mcp", {"url": "file:///x"}),
    ],
)
def test_mcp_entries_we_cannot_use_are_not_mapped(source, entry):
    server, why = interop.mcp_server(entry, source)
    assert server is None and why


def test_sources_turn_off_by_name_or_all_at_once():
    assert interop.enabled({}, "claude-commands")
    assert not interop.enabled({}, "openclaw-workspace-skills")
    assert not interop.enabled({"skills": {"interop": False}}, "claude-commands")
    named = {"skills": {"interop": {"claude-commands": False, "openclaw-workspace-skills": True}}}
    assert not interop.enabled(named, "claude-commands")
    assert interop.enabled(named, "openclaw-workspace-skills")
    assert interop.enabled(named, "gemini-commands")


def test_command_names_from_folders(tmp_path):
    write(tmp_path / "c" / "frontend" / "component.md", "x")
    write(tmp_path / "c" / "top.md", "x")
    write(tmp_path / "c" / ".hidden" / "h.md", "x")
    assert [n for n, _ in interop.command_files(tmp_path / "c", ".md")] == [
        "frontend:component",
        "top",
    ]
    assert [n for n, _ in interop.command_files(tmp_path / "c", ".md", "prompts")] == [
        "prompts:top"
    ]
    assert interop.name_problem("Bad Name") and interop.name_problem("a:b") is None


def test_one_based_arguments_of_legacy_commands_and_codex_prompts():
    assert interop.one_based("A $1 B $2 C $10 D $0") == "A $ARGUMENTS[0] B $ARGUMENTS[1] C $10 D $0"
