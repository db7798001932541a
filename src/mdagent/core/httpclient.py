"""httpx as the agent uses it: without httpx's command line, TLS set up only for https.

Two start-up costs of ``agent ask`` that buy nothing for a request to
``http://127.0.0.1``:

- ``import httpx`` imports ``httpx._main`` (its ``httpx`` command: click,
  rich, pygments, ~40-60 ms) whenever those are installed. :func:`load`
  imports httpx with that module stood in for, so only calling
  ``httpx.main()`` would load it (it then does, and runs).
- ``httpx.Client()`` loads the certificate bundle (~60-90 ms) when it is
  made. :func:`client` hands it a :class:`LazyTLS` context instead, which
  loads the same bundle (``SSL_CERT_FILE``, ``SSL_CERT_DIR``, else
  certifi's, as httpx chooses) on its first TLS handshake: an ``https://``
  endpoint is verified exactly as before, an ``http://`` one never pays.
"""

from __future__ import annotations

import os
import ssl
import sys
import threading
import types
from typing import Any


def load() -> Any:
    """The ``httpx`` module, imported without its command line."""
    module = sys.modules.get("httpx")
    if module is not None:
        return module
    stand_in = types.ModuleType("httpx._main")

    def main(*args: Any, **kwargs: Any) -> Any:
        sys.modules.pop("httpx._main", None)
        from httpx._main import main as real

        return real(*args, **kwargs)

    stand_in.main = main  # type: ignore[attr-defined]
    missing = "httpx._main" not in sys.modules
    if missing:
        sys.modules["httpx._main"] = stand_in
    try:
        import httpx
    finally:
        if missing and sys.modules.get("httpx._main") is stand_in:
            del sys.modules["httpx._main"]  # a later `import httpx._main` gets the real one
    return httpx


class LazyTLS(ssl.SSLContext):
    """A verifying client context (hostname checked, certificate required) whose trusted
    certificates are loaded on the first handshake, not when it is made."""

    def __new__(cls) -> LazyTLS:
        context = super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)
        context._lock = threading.Lock()
        context._loaded = False
        return context

    def __init__(self) -> None:
        self.verify_mode = ssl.CERT_REQUIRED
        self.check_hostname = True
        if sys.version_info >= (3, 13):  # what ssl.create_default_context adds there
            self.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT

    @property
    def loaded(self) -> bool:
        """Whether the trusted certificates have been loaded (a handshake happened)."""
        return self._loaded

    def load_trusted(self) -> None:
        """Load the certificates httpx would (``SSL_CERT_FILE``, ``SSL_CERT_DIR``, certifi)."""
        with self._lock:
            if self._loaded:
                return
            if os.environ.get("SSL_CERT_FILE"):
                self.load_verify_locations(cafile=os.environ["SSL_CERT_FILE"])
            elif os.environ.get("SSL_CERT_DIR"):
                self.load_verify_locations(capath=os.environ["SSL_CERT_DIR"])
            else:
                import certifi

                self.load_verify_locations(cafile=certifi.where())
            self._loaded = True

    def wrap_socket(self, *args: Any, **kwargs: Any) -> Any:
        self.load_trusted()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> Any:
        self.load_trusted()
        return super().wrap_bio(*args, **kwargs)


def client(**kwargs: Any) -> Any:
    """An ``httpx.Client`` (``kwargs`` as httpx takes them) whose TLS waits for an https request."""
    httpx = load()
    kwargs.setdefault("verify", LazyTLS())
    return httpx.Client(**kwargs)
