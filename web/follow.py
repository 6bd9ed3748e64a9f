"""Starting a turn and following its frames, shared by the WebSocket and SSE transports.

A follower delivers a turn's frames in seq order without gaps or duplicates (live frames from
the relay, anything missed from the replay log) and watches the worker: a turn whose worker
died (its lease expired) is re-run once, and otherwise ended with an error frame.

Replication to a Redis replica is asynchronous: after a Sentinel failover the log may lack its
newest frames, ones this client was already sent, and the worker's next frames would reuse
their seqs. So the follower remembers a hash of the newest frames it sent, reads the log from
its last frame on (inclusive), and ends the turn with an error frame when that frame is gone
or a frame with a seq it sent differs: never a hole in the text (docs/operations.md).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import redis

from shared import frame_types, keys, turns
from shared.auth import user_hash
from shared.config import Settings
from shared.errors import AssistantError, NotFound, TimedOut, Unavailable
from shared.frames import Frame, FrameLog, TurnClosed, encode
from shared.language import detect_language
from shared.metrics import TURN_STARTS
from shared.turn_request import TurnRequest
from web.handoff import build_request
from web.protocol import Ask
from web.queue import turn_queue
from web.relay import Relay, Subscription

log = logging.getLogger(__name__)
INTERRUPTED = "The answer was interrupted. Please ask again."
# How many of the newest frames sent a follower can compare with the log (a hash each):
# replication lag is a few frames, not hundreds.
SENT_KEPT = 256
WATCH_S = 2.0  # silence before the watchdog looks, and between its looks


@dataclass
class TurnFollower:
    """Ordering, gap filling and the dead-worker watchdog for one turn."""

    client: redis.Redis
    settings: Settings
    turn: str
    last: int = -1
    attempt: int = 1
    done: bool = False
    log: FrameLog = field(init=False)
    redis_down_since: float | None = None
    # Hashes of the texts of the newest logged frames sent to this client, the last one's
    # last (their seqs run up to self.last without a break).
    _sent: deque[int] = field(init=False, default_factory=lambda: deque(maxlen=SENT_KEPT))
    # When a frame last arrived, or the watchdog last looked (monotonic seconds).
    _heard: float = field(init=False, default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.log = FrameLog(self.client, self.turn, self.settings.replay_ttl_s)

    def accept(self, frame: Frame) -> list[Frame]:
        """Frames to send now, given a live frame (older ones are dropped, gaps filled)."""
        if self.done:
            return []
        if frame.seq < 0:
            return self.catch_up()  # the relay's RESYNC: it subscribed again after a reconnect
        if frame.seq <= self.last:
            # A duplicate, or, when its text differs, a log that lost frames and renumbered.
            return self._lost() if self._differs(frame) else []
        if frame.seq == self.last + 1:
            return self._take([frame])
        return self._take_logged(self.log.frames_after(self._from()))

    def catch_up(self) -> list[Frame]:
        """Everything in the replay log after the last frame sent."""
        return self._take_logged(self.log.frames_after(self._from()))

    def _from(self) -> int:
        """Where a log read starts: with the last frame sent (it must still be there)."""
        return max(self.last - 1, -1)

    def _differs(self, frame: Frame) -> bool:
        back = self.last - frame.seq
        if not 0 <= back < len(self._sent):
            return False  # older than what is kept (a replica never lags that far): a copy
        return self._sent[-1 - back] != hash(frame.text)

    def _take_logged(self, batch: list[Frame]) -> list[Frame]:
        """Take frames read from the log from the last one sent on: that one must be there."""
        if self.done or self.last < 0:
            return self._take(batch)
        if not batch or batch[0].seq != self.last:
            return self._lost()
        return self._take(batch)

    def _lost(self) -> list[Frame]:
        """The log lost frames this client was sent: end the turn here, with an error frame
        (the worker's next append finds the log behind and ends the turn there too)."""
        log.warning("turn %s: the replay log lost frames (a Redis failover); ended", self.turn)
        self.done = True
        exc = Unavailable("frames lost", public_message=INTERRUPTED)
        return [_frame(frame_types.error_of(exc, self.turn, self.last + 1))]

    def _take(self, batch: list[Frame]) -> list[Frame]:
        if batch:
            self._heard = time.monotonic()
        out: list[Frame] = []
        for f in batch:
            if not self.done and f.seq <= self.last and self._differs(f):
                return out + self._lost()
            if self.done or f.seq != self.last + 1:
                continue
            out.append(f)
            self.last = f.seq
            self._sent.append(hash(f.text))
            if f.type == "restart":
                self.attempt = int(f.fields().get("attempt", self.attempt))
            if f.terminal:
                # The slot was freed by whoever logged this frame (the log's append script).
                self.done = True
        return out

    def watch(self) -> list[Frame]:
        """On silence: fill gaps from the log, then check that a worker still runs the turn.

        While Redis is unreachable (a restart) it waits, up to the first-token limit, then
        ends the turn for this client with an error frame; never silence. It looks only after
        WATCH_S without a frame, and then every WATCH_S: a streaming turn is plainly alive,
        and a thousand followed turns cost a thousand round trips a second at one-second
        checks (the worker's lease is 6 s, so a death is still seen within a few seconds).
        """
        if time.monotonic() - self._heard < WATCH_S:
            return []
        self._heard = time.monotonic()
        try:
            frames = self._watch()
        except redis.RedisError:
            now = time.monotonic()
            self.redis_down_since = self.redis_down_since or now
            if now - self.redis_down_since <= self.settings.first_token_timeout_s:
                return []
            self.done = True
            exc = Unavailable("redis unreachable")
            return [_frame(frame_types.error_of(exc, self.turn, self.last + 1))]
        self.redis_down_since = None
        return frames

    def _watch(self) -> list[Frame]:
        # Everything the check needs, in one round trip: the frames after the last one sent,
        # the log's head, the re-run flag, both attempts' start flags, the worker's lease.
        pipe = self.client.pipeline(transaction=False)
        self.log.read_after(pipe, self._from())
        self.log.read_head(pipe)
        pipe.exists(keys.turn_rerun(self.turn))
        for n in range(1, turns.MAX_ATTEMPTS + 1):
            pipe.exists(keys.turn_started(self.turn, n))
        pipe.exists(keys.turn_lease(self.turn))
        after, first, rerun, *started, leased = pipe.execute()
        missed = self._take_logged(FrameLog.frames(after))
        if missed or self.done:
            return missed
        head = FrameLog.first(first)
        if head is None or head[0].seq != 0:
            # The replay log starts (seq 0) before the turn is enqueued and outlives it: its
            # head gone means Redis lost its data (a restart), and with it the turn's state.
            return self._abandon(Unavailable("turn state lost", public_message=INTERRUPTED))
        attempt = 2 if rerun else self.attempt
        if started[attempt - 1]:
            if leased:
                return []
            late = self.catch_up()  # it may have finished between our reads
            if late or self.done:
                return late
            if attempt < turns.MAX_ATTEMPTS and turns.claim_rerun(
                    self.client, self.turn, self.settings.replay_ttl_s):
                if turns.request_stored(self.client, self.turn):
                    log.warning("turn %s: worker lost; re-running it", self.turn)
                    turn_queue.enqueue(self.turn, attempt + 1)
                    self.attempt = attempt + 1
                    return []
            return self._abandon(Unavailable("worker lost twice"))
        created = head[1] or time.time()
        if time.time() - created > self.settings.first_token_timeout_s:
            return self._abandon(TimedOut("no worker took the turn in time"))
        return []

    def _abandon(self, exc: Unavailable | TimedOut) -> list[Frame]:
        """End a turn nobody runs any more, once, in the log so every client sees it; the
        log's append frees its in-flight slot (no worker is left to)."""
        if self.client.set(keys.turn_abandoned(self.turn), "1", nx=True,
                           ex=self.settings.replay_ttl_s):
            try:
                self.log.append(frame_types.error_of(exc, self.turn),
                                seq_if_lost=self.last + 1)
            except TurnClosed:
                pass  # a worker ended it first: its last frame is in the log
        out = self.catch_up()
        if not self.done:
            # The logged end is not readable from here (another process's claim not yet
            # written, or a log with a hole after a restart): end it for this client anyway.
            self.done = True
            out.append(_frame(frame_types.error_of(exc, self.turn, self.last + 1)))
        return out


def _frame(frame: dict[str, Any]) -> Frame:
    """A frame made here rather than logged (it reaches only this client)."""
    return Frame(int(frame["seq"]), str(frame["type"]), encode(frame))


def admit_turn(settings: Settings, user: str, message: str, lang: str,
               client_addr: str | None = None, count_request: bool = False) -> str:
    """Every limit of a new turn, before any app API or model call: its id, holding a slot.

    One round trip: the client address's request window when count_request (an SSE start is
    a request and a message at once), an in-flight slot (a lease the worker renews while the
    turn runs), then the message quotas (per user, per client address, global, daily).
    """
    from web.guard import admission, process_id

    turn = uuid.uuid4().hex
    try:
        admission(settings).admit(user, message, turn, process_id(), lang, client_addr,
                                  client_addr if count_request else None)
    except AssistantError as exc:
        TURN_STARTS.labels(type(exc).__name__.lower()).inc()
        raise
    TURN_STARTS.labels("accepted").inc()
    return turn


def release_admitted(settings: Settings, turn: str) -> None:
    """Give back the slot of an admitted turn that will not start (e.g. the app refused)."""
    from web.guard import leases

    leases(settings).release(turn)


def start_turn(client: redis.Redis, settings: Settings, relay: Relay, request: TurnRequest,
               sink: Any = None) -> tuple[Subscription, TurnFollower]:
    """An admitted turn: subscribe, record owner and request, log `accepted` (seq 0), enqueue
    its ids."""
    from web.guard import leases

    turn = request.turn
    try:
        sub = relay.subscribe(turn, sink=sink)
    except redis.RedisError as exc:
        leases(settings).release(turn)
        raise Unavailable("cannot subscribe") from exc
    try:
        ttl = settings.replay_ttl_s
        pipe = client.pipeline(transaction=False)
        pipe.set(keys.turn_owner(turn), request.user, ex=ttl)
        turns.store_request(pipe, request, ttl)
        pipe.execute()
        follower = TurnFollower(client, settings, turn)
        # The web tier writes only this first frame (seq 0): from here on the worker owns
        # the turn's log and frees its slot with the terminal frame.
        follower.log.append(frame_types.accepted(turn))
        turn_queue.enqueue(turn, 1)
    except (redis.RedisError, OSError) as exc:
        relay.unsubscribe(sub)
        leases(settings).release(turn)
        raise Unavailable("cannot enqueue") from exc
    return sub, follower


def open_turn(client: redis.Redis, settings: Settings, relay: Relay, user: str,
              app_token: str, ask: Ask, client_addr: str | None,
              sink: Any = None, count_request: bool = False
              ) -> tuple[Subscription, TurnFollower]:
    """A new turn: every limit first, then its TurnRequest (the project read with the user's
    token), then start_turn. A user over a quota causes no app API call."""
    # Detected once, here: the limits count per language and the worker answers in it.
    lang = detect_language(ask.message)
    turn = admit_turn(settings, user, ask.message, lang, client_addr, count_request)
    try:
        request = build_request(settings, app_token, turn, user, ask, lang)
    except BaseException:
        release_admitted(settings, turn)
        raise
    return start_turn(client, settings, relay, request, sink=sink)


def owns(client: redis.Redis, user: str, turn: Any) -> bool:
    """Whether `turn` is a turn of this user (only they may resume or cancel it)."""
    if not isinstance(turn, str) or not turn or len(turn) > 64:
        return False
    try:
        owner: Any = client.get(keys.turn_owner(turn))
    except redis.RedisError as exc:
        raise Unavailable("redis unavailable") from exc
    if isinstance(owner, bytes):
        owner = owner.decode()
    return owner is not None and owner == user_hash(user)


def follow_existing(client: redis.Redis, settings: Settings, relay: Relay, user: str,
                    turn: str, after: int, sink: Any = None
                    ) -> tuple[Subscription, TurnFollower]:
    """Resume a turn of this user after seq `after`: subscribe first, then replay the log."""
    if not owns(client, user, turn):
        raise NotFound("unknown turn", public_message="This answer is no longer available.")
    sub = relay.subscribe(turn, sink=sink)
    follower = TurnFollower(client, settings, turn, last=after)
    newest = follower.log.last()
    if newest is not None and newest.terminal:
        # A finished turn resends its end (else the watchdog, finding nothing after `after`,
        # would take the finished worker for a dead one and re-run the turn). A running one
        # goes on from `after`: a client that has seen past the log's end (its newest frames
        # lost in a failover) finds that frame missing at the catch-up and gets an error.
        follower.last = min(after, newest.seq - 1)
    if client.exists(keys.turn_rerun(turn)):
        follower.attempt = 2
    return sub, follower
