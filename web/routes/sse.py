"""The same turn over Server-Sent Events, for clients that cannot use WebSockets.

POST /api/v1/assistant/chat/stream starts a turn; GET /api/v1/assistant/turns/<turn>/events
resumes one after `Last-Event-ID` (or `?after=`). Each frame is an event whose id is its seq.
"""

from __future__ import annotations

import queue
import time
import uuid
from collections.abc import Callable, Iterator

import redis
from flask import Blueprint, Response, request, stream_with_context

from shared import frame_types
from shared.frames import Frame, encode
from shared.redis_client import redis_client
from web import drain
from web.auth import bearer_token, bearer_user, check_origin, json_body, settings, verify
from web.follow import TurnFollower, follow_existing, open_turn
from web.guard import current_client, limiter, preferred_lang, stream_slots
from web.process_relay import relay_for_process
from web.protocol import TICK_S, parse_ask, parse_last_event_id
from web.relay import Relay, Subscription

bp = Blueprint("sse", __name__)


def sse_event(frame: Frame) -> str:
    """One SSE event: the frame's text as published, its seq as the event id."""
    # The text is compact JSON (no raw line breaks), so it is one data line.
    return f"id: {frame.seq}\nevent: {frame.type}\ndata: {frame.text}\n\n"


PING_EVENT = f"event: ping\ndata: {encode(frame_types.ping())}\n\n"
# This process is stopping: the client resumes after its last seq on a new request, at once.
RECONNECT_EVENT = f"event: reconnect\ndata: {encode(frame_types.reconnect())}\n\n"


def stream(relay: Relay, sub: Subscription, follower: TurnFollower,
           first: list[Frame]) -> Iterator[str]:
    """Frames in seq order until the terminal one; a ping event while silent."""
    ping_every = settings().ping_interval_s
    last_sent = time.monotonic()
    try:
        yield ": stream open\n\n"  # flushes headers through proxies at once
        for f in first:
            yield sse_event(f)
        while not follower.done:
            if drain.draining.is_set():
                # What the log has first (the `accepted` of a turn just asked here, at least):
                # the client then knows the turn it resumes elsewhere.
                try:
                    late = follower.catch_up()
                except redis.RedisError:
                    late = []
                for f in late:
                    yield sse_event(f)
                yield RECONNECT_EVENT
                return
            try:
                frames = follower.accept(sub.frames.get(timeout=TICK_S))
            except queue.Empty:
                frames = follower.watch()
            for f in frames:
                yield sse_event(f)
                last_sent = time.monotonic()
            if not frames and time.monotonic() - last_sent >= ping_every:
                yield PING_EVENT
                last_sent = time.monotonic()
    finally:
        relay.unsubscribe(sub)


def sse_response(body: Iterator[str]) -> Response:
    """A streaming text/event-stream response that no proxy buffers."""
    resp = Response(stream_with_context(body), mimetype="text/event-stream")
    resp.headers["Cache-Control"] = "no-store"
    resp.headers["X-Accel-Buffering"] = "no"
    return resp


@bp.post("/api/v1/assistant/chat/stream")
def chat_stream() -> Response:
    """Start a turn (the ask frame's fields as JSON) and stream it."""
    check_origin()
    s = settings()
    # The address's request window is counted with the message's limits, in one round trip
    # (a request refused here before that, by its token or body, touched no shared state).
    token = bearer_token()
    user = verify(token).user
    fields = parse_ask(json_body(), s)
    relay = relay_for_process()
    sub, follower = open_turn(redis_client(s), s, relay, user, token, fields,
                              current_client(s), count_request=True)
    return sse_response(stream(relay, sub, follower, []))


@bp.get("/api/v1/assistant/turns/<turn>/events")
def turn_events(turn: str) -> Response:
    """Resume a turn's stream after Last-Event-ID (or ?after=), then follow it live."""
    check_origin()
    s = settings()
    limiter(s).check_request(current_client(s), preferred_lang())
    user = bearer_user()
    after = parse_last_event_id(
        request.headers.get("Last-Event-ID", request.args.get("after", "-1")))
    relay = relay_for_process()
    slots, slot = stream_slots(s), uuid.uuid4().hex
    slots.acquire(user, slot)
    try:
        sub, follower = follow_existing(redis_client(s), s, relay, user, turn, after)
    except BaseException:
        slots.release(user, slot)
        raise
    return sse_response(held_stream(stream(relay, sub, follower, follower.catch_up()),
                                    lambda: slots.renew(user, slot),
                                    lambda: slots.release(user, slot), slots.renew_every_s))


def held_stream(body: Iterator[str], renew: Callable[[], None],
                release: Callable[[], None], renew_every_s: float) -> Iterator[str]:
    """The stream's events; its slot is renewed as events go out and freed when it ends."""
    last = time.monotonic()
    try:
        for event in body:
            if time.monotonic() - last >= renew_every_s:
                renew()
                last = time.monotonic()
            yield event
    finally:
        release()

