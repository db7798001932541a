"""A scripted model server for tests: real HTTP, OpenAI and Anthropic dialects, streamed or not.

It listens on 127.0.0.1 on a free port and answers, in order, the responses of
a *script*. It speaks

* OpenAI Chat Completions at ``POST /v1/chat/completions`` (and ``/chat/completions``),
* Anthropic Messages at ``POST /v1/messages``,

each with ``"stream": true`` (server-sent events, chunked) or without (one JSON
body), whichever the request asks for. Every request is recorded.

Use it as a context manager::

    from model_server import ModelServer

    with ModelServer([{"text": "Hello!"}]) as server:
        config = ProviderConfig(base_url=server.url)          # http://127.0.0.1:PORT/v1
        ...                                                   # or server.anthropic_url
        assert server.requests[0]["json"]["messages"][-1]["content"] == "hi"

or as the ``model_server`` pytest fixture (an empty, started server; add
entries with ``model_server.add(...)``)::

    pytest_plugins = ["model_server"]          # at the top of a test module

    def test_something(model_server):
        model_server.add({"text": "Hello!"})

End-to-end tests of the real ``agent`` executable point it at the server with
``--base-url server.url`` or ``AGENT_BASE_URL=server.url`` (``--provider
anthropic`` with ``server.anthropic_url``). No API key is needed: the server
ignores auth headers (but records them).

Script entries (plain dicts; the same format as the fake provider's YAML
script, plus test-only keys):

``{"text": "Hi", "tool_calls": [{"name": "exec", "arguments": {"command": "ls"}}]}``
    A model reply, rendered in the requested API's format and mode. Both keys
    are optional. A tool call may carry an ``id``; ``arguments`` may be a
    dict or a string sent verbatim (e.g. broken JSON). Streamed text goes out
    word by word; streamed OpenAI tool-call arguments are split across several
    deltas. Optional: ``usage: {input_tokens, output_tokens}`` (default: rough
    estimates), ``stop_reason`` (default: the API's word for "done" or "tool
    use"), ``interleave: True`` (OpenAI stream: send the argument pieces of
    several tool calls round-robin, to prove deltas are accumulated by index).
``{"status": 429, "headers": {"Retry-After": "0"}, "body": {...} or "text"}``
    A raw HTTP response; without ``body`` an error JSON in the API's shape.
``{"text": "partial answer", "cut_off": True}``
    Sends the first half of the answer, then closes the connection without the
    stream's terminator (``data: [DONE]`` / ``message_stop``) or the end of a
    chunked or Content-Length body.
``{"disconnect": True}``
    Closes the connection without any response.
``{"sse": [piece, ...], "gap": 0.05, "end": "done", "status": 200, "headers": {...}}``
    A byte-exact stream, whatever the request asked for: the status (default
    200) and headers (default ``Content-Type: text/event-stream``), then each
    piece (str or bytes, written as is) as one HTTP chunk, ``gap`` seconds
    apart (also before the first piece and before the end). Then ``end``:
    ``"done"`` (default) ends the chunked body properly; ``"close"`` hangs up
    without its last chunk (a broken body); ``"reset"`` resets the TCP
    connection. ``{"sse": [], "end": "reset", "gap": 0.2}`` is a reset right
    after the response headers, before any byte of the body. Build the pieces
    from the wire formats (see tests/test_providers_wire_e2e.py).
``"delay": 0.5`` (with any entry)
    Waits that many seconds before answering (for timeouts).
A callable ``(request_json) -> entry``
    Called with the request's JSON body when its turn comes, so the answer can
    depend on what the model was sent (e.g. echo a tool result back).
``"Hello"``
    A plain string is a text reply.

When the script runs out the server answers HTTP 400 with the message
"model_server: script exhausted after N responses", which a provider reports
as a one-line error. ``ModelServer(script, repeat=True)`` cycles instead.

Command line (for benchmarks and manual runs)::

    python tests/model_server.py SCRIPT.yaml [--port N] [--repeat]

SCRIPT.yaml is a YAML list of entries (or ``replies: [...]``). It prints the
two URLs and serves until killed.

PYTEST_DONT_REWRITE: this module has no asserts to rewrite, and the marker keeps
pytest quiet when a test module imports it before ``pytest_plugins`` loads it.
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Entry = dict | str | Callable[[dict], Any]


class ModelServer:
    """A scripted OpenAI + Anthropic model server on 127.0.0.1; see the module docstring."""

    def __init__(self, script: Iterable[Entry] = (), *, port: int = 0, repeat: bool = False):
        self.script: list[Entry] = list(script)
        self.repeat = repeat
        #: Every request: {"method", "path", "headers" (lower-case names), "json"}.
        self.requests: list[dict] = []
        self._port = port
        self._served = 0
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._stopped = threading.Event()  # ends the gaps of streams still being sent
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle -----------------------------------------------------------------

    def start(self) -> ModelServer:
        """Start serving in a background thread; returns self."""
        self._stopped.clear()
        handler = type("Handler", (_Handler,), {"model_server": self})
        self._httpd = _Server(("127.0.0.1", self._port), handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port."""
        self._stopped.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- addresses ------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port the server listens on."""
        if self._httpd is None:
            raise RuntimeError("the model server is not running")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """Base URL for OpenAI-style clients: ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        """Base URL for Anthropic clients (they append ``/v1/messages``)."""
        return f"http://127.0.0.1:{self.port}"

    # -- script ---------------------------------------------------------------------

    def add(self, *entries: Entry) -> ModelServer:
        """Append entries to the script; returns self."""
        with self._lock:
            self.script.extend(entries)
        return self

    @property
    def remaining(self) -> int:
        """How many scripted entries have not been served yet."""
        with self._lock:
            return len(self.script) - self._served

    def _next_entry(self, request_json: dict) -> Any:
        with self._lock:
            if self._served >= len(self.script):
                if not (self.repeat and self.script):
                    return {
                        "status": 400,
                        "message": f"model_server: script exhausted after {self._served} responses",
                    }
                self._served = 0
            entry = self.script[self._served]
            self._served += 1
        if callable(entry):
            try:
                entry = entry(request_json)
            except Exception as err:  # a broken test callback must show, not hang the client
                return {"status": 400, "message": f"model_server: script entry raised {err!r}"}
        return entry

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"


def unused_port() -> int:
    """A local port nothing listens on (for "connection refused" tests)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- the HTTP side ----------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a client holding a keep-alive socket must not block stop()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout tests, cut-offs) is expected, not a failure to print.
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked streams, like real servers
    server_version = "model_server/1"
    timeout = 30  # idle keep-alive connections end instead of lingering forever
    model_server: ModelServer

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without this, Nagle's
        # algorithm meets the client's delayed ACK and every answer takes 40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._send_json(404, {"error": {"message": f"no such endpoint: GET {self.path}"}})

    def do_POST(self) -> None:
        server = self.model_server
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0].rstrip("/")
        with server._lock:
            server.requests.append(
                {
                    "method": "POST",
                    "path": path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "json": body,
                }
            )
        if path in ("/v1/chat/completions", "/chat/completions"):
            api = "openai"
        elif path == "/v1/messages":
            api = "anthropic"
        else:
            return self._send_json(404, _error_body("openai", f"no such endpoint: {path}"))
        if not isinstance(body, dict):
            return self._send_json(400, _error_body(api, "the request body is not a JSON object"))
        entry = server._next_entry(body)
        if isinstance(entry, str):
            entry = {"text": entry}
        time.sleep(float(entry.get("delay", 0)))
        if entry.get("disconnect"):
            self.close_connection = True
            return None
        if "sse" in entry:
            return self._send_raw_stream(entry)
        if "status" in entry:
            return self._send_status(api, entry)
        stream = bool(body.get("stream"))
        render = _RENDERERS[api, stream]
        payload = render(entry, body, server)
        if stream:
            return self._send_events(payload, cut_off=bool(entry.get("cut_off")))
        return self._send_json(200, payload, cut_off=bool(entry.get("cut_off")))

    def _send_status(self, api: str, entry: dict) -> None:
        status = int(entry["status"])
        body = entry.get("body")
        if body is None:
            body = _error_body(api, entry.get("message") or f"scripted HTTP {status}")
        data = body if isinstance(body, str) else json.dumps(body)
        headers = {"Content-Type": "text/plain" if isinstance(body, str) else "application/json"}
        headers.update(entry.get("headers") or {})
        self._send_bytes(status, data.encode(), headers)

    def _send_json(self, status: int, payload: Any, cut_off: bool = False) -> None:
        data = json.dumps(payload).encode()
        if cut_off:
            # Promise the whole body, deliver half, hang up.
            self._send_bytes(status, data[: len(data) // 2], {"Content-Length": str(len(data))})
            self.close_connection = True
        else:
            self._send_bytes(status, data, {"Content-Type": "application/json"})

    def _send_bytes(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        headers = {"Content-Type": "application/json", "Content-Length": str(len(data))} | headers
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_raw_stream(self, entry: dict) -> None:
        stopped = self.model_server._stopped
        gap = float(entry.get("gap", 0))
        self.send_response(int(entry.get("status", 200)))
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        for name, value in (headers | (entry.get("headers") or {})).items():
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in entry["sse"]:
            if gap and stopped.wait(gap):
                self.close_connection = True
                return
            data = piece.encode() if isinstance(piece, str) else bytes(piece)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        if gap:
            stopped.wait(gap)
        end = entry.get("end", "done")
        if end == "reset":
            self._reset()
        elif end == "close":
            self.close_connection = True
        else:
            self.wfile.write(b"0\r\n\r\n")

    def _reset(self) -> None:
        """Abort the connection: the client reads a TCP reset, not an orderly close."""
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()  # its reference would keep the socket open past close()
        self.connection.close()

    def _send_events(self, events: list[str], cut_off: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if cut_off:
            # Half the events at most, never the terminator.
            events = events[: max(1, (len(events) - 1) // 2)]
        for event in events:
            data = event.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        if cut_off:
            self.close_connection = True  # no final zero-length chunk: the body is broken
            return
        self.wfile.write(b"0\r\n\r\n")


# -- rendering a scripted reply -----------------------------------------------------------


def _error_body(api: str, message: str) -> dict:
    if api == "anthropic":
        return {"type": "error", "error": {"type": "api_error", "message": message}}
    return {"error": {"message": message, "type": "api_error"}}


def _text_pieces(text: str) -> list[str]:
    """Word-sized deltas that join back to ``text`` exactly."""
    return re.findall(r"\S+\s*|\s+", text)


def _split(text: str, parts: int = 3) -> list[str]:
    """``text`` in up to ``parts`` nearly equal pieces."""
    if len(text) < parts:
        return [text] if text else []
    size = -(-len(text) // parts)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _calls(entry: dict, server: ModelServer, prefix: str) -> list[dict]:
    """The entry's tool calls with ids and argument text filled in."""
    calls = []
    for call in entry.get("tool_calls") or []:
        arguments = call.get("arguments", {})
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        calls.append(
            {
                "id": call.get("id") or server._new_id(prefix),
                "name": call["name"],
                "raw": raw,
                "object": arguments,
            }
        )
    return calls


def _usage(entry: dict, request: dict, calls: list[dict]) -> tuple[int, int]:
    figures = entry.get("usage") or {}
    produced = len(entry.get("text") or "") + sum(len(c["raw"]) for c in calls)
    estimated_in = max(1, len(json.dumps(request.get("messages", []))) // 4)
    return (
        int(figures.get("input_tokens", estimated_in)),
        int(figures.get("output_tokens", max(1, produced // 4))),
    )


def _openai_json(entry: dict, request: dict, server: ModelServer) -> dict:
    calls = _calls(entry, server, "call_")
    prompt, completion = _usage(entry, request, calls)
    message: dict[str, Any] = {"role": "assistant", "content": entry.get("text") or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["raw"]},
            }
            for c in calls
        ]
    return {
        "id": server._new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "model-server"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": entry.get("stop_reason") or ("tool_calls" if calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _openai_events(entry: dict, request: dict, server: ModelServer) -> list[str]:
    calls = _calls(entry, server, "call_")
    prompt, completion = _usage(entry, request, calls)
    chunk_id = server._new_id("chatcmpl-")

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": request.get("model", "model-server"),
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in _text_pieces(entry.get("text") or "")]
    heads, pieces = [], []
    for index, c in enumerate(calls):
        heads.append(
            [
                {
                    "index": index,
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": ""},
                }
            ]
        )
        pieces.append([[{"index": index, "function": {"arguments": p}}] for p in _split(c["raw"])])
    if entry.get("interleave"):
        chunks += [chunk({"tool_calls": h}) for h in heads]
        for row in itertools.zip_longest(*pieces):
            chunks += [chunk({"tool_calls": p}) for p in row if p is not None]
    else:
        for head, parts in zip(heads, pieces, strict=True):
            chunks += [chunk({"tool_calls": head})]
            chunks += [chunk({"tool_calls": p}) for p in parts]
    finish = entry.get("stop_reason") or ("tool_calls" if calls else "stop")
    chunks.append(chunk({}, finish))
    if (request.get("stream_options") or {}).get("include_usage"):
        # As OpenAI does: a last chunk with no choices, only the usage.
        figures = {"prompt_tokens": prompt, "completion_tokens": completion}
        figures["total_tokens"] = prompt + completion
        chunks.append(chunk({}) | {"choices": [], "usage": figures})
    return [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]


def _anthropic_json(entry: dict, request: dict, server: ModelServer) -> dict:
    calls = _calls(entry, server, "toolu_")
    input_tokens, output_tokens = _usage(entry, request, calls)
    content: list[dict] = []
    if entry.get("text"):
        content.append({"type": "text", "text": entry["text"]})
    # A string "arguments" goes out as-is so clients are tested against a bad input.
    content += [
        {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["object"]} for c in calls
    ]
    return {
        "id": server._new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "model-server"),
        "content": content,
        "stop_reason": entry.get("stop_reason") or ("tool_use" if calls else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def _anthropic_events(entry: dict, request: dict, server: ModelServer) -> list[str]:
    calls = _calls(entry, server, "toolu_")
    input_tokens, output_tokens = _usage(entry, request, calls)
    events: list[tuple[str, dict]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": server._new_id("msg_"),
                    "type": "message",
                    "role": "assistant",
                    "model": request.get("model", "model-server"),
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": input_tokens, "output_tokens": 1},
                },
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    index = 0
    if entry.get("text"):
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        events += [
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": p},
                },
            )
            for p in _text_pieces(entry["text"])
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    for c in calls:
        block = {"type": "tool_use", "id": c["id"], "name": c["name"], "input": {}}
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        )
        events += [
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": p},
                },
            )
            for p in _split(c["raw"])
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": entry.get("stop_reason")
                    or ("tool_use" if calls else "end_turn"),
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events]


_RENDERERS = {
    ("openai", False): _openai_json,
    ("openai", True): _openai_events,
    ("anthropic", False): _anthropic_json,
    ("anthropic", True): _anthropic_events,
}


# -- fixture and command line -------------------------------------------------------------

try:
    import pytest
except ImportError:  # the command line works without pytest
    pytest = None

if pytest is not None:

    @pytest.fixture
    def model_server():
        """A started :class:`ModelServer` with an empty script, stopped after the test."""
        with ModelServer() as server:
            yield server


def main(argv: list[str] | None = None) -> int:
    """``python tests/model_server.py SCRIPT.yaml [--port N] [--repeat]``."""
    import argparse

    import yaml

    parser = argparse.ArgumentParser(description="Serve a scripted model over HTTP.")
    parser.add_argument("script", help="YAML list of script entries (or `replies: [...]`)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--repeat", action="store_true", help="start over when the script ends")
    args = parser.parse_args(argv)
    with open(args.script, encoding="utf-8") as handle:
        script = yaml.safe_load(handle)
    if isinstance(script, dict) and "replies" in script:
        script = script["replies"]
    if not isinstance(script, list):
        parser.error(f"{args.script}: expected a YAML list of entries")
    server = ModelServer(script, port=args.port, repeat=args.repeat).start()
    print(f"openai:    {server.url}", flush=True)
    print(f"anthropic: {server.anthropic_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
