import subprocess
import sys

from mdagent import __version__


def test_version_from_the_real_executable(run_agent):
    result = run_agent("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"mdagent {__version__}"


def test_python_dash_m(workspace):
    result = subprocess.run(
        [sys.executable, "-m", "mdagent", "--version"], capture_output=True, text=True
    )
    assert result.returncode == 0 and __version__ in result.stdout


def test_public_api_imports():
    import mdagent

    for name in ("Toolbox", "Result", "ToolContext", "Commands"):
        assert hasattr(mdagent, name)


def test_a_reader_that_went_away_ends_either_path_quietly(workspace):
    # Both ways in share one error edge (mdagent.cli.edge): a typed /name and a
    # typer subcommand whose stdout's reader is gone end quietly (click ends
    # its own commands with status 1 then, as it always did).
    import os

    from conftest import agent_executable, trust_as_is

    trust_as_is(workspace)
    for args, status in ((["/term", "echo hi"], 141), (["tools"], 1), (["commands"], 1)):
        read, write = os.pipe()
        os.close(read)  # every write to stdout now fails with EPIPE
        try:
            done = subprocess.run(
                [agent_executable(), *args],
                cwd=workspace,
                stdout=write,
                stderr=subprocess.PIPE,
                text=True,
                timeout=60,
            )
        finally:
            os.close(write)
        assert (done.returncode, done.stderr) == (status, ""), args
