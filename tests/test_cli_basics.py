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
