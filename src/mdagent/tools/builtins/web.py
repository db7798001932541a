"""HTTP for tools: the ``fetch`` built-in and the one policy-checked request behind it and ``http:`` tools.

:func:`request` is the only place mdagent talks HTTP on a tool's behalf.
What it guarantees, whoever calls it:

- every URL it connects to — the first one and every redirect — is judged
  by the ``fetch`` rules of the policy (``fetch(domain:…)``), with hosts
  normalised first (``127.1``, ``0x7f.1``, ``[::ffff:127.0.0.1]`` are
  ``127.0.0.1``), so no redirect leads past a deny rule;
- a call ends by its deadline: httpx's timeouts are per read, so a server
  trickling bytes could hold a call for ever; here a watchdog cuts the
  connection when the call's total time is up (or its ``cancel`` is set);
- the body is read as a stream and capped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from urllib.parse import urlsplit

from mdagent.core.defaults import setting
from mdagent.core.records import Record

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

MAX_REDIRECTS = 10
_TEXT_TYPES = ("text/", "json", "xml", "javascript", "yaml", "csv", "x-www-form-urlencoded")
# How often the watchdog looks at the clock and the cancel event.
_TICK = 0.05


def fetch(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """GET ``url`` (redirects followed, each one judged by the policy) and return its body as text.

    The body is read as a stream and cut at ``fetch.max_bytes`` (the result
    says ``truncated``); a non-2xx status is a failure that still carries
    the body. A redirect is followed only to http(s) URLs the policy would
    let this call fetch directly, at most :data:`MAX_REDIRECTS` times; the
    whole call, redirects included, ends within ``fetch.timeout`` seconds.
    """
    url = str(args["url"]).strip()
    got = request(
        "GET",
        url,
        ctx,
        timeout=float(setting(ctx.settings, "fetch", "timeout")),
        max_bytes=int(setting(ctx.settings, "fetch", "max_bytes")),
        failed="fetch failed",
        headers={"User-Agent": "mdagent"},
        # The URL itself was judged as this call's argument: only redirects remain.
        judge_first=False,
    )
    if isinstance(got, dict):
        return {**got, "url": url}
    content_type = got.headers.get("content-type", "")
    result: dict[str, Any] = {
        "url": got.url,
        "status": got.status,
        "content_type": content_type,
        "output": _as_text(got.body, content_type, got.encoding or "utf-8"),
        "bytes": len(got.body),
        "truncated": got.truncated,
    }
    if not 200 <= got.status < 300:
        result["error"] = f"HTTP {got.status}"
    return result


# -- the one request -------------------------------------------------------------


class Response(Record):
    """What a finished request left: the final URL, status, headers and (capped) body."""

    url: str
    status: int
    headers: Any  # httpx.Headers: case-insensitive
    body: bytes
    truncated: bool
    encoding: str | None


def request(
    method: str,
    url: str,
    ctx: Any,
    *,
    timeout: float,
    max_bytes: int,
    failed: str,
    judge_first: bool = True,
    **options: Any,
) -> Response | dict[str, Any]:
    """``method url`` with the policy, a total deadline and a size cap; a failure as a dict.

    Every URL connected to is judged by the policy's ``fetch`` rules as
    :func:`judge_url` says: the first one only when ``judge_first`` (a
    ``fetch`` call's own URL was judged as its argument already), every
    redirect always; a redirect is followed at most :data:`MAX_REDIRECTS`
    times, with httpx's rules for the next method and headers. ``timeout``
    bounds the whole call, redirects included (time spent asking the person
    about a redirect does not count); ``ctx.cancel`` stops it. ``options``
    go to ``httpx.Client.build_request`` (``headers``, ``json``,
    ``content``). The failure dicts: ``{"error": "<failed>: why"}`` for a
    connection that broke, ``timed_out``/``interrupted``, a refusal with
    the policy's ``code``.
    """
    from mdagent.core.httpclient import client as http_client
    from mdagent.core.httpclient import load

    httpx = load()  # costs ~100 ms: only for the calls that fetch

    refused = judge_url(url, ctx, redirect=False, check_policy=judge_first)
    if refused is not None:
        return refused
    watchdog = _Watchdog(timeout, getattr(ctx, "cancel", None))
    try:
        with http_client(follow_redirects=False, timeout=timeout) as client:
            try:
                next_request = client.build_request(method, url, **options)
            except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError) as exc:
                return {"error": f"{failed}: {_one_line(exc)}"}
            for hop in range(MAX_REDIRECTS + 1):
                if hop:
                    # Judged off the clock: the person may be asked.
                    refused = judge_url(str(next_request.url), ctx, redirect=True)
                    if refused is not None:
                        return refused
                with watchdog.running():
                    got = _send(client, next_request, watchdog, max_bytes)
                if isinstance(got, Response):
                    return got
                next_request = got
            return {"error": f"too many redirects (more than {MAX_REDIRECTS})"}
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        if watchdog.fired == "timeout":
            return {"error": f"timed out after {timeout:g} s", "timed_out": True}
        if watchdog.fired == "cancel":
            return {"error": "interrupted", "interrupted": True}
        if isinstance(exc, httpx.TimeoutException):
            return {"error": f"timed out after {timeout:g} s", "timed_out": True}
        return {"error": f"{failed}: {_one_line(exc)}"}
    finally:
        watchdog.stop()


def _send(client: Any, req: Any, watchdog: _Watchdog, max_bytes: int) -> Response | Any:
    """One hop: the response, or the request a redirect leads to."""
    import httpx

    left = watchdog.left()
    # httpx applies its timeouts per read; this bounds each read (and the
    # connect) by what is left of the call, the watchdog bounds their sum.
    req.extensions = {
        **req.extensions,
        "timeout": httpx.Timeout(max(left, 0.001)).as_dict(),
        "trace": watchdog.trace,
    }
    response = client.send(req, stream=True)
    try:
        if response.next_request is not None:
            return response.next_request
        body = bytearray()
        truncated = False
        for chunk in response.iter_bytes():
            room = max_bytes - len(body)
            if len(chunk) > room:
                body += chunk[:room]
                truncated = True
                break
            body += chunk
            watchdog.check()
        return Response(
            url=str(response.url),
            status=response.status_code,
            headers=response.headers,
            body=bytes(body),
            truncated=truncated,
            encoding=response.charset_encoding,
        )
    finally:
        response.close()


def judge_url(
    url: str, ctx: Any, *, redirect: bool, check_policy: bool = True
) -> dict[str, Any] | None:
    """The refusal for connecting to ``url`` in the call ``ctx`` serves, or ``None``.

    Only http(s) URLs with a host. Then (unless ``check_policy`` is false) the
    policy — ``ctx.policy``, else the toolbox's; none: nothing more is
    checked — judges a ``fetch`` of ``url``: a ``redirect`` as if the call
    had asked for it (deny rules, then the caller's allow rules, mode and
    question), a first URL by the deny rules alone (the call that names it
    was approved as what it is: an ``http:`` tool).
    """
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        reason = "only http:// and https:// URLs can be fetched"
        return {"error": f"redirect to {url} refused: {reason}" if redirect else f"{reason}: {url}"}
    toolbox = getattr(ctx, "toolbox", None)
    rules = getattr(ctx, "policy", None)
    if rules is None and toolbox is not None:
        rules = toolbox.policy
    if rules is None or not check_policy:
        return None
    real = toolbox.tool_for("fetch") if toolbox is not None else None
    if getattr(real, "name", None) != "fetch":  # no fetch tool here: its rules still apply
        real = SimpleNamespace(name="fetch", aliases=(), meta={})
    if redirect:
        decision = rules.check(real, {"url": url}, ctx)
    else:
        # Deny rules only: a person's fetch, without fetch's own rate limit.
        plain = SimpleNamespace(name="fetch", aliases=tuple(real.aliases), meta={})
        decision = rules.check(plain, {"url": url}, _as_person(ctx))
    if decision.allowed:
        return None
    reason = decision.reason or "denied by policy"
    shown = f"redirect to {url} refused: {reason}" if redirect else reason
    return {"error": shown, "code": decision.code, **decision.extra}


def _as_person(ctx: Any) -> Any:
    if dataclasses.is_dataclass(ctx) and not isinstance(ctx, type):
        return dataclasses.replace(ctx, caller="person")
    return SimpleNamespace(**{**vars(ctx), "caller": "person"})


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class _Watchdog:
    """Cuts a call's connections when its time is up or its cancel event is set.

    httpx reads with a timeout per read; a server that sends a byte a
    second never trips it. The watchdog thread keeps the call's clock and,
    when it fires, shuts down every socket the call opened (learnt through
    httpcore's ``trace`` extension), which wakes a blocked read at once.
    The clock runs only inside :meth:`running`: waiting for the person to
    approve a redirect is not the server's time.
    """

    def __init__(self, seconds: float, cancel: threading.Event | None) -> None:
        self._left = float(seconds)
        self._since: float | None = None
        self._cancel = cancel
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._done = threading.Event()
        self.fired: str | None = None
        self._thread = threading.Thread(target=self._watch, name="mdagent-fetch", daemon=True)
        self._thread.start()

    def left(self) -> float:
        """Seconds left on the call's clock."""
        with self._lock:
            spent = time.monotonic() - self._since if self._since is not None else 0.0
            return self._left - spent

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Run the clock while the body executes (a hop's connect, send and read)."""
        with self._lock:
            self._since = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                self._left -= time.monotonic() - self._since
                self._since = None

    def check(self) -> None:
        """Raise httpx's timeout (or read error) when the watchdog fired meanwhile."""
        import httpx

        if self.fired == "timeout":
            raise httpx.ReadTimeout("the call's time is up")
        if self.fired == "cancel":
            raise httpx.ReadError("interrupted")

    def trace(self, event: str, info: Mapping[str, Any]) -> None:
        """httpcore's trace hook: remember each new connection's socket."""
        if event != "connection.connect_tcp.complete":
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            fired = self.fired
        if fired:
            _shut(sock)

    def stop(self) -> None:
        """End the watchdog thread (the call is over)."""
        self._done.set()

    def _watch(self) -> None:
        while not self._done.wait(_TICK):
            if self._cancel is not None and self._cancel.is_set():
                self._fire("cancel")
                return
            if self.left() <= 0:
                self._fire("timeout")
                return

    def _fire(self, why: str) -> None:
        with self._lock:
            self.fired = why
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    # shutdown, not close: it wakes a read blocked in another thread at once.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _as_text(body: bytes, content_type: str, encoding: str) -> str:
    """The body as text; a binary body is described, not dumped."""
    kind = content_type.split(";", 1)[0].strip().lower()
    looks_text = not kind or any(t in kind for t in _TEXT_TYPES)
    if not looks_text and b"\0" in body[:8192]:
        return f"(binary content: {kind or 'unknown type'}, {len(body)} bytes)"
    try:
        return body.decode(encoding, "replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", "replace")
