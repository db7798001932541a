"""What every model provider shares: the neutral reply types, the settings, and HTTP retries.

The agent loop talks to every backend in one neutral, OpenAI-like message format
(plain dicts)::

    {"role": "user", "content": "text"}
    {"role": "assistant", "content": "text or ''",
     "tool_calls": [{"id": "call_1", "name": "exec", "arguments": {...}}]}   # tool_calls optional
    {"role": "tool", "tool_call_id": "call_1", "name": "exec", "content": "<JSON text>"}

and gets back a :class:`Reply`. Each backend converts to and from its own wire format.

This module must stay cheap to import: httpx is imported inside the functions that
send requests, so ``agent --version`` and declared commands never pay for it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from mdagent.errors import ProviderError

if TYPE_CHECKING:
    import httpx

#: Per-backend defaults, used when neither a flag, an env var nor agent.yaml says otherwise.
DEFAULTS: dict[str, dict[str, str]] = {
    "openai": {
        "base_url": "https://api.openai.com/v1",
        "api_key_env": "OPENAI_API_KEY",
        "model": "gpt-4o-mini",
    },
    "anthropic": {
        "base_url": "https://api.anthropic.com",
        "api_key_env": "ANTHROPIC_API_KEY",
        "model": "claude-sonnet-4-5",
    },
}

#: The message every backend raises when a stream ends before its terminator.
CUT_OFF = "the model's answer was cut off mid-stream"

#: Longest wait a server's Retry-After can impose; a server asking for an hour
#: should not hang an interactive session for an hour.
RETRY_AFTER_CAP = 60.0

#: First backoff delay; doubles on each retry (0.5 s, 1 s, 2 s). No jitter: one
#: CLI process is not a thundering herd, and fixed delays keep tests exact.
BACKOFF_BASE = 0.5


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for.

    ``arguments`` is the decoded JSON object; when the model produced arguments
    that are not a JSON object, ``arguments`` is None and ``error`` says why (the
    loop sends that error back to the model as the tool's result).
    ``raw_arguments`` is always the text the model produced.
    """

    id: str
    name: str
    arguments: dict | None
    raw_arguments: str
    error: str | None = None

    @classmethod
    def from_json(cls, id: str, name: str, raw_arguments: str) -> ToolCall:
        """A call whose arguments arrived as JSON text (decoded here, errors kept)."""
        # Models call argument-less tools with "" (OpenAI) or nothing at all.
        if not raw_arguments.strip():
            return cls(id, name, {}, raw_arguments, None)
        try:
            value = json.loads(raw_arguments)
        except ValueError as err:
            return cls(id, name, None, raw_arguments, f"arguments are not valid JSON: {err}")
        if not isinstance(value, dict):
            kind = type(value).__name__
            return cls(
                id, name, None, raw_arguments, f"arguments must be a JSON object, not {kind}"
            )
        return cls(id, name, value, raw_arguments, None)


@dataclass(frozen=True)
class Reply:
    """A model's complete answer: text, tool calls, token usage and why it stopped.

    ``stop_reason`` is the backend's own word (OpenAI ``stop``/``tool_calls``/
    ``length``, Anthropic ``end_turn``/``tool_use``/``max_tokens``); decide whether
    the turn is over by looking at ``tool_calls``, not at this.
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: dict = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})
    stop_reason: str | None = None

    def to_message(self) -> dict:
        """This reply as a neutral assistant message, ready to append to the history."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments}
                | ({"raw_arguments": c.raw_arguments} if c.arguments is None else {})
                for c in self.tool_calls
            ]
        return message


def usage(input_tokens: Any = 0, output_tokens: Any = 0) -> dict:
    """A usage dict; servers that omit a figure (or send null) count as 0."""
    return {"input_tokens": int(input_tokens or 0), "output_tokens": int(output_tokens or 0)}


@dataclass(frozen=True)
class ProviderConfig:
    """Which backend to use and how to reach it.

    ``model``, ``base_url`` and ``api_key_env`` left empty mean the backend's
    default (see :data:`DEFAULTS`). ``max_retries`` counts retries, not attempts:
    3 means up to 4 requests. ``script`` is the YAML file the ``fake`` backend replays.
    """

    provider: str = "openai"
    model: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    stream: bool = True
    timeout: float = 120.0
    max_retries: int = 3
    max_tokens: int = 4096
    script: str | None = None

    @classmethod
    def from_settings(
        cls,
        settings: Mapping | None,
        overrides: Mapping | None = None,
        environ: Mapping | None = None,
    ) -> ProviderConfig:
        """The configuration from merged agent.yaml ``settings``, CLI ``overrides`` and ``environ``.

        Precedence, per field: a CLI override that is not None > ``AGENT_PROVIDER`` /
        ``AGENT_MODEL`` / ``AGENT_BASE_URL`` > ``settings["model"]`` > backend defaults.
        When a flag or env var switches to a different provider than agent.yaml
        names, agent.yaml's ``name``, ``base_url`` and ``api_key_env`` are ignored:
        they describe the other provider (a gpt model at an OpenAI URL is no use
        to Anthropic).
        """
        overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
        environ = os.environ if environ is None else environ
        section = (settings or {}).get("model") or {}
        if isinstance(section, str):  # `model: gpt-4o` is a natural shorthand
            section = {"name": section}
        if not isinstance(section, Mapping):
            raise ProviderError(
                f"agent.yaml: model must be a mapping, not {type(section).__name__}"
            )
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise ProviderError(f"unknown provider option(s): {', '.join(sorted(unknown))}")

        def env(name: str) -> str | None:
            return environ.get(name) or None  # an empty variable counts as unset

        provider = overrides.get("provider") or env("AGENT_PROVIDER") or section.get("provider")
        provider = str(provider or "openai")
        if section.get("provider") and section["provider"] != provider:
            section = {
                k: v for k, v in section.items() if k not in ("name", "base_url", "api_key_env")
            }
        defaults = DEFAULTS.get(provider, {})

        values: dict[str, Any] = {
            "provider": provider,
            "model": overrides.get("model")
            or env("AGENT_MODEL")
            or section.get("name")
            or defaults.get("model", ""),
            "base_url": overrides.get("base_url")
            or env("AGENT_BASE_URL")
            or section.get("base_url")
            or defaults.get("base_url"),
            "api_key_env": overrides.get("api_key_env")
            or section.get("api_key_env")
            or defaults.get("api_key_env"),
        }
        for name in ("stream", "timeout", "max_tokens", "max_retries", "script"):
            if name in overrides:
                values[name] = overrides[name]
            elif section.get(name) is not None:
                values[name] = section[name]
        config = cls(**values)
        config._check()
        return config

    def _check(self) -> None:
        # agent.yaml is schema-checked elsewhere; flags and hand-built configs are not.
        if not isinstance(self.stream, bool):
            raise ProviderError(f"model.stream must be true or false, not {self.stream!r}")
        number = isinstance(self.timeout, int | float) and not isinstance(self.timeout, bool)
        if not number or self.timeout <= 0:
            raise ProviderError(f"model.timeout must be a positive number, not {self.timeout!r}")
        for name, least in (("max_tokens", 1), ("max_retries", 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ProviderError(
                    f"model.{name} must be a whole number >= {least}, not {value!r}"
                )


@runtime_checkable
class Provider(Protocol):
    """A model backend: one call, one complete answer."""

    def complete(
        self,
        system: str,
        messages: list[dict],
        tools: list[dict],
        on_text: Callable[[str], None] | None = None,
    ) -> Reply:
        """Send the conversation and return the model's reply.

        ``on_text`` receives the answer's text as it arrives: each delta when
        streaming, the whole text once otherwise, so a caller can display text
        from ``on_text`` alone. Failures raise :class:`ProviderError`.
        """
        ...


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
    return max(0.0, seconds)


def _retries(n: int) -> str:
    return "1 retry" if n == 1 else f"{n} retries"


def _seconds(value: float) -> str:
    return f"{value:g}"


def server_message(response: httpx.Response) -> str:
    """The error text a server put in its body, on one line (empty if none)."""
    try:
        text = response.text
    except Exception:  # a body we could not read or decode says nothing useful
        return ""
    message: Any = text
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        # OpenAI/Anthropic: {"error": {"message": ...}}; Ollama: {"error": "..."}.
        if isinstance(error, dict):
            message = error.get("message") or json.dumps(error)
        elif error:
            message = error
        elif data.get("message"):
            message = data["message"]
    message = " ".join(str(message).split())
    return message[:300] + ("…" if len(message) > 300 else "")


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

    @property
    def api_key(self) -> str | None:
        """The API key from the configured environment variable, or None."""
        return self._environ.get(self.api_key_env) or None

    def complete(
        self,
        system: str,
        messages: list[dict],
        tools: list[dict],
        on_text: Callable[[str], None] | None = None,
    ) -> Reply:
        """Send the conversation; see :meth:`Provider.complete`.

        The backends differ only in their endpoint, headers, request body and
        how they read an answer (:meth:`endpoint`, :meth:`headers`,
        :meth:`request_body`, :meth:`parse_reply`, :meth:`_read_stream`).
        """
        from contextlib import closing

        url = self.endpoint()
        response = self._post(url, self.request_body(system, messages, tools), self.headers())
        with closing(response):  # a stream stays open until read
            if self.config.stream and is_event_stream(response):
                return self._read_stream(response, url, on_text)
            reply = self.parse_reply(self._json(response, url), url)
        if on_text and reply.text:
            on_text(reply.text)
        return reply

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

    def _read_stream(self, response: Any, url: str, on_text: Any) -> Reply:  # pragma: no cover
        raise NotImplementedError

    def close(self) -> None:
        """Close the HTTP connections this provider keeps open between turns."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def _http(self) -> httpx.Client:
        import httpx

        if self._client is None:
            self._client = httpx.Client(timeout=httpx.Timeout(self.config.timeout))
        return self._client

    def _post(self, url: str, body: dict, headers: dict[str, str]) -> httpx.Response:
        """POST ``body`` as JSON, retrying what is worth retrying; a 2xx response.

        Retried, at most ``config.max_retries`` times: HTTP 429 and 5xx, and
        connection failures before the answer started (refused, reset, closed
        without a response); a non-streamed body that breaks off is retried too,
        since nobody has seen any of it. Timeouts are not retried: the user has
        already waited ``timeout`` seconds. When streaming, the returned response
        is still open: close it when done.
        """
        import httpx

        client = self._http()
        retries = 0
        while True:
            request = client.build_request("POST", url, json=body, headers=headers)
            try:
                response = client.send(request, stream=True)
                if not self.config.stream:
                    try:
                        response.read()
                    finally:
                        response.close()
            except httpx.TimeoutException:
                raise self._timed_out(url) from None
            except (httpx.NetworkError, httpx.RemoteProtocolError) as err:
                if retries < self.config.max_retries:
                    self._sleep(BACKOFF_BASE * 2**retries)
                    retries += 1
                    continue
                raise self._connection_error(url, err, retries) from None
            except httpx.HTTPError as err:  # bad URL, unsupported scheme, ...
                raise ProviderError(f"cannot send a request to {url}: {err}") from None
            if response.status_code < 300:
                return response
            with suppress(httpx.HTTPError):
                response.read()  # the error body carries the server's explanation
            response.close()
            status = response.status_code
            if (status == 429 or status >= 500) and retries < self.config.max_retries:
                wait = retry_after_seconds(response.headers.get("retry-after"))
                if wait is None:
                    wait = BACKOFF_BASE * 2**retries
                self._sleep(min(wait, RETRY_AFTER_CAP))
                retries += 1
                continue
            raise self._status_error(response, url, retries)

    def _timed_out(self, url: str) -> ProviderError:
        return ProviderError(f"timed out after {_seconds(self.config.timeout)} s waiting for {url}")

    def _connection_error(self, url: str, err: Exception, retries: int) -> ProviderError:
        import httpx

        detail = str(err) or type(err).__name__
        if isinstance(err, httpx.ConnectError):
            return ProviderError(f"cannot connect to {url}: is the server running? ({detail})")
        return ProviderError(
            f"the connection to {url} broke before the answer was complete "
            f"(after {_retries(retries)}): {detail}"
        )

    def _status_error(self, response: httpx.Response, url: str, retries: int) -> ProviderError:
        status = response.status_code
        said = server_message(response)
        tail = f": {said}" if said else ""
        tries = _retries(retries)
        if status in (401, 403):
            verb = "check" if self.api_key else "set"
            return ProviderError(
                f"authentication failed (HTTP {status}): {verb} {self.api_key_env}{tail}"
            )
        if status == 404:
            return ProviderError(
                f"model or URL not found (HTTP 404): model '{self.model}' at {url}{tail}"
            )
        if status == 429:
            return ProviderError(f"rate limited (HTTP 429) after {tries}{tail}")
        if status >= 500:
            return ProviderError(f"server error (HTTP {status}) after {tries}{tail}")
        return ProviderError(f"request rejected (HTTP {status}) by {url}{tail}")

    def _json(self, response: httpx.Response, url: str) -> dict:
        """The response body as a JSON object (the body is read if it is not yet)."""
        import httpx

        try:
            response.read()
        except httpx.TimeoutException:
            raise self._timed_out(url) from None
        except httpx.HTTPError:
            raise ProviderError(CUT_OFF) from None
        try:
            data = json.loads(response.content)
        except ValueError as err:
            raise ProviderError(f"the answer from {url} is not valid JSON: {err}") from None
        if not isinstance(data, dict):
            raise ProviderError(f"the answer from {url} is not a JSON object")
        return data

    def _events(
        self, response: httpx.Response, url: str
    ) -> Iterator[tuple[str | None, dict | str]]:
        """Server-sent events as ``(event name, data)``; data is decoded JSON unless it is not JSON.

        A connection that breaks mid-stream raises :data:`CUT_OFF`; whether the
        stream ended properly is for the caller to judge from its terminator.
        """
        import httpx

        event: str | None = None
        data: list[str] = []
        try:
            for line in response.iter_lines():
                if not line:
                    if data:
                        yield event, _decode("\n".join(data))
                    event, data = None, []
                elif not line.startswith(":"):  # ":" lines are keep-alive comments
                    name, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if name == "event":
                        event = value
                    elif name == "data":
                        data.append(value)
        except httpx.TimeoutException:
            raise self._timed_out(url) from None
        except httpx.HTTPError:
            raise ProviderError(CUT_OFF) from None
        if data:
            yield event, _decode("\n".join(data))


def _decode(data: str) -> dict | str:
    try:
        value = json.loads(data)
    except ValueError:
        return data  # "[DONE]", or garbage the caller will complain about
    return value if isinstance(value, dict) else data


def is_event_stream(response: httpx.Response) -> bool:
    """Whether the server really answered with SSE (some ignore ``stream: true``)."""
    return "text/event-stream" in response.headers.get("content-type", "")
