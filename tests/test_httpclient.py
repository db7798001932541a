"""httpx without its command line, and certificates loaded only for https (issue 33, item 6)."""

from __future__ import annotations

import http.server
import shutil
import ssl
import subprocess
import sys
import threading

import pytest

from mdagent.core import httpclient


def test_a_client_imports_neither_httpx_s_command_line_nor_the_certificates():
    code = (
        "import sys; from mdagent.core import httpclient; c = httpclient.client(); "
        "print(sorted(m for m in ('click', 'rich', 'pygments', 'httpx._main') if m in sys.modules)); "
        "print(c._transport._pool._ssl_context.cert_store_stats()['x509_ca'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "0"]


def test_the_policy_reading_a_fetch_host_imports_no_command_line_either():
    # The policy judges a fetch before the web tool runs: its URL parse came first.
    code = (
        "import sys; from mdagent.safety.views import url_host; "
        "print(url_host('https://Example.org/x')); "
        "print(sorted(m for m in ('click', 'rich', 'pygments') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["example.org", "[]"]


def test_httpx_main_still_runs_the_real_command_line_when_called():
    code = (
        "import sys; from mdagent.core import httpclient; h = httpclient.load(); "
        "sys.argv = ['httpx', '--help']; h.main()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if "click" in out.stderr and "No module" in out.stderr:
        pytest.skip("httpx's command line is not installed here")
    assert "Usage" in out.stdout or "usage" in out.stdout.lower()


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args):
        pass


@pytest.fixture
def server(request):
    """An HTTP server on 127.0.0.1; ``tls`` (indirect param): with a self-signed certificate."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    cert = None
    if getattr(request, "param", None) == "tls":
        if shutil.which("openssl") is None:
            pytest.skip("no openssl to make a certificate")
        folder = request.getfixturevalue("tmp_path")
        cert, key = folder / "cert.pem", folder / "key.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
             "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
             "-keyout", str(key), "-out", str(cert)],
            check=True, capture_output=True,
        )  # fmt: skip
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1], cert
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_http_never_loads_the_certificates(server):
    port, _ = server
    with httpclient.client() as client:
        assert client.get(f"http://127.0.0.1:{port}/").text == "hello"
        assert client._transport._pool._ssl_context.loaded is False


@pytest.mark.parametrize("server", ["tls"], indirect=True)
def test_https_is_verified_as_before(server, monkeypatch):
    port, cert = server
    httpx = httpclient.load()
    url = f"https://127.0.0.1:{port}/"
    with httpclient.client() as client, pytest.raises(httpx.ConnectError, match="CERTIFICATE"):
        client.get(url)  # self-signed: not among the trusted certificates
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trusted, as httpx reads it
    with httpclient.client() as client:
        assert client.get(url).text == "hello"
        assert client._transport._pool._ssl_context.loaded is True
