"""The one "import on first use": a ``"module:attribute"`` string, loaded when needed.

The public API (:mod:`mdagent`), the model providers and the built-in
tools' handlers each name what they hold this way, so ``agent /name``
imports only what it runs.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any


def load(target: str) -> Any:
    """The attribute ``target`` names (``"mdagent.providers.fake:FakeProvider"``),
    its module imported now if it was not yet."""
    from importlib import import_module

    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)
