"""The assistant WebSocket (protocol v1): ask -> accepted, token..., done | error."""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

import redis
from flask import Blueprint, g, request
from simple_websocket import ConnectionClosed

from shared import keys
from shared.auth import user_hash
from shared.config import Settings
from shared.errors import AssistantError, BadRequest, TooLarge, Unavailable
from shared.frames import TERMINAL_TYPES, FrameLog, encode
from shared.redis_client import redis_client
from web.auth import check_origin, settings
from web.errors import ws_error
from web.queue import turn_queue
from web.relay import Relay, Subscription
from web.sock import sock
from web.tickets import consume_ticket

WS_PATH = "/api/v1/assistant/ws"
MAX_HISTORY = 50
log = logging.getLogger(__name__)
bp = Blueprint("ws", __name__)


@bp.before_app_request
def _authorize_upgrade() -> None:
    """Origin and ticket are checked before the upgrade (flask-sock answers 101 in the view)."""
    if request.path != WS_PATH:
        return
    check_origin()
    g.ws_user = consume_ticket(redis_client(settings()), request.args.get("ticket", ""))


def parse_ask(frame: dict[str, Any], s: Settings) -> dict[str, Any]:
    """Validate an ask frame; returns the clean fields or raises BadRequest/TooLarge."""
    message = frame.get("message")
    if not isinstance(message, str) or not message.strip():
        raise BadRequest("empty message", public_message="Please type a question.")
    if len(message) > s.max_message_chars:
        raise TooLarge("message too long", public_message=(
            f"The message is too long (at most {s.max_message_chars} characters)."))
    history = frame.get("history") or []
    if not isinstance(history, list) or len(history) > MAX_HISTORY or not all(
            isinstance(m, dict) and m.get("role") in ("user", "assistant")
            and isinstance(m.get("content"), str) for m in history):
        raise BadRequest("bad history", public_message="The conversation history is not valid.")
    project_id = frame.get("project_id")
    if project_id is not None and not isinstance(project_id, str):
        raise BadRequest("bad project id", public_message="The project id is not valid.")
    return {"message": message.strip(),
            "history": [{"role": m["role"], "content": m["content"]} for m in history],
            "project_id": project_id}


class Session:
    """One socket: reads client frames, runs one turn at a time, relays its frames."""

    def __init__(self, ws: Any, user: str, s: Settings, relay: Relay) -> None:
        self.ws = ws
        self.user = user
        self.settings = s
        self.relay = relay
        self.redis = redis_client(s)

    def send(self, frame: dict[str, Any]) -> None:
        """Send a frame (only this greenlet writes to the socket)."""
        self.ws.send(encode(frame))

    def run(self) -> None:
        """Serve client frames until the socket closes."""
        while True:
            raw = self.ws.receive()
            if raw is None:
                continue
            try:
                frame = json.loads(raw)
                if not isinstance(frame, dict):
                    raise ValueError
            except ValueError:
                self.send(ws_error(BadRequest(public_message="The frame is not valid JSON.")))
                continue
            kind = frame.get("type")
            try:
                if kind == "ask":
                    self.ask(parse_ask(frame, self.settings))
                elif kind == "ping":
                    self.send({"type": "pong"})
                else:
                    raise BadRequest("unknown frame type",
                                     public_message="Unknown frame type.")
            except AssistantError as exc:
                self.send(ws_error(exc, frame.get("turn") if kind != "ask" else None))

    def ask(self, fields: dict[str, Any]) -> None:
        """Subscribe, log `accepted`, enqueue, then relay the turn until its terminal frame."""
        turn = uuid.uuid4().hex
        frame_log = FrameLog(self.redis, turn, self.settings.replay_ttl_s)
        try:
            sub = self.relay.subscribe(turn)
        except redis.RedisError as exc:
            raise Unavailable("cannot subscribe") from exc
        try:
            try:
                self.redis.set(keys.turn_owner(turn), user_hash(self.user),
                               ex=self.settings.replay_ttl_s)
                frame_log.append({"type": "accepted", "turn": turn, "seq": 0})
                turn_queue.enqueue({"turn": turn, "user": user_hash(self.user), **fields})
            except (redis.RedisError, OSError) as exc:
                raise Unavailable("cannot enqueue") from exc
            self.relay_turn(sub, frame_log)
        finally:
            self.relay.unsubscribe(sub)

    def relay_turn(self, sub: Subscription, frame_log: FrameLog) -> None:
        """Forward frames in seq order without gaps or duplicates; ping while silent."""
        s = self.settings
        last = -1
        started = time.monotonic()
        deadline = started + s.answer_timeout_s + 30
        while True:
            frame = sub.get(timeout=s.ping_interval_s)
            batch: list[dict[str, Any]]
            if frame is None:
                # Silence: catch up from the log in case a live frame was missed, else ping.
                batch = frame_log.frames_after(last)
                if not batch:
                    if time.monotonic() > deadline:
                        self.send(ws_error(Unavailable("turn went silent"), sub.turn, last + 1))
                        return
                    self.send({"type": "ping"})
                    continue
            elif frame.get("seq", -1) <= last:
                continue
            elif frame["seq"] > last + 1:
                batch = frame_log.frames_after(last)
            else:
                batch = [frame]
            for f in batch:
                if f.get("seq", -1) != last + 1:
                    continue
                self.send(f)
                last = f["seq"]
                if f.get("type") in TERMINAL_TYPES:
                    return


@sock.route(WS_PATH, bp=bp)
def assistant_ws(ws: Any) -> None:
    """The WebSocket handler; per-connection errors are caught here, at its edge."""
    from web import relay_for_process

    session = Session(ws, g.ws_user, settings(), relay_for_process())
    try:
        session.run()
    except ConnectionClosed:
        pass
    except AssistantError as exc:
        try:
            session.send(ws_error(exc))
        except ConnectionClosed:
            pass
