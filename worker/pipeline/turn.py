"""One answer turn, steps in a fixed order (docs/spec/behaviour.md B-3): language -> rewrite ->
translate -> retrieve -> (optional) rerank -> project context -> prompt -> generate (streamed)
-> checks -> done.

A bug in any step (an exception that is no AssistantError) ends the turn at once with one
plain error frame, logged with the turn id, the step and the exception's type, never its text;
the attempt does not die, so the web tier never re-runs it. A bug inside the checks keeps the
streamed answer: the done frame is sent and that check reads UNAVAILABLE.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import psycopg

from shared.checks import ALWAYS as ALWAYS_CHECKS
from shared.checks import unavailable
from shared.config import Settings
from shared.errors import AssistantError, ModelError, TimedOut
from shared.frame_types import Done
from shared.frames import TurnClosed
from shared.language import detect_language
from shared.traces import Trace
from shared.turn_request import ProjectBlock, TurnRequest
from worker.emit import TurnEmitter
from worker.pipeline.agent import (
    ToolsUnsupported,
    choose_mode,
    gather,
    hybrid_summary,
    trace_steps,
)
from worker.pipeline.checks import CheckInput, run_all
from worker.pipeline.echo import split_project
from worker.pipeline.generate import Cancelled, stream_answer
from worker.pipeline.markers import MarkerStripper, strip_markers
from worker.pipeline.prompt import build_messages, trim_history
from worker.pipeline.quote_turn import QUOTE_PASSAGES, write_quotes
from worker.pipeline.rerank import CANDIDATES, rerank
from worker.pipeline.retrieve import RetrievalConfig, retrieve
from worker.pipeline.rewrite import (
    carry_followup,
    last_answer,
    looks_like_followup,
    rewrite_followup,
    translate_fewshot_by,
    translate_for_search,
)
from worker.pipeline.source_links import link_for, one_per_section, presented
from worker.pipeline.structured import AnswerFieldStream, response_format, verify
from worker.pipeline.types import Retrieval
from worker.pipeline.weak import all_weak, is_weak

EXCERPT_CHARS = 400
log = logging.getLogger(__name__)
Connect = Callable[[], AbstractContextManager[psycopg.Connection]]
# retrieve()'s signature: (connection, settings, query, original=, config=, language=).
Search = Callable[..., Retrieval]


@dataclass(frozen=True)
class TurnDeps:
    """What a turn needs from outside: settings, the corpus, cancel, and the search over the
    corpus (retrieve; a test's fixture passages in tests/harness.py)."""

    settings: Settings
    connect: Connect
    cancelled: threading.Event = field(default_factory=threading.Event)
    search: Search = retrieve


def sources_of(retrieval: Retrieval, manifest: str = "", mode: str = "hybrid",
               language: str = "en") -> list[dict[str, Any]]:
    """The source list of the done frame, numbered as the model saw the passages."""
    out = []
    for n, p in enumerate(retrieval.passages, start=1):
        excerpt = p.text if len(p.text) <= EXCERPT_CHARS else p.text[:EXCERPT_CHARS] + "…"
        # A locale key is shown by its text (its path stays in "key"); the link opens the
        # original at the passage's lines where the host has line anchors.
        out.append({"n": n, **presented(manifest, p, language), "excerpt": excerpt,
                    "score": p.score, "source": p.source, "local": p.local,
                    # Which search gave the score (docs/spec/behaviour.md B-15: scores of two
                    # strategies differ in kind and are not compared).
                    "strategy": mode,
                    "url": link_for(manifest, p),
                    # A match too weak to be support: shown labelled, never as a plain source.
                    "weak": is_weak(p.score, language, mode),
                    # The optional rerank's score (docs/spec/behaviour.md B-15): 2 answers, 1
                    # related; its own scale.
                    **({"rerank": p.rerank} if p.rerank is not None else {})})
    return out


def run_turn(req: TurnRequest, deps: TurnDeps, emit: TurnEmitter, trace: Trace) -> None:
    """Run the steps and end with exactly one terminal frame (done or error)."""
    try:
        _run(req, deps, emit, trace)
    except AssistantError as exc:
        trace.outcome = "cancelled" if isinstance(exc, Cancelled) else "error"
        trace.error_code = exc.code
        emit.error(exc.code, exc.public_message)
    except TurnClosed:
        raise  # the turn has ended without this attempt: nobody to answer (worker/tasks.py)
    except Exception as exc:  # noqa: BLE001 - a bug in any step still ends the turn plainly
        _log_bug(emit, exc)
        trace.outcome, trace.error_code = "error", AssistantError.code
        emit.error(AssistantError.code, AssistantError.public_message)
    finally:
        trace.steps = trace_steps(emit.steps, deps.settings.trace_text)


def _run(req: TurnRequest, deps: TurnDeps, emit: TurnEmitter, trace: Trace) -> None:
    s = deps.settings
    first_token_deadline = emit.started + s.first_token_timeout_s
    # Detected once, by the web tier (its limits count per language too): read, not redone.
    lang = req.language
    with emit.step("language") as d:
        d["language"] = trace.language = lang
    query = req.message
    quotes = s.effective_answer_form == "quotes"
    if s.rewrite_followups and looks_like_followup(req.message, req.history, lang):
        with emit.step("rewrite") as d:
            if quotes:
                # The quotes form runs where the chat model is the bundled tiny one, which
                # would not rewrite a follow-up faithfully: the earlier question is searched
                # with it instead (docs/spec/behaviour.md B-14).
                query = carry_followup(req.message, req.history, lang)
                d["carried"] = True
            else:
                query = rewrite_followup(s.translation, req.message, req.history)
                trace.models["rewrite"] = s.translation.model
    search = query
    if s.translates and lang == "cs":
        with emit.step("translate"):
            search = translate_for_search(s.translation, query)
            trace.models["translation"] = s.translation.model
    elif s.fewshot_translates and lang == "cs":
        with emit.step("translate") as d:
            try:
                line = translate_fewshot_by(s.translator, query, s.translate_deadline_s)
                trace.models["translation"] = s.translator.model
                if line.cut:
                    d["cut"] = True  # a busy translator costs the turn at most the deadline
                if line.usable:
                    search = line.text
                else:
                    d["fallback"] = "original"
            except ModelError:
                # The translation only helps the search: without it, search the original.
                d["fallback"] = "original"
    mode, mode_note = choose_mode(req, s)
    if quotes and mode != "workflow":
        mode, mode_note = "workflow", f"{mode} mode needs a chat model; answered in quotes."
    if mode != "workflow":
        mode_note = _run_tools(req, deps, emit, trace, lang, search, query, mode,
                               first_token_deadline)
        if mode_note is None:
            return
    _check_time(first_token_deadline, deps)
    with emit.step("retrieve") as d, deps.connect() as conn:
        config = RetrievalConfig.from_settings(s)
        if quotes:
            config = dataclasses.replace(config, top_k=max(config.top_k, QUOTE_PASSAGES))
        top_k = config.top_k
        retrieval = deps.search(conn, s, search, original=query, config=_widened(s, config),
                                language=lang)
        d["passages"] = len(retrieval.passages)
        d["index"] = trace.index_version = retrieval.index_version
    if s.rerank and retrieval.passages:
        retrieval = _rerank(s, emit, trace, query, retrieval, top_k)
        _check_time(first_token_deadline, deps)
    trace.source_ids = [p.id for p in retrieval.passages]
    trace.models["embeddings"] = s.embeddings.model
    if s.effective_answer_form != "quotes":
        # One numbered passage per section (its pieces joined in reading order), so a section
        # is cited and listed once; the quotes form numbers its quoted sections the same way
        # (quote_answer.compose). Not in the tool modes: their passages keep the numbers the
        # model saw in the tool results.
        retrieval = dataclasses.replace(retrieval,
                                        passages=one_per_section(retrieval.passages))
    if req.project is not None:
        # Read by the web tier with the user's own access before the turn was enqueued.
        with emit.step("project") as d:
            d["read_ms"] = req.project.read_ms
    _finish(req, deps, emit, trace, lang, retrieval, req.project, first_token_deadline,
            {"mode": "workflow", **({"mode_note": mode_note} if mode_note else {})}, query)


def _widened(s: Settings, config: RetrievalConfig) -> RetrievalConfig:
    """The search's config with room for the rerank's candidates when the rerank is on."""
    return dataclasses.replace(config, top_k=max(config.top_k, CANDIDATES)) if s.rerank \
        else config


def _rerank(s: Settings, emit: TurnEmitter, trace: Trace, question: str,
            retrieval: Retrieval, top_k: int) -> Retrieval:
    """The optional rerank step (docs/spec/behaviour.md B-15): the passages the translation role
    scores related or better; when it fails, the search's own first `top_k` (the rerank only
    helps)."""
    with emit.step("rerank") as d:
        d["candidates"] = min(len(retrieval.passages), CANDIDATES)
        try:
            kept = rerank(s.translation, question, retrieval.passages)
        except ModelError:
            d["fallback"] = "search order"
            return dataclasses.replace(retrieval, passages=retrieval.passages[:top_k])
        trace.models["rerank"] = s.translation.model
        d["kept"] = len(kept)
        return dataclasses.replace(retrieval, passages=kept)


def _finish(req: TurnRequest, deps: TurnDeps, emit: TurnEmitter, trace: Trace, lang: str,
            retrieval: Retrieval, project: ProjectBlock | None, first_token_deadline: float,
            extra: dict[str, Any], asked: str | None = None) -> None:
    """Prompt, the streamed answer, checks and the done frame: the same in every mode
    (`asked`: the question as searched, a follow-up with what it leans on)."""
    s = deps.settings
    _check_time(first_token_deadline, deps)
    if s.effective_answer_form == "quotes":
        _finish_quotes(req, deps, emit, trace, lang, retrieval, project, extra,
                       asked or req.message)
        return
    structured = s.effective_answer_form == "structured"
    with emit.step("prompt"):
        messages = build_messages(req.message, req.history, retrieval, lang,
                                  project.text if project else None, structured,
                                  weak=all_weak(retrieval, lang, s.retrieval_mode))
    answer = _generate(req, deps, emit, trace, messages, first_token_deadline, structured)
    form: dict[str, Any] = {}
    if structured:
        result = verify(answer.raw, answer.text, retrieval)
        answer = _Answer(result.answer, answer.first_token_ms, answer.raw, answer.cut)
        form = {"structured": {
            # cut: the output-token cap ended the JSON before it closed (valid_json is then
            # False, and the answer is what was streamed).
            "valid_json": result.valid_json, "cut": answer.cut, "outcome": result.outcome,
            "clarifying_question": result.clarifying_question,
            "quotes": list(result.quotes), "sources": list(result.sources)}}
    _conclude(req, deps, emit, trace, lang, retrieval, project, answer, form, extra,
              result.quotes if structured else None,
              result.sources if structured else None)


def _finish_quotes(req: TurnRequest, deps: TurnDeps, emit: TurnEmitter, trace: Trace,
                   lang: str, retrieval: Retrieval, project: ProjectBlock | None,
                   extra: dict[str, Any], question: str) -> None:
    """The quotes form: the documentation's own words chosen in code, streamed at once."""
    s = deps.settings
    asked = [question] + ([retrieval.query] if retrieval.query != question else [])
    # A follow-up carried with its earlier question finds that question's passages again:
    # the last answer is not given again word for word (quotes.choose).
    earlier = last_answer(req.history) if question != req.message else ""
    with emit.step("quotes") as d, deps.connect() as conn:
        said = write_quotes(conn, s, asked, retrieval, lang, project, req.message, earlier)
        d["quotes"] = len(said.answer.quotes)
        d["outcome"] = said.answer.outcome
    trace.models["answer"] = "quotes (written in code, no model)"
    trace.usage = {"prompt_tokens": 0, "completion_tokens": 0, "model": None}
    emit.mark("first_token")
    first_ms = round((time.monotonic() - emit.started) * 1000, 1)
    # Paragraph by paragraph, as a model's tokens would come: the client renders as it goes.
    paragraphs = said.answer.text.split("\n\n")
    for i, part in enumerate(paragraphs):
        piece = part + ("\n\n" if i < len(paragraphs) - 1 else "")
        emit.token(piece if s.show_sources else strip_markers(piece))
    _conclude(req, deps, emit, trace, lang, said.retrieval, project,
              _Answer(said.answer.text, first_ms), {"structured": said.structured}, extra,
              said.answer.quotes, said.structured["sources"], said.answer.named)


def _conclude(req: TurnRequest, deps: TurnDeps, emit: TurnEmitter, trace: Trace, lang: str,
              retrieval: Retrieval, project: ProjectBlock | None, answer: _Answer,
              form: dict[str, Any], extra: dict[str, Any],
              quotes: Sequence[dict[str, Any]] | None = None,
              paths: Sequence[dict[str, Any]] | None = None,
              named: Sequence[str] = ()) -> None:
    """Checks and the done frame, the same for every form: `retrieval` holds the passages the
    answer's [n] point at; `quotes` and `paths` the verdicts on its quotes and source paths;
    `named` the section names an "I don't know" written in code offers (see run_checks)."""
    s = deps.settings
    try:
        with emit.step("checks") as d:
            checks = run_checks(answer.text, retrieval, req, project, s.show_sources,
                                s.effective_answer_form == "quotes", quotes, paths, named)
            d.update({f"{name}_valid": checks[name]["valid"] for name in ALWAYS_CHECKS})
    except TurnClosed:
        raise
    except Exception as exc:  # noqa: BLE001 - the answer has streamed: keep it, flag the checks
        _log_bug(emit, exc)
        checks = {name: unavailable() for name in ALWAYS_CHECKS}
    trace.checks = checks
    checks = {k: {kk: vv for kk, vv in v.items() if kk != "recorded"} for k, v in checks.items()}
    if not s.show_sources:
        form = _sourceless(form)
    trace.outcome = "done"
    shown = answer.text if s.show_sources else strip_markers(answer.text)
    if s.trace_text:
        trace.message, trace.answer = req.message, answer.text
    # Checked in code: the panel notes an answer written in another language.
    answer_lang = detect_language(answer.text)
    emit.done(Done(
        answer=shown,
        sources=sources_of(retrieval, s.corpus_manifest, s.retrieval_mode, lang)
        if s.show_sources else [],
        checks=checks,
        usage=trace.usage,
        timing={"total_ms": round((time.monotonic() - emit.started) * 1000, 1),
                "first_token_ms": answer.first_token_ms, "steps": emit.steps},
        index=retrieval.index_version,
        language=lang,
        answer_language=answer_lang,
        language_differs=answer_lang != lang and {answer_lang, lang} <= {"cs", "en"},
        answer_form=s.effective_answer_form,
        # Every model call is at temperature 0 (generate.py): the same question and sources give
        # the same answer, and the panel says so under a regenerated one.
        deterministic=True,
        **form,
        **extra,
    ))


# What names a source in a structured block's quote (docs/spec/behaviour.md B-30: sources off); a
# nearest section keeps its title and heading, which the "I don't know" itself offers to ask about.
QUOTE_SOURCE_KEYS = frozenset({"n", "source", "section", "group", "url"})
NEAREST_SOURCE_KEYS = frozenset({"n", "source", "url"})


def _sourceless(form: dict[str, Any]) -> dict[str, Any]:
    """The form's structured block naming no source: an empty source list, its quotes and
    nearest sections without their numbers and paths (docs/spec/behaviour.md B-30)."""
    block = form.get("structured")
    if not block:
        return form

    def bare(items: Any, keys: frozenset[str]) -> list[Any]:
        return [{k: v for k, v in x.items() if k not in keys} if isinstance(x, dict) else x
                for x in items or []]

    return {**form, "structured": {
        **block, "sources": [], "quotes": bare(block.get("quotes"), QUOTE_SOURCE_KEYS),
        **({"nearest": bare(block["nearest"], NEAREST_SOURCE_KEYS)} if "nearest" in block
           else {})}}


@dataclass(frozen=True)
class _Answer:
    text: str
    first_token_ms: float | None
    raw: str = ""
    cut: bool = False


def _generate(req: TurnRequest, deps: TurnDeps, emit: TurnEmitter, trace: Trace,
              messages: list[dict[str, str]], first_token_deadline: float,
              structured: bool = False) -> _Answer:
    s = deps.settings
    stripper = None if s.show_sources else MarkerStripper()
    extractor = AnswerFieldStream() if structured else None
    first: list[float] = []
    parts: list[str] = []
    shown: list[str] = []

    def on_token(text: str) -> None:
        if deps.cancelled.is_set():
            raise Cancelled("client cancelled")
        if not first:
            first.append(time.monotonic())
            emit.mark("first_token")
        parts.append(text)
        piece = extractor.feed(text) if extractor else text
        shown.append(piece)
        out = stripper.feed(piece) if stripper else piece
        if out:
            emit.token(out)

    trace.models["answer"] = s.answer.model
    try:
        with emit.step("generate") as d:
            gen = stream_answer(s.answer, s, messages, on_token,
                                first_token_deadline=first_token_deadline,
                                deadline=emit.started + s.answer_timeout_s,
                                response_format=response_format(s.answer) if structured
                                else None)
            d["model"] = gen.model
    finally:
        # Kept even when the stream fails after its first token (docs/spec/behaviour.md B-5): its
        # length always, its text only where text traces are on (the done frame's path overwrites
        # both).
        trace.partial_answer_chars = sum(len(p) for p in parts)
        if s.trace_text and parts:
            trace.message, trace.answer = req.message, "".join(shown)
    if stripper:
        rest = stripper.flush()
        if rest:
            emit.token(rest)
    trace.usage = {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
                   "model": gen.model}
    first_ms = round((first[0] - emit.started) * 1000, 1) if first else None
    return _Answer("".join(shown), first_ms, gen.text, gen.cut)


def _run_tools(req: TurnRequest, deps: TurnDeps, emit: TurnEmitter, trace: Trace, lang: str,
               search: str, query: str, mode: str, first_token_deadline: float) -> str | None:
    """An agent or hybrid turn (docs/spec/behaviour.md B-20); returns the reason when it must fall
    back to workflow."""
    s = deps.settings
    seed = None
    summary = None
    _check_time(first_token_deadline, deps)
    if mode == "hybrid":
        with emit.step("retrieve") as d, deps.connect() as conn:
            config = RetrievalConfig.from_settings(s)
            top_k = config.top_k
            seed = deps.search(conn, s, search, original=query, config=_widened(s, config),
                               language=lang)
            d["passages"] = len(seed.passages)
            d["index"] = seed.index_version
        if s.rerank and seed.passages:
            # The workflow's steps up front, the optional rerank among them.
            seed = _rerank(s, emit, trace, query, seed, top_k)
        summary = hybrid_summary(req)
        if summary is not None:
            with emit.step("project") as d:
                d["read_ms"] = req.project.read_ms if req.project else None

    def search_docs(text: str) -> Retrieval:
        with deps.connect() as conn:
            return deps.search(conn, s, text, original=text)

    try:
        gathered = gather(req, s, emit, lang, search_docs, deps.cancelled.is_set,
                          first_token_deadline, seed, summary)
    except ToolsUnsupported as exc:
        return f"{mode} mode fell back to workflow: {exc}."
    retrieval = gathered.retrieval
    trace.source_ids = [p.id for p in retrieval.passages]
    trace.index_version = retrieval.index_version
    trace.models["embeddings"] = s.embeddings.model
    # A section hybrid already gave up front is not repeated in the final prompt.
    texts = ([summary] if summary else []) + [t for t in gathered.project_texts
                                              if not summary or t not in summary]
    project = ProjectBlock.from_text("\n\n".join(texts)) if texts else None
    _finish(req, deps, emit, trace, lang, retrieval, project, first_token_deadline,
            {"mode": mode, "tools": {"calls": gathered.calls, "cut": gathered.cut}})
    return None


def _log_bug(emit: TurnEmitter, exc: Exception) -> None:
    """One log line for a bug: turn, step and exception type; its text may hold the user's."""
    where = (f"in step {emit.failed_step}" if emit.failed_step
             else f"after step {emit.steps[-1]['step']}" if emit.steps else "before any step")
    log.error("turn %s: unexpected %s %s", emit.turn, type(exc).__name__, where)


def _check_time(first_token_deadline: float, deps: TurnDeps) -> None:
    if deps.cancelled.is_set():
        raise Cancelled("client cancelled")
    if time.monotonic() > first_token_deadline:
        raise TimedOut("search and project data took too long")


def run_checks(answer: str, retrieval: Retrieval, req: TurnRequest,
               project: ProjectBlock | None, show_sources: bool,
               written_in_code: bool = False,
               quotes: Sequence[dict[str, Any]] | None = None,
               paths: Sequence[dict[str, Any]] | None = None,
               named: Sequence[str] = ()) -> dict[str, Any]:
    """Every check of shared/checks.py that applies (docs/spec/behaviour.md B-24, B-25); flags
    only, the answer is
    never changed.

    A check that raises reads unavailable ({"valid": None, "unavailable": true}); the others
    still run.
    """
    # Only what the user wrote and the model saw grounds a number (docs/spec/behaviour.md B-25): an
    # earlier answer would let any number "confirm" itself, and the client writes the whole
    # history.
    history = trim_history(req.history)
    # `named`: the sections an "I don't know" offers, named in code from the index's own
    # headings and texts ("Step 4: ...", a locale group's "Platí 15 minut"): documentation.
    grounding = [p.text for p in retrieval.passages] + [req.message] + [
        m.content for m in history if m.role == "user"] + list(named)
    if project is not None:
        grounding += list(project.grounding)
    preface, data = split_project(project.text) if project is not None else ("", "")

    def on_bug(name: str, exc: Exception) -> None:
        log.error("turn %s: the %s check raised %s; reported as unavailable", req.turn, name,
                  type(exc).__name__)

    return run_all(CheckInput(
        answer, len(retrieval.passages), grounding, history, req.message, preface, data,
        show_sources, written_in_code, quotes, paths), on_bug)
