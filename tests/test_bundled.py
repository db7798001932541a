"""The bundled layer's commands, as a new user meets them (README quick start)."""

import subprocess


def test_quick_start_command(run_agent):
    result = run_agent("/term", "echo", "hello", "from", "mdagent")
    assert (result.returncode, result.stdout) == (0, "hello from mdagent\n")


def test_count_uses_the_python_handler(workspace, run_agent):
    (workspace / "notes.txt").write_text("one two\nthree\n")
    assert run_agent("/count", "notes.txt").stdout == "      2       3      14 notes.txt\n"
    assert run_agent("/count", "missing.txt").returncode == 1
    assert run_agent("/count", "../outside").returncode == 126


def test_recent_runs_git_log_without_a_shell(workspace, run_agent):
    git = ["git", "-c", "user.email=a@example.org", "-c", "user.name=A"]
    subprocess.run([*git, "init", "-q"], cwd=workspace, check=True)
    for message in ("first", "second", "third"):
        subprocess.run(
            [*git, "commit", "-q", "--allow-empty", "-m", message], cwd=workspace, check=True
        )
    lines = run_agent("/recent", "2").stdout.splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == ["third", "second"]
    assert run_agent("/recent", "--count", "zero").returncode == 2


def test_todos_composes_the_confined_grep(workspace, run_agent):
    (workspace / "app.py").write_text("x = 1\n# TODO: tidy\n")
    assert run_agent("/todos").stdout == "app.py:2:# TODO: tidy\n"
    assert run_agent("/todos", "root", "/etc/passwd").returncode == 126


def test_prompt_skill_help(run_agent):
    result = run_agent("/commit-message", "--help")
    assert result.returncode == 0 and "agent turn" in result.stdout
