"""OpenAI Chat Completions, and every server that speaks it (Ollama, vLLM, llama.cpp, ...).

Besides OpenAI's own shapes it reads what gateways and other servers put in
the same format: legacy ``function_call`` answers (older gateways), tool-call
pieces with no ``index`` and an empty ``id`` (Gemini behind a proxy), per-call
opaque fields such as Gemini's ``extra_content.google.thought_signature``
(sent back unchanged), ``content`` as a list of typed parts (Mistral's
reasoning models), and reasoning in ``reasoning_content`` or ``reasoning``
(sent back as :func:`~mdagent.providers.reply.echoes_reasoning` decides).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from mdagent.core.errors import ProviderError
from mdagent.providers.base import HTTPProvider, cut_off
from mdagent.providers.reply import Reply, ToolCall, echoes_reasoning, usage
from mdagent.providers.wire import error_text, is_error_object

#: The fields of a delta (or message) this backend reads; others are noted so
#: that an answer made only of them is reported, not taken for an empty one.
#: ``extra_content`` beside text is Gemini's optional signature, ``annotations``
#: OpenAI's citations, ``reasoning_details`` OpenRouter's copy of ``reasoning``.
READ_FIELDS = frozenset(
    {
        "role",
        "content",
        "refusal",
        "tool_calls",
        "function_call",
        "reasoning_content",
        "reasoning",
        "reasoning_details",
        "annotations",
        "extra_content",
    }
)

#: A tool call's fields with a meaning here; any other field is the provider's
#: own (Gemini's ``extra_content``) and goes back with the call unchanged.
CALL_FIELDS = frozenset({"index", "id", "type", "function"})

#: Finish reasons that say the model called a tool.
CALL_FINISHES = frozenset({"tool_calls", "function_call"})


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
        return parse_completion(data, self.where(url))

    def request_body(self, system: str, messages: list[dict], tools: list[dict]) -> dict:
        """The JSON body for a conversation in the neutral format."""
        wire = [{"role": "system", "content": system}] if system else []
        wire += to_openai_messages(messages, self.config.reasoning)
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
        where = self.where(url)
        answer = _Answer(on_text, on_reasoning)
        totals = usage()
        stop_reason = None
        done = False
        for event, chunk in events:
            if chunk == "[DONE]":
                done = True
                break
            if event == "error" or is_error_object(chunk):
                raise ProviderError(_reported(where, error_text(chunk)))
            if not isinstance(chunk, dict):
                raise ProviderError(f"unexpected data in the stream from {where}: {chunk[:100]!r}")
            if chunk.get("usage"):
                u = chunk["usage"]
                totals = usage(u.get("prompt_tokens"), u.get("completion_tokens"))
            for choice in chunk.get("choices") or []:
                if choice.get("index", 0) != 0:
                    continue
                finish = choice.get("finish_reason")
                if finish == "error":
                    words = error_text(choice) if choice.get("error") else "finish_reason error"
                    raise ProviderError(_reported(where, words))
                stop_reason = finish or stop_reason
                answer.read(choice.get("delta") or {})
        if not done and stop_reason is None:
            raise ProviderError(cut_off(where))
        return answer.reply(totals, stop_reason, where)


class _Answer:
    """An answer being put together from deltas (or from one whole message).

    Text, refusal and reasoning are shown as they arrive; tool calls are
    gathered piece by piece (:meth:`_call_piece`), a legacy ``function_call``
    too. Fields this backend does not read are noted (:data:`READ_FIELDS`).
    """

    def __init__(
        self,
        on_text: Callable[[str], None] | None = None,
        on_reasoning: Callable[[str], None] | None = None,
    ) -> None:
        self.on_text = on_text
        self.on_reasoning = on_reasoning
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.thoughts: list[str] = []
        self.reasoning_field = ""
        self.calls: dict[int, dict] = {}  # by the delta's "index": arguments arrive in pieces
        self.legacy: dict | None = None  # a legacy function_call, in pieces
        self.unread: set[str] = set()

    def read(self, delta: dict) -> None:
        """Fold one delta (or a whole non-streamed message) into the answer."""
        field, thought = _reasoning(delta)
        if thought:
            self.reasoning_field = self.reasoning_field or field
            self._add(self.thoughts, thought, self.on_reasoning)
        content = delta.get("content")
        if isinstance(content, list):
            self._parts(content)
        else:
            self._add(self.text, content, self.on_text)
        self._add(self.refusal, delta.get("refusal"), self.on_text)
        for part in delta.get("tool_calls") or []:
            if isinstance(part, dict):
                self._call_piece(part)
        function_call = delta.get("function_call")
        if isinstance(function_call, dict):
            self._legacy_piece(function_call)
        self.unread.update(k for k, v in delta.items() if k not in READ_FIELDS and v)

    def reply(self, totals: dict, stop_reason: str | None, where: str) -> Reply:
        """The :class:`Reply`, or an error when nothing in the answer could be read."""
        calls = [
            ToolCall.from_json(
                c["id"] or f"call_{n}", c["name"], "".join(c["arguments"]), c["extra"]
            )
            for n, (_index, c) in enumerate(sorted(self.calls.items()), start=1)
        ]
        if self.legacy is not None and self.legacy["name"]:
            raw = "".join(self.legacy["arguments"])
            calls.append(
                ToolCall.from_json(f"call_{len(calls) + 1}", self.legacy["name"], raw, legacy=True)
            )
        text = "".join(self.text + self.refusal)
        if not (text or calls):
            _check_not_unread(where, stop_reason, self.unread, bool(self.thoughts))
        return Reply(
            text,
            tuple(calls),
            totals,
            stop_reason,
            refusal="".join(self.refusal),
            reasoning="".join(self.thoughts),
            reasoning_field=self.reasoning_field,
        )

    def _add(self, pieces: list[str], piece: Any, show: Callable[[str], None] | None) -> None:
        if isinstance(piece, str) and piece:
            pieces.append(piece)
            if show:
                show(piece)

    def _parts(self, parts: Iterable[Any]) -> None:
        """``content`` as typed parts: ``text``, and Mistral's ``thinking`` (itself parts)."""
        for part in parts:
            if isinstance(part, str):
                self._add(self.text, part, self.on_text)
            elif not isinstance(part, dict):
                continue
            elif part.get("type") == "text":
                self._add(self.text, part.get("text"), self.on_text)
            elif part.get("type") == "thinking":
                thinking = part.get("thinking")
                for piece in [thinking] if isinstance(thinking, str) else thinking or []:
                    text = piece.get("text") if isinstance(piece, dict) else piece
                    self._add(self.thoughts, text, self.on_reasoning)
            else:
                self.unread.add(f"content part {part.get('type')!r}")

    def _call_piece(self, part: dict) -> None:
        """Fold one streamed tool-call piece into :attr:`calls`.

        With an ``index`` the piece belongs to that call. Without one (Gemini,
        some proxies): a new non-empty ``id`` starts a new call, the same id
        goes on with it; with an empty id, a piece that brings its own
        function name starts a new call and one without continues the last.
        """
        index = part.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            last = max(self.calls) if self.calls else None
            call_id = part.get("id")
            if last is None:
                new = True
            elif call_id:
                new = self.calls[last]["id"] != call_id
            else:
                new = bool((part.get("function") or {}).get("name"))
            index = (last + 1 if last is not None else 0) if new else last
        slot = self.calls.setdefault(index, {"id": "", "name": "", "arguments": [], "extra": {}})
        if part.get("id"):
            slot["id"] = part["id"]
        function = part.get("function") or {}
        if function.get("name"):
            slot["name"] = function["name"]
        slot["arguments"] += _argument_pieces(function.get("arguments"))
        for key, value in part.items():
            if key not in CALL_FIELDS and value not in (None, "", {}, []):
                slot["extra"][key] = value

    def _legacy_piece(self, function_call: dict) -> None:
        """Fold one piece of a legacy ``function_call`` (one call per answer)."""
        if self.legacy is None:
            self.legacy = {"name": "", "arguments": []}
        if function_call.get("name"):
            self.legacy["name"] = function_call["name"]
        self.legacy["arguments"] += _argument_pieces(function_call.get("arguments"))


def _argument_pieces(arguments: Any) -> list[str]:
    if isinstance(arguments, dict):  # a few servers send the object itself
        return [json.dumps(arguments)]
    return [arguments] if isinstance(arguments, str) and arguments else []


def _reasoning(delta: dict) -> tuple[str, Any]:
    """The reasoning of a delta or message and the field it came in:
    ``reasoning_content`` (DeepSeek, vLLM, llama.cpp) or ``reasoning``
    (Ollama, OpenRouter, newer vLLM); one, never both."""
    value = delta.get("reasoning_content")
    if isinstance(value, str) and value:
        return "reasoning_content", value
    value = delta.get("reasoning")
    return ("reasoning", value) if isinstance(value, str) and value else ("", None)


def _reported(where: str, words: str) -> str:
    return f"the model server at {where} reported an error: {words}"


def _check_not_unread(
    where: str, stop_reason: str | None, unread: set[str], reasoned: bool
) -> None:
    """Raise when an answer with no text and no call is one this backend could not read.

    It is taken for an empty answer only when nothing says otherwise: a
    finish reason that says a tool was called, or (with no reasoning either)
    fields this backend does not read, mean the server answered in a form it
    cannot follow — said, not passed off as success.
    """
    if stop_reason in CALL_FINISHES:
        detail = f"finish_reason {stop_reason!r} but no tool call it can read"
    elif unread and not reasoned:
        detail = "only " + ", ".join(sorted(unread))
    else:
        return
    raise ProviderError(
        f"the model server at {where} answered in a form mdagent does not read "
        f"({detail}); nothing was run"
    )


def parse_completion(data: dict, where: str = "the server") -> Reply:
    """A non-streamed Chat Completions response as a :class:`Reply`.

    ``where`` names the endpoint in error messages.
    """
    if is_error_object(data):
        raise ProviderError(_reported(where, error_text(data)))
    choices = data.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        raise ProviderError(f"the answer from {where} has no choices")
    if choices[0].get("finish_reason") == "error":
        raise ProviderError(_reported(where, "finish_reason error"))
    message = choices[0].get("message") or {}
    # Whole calls arrive with their index in the list: the same folding as
    # streamed pieces, without the guessing.
    message = message | {
        "tool_calls": [
            call | {"index": n}
            for n, call in enumerate(message.get("tool_calls") or [])
            if isinstance(call, dict)
        ]
    }
    answer = _Answer()
    answer.read(message)
    u = data.get("usage") or {}
    totals = usage(u.get("prompt_tokens"), u.get("completion_tokens"))
    return answer.reply(totals, choices[0].get("finish_reason"), where)


def to_openai_messages(messages: Iterable[dict], reasoning: str | None = None) -> list[dict]:
    """Neutral messages in Chat Completions form.

    ``reasoning`` is ``model.reasoning`` (see
    :func:`~mdagent.providers.reply.echoes_reasoning`). A call that came as a
    legacy ``function_call`` goes back as one, and its result as a
    ``function`` message: a server that answers in that form reads it.
    """
    legacy: set[Any] = set()  # the legacy calls of the last assistant message
    wire = []
    pending: list[dict] = []  # tool results with images, not yet sent
    for message in messages:
        if pending and message.get("role") != "tool":
            _flush_images(wire, pending)
        if message.get("role") == "assistant":
            # Results answer the calls of the message before them: generated
            # ids (call_1) come again in later turns, in either form.
            calls = message.get("tool_calls") or []
            legacy = {c.get("id") for c in calls if c.get("legacy")}
        if message.get("role") == "tool" and message.get("tool_call_id") in legacy:
            wire.append(
                {
                    "role": "function",
                    "name": message.get("name", ""),
                    "content": message.get("content", ""),
                }
            )
            continue
        wire.append(to_openai_message(message, reasoning))
        if message.get("role") == "tool" and message.get("images"):
            pending.append(message)
    if pending:
        _flush_images(wire, pending)
    return wire


def _flush_images(wire: list[dict], pending: list[dict]) -> None:
    """The images of the tool results in ``pending``, as one user message of image parts.

    A tool message cannot carry images in Chat Completions, and the results
    of one assistant message must follow it unbroken: the images come right
    after the last of them.
    """
    parts: list[dict] = []
    for message in pending:
        parts.append({"type": "text", "text": f"Images from {message.get('name', 'the tool')}:"})
        parts += [
            {"type": "image_url", "image_url": {"url": f"data:{i['mime']};base64,{i['data']}"}}
            for i in message["images"]
        ]
    pending.clear()
    wire.append({"role": "user", "content": parts})


def to_openai_message(message: dict, reasoning: str | None = None) -> dict:
    """One neutral message in Chat Completions form (see :func:`to_openai_messages`)."""
    role = message.get("role")
    if role in ("user", "system"):
        return {"role": role, "content": message.get("content", "")}
    if role == "assistant":
        calls = message.get("tool_calls") or []
        wire: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
        if calls:
            # OpenAI documents content as optional beside tool_calls; null is the canonical "none".
            wire["content"] = message.get("content") or None
            current = [c for c in calls if not c.get("legacy")]
            if current:
                wire["tool_calls"] = [
                    # The provider's opaque fields first, so they cannot replace ours.
                    dict(c.get("extra") or {})
                    | {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": _arguments_text(c)},
                    }
                    for c in current
                ]
            for c in calls:
                if c.get("legacy"):
                    wire["function_call"] = {"name": c["name"], "arguments": _arguments_text(c)}
        if echoes_reasoning(message, reasoning):
            wire[message.get("reasoning_field") or "reasoning_content"] = message["reasoning"]
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
