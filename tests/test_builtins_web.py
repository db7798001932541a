"""fetch against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mdagent.builtins import register_builtins
from mdagent.toolbox import Toolbox, ToolContext


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's naming
        if self.path == "/hello":
            self._send(200, "text/plain; charset=utf-8", "héllo wörld\n".encode())
        elif self.path == "/latin1":
            self._send(200, "text/plain; charset=iso-8859-1", "café\n".encode("latin-1"))
        elif self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/hello")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/big":
            self._send(200, "text/plain", b"x" * 3_000_000)
        elif self.path == "/slow":
            time.sleep(3)
            self._send(200, "text/plain", b"too late")
        elif self.path == "/image":
            self._send(200, "image/png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
        else:
            self._send(404, "text/plain", b"no such page")

    def _send(self, status, content_type, body):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # The client may stop reading at its size cap.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


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
    started = time.monotonic()
    result = fetch(f"{server}/slow", {"fetch": {"timeout": 0.3}})
    assert time.monotonic() - started < 2.5
    assert not result.ok and result.error == "timed out after 0.3 s"


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
        "from mdagent.toolbox import Toolbox, ToolContext\n"
        "from mdagent.builtins import register_builtins\n"
        "tb = Toolbox(); register_builtins(tb)\n"
        "tb.run('glob', {'pattern': '*'}, ToolContext(workdir=tempfile.gettempdir()))\n"
        "before = 'httpx' in sys.modules\n"
        "tb.run('fetch', {'url': 'ftp://x'})\n"
        "print(before)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr
