"""A model's value glued after a shell expansion, through the real ``agent`` executable.

``$x{value}`` with ``$x`` empty starts the word with the value: a value
``-r`` would be read as an option, so a model's call with it is refused
(issue 12), as it is for ``{value}`` alone; and a bare value never
lengthens the variable's name (``$x`` then ``HOME`` is not ``$xHOME``).
"""

from conftest import ask, config, scripted_model, tool_results

GLUED = """\
tools:
  glued:
    description: print a value glued after an expansion
    params: {value: {type: string}}
    security: safe
    shell: "printf '[%s]' $x{value}"
  glued-quoted:
    description: the same after a quoted expansion
    params: {value: {type: string}}
    security: safe
    shell: "printf '[%s]' \\"$1\\"{value}"
  after-text:
    description: a value after literal text and an expansion never starts the word
    params: {value: {type: string}}
    security: safe
    shell: "printf '[%s]' x$x{value}"
"""


def test_a_models_option_value_after_an_empty_expansion_is_refused(workspace, run_agent):
    config(workspace, "glued.yaml", GLUED)
    assert run_agent("check").returncode == 0
    calls = [
        ("glued", {"value": "-r"}),
        ("glued-quoted", {"value": "-r"}),
        ("glued", {"value": "a-b"}),
        ("glued", {"value": "HOME"}),  # not `$xHOME`: the value stays its own text
        ("after-text", {"value": "-r"}),
    ]
    with scripted_model(*calls) as server:
        result = ask(run_agent, server, "--yes")
        results = tool_results(server)
    assert result.returncode == 0, result.stderr
    assert len(results) == len(calls)
    for refused in results[:2]:
        assert refused["ok"] is False and "'value' starts with '-'" in refused["error"], refused
        assert "stdout" not in refused
    assert [r["stdout"] for r in results[2:]] == ["[a-b]", "[HOME]", "[x-r]"]


def test_a_shell_named_through_an_expanded_folder_still_runs_its_script_as_code(
    workspace, run_agent
):
    # `"$HOME"/bin/sh -c {v}`: whatever $HOME holds, the value would be a script.
    config(
        workspace,
        "shells.yaml",
        "tools:\n"
        "  t:\n"
        "    description: d\n"
        "    params: {v: {type: string}}\n"
        "    shell: '\"$HOME\"/bin/sh -c {v}'\n",
    )
    result = run_agent("check")
    assert result.returncode == 1
    assert "shells.yaml:" in result.stdout
    assert "cannot be used as the script of `/sh -c` (run as code)" in result.stdout
