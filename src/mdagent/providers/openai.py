"""OpenAI Chat Completions, and every server that speaks it (Ollama, vLLM, llama.cpp, ...)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from mdagent.errors import ProviderError
from mdagent.providers.base import (
    CUT_OFF,
    HTTPProvider,
    Reply,
    ToolCall,
    error_text,
    is_error_object,
    usage,
)


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

    def read_stream(
        self,
        events: Iterator[tuple[str | None, dict | str]],
        url: str,
        on_text: Callable[[str], None] | None,
        on_reasoning: Callable[[str], None] | None,
    ) -> Reply:
        """The reply from a Chat Completions stream.

        The stream is complete at ``data: [DONE]``, or when it ends cleanly
        after a ``finish_reason`` (some llama.cpp forks never send ``[DONE]``).
        An error inside the stream — an ``error:`` event (llama.cpp), a bare
        JSON error line (Ollama), a chunk carrying ``error`` (OpenAI,
        OpenRouter, vLLM) or ``"object": "error"`` (older vLLM), a
        ``finish_reason`` of ``error`` — raises it with the server's words.
        """
        text: list[str] = []
        refusal: list[str] = []
        thoughts: list[str] = []
        calls: dict[int, dict] = {}  # by the delta's "index": arguments arrive in pieces
        totals = usage()
        stop_reason = None
        done = False
        for event, chunk in events:
            if chunk == "[DONE]":
                done = True
                break
            if event == "error" or is_error_object(chunk):
                raise ProviderError(f"the model server reported an error: {error_text(chunk)}")
            if not isinstance(chunk, dict):
                raise ProviderError(f"unexpected data in the stream from {url}: {chunk[:100]!r}")
            if chunk.get("usage"):
                u = chunk["usage"]
                totals = usage(u.get("prompt_tokens"), u.get("completion_tokens"))
            for choice in chunk.get("choices") or []:
                if choice.get("index", 0) != 0:
                    continue
                finish = choice.get("finish_reason")
                if finish == "error":
                    raise ProviderError(
                        "the model server reported an error: "
                        + (error_text(choice) if choice.get("error") else "finish_reason error")
                    )
                stop_reason = finish or stop_reason
                delta = choice.get("delta") or {}
                for pieces, piece, show in (
                    (thoughts, _reasoning(delta), on_reasoning),
                    (text, delta.get("content"), on_text),
                    (refusal, delta.get("refusal"), on_text),
                ):
                    if isinstance(piece, str) and piece:
                        pieces.append(piece)
                        if show:
                            show(piece)
                for part in delta.get("tool_calls") or []:
                    _accumulate(calls, part)
        if not done and stop_reason is None:
            raise ProviderError(CUT_OFF)
        tool_calls = tuple(
            ToolCall.from_json(c["id"] or f"call_{n}", c["name"], "".join(c["arguments"]))
            for n, (_index, c) in enumerate(sorted(calls.items()), start=1)
        )
        return Reply(
            "".join(text + refusal),
            tool_calls,
            totals,
            stop_reason,
            refusal="".join(refusal),
            reasoning="".join(thoughts),
        )


def _reasoning(delta: dict) -> Any:
    """The reasoning text of a delta or message: ``reasoning_content`` (DeepSeek, vLLM,
    llama.cpp) or ``reasoning`` (Ollama, OpenRouter, newer vLLM); one, never both."""
    value = delta.get("reasoning_content")
    return value if value else delta.get("reasoning")


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
    if is_error_object(data):
        raise ProviderError(f"the model server reported an error: {error_text(data)}")
    choices = data.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        raise ProviderError(f"the answer from {url} has no choices")
    if choices[0].get("finish_reason") == "error":
        raise ProviderError("the model server reported an error: finish_reason error")
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
    refusal = message.get("refusal") if isinstance(message.get("refusal"), str) else ""
    thought = _reasoning(message)
    return Reply(
        (message.get("content") or "") + (refusal or ""),
        tuple(tool_calls),
        usage(u.get("prompt_tokens"), u.get("completion_tokens")),
        choices[0].get("finish_reason"),
        refusal=refusal or "",
        reasoning=thought if isinstance(thought, str) else "",
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
