"""The neutral message shapes every backend converts to and from: Reply, ToolCall, reasoning echo.

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
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
