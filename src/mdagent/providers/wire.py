"""What a model server sends, read: SSE events, error messages and web pages, retry headers.

Functions of text and headers only (no request is sent here): the HTTP
plumbing in :mod:`mdagent.providers.base` and the backends call them.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

#: Statuses worth another try, as the official OpenAI and Anthropic SDKs decide:
#: request timeout, lock timeout, rate limit, and every 5xx (529: overloaded).
RETRY_STATUSES = frozenset({408, 409, 429})


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """The wait a ``Retry-After`` header asks for (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN says nothing
        return None
    return max(0.0, seconds)


def retry_wait(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a response's headers ask for, read as the official SDKs do, or None.

    ``retry-after-ms`` (milliseconds) first, then ``retry-after`` (seconds or
    an HTTP date). The caller caps it (:data:`~mdagent.providers.base.RETRY_AFTER_CAP`).
    """
    millis = headers.get("retry-after-ms")
    if millis:
        with suppress(ValueError):
            value = float(millis)
            if value == value:  # not NaN
                return max(0.0, value / 1000)
    return retry_after_seconds(headers.get("retry-after"), now)


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """Whether an error status is worth another try, as the official SDKs decide.

    A server's ``x-should-retry: true|false`` is obeyed first; otherwise 408,
    409, 429 and every 5xx (529 "overloaded" included) are retried.
    """
    said = (headers.get("x-should-retry") or "").strip().lower()
    if said in ("true", "false"):
        return said == "true"
    return status in RETRY_STATUSES or status >= 500


def server_message(response: httpx.Response) -> str:
    """The error text a server put in its body, on one line (empty if none).

    A JSON error gives its message; a web page (a proxy's or gateway's error
    page: nginx, Cloudflare, a corporate proxy) gives its ``<title>``, never
    its HTML.
    """
    try:
        text = response.text
    except Exception:  # a body we could not read or decode says nothing useful
        return ""
    message: Any = text
    try:
        data = json.loads(text)
    except ValueError:
        data = None
        if is_html(text, response.headers.get("content-type", "")):
            return page_title(text)
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]  # Gemini's OpenAI endpoint: [{"error": {...}}]
    if isinstance(data, dict):
        error = data.get("error")
        # OpenAI/Anthropic: {"error": {"message": ...}}; Ollama: {"error": "..."};
        # FastAPI-based servers and proxies: {"detail": "..."}.
        if isinstance(error, dict):
            message = error.get("message") or json.dumps(error)
        elif error:
            message = error
        elif data.get("message"):
            message = data["message"]
        elif isinstance(data.get("detail"), str) and data["detail"]:
            message = data["detail"]
    return one_line(message)


_HTML_START = re.compile(r"\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body)\b", re.I | re.S)


def is_html(text: str, content_type: str = "") -> bool:
    """Whether a body is a web page (by its content type, or by how it starts)."""
    return "html" in content_type.lower() or bool(_HTML_START.match(text))


def page_title(text: str) -> str:
    """A web page's ``<title>`` (else its first ``<h1>``) as one line of plain text."""
    from html import unescape

    for tag in ("title", "h1"):
        found = re.search(rf"<{tag}\b[^>]*>(.*?)</{tag}\s*>", text, re.I | re.S)
        if found:
            title = one_line(unescape(re.sub(r"<[^>]*>", " ", found.group(1))))
            if title:
                return title
    return "a web page without a title"


#: Control characters: a server's words must not move the cursor or recolour
#: the person's terminal (an ESC in a proxy's page title, say).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def one_line(message: Any, limit: int = 300) -> str:
    """``message`` as one line of at most ``limit`` characters (a server's words, quoted).

    Whitespace runs become one space; other control characters are dropped.
    """
    text = _CONTROL.sub("", " ".join(str(message).split()))
    return text[:limit] + ("…" if len(text) > limit else "")


#: SSE line ends: CRLF, LF or CR (not str.splitlines, which also splits on
#: U+2028 and friends that JSON text may carry unescaped).
_LINE_END = re.compile(r"\r\n|\r|\n")


class SSEParser:
    """Text in, events out: the SSE framing, plus the two shapes servers send beside it."""

    def __init__(self) -> None:
        self.pending = ""
        self.event: str | None = None
        self.data: list[str] = []

    def feed(self, text: str, final: bool = False) -> Iterator[tuple[str | None, dict | str]]:
        """The events ``text`` completes; ``final`` says the stream ended (last line and all)."""
        text = self.pending + text
        # The last piece has no line end yet; a CR at the very end may be the first
        # half of a CRLF. Both wait for the next chunk, unless there is none.
        held = "\r" if text.endswith("\r") and not final else ""
        lines = _LINE_END.split(text[: len(text) - len(held)])
        self.pending = "" if final else lines.pop() + held
        if final:
            lines.append("")  # the end of the stream ends the event under way
        for line in lines:
            if not line:
                found = (self.event, _decode("\n".join(self.data))) if self.data else None
                self.event, self.data = None, []
            elif line.startswith(":"):
                continue
            elif line.startswith("{"):
                found = ("json", _decode(line))
            else:
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "event":
                    self.event = value
                elif name in ("data", "error"):
                    self.event = "error" if name == "error" else self.event
                    self.data.append(value)
                continue
            if found is not None and not _is_keepalive(*found):
                yield found


def _is_keepalive(event: str | None, data: dict | str) -> bool:
    # Anthropic: `event: ping` / {"type": "ping"}; others use comments, seen earlier.
    return event == "ping" or (isinstance(data, dict) and data.get("type") == "ping")


def _decode(data: str) -> dict | str:
    try:
        value = json.loads(data)
    except ValueError:
        return data  # "[DONE]", or garbage the caller will complain about
    return value if isinstance(value, dict) else data


def error_text(data: dict | str) -> str:
    """The message of an error a server put in a stream or a 200 body, on one line.

    Handles ``{"error": {"message", "type"}}`` (OpenAI, OpenRouter, vLLM, Ollama,
    Anthropic), ``{"error": "text"}``, and a bare ``{"message", "type", "code"}``
    (llama.cpp's ``error:`` event, vLLM's ``"object": "error"``).
    """
    if not isinstance(data, dict):
        return one_line(data)
    error = data.get("error", data)
    if isinstance(error, dict):
        message = error.get("message") or json.dumps(error)
        kind = error.get("type")
        # Anthropic's types (overloaded_error) say what happened; generic ones add nothing.
        if isinstance(kind, str) and kind.endswith("_error") and kind != "api_error":
            return one_line(f"{kind}: {message}")
        return one_line(message)
    return one_line(error)


def is_error_object(data: Any) -> bool:
    """Whether a decoded stream chunk or 200 body is an error report, not an answer."""
    return isinstance(data, dict) and (bool(data.get("error")) or data.get("object") == "error")


def is_event_stream(response: httpx.Response) -> bool:
    """Whether the server really answered with SSE (some ignore ``stream: true``)."""
    return "text/event-stream" in response.headers.get("content-type", "")
