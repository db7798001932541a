"""Memory files (mdagent.declarations.memory): which are read, in what order, and what they may import."""

from __future__ import annotations

from conftest import write
from mdagent.declarations import memory


def texts(found):
    return [m.text for m in found]


def test_hierarchy_from_the_root_to_the_current_folder_after_the_user_s(tmp_path):
    home, root = tmp_path / "home", tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    write(home / ".gemini" / "GEMINI.md", "U")
    write(root / "AGENTS.md", "A")
    write(root / "CLAUDE.local.md", "L")
    write(root / "CLAUDE.md", "C")
    write(root / "pkg" / "AGENTS.md", "PA")
    write(root / "other" / "AGENTS.md", "NO")
    found = memory.read_memory(root / "pkg", root, {}, {"HOME": str(home)})
    assert texts(found) == ["U", "A", "C", "L", "PA"]
    assert [m.scope for m in found] == ["user", "workspace", "workspace", "workspace", "workspace"]


def test_outside_a_project_the_nearest_agents_md_and_the_folder_s_own(tmp_path):
    write(tmp_path / "AGENTS.md", "ABOVE")
    write(tmp_path / "a" / "b" / "GEMINI.md", "HERE")
    found = memory.read_memory(tmp_path / "a" / "b", tmp_path / "a" / "b", {}, {"HOME": "/nx"})
    assert texts(found) == ["ABOVE", "HERE"]


def test_imports_are_confined_nested_and_skip_code(tmp_path):
    home, root = tmp_path / "home", tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    write(home / "mine.md", "MINE")
    write(tmp_path / "outside.md", "OUTSIDE")
    write(root / "a.md", "A @b.md")
    write(root / "b.md", "B @a.md")
    write(
        root / "CLAUDE.md",
        "@a.md\n@../outside.md\n@~/mine.md\nmail me@example.org\n```\n@a.md\n```\n`@a.md`\n",
    )
    write(home / ".claude" / "CLAUDE.md", "@~/mine.md @../../outside.md")
    found = memory.read_memory(root, root, {}, {"HOME": str(home)})
    user, workspace = found[0].text, found[1].text
    assert user.startswith("MINE") and "OUTSIDE" not in user
    assert "outside your home folder" in user
    lines = workspace.split("\n")
    assert lines[0] == "A B [@a.md: imported already]"
    assert lines[1] == "[@../outside.md not imported: outside the workspace]"
    assert lines[2] == "[@~/mine.md not imported: outside the workspace]"
    assert lines[3] == "mail me@example.org"
    assert lines[4:] == ["```", "@a.md", "```", "`@a.md`"]


def test_imports_nest_at_most_five_deep(tmp_path):
    (tmp_path / ".git").mkdir()
    for i in range(7):
        write(tmp_path / f"f{i}.md", f"F{i} @f{i + 1}.md")
    write(tmp_path / "CLAUDE.md", "@f0.md")
    text = memory.read_memory(tmp_path, tmp_path, {}, {"HOME": "/nx"})[0].text
    assert "F4" in text and "F5" not in text and "nest at most 5 deep" in text


def test_a_deny_rule_keeps_an_import_out(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".env", "SECRET")
    write(tmp_path / "CLAUDE.md", "@.env")
    found = memory.read_memory(
        tmp_path,
        tmp_path,
        {},
        {"HOME": "/nx"},
        denied=lambda p: "denied" if p.endswith(".env") else None,
    )
    assert found[0].text == "[@.env not imported: denied]"


def test_memory_is_capped(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path / "AGENTS.md", "a" * (memory.MAX_CHARS - 10))
    write(tmp_path / "CLAUDE.md", "b" * 100)
    write(tmp_path / "GEMINI.md", "c" * 100)
    found = memory.read_memory(tmp_path, tmp_path, {}, {"HOME": "/nx"})
    assert len(found) == 2
    assert found[1].text.startswith("b" * 10) and "memory cut" in found[1].text
