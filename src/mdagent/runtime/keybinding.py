"""Key binding: an API key goes only where the person sent it.

An API key read from the environment goes to the provider's own host, to
the ``base_url`` the person set, or to a host the person's user layer pairs
with that variable (``key_hosts:``), never to an endpoint only a skill names
(:func:`key_withheld`). Workspace trust (:mod:`mdagent.runtime.trust`) is the
other half: a folder someone else wrote chooses no model until trusted.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def key_withheld(config: Any, person: Any, key_hosts: Mapping[str, Any] | None) -> bool:
    """Whether ``config``'s API key must not be sent: its endpoint is not one it was given to.

    A key variable may go to its provider's own default host (its default
    variable there), to the endpoint of the person's own model configuration
    ``person`` (the settings they trust and the command line, no skill) with
    that configuration's variable, or to a host ``key_hosts`` (the user
    layer's ``key_hosts:``) pairs with the variable. Hosts compare with
    scheme and port.
    """
    from mdagent.providers.config import DEFAULTS

    defaults = DEFAULTS.get(config.provider)
    if defaults is None:  # the fake provider: no key, no host
        return False
    variable = config.api_key_env or defaults["api_key_env"]
    target = origin(config.base_url or defaults["base_url"])
    if target is None:
        return True
    if variable == defaults["api_key_env"] and target == origin(defaults["base_url"]):
        return False
    theirs = DEFAULTS.get(getattr(person, "provider", ""))
    if theirs is not None:
        own_variable = person.api_key_env or theirs["api_key_env"]
        if variable == own_variable and target == origin(person.base_url or theirs["base_url"]):
            return False
    for entry in (key_hosts or {}).get(variable) or ():
        if host_matches(str(entry), target):
            return False
    return True


def origin(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an http(s) URL (host lower case, no trailing dot), or None."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(str(url).strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if scheme not in ("http", "https") or not host:
        return None
    return scheme, host, port or (443 if scheme == "https" else 80)


def host_matches(entry: str, target: tuple[str, str, int]) -> bool:
    """Whether a ``key_hosts`` entry (``host``, ``host:port`` or a URL) names ``target``.

    A bare host matches it on any port and scheme; a port or a scheme given
    must match too.
    """
    from urllib.parse import urlsplit

    text = entry.strip()
    try:
        parts = urlsplit(text if "://" in text else f"//{text}")
        port = parts.port
    except ValueError:
        return False
    host = (parts.hostname or "").rstrip(".")
    if not host or host != target[1]:
        return False
    if parts.scheme and parts.scheme.lower() != target[0]:
        return False
    return port is None or port == target[2]
