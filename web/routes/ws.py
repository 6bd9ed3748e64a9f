"""The assistant WebSocket (protocol v1): ask | resume | cancel | ping from the client;
accepted, event, token, restart, done | error, ping from the server."""

from __future__ import annotations

import json
import logging
import queue
import re
import threading
import time
from typing import Any

import redis
from flask import Blueprint, g, request
from simple_websocket import ConnectionClosed

from shared import turns
from shared.config import Settings
from shared.errors import (
    AssistantError,
    BadRequest,
    NotFound,
    RateLimited,
    TooLarge,
    Unavailable,
)
from shared.frames import encode
from shared.metrics import OPEN_SOCKETS
from shared.redis_client import redis_client
from web.auth import check_origin, settings
from web.errors import ws_error
from web.follow import TurnFollower, follow_existing, owns, project_fields, start_turn
from web.relay import Relay, Subscription
from web.sock import sock
from web.tickets import TicketGrant, consume_ticket

WS_PATH = "/api/v1/assistant/ws"
MAX_HISTORY = 50
TICK_S = 1.0
log = logging.getLogger(__name__)
bp = Blueprint("ws", __name__)


@bp.before_app_request
def _authorize_upgrade() -> None:
    """Origin and ticket are checked before the upgrade (flask-sock answers 101 in the view)."""
    if request.path != WS_PATH:
        return
    check_origin()
    g.ws_grant = consume_ticket(redis_client(settings()), request.args.get("ticket", ""))


CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _clean_text(value: str) -> bool:
    """True for text we can carry safely: valid UTF-8 (no lone surrogates), no control
    characters other than tab and line breaks."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not CONTROL.search(value)


def parse_ask(frame: dict[str, Any], s: Settings) -> dict[str, Any]:
    """Validate an ask frame; returns the clean fields or raises BadRequest/TooLarge."""
    message = frame.get("message")
    if not isinstance(message, str) or not message.strip():
        raise BadRequest("empty message", public_message="Please type a question.")
    if not _clean_text(message):
        raise BadRequest("bad characters", public_message=(
            "The message contains characters that cannot be used."))
    if len(message) > s.max_message_chars:
        raise TooLarge("message too long", public_message=(
            f"The message is too long (at most {s.max_message_chars} characters)."))
    history = frame.get("history") or []
    if not isinstance(history, list) or len(history) > MAX_HISTORY or not all(
            isinstance(m, dict) and m.get("role") in ("user", "assistant")
            and isinstance(m.get("content"), str) and _clean_text(m["content"])
            for m in history):
        raise BadRequest("bad history", public_message="The conversation history is not valid.")
    project_id = frame.get("project_id")
    if project_id is not None and (not isinstance(project_id, str) or len(project_id) > 64
                                   or not _clean_text(project_id)):
        raise BadRequest("bad project id", public_message="The project id is not valid.")
    return {"message": message.strip(),
            "history": [{"role": m["role"], "content": m["content"]} for m in history],
            "project_id": project_id}


def parse_resume(frame: dict[str, Any]) -> tuple[str, int]:
    """(turn, after) of a resume frame."""
    turn, after = frame.get("turn"), frame.get("after", -1)
    if not isinstance(turn, str) or not turn or isinstance(after, bool) or not isinstance(
            after, int) or after < -1:
        raise BadRequest("bad resume", public_message="The resume request is not valid.")
    return turn, after


class Session:
    """One socket. A reader thread feeds client frames into the inbox the relay also feeds,
    so this one loop is the only writer to the socket."""

    def __init__(self, ws: Any, grant: TicketGrant, s: Settings, relay: Relay) -> None:
        self.ws = ws
        self.user = grant.user
        self._app_token = grant.app_token  # memory only: for reading the user's project
        self.settings = s
        self.relay = relay
        self.redis = redis_client(s)
        self.inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.sub: Subscription | None = None
        self.follower: TurnFollower | None = None
        self.last_sent = time.monotonic()
        self.last_heard = time.monotonic()
        self._window: list[float] = []  # arrival times of the last second's client frames
        self._floods = 0

    def send(self, frame: dict[str, Any]) -> None:
        """Send a frame (only the session loop writes to the socket)."""
        self.ws.send(encode(frame))
        self.last_sent = time.monotonic()

    def _read(self) -> None:
        try:
            while True:
                raw = self.ws.receive()
                if raw is not None:
                    self.inbox.put(("client", raw))
        except ConnectionClosed:
            self.inbox.put(("closed", None))

    def _flooding(self) -> bool:
        """True when this frame exceeds the per-connection frames-per-second cap."""
        now = time.monotonic()
        self._window = [t for t in self._window if now - t < 1.0]
        self._window.append(now)
        return len(self._window) > self.settings.ws_frames_per_second

    def run(self) -> None:
        """Serve the socket until it closes; an open turn keeps running without it."""
        threading.Thread(target=self._read, name="ws-reader", daemon=True).start()
        try:
            while True:
                try:
                    kind, item = self.inbox.get(timeout=TICK_S)
                except queue.Empty:
                    self.on_tick()
                    continue
                if kind == "closed":
                    return
                if kind == "frame":
                    self.relay_frames(self.follower.accept(item) if self.follower else [])
                    continue
                self.last_heard = time.monotonic()
                if self._flooding():
                    self._floods += 1
                    if self._floods > 3 * self.settings.ws_frames_per_second:
                        self.ws.close(1008, "Too many frames.")
                        return
                    self.send(ws_error(RateLimited("frame flood", retry_after=1,
                                                   public_message="Too many messages at once.")))
                    continue
                self.on_client(item)
        finally:
            self.end_turn()

    def on_client(self, raw: Any) -> None:
        """Handle one client frame; errors become error frames and the socket stays open."""
        frame: Any = None
        try:
            if not isinstance(raw, str):
                raise BadRequest("binary frame", public_message="Frames must be JSON text.")
            try:
                frame = json.loads(raw)
            except (ValueError, RecursionError):
                raise BadRequest("bad json", public_message="The frame is not valid JSON.") from None
            if not isinstance(frame, dict):
                raise BadRequest("not an object", public_message="The frame is not valid JSON.")
            kind = frame.get("type")
            if kind == "ask":
                fields = parse_ask(frame, self.settings)
                self.ensure_idle()
                fields = project_fields(self.settings, self._app_token, fields)
                self.sub, self.follower = start_turn(self.redis, self.settings, self.relay,
                                                     self.user, fields, sink=self.inbox)
                # Turn ids are random and carry nothing of the user: operators can follow a turn
                # across web processes (a resume often lands on another one).
                log.info("turn %s: asked over WebSocket", self.follower.turn)
            elif kind == "resume":
                turn, after = parse_resume(frame)
                self.ensure_idle()
                self.sub, self.follower = follow_existing(
                    self.redis, self.settings, self.relay, self.user, turn, after,
                    sink=self.inbox)
                log.info("turn %s: resumed over WebSocket after seq %d", turn, after)
                self.relay_frames(self.follower.catch_up())
            elif kind == "cancel":
                self.cancel(frame.get("turn"))
            elif kind == "ping":
                self.send({"type": "pong"})
            else:
                raise BadRequest("unknown type", public_message="Unknown frame type.")
        except AssistantError as exc:
            ref: Any = frame.get("turn") if isinstance(frame, dict) and frame.get(
                "type") != "ask" else None
            self.send(ws_error(exc, ref if isinstance(ref, str) else None))

    def ensure_idle(self) -> None:
        """One turn at a time per socket."""
        if self.follower is not None and not self.follower.done:
            raise RateLimited("turn running", retry_after=5,
                              public_message="Please wait for the current answer to finish.")
        self.end_turn()

    def cancel(self, turn: Any) -> None:
        """Ask the worker to stop a turn of this user (it answers with an error frame 499)."""
        if not isinstance(turn, str) or not turn:
            raise BadRequest("bad cancel", public_message="The cancel request is not valid.")
        if not owns(self.redis, self.user, turn):
            raise NotFound("unknown turn", public_message="This answer is not running.")
        try:
            turns.request_cancel(self.redis, turn, self.settings.replay_ttl_s)
        except redis.RedisError as exc:
            raise Unavailable("cancel failed") from exc

    def relay_frames(self, frames: list[dict[str, Any]]) -> None:
        """Send frames; when the turn has ended, drop its subscription."""
        for f in frames:
            self.send(f)
        if self.follower is not None and self.follower.done:
            self.end_turn()

    def on_tick(self) -> None:
        """A second without frames: watch the turn, ping while silent, close when idle."""
        if self.follower is not None and not self.follower.done:
            self.relay_frames(self.follower.watch())
        elif time.monotonic() - self.last_heard > self.settings.ws_idle_s:
            self.ws.close(1000, "Closed after a period without activity.")
            raise ConnectionClosed(1000, "idle")
        if self.follower is not None and not self.follower.done and \
                time.monotonic() - self.last_sent >= self.settings.ping_interval_s:
            self.send({"type": "ping"})

    def end_turn(self) -> None:
        """Forget the current turn (it keeps running in the worker if unfinished)."""
        if self.sub is not None:
            self.relay.unsubscribe(self.sub)
        self.sub = None
        if self.follower is not None and self.follower.done:
            self.follower = None


@sock.route(WS_PATH, bp=bp)
def assistant_ws(ws: Any) -> None:
    """The WebSocket handler; per-connection errors are caught here, at its edge."""
    from web import relay_for_process

    session = Session(ws, g.ws_grant, settings(), relay_for_process())
    OPEN_SOCKETS.inc()
    try:
        session.run()
    except ConnectionClosed:
        pass
    except AssistantError as exc:
        try:
            session.send(ws_error(exc))
        except ConnectionClosed:
            pass
    except redis.RedisError:
        log.warning("socket ended: Redis unavailable")
    finally:
        OPEN_SOCKETS.dec()
