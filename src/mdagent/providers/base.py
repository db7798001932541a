"""What every model provider shares: the neutral reply types, the settings, HTTP retries and SSE.

The agent loop talks to every backend in one neutral, OpenAI-like message format
(plain dicts)::

    {"role": "user", "content": "text"}
    {"role": "assistant", "content": "text or ''",
     "tool_calls": [{"id": "call_1", "name": "exec", "arguments": {...},     # optional
                     "extra": {...},                                         # optional
                     "legacy": True}],                                       # optional
     "thinking": [{"type": "thinking", "thinking": "...", "signature": "..."}],  # optional
     "blocks": [{"type": "server_tool_use", ...}, ...],                      # optional
     "reasoning": "text", "reasoning_field": "reasoning_content"}           # optional
    {"role": "tool", "tool_call_id": "call_1", "name": "exec", "content": "<JSON text>",
     "is_error": True}                                                         # on failure

and gets back a :class:`Reply`. Each backend converts to and from its own wire format.
What a server must get back unchanged is kept as it came:

* ``thinking``: Anthropic's signed thinking blocks (the API checks them);
* ``blocks``: an Anthropic reply's whole content, in order, when it holds blocks
  with no neutral form (a server tool's ``server_tool_use`` and its
  ``web_search_tool_result``, which carry encrypted content the API needs);
* a call's ``extra``: a provider's opaque fields of that call (Gemini's
  ``extra_content.google.thought_signature``), returned byte for byte;
* a call's ``legacy``: it came as a legacy ``function_call`` and goes back so.

``reasoning`` is an OpenAI-compatible server's reasoning text and
``reasoning_field`` the field it came in (``reasoning_content`` or
``reasoning``). It goes back on an assistant message only as
:func:`echoes_reasoning` decides: DeepSeek's thinking mode rejects a tool-call
turn without its ``reasoning_content``, OpenAI-style servers want none.

This module must stay cheap to import: httpx is imported inside the functions that
send requests, so ``agent --version`` and declared commands never pay for it.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field, fields
from itertools import chain
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from mdagent.core.defaults import DEFAULT_SETTINGS
from mdagent.core.errors import ProviderError

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

#: How ``model.reasoning`` may be set (unset: decided per message, see
#: :func:`echoes_reasoning`).
REASONING_MODES = ("echo", "drop")


#: Longest wait a server's retry-after(-ms) header can impose; a server asking
#: for an hour should not hang an interactive session for an hour.
RETRY_AFTER_CAP = 60.0

#: First backoff delay; doubles on each retry (0.5 s, 1 s, 2 s). No jitter: one
#: CLI process is not a thundering herd, and fixed delays keep tests exact.
BACKOFF_BASE = 0.5

#: Statuses worth another try, as the official OpenAI and Anthropic SDKs decide:
#: request timeout, lock timeout, rate limit, and every 5xx (529: overloaded).
RETRY_STATUSES = frozenset({408, 409, 429})

#: Each backend's word for an answer that stopped short -> the neutral word.
#: ``length`` and ``max_tokens`` are the token limit; ``content_filter`` is the
#: provider's filter; ``refusal`` is Anthropic's (OpenAI's is a ``refusal`` field).
SHORT_STOPS: dict[str, str] = {
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "content_filter": "content_filter",
    "refusal": "refusal",
    "model_context_window_exceeded": "context_window",
}


def cut_off(where: str) -> str:
    """The message every backend raises when a stream ends before its terminator."""
    return f"the model's answer from {where} was cut off mid-stream"


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
    #: The provider's opaque fields of this call (Gemini's ``extra_content``),
    #: sent back unchanged with it.
    extra: dict = field(default_factory=dict, hash=False)
    #: It came as a legacy ``function_call`` (older gateways), and goes back so.
    legacy: bool = False

    @classmethod
    def from_json(
        cls,
        id: str,
        name: str,
        raw_arguments: str,
        extra: dict | None = None,
        legacy: bool = False,
    ) -> ToolCall:
        """A call whose arguments arrived as JSON text (decoded here, errors kept)."""
        kept = {"extra": dict(extra or {}), "legacy": legacy}
        # Models call argument-less tools with "" (OpenAI) or nothing at all.
        if not raw_arguments.strip():
            return cls(id, name, {}, raw_arguments, None, **kept)
        try:
            value = json.loads(raw_arguments)
        except ValueError as err:
            error = f"arguments are not valid JSON: {err}"
            return cls(id, name, None, raw_arguments, error, **kept)
        if not isinstance(value, dict):
            error = f"arguments must be a JSON object, not {type(value).__name__}"
            return cls(id, name, None, raw_arguments, error, **kept)
        return cls(id, name, value, raw_arguments, None, **kept)

    def to_message(self) -> dict[str, Any]:
        """This call as it goes in a neutral assistant message."""
        call: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.arguments is None:
            call["raw_arguments"] = self.raw_arguments
        if self.extra:
            call["extra"] = dict(self.extra)
        if self.legacy:
            call["legacy"] = True
        return call


@dataclass(frozen=True)
class Reply:
    """A model's complete answer: text, tool calls, token usage and why it stopped.

    ``stop_reason`` is the backend's own word (OpenAI ``stop``/``tool_calls``/
    ``length``, Anthropic ``end_turn``/``tool_use``/``max_tokens``/``pause_turn``);
    decide whether the turn is over by looking at ``tool_calls``, :attr:`cut_short`
    and :attr:`paused`, not at it. ``text`` is everything the person was shown
    as the answer, a refusal's words included (``refusal`` holds those alone).
    ``thinking`` is Anthropic's thinking blocks as received; ``blocks`` the
    whole Anthropic content when it holds server-tool blocks (see the module
    docstring); ``reasoning`` the reasoning text, shown apart from the answer,
    and ``reasoning_field`` the OpenAI-style field it came in.
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: dict = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})
    stop_reason: str | None = None
    refusal: str = ""
    thinking: tuple[dict, ...] = ()
    reasoning: str = ""
    reasoning_field: str = ""
    blocks: tuple[dict, ...] = ()

    @property
    def cut_short(self) -> str | None:
        """Why the answer stopped before the model finished it, or None when it did.

        ``max_tokens`` (the token limit), ``context_window``, ``refusal`` or
        ``content_filter``.
        """
        if self.refusal:
            return "refusal"
        return SHORT_STOPS.get(self.stop_reason or "")

    @property
    def paused(self) -> bool:
        """The server paused its own long turn (Anthropic ``pause_turn``, server tools).

        Sending the conversation back with this reply as it is lets the model
        go on; there is nothing to run in between.
        """
        return self.stop_reason == "pause_turn" and not self.tool_calls

    def to_message(self) -> dict:
        """This reply as a neutral assistant message, ready to append to the history."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [c.to_message() for c in self.tool_calls]
        if self.thinking:
            message["thinking"] = [dict(block) for block in self.thinking]
        elif self.reasoning:
            message["reasoning"] = self.reasoning
            if self.reasoning_field:
                message["reasoning_field"] = self.reasoning_field
        if self.blocks:
            message["blocks"] = [dict(block) for block in self.blocks]
        return message


def echoes_reasoning(message: Mapping[str, Any], mode: str | None) -> bool:
    """Whether an assistant message's ``reasoning`` goes back to an OpenAI-style server.

    ``mode`` is ``model.reasoning``: ``echo`` sends every message's reasoning
    back, ``drop`` none. Unset, it is decided from what the server sent:
    ``reasoning_content`` on a turn that called tools goes back on that turn
    (DeepSeek's thinking mode answers 400 without it; vLLM and llama.cpp read
    it), everything else stays out (OpenAI-style servers want no reasoning in
    the input, and DeepSeek ignores it between two user messages).
    """
    if not message.get("reasoning") or mode == "drop":
        return False
    if mode == "echo":
        return True
    return message.get("reasoning_field") == "reasoning_content" and bool(message.get("tool_calls"))


def usage(input_tokens: Any = 0, output_tokens: Any = 0) -> dict:
    """A usage dict; servers that omit a figure (or send null) count as 0."""
    return {"input_tokens": int(input_tokens or 0), "output_tokens": int(output_tokens or 0)}


_MODEL = DEFAULT_SETTINGS["model"]


@dataclass(frozen=True)
class ProviderConfig:
    """Which backend to use and how to reach it.

    ``model``, ``base_url`` and ``api_key_env`` left empty mean the backend's
    default (see :data:`DEFAULTS`). ``timeout`` is the idle limit: the longest
    wait for the next piece of the answer (keep-alives do not count);
    ``request_timeout`` (None: no limit) bounds a whole request, retries
    included. ``max_retries`` counts retries, not attempts: 3 means up to 4
    requests. ``thinking_budget`` turns on Anthropic's extended thinking.
    ``script`` is the YAML file the ``fake`` backend replays. ``price`` is
    ``(input, output)`` per million tokens, from ``model.price``, for
    :meth:`cost`. ``reasoning`` (``echo``, ``drop``, None: decided per
    message) overrides whether reasoning goes back (:func:`echoes_reasoning`).
    The numbers' defaults are ``DEFAULT_SETTINGS["model"]``
    (:mod:`mdagent.core.defaults`).
    """

    provider: str = "openai"
    model: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    stream: bool = _MODEL["stream"]
    timeout: float = float(_MODEL["timeout"])
    request_timeout: float | None = _MODEL["request_timeout"]
    max_retries: int = _MODEL["max_retries"]
    max_tokens: int = _MODEL["max_tokens"]
    thinking_budget: int | None = None
    script: str | None = None
    price: tuple[float, float] | None = None
    reasoning: str | None = None
    #: The endpoint is not one the key was given to (a skill named it): send no key.
    withhold_key: bool = False

    @classmethod
    def from_settings(
        cls,
        settings: Mapping | None,
        overrides: Mapping | None = None,
        environ: Mapping | None = None,
    ) -> ProviderConfig:
        """The configuration from merged agent.yaml ``settings``, CLI ``overrides`` and ``environ``.

        Precedence, per field: a CLI override that is not None > ``AGENT_PROVIDER`` /
        ``AGENT_MODEL`` / ``AGENT_BASE_URL`` > ``settings["model"]`` > backend defaults;
        a ``script`` override with no ``provider`` one means the ``fake`` provider.
        When a flag or env var switches to a different provider than agent.yaml
        names, agent.yaml's ``name``, ``base_url``, ``api_key_env`` and
        ``thinking`` are ignored: they describe the other provider (a gpt model
        at an OpenAI URL is no use to Anthropic).
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

        provider = (
            overrides.get("provider")
            # `--script FILE` means the fake provider: no other backend reads a script.
            or ("fake" if overrides.get("script") else None)
            or env("AGENT_PROVIDER")
            or section.get("provider")
        )
        provider = str(provider or "openai")
        if section.get("provider") and section["provider"] != provider:
            section = {
                k: v
                for k, v in section.items()
                if k not in ("name", "base_url", "api_key_env", "thinking", "price")
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
        for name in (
            "stream",
            "timeout",
            "request_timeout",
            "max_tokens",
            "max_retries",
            "script",
            "reasoning",
        ):
            if name in overrides:
                values[name] = overrides[name]
            elif section.get(name) is not None:
                values[name] = section[name]
        if "thinking_budget" in overrides:
            values["thinking_budget"] = overrides["thinking_budget"]
        elif section.get("thinking") is not None:
            thinking = section["thinking"]
            budget = thinking.get("budget_tokens") if isinstance(thinking, Mapping) else None
            if budget is None:
                raise ProviderError("model.thinking must be a mapping with budget_tokens: N")
            values["thinking_budget"] = budget
        if "price" in overrides:
            values["price"] = overrides["price"]
        elif isinstance(section.get("price"), Mapping) and values["model"] == (
            section.get("name") or defaults.get("model", "")
        ):
            # The price is model.name's: a flag or variable naming another model drops it.
            price = section["price"]
            values["price"] = (price.get("input"), price.get("output"))
        config = cls(**values)
        config._check()
        return config

    def cost(self, figures: Mapping[str, Any]) -> float | None:
        """What ``figures`` (a usage dict) cost at :attr:`price`; None when the price is unknown."""
        if self.price is None:
            return None
        per_input, per_output = self.price
        tokens_in = int(figures.get("input_tokens") or 0)
        tokens_out = int(figures.get("output_tokens") or 0)
        return (tokens_in * per_input + tokens_out * per_output) / 1_000_000

    def _check(self) -> None:
        # agent.yaml is schema-checked elsewhere; flags and hand-built configs are not.
        if not isinstance(self.stream, bool):
            raise ProviderError(f"model.stream must be true or false, not {self.stream!r}")
        if self.reasoning is not None and self.reasoning not in REASONING_MODES:
            raise ProviderError(f"model.reasoning must be echo or drop, not {self.reasoning!r}")
        for name in ("timeout", "request_timeout"):
            value = getattr(self, name)
            if value is None and name == "request_timeout":
                continue
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or value <= 0:
                raise ProviderError(f"model.{name} must be a positive number, not {value!r}")
        for name, least in (("max_tokens", 1), ("max_retries", 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ProviderError(
                    f"model.{name} must be a whole number >= {least}, not {value!r}"
                )
        if self.price is not None:
            numbers = (
                isinstance(self.price, tuple | list)
                and len(self.price) == 2
                and all(
                    isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
                    for v in self.price
                )
            )
            if not numbers:
                raise ProviderError(
                    f"model.price must be {{input: N, output: N}} (per million tokens, >= 0), "
                    f"not {self.price!r}"
                )
        budget = self.thinking_budget
        if budget is None:
            return
        if self.provider not in ("anthropic", "fake"):
            raise ProviderError(
                f"model.thinking is an Anthropic setting; provider {self.provider} has no "
                "thinking budget (remove model.thinking)"
            )
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1024:
            raise ProviderError(
                f"model.thinking.budget_tokens must be a whole number >= 1024, not {budget!r}"
            )
        if budget >= self.max_tokens:
            raise ProviderError(
                f"model.thinking.budget_tokens ({budget}) must be less than "
                f"model.max_tokens ({self.max_tokens}): the thinking counts toward the limit"
            )


@runtime_checkable
class Provider(Protocol):
    """A model backend: one call, one complete answer."""

    config: ProviderConfig

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
        """Send the conversation and return the model's reply.

        ``on_text`` receives the answer's text as it arrives: each delta when
        streaming, the whole text once otherwise, so a caller can display text
        from ``on_text`` alone. ``on_reasoning`` receives the model's reasoning
        (thinking) text the same way, never mixed into the answer. ``on_retry``
        is told, in one line, each time a failed request is tried again.
        Failures raise :class:`ProviderError`.
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
    if seconds != seconds:  # NaN says nothing
        return None
    return max(0.0, seconds)


def retry_wait(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a response's headers ask for, read as the official SDKs do, or None.

    ``retry-after-ms`` (milliseconds) first, then ``retry-after`` (seconds or
    an HTTP date). The caller caps it (:data:`RETRY_AFTER_CAP`).
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


def _retries(n: int) -> str:
    return "1 retry" if n == 1 else f"{n} retries"


def _seconds(value: float) -> str:
    return f"{value:g}" if value < 10 else f"{value:.0f}"


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


#: SSE line ends: CRLF, LF or CR (not str.splitlines, which also splits on
#: U+2028 and friends that JSON text may carry unescaped).
_LINE_END = re.compile(r"\r\n|\r|\n")


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
        """Send the conversation; see :meth:`Provider.complete`.

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
        doubling backoff: the statuses :func:`should_retry` names, and
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

        parser = _SSEParser()
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


class _SSEParser:
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
