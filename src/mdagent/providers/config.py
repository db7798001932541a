"""Which backend to use and how to reach it: ProviderConfig, the backends' defaults, the Provider protocol.

``ProviderConfig.from_settings`` reads agent.yaml's ``model`` section, the
``AGENT_*`` variables and the command line's flags into one checked
configuration; :class:`Provider` is what every backend implements (one
call, one complete :class:`~mdagent.providers.reply.Reply`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Protocol, runtime_checkable

from mdagent.core.defaults import DEFAULT_SETTINGS
from mdagent.core.errors import ProviderError
from mdagent.providers.reply import Reply

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
#: :func:`~mdagent.providers.reply.echoes_reasoning`).
REASONING_MODES = ("echo", "drop")


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
    message) overrides whether reasoning goes back (:func:`~mdagent.providers.reply.echoes_reasoning`).
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
