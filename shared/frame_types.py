"""The frames the server sends, declared once: each type's sender, fields and meaning, and one
builder per type.

The worker and the web tier build every frame they send here; docs/protocol.md is written from
`CATALOGUE` and `Done` (`python -m shared.protocol_doc`), and a test holds the panel's frame
switch to the logged types. A frame a client sends (ask, resume, cancel, ping) is read in
web/protocol.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.errors import AssistantError, RateLimited

Frame = dict[str, Any]


@dataclass(frozen=True)
class FrameType:
    """One type of frame the server sends."""

    name: str
    sender: str
    # Numbered (`seq`) in the turn's replay log: resumable, sent in order without gaps.
    logged: bool
    # Ends its turn: exactly one of these per turn.
    terminal: bool
    meaning: str
    # The fields besides `type` (and, for logged frames, `seq` and `turn`).
    fields: Mapping[str, str]


CATALOGUE: tuple[FrameType, ...] = (
    FrameType("accepted", "web tier", True, False,
              "the turn is queued; its id is the turn to resume or cancel", {}),
    FrameType("event", "worker", True, False,
              "a pipeline step ended (or a point in time such as the first token)",
              {"step": "the step's name (language, rewrite, translate, retrieve, project, "
                       "prompt, generate, quotes, checks, tool, first_token, ...)",
               "start_ms": "when it started, milliseconds since the turn started",
               "ms": "how long it took (0 for a point in time)",
               "...": "what the step reports (passages found, the index version, the model, "
                      "a check's verdict; `rewrite` in the quotes form: `carried`, the "
                      "follow-up searched with the earlier question)"}),
    FrameType("token", "worker", True, False, "the next piece of the answer's text",
              {"text": "the piece, to append"}),
    FrameType("restart", "worker", True, False,
              "the worker running the turn died and the turn runs again: drop the partial "
              "text", {"attempt": "the attempt now running (2)"}),
    FrameType("done", "worker", True, True,
              "the answer, checked: the turn ends (its fields: `Done`)", {}),
    FrameType("error", "worker or web tier", True, True,
              "the turn (or the request) ends with a plain sentence; no internal text",
              {"code": "a status-like code (400, 401, 403, 404, 429, 499 cancelled, 500, 503, "
                       "504)",
               "message": "a plain sentence to show",
               "retry_after": "seconds to wait (429 only)"}),
    FrameType("ping", "web tier", False, False,
              "keep-alive while the stream is silent (WebSocket and SSE); ignore it", {}),
    FrameType("pong", "web tier (WebSocket)", False, False,
              "the answer to a client's ping; ignore it", {}),
    FrameType("reconnect", "web tier (SSE)", False, False,
              "the event stream ends before the turn: reconnect with Last-Event-ID", {}),
)
TYPES: Mapping[str, FrameType] = {t.name: t for t in CATALOGUE}
LOGGED: frozenset[str] = frozenset(t.name for t in CATALOGUE if t.logged)
TERMINAL: frozenset[str] = frozenset(t.name for t in CATALOGUE if t.terminal)


def _meaning(text: str) -> Any:
    return field(metadata={"meaning": text})


def _optional(text: str) -> Any:
    return field(default=None, metadata={"meaning": text, "optional": True})


@dataclass(frozen=True, kw_only=True)
class Done:
    """The done frame's fields: a field added here (with its meaning) is sent and documented."""

    answer: str = _meaning("the answer's whole text (markers stripped when sources are off)")
    sources: list[dict[str, Any]] = _meaning(
        "the passages [n] points at: n, title, section, excerpt, score, strategy (the search "
        "mode that gave the score), source, local, url, weak, and rerank (2 answers, 1 related) when the optional rerank ran (empty when "
        "sources are off)")
    checks: dict[str, dict[str, Any]] = _meaning(
        "one block per check that ran (below), each with `valid`")
    usage: dict[str, Any] = _meaning("prompt_tokens, completion_tokens, model")
    timing: dict[str, Any] = _meaning("total_ms, first_token_ms and every step's event")
    index: str = _meaning("the version of the index the passages came from")
    language: str = _meaning("the question's language (en or cs)")
    answer_language: str = _meaning("the answer's language, detected in code")
    language_differs: bool = _meaning("the answer is in the other of en and cs")
    answer_form: str = _meaning("prose, structured or quotes")
    deterministic: bool = field(default=True, metadata={"meaning": (
        "true: every model call is at temperature 0, so the same question and sources give the "
        "same answer (the panel says so under a regenerated answer)")})
    structured: dict[str, Any] | None = _optional(
        "structured and quotes forms: valid_json, cut, outcome, clarifying_question, quotes, "
        "sources; the quotes form also lead_in, hedged (the quotes barely answer), nearest, "
        "project (absent otherwise); a quote: n, text, found, source, section, language, note, "
        "code, path, labels, group (an interface text's group title where its section's is "
        "another)")
    mode: str = _meaning("workflow, agent or hybrid: how the turn gathered its material")
    mode_note: str | None = _optional("why an agent turn ran as a workflow (absent otherwise)")
    tools: dict[str, Any] | None = _optional(
        "agent and hybrid turns: calls, cut (absent otherwise)")


DONE_FIELDS: tuple[dataclasses.Field[Any], ...] = dataclasses.fields(Done)


def accepted(turn: str) -> Frame:
    """The web tier's first frame of a turn (the log numbers it 0)."""
    return {"type": "accepted", "turn": turn}


def event(turn: str, step: str, start_ms: float, ms: float, **detail: Any) -> Frame:
    """A timed step (or a point in time, ms 0) with what the step reports."""
    return {"type": "event", "turn": turn, "step": step, "start_ms": start_ms, "ms": ms,
            **detail}


def token(turn: str, text: str) -> Frame:
    """The next piece of the answer."""
    return {"type": "token", "turn": turn, "text": text}


def restart(turn: str, attempt: int) -> Frame:
    """The turn runs again after its worker died."""
    return {"type": "restart", "turn": turn, "attempt": attempt}


def done(turn: str, fields: Done) -> Frame:
    """The terminal success frame; an optional field left None is not sent."""
    return {"type": "done", "turn": turn,
            **{f.name: getattr(fields, f.name) for f in DONE_FIELDS
               if not (f.metadata.get("optional") and getattr(fields, f.name) is None)}}


def error(turn: str | None, seq: int | None, code: int, message: str,
          retry_after: int | None = None) -> Frame:
    """An error frame with a status-like code and a plain sentence."""
    frame: Frame = {"type": "error", "turn": turn, "seq": seq, "code": code,
                    "message": message}
    if retry_after is not None:
        frame["retry_after"] = retry_after
    return frame


def error_of(exc: AssistantError, turn: str | None = None, seq: int | None = None) -> Frame:
    """The error frame for one of our errors: its code and public sentence (never its text)."""
    return error(turn, seq, exc.code, exc.public_message,
                 exc.retry_after if isinstance(exc, RateLimited) else None)


def ping() -> Frame:
    """Keep-alive while a stream is silent."""
    return {"type": "ping"}


def pong() -> Frame:
    """The answer to a client's ping."""
    return {"type": "pong"}


def reconnect() -> Frame:
    """The SSE stream ends before its turn: the client reconnects."""
    return {"type": "reconnect"}
