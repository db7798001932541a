"""A web server for tests whose pages misbehave on request: real HTTP on 127.0.0.1.

Use it as the ``web`` fixture (tests/conftest.py) or as a context manager::

    with WebServer() as web:
        fetch(f"{web.url}/trickle")        # http://127.0.0.1:PORT/trickle
        assert web.paths == ["/trickle"]

Pages:

``/hello``            200, "héllo wörld\\n" as UTF-8 text
``/latin1``           200, "café\\n" declared and sent as ISO-8859-1
``/moved``            302 to ``/hello``
``/to/<location>``    302 to the URL-quoted ``location``, ``{port}`` filled in
``/loop``             301 to itself
``/big``              200, 3,000,000 bytes
``/slow``             200 after 3 s
``/trickle``          200, a byte every 0.1 s for 30 s: never a read timeout
``/trickle-headers``  the status line and headers themselves, a byte every 0.1 s
                      (a trickle sent to its end is recorded in ``finished``)
``/image``            200, a few bytes of PNG
anything else         404, "no such page"

Every request is recorded in ``seen`` as (Host header, path).
"""

from __future__ import annotations

import contextlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote


class WebServer:
    """The server, on a free port of 127.0.0.1 while started."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        #: The path of every trickle the client stayed for to the end (the
        #: event a test of a deadline asserts is absent, instead of a clock).
        self.finished: list[str] = []
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> WebServer:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.web = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(5)
            self._httpd = None

    def __enter__(self) -> WebServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, without a trailing slash."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def paths(self) -> list[str]:
        """The path of every request so far, in order."""
        return [path for _, path in self.seen]


class _Server(ThreadingHTTPServer):
    web: WebServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self):  # noqa: N802 - http.server's naming
        self.server.web.seen.append((self.headers["Host"], self.path))
        if self.path == "/hello":
            self._send(200, "text/plain; charset=utf-8", "héllo wörld\n".encode())
        elif self.path == "/latin1":
            self._send(200, "text/plain; charset=iso-8859-1", "café\n".encode("latin-1"))
        elif self.path == "/moved":
            self._redirect(302, "/hello")
        elif self.path.startswith("/to/"):
            location = unquote(self.path[len("/to/") :])
            self._redirect(302, location.replace("{port}", str(self.server.server_port)))
        elif self.path == "/loop":
            self._redirect(301, "/loop")
        elif self.path == "/big":
            self._send(200, "text/plain", b"x" * 3_000_000)
        elif self.path == "/slow":
            time.sleep(3)
            self._send(200, "text/plain", b"too late")
        elif self.path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "300")
            self.end_headers()
            self._trickle(b"." * 300)
        elif self.path == "/trickle-headers":
            self._trickle(b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"." * 300 + b"\r\n\r\n")
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

    def _redirect(self, status, location):
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _trickle(self, data):
        # The client gives up at its deadline; the write that follows fails.
        with contextlib.suppress(OSError):
            for byte in data:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.1)
            self.server.web.finished.append(self.path)

    def log_message(self, *args):
        pass
