"""Model providers: OpenAI-compatible Chat Completions, Anthropic Messages, and a scripted fake.

    from mdagent.providers import ProviderConfig, get_provider

    provider = get_provider(ProviderConfig.from_settings(settings, overrides, os.environ))
    reply = provider.complete(system, messages, tools, on_text=print_delta)

Backends are imported only when chosen, so importing this package stays cheap.
"""

from __future__ import annotations

from typing import Any

from mdagent.core.errors import ProviderError
from mdagent.core.lazy import load
from mdagent.providers.config import Provider, ProviderConfig
from mdagent.providers.reply import Reply, ToolCall

#: Provider name -> "module:Class"; the module is imported on first use.
PROVIDERS: dict[str, str] = {
    "openai": "mdagent.providers.openai:OpenAIProvider",
    "anthropic": "mdagent.providers.anthropic:AnthropicProvider",
    "fake": "mdagent.providers.fake:FakeProvider",
}


def get_provider(config: ProviderConfig, **options: Any) -> Provider:
    """The backend ``config.provider`` names, built from ``config``.

    ``options`` go to the backend's constructor (``sleep=`` to replace the
    wait between retries, ``environ=`` for where API keys are read).
    """
    target = PROVIDERS.get(config.provider)
    if target is None:
        known = ", ".join(sorted(PROVIDERS))
        raise ProviderError(f"unknown provider '{config.provider}' (known: {known})")
    return load(target)(config, **options)


__all__ = ["PROVIDERS", "Provider", "ProviderConfig", "Reply", "ToolCall", "get_provider"]
