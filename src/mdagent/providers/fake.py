"""A provider that replays a scripted conversation from a YAML file (tests and demos).

The script is a list of replies, one per ``complete()`` call (or a mapping
with that list under ``replies:``)::

    - text: "Let me look."
      tool_calls:
        - name: exec
          arguments: {command: "echo hi"}
          id: call_1            # optional
    - "A plain string is a text-only reply."
    - error: "simulated outage"  # complete() raises ProviderError with this text
    - text: All done.
      usage: {input_tokens: 120, output_tokens: 8}   # optional

``arguments`` may also be a string: JSON text the model "wrote", which may be
broken on purpose to exercise the loop's handling of bad arguments.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mdagent.core.errors import ConfigError, ProviderError
from mdagent.providers.config import ProviderConfig
from mdagent.providers.reply import Reply, ToolCall, usage

REPLY_KEYS = {"text", "tool_calls", "usage", "stop_reason", "error"}


class FakeProvider:
    """Replays ``config.script``; every call it received is kept in ``requests``.

    The script is read when the provider is created, so a broken file is
    reported before the conversation starts. ``sleep`` and ``environ`` are
    accepted (and ignored) so every backend can be built the same way.
    """

    def __init__(
        self,
        config: ProviderConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        environ: Mapping[str, str] | None = None,
    ):
        if not config.script:
            raise ProviderError("the fake provider needs a script: pass --script FILE")
        self.config = config
        self.replies: list[Reply | ProviderError] = load_script(config.script)
        self.position = 0
        self.requests: list[dict] = []

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
        """The next scripted reply; ``on_text`` gets its whole text (the others nothing)."""
        # A copy: the loop appends to its history after we return.
        self.requests.append(
            {"system": system, "messages": json.loads(json.dumps(messages)), "tools": tools}
        )
        if self.position >= len(self.replies):
            raise ProviderError(f"fake script exhausted after {_replies(len(self.replies))}")
        reply = self.replies[self.position]
        self.position += 1
        if isinstance(reply, ProviderError):
            raise reply
        if on_text and reply.text:
            on_text(reply.text)
        return reply


def _replies(n: int) -> str:
    return "1 reply" if n == 1 else f"{n} replies"


def load_script(path: str | Path) -> list[Reply | ProviderError]:
    """The replies (or scripted errors) in a fake-provider YAML script."""
    from mdagent.core.yamlsource import load_yaml

    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise ProviderError(
            f"{where}: cannot read the fake script: {err.strerror or err}"
        ) from None
    except UnicodeDecodeError:
        raise ProviderError(f"{where}: the fake script is not UTF-8 text") from None
    try:
        # Strict: a duplicate key (two `text:` in one reply) is an error, not the last one wins.
        data = load_yaml(text, where)
    except ConfigError as err:
        problem = err.message.removeprefix("invalid YAML: ")
        raise ProviderError(f"{where}:{err.line}: not valid YAML: {problem}") from None
    if isinstance(data, dict) and set(data) == {"replies"}:
        data = data["replies"]
    if not isinstance(data, list):
        raise ProviderError(f"{where}: a fake script is a list of replies (or `replies:` list)")
    counter = iter(range(1, 1_000_000))
    return [_reply(entry, f"{where}: reply {n}", counter) for n, entry in enumerate(data, start=1)]


def _reply(entry: Any, where: str, counter) -> Reply | ProviderError:
    if isinstance(entry, str):
        return Reply(entry, (), usage(), "stop")
    if not isinstance(entry, dict):
        raise ProviderError(f"{where}: must be a mapping with text and/or tool_calls")
    unknown = set(entry) - REPLY_KEYS
    if unknown:
        keys = ", ".join(sorted(map(str, unknown)))
        raise ProviderError(
            f"{where}: unknown key(s) {keys}; expected {', '.join(sorted(REPLY_KEYS))}"
        )
    if "error" in entry:
        return ProviderError(str(entry["error"]))
    calls = entry.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ProviderError(f"{where}: tool_calls must be a list")
    tool_calls = tuple(
        _tool_call(call, f"{where}, tool call {k}", counter) for k, call in enumerate(calls, 1)
    )
    figures = entry.get("usage") or {}
    if not isinstance(figures, dict):
        raise ProviderError(f"{where}: usage must be a mapping")
    text = entry.get("text")
    return Reply(
        "" if text is None else str(text),
        tool_calls,
        usage(figures.get("input_tokens"), figures.get("output_tokens")),
        entry.get("stop_reason") or ("tool_calls" if tool_calls else "stop"),
    )


def _tool_call(call: Any, where: str, counter) -> ToolCall:
    if not isinstance(call, dict) or not call.get("name"):
        raise ProviderError(f"{where}: needs a name (and arguments)")
    # Ids are numbered across the whole script so they stay unique in a conversation.
    number = next(counter)
    call_id = str(call.get("id") or f"call_{number}")
    arguments = call.get("arguments")
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        return ToolCall.from_json(call_id, str(call["name"]), arguments)
    if not isinstance(arguments, dict):
        raise ProviderError(f"{where}: arguments must be a mapping or JSON text")
    # YAML dates and the like become strings, as they would in a model's JSON.
    raw = json.dumps(arguments, default=str)
    return ToolCall(call_id, str(call["name"]), json.loads(raw), raw, None)
