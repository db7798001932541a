"""The sandbox's decisions in this process: routes, command lines, rulesets, lines it prints.

tests/test_sandbox.py and the end-to-end tests run real confined
children; these fake the route and the Landlock layer (the ruleset a
child gets, the calls it makes between fork and exec) to check what
:func:`prepare` builds, what :class:`Sandbox` hands to ``Popen`` and what
:func:`describe`, :func:`available` and the notes say, on any machine.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mdagent.core.errors import ConfigError
from mdagent.safety import landlock, namespaces, sandbox, sandboxsettings
from mdagent.safety.namespaces import Route
from mdagent.safety.sandbox import Sandbox, prepare
from mdagent.safety.sandboxsettings import SandboxSettings

BWRAP = "/opt/test/bwrap"


@pytest.fixture
def ws(tmp_path, monkeypatch):
    """A workspace, an extra writable folder and a cache dir of this test's own."""
    for name in ("ws", "extra", "cache", "tmp"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture
def fake_landlock(monkeypatch):
    """Landlock ABI 6 here; create_ruleset records what it was asked and returns a real fd."""
    asked: list[dict] = []

    def create_ruleset(abi, paths, *, close_tcp):
        asked.append({"abi": abi, "paths": list(paths), "close_tcp": close_tcp})
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)

    monkeypatch.setattr(landlock, "abi_version", lambda: 6)
    monkeypatch.setattr(landlock, "probe", lambda: (6, ""))
    monkeypatch.setattr(landlock, "create_ruleset", create_ruleset)
    return asked


# --- available -------------------------------------------------------------


@pytest.mark.parametrize(("abi", "needs"), [(3, True), (4, False), (6, False)])
def test_network_off_needs_abi_4_exactly(monkeypatch, abi, needs):
    monkeypatch.setattr(landlock, "probe", lambda: (abi, ""))
    why = sandbox.available(SandboxSettings(network=False), Route("landlock", why="no userns"))
    assert why.startswith("there are no namespaces here (no userns)")
    assert ("network: off needs Landlock ABI 4" in why) is needs


# --- describe --------------------------------------------------------------


def test_describe_off_is_one_fixed_line(ws):
    assert sandbox.describe(SandboxSettings(mode="off"), ws / "ws") == (
        "no sandbox (sandbox.mode: off)"
    )


def test_describe_the_whole_line_with_the_network_on(ws):
    line = sandbox.describe(SandboxSettings(mode="read-only"), ws / "ws", [ws / "extra"])
    assert line == (
        f"sandbox (read-only): commands may read everything but write only in "
        f"{ws / 'extra'}, /dev/null and terminals; to allow more, add the path to "
        f"sandbox.writable, set sandbox.mode: workspace-write or set sandbox.mode: off "
        f"in agent.yaml"
    )


@pytest.mark.parametrize(
    ("route", "network"),
    [
        ("direct", "; they have no network (loopback only)"),
        ("bwrap", "; they have no network (loopback only)"),
        ("landlock", "; TCP connect and bind are denied"),
    ],
)
def test_describe_says_how_the_network_is_closed_on_each_route(ws, route, network):
    line = sandbox.describe(
        SandboxSettings(mode="read-only", network=False), ws / "ws", route=route
    )
    assert f"and terminals{network}; to allow more" in line


def test_describe_shortens_paths_in_the_home_folder_to_a_tilde(ws, monkeypatch):
    monkeypatch.setenv("HOME", str(ws))
    line = sandbox.describe(SandboxSettings(mode="read-only"), ws / "ws", [ws / "extra", ws])
    assert "write only in ~/extra, ~, /dev/null and terminals;" in line


# --- prepare ---------------------------------------------------------------


def test_prepare_on_the_bwrap_route_builds_its_command_line(ws):
    tmpdir = ws / "tmp"
    settings = SandboxSettings(network=False)
    binds = [str(ws / "ws" / ".agents")]
    route = Route("bwrap", program=BWRAP)
    with prepare(
        settings, ws / "ws", [ws / "extra"], route=route, binds=binds, tmpdir=tmpdir
    ) as box:
        assert box.active and box.namespaces and box.unavailable == ""
        assert box.preexec_fn is None and box.pass_fds == ()
        assert box.env == {"TMPDIR": str(tmpdir)}
        writable = [str(ws / "ws"), str(tmpdir), str(ws / "cache"), str(ws / "extra")]
        assert box.command(["ls", "-l"]) == namespaces.bwrap_command(
            BWRAP, ["ls", "-l"], writable=writable, binds=binds, network=False
        )
        assert "--unshare-net" in box.command(["ls"])
        assert box.describe().startswith("sandbox (workspace-write, namespaces via bwrap): ")
        assert " (not .agents: the agent's configuration)" in box.describe()
    # Closed, it confines nothing more: the command runs as it is.
    assert not box.active and box.command(["ls"]) == ["ls"] and box.env == {}


def test_bwrap_with_the_network_on_shares_it(ws):
    route = Route("bwrap", program=BWRAP)
    with prepare(SandboxSettings(), ws / "ws", route=route, tmpdir=ws / "tmp") as box:
        assert "--unshare-net" not in box.command(["ls"])
        assert "/dev/shm" not in box.command(["ls"])  # bwrap's --dev makes its own


def test_prepare_on_the_direct_route_hands_the_ruleset_to_the_helper(ws, fake_landlock):
    tmpdir = ws / "tmp"
    binds = [str(ws / "ws" / ".agents")]
    settings = SandboxSettings(network=False)
    route = Route("direct")
    with prepare(
        settings, ws / "ws", [ws / "extra"], route=route, binds=binds, tmpdir=tmpdir
    ) as box:
        fd = box.pass_fds[0]
        assert box.active and box.namespaces and box.unavailable == "" and box.abi == 6
        assert box.preexec_fn is None  # the helper applies the ruleset, not Popen
        writable = [ws / "ws", tmpdir, Path("/dev/shm"), ws / "cache", ws / "extra"]
        # The network namespace closes the network: no TCP rules in the ruleset.
        assert fake_landlock == [{"abi": 6, "paths": writable, "close_tcp": False}]
        line = box.command(["ls"])
        assert line == namespaces.helper_command(
            ["ls"], binds=binds, network=False, ruleset=fd, writable=[str(p) for p in writable]
        )
        assert line[line.index("--ruleset") + 1] == str(fd) and "--network" not in line
        assert box.describe().startswith("sandbox (workspace-write, namespaces via direct): ")
    with prepare(SandboxSettings(), ws / "ws", route=route, tmpdir=tmpdir) as box:
        assert "--network" in box.command(["ls"])


def test_prepare_on_the_landlock_route_closes_tcp_and_keeps_the_settings(ws, fake_landlock):
    settings = SandboxSettings(mode="read-only", network=False)
    with prepare(settings, ws / "ws", route=Route("landlock", why="x"), tmpdir=ws / "tmp") as box:
        assert box.settings is settings and box.abi == 6
        assert fake_landlock[0]["close_tcp"] is True
        assert box.unavailable == "there are no namespaces here (x)"
        assert box.describe().startswith("sandbox (read-only): ")


def test_prepare_without_landlock_keeps_the_settings_and_the_reason(ws, monkeypatch):
    monkeypatch.setattr(landlock, "abi_version", lambda: 0)
    monkeypatch.setattr(landlock, "probe", lambda: (0, "no Landlock here"))
    settings = SandboxSettings(mode="read-only")
    with prepare(settings, ws / "ws", route=Route("landlock"), tmpdir=ws / "tmp") as box:
        assert not box.active and box.unavailable == "no Landlock here"
        assert box.settings is settings
        assert box.describe().startswith("sandbox (read-only): ")


def test_prepare_makes_a_missing_cache_dir_and_shrugs_off_one_it_cannot(ws, monkeypatch):
    route = Route("bwrap", program=BWRAP)
    monkeypatch.setenv("XDG_CACHE_HOME", str(ws / "fresh"))
    prepare(SandboxSettings(), ws / "ws", route=route, tmpdir=ws / "tmp").close()
    assert (ws / "fresh").is_dir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(ws / "missing" / "parent"))
    with prepare(SandboxSettings(), ws / "ws", route=route, tmpdir=ws / "tmp") as box:
        assert box.active and not (ws / "missing").exists()


# --- Sandbox: the child's calls --------------------------------------------


class Calls:
    """Fake foreign functions: each records its call and returns what it is told to."""

    def __init__(self, **results: int) -> None:
        self.results = results
        self.made: list[str] = []

    def fn(self, name: str):
        def call(*args):
            self.made.append(name)
            return self.results.get(name, 0)

        return call


def landlock_box(ws, monkeypatch, calls: Calls, *, capabilities: bool, fd: int | None = None):
    monkeypatch.setattr(
        landlock, "child_calls", lambda fd: (calls.fn("prctl"), (), calls.fn("restrict"), ())
    )
    monkeypatch.setattr(landlock, "has_capabilities", lambda: capabilities)
    monkeypatch.setattr(
        landlock, "capability_drops", lambda: ((calls.fn("drop1"), ()), (calls.fn("drop2"), ()))
    )
    if fd is None:
        fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    return Sandbox(SandboxSettings(), ws / "ws", fd=fd, abi=6)


@pytest.mark.parametrize("capabilities", [True, False])
def test_the_child_drops_capabilities_only_when_it_has_some(ws, monkeypatch, capabilities):
    calls = Calls()
    with landlock_box(ws, monkeypatch, calls, capabilities=capabilities) as box:
        assert box.command(["ls"]) == ["ls"] and box.pass_fds == ()
        box.preexec_fn()
    dropped = ["drop1", "drop2"] if capabilities else []
    assert calls.made == [*dropped, "prctl", "restrict"]


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ({"drop2": -1}, "cannot drop the capabilities"),
        ({"drop1": 1}, "cannot drop the capabilities"),
        ({"prctl": -1}, "cannot enter the Landlock sandbox"),
        ({"restrict": -1}, "cannot enter the Landlock sandbox"),
    ],
)
def test_a_failed_call_in_the_child_fails_closed(ws, monkeypatch, results, message):
    box = landlock_box(ws, monkeypatch, Calls(**results), capabilities=True)
    with box, pytest.raises(OSError, match=message):
        box.preexec_fn()


def test_a_ruleset_on_descriptor_0_confines_and_is_closed(ws, monkeypatch):
    # With stdin closed, the ruleset can get descriptor 0.
    saved = os.dup(0)
    try:
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        box = landlock_box(ws, monkeypatch, Calls(), capabilities=False, fd=0)
        assert box.active and box.preexec_fn is not None
        box.close()
        assert not box.active and box.preexec_fn is None
        with pytest.raises(OSError):
            os.fstat(0)
    finally:
        os.dup2(saved, 0)
        os.close(saved)


# --- Sandbox: describe, notes ----------------------------------------------


def test_an_inactive_sandbox_describes_the_landlock_line(ws):
    box = Sandbox(SandboxSettings(mode="read-only"), ws / "ws", [ws / "extra"], route="bwrap")
    assert not box.active
    assert box.describe() == sandbox.describe(
        SandboxSettings(mode="read-only"), ws / "ws", [ws / "extra"]
    )
    assert box.describe().startswith("sandbox (read-only): ")
    assert str(ws / "extra") in box.describe()


@pytest.mark.parametrize(
    ("network", "output", "noted"),
    [
        (False, "curl: Connection refused", True),
        (True, "curl: Connection refused", False),
        (True, "Permission denied", True),
        (False, "Permission denied", True),
    ],
)
def test_a_network_failure_is_noted_only_with_the_network_off(ws, network, output, noted):
    box = Sandbox(SandboxSettings(network=network), ws / "ws", route="bwrap", program=BWRAP)
    note = box.violation_note(output, 7)
    assert bool(note) is noted
    if noted:
        assert note.startswith("the command may have been stopped by mdagent's sandbox (")


# --- sandboxsettings ---------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"colour": 1},
            "agent.yaml: sandbox: unknown key 'colour' "
            "(known: mode, network, writable, applies_to, required)",
        ),
        ({"writable": 3}, "agent.yaml: sandbox.writable: expected a list of paths"),
    ],
)
def test_settings_errors_word_for_word(data, message):
    with pytest.raises(ConfigError) as caught:
        SandboxSettings.from_mapping(data, "agent.yaml")
    assert str(caught.value) == message


def test_the_private_temp_folder_is_named_for_the_agent(ws, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(ws / "tmp"))
    sandboxsettings.forget_private_tmpdir()
    try:
        made = sandboxsettings.private_tmpdir()
        assert made.parent == ws / "tmp" and made.name.startswith("agent-tmp-")
    finally:
        sandboxsettings.forget_private_tmpdir()


def test_the_private_temp_folder_is_removed_at_exit_even_if_already_gone(ws, monkeypatch):
    import atexit
    import tempfile

    at_exit = []
    monkeypatch.setattr(atexit, "register", lambda fn, *a, **kw: at_exit.append((fn, a, kw)))
    monkeypatch.setattr(tempfile, "tempdir", str(ws / "tmp"))
    sandboxsettings.forget_private_tmpdir()
    try:
        made = sandboxsettings.private_tmpdir()
        (made / "left").write_text("x")
        for fn, args, kw in at_exit:
            fn(*args, **kw)
        assert not made.exists()
        for fn, args, kw in at_exit:  # a command (or a person) removed it first: no error at exit
            fn(*args, **kw)
    finally:
        sandboxsettings.forget_private_tmpdir()
