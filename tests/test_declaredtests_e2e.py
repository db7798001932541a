"""``agent test`` (issue 21) through the real ``agent`` executable.

Declared tests in a tool's YAML, a command's YAML and a command skill's
front-matter: passing and failing ones, a test that writes a file leaving
the workspace as it was, the summary line and exit status, ``--json``, the
caller's policy (asks refused unless ``approve: true``, deny rules always),
and a malformed ``tests:`` entry reported by ``agent check`` at its line.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import write

TOOLS = """\
tools:
  lines:
    description: Count the lines of a file
    params:
      path: {type: string}
    required: [path]
    run: [wc, -l, "{path}"]
    tests:
      - name: counts README
        approve: true
        args: {path: README.md}
        expect: {ok: true, contains: "2 README.md", exit: 0}
      - name: miscounts README
        approve: true
        args: {path: README.md}
        expect: {output: "3 README.md"}
  scribble:
    description: Write a file
    params:
      name: {type: string}
    required: [name]
    run: [sh, -c, 'echo scribbled > "$1" && cat "$1"', sh, "{name}"]
    tests:
      - name: writes a file
        approve: true
        args: {name: new.txt}
        expect: {ok: true, output: scribbled}
commands:
  lines:
    tool: lines
    arg-mode: parsed
    tests:
      - name: typed
        approve: true
        argv: README.md
        expect: {exit: 0, matches: '^2 README'}
      - name: no path is a usage error
        argv: ""
        expect: {exit: 2, error: path}
"""

SKILL = """\
---
name: shout
description: Run a command for the user
command-dispatch: tool
command-tool: exec
tests:
  - name: echoes
    approve: true
    argv: "echo HELLO"
    expect: {contains: HELLO, json: {/exit_code: 0}}
  - name: wrong word
    approve: true
    argv: "echo HELLO"
    expect: {contains: GOODBYE}
  - name: removal is denied
    approve: true
    argv: "rm -rf build"
    expect: {denied: true, exit: 126}
---
Run it.
"""

DENY_RM = "policy:\n  deny: ['exec(rm *)']\n"


def project(ws: Path) -> None:
    write(ws / "README.md", "hello\nworld\n")
    write(ws / ".agents/config/tools.yaml", TOOLS)
    write(ws / ".agents/skills/shout/SKILL.md", SKILL)
    write(ws / ".agents/config/agent.yaml", DENY_RM)


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def test_passing_and_failing_tests_for_a_tool_a_command_and_a_skill(workspace, run_agent):
    project(workspace)
    result = run_agent("test", "--layer", "project")
    lines = result.stdout.splitlines()
    assert result.returncode == 1, result.stderr
    assert "✓ lines counts README" in lines
    assert "✗ lines miscounts README" in lines
    assert "✓ scribble writes a file" in lines
    assert "✓ /lines typed" in lines
    assert "✓ /lines no path is a usage error" in lines
    assert "✓ /shout echoes" in lines
    assert "✗ /shout wrong word" in lines
    assert "✓ /shout removal is denied" in lines
    assert lines[-1] == "6 passed, 2 failed"


def test_a_failure_is_reported_at_the_line_of_its_test_with_what_was_expected(workspace, run_agent):
    project(workspace)
    result = run_agent("test", "lines", "-k", "miscounts")
    tools = workspace / ".agents/config/tools.yaml"
    line = TOOLS.splitlines().index("      - name: miscounts README") + 1
    assert result.stdout.splitlines() == [
        "✗ lines miscounts README",
        f'  {tools}:{line}:9: expected output "3 README.md", got "2 README.md\\n"',
        "0 passed, 1 failed",
    ]
    assert result.returncode == 1
    skill = workspace / ".agents/skills/shout/SKILL.md"
    result = run_agent("test", "/shout", "-k", "wrong")
    line = SKILL.splitlines().index("  - name: wrong word") + 1
    assert f"  {skill}:{line}:5: expected output containing " + '"GOODBYE"' in result.stdout


def test_a_test_that_writes_a_file_leaves_the_workspace_unchanged(workspace, run_agent):
    project(workspace)
    before = snapshot(workspace)
    result = run_agent("test", "scribble")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "1 passed, 0 failed"
    assert snapshot(workspace) == before
    assert not (workspace / "new.txt").exists()


def test_all_passing_exits_zero(workspace, run_agent):
    project(workspace)
    result = run_agent("test", "-k", "typed")
    assert (result.returncode, result.stdout.splitlines()) == (
        0,
        ["✓ /lines typed", "1 passed, 0 failed"],
    )


def test_json_gives_one_object_per_test(workspace, run_agent):
    project(workspace)
    result = run_agent("test", "/shout", "--json")
    assert result.returncode == 1
    outcomes = json.loads(result.stdout)
    assert [o["label"] for o in outcomes] == [
        "/shout echoes",
        "/shout wrong word",
        "/shout removal is denied",
    ]
    assert [o["passed"] for o in outcomes] == [True, False, True]
    first = outcomes[0]
    assert first["kind"] == "command" and first["layer"] == "project"
    assert first["path"] == str(workspace / ".agents/skills/shout/SKILL.md")
    assert first["exit"] == 0 and first["result"]["ok"] is True
    assert "HELLO" in first["result"]["stdout"]
    assert outcomes[1]["failures"] and outcomes[2]["result"]["code"] == "DENIED"


def test_an_ask_is_a_denial_unless_the_test_approves(workspace, run_agent):
    write(workspace / "README.md", "x\n")
    write(
        workspace / ".agents/config/tools.yaml",
        """\
tools:
  hello:
    description: Say hello
    run: [echo, hello]
    tests:
      - name: unapproved
        expect: {ok: true}
      - name: unapproved is denied
        expect: {denied: true, error: needs approval}
      - name: approved
        approve: true
        expect: {output: hello}
""",
    )
    result = run_agent("test", "hello")
    lines = result.stdout.splitlines()
    assert lines[0] == "✗ hello unapproved"
    assert "expected ok: true, got false" in lines[1] and "needs approval" in lines[1]
    assert "✓ hello unapproved is denied" in lines
    assert "✓ hello approved" in lines
    assert lines[-1] == "2 passed, 1 failed"


def test_hooks_run_for_a_declared_test(workspace, run_agent):
    write(
        workspace / ".agents/config/tools.yaml",
        """\
tools:
  hello:
    description: Say hello
    run: [echo, hello]
    tests:
      - approve: true
        expect: {denied: true, error: no greetings}
""",
    )
    write(
        workspace / ".agents/config/agent.yaml",
        "hooks:\n  before:\n    - tool: hello\n      run: [sh, -c, 'echo no greetings >&2; exit 2']\n",
    )
    result = run_agent("test", "hello")
    assert result.stdout.splitlines()[-1] == "1 passed, 0 failed", result.stdout + result.stderr


def test_malformed_tests_are_reported_by_check_at_their_line(workspace, run_agent):
    write(
        workspace / ".agents/config/tools.yaml",
        """\
tools:
  hello:
    description: Say hello
    run: [echo, hello]
    tests:
      - expect: {outptu: hello}
      - args: {}
        argv: "x"
        expect: {ok: true}
""",
    )
    write(
        workspace / ".agents/skills/shout/SKILL.md",
        "---\nname: shout\ndescription: d\ncommand-dispatch: tool\ncommand-tool: exec\n"
        "tests:\n  - argv: echo\n    expect: {contains: 3}\n---\nBody.\n",
    )
    result = run_agent("check")
    assert result.returncode == 1
    tools = workspace / ".agents/config/tools.yaml"
    skill = workspace / ".agents/skills/shout/SKILL.md"
    out = result.stdout
    assert f"{tools}:6:18: error: tools.hello.tests.0.expect.outptu: unknown key" in out
    assert "did you mean 'output'" in out
    assert f"{tools}:7:9: error: tools.hello.tests.1: expected `args:` or `argv:`, not both" in out
    assert (
        f"{skill}:8:14: error: /shout: tests.0.expect.contains: "
        "expected a string or a list of strings" in out
    )


def test_unknown_names_are_a_usage_error_and_no_tests_is_said(workspace, run_agent):
    result = run_agent("test", "nosuch")
    assert result.returncode == 2
    assert result.stderr.strip() == "agent: no tool or command called nosuch"
    result = run_agent("test", "--layer", "project")
    assert result.returncode == 0
    assert result.stdout.splitlines() == ["no declared tests matched", "0 passed, 0 failed"]


GREET = """\
---
name: greet
description: Greet someone
tests:
  - name: greets
    argv: Ada
    model: {script: ["Hello, Ada!"]}
    expect: {ok: true, contains: "Hello, Ada", prompt_contains: "Greet Ada warmly"}
  - name: wrong prompt
    argv: Bob
    model: {script: ["Hi"]}
    expect: {prompt_contains: "Greet Ada"}
  - name: unapproved write is refused
    argv: Ada
    model:
      script:
        - tool_calls: [{name: write_file, arguments: {path: hello.txt, content: hi}}]
        - Done.
    expect: {output: Done., json: {/tool_calls/0/ok: false, /tool_calls/0/result/code: DENIED}}
  - name: approved write runs in the copy
    argv: Ada
    approve: true
    model:
      script:
        - tool_calls: [{name: write_file, arguments: {path: hello.txt, content: hi}}]
        - Done.
    expect: {json: {/tool_calls/0/ok: true}}
---
Greet $ARGUMENTS warmly.
"""


def test_a_prompt_skill_is_tested_with_a_scripted_model(workspace, run_agent):
    write(workspace / ".agents/skills/greet/SKILL.md", GREET)
    before = snapshot(workspace)
    result = run_agent("test", "/greet")
    lines = result.stdout.splitlines()
    assert result.returncode == 1, result.stderr
    assert lines[0] == "✓ /greet greets"
    assert lines[1] == "✗ /greet wrong prompt"
    assert lines[2].endswith(
        ':9:5: expected the prompt to contain "Greet Ada", got "Greet Bob warmly.\\n"'
    )
    assert "✓ /greet unapproved write is refused" in lines
    assert "✓ /greet approved write runs in the copy" in lines
    assert lines[-1] == "3 passed, 1 failed"
    assert snapshot(workspace) == before  # the approved write went to the copy
    assert run_agent("sessions").stdout.strip() in ("", "(no sessions)")


def test_the_bundled_layer_passes_its_own_declared_tests(workspace, run_agent):
    result = run_agent("test", "--layer", "bundled")
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout.splitlines()[-1]
    assert summary.endswith(" passed, 0 failed") and not summary.startswith("0 ")


def test_a_workspace_too_large_to_copy_is_refused_in_one_line(workspace, run_agent):
    write(
        workspace / ".agents/config/tools.yaml",
        "tools:\n  hello:\n    description: d\n    run: [echo, hi]\n"
        "    tests: [{approve: true, expect: {ok: true}}]\n",
    )
    (workspace / "big.bin").write_bytes(b"")
    with open(workspace / "big.bin", "r+b") as fh:  # sparse: large, but no disk used
        fh.truncate(300 << 20)
    result = run_agent("test")
    assert result.returncode == 2
    assert result.stderr.startswith(f"agent: the workspace {workspace} is too large to copy")
    assert len(result.stderr.splitlines()) == 1


def test_new_skills_come_with_an_example_test_that_passes(workspace, run_agent):
    for args in (["deploy", "--tool", "exec", "--arg-mode", "raw"], ["helper"]):
        assert run_agent("new", "skill", *args).returncode == 0
    text = (workspace / ".agents" / "skills" / "deploy" / "SKILL.md").read_text()
    assert "tests:" in text
    result = run_agent("test", "deploy", "helper")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "2 passed, 0 failed"


# -- issue 28, item 5: a handler's test runs in the copy too --------------------------

HANDLER = """\
import os
import subprocess
from pathlib import Path


def run(args, ctx):
    Path("PWN_handler").write_text("relative")
    with open("PWN_open", "w") as fh:
        fh.write("open")
    subprocess.run(["touch", "PWN_child"], check=True)
    Path(ctx.workdir, "PWN_workdir").write_text("workdir")
    return {"output": os.getcwd() + "|" + str(ctx.workdir)}
"""

HANDLER_TOOLS = """\
tools:
  pwn:
    description: Writes files where it stands
    security: safe
    handler: handlers/pwn.py:run
    tests:
      - name: writes
        expect: {ok: true}
"""


def test_a_handler_test_writes_into_the_copy_not_the_workspace(workspace, run_agent):
    write(workspace / ".agents/config/handlers/pwn.py", HANDLER)
    write(workspace / ".agents/config/tools.yaml", HANDLER_TOOLS)
    (workspace / "sub").mkdir()
    before = snapshot(workspace)
    for where in (workspace, workspace / "sub"):
        result = run_agent("test", "pwn", "--json", cwd=where)
        assert result.returncode == 0, result.stdout + result.stderr
        (outcome,) = json.loads(result.stdout)
        cwd, workdir = outcome["result"]["output"].split("|")
        # The handler stood in the copy (its own subfolder, for `agent test` typed in sub/).
        assert Path(cwd).name == where.name and Path(workdir).name == workspace.name
        assert Path(cwd) != where and not Path(cwd).is_relative_to(workspace)
        assert Path(cwd) == Path(workdir) / where.relative_to(workspace)
        assert not Path(workdir).exists()  # the copy is gone with the test
    assert snapshot(workspace) == before
    assert not list(workspace.rglob("PWN_*"))


LATE = """\
import time
from pathlib import Path

SIGNALS = Path({signals!r})


def run(args, ctx):
    # Outlives its timeout, then writes by a relative path once the next test runs.
    for _ in range(600):
        if (SIGNALS / "go").exists():
            break
        time.sleep(0.1)
    Path("PWN_late").write_text("late")
    (SIGNALS / "done").write_text("written")
    return {{"output": "too late"}}
"""

LATE_TOOLS = """\
tools:
  late:
    description: Runs past its timeout
    security: safe
    timeout: 1
    handler: handlers/late.py:run
    tests:
      - name: times out
        expect: {{ok: false}}
  waiter:
    description: Lets the late handler go on, and waits until it wrote
    security: safe
    run: [sh, -c, 'touch {signals}/go; for i in $(seq 600); do [ -e {signals}/done ] && exit 0; sleep 0.1; done; exit 1']
    tests:
      - name: waits
        expect: {{ok: true}}
"""


def test_a_handler_past_its_timeout_never_writes_into_the_workspace(workspace, run_agent, tmp_path):
    signals = tmp_path / "signals"
    signals.mkdir()
    write(workspace / ".agents/config/handlers/late.py", LATE.format(signals=str(signals)))
    write(workspace / ".agents/config/tools.yaml", LATE_TOOLS.format(signals=str(signals)))
    before = snapshot(workspace)
    result = run_agent("test", "late", "waiter", timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "2 passed, 0 failed"
    assert (signals / "done").read_text() == "written"  # it did write, after its test
    assert snapshot(workspace) == before
    assert not list(workspace.rglob("PWN_*"))
