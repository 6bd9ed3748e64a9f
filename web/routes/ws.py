"""The assistant WebSocket (protocol v1): ask | resume | cancel | ping from the client;
accepted, event, token, restart, done | error, ping from the server."""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

import redis
from flask import Blueprint, g, request
from simple_websocket import ConnectionClosed

from shared import frame_types
from shared.config import Settings
from shared.errors import AssistantError, RateLimited, Unavailable
from shared.frames import Frame, encode
from shared.metrics import OPEN_SOCKETS
from shared.redis_client import redis_client
from web import drain
from web.auth import check_origin, settings
from web.cancel import cancel_turn
from web.follow import TurnFollower, follow_existing, open_turn
from web.guard import current_client, limiter, preferred_lang, socket_leases
from web.process_relay import relay_for_process
from web.protocol import TICK_S, decode_frame, frame_type, parse_ask, parse_cancel, parse_resume
from web.relay import Relay, Subscription
from web.sock import sock
from web.tickets import TicketGrant, consume_ticket

WS_PATH = "/api/v1/assistant/ws"
# Close code when the app token the socket was opened with expires (4000-4999: ours).
CLOSE_TOKEN_EXPIRED = 4401
TOKEN_EXPIRED_REASON = "Your sign-in has expired. Get a new token and reconnect."
log = logging.getLogger(__name__)
bp = Blueprint("ws", __name__)


@dataclass(frozen=True)
class SocketPlace:
    """A socket's place under the per-user and per-address caps (a lease in Redis)."""

    user: str
    bucket: str
    socket_id: str


@bp.before_app_request
def _authorize_upgrade() -> None:
    """Origin and ticket are checked before the upgrade (flask-sock answers 101 in the view)."""
    if request.path != WS_PATH:
        return
    if drain.draining.is_set():
        # Stopping: a socket opened now would be closed at once; the client tries again and
        # reaches another process (or this one's replacement).
        raise Unavailable("stopping",
                          public_message="The server is restarting. Please try again.")
    check_origin()
    # No permessage-deflate: simple-websocket accepts it whenever a client offers it (every
    # browser does), and its zlib state (about 256 kB + 40 kB at zlib's defaults) is several
    # times the whole rest of a socket. Frames are small JSON; compression saves little.
    request.environ.pop("HTTP_SEC_WEBSOCKET_EXTENSIONS", None)
    s = settings()
    g.ws_grant = consume_ticket(redis_client(s), request.args.get("ticket", ""))
    g.ws_client = current_client(s)  # asks are counted per address too
    # Held before the 101: a user or address at its cap of open sockets gets a plain 429.
    place = SocketPlace(g.ws_grant.user, limiter(s).bucket(g.ws_client), uuid.uuid4().hex)
    socket_leases(s).acquire(place.user, place.bucket, place.socket_id, preferred_lang())
    g.ws_place = place


class Session:
    """One socket. A reader thread feeds client frames into the inbox the relay also feeds,
    so this one loop is the only writer to the socket."""

    def __init__(self, ws: Any, grant: TicketGrant, s: Settings, relay: Relay,
                 client_addr: str | None = None, place: SocketPlace | None = None,
                 lang: str = "en") -> None:
        self.ws = ws
        self.client_addr = client_addr
        self.place = place
        self.lang = lang
        self._renewed = time.monotonic()
        # Finished turns this socket has sent to the end: each is replayed once at most.
        self._finished: set[str] = set()
        self.user = grant.user
        self._app_token = grant.app_token  # memory only: for reading the user's project
        self.expires_at = grant.expires_at
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
        self._pending = 0  # client frames queued in the inbox, not yet handled
        self._pending_lock = threading.Lock()
        self._flood_noted = threading.Event()  # one flood notice queued at a time
        self._overflowed = False

    def send(self, frame: dict[str, Any]) -> None:
        """Send a frame (only the session loop writes to the socket)."""
        self.ws.send(encode(frame))
        self.last_sent = time.monotonic()

    def _read(self) -> None:
        """Receive frames as they arrive: count them here, queue at most ws_inbox_frames."""
        # Counting here, not in the loop, bounds memory while the loop waits (on a project
        # read, say): frames over the rate are dropped, and a full inbox closes the socket.
        # Frames keep being received and dropped until the loop has closed the socket, so
        # they never pile up in the WebSocket library either.
        try:
            while True:
                raw = self.ws.receive()
                if raw is None or self._overflowed:
                    continue
                if self._flooding() or not self._reserve():
                    # Over the rate, or the loop has not caught up: drop the frame and say so
                    # once (a 429 error frame); a client that keeps on is disconnected.
                    self._floods += 1
                    if self._floods > 3 * self.settings.ws_frames_per_second:
                        self._overflow("flood")
                    elif not self._flood_noted.is_set():
                        self._flood_noted.set()
                        self.inbox.put(("flood", None))
                    continue
                self.inbox.put(("client", raw))
        except ConnectionClosed:
            self.inbox.put(("closed", None))

    def _reserve(self) -> bool:
        """Take one of the ws_inbox_frames places for a client frame, if one is free."""
        with self._pending_lock:
            if self._pending >= self.settings.ws_inbox_frames:
                return False
            self._pending += 1
            return True

    def _overflow(self, why: str) -> None:
        """Stop queueing this client's frames and ask the loop to close the socket."""
        self._overflowed = True
        self.inbox.put(("overflow", why))

    def _flooding(self) -> bool:
        """True when this frame exceeds the per-connection frames-per-second cap."""
        now = time.monotonic()
        self._window = [t for t in self._window if now - t < 1.0]
        self._window.append(now)
        return len(self._window) > self.settings.ws_frames_per_second

    def run(self) -> None:
        """Serve the socket until it closes; an open turn keeps running without it."""
        threading.Thread(target=self._read, name="ws-reader", daemon=True).start()
        if not drain.register(self.inbox):
            self.inbox.put(("drain", None))
        try:
            while True:
                try:
                    kind, item = self.inbox.get(timeout=TICK_S)
                except queue.Empty:
                    self.renew_place()
                    self.on_tick()
                    continue
                if kind == "closed":
                    return
                if kind == "drain":
                    # This process is stopping: the client resumes elsewhere, at once.
                    self.flush_before_restart()
                    self.ws.close(drain.RESTART_CLOSE, drain.RESTART_REASON)
                    return
                self.renew_place()
                self.check_expiry()
                if kind == "frame":
                    self.relay_frames(self.follower.accept(item) if self.follower else [])
                    continue
                self.last_heard = time.monotonic()
                if kind == "overflow":
                    self.ws.close(1008, "Too many frames.")
                    return
                if kind == "flood":
                    self._flood_noted.clear()
                    self.send(frame_types.error_of(RateLimited("frame flood", retry_after=1,
                                                   public_message="Too many messages at once.")))
                    continue
                with self._pending_lock:
                    self._pending -= 1
                self.on_client(item)
        finally:
            drain.unregister(self.inbox)
            self.end_turn()

    def on_client(self, raw: Any) -> None:
        """Handle one client frame; errors become error frames and the socket stays open."""
        frame: Any = None
        try:
            frame = decode_frame(raw)
            kind = frame_type(frame)
            if kind == "ask":
                fields = parse_ask(frame, self.settings)
                self.ensure_idle()
                self.sub, self.follower = open_turn(
                    self.redis, self.settings, self.relay, self.user, self._app_token, fields,
                    self.client_addr, sink=self.inbox)
                # Turn ids are random and carry nothing of the user: operators can follow a turn
                # across web processes (a resume often lands on another one).
                log.info("turn %s: asked over WebSocket", self.follower.turn)
            elif kind == "resume":
                turn, after = parse_resume(frame)
                # A resume is a request of the address, like the SSE resume; and a finished
                # turn this socket already sent is not replayed again (each replays the log).
                limiter(self.settings).check_request(self.client_addr or "unknown", self.lang)
                if turn in self._finished:
                    raise RateLimited("replayed", retry_after=60, public_message=(
                        "This answer was already sent on this connection."))
                self.ensure_idle()
                self.sub, self.follower = follow_existing(
                    self.redis, self.settings, self.relay, self.user, turn, after,
                    sink=self.inbox)
                log.info("turn %s: resumed over WebSocket after seq %d", turn, after)
                self.relay_frames(self.follower.catch_up())
            elif kind == "cancel":
                self.cancel(parse_cancel(frame))
            else:
                self.send(frame_types.pong())
        except AssistantError as exc:
            ref: Any = frame.get("turn") if isinstance(frame, dict) and frame.get(
                "type") != "ask" else None
            self.send(frame_types.error_of(exc, ref if isinstance(ref, str) else None))

    def flush_before_restart(self) -> None:
        """Before the 1012 close: the current turn's frames logged so far, its `accepted`
        at least. So a client closed with 1012 knows every turn this socket started, and one
        closed before any `accepted` knows its ask was never taken and asks again elsewhere
        (assistant_cli/client.py, the panel): no turn runs unseen, none runs twice."""
        if self.follower is None or self.follower.done:
            return
        try:
            self.relay_frames(self.follower.catch_up())
        except (redis.RedisError, ConnectionClosed):
            pass  # the client resumes from what it has, or learns nothing: as before

    def ensure_idle(self) -> None:
        """One turn at a time per socket."""
        if self.follower is not None and not self.follower.done:
            raise RateLimited("turn running", retry_after=5,
                              public_message="Please wait for the current answer to finish.")
        self.end_turn()

    def cancel(self, turn: str) -> None:
        """Ask the worker to stop a turn of this user (it answers with an error frame 499)."""
        cancel_turn(self.redis, self.settings, self.user, turn)

    def relay_frames(self, frames: list[Frame]) -> None:
        """Send frames as they were published; when the turn has ended, drop its
        subscription."""
        for f in frames:
            self.ws.send(f.text)
            self.last_sent = time.monotonic()
        if self.follower is not None and self.follower.done:
            self._finished.add(self.follower.turn)
            self.end_turn()

    def renew_place(self) -> None:
        """Renew the socket's lease under the caps every third of the lease."""
        if self.place is None:
            return
        leases = socket_leases(self.settings)
        if time.monotonic() - self._renewed < leases.renew_every_s:
            return
        self._renewed = time.monotonic()
        leases.renew(self.place.user, self.place.bucket, self.place.socket_id)

    def check_expiry(self) -> None:
        """Close the socket once the app token it was opened with has expired."""
        if time.time() >= self.expires_at:
            self.ws.close(CLOSE_TOKEN_EXPIRED, TOKEN_EXPIRED_REASON)
            raise ConnectionClosed(CLOSE_TOKEN_EXPIRED, "token expired")

    def on_tick(self) -> None:
        """A second without frames: watch the turn, ping while silent, close when idle."""
        self.check_expiry()
        if self.follower is not None and not self.follower.done:
            self.relay_frames(self.follower.watch())
        elif time.monotonic() - self.last_heard > self.settings.ws_idle_s:
            self.ws.close(1000, "Closed after a period without activity.")
            raise ConnectionClosed(1000, "idle")
        if self.follower is not None and not self.follower.done and \
                time.monotonic() - self.last_sent >= self.settings.ping_interval_s:
            self.send(frame_types.ping())

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
    s = settings()
    place: SocketPlace = g.ws_place
    session = Session(ws, g.ws_grant, s, relay_for_process(), g.get("ws_client"), place,
                      preferred_lang())
    OPEN_SOCKETS.inc()
    try:
        session.run()
    except ConnectionClosed:
        pass
    except AssistantError as exc:
        try:
            session.send(frame_types.error_of(exc))
        except ConnectionClosed:
            pass
    except redis.RedisError:
        log.warning("socket ended: Redis unavailable")
    finally:
        OPEN_SOCKETS.dec()
        socket_leases(s).release(place.user, place.bucket, place.socket_id)
