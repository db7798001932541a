"""Who may reach ``agent mcp serve --http``: loopback binds and their Host/Origin check."""

from __future__ import annotations

import pytest

from mdagent.server.mcpserver import foreign_request, is_loopback


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.1",
        "127.0.0.2",
        "127.255.255.254",
        "0x7f.1",
        "0177.0.0.1",
        "2130706433",
        "::1",
        "[::1]",
        "::ffff:127.0.0.1",
        "[::ffff:127.0.0.2]",
        "::1%lo",
        "localhost",
        "LocalHost.",
    ],
)
def test_every_spelling_of_this_machine_is_loopback(host):
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host",
    [
        "0.0.0.0",
        "::",
        "192.0.2.1",
        "fd00::2",
        "128.0.0.1",
        "evil.example",
        "localhost.evil",
        "",
        "x",
    ],
)
def test_other_addresses_and_names_are_not(host):
    """These binds warn "reachable from other machines"; as a Host they are refused."""
    assert not is_loopback(host)


def headers(**given: str) -> list[tuple[bytes, bytes]]:
    return [(k.encode(), v.encode()) for k, v in given.items()]


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:8931", "127.1:1", "localhost", "[::1]:80", "[::ffff:127.0.0.1]:9", "0x7f.1:5"],
)
def test_a_request_for_this_machine_passes(host):
    assert foreign_request(headers(host=host)) is None
    assert foreign_request(headers(host=host, origin="http://localhost:6274")) is None
    assert foreign_request(headers(host=host, origin="https://[::1]")) is None


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:8931",
        "127.0.0.1.evil.example",
        "::1",
        "[::1]x",
        "127.0.0.1:x",
        "",
    ],
)
def test_a_request_naming_another_host_is_refused(host):
    assert foreign_request(headers(host=host))[0] == 421


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "http://localhost.evil.example:80",
        "null",
        "file://",
        "http://127.0.0.1/path",
        "http://user@127.0.0.1",
        "http://127.0.0.1:99999",
    ],
)
def test_a_page_from_elsewhere_is_refused(origin):
    assert foreign_request(headers(host="127.0.0.1:1", origin=origin))[0] == 403


def test_no_host_or_a_header_given_twice_is_refused():
    assert foreign_request([])[0] == 421
    twice = [(b"host", b"127.0.0.1:1"), (b"Host", b"evil.example")]
    assert foreign_request(twice)[0] == 421
    origins = [(b"host", b"127.0.0.1:1"), (b"origin", b"http://localhost"), (b"origin", b"null")]
    assert foreign_request(origins)[0] == 403


def test_the_skills_extension_is_declared_only_when_skills_are_served():
    pytest.importorskip("mcp")
    from types import SimpleNamespace

    from mdagent.server.mcpserver import SKILLS_EXTENSION, build_server

    def served(skills):
        runtime = SimpleNamespace(workdir="/w")
        return SimpleNamespace(
            runtime=runtime, schema=lambda name: None, visible_skills=lambda: skills
        )

    with_skills = build_server(served(["one"])).create_initialization_options().capabilities
    assert SKILLS_EXTENSION in with_skills.extensions
    assert SKILLS_EXTENSION in with_skills.experimental
    without = build_server(served([])).create_initialization_options().capabilities
    assert SKILLS_EXTENSION not in (without.extensions or {})
    assert SKILLS_EXTENSION not in (without.experimental or {})
    assert without.logging is not None  # logging/setLevel is answered
