"""Shared fixtures: every test gets its own AGENT_HOME and AGENT_STATE_DIR."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus" / "openclaw-skills"


@pytest.fixture(autouse=True)
def hermetic(tmp_path_factory, monkeypatch):
    """Point the user layer and the state dir at fresh temporary folders."""
    home = tmp_path_factory.mktemp("agent-home")
    state = tmp_path_factory.mktemp("agent-state")
    monkeypatch.setenv("AGENT_HOME", str(home))
    monkeypatch.setenv("AGENT_STATE_DIR", str(state))
    for var in ("AGENT_PATH", "AGENT_PROVIDER", "AGENT_MODEL", "AGENT_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    yield {"home": home, "state": state}


def agent_executable() -> str:
    """The installed ``agent`` script next to this interpreter."""
    candidate = Path(sys.executable).with_name("agent")
    return str(candidate) if candidate.exists() else (shutil.which("agent") or "agent")


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A temporary project folder (with a .agents/ layer) as the working directory."""
    root = tmp_path / "project"
    (root / ".agents").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def run_agent(workspace):
    """Run the real ``agent`` executable in the workspace; returns CompletedProcess."""

    def run(*args: str, input: str | None = None, env: dict | None = None, cwd=None, timeout=60):
        full_env = dict(os.environ)
        full_env.update(env or {})
        return subprocess.run(
            [agent_executable(), *args],
            cwd=cwd or workspace,
            input=input,
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
            # No controlling terminal: an approval prompt must never wait on
            # the developer's /dev/tty while the tests run.
            start_new_session=True,
        )

    return run


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for init to reap it does not count)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def gone_soon(pid: int, within: float = 5.0) -> bool:
    """Wait up to ``within`` seconds for ``pid`` to end; whether it did."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return not alive(pid)


def write(path: Path, text: str | bytes) -> Path:
    """Write ``text`` (or bytes) to ``path``, creating its folders; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.fixture
def server():
    """A started, empty model server on 127.0.0.1 (tests/model_server.py), stopped after.

    Test modules with an HTTP server of their own define their own ``server``.
    """
    from model_server import ModelServer

    with ModelServer() as running:
        yield running


@pytest.fixture(params=[True, False], ids=["stream", "no-stream"])
def stream(request):
    """Each provider test once streamed, once not."""
    return request.param


EXEC_TOOL = {
    "name": "exec",
    "description": "Run a shell command",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
}


class ProviderClient:
    """A provider aimed at a test server, with a recording sleep and no real env.

    Subclasses name the backend: ``provider_class``, ``name`` and ``model``.
    """

    provider_class: type = object
    name = ""
    model = ""

    def __init__(self, base_url, stream=True, environ=None, **config):
        from mdagent.providers.base import ProviderConfig

        self.sleeps = []
        self.deltas = []
        config = {"model": self.model, "timeout": 5.0} | config
        self.provider = self.provider_class(
            ProviderConfig(provider=self.name, base_url=base_url, stream=stream, **config),
            sleep=self.sleeps.append,
            environ=environ or {},
        )

    def ask(self, messages=None, tools=(EXEC_TOOL,), system="Be brief."):
        messages = messages or [{"role": "user", "content": "hi"}]
        return self.provider.complete(system, messages, list(tools), on_text=self.deltas.append)
