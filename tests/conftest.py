"""Shared fixtures: every test gets its own AGENT_HOME and AGENT_STATE_DIR."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Hermetic signals: a suite started with `nohup`, or as a background job of a
# non-interactive shell, inherits SIGHUP or SIGINT ignored, and so would every
# `agent` the tests start (mdagent rightly keeps an inherited SIG_IGN). The
# tests of Ctrl-C and stop signals need the defaults a terminal gives.
signal.signal(signal.SIGINT, signal.default_int_handler)
for _stop in (signal.SIGHUP, signal.SIGTERM):
    if signal.getsignal(_stop) == signal.SIG_IGN:
        signal.signal(_stop, signal.SIG_DFL)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus" / "openclaw-skills"


# Caches of the safety modules (module -> functools.lru_cache functions).
_CACHES = {
    "mdagent.declarations.placeholders": ("parse_template", "shell_plan"),
    "mdagent.safety.views": ("exec_view", "path_regex"),
    "mdagent.safety.environment": ("_pattern",),
}


@pytest.fixture(autouse=True)
def fresh_caches():
    """Each test computes what it checks, never a result cached by an earlier test.

    Mutation testing forks each mutant's worker from a process whose caches
    hold the clean code's results: without this, a mutated scanner behind a
    cached template never runs and its mutant "survives".
    """
    for name, functions in _CACHES.items():
        module = sys.modules.get(name)
        for function in functions if module is not None else ():
            getattr(module, function).cache_clear()
    yield


@pytest.fixture(autouse=True)
def notices_on_stderr():
    """Notices (mdagent.core.notices) shown on stderr, as ``agent``'s entry point shows them.

    Tests that call a module directly see what a person would; tests/test_notices.py
    checks the library's default (the log) and that the entry point installs this.
    """
    from mdagent.core import notices
    from mdagent.ui.console import show_notice

    previous = notices.show_with(show_notice)
    yield
    notices.show_with(previous)


@pytest.fixture(autouse=True)
def hermetic(tmp_path_factory, monkeypatch):
    """Point the user layer, the state dir and HOME at fresh temporary folders.

    HOME too: skills in the developer's own ``~/.claude/skills`` or
    ``~/.codex/skills`` are layers, and must never leak into a test.
    """
    home = tmp_path_factory.mktemp("agent-home")
    state = tmp_path_factory.mktemp("agent-state")
    user_home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("AGENT_HOME", str(home))
    monkeypatch.setenv("AGENT_STATE_DIR", str(state))
    monkeypatch.setenv("HOME", str(user_home))
    for var in (
        "AGENT_PATH",
        "AGENT_PROVIDER",
        "AGENT_MODEL",
        "AGENT_BASE_URL",
        "CODEX_HOME",
        "OPENCLAW_STATE_DIR",
    ):
        monkeypatch.delenv(var, raising=False)
    yield {"home": home, "state": state, "user_home": user_home}


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


def trust_as_is(cwd, env: dict | None = None) -> None:
    """Trust the workspace of ``cwd`` as it is now, in-process: what ``agent trust --yes`` does.

    Most end-to-end tests write a project's ``.agents/`` and then run
    ``agent`` in it: they model the person's own project, which the person
    has trusted. ``env`` is the environment the run gets (its state dir and
    layers decide where the record goes and what it covers).
    """
    from mdagent.runtime.trust import trust_folder

    trust_folder(cwd, env if env is not None else os.environ)


@pytest.fixture
def run_agent(workspace):
    """Run the real ``agent`` executable in the workspace; returns CompletedProcess.

    Just before each run the workspace is trusted as it is then
    (:func:`trust_as_is`, the function ``agent trust --yes`` uses, in-process):
    the tests model the person's own project, whose hooks, MCP servers and
    looser policy they mean to be obeyed. ``trusted=False`` runs it as a
    folder nobody has trusted (a cloned repository); trust recorded before
    (by an earlier run, or ``agent trust``) still holds then.
    """

    def run(
        *args: str,
        input: str | None = None,
        env: dict | None = None,
        cwd=None,
        timeout=60,
        trusted: bool = True,
    ):
        full_env = dict(os.environ)
        full_env.update(env or {})
        if trusted:
            trust_as_is(cwd or workspace, full_env)
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


def gone_soon(pid: int, within: float = 20.0) -> bool:
    """Wait up to ``within`` seconds for ``pid`` to end; whether it did."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return not alive(pid)


def processes_running(command_line: str) -> list[int]:
    """Host pids of live processes whose whole command line is ``command_line``.

    A sandboxed command runs in a PID namespace of its own: the ``$!`` or
    ``$$`` it reports is not a pid out here, so tests find its processes by
    an unusual command line (``sleep 96.1234``) instead.
    """
    found = []
    wanted = command_line.encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if cmdline.rstrip(b"\0").replace(b"\0", b" ") == wanted and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def none_running(command_line: str, within: float = 20.0) -> bool:
    """Wait up to ``within`` seconds until no process runs ``command_line``; whether none does
    (a process the kernel is killing may take a moment to be gone)."""
    end = time.monotonic() + within
    while processes_running(command_line):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def wait_for_process(command_line: str, within: float = 20.0) -> int:
    """The host pid of the one process running ``command_line``, once it runs."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        found = processes_running(command_line)
        if len(found) == 1:
            return found[0]
        assert not found, f"more than one {command_line}: {found}"
        time.sleep(0.02)
    pytest.fail(f"{command_line} did not start within {within} s")


# -- the sandbox's routes (mdagent.safety.namespaces) ---------------------------------------

ROUTES = ("bwrap", "direct", "landlock")


def route_unavailable(name: str) -> str | None:
    """Why ``AGENT_SANDBOX=name`` cannot be taken on this machine (None: it can)."""
    from mdagent.safety import landlock, namespaces

    if name == "landlock":
        reason = landlock.landlock_reason()
        return f"no Landlock: {reason}" if reason else None
    got = namespaces.route_for(name)
    return None if got.name == name else got.why


def take_route(name: str, monkeypatch) -> str:
    """Make this test's agents (and this process) take route ``name``, or skip saying why not."""
    why = route_unavailable(name)
    if why:
        pytest.skip(f"the {name} route cannot be taken here: {why}")
    monkeypatch.setenv("AGENT_SANDBOX", name)
    return name


@pytest.fixture(params=ROUTES)
def route(request, monkeypatch):
    """Each route of the sandbox in turn (``AGENT_SANDBOX``), skipped where it cannot run."""
    return take_route(request.param, monkeypatch)


@pytest.fixture(params=ROUTES[:2])
def namespace_route(request, monkeypatch):
    """Each route that runs commands in namespaces (bwrap, direct), skipped where it cannot run."""
    return take_route(request.param, monkeypatch)


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


@pytest.fixture
def web():
    """A started web server on 127.0.0.1, stopped after.

    Its pages misbehave on request (redirects, trickles, stalls): tests/web_server.py.
    """
    from web_server import WebServer

    with WebServer() as running:
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
        from mdagent.providers.config import ProviderConfig

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


# -- end-to-end helpers: a workspace's files, a scripted model, the agent's run -------


def settings(ws: Path, text: str) -> Path:
    """Write the workspace's ``.agents/config/agent.yaml``; returns its path."""
    return config(ws, "agent.yaml", text)


def config(ws: Path, name: str, text: str) -> Path:
    """Write ``.agents/config/NAME`` (settings, tools, commands) in the workspace."""
    return write(ws / ".agents" / "config" / name, text)


def command_skill(ws: Path, name: str = "t", tool: str = "exec") -> Path:
    """A skill making ``/NAME ARGS`` run ``tool`` with ARGS (``/t echo hi`` runs exec)."""
    return write(
        ws / ".agents" / "skills" / name / "SKILL.md",
        f"---\nname: {name}\ndescription: run\ncommand-dispatch: tool\ncommand-tool: {tool}\n---\n",
    )


def scripted_model(*calls: tuple[str, dict], answer: str = "done"):
    """A model server that asks for each ``(tool, arguments)`` call in turn, then answers."""
    from model_server import ModelServer

    script = [{"tool_calls": [{"name": n, "arguments": a}]} for n, a in calls]
    return ModelServer([*script, {"text": answer}])


def provider_args(server) -> list[str]:
    """The options that point ``agent`` at a model server (OpenAI dialect)."""
    return ["--provider", "openai", "--base-url", server.url]


def ask(run_agent, server, *extra: str, env: dict | None = None, timeout: float = 60):
    """``agent ask [EXTRA] go`` against ``server``; returns the CompletedProcess."""
    return run_agent(*provider_args(server), "ask", *extra, "go", env=env, timeout=timeout)


def tool_results(server, request: int = -1) -> list[dict]:
    """The tool results the model was sent in one request (OpenAI format), in order.

    Each request repeats the history, so the last one (the default) holds them all.
    """
    messages = server.requests[request]["json"]["messages"]
    return [json.loads(m["content"]) for m in messages if m.get("role") == "tool"]


def start_agent(cwd: Path, *args: str, trusted: bool = True, **popen) -> subprocess.Popen:
    """Start the real ``agent`` in the background, in a session of its own.

    Output is piped as text unless ``popen`` says otherwise; the caller waits for it.
    The workspace is trusted as it is first, as :func:`run_agent` does.
    """
    if trusted:
        trust_as_is(cwd, popen.get("env"))
    options = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True} | popen
    return subprocess.Popen([agent_executable(), *args], cwd=cwd, start_new_session=True, **options)


def wait_for_text(path: Path, proc: subprocess.Popen, within: float = 20.0) -> str:
    """Wait until ``proc`` has written ``path`` (not empty); its text, stripped.

    Fails the test, with what the agent said, if it ends first; kills it at the deadline.
    """
    end = time.monotonic() + within
    while time.monotonic() < end:
        if path.exists() and (text := path.read_text().strip()):
            return text
        if proc.poll() is not None:
            pytest.fail(f"agent ended before writing {path.name}: {proc.communicate()}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"{path.name} was not written within {within} s")


# -- the policy tests' fixtures (test_policy*.py) ------------------------------------


@pytest.fixture
def box():
    """The policy tests' toolbox (:func:`test_policy.make_toolbox`)."""
    from test_policy import make_toolbox

    return make_toolbox()


@pytest.fixture
def root(tmp_path):
    """A project folder with a ``.agents`` layer, for the policy tests."""
    project = tmp_path / "project"
    (project / ".agents").mkdir(parents=True)
    return project


@pytest.fixture
def layer_project(tmp_path) -> Path:
    """A workspace with a project layer (`.agents/config/agent.yaml`), `src/` and `x.txt`."""
    root = tmp_path / "project"
    (root / ".agents" / "config").mkdir(parents=True)
    (root / ".agents" / "config" / "agent.yaml").write_text("policy: {}\n")
    (root / "src").mkdir()
    (root / "x.txt").write_text("x\n")
    return root
