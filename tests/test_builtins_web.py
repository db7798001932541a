"""fetch against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from urllib.parse import quote

import pytest

from mdagent.core.calls import ToolContext
from mdagent.runtime.approvers import ScriptedApprover
from mdagent.safety.policy import Policy
from mdagent.tools.builtins import register_builtins
from mdagent.tools.toolbox import Toolbox


@pytest.fixture
def server(web):
    """The base URL of the ``web`` test server (tests/web_server.py lists its pages)."""
    return web.url


@pytest.fixture
def fetch(tmp_path):
    tb = Toolbox()
    register_builtins(tb, ["fetch"])

    def fetch(url, settings=None):
        return tb.run(
            "fetch", {"url": url}, ToolContext(workdir=str(tmp_path), settings=settings or {})
        )

    return fetch


def test_fetch_returns_the_body_as_text(fetch, server):
    result = fetch(f"{server}/hello")
    assert result.ok
    assert result.data == {
        "url": f"{server}/hello",
        "status": 200,
        "content_type": "text/plain; charset=utf-8",
        "output": "héllo wörld\n",
        "bytes": 14,
        "truncated": False,
    }


def test_fetch_decodes_the_declared_charset(fetch, server):
    assert fetch(f"{server}/latin1").data["output"] == "café\n"


def test_fetch_follows_redirects(fetch, server):
    result = fetch(f"{server}/moved")
    assert result.data["url"] == f"{server}/hello"
    assert result.data["output"] == "héllo wörld\n"


def test_http_errors_are_failures_with_the_status(fetch, server):
    result = fetch(f"{server}/missing")
    assert not result.ok
    assert result.error == "HTTP 404"
    assert result.data["status"] == 404 and result.data["output"] == "no such page"


def test_the_body_is_capped(fetch, server):
    result = fetch(f"{server}/big", {"fetch": {"max_bytes": 1000}})
    assert result.ok
    assert result.data["output"] == "x" * 1000
    assert result.data["truncated"] is True
    assert len(fetch(f"{server}/big").data["output"]) == 1_000_000  # the default cap


def test_the_time_is_capped(fetch, server):
    result = fetch(f"{server}/slow", {"fetch": {"timeout": 0.3}})
    assert not result.ok and result.error == "timed out after 0.3 s"  # not "too late", 3 s on


def test_binary_bodies_are_described_not_dumped(fetch, server):
    assert fetch(f"{server}/image").data["output"] == "(binary content: image/png, 16 bytes)"


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.com/x", "example.com", "http://"]
)
def test_only_http_and_https(fetch, url):
    result = fetch(url)
    assert not result.ok
    assert result.error == f"only http:// and https:// URLs can be fetched: {url}"


def test_connection_refused_is_a_clear_failure(fetch):
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = fetch(f"http://127.0.0.1:{port}/")
    assert not result.ok and result.error.startswith("fetch failed:")


def test_httpx_is_imported_only_when_fetching():
    script = (
        "import sys, tempfile\n"
        "from mdagent.core.calls import ToolContext\nfrom mdagent.tools.toolbox import Toolbox\n"
        "from mdagent.tools.builtins import register_builtins\n"
        "tb = Toolbox(); register_builtins(tb)\n"
        "tb.run('glob', {'pattern': '*'}, ToolContext(workdir=tempfile.gettempdir()))\n"
        "before = 'httpx' in sys.modules\n"
        "tb.run('fetch', {'url': 'ftp://x'})\n"
        "print(before)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


# -- redirects are judged by the policy, hop by hop --------------------------------


def guarded_fetch(tmp_path, policy_settings, caller="model"):
    settings = {"policy": policy_settings}
    tb = Toolbox(policy=Policy(settings, workdir=tmp_path))
    register_builtins(tb, ["fetch"])

    def fetch(url):
        ctx = ToolContext(workdir=str(tmp_path), settings=settings, caller=caller)
        return tb.run("fetch", {"url": url}, ctx)

    return fetch


def redirect(server, location):
    return f"{server}/to/{quote(location, safe='')}"


def test_a_redirect_to_a_denied_domain_is_refused(tmp_path, server, web):
    port = server.rsplit(":", 1)[1]
    fetch = guarded_fetch(
        tmp_path,
        {
            "mode": "allowlist",
            "allow": ["fetch(domain:127.0.0.1)"],
            "deny": ["fetch(domain:localhost)"],
        },
    )
    start = redirect(server, "http://localhost:{port}/hello")
    result = fetch(start)
    assert not result.ok
    assert result.error == (
        f"redirect to http://localhost:{port}/hello refused: "
        "denied by policy rule `fetch(domain:localhost)`"
    )
    assert result.data["code"] == "DENIED" and result.data["url"] == start
    assert [host for host, _ in web.seen] == [f"127.0.0.1:{port}"]  # localhost never asked


def test_a_redirect_outside_the_allowlist_is_refused(tmp_path, server):
    port = server.rsplit(":", 1)[1]
    fetch = guarded_fetch(tmp_path, {"mode": "allowlist", "allow": ["fetch(domain:127.0.0.1)"]})
    result = fetch(redirect(server, "http://localhost:{port}/hello"))
    assert not result.ok and result.data["code"] == "DENIED"
    assert result.error.startswith(f"redirect to http://localhost:{port}/hello refused: ")
    assert result.data["allow_rule"] == "fetch(domain:localhost)"


def test_deny_rules_apply_to_a_persons_redirects_too(tmp_path, server):
    fetch = guarded_fetch(tmp_path, {"deny": ["fetch(domain:localhost)"]}, caller="person")
    result = fetch(redirect(server, "http://localhost:{port}/hello"))
    assert not result.ok and result.data["code"] == "DENIED"


def test_an_allowed_redirect_is_followed(tmp_path, server):
    fetch = guarded_fetch(tmp_path, {"mode": "allowlist", "allow": ["fetch(domain:127.0.0.1)"]})
    result = fetch(redirect(server, "/hello"))  # relative: resolved against the current URL
    assert result.ok, result.data
    assert result.data["url"] == f"{server}/hello" and result.data["output"] == "héllo wörld\n"


def test_a_redirect_loop_stops(fetch, server):
    result = fetch(f"{server}/loop")
    assert not result.ok and result.error == "too many redirects (more than 10)"


def test_a_redirect_to_another_scheme_is_refused(fetch, server):
    result = fetch(redirect(server, "file:///etc/passwd"))
    assert not result.ok
    assert result.error.startswith("redirect to file://")
    assert result.error.endswith("refused: only http:// and https:// URLs can be fetched")


# -- a deadline per call -----------------------------------------------------------


@pytest.mark.parametrize("path", ["/trickle", "/trickle-headers"])
def test_a_trickling_server_cannot_hold_a_call_past_its_timeout(fetch, server, web, path):
    result = fetch(f"{server}{path}", {"fetch": {"timeout": 1}})
    assert not result.ok and result.error == "timed out after 1 s"
    assert result.data["timed_out"] is True
    assert web.finished == []  # the call ended while the server still had 30 s to send


def test_cancel_stops_a_fetch_at_once(tmp_path, server, web):
    tb = Toolbox()
    register_builtins(tb, ["fetch"])
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    result = tb.run(
        "fetch", {"url": f"{server}/trickle"}, ToolContext(workdir=str(tmp_path), cancel=cancel)
    )
    assert not result.ok and result.error == "interrupted" and result.data["interrupted"] is True
    assert web.finished == []  # stopped at once, not after the server's 30 s


def test_time_spent_asking_about_a_redirect_is_not_the_servers(tmp_path, server):
    asked = []

    def slow_person(tool, args):
        asked.append(args["url"])
        time.sleep(1.5)  # longer than the whole call may take on the network
        return "yes"

    settings = {"policy": {"mode": "ask"}, "fetch": {"timeout": 1}}
    person = ScriptedApprover(lambda question: slow_person(question.tool, question.args))
    policy = Policy(settings, workdir=tmp_path, approver=person)
    tb = Toolbox(policy=policy)
    register_builtins(tb, ["fetch"])
    ctx = ToolContext(workdir=str(tmp_path), settings=settings, caller="model")
    result = tb.run("fetch", {"url": redirect(server, "/hello")}, ctx)
    assert result.ok, result.data
    assert asked == [redirect(server, "/hello"), f"{server}/hello"]


# -- hosts are compared however they are spelt ---------------------------------------


SPELLINGS_OF_LOCALHOST = [
    "127.1",
    "0x7f.1",
    "0x7F.0.0.1",
    "2130706433",
    "0177.0.0.1",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "127.0.0.1.",
    "127.0.0.%31",
]


@pytest.mark.parametrize("host", SPELLINGS_OF_LOCALHOST)
def test_a_deny_rule_sees_every_spelling_of_an_address(tmp_path, server, web, host):
    port = server.rsplit(":", 1)[1]
    fetch = guarded_fetch(tmp_path, {"mode": "full", "deny": ["fetch(domain:127.0.0.1)"]})
    result = fetch(f"http://{host}:{port}/hello")
    assert not result.ok and result.data["code"] == "DENIED", result.data
    assert web.seen == []


@pytest.mark.parametrize("host", ["127.1", "0x7f.1", "[::ffff:127.0.0.1]", "LOCALHOST."])
def test_a_redirect_to_another_spelling_is_judged_as_the_address(tmp_path, server, host):
    port = server.rsplit(":", 1)[1]
    fetch = guarded_fetch(
        tmp_path,
        {"mode": "full", "deny": ["fetch(domain:127.0.0.1)", "fetch(domain:localhost)"]},
    )
    result = fetch(f"http://localhost:{port}/to/" + quote(f"http://{host}:{port}/hello", safe=""))
    assert not result.ok and result.data["code"] == "DENIED"


def test_an_allow_rule_for_an_address_covers_its_other_spellings(tmp_path, server):
    port = server.rsplit(":", 1)[1]
    fetch = guarded_fetch(tmp_path, {"mode": "allowlist", "allow": ["fetch(domain:127.1)"]})
    result = fetch(f"http://0x7f.0.0.1:{port}/hello")
    assert result.ok, result.data


@pytest.mark.parametrize(
    "domain, host, matches",
    [
        ("example.org", "www.example.org", True),
        ("Example.ORG.", "example.org", True),
        ("example.org", "badexample.org", False),
        ("127.0.0.1", "127.0.0.1", True),
        ("0.1", "127.0.0.1", False),  # an address is never a "subdomain"
        ("0.0.1", "127.0.0.1", False),
        ("[::1]", "[0:0::1]", True),
        ("::ffff:127.0.0.1", "127.0.0.1", True),
    ],
)
def test_domain_rules_match_names_and_addresses(domain, host, matches):
    from mdagent.safety.views import domain_matches, url_host

    assert domain_matches(domain, url_host(f"http://{host}/")) is matches
