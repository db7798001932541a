"""The HTTP backends' shared plumbing: HTTPProvider (one httpx client, retries, timeouts, errors).

A backend (:mod:`mdagent.providers.openai`, :mod:`mdagent.providers.anthropic`)
subclasses :class:`HTTPProvider` and gives its endpoint, headers, request
body and how it reads an answer; sending, retrying, timing out, reading
the body or the server-sent events and saying in one line what went wrong
happen here. What the server sends is read by :mod:`mdagent.providers.wire`;
the reply is the neutral :class:`~mdagent.providers.reply.Reply`.

This module must stay cheap to import: httpx is imported inside the functions that
send requests, so ``agent --version`` and declared commands never pay for it.
"""

from __future__ import annotations

import codecs
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

from mdagent.core.errors import ProviderError
from mdagent.providers.config import DEFAULTS, ProviderConfig
from mdagent.providers.reply import Reply
from mdagent.providers.wire import (
    SSEParser,
    is_event_stream,
    is_html,
    page_title,
    retry_wait,
    server_message,
    should_retry,
)

if TYPE_CHECKING:
    import httpx

#: Longest wait a server's retry-after(-ms) header can impose; a server asking
#: for an hour should not hang an interactive session for an hour.
RETRY_AFTER_CAP = 60.0

#: First backoff delay; doubles on each retry (0.5 s, 1 s, 2 s). No jitter: one
#: CLI process is not a thundering herd, and fixed delays keep tests exact.
BACKOFF_BASE = 0.5


def cut_off(where: str) -> str:
    """The message every backend raises when a stream ends before its terminator."""
    return f"the model's answer from {where} was cut off mid-stream"


def _retries(n: int) -> str:
    return "1 retry" if n == 1 else f"{n} retries"


def _seconds(value: float) -> str:
    return f"{value:g}" if value < 10 else f"{value:.0f}"


@dataclass
class Answer:
    """A 2xx response whose body is being read: the bytes come from ``chunks``.

    The first chunk was already read, inside the retry loop (a connection that
    breaks before any byte of the body is retried). ``sent`` is when the request
    went out (monotonic clock), where the idle limit starts counting.
    """

    response: httpx.Response
    chunks: Iterator[bytes]
    sent: float


class HTTPProvider:
    """Shared plumbing of the HTTP backends: settings, one httpx client, retries, SSE.

    ``sleep`` is what waits between retries (tests pass a recorder); ``environ``
    is where the API key is looked up (default ``os.environ``).
    """

    #: Key into :data:`DEFAULTS`; set by each backend.
    name = ""

    def __init__(
        self,
        config: ProviderConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        environ: Mapping[str, str] | None = None,
    ):
        defaults = DEFAULTS[self.name]
        self.config = config
        self.model = config.model or defaults["model"]
        self.base_url = (config.base_url or defaults["base_url"]).rstrip("/")
        self.api_key_env = config.api_key_env or defaults["api_key_env"]
        self._sleep = sleep
        self._environ = os.environ if environ is None else environ
        self._client: httpx.Client | None = None
        self._deadline: float | None = None  # of the request under way (request_timeout)

    @property
    def api_key(self) -> str | None:
        """The API key from the configured environment variable, or None (also when withheld)."""
        if self.config.withhold_key:
            return None
        return self._environ.get(self.api_key_env) or None

    def complete(
        self,
        system: str,
        messages: list[dict],
        tools: list[dict],
        on_text: Callable[[str], None] | None = None,
        *,
        on_reasoning: Callable[[str], None] | None = None,
        on_retry: Callable[[str], None] | None = None,
    ) -> Reply:
        """Send the conversation; see
        :meth:`Provider.complete <mdagent.providers.config.Provider.complete>`.

        The backends differ only in their endpoint, headers, request body and
        how they read an answer (:meth:`endpoint`, :meth:`headers`,
        :meth:`request_body`, :meth:`parse_reply`, :meth:`read_stream`).
        Every failure names the endpoint and the provider (:meth:`where`).
        """
        url = self.endpoint()
        try:
            return self._complete(url, system, messages, tools, on_text, on_reasoning, on_retry)
        except ProviderError as err:
            where = self.where(url)
            if where in str(err):
                raise
            # Each message names the endpoint in its own words; this only
            # catches one that forgot, so no failure leaves the URL out.
            raise ProviderError(f"{err} — {where}") from None

    def _complete(
        self,
        url: str,
        system: str,
        messages: list[dict],
        tools: list[dict],
        on_text: Callable[[str], None] | None,
        on_reasoning: Callable[[str], None] | None,
        on_retry: Callable[[str], None] | None,
    ) -> Reply:
        from contextlib import closing

        limit = self.config.request_timeout
        self._deadline = None if limit is None else time.monotonic() + limit
        body = self.request_body(system, messages, tools)
        answer = self._post(url, body, self.headers(), on_retry)
        with closing(answer.response):  # a stream stays open until read
            if self.config.stream and is_event_stream(answer.response):
                events = self._events(answer, url)
                return self.read_stream(events, url, on_text, on_reasoning)
            reply = self.parse_reply(self._json(answer, url), url)
        if on_reasoning and reply.reasoning:
            on_reasoning(reply.reasoning)
        if on_text and reply.text:
            on_text(reply.text)
        return reply

    def where(self, url: str) -> str:
        """The endpoint as failure messages name it: ``http://…/v1/messages (anthropic)``."""
        return f"{url} ({self.name})"

    def endpoint(self) -> str:  # pragma: no cover - each backend defines it
        raise NotImplementedError

    def headers(self) -> dict[str, str]:  # pragma: no cover
        raise NotImplementedError

    def request_body(
        self, system: str, messages: list[dict], tools: list[dict]
    ) -> dict:  # pragma: no cover
        raise NotImplementedError

    def parse_reply(self, data: dict, url: str) -> Reply:  # pragma: no cover
        raise NotImplementedError

    def read_stream(
        self,
        events: Iterator[tuple[str | None, dict | str]],
        url: str,
        on_text: Callable[[str], None] | None,
        on_reasoning: Callable[[str], None] | None,
    ) -> Reply:  # pragma: no cover
        """The reply from a stream of ``(event name, data)`` (see :meth:`_events`)."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the HTTP connections this provider keeps open between turns."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def _http(self) -> httpx.Client:
        # Without httpx's command line, and certificates loaded only for https.
        from mdagent.core.httpclient import client, load

        if self._client is None:
            self._client = client(timeout=load().Timeout(self.config.timeout))
        return self._client

    # -- sending, with retries ----------------------------------------------------------

    def _post(
        self,
        url: str,
        body: dict,
        headers: dict[str, str],
        on_retry: Callable[[str], None] | None = None,
    ) -> Answer:
        """POST ``body`` as JSON, retrying what is worth retrying; a 2xx :class:`Answer`.

        Retried, at most ``config.max_retries`` times, after the wait the
        server's ``retry-after-ms``/``retry-after`` asks for (capped) or a
        doubling backoff: the statuses :func:`~mdagent.providers.wire.should_retry` names, and
        connection failures before any byte of the answer arrived (refused,
        reset, closed — also right after the response headers). A body that
        breaks off is retried only when not streaming, since nobody has seen
        any of it; a stream that breaks after its first byte is not (part of
        it may be on the person's screen). Read timeouts are not retried: the
        person has already waited ``timeout`` seconds. ``on_retry`` hears of
        each retry. When streaming, the returned response is still open:
        close it when done.
        """
        from mdagent.core.httpclient import load

        httpx = load()  # without its command line (see mdagent.core.httpclient)
        client = self._http()
        retries = 0
        while True:
            timeout = self._attempt_timeout(url)
            request = client.build_request(
                "POST", url, json=body, headers=headers, timeout=httpx.Timeout(timeout)
            )
            sent = time.monotonic()
            response = None
            try:
                response = client.send(request, stream=True)
                if response.status_code < 300:
                    return self._answer(response, sent, url)
                with suppress(httpx.HTTPError):
                    response.read()  # the error body carries the server's explanation
            except (httpx.NetworkError, httpx.RemoteProtocolError) as err:
                if response is not None:
                    response.close()
                if retries < self.config.max_retries and not refused_here(err, url):
                    wait = BACKOFF_BASE * 2**retries
                    self._before_retry(url, wait, retries, _failure(err, url), on_retry)
                    retries += 1
                    continue
                raise self._connection_error(url, err, retries) from None
            except httpx.TimeoutException:
                if response is not None:
                    response.close()
                raise self._timed_out(url) from None
            except httpx.HTTPError as err:  # bad URL, unsupported scheme, ...
                raise ProviderError(f"cannot send a request to {self.where(url)}: {err}") from None
            response.close()
            status = response.status_code
            if should_retry(status, response.headers) and retries < self.config.max_retries:
                wait = retry_wait(response.headers)
                if wait is None:
                    wait = BACKOFF_BASE * 2**retries
                wait = min(wait, RETRY_AFTER_CAP)
                reason = _reason(status)
                why = f"the model server answered HTTP {status}" + (
                    f" ({reason})" if reason else ""
                )
                self._before_retry(url, wait, retries, why, on_retry)
                retries += 1
                continue
            raise self._status_error(response, url, retries)

    def _answer(self, response: httpx.Response, sent: float, url: str) -> Answer:
        """Read the first bytes of a 2xx body — all of it when not streaming —
        raising what :meth:`_post` retries."""
        if not self.config.stream:
            body = []
            try:
                for piece in response.iter_bytes():  # a trickle must not outlast the deadline
                    body.append(piece)
                    if self._deadline is not None and time.monotonic() >= self._deadline:
                        raise self._request_timed_out(url)
            finally:
                response.close()
            return Answer(response, iter([b"".join(body)]), sent)
        chunks = response.iter_bytes()
        try:
            first = next(chunks, b"")
        except BaseException:
            response.close()
            raise
        return Answer(response, chain([first], chunks), sent)

    def _attempt_timeout(self, url: str) -> float:
        """The httpx timeout of the next attempt: the idle limit, within the request's deadline."""
        if self._deadline is None:
            return float(self.config.timeout)
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise self._request_timed_out(url)
        return min(float(self.config.timeout), left)

    def _before_retry(
        self,
        url: str,
        wait: float,
        retries: int,
        why: str,
        on_retry: Callable[[str], None] | None,
    ) -> None:
        if self._deadline is not None and time.monotonic() + wait >= self._deadline:
            raise self._request_timed_out(url)
        if on_retry:
            on_retry(
                f"{why}; retrying in {_seconds(wait)} s "
                f"({retries + 1} of {self.config.max_retries})"
            )
        self._sleep(wait)

    # -- what went wrong, in one line ------------------------------------------------------

    def _timed_out(self, url: str, pings: bool = False) -> ProviderError:
        if self._deadline is not None and time.monotonic() >= self._deadline:
            return self._request_timed_out(url)
        limit = _seconds(self.config.timeout)
        where = self.where(url)
        if pings:
            return ProviderError(
                f"timed out: {where} sent only keep-alives, no data, for {limit} s (model.timeout)"
            )
        return ProviderError(f"timed out after {limit} s (model.timeout) waiting for {where}")

    def _request_timed_out(self, url: str) -> ProviderError:
        limit = _seconds(float(self.config.request_timeout or 0))
        return ProviderError(
            f"timed out: the request to {self.where(url)} took longer than {limit} s "
            "(model.request_timeout)"
        )

    def _connection_error(self, url: str, err: Exception, retries: int) -> ProviderError:
        import httpx

        detail = str(err) or type(err).__name__
        where = self.where(url)
        if refused_here(err, url):
            return ProviderError(
                f"cannot connect to {where}: connection refused, nothing listens at that "
                "port on this machine; start the model server (or set model.base_url)"
            )
        if isinstance(err, httpx.ConnectError):
            return ProviderError(f"cannot connect to {where}: is the server running? ({detail})")
        return ProviderError(
            f"the connection to {where} broke before the answer was complete "
            f"(after {_retries(retries)}): {detail}"
        )

    def _status_error(self, response: httpx.Response, url: str, retries: int) -> ProviderError:
        status = response.status_code
        said = server_message(response)
        tail = f": {said}" if said else ""
        tries = _retries(retries)
        where = self.where(url)
        if status in (401, 403):
            verb = "check" if self.api_key else "set"
            return ProviderError(
                f"authentication failed (HTTP {status}) at {where}: {verb} {self.api_key_env}{tail}"
            )
        if status == 404:
            return ProviderError(
                f"model or URL not found (HTTP 404): model '{self.model}' at {where}{tail}"
            )
        if status == 429:
            return ProviderError(f"rate limited (HTTP 429) by {where} after {tries}{tail}")
        if status >= 500:
            return ProviderError(f"server error (HTTP {status}) from {where} after {tries}{tail}")
        if should_retry(status, response.headers):
            return ProviderError(f"request failed (HTTP {status}) at {where} after {tries}{tail}")
        return ProviderError(f"request rejected (HTTP {status}) by {where}{tail}")

    # -- reading the answer ------------------------------------------------------------------

    def _json(self, answer: Answer, url: str) -> dict:
        """The whole body as a JSON object."""
        import httpx

        try:
            content = b"".join(answer.chunks)
        except httpx.TimeoutException:
            raise self._timed_out(url) from None
        except httpx.HTTPError:
            raise ProviderError(cut_off(self.where(url))) from None
        try:
            data = json.loads(content)
        except ValueError as err:
            text = content.decode("utf-8", "replace")
            if is_html(text, answer.response.headers.get("content-type", "")):
                # A proxy's login or error page, served with 200.
                raise ProviderError(
                    f"the answer from {self.where(url)} is a web page, not JSON: {page_title(text)}"
                ) from None
            raise ProviderError(
                f"the answer from {self.where(url)} is not valid JSON: {err}"
            ) from None
        if not isinstance(data, dict):
            raise ProviderError(f"the answer from {self.where(url)} is not a JSON object")
        return data

    def _events(self, answer: Answer, url: str) -> Iterator[tuple[str | None, dict | str]]:
        """Server-sent events as ``(event name, data)``; data is decoded JSON unless it is not JSON.

        Beyond the standard fields, an ``error:`` field (llama.cpp's stream
        errors) comes as an event named ``"error"``, and a line that is a bare
        JSON object (Ollama writes its stream errors so) comes at once as an
        event named ``"json"``. Keep-alives — ``:`` comments and ``ping``
        events — are not yielded and do not count as activity: when only they
        arrive for ``config.timeout`` seconds the stream is given up. A
        connection that breaks mid-stream raises :func:`cut_off`; whether the
        stream ended properly is for the caller to judge from what it got.
        """
        import httpx

        parser = SSEParser()
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        idle = float(self.config.timeout)
        last_data = answer.sent
        try:
            for chunk in answer.chunks:
                now = time.monotonic()
                for found in parser.feed(decoder.decode(chunk)):
                    last_data = now
                    yield found
                if now - last_data > idle:
                    raise self._timed_out(url, pings=True)
                if self._deadline is not None and now >= self._deadline:
                    raise self._request_timed_out(url)
        except httpx.TimeoutException:
            raise self._timed_out(url) from None
        except httpx.HTTPError:
            raise ProviderError(cut_off(self.where(url))) from None
        yield from parser.feed(decoder.decode(b"", final=True), final=True)


def refused_here(err: Exception, url: str) -> bool:
    """Whether ``err`` is a refused connection to this machine (localhost, 127.0.0.1, ::1).

    Not retried: nothing listens at that port, and waiting will not start
    the server; a remote refusal may be a restart or a load balancer, and is.
    """
    import ipaddress
    from urllib.parse import urlsplit

    import httpx

    if not isinstance(err, httpx.ConnectError):
        return False
    cause = err.__cause__ or err.__context__
    if not (isinstance(cause, ConnectionRefusedError) or "refused" in str(err).lower()):
        return False
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _failure(err: Exception, url: str) -> str:
    import httpx

    if isinstance(err, httpx.ConnectError):
        return f"cannot connect to {url}"
    return f"the connection to the model server broke ({str(err) or type(err).__name__})"


def _reason(status: int) -> str:
    from http import HTTPStatus

    if status == 529:
        return "overloaded"
    try:
        return HTTPStatus(status).phrase.lower()
    except ValueError:
        return ""
