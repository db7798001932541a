"""OpenAI Chat Completions, and every server that speaks it (Ollama, vLLM, llama.cpp, ...)."""

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


class OpenAIProvider(HTTPProvider):
    """``POST {base_url}/chat/completions``, streamed (SSE) or not.

    The ``Authorization: Bearer`` header is sent only when the key variable is
    set, so local servers such as Ollama (``http://localhost:11434/v1``) work
    without one.
    """

    name = "openai"

    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def parse_reply(self, data: dict, url: str) -> Reply:
        return parse_completion(data, url)

    def request_body(self, system: str, messages: list[dict], tools: list[dict]) -> dict:
        """The JSON body for a conversation in the neutral format."""
        wire = [{"role": "system", "content": system}] if system else []
        wire += [to_openai_message(m) for m in messages]
        body: dict[str, Any] = {"model": self.model, "messages": wire}
        # OpenAI itself has deprecated max_tokens (its reasoning models reject it);
        # the compatible servers mostly know only max_tokens.
        limit = "max_completion_tokens" if "api.openai.com" in self.base_url else "max_tokens"
        body[limit] = self.config.max_tokens
        if tools:  # some compatible servers reject an empty list
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t.get("description", ""),
                        "parameters": t.get("parameters") or {"type": "object", "properties": {}},
                    },
                }
                for t in tools
            ]
        if self.config.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def _read_stream(
        self, response: httpx.Response, url: str, on_text: Callable[[str], None] | None
    ) -> Reply:
        text: list[str] = []
        calls: dict[int, dict] = {}  # by the delta's "index": arguments arrive in pieces
        totals = usage()
        stop_reason = None
        done = False
        for _event, chunk in self._events(response, url):
            if chunk == "[DONE]":
                done = True
                break
            if not isinstance(chunk, dict):
                raise ProviderError(f"unexpected data in the stream from {url}: {chunk[:100]!r}")
            if chunk.get("error"):
                raise ProviderError(f"the model server reported an error: {_error_text(chunk)}")
            if chunk.get("usage"):
                u = chunk["usage"]
                totals = usage(u.get("prompt_tokens"), u.get("completion_tokens"))
            for choice in chunk.get("choices") or []:
                if choice.get("index", 0) != 0:
                    continue
                stop_reason = choice.get("finish_reason") or stop_reason
                delta = choice.get("delta") or {}
                piece = delta.get("content")
                if piece:
                    text.append(piece)
                    if on_text:
                        on_text(piece)
                for part in delta.get("tool_calls") or []:
                    _accumulate(calls, part)
        if not done:
            raise ProviderError(CUT_OFF)
        tool_calls = tuple(
            ToolCall.from_json(c["id"] or f"call_{n}", c["name"], "".join(c["arguments"]))
            for n, (_index, c) in enumerate(sorted(calls.items()), start=1)
        )
        return Reply("".join(text), tool_calls, totals, stop_reason)


def _accumulate(calls: dict[int, dict], part: dict) -> None:
    """Fold one streamed tool-call delta into ``calls``."""
    index = part.get("index")
    if index is None:
        # Servers that omit the index: a new id starts a new call, else it continues the last.
        last = max(calls) if calls else None
        new_id = part.get("id") and (last is None or calls[last]["id"] != part["id"])
        index = len(calls) if (new_id or last is None) else last
    slot = calls.setdefault(index, {"id": "", "name": "", "arguments": []})
    if part.get("id"):
        slot["id"] = part["id"]
    function = part.get("function") or {}
    if function.get("name"):
        slot["name"] = function["name"]
    arguments = function.get("arguments")
    if isinstance(arguments, dict):  # a few servers send the object itself
        arguments = json.dumps(arguments)
    if arguments:
        slot["arguments"].append(arguments)


def parse_completion(data: dict, url: str = "the server") -> Reply:
    """A non-streamed Chat Completions response as a :class:`Reply`."""
    if data.get("error"):
        raise ProviderError(f"the model server reported an error: {_error_text(data)}")
    choices = data.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        raise ProviderError(f"the answer from {url} has no choices")
    message = choices[0].get("message") or {}
    tool_calls = []
    for n, call in enumerate(message.get("tool_calls") or [], start=1):
        function = call.get("function") or {}
        arguments = function.get("arguments")
        raw = json.dumps(arguments) if isinstance(arguments, dict) else str(arguments or "")
        tool_calls.append(
            ToolCall.from_json(call.get("id") or f"call_{n}", function.get("name") or "", raw)
        )
    u = data.get("usage") or {}
    return Reply(
        message.get("content") or "",
        tuple(tool_calls),
        usage(u.get("prompt_tokens"), u.get("completion_tokens")),
        choices[0].get("finish_reason"),
    )


def to_openai_message(message: dict) -> dict:
    """One neutral message in Chat Completions form."""
    role = message.get("role")
    if role in ("user", "system"):
        return {"role": role, "content": message.get("content", "")}
    if role == "assistant":
        calls = message.get("tool_calls") or []
        wire: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
        if calls:
            # OpenAI documents content as optional beside tool_calls; null is the canonical "none".
            wire["content"] = message.get("content") or None
            wire["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": _arguments_text(c)},
                }
                for c in calls
            ]
        return wire
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message["tool_call_id"],
            "content": message.get("content", ""),
        }
    raise ProviderError(f"cannot send a message with role {role!r} to an OpenAI-style model")


def _arguments_text(call: dict) -> str:
    # A call whose arguments were not valid JSON goes back as the model wrote it,
    # so the model sees its own mistake next to the error result.
    if call.get("arguments") is None and call.get("raw_arguments") is not None:
        return str(call["raw_arguments"])
    return json.dumps(call.get("arguments") or {})


def _error_text(data: dict) -> str:
    error = data.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or json.dumps(error))
    return str(error)
