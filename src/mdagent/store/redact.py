"""Redaction: secrets replaced by ``[REDACTED]`` before anything is stored.

Keys named like a secret variable and the values of secret environment
variables are replaced (which names are secret: ``policy.env``, read by
:func:`mdagent.safety.environment.is_secret_name`). Provider-signed blocks
(Anthropic ``thinking`` with a ``signature``, ``redacted_thinking``) and a
tool call's opaque provider fields (Gemini's thought signature) are kept as
they came: the provider checks them byte for byte.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

REDACTED = "[REDACTED]"
# Shorter secret values are not redacted: "1234" would blank out half the log.
MIN_SECRET_LENGTH = 4


def secret_values(
    settings: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None
) -> list[str]:
    """Values of environment variables with secret names, longest first."""
    from mdagent.safety.environment import is_secret_name

    environ = os.environ if environ is None else environ
    found = {
        value
        for name, value in environ.items()
        if len(value) >= MIN_SECRET_LENGTH and is_secret_name(name, settings)
    }
    # Longest first, so a secret containing another is replaced whole.
    return sorted(found, key=len, reverse=True)


def redact(value: Any, settings: Mapping[str, Any] | None, values: list[str]) -> Any:
    """``value`` with secret-named keys and secret values replaced by ``[REDACTED]``.

    A value also goes in its JSON-escaped spelling (a tool result is stored
    as JSON text). Provider-signed blocks are returned untouched: Anthropic
    rejects a ``thinking`` block whose text differs from what it signed. So
    are the ``extra`` fields of an assistant message's tool calls: a
    provider's opaque per-call data (Gemini rejects a changed thought signature).
    """
    from mdagent.safety.environment import is_secret_name

    if isinstance(value, str):
        for secret in values:
            for spelling in {secret, json.dumps(secret, ensure_ascii=False)[1:-1]}:
                if spelling in value:
                    value = value.replace(spelling, REDACTED)
        return value
    if isinstance(value, Mapping):
        if is_signed_block(value):
            return value
        redacted = {
            k: REDACTED if is_secret_name(str(k), settings) else redact(v, settings, values)
            for k, v in value.items()
        }
        calls, kept = value.get("tool_calls"), redacted.get("tool_calls")
        if value.get("role") == "assistant" and isinstance(calls, list) and isinstance(kept, list):
            for call, copy in zip(calls, kept, strict=True):
                if isinstance(call, Mapping) and isinstance(copy, dict) and "extra" in call:
                    copy["extra"] = call["extra"]
        return redacted
    if isinstance(value, (list, tuple)):
        return [redact(v, settings, values) for v in value]
    return value


def is_signed_block(block: Mapping[str, Any]) -> bool:
    """Whether ``block`` is a content block the provider signed (sent back byte-exact)."""
    kind = block.get("type")
    return kind == "redacted_thinking" or (kind == "thinking" and "signature" in block)
