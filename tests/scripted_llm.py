"""A scripted OpenAI-compatible chat server on loopback, standing in for an external model.

Tests set the next answers with POST /_script {"chunks": [...], "delay_s": 0.0, "stall_s": 0,
"die_after": -1} (and "keepalive": true to send SSE comments, never a token, while stalling or
delaying) and read what the server received with GET /_requests. Optional "rules": [{"model", "match",
"chunks"}] answer a request whose model equals `model` (when given) and whose messages contain
`match` with that rule's chunks instead (first rule that fits; else the default chunks).
"embed_delay_s" slows every embeddings request (a long index build); "die_after": N >= 0
drops the connection after N chunks (a model server dying mid-stream);
"stall_s" before the first chunk with a large value is a server that accepts and sends nothing.
Run: python -m tests.scripted_llm PORT

Tool calls (requests that offer `tools`), shaped as the OpenAI API shapes them, streamed
(`delta.tool_calls` pieces) or not (`message.tool_calls`), finish_reason "tool_calls":
- "tool_rounds": [[{"name": ..., "arguments": "<json text>"}, ...], ...] answers the next
  requests with tools in order, one round each; once used up the model says "READY";
- "tool_forever": {"name": ..., "arguments": ...} answers every such request (never stops);
- "tools_status": N answers them with HTTP N (a server that refuses the tools API).
Requests without `tools` get "chunks" as before. "embeddings_fail": N answers the next N
embedding requests with HTTP 500 (a tool whose search fails).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_SCRIPT: dict[str, Any] = {"chunks": ["Scripted answer [1]."], "delay_s": 0.0,
                                  "stall_s": 0.0, "status": 0, "die_after": -1,
                                  "tool_rounds": [], "tool_forever": None, "tools_status": 0,
                                  "embeddings_fail": 0}


class State:
    """The current script and the captured requests (shared by handler threads)."""

    lock = threading.Lock()
    script: dict[str, Any] = dict(DEFAULT_SCRIPT)
    requests: list[dict[str, Any]] = []
    calls = 0


def next_tool_calls(script: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls answering one request with tools (caller holds the lock)."""
    if script.get("tool_forever"):
        chosen = [script["tool_forever"]]
    elif State.script.get("tool_rounds"):
        chosen = State.script["tool_rounds"].pop(0)
    else:
        chosen = []
    out = []
    for call in chosen:
        State.calls += 1
        args = call.get("arguments", "{}")
        out.append({"id": f"call_{State.calls}", "type": "function", "function": {
            "name": call["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}})
    return out


def _chunks_for(script: dict[str, Any], body: dict[str, Any]) -> list[str]:
    """The chunks of the first rule matching this request's model and messages."""
    text = "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])
    for rule in script.get("rules") or ():
        if rule.get("model") not in (None, body.get("model")):
            continue
        if str(rule.get("match", "")) in text:
            return list(rule["chunks"])
    return list(script["chunks"])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate sends: without this, Nagle + delayed ACK
        # would add ~40 ms to every kept-alive request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _json(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def do_GET(self) -> None:
        if self.path.endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        elif self.path == "/_requests":
            with State.lock:
                self._json(200, State.requests)
        else:
            self._json(404, {"error": "unknown"})

    def do_POST(self) -> None:
        body = self._body()
        if self.path == "/_script":
            with State.lock:
                State.script = {**DEFAULT_SCRIPT, **body}
                State.script["tool_rounds"] = [list(r) for r in State.script["tool_rounds"] or []]
                State.requests = []
            self._json(200, {"ok": True})
            return
        if self.path.endswith("/embeddings"):
            with State.lock:
                State.requests.append({"headers": dict(self.headers), "body": body,
                                       "path": self.path})
                fail = State.script.get("embeddings_fail", 0) > 0
                if fail:
                    State.script["embeddings_fail"] -= 1
                delay = float(State.script.get("embed_delay_s") or 0)
            if fail:
                self._json(500, {"error": {"message": "scripted embeddings failure"}})
                return
            time.sleep(delay)
            # Deterministic unit vectors (instant by default: latency benchmarks), 384 dims.
            texts = body.get("input") or []
            texts = [texts] if isinstance(texts, str) else texts
            data = []
            for i, text in enumerate(texts):
                seed = sum(map(ord, str(text))) % 384
                vec = [0.0] * 384
                vec[seed] = 1.0
                data.append({"object": "embedding", "index": i, "embedding": vec})
            self._json(200, {"object": "list", "data": data, "model": "scripted",
                             "usage": {"prompt_tokens": 1, "total_tokens": 1}})
            return
        if self.path.endswith("/v1/completions"):
            self._completion(body)
            return
        if not self.path.endswith("/chat/completions"):
            self._json(404, {"error": "unknown"})
            return
        with State.lock:
            State.requests.append({"headers": dict(self.headers), "body": body})
            script = dict(State.script)
            tools = bool(body.get("tools"))
            calls = next_tool_calls(script) if tools and not script.get("tools_status") else []
        script["chunks"] = _chunks_for(script, body)
        if script.get("status"):
            self._json(int(script["status"]), {"error": {"message": "scripted failure"}})
            return
        if tools and script.get("tools_status"):
            self._json(int(script["tools_status"]), {"error": {
                "message": "tools are not supported by this chat format"}})
            return
        if tools:
            self._tool_answer(calls, bool(body.get("stream")))
            return
        if not body.get("stream"):
            self._json(200, {"id": "x", "object": "chat.completion", "model": "scripted",
                             "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                 "role": "assistant", "content": "".join(script["chunks"])}}]})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self._pause(float(script.get("stall_s") or 0), bool(script.get("keepalive")))
            for i, chunk in enumerate(script["chunks"]):
                if i == int(script.get("die_after", -1)):
                    # Dies: the peer sees the stream end with no finish_reason and no [DONE].
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self._event({"id": "x", "object": "chat.completion.chunk", "model": "scripted",
                             "choices": [{"index": 0, "delta": {"content": chunk},
                                          "finish_reason": None}]})
                if i + 1 < len(script["chunks"]):
                    self._pause(float(script.get("delay_s") or 0), bool(script.get("keepalive")))
            self._event({"id": "x", "object": "chat.completion.chunk", "model": "scripted",
                         "choices": [{"index": 0, "delta": {},
                                      "finish_reason": script.get("finish_reason") or "stop"}]})
            self._event({"id": "x", "object": "chat.completion.chunk", "model": "scripted",
                         "choices": [], "usage": {"prompt_tokens": 11,
                                                  "completion_tokens": len(script["chunks"]),
                                                  "total_tokens": 11 + len(script["chunks"])}})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _tool_answer(self, calls: list[dict[str, Any]], stream: bool) -> None:
        """A decision answer: tool calls, or "READY" when the script has none left."""
        finish = "tool_calls" if calls else "stop"
        content = None if calls else "READY"
        usage = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
        if not stream:
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                message["tool_calls"] = calls
            self._json(200, {"id": "x", "object": "chat.completion", "model": "scripted",
                             "choices": [{"index": 0, "finish_reason": finish,
                                          "message": message}], "usage": usage})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        chunk = {"id": "x", "object": "chat.completion.chunk", "model": "scripted"}
        if content:
            self._event({**chunk, "choices": [{"index": 0, "delta": {
                "role": "assistant", "content": content}, "finish_reason": None}]})
        for i, call in enumerate(calls):
            # Name first, then the arguments in two pieces, as the API streams them.
            args = call["function"]["arguments"]
            half = len(args) // 2
            for delta in ({"index": i, "id": call["id"], "type": "function",
                           "function": {"name": call["function"]["name"], "arguments": ""}},
                          {"index": i, "function": {"arguments": args[:half]}},
                          {"index": i, "function": {"arguments": args[half:]}}):
                self._event({**chunk, "choices": [{"index": 0, "delta": {"tool_calls": [delta]},
                                                   "finish_reason": None}]})
        self._event({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        self._event({**chunk, "choices": [], "usage": usage})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def _pause(self, seconds: float, keepalive: bool) -> None:
        """Wait; with keepalive, send an SSE comment every 0.3 s (bytes, but no token), as a
        hung upstream behind a chatty proxy does: a read timeout never fires."""
        end = time.monotonic() + seconds
        while keepalive and time.monotonic() < end:
            self.wfile.write(b": keep-alive\n\n")
            self.wfile.flush()
            time.sleep(0.3)
        time.sleep(max(0.0, end - time.monotonic()))

    def _completion(self, body: dict[str, Any]) -> None:
        """A text completion (streamed when asked), cut at the first stop string as servers
        do."""
        with State.lock:
            State.requests.append({"headers": dict(self.headers), "body": body,
                                   "path": self.path})
            script = dict(State.script)
        if script.get("status"):
            self._json(int(script["status"]), {"error": {"message": "scripted failure"}})
            return
        stops = body.get("stop") or []
        stops = [stops] if isinstance(stops, str) else stops
        if body.get("stream"):
            self._completion_stream(script, stops)
            return
        text = "".join(script["chunks"])
        for stop in stops:
            text = text.split(stop)[0]
        self._json(200, {"id": "x", "object": "text_completion", "model": "scripted",
                         "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 11, "completion_tokens": 3,
                                   "total_tokens": 14}})

    def _completion_stream(self, script: dict[str, Any], stops: list[str]) -> None:
        """A streamed text completion: the chunks `delay_s` apart (after `stall_s`), ended at
        the first stop string."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        head = {"id": "x", "object": "text_completion", "model": "scripted"}
        try:
            self._pause(float(script.get("stall_s") or 0), False)
            for i, chunk in enumerate(script["chunks"]):
                if i == int(script.get("die_after", -1)):
                    self.connection.shutdown(socket.SHUT_RDWR)  # dies mid-line
                    self.close_connection = True
                    return
                stop = next((s for s in stops if s in chunk), None)
                text = chunk.split(stop)[0] if stop else chunk
                self._event({**head, "choices": [{"index": 0, "text": text,
                                                  "finish_reason": None}]})
                if stop:
                    break
                if i + 1 < len(script["chunks"]):
                    self._pause(float(script.get("delay_s") or 0), False)
            self._event({**head, "choices": [{"index": 0, "text": "", "finish_reason": "stop"}]})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _event(self, obj: dict[str, Any]) -> None:
        self.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
        self.wfile.flush()


def main() -> None:
    """Serve on 127.0.0.1:PORT until killed."""
    port = int(sys.argv[1])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(f"scripted LLM on http://127.0.0.1:{port}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
