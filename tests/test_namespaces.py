"""Which route confines a model's commands, and the command lines that start one.

The route is probed with real programs (bwrap, mdagent's helper); a route
this machine cannot take is simulated with a stand-in ``bwrap`` on PATH or
a kernel said to lack Landlock. What the routes then hold is tested with
real commands in tests/test_nsinit.py and tests/test_sandbox_routes_e2e.py.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import route_unavailable, write
from mdagent.core.errors import UsageError
from mdagent.safety import landlock, namespaces
from mdagent.safety.namespaces import Route


def choose(wanted: str) -> Route:
    """The route for ``wanted``, probed now (not this process's cached answer)."""
    return namespaces.route_for.__wrapped__(wanted)


# --- the route variable ----------------------------------------------------------------


@pytest.mark.parametrize("value", ["landlock", "LANDLOCK", " landlock "])
def test_the_variable_picks_the_route(monkeypatch, value):
    monkeypatch.setenv("AGENT_SANDBOX", value)
    assert namespaces.wanted_route() == "landlock"
    assert namespaces.route() == Route("landlock", "AGENT_SANDBOX=landlock")
    assert not namespaces.route().namespaces


@pytest.mark.parametrize("value", ["", "auto"])
def test_unset_or_auto_takes_the_first_route_that_works(monkeypatch, value):
    monkeypatch.setenv("AGENT_SANDBOX", value)
    assert namespaces.wanted_route() == "auto"
    taken = namespaces.route()
    expected = next((r for r in ("bwrap", "direct") if route_unavailable(r) is None), "landlock")
    assert taken.name == expected


def test_a_wrong_value_is_one_line_naming_the_choices(monkeypatch):
    monkeypatch.setenv("AGENT_SANDBOX", "chroot")
    with pytest.raises(UsageError) as caught:
        namespaces.route()
    assert str(caught.value) == ("AGENT_SANDBOX='chroot': expected auto, bwrap, direct or landlock")


# --- probing -----------------------------------------------------------------------------


def fake_bwrap(folder: Path, script: str) -> Path:
    """A ``bwrap`` on PATH that runs ``script`` (sh) instead of the real one."""
    program = write(folder / "bwrap", "#!/bin/sh\n" + script)
    program.chmod(0o755)
    return program


def test_without_bwrap_the_bwrap_route_falls_back_to_landlock(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap here
    assert choose("bwrap") == Route("landlock", "bubblewrap (bwrap) is not installed")


def test_a_bwrap_that_cannot_work_here_says_why_in_its_own_words(tmp_path, monkeypatch):
    fake_bwrap(tmp_path, "echo 'bwrap: No permissions to create new namespace' >&2; exit 1\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    taken = choose("bwrap")
    assert taken == Route(
        "landlock", "bubblewrap fails here: bwrap: No permissions to create new namespace"
    )


def test_auto_goes_on_to_the_direct_route_when_bwrap_fails(tmp_path, monkeypatch):
    if why := route_unavailable("direct"):
        pytest.skip(f"the direct route cannot be taken here: {why}")
    fake_bwrap(tmp_path, "exit 1\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert choose("auto") == Route("direct")


def test_a_working_bwrap_is_taken_with_its_path(monkeypatch):
    if why := route_unavailable("bwrap"):
        pytest.skip(f"the bwrap route cannot be taken here: {why}")
    taken = choose("bwrap")
    assert taken.name == "bwrap" and Path(taken.program).name == "bwrap" and taken.namespaces


def test_the_direct_route_needs_landlock(monkeypatch):
    monkeypatch.setattr(landlock, "probe", lambda: (0, "this kernel has no Landlock"))
    assert choose("direct") == Route(
        "landlock", "the direct route needs Landlock (this kernel has no Landlock)"
    )


def test_neither_route_says_both_reasons(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(landlock, "probe", lambda: (0, "this kernel has no Landlock"))
    assert choose("auto").why == (
        "bubblewrap (bwrap) is not installed; "
        "the direct route needs Landlock (this kernel has no Landlock)"
    )


def test_not_linux_has_no_namespaces(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert choose("auto") == Route("landlock", "namespaces need Linux; this is darwin")


def test_a_helper_that_fails_says_its_last_line(monkeypatch):
    monkeypatch.setattr(
        namespaces,
        "helper_command",
        lambda argv, **kw: [
            "sh",
            "-c",
            "echo first >&2; echo 'agent sandbox: cannot create namespaces: Operation not permitted' >&2; exit 125",
        ],
    )
    if landlock.abi_version() == 0:
        pytest.skip("the direct route is not probed without Landlock")
    assert choose("direct").why == (
        "mdagent's namespace helper fails here: agent sandbox: cannot create namespaces: "
        "Operation not permitted"
    )


# --- the command lines ---------------------------------------------------------------------


def test_the_bwrap_command_line():
    line = namespaces.bwrap_command(
        "/usr/bin/bwrap",
        ["bash", "-c", "--", "make"],
        writable=["/ws", "/tmp/agent-tmp-1", "/dev/dri"],
        binds=["/ws/.agents", "/ws/.git/config"],
        network=False,
    )
    assert line == [
        "/usr/bin/bwrap",
        "--unshare-user", "--unshare-pid", "--unshare-ipc",
        "--die-with-parent", "--cap-drop", "ALL", "--unshare-net",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        "--bind-try", "/ws", "/ws",
        "--bind-try", "/tmp/agent-tmp-1", "/tmp/agent-tmp-1",
        "--dev-bind-try", "/dev/dri", "/dev/dri",
        "--bind-try", "/ws/.git", "/ws/.git",  # cannot be renamed away from its config
        "--ro-bind-try", "/ws/.agents", "/ws/.agents",
        "--ro-bind-try", "/ws/.git/config", "/ws/.git/config",
        "--", "bash", "-c", "--", "make",
    ]  # fmt: skip
    with_network = namespaces.bwrap_command("bwrap", ["x"], writable=[], binds=[], network=True)
    assert "--unshare-net" not in with_network


def test_the_helper_command_line():
    line = namespaces.helper_command(
        ["ls", "-l"], binds=["/ws/a/b/x"], network=True, ruleset=7, writable=["/ws"]
    )
    assert line[:4] == [sys.executable, "-I", "-S", "-c"]
    assert line[5:] == [
        "--anchor", "/ws/a", "--anchor", "/ws/a/b", "--read-only", "/ws/a/b/x",
        "--network", "--ruleset", "7", "--parent", str(os.getpid()), "--", "ls", "-l",
    ]  # fmt: skip
    # The helper comes from beside this module, after the standard library.
    assert f"sys.path.append({str(namespaces.HELPER.parent)!r})" in line[4]
    probe = namespaces.helper_command(["true"], binds=[], network=False, probe=True)
    assert probe[-5:] == ["--probe", "--parent", str(os.getpid()), "--", "true"]
    assert "--network" not in probe


def test_anchors_are_the_folders_a_command_could_move_a_bind_away_with():
    binds = ["/ws/.agents", "/ws/.git/config", "/ws/.git/hooks", "/ws/scripts/ci/guard.sh"]
    assert namespaces.anchors(binds, ["/ws"]) == ["/ws/.git", "/ws/scripts", "/ws/scripts/ci"]
    # The workspace itself, inside another writable place, could be renamed too.
    assert namespaces.anchors(["/home/me/ws/.agents"], ["/home/me/ws", "/home/me"]) == [
        "/home/me/ws"
    ]
    assert namespaces.anchors(["/ws/.agents"], []) == []  # nothing is writable: nothing moves
    assert namespaces.anchors(["/elsewhere/x/y"], ["/ws"]) == []


# --- when the kernel holds the configuration ---------------------------------------------------


def ctx(ws: Path, caller: str, **sandbox_settings) -> SimpleNamespace:
    settings = {"sandbox": sandbox_settings} if sandbox_settings else {}
    return SimpleNamespace(caller=caller, settings=settings, workdir=str(ws))


@pytest.fixture
def bwrap_here(monkeypatch):
    """As if bwrap worked here (nothing is run)."""
    monkeypatch.setattr(namespaces, "route", lambda: Route("bwrap", program="/usr/bin/bwrap"))


def test_held_places_are_where_a_confined_model_may_write(tmp_path, bwrap_here, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    assert namespaces.held_places(ctx(ws, "model")) == [
        str(ws), "/dev/shm", str(tmp_path / "cache")
    ]  # fmt: skip
    assert namespaces.held_places(ctx(ws, "mcp")) is not None  # every caller but a person
    assert namespaces.held_places(ctx(ws, "model", mode="read-only")) == []


@pytest.mark.parametrize(
    ("caller", "settings"),
    [
        ("person", {}),  # a person's typed command is not confined
        ("model", {"mode": "off"}),
        ("model", {"mode": "strict"}),  # settings that cannot be read: the guard in full
    ],
)
def test_no_held_places_where_the_sandbox_does_not_run_it(tmp_path, bwrap_here, caller, settings):
    assert namespaces.held_places(ctx(tmp_path, caller, **settings)) is None


def test_no_held_places_without_namespaces(tmp_path, monkeypatch):
    monkeypatch.setattr(namespaces, "route", lambda: Route("landlock", "no namespaces"))
    assert namespaces.held_places(ctx(tmp_path, "model")) is None
    assert namespaces.held_places(None) is None
    assert namespaces.held_places(ctx(tmp_path, "person", applies_to="all")) is None


def test_a_persons_command_is_held_under_applies_to_all(tmp_path, bwrap_here):
    assert namespaces.held_places(ctx(tmp_path, "person", applies_to="all")) is not None


# --- what the probes run -----------------------------------------------------------------


def test_the_bwrap_probe_runs_what_commands_will_get(tmp_path, monkeypatch):
    # The probe closes the network like a `network: off` command, in a session of its own.
    seen = tmp_path / "seen"
    fake_bwrap(
        tmp_path,
        f'echo "$@" > {seen}\n'
        f'test "$(cut -d\' \' -f6 /proc/$$/stat)" = "$$" || {{ echo not a session leader >&2; exit 1; }}\n',
    )
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert choose("bwrap") == Route("bwrap", "", str(tmp_path / "bwrap"))
    assert "--unshare-net" in seen.read_text().split()


def test_a_bwrap_probe_that_hangs_is_given_up(tmp_path, monkeypatch):
    import subprocess

    real_run = subprocess.run

    def sooner(*args, **kw):
        # The probe's own limit, shortened so the test need not wait for it.
        if "timeout" in kw:
            kw["timeout"] = 0.2
        return real_run(*args, **kw)

    fake_bwrap(tmp_path, "exec sleep 3\n")  # the timeout kills sleep itself: nothing is left
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setattr(subprocess, "run", sooner)
    taken = choose("bwrap")
    assert taken.name == "landlock" and taken.why.startswith("bubblewrap cannot start: ")
    assert "timed out" in taken.why


def test_the_direct_probe_asks_the_helper_only_to_probe(monkeypatch):
    lines = []
    real = namespaces.helper_command

    def recorded(argv, **kw):
        lines.append(real(argv, **kw))
        return ["sh", "-c", "echo no >&2; exit 1"]

    monkeypatch.setattr(landlock, "abi_version", lambda: 6)
    monkeypatch.setattr(namespaces, "helper_command", recorded)
    assert choose("direct").why == "mdagent's namespace helper fails here: no"
    assert "--probe" in lines[0] and "--network" not in lines[0]


def test_the_direct_route_needs_the_path_of_python(monkeypatch):
    monkeypatch.setattr(landlock, "abi_version", lambda: 6)
    monkeypatch.setattr(sys, "executable", "")
    assert choose("direct") == Route(
        "landlock", "the direct route needs the path of this Python, which is unknown"
    )


def test_anchors_under_a_writable_root_and_devices_bound_as_devices():
    assert namespaces.anchors(["/a/b/c/d"], ["/"]) == ["/a", "/a/b", "/a/b/c"]
    line = namespaces.bwrap_command(
        "bwrap", ["ls"], writable=["/dev", "/ws"], binds=(), network=True
    )
    assert "--dev-bind-try /dev /dev --bind-try /ws /ws --" in " ".join(line)
