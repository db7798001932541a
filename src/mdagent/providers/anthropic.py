"""Anthropic Messages API.

Content blocks this backend has no neutral form for — a server tool's
``server_tool_use`` and its result (``web_search_tool_result`` and the like,
which carry encrypted content), added by the API or by a proxy — are kept:
the reply's whole content goes back as it came (the neutral ``blocks``), and
a ``pause_turn`` is continued by sending it back (see :attr:`Reply.paused
<mdagent.providers.reply.Reply.paused>`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from mdagent.core.errors import ProviderError
from mdagent.providers.base import HTTPProvider, cut_off
from mdagent.providers.reply import Reply, ToolCall, usage
from mdagent.providers.wire import error_text

API_VERSION = "2023-06-01"


class AnthropicProvider(HTTPProvider):
    """``POST {base_url}/v1/messages``, streamed (SSE) or not."""

    name = "anthropic"

    def endpoint(self) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if self.api_key:  # absent for local test servers; the real API answers 401
            headers["x-api-key"] = self.api_key
        return headers

    def parse_reply(self, data: dict, url: str) -> Reply:
        return parse_message(data, self.where(url))

    def request_body(self, system: str, messages: list[dict], tools: list[dict]) -> dict:
        """The JSON body for a conversation in the neutral format."""
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.config.max_tokens,
            "messages": to_anthropic_messages(messages),
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [
                {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "input_schema": t.get("parameters") or {"type": "object", "properties": {}},
                }
                for t in tools
            ]
        if self.config.thinking_budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": self.config.thinking_budget}
        if self.config.stream:
            body["stream"] = True
        return body

    def read_stream(
        self,
        events: Iterator[tuple[str | None, dict | str]],
        url: str,
        on_text: Callable[[str], None] | None,
        on_reasoning: Callable[[str], None] | None,
    ) -> Reply:
        """The reply from a Messages stream, complete at ``message_stop``.

        Content blocks are rebuilt from their deltas: text and its citations,
        tool input JSON (a client's ``tool_use`` or a ``server_tool_use``), and
        thinking with its signature (a ``redacted_thinking`` block, or a server
        tool's result, comes whole in its start event). An ``error`` event
        raises the server's words.
        """
        where = self.where(url)
        blocks: dict[int, dict] = {}
        json_parts: dict[int, list[str]] = {}  # tool_use input, in pieces
        totals = usage()
        stop_reason = None
        done = False
        for event, data in events:
            if not isinstance(data, dict):
                raise ProviderError(f"unexpected data in the stream from {where}: {data[:100]!r}")
            kind = data.get("type") or event
            if kind == "error" or event == "error":
                raise ProviderError(_reported(where, error_text(data)))
            if kind == "message_start":
                totals = _usage((data.get("message") or {}).get("usage") or {}, totals)
            elif kind == "content_block_start":
                index = data.get("index", len(blocks))
                blocks[index] = dict(data.get("content_block") or {})
            elif kind == "content_block_delta":
                index = data.get("index", max(blocks, default=0))
                block = blocks.setdefault(index, {"type": "text", "text": ""})
                delta = data.get("delta") or {}
                _apply(block, delta, json_parts.setdefault(index, []))
                if delta.get("type") == "text_delta" and delta.get("text") and on_text:
                    on_text(delta["text"])
                elif (
                    delta.get("type") == "thinking_delta" and delta.get("thinking") and on_reasoning
                ):
                    on_reasoning(delta["thinking"])
            elif kind == "message_delta":
                stop_reason = (data.get("delta") or {}).get("stop_reason") or stop_reason
                totals = _usage(data.get("usage") or {}, totals)
            elif kind == "message_stop":
                done = True
                break
            # content_block_stop carries nothing we need; pings never get here
        if not done:
            raise ProviderError(cut_off(where))
        content = []
        for index, block in sorted(blocks.items()):
            if block.get("type") in INPUT_BLOCKS and json_parts.get(index):
                block = block | {"input": "".join(json_parts[index])}
            content.append(block)
        return _reply(content, totals, stop_reason)


def _apply(block: dict, delta: dict, json_parts: list[str]) -> None:
    """Fold one ``content_block_delta`` into its block."""
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + (delta.get("text") or "")
    elif kind == "input_json_delta":
        json_parts.append(delta.get("partial_json") or "")
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + (delta.get("thinking") or "")
    elif kind == "signature_delta":
        # The whole signature comes in one delta (the SDKs assign it, not append).
        block["signature"] = delta.get("signature") or ""
    elif kind == "citations_delta" and isinstance(delta.get("citation"), dict):
        block["citations"] = [*(block.get("citations") or []), delta["citation"]]


def parse_message(data: dict, where: str = "the server") -> Reply:
    """A non-streamed Messages response as a :class:`Reply`; ``where`` names the endpoint."""
    if data.get("type") == "error" or data.get("error"):
        raise ProviderError(_reported(where, error_text(data)))
    if not isinstance(data.get("content"), list):
        raise ProviderError(f"the answer from {where} has no content")
    return _reply(
        data["content"], _usage(data.get("usage") or {}, usage()), data.get("stop_reason")
    )


#: Content blocks the API signs: they go back exactly as they came.
THINKING_BLOCKS = ("thinking", "redacted_thinking")

#: Content blocks with a neutral form; any other kind keeps the whole content.
NEUTRAL_BLOCKS = ("text", "tool_use", *THINKING_BLOCKS)

#: Blocks whose ``input`` streams as JSON text in ``input_json_delta`` pieces.
INPUT_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")


def _reported(where: str, words: str) -> str:
    return f"the model server at {where} reported an error: {words}"


def _reply(content: list[dict], totals: dict, stop_reason: str | None) -> Reply:
    text = []
    calls = []
    thinking = []
    kept = []  # the content as it goes back, inputs as objects
    for block in content:
        kind = block.get("type")
        if kind == "text":
            text.append(block.get("text") or "")
        elif kind in THINKING_BLOCKS:
            thinking.append(block)
        elif kind == "tool_use":
            call_id = block.get("id") or f"toolu_{len(calls) + 1}"
            calls.append(ToolCall.from_json(call_id, block.get("name") or "", _input_text(block)))
            call = calls[-1]
            block = block | {"id": call_id, "input": _input_object(call.arguments)}
        elif kind in INPUT_BLOCKS:
            block = block | {"input": _input_object(_decoded(_input_text(block)))}
        kept.append(block)
    reasoning = "".join(b.get("thinking") or "" for b in thinking if b.get("type") == "thinking")
    server_blocks = any(block.get("type") not in NEUTRAL_BLOCKS for block in kept)
    return Reply(
        "".join(text),
        tuple(calls),
        totals,
        stop_reason,
        thinking=tuple(thinking),
        reasoning=reasoning,
        blocks=tuple(kept) if server_blocks else (),
    )


def _input_text(block: dict) -> str:
    # Streamed input is JSON text; non-streamed input is already an object.
    value = block.get("input")
    return value if isinstance(value, str) else json.dumps(value if value is not None else {})


def _decoded(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return None


def _input_object(value: Any) -> dict:
    # The API insists on an object: broken arguments go back as {}.
    return value if isinstance(value, dict) else {}


def _usage(figures: dict, previous: dict) -> dict:
    """Usage from a message_start/message_delta/response ``usage`` object.

    Cached prompt tokens are reported apart from ``input_tokens``; they are still
    input the model read, and the loop wants the size of the whole context.
    """
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    if any(figures.get(k) is not None for k in keys):
        input_tokens = sum(int(figures.get(k) or 0) for k in keys)
    else:
        input_tokens = previous["input_tokens"]
    output_tokens = figures.get("output_tokens")
    return usage(
        input_tokens, previous["output_tokens"] if output_tokens is None else output_tokens
    )


def to_anthropic_messages(messages: list[dict]) -> list[dict]:
    """Neutral messages as Messages API content blocks.

    Tool results go back in a user message, and consecutive messages of the same
    role are merged, so several tool results become one user message of
    ``tool_result`` blocks as the API requires (and a paused turn and its
    continuation become the one assistant message they are).
    """
    wire: list[dict] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            blocks = _text_blocks(content)
        elif role == "assistant" and message.get("blocks"):
            # The content as it came, server-tool blocks and their encrypted
            # results included: the API needs them to go on (pause_turn).
            blocks = [dict(b) for b in message["blocks"] if isinstance(b, dict)]
        elif role == "assistant":
            # Thinking blocks first, unchanged: the API checks them against their
            # signatures, and a turn that used tools must start with its thinking.
            thinking = [dict(b) for b in message.get("thinking") or [] if isinstance(b, dict)]
            blocks = (
                thinking
                + _text_blocks(content)
                + [
                    {
                        "type": "tool_use",
                        "id": c["id"],
                        "name": c["name"],
                        # The API insists on an object: broken arguments go back as {}.
                        "input": c["arguments"] if isinstance(c.get("arguments"), dict) else {},
                    }
                    for c in message.get("tool_calls") or []
                ]
            )
        elif role == "tool":
            role = "user"
            result = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": content if isinstance(content, str | list) else json.dumps(content),
            }
            if message.get("is_error"):
                result["is_error"] = True  # the model is told the call failed, not only shown
            if message.get("images"):
                # A tool_result may hold image blocks: the images go with their result.
                result["content"] = [
                    {"type": "text", "text": result["content"]},
                    *(
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": i["mime"],
                                "data": i["data"],
                            },
                        }
                        for i in message["images"]
                    ),
                ]
            blocks = [result]
        else:
            raise ProviderError(f"cannot send a message with role {role!r} to an Anthropic model")
        if not blocks:  # the API rejects empty content; an empty turn says nothing anyway
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return wire


def _text_blocks(content: Any) -> list[dict]:
    if isinstance(content, list):  # already content blocks
        return list(content)
    if not content:
        return []
    return [{"type": "text", "text": str(content)}]
