"""Template safety through the real ``agent`` executable (issue 9, items 8 and 9).

Positions where the shell would read a value again are refused by ``agent
check`` at the template's line; a model's value that starts with ``-`` is
refused where a program would read it as an option, unless the declaration
opts in (``option: true``, or ``--`` before the placeholder).
"""

from pathlib import Path

import pytest

from conftest import ask, config, scripted_model, tool_results

# Each tool holds one position bash or sh would read again as code, arithmetic
# or a variable name; the marker comment names the line `agent check` must report.
UNSAFE = """\
tools:
  comment:
    description: a placeholder in a comment
    params: {x: {type: string}}
    shell: "echo hi # {x}"                        # line:comment
  dollar:
    description: a placeholder right after $
    params: {x: {type: string}}
    shell: "echo ${x}"                            # line:dollar
  cond:
    description: an arithmetic operand of [[ -eq ]]
    params: {n: {type: string}}
    shell: "[[ {n} -eq 1 ]] && echo one"          # line:cond
  let:
    description: let
    params: {n: {type: string}}
    shell: "let x={n}"                            # line:let
  arith:
    description: (( ))
    params: {n: {type: string}}
    shell: "(( {n} > 1 ))"                        # line:arith
  subscript:
    description: an array subscript
    params: {i: {type: string}}
    shell: "a[{i}]=1"                             # line:subscript
  heredoc:
    description: a here-document delimiter
    params: {d: {type: string}}
    shell: "cat <<{d}"                            # line:heredoc
  eval:
    description: eval
    params: {x: {type: string}}
    shell: "eval 'echo {x}'"                      # line:eval
  script:
    description: the script of sh -c
    params: {x: {type: string}}
    run: [sh, -c, "echo {x}"]                     # line:script
  composed:
    description: an exec composition with a placeholder in a comment
    params: {x: {type: string}}
    tool: exec
    with:
      command: "ls # {x}"                         # line:composed
"""


def lines_marked(text: str) -> dict[str, int]:
    return {
        line.split("# line:")[1].strip(): n
        for n, line in enumerate(text.splitlines(), 1)
        if "# line:" in line
    }


def test_agent_check_reports_each_unsafe_position_at_its_line(workspace, run_agent):
    path = config(workspace, "unsafe.yaml", UNSAFE)
    result = run_agent("check")
    assert result.returncode == 1
    errors = [line for line in result.stdout.splitlines() if ": error: " in line]
    for name, line in lines_marked(UNSAFE).items():
        mine = [e for e in errors if f"tool '{name}'" in e]
        assert len(mine) == 1, (name, result.stdout)
        assert mine[0].startswith(f"{path}:{line}:"), (name, mine[0])
        assert "cannot be used" in mine[0]
    # A broken tool is not callable: nothing runs.
    assert run_agent("/comment", "x").returncode == 2


SHOW = """\
tools:
  show:
    description: print the value it gets
    params: {value: {type: string}}
    security: safe
    run: [printf, "[%s]", "{value}"]
  show-after-dashes:
    description: print the value after --
    params: {value: {type: string}}
    security: safe
    run: [printf, "[%s]", --, "{value}"]
  show-option:
    description: print a value declared an option
    params: {value: {type: string, option: true, description: flags}}
    security: safe
    run: [printf, "[%s]", "{value}"]
  show-shell:
    description: print the value through sh
    params: {value: {type: string}}
    security: safe
    shell: "printf '[%s]' {value}"
  show-composed:
    description: print the value through exec
    params: {value: {type: string}}
    security: safe
    tool: exec
    with: {command: "printf '[%s]' {value}"}
commands:
  show: {tool: show, arg-mode: parsed}
  show-shell: {tool: show-shell, arg-mode: parsed}
"""


def test_a_models_option_value_is_refused_unless_the_declaration_opts_in(workspace, run_agent):
    config(workspace, "show.yaml", SHOW)
    assert run_agent("check").returncode == 0
    calls = [
        ("show", {"value": "-rf"}),
        ("show-shell", {"value": "--output=x"}),
        ("show-composed", {"value": "-v"}),
        ("show-after-dashes", {"value": "-rf"}),
        ("show-option", {"value": "-rf"}),
        ("show", {"value": "a-b"}),
    ]
    with scripted_model(*calls) as server:
        result = ask(run_agent, server, "--yes")
        results, first_request = tool_results(server), server.requests[0]["json"]
    assert result.returncode == 0, result.stderr
    assert len(results) == len(calls)
    for refused, (name, _) in zip(results[:3], calls[:3], strict=True):
        assert refused["ok"] is False, name
        assert "'value' starts with '-'" in refused["error"], refused
        assert "option: true" in refused["error"] and "--" in refused["error"]
        assert "stdout" not in refused
    assert [r["stdout"] for r in results[3:]] == ["[--][-rf]", "[-rf]", "[a-b]"]
    # `option` is mdagent's keyword, not JSON Schema: models never see it.
    sent = {t["function"]["name"]: t["function"]["parameters"] for t in first_request["tools"]}
    assert sent["show-option"]["properties"]["value"] == {"type": "string", "description": "flags"}


@pytest.mark.parametrize("command", ["/show", "/show-shell"])
def test_a_persons_typed_option_value_is_taken_as_meant(workspace, run_agent, command):
    config(workspace, "show.yaml", SHOW)
    typed = run_agent(command, "--", "-rf")
    assert typed.returncode == 0 and typed.stdout == "[-rf]", typed.stderr


def test_bundled_tools_still_check_clean_and_run(workspace, run_agent):
    Path(workspace / "notes.txt").write_text("one\nTODO: two\n")
    assert run_agent("check").returncode == 0
    todos = run_agent("/todos")
    assert todos.returncode == 0 and "notes.txt:2:TODO: two" in todos.stdout
    count = run_agent("/count", "notes.txt")
    assert count.returncode == 0 and "2" in count.stdout
