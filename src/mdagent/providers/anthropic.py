"""Anthropic Messages API."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mdagent.errors import ProviderError
from mdagent.providers.base import (
    CUT_OFF,
    HTTPProvider,
    Reply,
    ToolCall,
    usage,
)

if TYPE_CHECKING:
    import httpx

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
        return parse_message(data, url)

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
        if self.config.stream:
            body["stream"] = True
        return body

    def _read_stream(
        self, response: httpx.Response, url: str, on_text: Callable[[str], None] | None
    ) -> Reply:
        blocks: dict[int, dict] = {}
        totals = usage()
        stop_reason = None
        done = False
        for event, data in self._events(response, url):
            if not isinstance(data, dict):
                raise ProviderError(f"unexpected data in the stream from {url}: {data[:100]!r}")
            kind = data.get("type") or event
            if kind == "message_start":
                totals = _usage((data.get("message") or {}).get("usage") or {}, totals)
            elif kind == "content_block_start":
                block = dict(data.get("content_block") or {})
                block["json"] = []
                blocks[data.get("index", len(blocks))] = block
            elif kind == "content_block_delta":
                index = data.get("index", max(blocks, default=0))
                block = blocks.setdefault(index, {"type": "text", "text": "", "json": []})
                delta = data.get("delta") or {}
                if delta.get("type") == "text_delta" and delta.get("text"):
                    block["text"] = block.get("text", "") + delta["text"]
                    if on_text:
                        on_text(delta["text"])
                elif delta.get("type") == "input_json_delta":
                    block["json"].append(delta.get("partial_json") or "")
            elif kind == "message_delta":
                stop_reason = (data.get("delta") or {}).get("stop_reason") or stop_reason
                totals = _usage(data.get("usage") or {}, totals)
            elif kind == "message_stop":
                done = True
                break
            elif kind == "error":
                raise ProviderError(f"the model server reported an error: {_error_text(data)}")
            # ping and content_block_stop carry nothing we need
        if not done:
            raise ProviderError(CUT_OFF)
        content = []
        for _index, block in sorted(blocks.items()):
            if block.get("type") == "tool_use" and block["json"]:
                block = block | {"input": "".join(block["json"])}
            content.append(block)
        return _reply(content, totals, stop_reason)


def parse_message(data: dict, url: str = "the server") -> Reply:
    """A non-streamed Messages response as a :class:`Reply`."""
    if data.get("type") == "error" or data.get("error"):
        raise ProviderError(f"the model server reported an error: {_error_text(data)}")
    if not isinstance(data.get("content"), list):
        raise ProviderError(f"the answer from {url} has no content")
    return _reply(
        data["content"], _usage(data.get("usage") or {}, usage()), data.get("stop_reason")
    )


def _reply(content: list[dict], totals: dict, stop_reason: str | None) -> Reply:
    text = []
    calls = []
    for block in content:
        if block.get("type") == "text":
            text.append(block.get("text") or "")
        elif block.get("type") == "tool_use":
            # Streamed input is JSON text; non-streamed input is already an object.
            value = block.get("input")
            raw = (
                value if isinstance(value, str) else json.dumps(value if value is not None else {})
            )
            call_id = block.get("id") or f"toolu_{len(calls) + 1}"
            calls.append(ToolCall.from_json(call_id, block.get("name") or "", raw))
    return Reply("".join(text), tuple(calls), totals, stop_reason)


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
    ``tool_result`` blocks as the API requires.
    """
    wire: list[dict] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            blocks = _text_blocks(content)
        elif role == "assistant":
            blocks = _text_blocks(content) + [
                {
                    "type": "tool_use",
                    "id": c["id"],
                    "name": c["name"],
                    # The API insists on an object; a call with broken arguments goes back as {}.
                    "input": c["arguments"] if isinstance(c.get("arguments"), dict) else {},
                }
                for c in message.get("tool_calls") or []
            ]
        elif role == "tool":
            role = "user"
            blocks = [
                {
                    "type": "tool_result",
                    "tool_use_id": message["tool_call_id"],
                    "content": content if isinstance(content, str | list) else json.dumps(content),
                }
            ]
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


def _error_text(data: dict) -> str:
    error = data.get("error")
    if isinstance(error, dict):
        kind = error.get("type")
        message = error.get("message") or json.dumps(error)
        return f"{kind}: {message}" if kind else str(message)
    return str(error)
