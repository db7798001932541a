"""The conversation: the messages of one session, kept in the store as they arrive.

Every message is written to the session store the moment it is added, so
Ctrl-C or a crash loses at most the message in flight; a session killed while
its tools ran is repaired on resume (:func:`repair_history`). Tool results
reach the model as :func:`tool_message`, cut down to :data:`MAX_RESULT_CHARS`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mdagent.core.calls import Result

if TYPE_CHECKING:
    from mdagent.store.store import Store

#: A result longer than this reaches the model cut down, with a note.
MAX_RESULT_CHARS = 50_000


class Conversation:
    """The messages of one session, each written to the store as it is added.

    The store keeps a copy with secrets redacted (:meth:`Store.add_message
    <mdagent.store.store.Store.add_message>`); ``messages``, what the model is sent
    during this run, stay as they came. A resumed session is the redacted copy.
    Without a store (tests, benchmarks) the messages live only in memory.
    """

    def __init__(
        self,
        messages: Iterable[dict[str, Any]] = (),
        *,
        store: Store | None = None,
        session_id: str | None = None,
    ) -> None:
        self.messages: list[dict[str, Any]] = list(messages)
        self.store = store
        self.session_id = session_id
        self.started = False  # its session_start hooks ran (mdagent.tools.hooks.SessionHooks)

    @classmethod
    def start(
        cls, store: Store, *, cwd: str | os.PathLike[str], model: str, title: str = ""
    ) -> Conversation:
        """A new, empty session in ``store``."""
        return cls(store=store, session_id=store.new_session(cwd, model, title))

    @classmethod
    def resume(cls, store: Store, session_id: str) -> Conversation:
        """A stored session, repaired if it was killed mid-turn (see :func:`repair_history`)."""
        stored = store.messages(session_id)
        messages = repair_history(stored)
        conversation = cls(messages, store=store, session_id=session_id)
        if messages[: len(stored)] == stored:
            # The usual damage is at the end (killed while tools ran): store the
            # repair so `agent sessions show` and the next resume see it too.
            for message in messages[len(stored) :]:
                store.add_message(session_id, message)
        return conversation

    def add(self, message: dict[str, Any]) -> None:
        """Append ``message`` and, with a store, commit it at once."""
        self.messages.append(message)
        if self.store is not None and self.session_id is not None:
            self.store.add_message(self.session_id, message)


def repair_history(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with an "interrupted" result for every tool call that has none.

    A session killed while its tools ran ends with an assistant message whose
    calls have no results; providers reject such a history, so the missing
    results are added right after the results that did arrive.
    """
    out: list[dict[str, Any]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        out.append(message)
        index += 1
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        answered = set()
        while index < len(messages) and messages[index].get("role") == "tool":
            answered.add(messages[index].get("tool_call_id"))
            out.append(messages[index])
            index += 1
        for call in calls:
            if call.get("id") not in answered:
                failure = Result.failure(
                    "interrupted: the session stopped before this call finished"
                )
                out.append(tool_message(call.get("id"), call.get("name", ""), failure))
    return out


def tool_message(call_id: str | None, name: str, result: Result) -> dict[str, Any]:
    """The neutral tool message carrying ``result`` back to the model (capped).

    A failed call's message says so (``is_error``): Anthropic's API takes it as
    the tool_result's ``is_error``, so the model knows without parsing the JSON.
    """
    media = result.data.get("media") if isinstance(result.data, dict) else None
    if media:
        result = result._replace(data={k: v for k, v in result.data.items() if k != "media"})
    message: dict[str, Any] = {
        "role": "tool",
        "tool_call_id": call_id,
        "name": name,
        "content": capped(result.to_json()),
    }
    if not result.ok:
        message["is_error"] = True
    images = [m for m in media or () if _sendable_image(m)][:MAX_IMAGES]
    if images:
        # A provider that takes images sends them with the result; the others
        # send the text, whose note names each one (type and size).
        message["images"] = [{"mime": m["mime"], "data": m["data"]} for m in images]
    return message


#: At most this many images go back with one tool result, each at most this large (base64).
MAX_IMAGES = 4
MAX_IMAGE_CHARS = 7_000_000  # about 5 MB decoded: what both image APIs take
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _sendable_image(media: Any) -> bool:
    return (
        isinstance(media, dict)
        and media.get("type") == "image"
        and media.get("mime") in _IMAGE_TYPES
        and isinstance(media.get("data"), str)
        and 0 < len(media["data"]) <= MAX_IMAGE_CHARS
    )


def capped(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """``text``, or its head and tail with a note when longer than ``limit``."""
    if len(text) <= limit:
        return text
    head = limit * 4 // 5
    tail = limit - head
    note = (
        f"\n[... result truncated: {len(text) - limit} of {len(text)} characters left out; "
        "ask for less, e.g. a narrower pattern or a line range ...]\n"
    )
    return text[:head] + note + text[-tail:]
