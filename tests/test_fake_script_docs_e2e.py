"""The fake provider's script format as the docs document it (issue 20, item 9).

The example is read from docs/models.md itself (the page the README's section
moved to, issue 37) — the script, the commands, the output — and run through
the real ``agent``, so the documentation and the behaviour cannot drift apart.
The keys its table lists are tried too.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, agent_executable, write

HEADING = "## A scripted model (no key): the fake provider"
PAGE = REPO / "docs" / "models.md"


def docs_section(heading: str = HEADING, page: Path = PAGE) -> str:
    """The page's text under ``heading``, up to the next heading of level 2 or 3."""
    text = page.read_text(encoding="utf-8")
    assert heading in text, f"{page.name} has no section {heading!r}"
    body = text.split(heading, 1)[1]
    return re.split(r"^#{2,3} ", body, maxsplit=1, flags=re.MULTILINE)[0]


def code_blocks(section: str) -> dict[str, str]:
    """The section's fenced blocks by language (``yaml``, ``console``): the first of each.

    The info string's first word is the language (``yaml file=demo.yaml``,
    ``console runnable``), as GitHub and MyST read it.
    """
    blocks: dict[str, str] = {}
    for language, body in re.findall(r"^```(\w+)[^\n]*\n(.*?)^```$", section, re.S | re.M):
        blocks.setdefault(language, body)
    return blocks


def run_shell(commands: str, cwd: Path) -> subprocess.CompletedProcess:
    """``commands`` run by sh in ``cwd``, with the installed ``agent`` first on PATH."""
    bin_dir = str(Path(agent_executable()).parent)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(
        ["sh", "-e", "-c", commands],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,  # no terminal: nothing can wait on a question
    )


def fake(run_agent, script: str, *args: str):
    write(Path.cwd() / "s.yaml", script)
    return run_agent("--provider", "fake", "--script", "s.yaml", "ask", *args, "go")


def console_commands_and_output(block: str) -> tuple[str, str]:
    """A ``console`` block's ``$ `` commands (one script) and the lines it shows after them."""
    lines = block.splitlines(keepends=True)
    commands = "".join(line[2:] for line in lines if line.startswith("$ "))
    shown = "".join(line for line in lines if not line.startswith("$ "))
    return commands, shown


def test_the_documented_example_script_runs_as_documented(workspace):
    blocks = code_blocks(docs_section())
    script = blocks["yaml"]
    name = script.splitlines()[0].removeprefix("# ").strip()  # `# demo.yaml`
    write(workspace / name, script)
    commands, shown = console_commands_and_output(blocks["console"])
    result = run_shell(commands, workspace)
    assert result.returncode == 0, result.stderr
    assert result.stdout == shown
    # The page shows stdout alone; the call and its outcome are on stderr.
    again = run_shell(commands.replace(" 2>/dev/null", ""), workspace)
    assert again.stdout == shown
    assert "→ exec  wc -l < notes.txt" in again.stderr
    assert "Traceback" not in again.stderr


def test_the_documented_example_reports_its_scripted_usage_in_json(workspace, run_agent):
    blocks = code_blocks(docs_section())
    write(workspace / "demo.yaml", blocks["yaml"])
    write(workspace / "notes.txt", "a\nb\nc\n")
    # --script alone: the fake provider, as the page says.
    result = run_agent("ask", "--script", "demo.yaml", "--yes", "--json", "hi")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["answer"] == "notes.txt has 3 lines."
    assert data["usage"] == {"input_tokens": 120, "output_tokens": 8}
    assert data["tool_calls"][0]["result"]["stdout"] == "3\n"


def test_the_documented_keys_do_what_the_table_says(workspace, run_agent):
    section = docs_section()
    for key in ("text", "tool_calls", "usage", "stop_reason", "error"):
        assert f"| `{key}` |" in section

    plain = fake(run_agent, '- "Hello!"\n')
    assert (plain.returncode, plain.stdout) == (0, "Hello!\n")

    outage = fake(run_agent, "- error: simulated outage\n")
    assert outage.returncode == 1
    assert outage.stderr.strip() == "agent: simulated outage"

    cut = fake(run_agent, "- {text: partial, stop_reason: max_tokens}\n")
    assert cut.returncode == 1
    assert cut.stdout == "partial\n" and "cut off at the token limit" in cut.stderr

    broken = fake(run_agent, '- tool_calls: [{name: exec, arguments: "{not json"}]\n- fixed\n')
    assert broken.returncode == 0
    assert broken.stdout == "fixed\n"


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (
            '- "one"\n- [bad]\n',
            "agent: s.yaml: reply 2: must be a mapping with text and/or tool_calls",
        ),
        (
            "- tool_calls: [{name: exec, arguments: {command: 'echo x'}}]\n",
            "agent: fake script exhausted after 1 reply",
        ),
    ],
)
def test_a_bad_or_short_script_says_so_in_one_line_and_exits_1(
    workspace, run_agent, script, message
):
    result = fake(run_agent, script, "--yes")
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == message
    assert message.split(": ", 1)[1] in docs_section().replace("demo.yaml", "s.yaml").replace(
        "N replies", "1 reply"
    )
