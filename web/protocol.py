"""The client protocol (v1), parsed and validated in one place for both transports.

The WebSocket sends ask | resume | cancel | ping frames; SSE posts an ask's fields as a JSON
body and resumes with Last-Event-ID. Everything here is pure: no Redis, no socket, no request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from shared.config import MODES, Settings
from shared.errors import BadRequest, TooLarge
from shared.history import MAX_ENTRY_CHARS, bound_history
from shared.turn_request import Message

MAX_HISTORY = 50
# Both transports wake this often while a turn is silent: to watch its worker and to ping.
TICK_S = 1.0
CLIENT_TYPES = frozenset({"ask", "resume", "cancel", "ping"})
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A project id as the app writes them (UUIDs): the ask and the chart route check the same
# pattern, so no "..", slash or escape ever reaches the app's URL path.
PROJECT_ID = re.compile(r"[A-Za-z0-9-]{1,64}")


@dataclass(frozen=True)
class Ask:
    """A validated ask: the question, the history the model may see, the panel's project and
    the dev-only mode override (None: the server's mode)."""

    message: str
    history: tuple[Message, ...] = ()
    project_id: str | None = None
    mode: str | None = None


def clean_text(value: str) -> bool:
    """True for text we can carry safely: valid UTF-8 (no lone surrogates), no control
    characters other than tab and line breaks."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not CONTROL.search(value)


def decode_frame(raw: Any) -> dict[str, Any]:
    """A client WebSocket frame as a JSON object; BadRequest for binary, bad JSON or a
    non-object (the type is checked by frame_type, so an error can still name the turn)."""
    if not isinstance(raw, str):
        raise BadRequest("binary frame", public_message="Frames must be JSON text.")
    try:
        frame = json.loads(raw)
    except (ValueError, RecursionError):
        raise BadRequest("bad json", public_message="The frame is not valid JSON.") from None
    if not isinstance(frame, dict):
        raise BadRequest("not an object", public_message="The frame is not valid JSON.")
    return frame


def frame_type(frame: dict[str, Any]) -> str:
    """The frame's type, one of CLIENT_TYPES; BadRequest for anything else."""
    kind = frame.get("type")
    if not isinstance(kind, str) or kind not in CLIENT_TYPES:
        raise BadRequest("unknown type", public_message="Unknown frame type.")
    return kind


def parse_ask(frame: Any, s: Settings) -> Ask:
    """Validate an ask (a WebSocket frame or the SSE body); BadRequest/TooLarge if invalid."""
    if not isinstance(frame, dict):
        raise BadRequest("bad body", public_message="The request body must be a JSON object.")
    message = frame.get("message")
    if not isinstance(message, str) or not message.strip():
        raise BadRequest("empty message", public_message="Please type a question.")
    if not clean_text(message):
        raise BadRequest("bad characters", public_message=(
            "The message contains characters that cannot be used."))
    if len(message) > s.max_message_chars:
        raise TooLarge("message too long", public_message=(
            f"The message is too long (at most {s.max_message_chars} characters)."))
    history = frame.get("history") or []
    if not isinstance(history, list) or len(history) > MAX_HISTORY or not all(
            isinstance(m, dict) and m.get("role") in ("user", "assistant")
            and isinstance(m.get("content"), str) and clean_text(m["content"])
            for m in history):
        raise BadRequest("bad history", public_message="The conversation history is not valid.")
    if any(len(m["content"]) > MAX_ENTRY_CHARS for m in history):
        raise TooLarge("history entry too long", public_message=(
            "A message in the conversation history is too long."))
    project_id = frame.get("project_id") or None  # "" is no project, as null is
    if project_id is not None and (not isinstance(project_id, str)
                                   or not PROJECT_ID.fullmatch(project_id)):
        raise BadRequest("bad project id", public_message="The project id is not valid.")
    return Ask(message.strip(),
               tuple(bound_history([Message(m["role"], m["content"]) for m in history])),
               project_id, parse_mode(frame, s))


def parse_mode(frame: dict[str, Any], s: Settings) -> str | None:
    """The per-turn mode override (docs/spec/behaviour.md B-20): only in the dev profile; None for
    the server's."""
    mode = frame.get("mode")
    if mode is None:
        return None
    if s.profile != "dev":
        raise BadRequest("mode override", public_message=(
            "The mode is set on the server; choosing it per message is only for development."))
    if mode not in MODES:
        raise BadRequest("bad mode", public_message="The mode must be workflow, agent or hybrid.")
    return str(mode)


def parse_resume(frame: dict[str, Any]) -> tuple[str, int]:
    """(turn, after) of a resume frame."""
    turn, after = frame.get("turn"), frame.get("after", -1)
    if not isinstance(turn, str) or not turn or isinstance(after, bool) or not isinstance(
            after, int) or after < -1:
        raise BadRequest("bad resume", public_message="The resume request is not valid.")
    return turn, after


def parse_cancel(frame: dict[str, Any]) -> str:
    """The turn a cancel frame names."""
    turn = frame.get("turn")
    if not isinstance(turn, str) or not turn:
        raise BadRequest("bad cancel", public_message="The cancel request is not valid.")
    return turn


def parse_last_event_id(raw: str) -> int:
    """The seq an SSE client last saw (Last-Event-ID or ?after=); -1 for none."""
    try:
        after = int(raw)
    except ValueError:
        raise BadRequest("bad last event id",
                         public_message="Last-Event-ID must be a number.") from None
    return max(-1, after)
