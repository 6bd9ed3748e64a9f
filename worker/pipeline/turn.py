"""One answer turn: language -> retrieve -> prompt -> generate (streamed) -> checks -> done."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg

from shared.config import Settings
from shared.errors import AssistantError
from worker.emit import TurnEmitter
from worker.pipeline.checks import check_citations
from worker.pipeline.generate import stream_answer
from worker.pipeline.language import detect_language
from worker.pipeline.prompt import build_messages
from worker.pipeline.retrieve import retrieve
from worker.pipeline.types import Retrieval, TurnRequest

EXCERPT_CHARS = 400


def sources_of(retrieval: Retrieval) -> list[dict[str, Any]]:
    """The source list of the done frame, numbered as the model saw the passages."""
    out = []
    for n, p in enumerate(retrieval.passages, start=1):
        excerpt = p.text if len(p.text) <= EXCERPT_CHARS else p.text[:EXCERPT_CHARS] + "…"
        out.append({"n": n, "title": p.title, "section": p.section, "excerpt": excerpt,
                    "score": p.score, "source": p.source, "local": p.local})
    return out


def run_turn(req: TurnRequest, settings: Settings, connect: Callable[[], psycopg.Connection],
             emit: TurnEmitter) -> None:
    """Run the steps and end with exactly one terminal frame (done or error)."""
    try:
        _run(req, settings, connect, emit)
    except AssistantError as exc:
        emit.error(exc.code, exc.public_message)


def _run(req: TurnRequest, settings: Settings, connect: Callable[[], psycopg.Connection],
         emit: TurnEmitter) -> None:
    with emit.step("language") as d:
        lang = detect_language(req.message)
        d["language"] = lang
    with emit.step("retrieve") as d, connect() as conn:
        retrieval = retrieve(conn, settings, req.message)
        d["passages"] = len(retrieval.passages)
        d["index"] = retrieval.index_version
    with emit.step("prompt"):
        messages = build_messages(req.message, req.history, retrieval, lang)
    first: list[float] = []

    def on_token(text: str) -> None:
        if not first:
            first.append(time.monotonic())
            emit.mark("first_token")
        emit.token(text)

    with emit.step("generate") as d:
        gen = stream_answer(settings.answer, settings, messages, on_token, emit.started)
        d["model"] = gen.model
    with emit.step("checks") as d:
        citations = check_citations(gen.text, len(retrieval.passages))
        d["citations_valid"] = citations.valid
    total_ms = round((time.monotonic() - emit.started) * 1000, 1)
    emit.done(
        answer=gen.text,
        sources=sources_of(retrieval),
        checks={"citations": {"valid": citations.valid, "cited": list(citations.cited),
                              "invalid": list(citations.invalid)}},
        usage={"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
               "model": gen.model},
        timing={"total_ms": total_ms,
                "first_token_ms": round((first[0] - emit.started) * 1000, 1) if first else None,
                "steps": emit.steps},
        index=retrieval.index_version,
        language=lang,
    )
