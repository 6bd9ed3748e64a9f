"""One answer turn in process, in milliseconds: run_turn with its frames in a list, fixture
passages for the search and a scripted model behind the OpenAI client's own transport
(httpx2.MockTransport), so no server, Redis, PostgreSQL or Celery is started.

    result = harness.turn("How does the search work?", chunks=["Hybrid [1]."])
    result.done["checks"]["citations"]["valid"]; result.model.requests; result.trace

What it is for: what the worker decides (the prompt, the checks, the done frame, the steps).
The relay, resume, limits and faults between processes stay full-stack tests (conftest.py).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import httpx2

from shared import models
from shared.config import Settings, settings_from_env
from shared.frames import Frame, TurnClosed
from shared.passage import Passage
from shared.traces import Trace
from shared.turn_request import Message, ProjectBlock, TurnRequest
from worker.emit import TurnEmitter
from worker.pipeline.turn import TurnDeps, run_turn
from worker.pipeline.types import Retrieval

TURN = "turn-harness-0001"
INDEX = "v-harness"
# The scripted model's roles: any name that is not the bundled model, so `auto` means prose.
ENV = {
    "ASSISTANT_PROFILE": "test",
    "ASSISTANT_ANSWER_LLM_MODEL": "scripted",
    "ASSISTANT_LLM_MODEL": "scripted",
    "ASSISTANT_ANSWER_LLM_BASE_URL": "http://scripted.invalid/v1",
    "ASSISTANT_LLM_BASE_URL": "http://scripted.invalid/v1",
    "ASSISTANT_TRANSLATOR_BASE_URL": "http://scripted.invalid/v1",
    "ASSISTANT_EMBEDDING_BASE_URL": "http://scripted.invalid/v1",
}


def passage(n: int, text: str, source: str = "docs/how-it-works.md", lang: str = "en",
            score: float = 0.03) -> Passage:
    """A fixture passage (score: a fused score that is no weak match in hybrid mode)."""
    return Passage(f"p{n}", source, f"Title {n}", f"# Section {n}", lang, text, text, True, score)


PASSAGES = (
    passage(1, "The search is hybrid: BM25 ranks the words, vectors rank the meaning, and "
               "reciprocal rank fusion joins the two lists."),
    passage(2, "Each answer cites the passages it used with [n] markers; a marker that points "
               "at no passage is flagged."),
    passage(3, "The maximum error of the BeCoMe estimate is 2.2 for 13 experts."),
)


class ListLog:
    """The frame log of one turn in a list: numbered from the web tier's `accepted` (seq 0),
    closed after the terminal frame, each frame round-tripped through JSON, as
    shared.frames.FrameLog is."""

    def __init__(self, turn: str = TURN) -> None:
        self.turn = turn
        self.frames: list[dict[str, Any]] = [{"seq": 0, "type": "accepted", "turn": turn}]

    def append(self, frame: dict[str, Any], seq_if_lost: int | None = None,
               expect: int | None = None) -> int:
        """Number and keep a frame; TurnClosed after a terminal one (`expect`: the seq the
        caller expects it to get, checked)."""
        if self.frames[-1]["type"] in ("done", "error"):
            raise TurnClosed(self.turn)
        seq = self.frames[-1]["seq"] + 1
        assert expect is None or expect == seq, (expect, seq)
        self.frames.append(json.loads(json.dumps({**frame, "seq": seq}, ensure_ascii=False)))
        return seq

    def last(self) -> Frame:
        """The newest frame, as FrameLog.last gives it."""
        newest = self.frames[-1]
        return Frame(newest["seq"], newest["type"], json.dumps(newest, ensure_ascii=False))

    def of(self, kind: str) -> list[dict[str, Any]]:
        """The frames of one type, in order."""
        return [f for f in self.frames if f["type"] == kind]


@dataclass
class ScriptedModel:
    """An OpenAI-compatible chat model answering from a script, in process (the rules of
    tests/scripted_llm.py: `rules` [{"model", "match", "chunks"}] before `chunks`)."""

    chunks: list[str] = field(default_factory=lambda: ["Scripted answer [1]."])
    rules: list[dict[str, Any]] = field(default_factory=list)
    status: int = 0  # answer every model call with this HTTP status
    finish_reason: str = "stop"
    die_after: int = -1  # end the stream after this many chunks, with no finish_reason
    requests: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def streamed(self) -> list[dict[str, Any]]:
        """The bodies of the streamed chat calls (the answer), in order."""
        return [r for r in self.bodies("/chat/completions") if r.get("stream")]

    def bodies(self, path_end: str) -> list[dict[str, Any]]:
        """The request bodies sent to a path ending so, in order."""
        return [r["body"] for r in self.requests if r["path"].endswith(path_end)]

    def transport(self) -> httpx2.MockTransport:
        """The transport the OpenAI clients are given (shared.models.route_models)."""
        return httpx2.MockTransport(self._handle)

    def _chunks_for(self, body: dict[str, Any]) -> list[str]:
        text = "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])
        for rule in self.rules:
            if rule.get("model") in (None, body.get("model")) and rule.get("match", "") in text:
                return list(rule["chunks"])
        return list(self.chunks)

    def _handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content or b"{}")
        path = request.url.path
        with self._lock:
            self.requests.append({"path": path, "body": body,
                                  "authorization": request.headers.get("authorization")})
        if self.status:
            return httpx2.Response(self.status, json={"error": {"message": "scripted failure"}})
        if path.endswith("/completions") and not path.endswith("/chat/completions"):
            text = "".join(self.chunks)
            stops = body.get("stop") or []
            for stop in [stops] if isinstance(stops, str) else stops:
                text = text.split(stop)[0]
            if body.get("stream"):
                head = {"id": "x", "object": "text_completion", "model": body.get("model")}
                return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                                      content=_event({**head, "choices": [{
                                          "index": 0, "text": text, "finish_reason": "stop"}]})
                                      + b"data: [DONE]\n\n")
            return httpx2.Response(200, json={
                "id": "x", "object": "text_completion", "model": body.get("model"),
                "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}})
        if not path.endswith("/chat/completions"):
            return httpx2.Response(404, json={"error": {"message": "not scripted"}})
        chunks = self._chunks_for(body)
        if not body.get("stream"):
            return httpx2.Response(200, json={
                "id": "x", "object": "chat.completion", "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": "".join(chunks)}}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}})
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                              content=self._stream(chunks, str(body.get("model"))))

    def _stream(self, chunks: list[str], model: str) -> bytes:
        head = {"id": "x", "object": "chat.completion.chunk", "model": model}
        events = []
        for i, chunk in enumerate(chunks):
            if i == self.die_after:
                return b"".join(events)  # the server died: no finish_reason, no [DONE]
            events.append(_event({**head, "choices": [{"index": 0, "delta": {"content": chunk},
                                                       "finish_reason": None}]}))
        events.append(_event({**head, "choices": [{"index": 0, "delta": {},
                                                   "finish_reason": self.finish_reason}]}))
        events.append(_event({**head, "choices": [], "usage": {
            "prompt_tokens": 11, "completion_tokens": len(chunks),
            "total_tokens": 11 + len(chunks)}}))
        return b"".join(events) + b"data: [DONE]\n\n"


def _event(obj: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


@contextmanager
def routed(model: ScriptedModel) -> Iterator[ScriptedModel]:
    """Every model call of this process goes to `model` while the block runs."""
    models.route_models(model.transport())
    try:
        yield model
    finally:
        models.route_models(None)


def settings(**overrides: Any) -> Settings:
    """The harness's Settings: the test profile with the scripted roles, then `overrides`
    (Settings field names, e.g. show_sources=False)."""
    return dataclasses.replace(settings_from_env(ENV), **overrides)


@dataclass
class Result:
    """What one harness turn left: its frames, its trace and the model's requests."""

    log: ListLog
    trace: Trace
    model: ScriptedModel
    searches: list[str]

    @property
    def frames(self) -> list[dict[str, Any]]:
        """Every frame, from the web tier's `accepted` (seq 0) on."""
        return self.log.frames

    @property
    def last(self) -> dict[str, Any]:
        """The terminal frame."""
        return self.log.frames[-1]

    @property
    def done(self) -> dict[str, Any]:
        """The done frame (fails when the turn ended otherwise)."""
        assert self.last["type"] == "done", self.last
        return self.last

    @property
    def tokens(self) -> str:
        """The streamed answer, token frames joined."""
        return "".join(f["text"] for f in self.log.of("token"))

    @property
    def steps(self) -> list[str]:
        """The event frames' step names, in order."""
        return [f["step"] for f in self.log.of("event")]

    @property
    def prompt(self) -> list[dict[str, str]]:
        """The messages of the (last) streamed answer call."""
        return list(self.model.streamed[-1]["messages"])


def request(message: str, language: str = "en", history: Sequence[tuple[str, str]] = (),
            project: ProjectBlock | None = None, mode: str = "workflow",
            turn: str = TURN) -> TurnRequest:
    """A TurnRequest as the web tier stores it (history as (role, content) pairs)."""
    return TurnRequest(turn, "user-hash", message, language, mode,
                       history=tuple(Message(r, c) for r, c in history), project=project)


def turn(message: str, *, chunks: Sequence[str] | None = None,
         passages: Sequence[Passage] = PASSAGES, language: str = "en",
         history: Sequence[tuple[str, str]] = (), project: ProjectBlock | None = None,
         model: ScriptedModel | None = None, emitter: type[TurnEmitter] = TurnEmitter,
         **overrides: Any) -> Result:
    """Run one workflow turn in process and return what it left (see the module docstring);
    `overrides` are Settings fields."""
    model = model or ScriptedModel()
    if chunks is not None:
        model.chunks = list(chunks)
    searches: list[str] = []

    def search(conn: Any, s: Settings, query: str, **kw: Any) -> Retrieval:
        searches.append(query)
        config = kw.get("config")
        top_k = config.top_k if config is not None else s.top_k
        return Retrieval(tuple(passages[:top_k]), INDEX, query)

    req = request(message, language, history, project)
    log = ListLog(req.turn)
    trace = Trace(turn=req.turn, user_hash=req.user)
    deps = TurnDeps(settings(**overrides), lambda: nullcontext(), search=search)
    with routed(model):
        run_turn(req, deps, emitter(log), trace)
    return Result(log, trace, model, searches)
