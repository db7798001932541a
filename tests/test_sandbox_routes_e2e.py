"""What the kernel holds for a model's commands, through the real ``agent`` (issue 29).

Most tests run once per namespace route (``namespace_route``: bwrap, then
mdagent's own helper), skipped with the reason where the machine cannot
take one; the tests of the route without namespaces (Landlock alone) are
at the end. Every model here works with ``policy.mode: full``, so nothing
but the kernel (and, where it says so, the parser's guard) stands between
the command and the machine. Servers stand outside the sandbox on
127.0.0.1; processes a command starts are found by an unusual command line
(:func:`conftest.processes_running`), since their pids inside a PID
namespace mean nothing out here.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from conftest import (
    ask,
    gone_soon,
    none_running,
    processes_running,
    provider_args,
    scripted_model,
    settings,
    start_agent,
    take_route,
    tool_results,
    wait_for_process,
    wait_for_text,
    write,
)

FULL = "policy: {mode: full}\n"
IPPROTO_MPTCP = 262


def unique(prefix: str) -> str:
    """A name no other test run on this machine uses at the same time."""
    return f"{prefix}{random.randrange(10**9):09d}"


def execs(*commands: str):
    """A model that runs each command with ``exec``, one per step."""
    return scripted_model(*(("exec", {"command": c}) for c in commands))


@pytest.fixture
def repo(workspace):
    """The workspace as a git repository with a project layer, and the agent's env."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    settings(workspace, FULL)
    return workspace


# --- the agent's configuration is read-only ------------------------------------------

TAMPER = """\
import os, subprocess
def attempt(what, action):
    try:
        action()
        print(what, "DONE")
    except OSError as exc:
        print(what, "REFUSED", exc.strerror)
attempt("settings", lambda: open(".agents/config/agent.yaml", "a").write("sandbox: {mode: off}\\n"))
attempt("replace", lambda: os.replace("evil.yaml", ".agents/config/agent.yaml"))
attempt("move-layer", lambda: os.rename(".agents", "old-agents"))
attempt("new-skill", lambda: os.makedirs(".agents/skills/evil"))
attempt("hook", lambda: open(".git/hooks/pre-commit", "w").write("#!/bin/sh\\ntouch pwned\\n"))
attempt("git-config", lambda: open(".git/config", "a").write("[core]\\n\\tpager = touch pwned\\n"))
attempt("git-info", lambda: open(".git/info/attributes", "w").write("* filter=x\\n"))
attempt("move-git", lambda: os.rename(".git", "git-old"))  # then make a .git of its own
done = subprocess.run(["umount", ".agents"], capture_output=True)
print("umount", "DONE" if done.returncode == 0 else "REFUSED")
"""


def test_a_script_the_model_wrote_cannot_change_the_agents_configuration(
    repo, run_agent, namespace_route
):
    before = {p: (repo / p).read_bytes() for p in (".agents/config/agent.yaml", ".git/config")}
    write(repo / "evil.yaml", "sandbox: {mode: off}\n")
    calls = [
        ("write_file", {"path": "tamper.py", "content": TAMPER}),
        ("exec", {"command": "python3 tamper.py"}),
        (
            "exec",
            {"command": "git add tamper.py && git -c user.name=a -c user.email=a@b commit -qm t"},
        ),
    ]
    with scripted_model(*calls) as server:
        result = ask(run_agent, server)
        written, tampered, committed = tool_results(server)
    assert result.returncode == 0, result.stderr
    assert written["ok"] is True, written
    lines = dict(line.split(" ", 1) for line in tampered["stdout"].splitlines())
    assert set(lines) == {
        "settings", "replace", "move-layer", "new-skill", "hook", "git-config", "git-info",
        "move-git", "umount",
    }  # fmt: skip
    assert all(outcome.startswith("REFUSED") for outcome in lines.values()), tampered
    assert "Read-only file system" in lines["settings"]
    assert {p: (repo / p).read_bytes() for p in before} == before
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert not (repo / ".agents" / "skills" / "evil").exists()
    assert not (repo / "old-agents").exists() and not (repo / "git-old").exists()
    # git still works: objects, refs and the index are not the configuration.
    assert committed["ok"] is True, committed
    assert not (repo / "pwned").exists()


def test_a_skills_scripts_run_and_its_files_are_read(repo, run_agent, namespace_route):
    skill = repo / ".agents" / "skills" / "pdf"
    write(skill / "SKILL.md", "---\nname: pdf\ndescription: PDF tools\n---\nUse the scripts.\n")
    write(skill / "scripts" / "check.py", "import sys\nprint('checked', sys.argv[1])\n")
    write(skill / "run.sh", 'echo "ran from $(basename "$(dirname "$0")")"\n')
    commands = [
        "python3 .agents/skills/pdf/scripts/check.py doc.pdf",
        f"bash {skill}/run.sh",
        "python3 -c 'print(1)' .agents/skills/pdf/SKILL.md",
        "cat .agents/skills/pdf/SKILL.md | wc -l",
        "cp .agents/skills/pdf/SKILL.md copy.md",
    ]
    with execs(*commands) as server:
        result = ask(run_agent, server)
        results = tool_results(server)
    assert result.returncode == 0, result.stderr
    assert [r["ok"] for r in results] == [True] * 5, results
    assert results[0]["stdout"] == "checked doc.pdf\n"
    assert results[1]["stdout"] == "ran from pdf\n"
    assert results[2]["stdout"] == "1\n"
    assert (repo / "copy.md").read_text().startswith("---\nname: pdf")


def test_an_allow_rule_covers_a_skills_script_without_a_terminal(repo, run_agent, namespace_route):
    write(repo / ".agents" / "skills" / "x" / "scripts" / "y.py", "print('y ran')\n")
    settings(repo, "policy:\n  allow: ['exec(python3 *)']\n")
    with execs("python3 .agents/skills/x/scripts/y.py") as server:
        ask(run_agent, server)
        (done,) = tool_results(server)
    assert done["ok"] is True and done["stdout"] == "y ran\n", done


@pytest.mark.parametrize(
    "command",
    [
        "echo 'sandbox: {mode: off}' >> .agents/config/agent.yaml",
        "rm -rf .agents",
        "sed -i s/full/ask/ .agents/config/agent.yaml",
        "touch .git/hooks/pre-commit",
        "git config core.pager 'touch pwned'",
        "cp evil.yaml .agents/config/agent.yaml",
        "cd .agents/config && tee agent.yaml < ../../evil.yaml",
    ],
)
def test_a_plain_write_to_the_configuration_is_refused_with_the_reason(
    repo, run_agent, namespace_route, command
):
    write(repo / "evil.yaml", "sandbox: {mode: off}\n")
    before = (repo / ".agents" / "config" / "agent.yaml").read_text()
    with execs(command) as server:
        result = ask(run_agent, server, "--yes")
        (refused,) = tool_results(server)
    assert result.returncode == 0, result.stderr
    assert refused["ok"] is False and refused["code"] == "DENIED", refused
    assert "part of the agent's own configuration" in refused["error"]
    assert "the sandbox keeps read-only for a model's commands" in refused["error"]
    assert (repo / ".agents" / "config" / "agent.yaml").read_text() == before
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


def test_a_protected_path_that_does_not_exist_yet_stays_with_the_parser(
    repo, run_agent, namespace_route
):
    # .claude/skills is a layer once it exists: no mount point is made for
    # it, so a command naming it is asked about (refused without a terminal).
    with execs(
        "python3 -c 'import os, sys; os.makedirs(sys.argv[1])' .claude/skills/evil"
    ) as server:
        ask(run_agent, server, "--yes")
        (asked,) = tool_results(server)
    assert asked["ok"] is False and asked["code"] == "DENIED", asked
    assert "a person's approval at a terminal" in asked["error"]
    assert not (repo / ".claude").exists()


def test_hook_scripts_the_settings_name_are_read_only(repo, run_agent, namespace_route):
    guard = write(repo / "scripts" / "guard.sh", "#!/bin/sh\nexit 0\n")
    guard.chmod(0o755)
    settings(repo, FULL + "hooks:\n  before: [{tool: exec, run: ./scripts/guard.sh}]\n")
    commands = [
        "python3 -c \"open('scripts/guard.sh', 'w').write('exit 2')\"",
        "python3 -c \"import os; os.rename('scripts', 'old')\"",  # the folder holding it
        "ls scripts",
    ]
    with execs(*commands) as server:
        ask(run_agent, server)
        changed, moved, listed = tool_results(server)
    assert changed["ok"] is False and "Read-only file system" in changed["stderr"], changed
    assert moved["ok"] is False and "Device or resource busy" in moved["stderr"], moved
    assert guard.read_text() == "#!/bin/sh\nexit 0\n"
    assert listed["ok"] is True and listed["stdout"] == "guard.sh\n"


# --- network off ---------------------------------------------------------------------


@pytest.fixture
def servers():
    """TCP, MPTCP and UDP servers and an abstract Unix socket on the host, outside any sandbox."""
    made = {}
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    made["tcp"] = tcp
    try:
        mptcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
        mptcp.bind(("127.0.0.1", 0))
        mptcp.listen(8)
        made["mptcp"] = mptcp
    except OSError:
        pass  # a kernel without MPTCP: nothing to reach that way
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.5)
    made["udp"] = udp
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = unique("mdagent-test-")
    abstract.bind("\0" + name)
    abstract.listen(8)
    made["abstract"] = abstract
    made["abstract-name"] = name
    try:
        yield made
    finally:
        for sock in made.values():
            if isinstance(sock, socket.socket):
                sock.close()


PROBE = """\
import socket, sys
tcp, mptcp, udp, abstract = sys.argv[1:5]
def attempt(what, action):
    try:
        action()
        print(what, "REACHED")
    except OSError as exc:
        print(what, "FAILED", type(exc).__name__)
def stream(proto, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    s.settimeout(5)
    s.connect(("127.0.0.1", int(port)))
attempt("tcp", lambda: stream(0, tcp))
if mptcp != "-":
    attempt("mptcp", lambda: stream(262, mptcp))
def datagram():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("127.0.0.1", int(udp)))
    s.send(b"leak")
    s.settimeout(1)
    s.recv(10)  # an unreachable port answers with a refusal
attempt("udp", datagram)
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
def unix():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\\0" + abstract)
attempt("abstract", unix)
def own_loopback():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    socket.create_connection(server.getsockname(), timeout=5)
attempt("loopback", own_loopback)
"""


def test_network_off_means_no_network(workspace, run_agent, servers, namespace_route):
    settings(workspace, FULL + "sandbox: {network: off}\n")
    write(workspace / "probe.py", PROBE)
    mptcp = str(servers["mptcp"].getsockname()[1]) if "mptcp" in servers else "-"
    ports = [servers[k].getsockname()[1] for k in ("tcp", "udp")]
    command = f"python3 probe.py {ports[0]} {mptcp} {ports[1]} {servers['abstract-name']}"
    with execs(command) as server:
        ask(run_agent, server)
        (probed,) = tool_results(server)
    outcome = dict(line.split(" ", 1) for line in probed["stdout"].splitlines())
    assert outcome["tcp"].startswith("FAILED"), probed
    assert outcome.get("mptcp", "FAILED").startswith("FAILED"), probed
    assert outcome["udp"].startswith("FAILED") and outcome["raw"].startswith("FAILED"), probed
    assert outcome["abstract"].startswith("FAILED"), probed
    assert outcome["loopback"] == "REACHED", probed  # its own loopback works
    with pytest.raises(TimeoutError):  # not one datagram left the sandbox
        servers["udp"].recv(10)
    servers["tcp"].settimeout(0.2)
    with pytest.raises(TimeoutError):  # nor one connection
        servers["tcp"].accept()


def test_network_on_reaches_the_host(workspace, run_agent, servers, namespace_route):
    settings(workspace, FULL)
    port = servers["tcp"].getsockname()[1]
    connect = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\""
    with execs(connect) as server:
        ask(run_agent, server)
        (done,) = tool_results(server)
    assert done["ok"] is True, done


# --- temp files ----------------------------------------------------------------------


def test_temp_files_stay_private(workspace, run_agent, route):
    settings(workspace, FULL)
    name = unique("mdagent-private-")
    commands = [
        f"echo x > /tmp/{name}",
        f'echo kept > "$TMPDIR/{name}" && mktemp',
        f'cat "$TMPDIR/{name}"',  # the next call of the same run finds it
    ]
    with execs(*commands) as server:
        result = ask(run_agent, server)
        host, private, again = tool_results(server)
    assert result.returncode == 0, result.stderr
    assert host["ok"] is False and not Path("/tmp", name).exists(), host
    assert private["ok"] is True and again["stdout"] == "kept\n", (private, again)
    made = Path(private["stdout"].strip().splitlines()[-1])
    assert made.parent != Path("/tmp") and not made.exists()  # removed with the run


def test_dev_shm_is_private(workspace, run_agent, namespace_route):
    settings(workspace, FULL)
    name = unique("mdagent-shm-")
    with execs(f"echo x > /dev/shm/{name} && cat /dev/shm/{name}") as server:
        ask(run_agent, server)
        (done,) = tool_results(server)
    assert done["ok"] is True and done["stdout"] == "x\n", done
    assert not Path("/dev/shm", name).exists()


# --- secrets -------------------------------------------------------------------------

# Every environment the command can read, its parent's first: what names the
# test's variables or holds a secret's prefix is printed, then how many were read.
READ_ENVIRONS = (
    "{ tr '\\0' '\\n' < /proc/$PPID/environ; "
    'for f in /proc/[0-9]*/environ /proc/[0-9]*/task/*/environ; do cat "$f" && echo; done; '
    "} 2>/dev/null | tr '\\0' '\\n' | grep -e MDTEST -e sekrit- ; "
    "echo read $(cat /proc/[0-9]*/environ 2>/dev/null | tr -cd '\\0' | wc -c) variables"
)


def no_secret_readable(workspace, run_agent, sandbox: str) -> None:
    secret = unique("sekrit-")
    settings(workspace, FULL + sandbox)
    with execs(READ_ENVIRONS) as server:
        result = ask(run_agent, server, env={"MDTEST_API_KEY": secret, "MDTEST_TOKEN": secret})
        (read,) = tool_results(server)
    assert result.returncode == 0, result.stderr
    *found, count = read["stdout"].splitlines()
    assert found == [], read  # the agent's block is blank, names and all
    assert int(count.split()[1]) > 0  # it did read environments (its own, at least)
    assert secret not in read["stdout"] + read["stderr"]


def test_no_secret_in_any_environ_a_sandboxed_command_can_read(workspace, run_agent, route):
    no_secret_readable(workspace, run_agent, "")


def test_no_secret_in_any_environ_an_unconfined_command_can_read(workspace, run_agent):
    # As root (the CI machines) every /proc/*/environ of the machine is
    # readable without a sandbox: the agent's own block is blank.
    no_secret_readable(workspace, run_agent, "sandbox: {mode: off}\n")


# --- nothing outlives the call -------------------------------------------------------


def escapes(mark: str) -> str:
    """A command that leaves three processes behind the usual ways, then ends."""
    return (
        f"setsid sleep {mark}1 & "
        f"nohup sleep {mark}2 >/dev/null 2>&1 & "
        f"(sleep {mark}3 &); "
        f"python3 -c \"import os, subprocess; os.fork() or (os.setsid(), subprocess.Popen(['sleep', '{mark}4']))\"; "
        "echo started"
    )


def test_escapes_end_with_the_call(workspace, run_agent, namespace_route):
    settings(workspace, FULL)
    mark = f"95.{random.randrange(10**6):06d}"
    with execs(escapes(mark), "echo after") as server:
        result = ask(run_agent, server)
        started, after = tool_results(server)
    try:
        assert result.returncode == 0, result.stderr
        assert started["stdout"] == "started\n" and after["stdout"] == "after\n"
        for n in "1234":
            assert none_running(f"sleep {mark}{n}"), f"sleep {mark}{n} outlived the call"
    finally:
        for n in "1234":
            for pid in processes_running(f"sleep {mark}{n}"):
                os.kill(pid, signal.SIGKILL)


def test_a_timeout_ends_the_escapes_too(workspace, run_agent, namespace_route):
    settings(workspace, FULL + "exec: {timeout: 1}\n")
    mark = f"94.{random.randrange(10**6):06d}"
    with execs(f"setsid sleep {mark} & sleep 30") as server:
        ask(run_agent, server)
        (timed_out,) = tool_results(server)
    assert timed_out["exit_code"] == 124 and timed_out["error"] == "timed out after 1 s"
    assert none_running(f"sleep {mark}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_stopping_the_agent_ends_the_escapes(workspace, namespace_route, sig):
    settings(workspace, FULL)
    mark = f"93.{random.randrange(10**6):06d}"
    command = f"setsid sleep {mark} & echo started > started.txt; sleep 100"
    with execs(command) as server:
        agent = start_agent(
            workspace, *provider_args(server), "ask", "go", stdin=subprocess.DEVNULL
        )
        try:
            wait_for_text(workspace / "started.txt", agent)
            escaped = wait_for_process(f"sleep {mark}")
            agent.send_signal(sig)
            out, err = agent.communicate(timeout=20)  # its output closes: no process holds it
        finally:
            agent.kill()
            agent.wait()
            for pid in processes_running(f"sleep {mark}"):
                os.kill(pid, signal.SIGKILL)
    assert agent.returncode == 128 + sig, err
    assert gone_soon(escaped), "the escaped process outlived the agent"


def test_a_killed_agent_takes_its_commands_with_it(workspace, tmp_path, namespace_route):
    # SIGKILL: the agent can do nothing; the sandbox dies with it all the same.
    settings(workspace, FULL)
    mark = f"92.{random.randrange(10**6):06d}"
    command = f"setsid sleep {mark} & echo started > started.txt; sleep 100"
    # A killed agent cannot remove its private temp folder: it is left in the test's.
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    with execs(command) as server:
        agent = start_agent(
            workspace, *provider_args(server), "ask", "go", stdin=subprocess.DEVNULL, env=env
        )
        try:
            wait_for_text(workspace / "started.txt", agent)
            wait_for_process(f"sleep {mark}")
            agent.kill()
            agent.communicate(timeout=20)
            assert none_running(f"sleep {mark}"), "the command outlived the killed agent"
        finally:
            agent.kill()
            for pid in processes_running(f"sleep {mark}"):
                os.kill(pid, signal.SIGKILL)


def test_a_command_signalling_itself_reports_its_own_status(workspace, run_agent, namespace_route):
    settings(workspace, FULL)
    suicide = 'python3 -c "import os; os.kill(os.getpid(), 15)"'
    with execs("exit 7", suicide, "no-such-program-x") as server:
        ask(run_agent, server)
        seven, killed, missing = tool_results(server)
    assert seven["exit_code"] == 7
    assert killed["exit_code"] == 143
    assert missing["exit_code"] == 127


def test_the_command_sees_only_its_own_processes(workspace, run_agent, namespace_route):
    settings(workspace, FULL)
    with execs("ps -e -o pid= | wc -l; echo $PPID") as server:
        ask(run_agent, server)
        (listed,) = tool_results(server)
    count, parent = listed["stdout"].split()
    assert int(count) < 8, listed  # init, bash, ps, wc: not the machine's hundreds
    assert parent == "1"


# --- the route without namespaces: Landlock alone ------------------------------------


@pytest.fixture
def landlock_only(monkeypatch):
    return take_route("landlock", monkeypatch)


def test_without_namespaces_the_parser_guards_the_configuration(repo, run_agent, landlock_only):
    write(repo / ".agents" / "skills" / "x" / "scripts" / "y.py", "print('y ran')\n")
    commands = ("python3 .agents/skills/x/scripts/y.py", "echo x >> .agents/config/agent.yaml")
    with execs(*commands, "echo other") as server:
        result = ask(run_agent, server, "--yes")
        script, append, other = tool_results(server)
    assert other["ok"] is True  # and the person is told, once, what confines it
    for refused in (script, append):
        assert refused["ok"] is False and refused["code"] == "DENIED", refused
        assert "a person's approval at a terminal" in refused["error"]
    note = (
        "agent: sandbox with Landlock alone: there are no namespaces here (AGENT_SANDBOX=landlock)"
    )
    assert result.stderr.count(note) == 1, result.stderr


def test_without_namespaces_required_refuses(workspace, run_agent, landlock_only):
    settings(workspace, FULL + "sandbox: {required: true}\n")
    with execs("echo hi") as server:
        ask(run_agent, server)
        (refused,) = tool_results(server)
    assert refused == {
        "ok": False,
        "error": "not run: sandbox.required is set but there are no namespaces here "
        "(AGENT_SANDBOX=landlock)",
        "code": "DENIED",
    }


def test_a_wrong_route_variable_runs_nothing(workspace, run_agent, monkeypatch):
    monkeypatch.setenv("AGENT_SANDBOX", "chroot")
    settings(workspace, FULL)
    marker = workspace / "ran"
    with execs(f"touch {marker}") as server:
        ask(run_agent, server)
        (refused,) = tool_results(server)
    assert refused["code"] == "DENIED"
    assert refused["error"] == (
        "not run: AGENT_SANDBOX='chroot': expected auto, bwrap, direct or landlock"
    )
    assert not marker.exists()


def test_a_persons_command_is_not_wrapped(workspace, run_agent, namespace_route):
    # Typed commands stay outside the sandbox (applies_to: model): the
    # machine's processes are theirs to see.
    write(
        workspace / ".agents" / "skills" / "t" / "SKILL.md",
        "---\nname: t\ndescription: run\ncommand-dispatch: tool\ncommand-tool: exec\n---\n",
    )
    typed = run_agent("/t", "echo $PPID")
    assert typed.returncode == 0 and int(typed.stdout) > 1, typed


PROBE_PRIVILEGE = """
import os, sys
caps = {l.split(":")[0]: int(l.split()[1], 16) for l in open("/proc/self/status")
        if l.startswith(("CapEff", "CapPrm", "CapBnd", "CapAmb"))}
readable = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if sys.argv[1].encode() in open(f"/proc/{pid}/environ", "rb").read():
            readable.append(pid)
    except OSError:
        pass
print(sorted(k for k, v in caps.items() if v), readable)
"""


def test_a_command_holds_no_capability_and_reads_no_other_environment(workspace, run_agent, route):
    # Red team 17: on the Landlock route, run as root, a command kept every capability
    # and read the environment of the agent's parent.
    settings(workspace, FULL)
    write(workspace / "probe.py", PROBE_PRIVILEGE)
    secret = unique("held-by-another-process-")
    holder = subprocess.Popen(
        ["sleep", "60"], env={**os.environ, "OTHER_TOKEN": secret}, start_new_session=True
    )
    try:
        with execs(f"python3 probe.py {secret}") as server:
            result = ask(run_agent, server)
            (done,) = tool_results(server)
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 0, result.stderr
    assert done["ok"] is True and done["stdout"] == "[] []\n", done
