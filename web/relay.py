"""One Redis pub/sub connection per web process, fanning turn frames out to the sockets.

A socket subscribes to its turn's channel (and waits for Redis to confirm) before the turn is
enqueued, so nothing is published before someone listens. Frames carry `seq`; a gap (e.g. a
reconnect of this subscriber) is filled from the turn's replay log by the caller. A frame is
handed on as the text that was published: only its head (seq, type) is read here.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import redis

from shared import keys
from shared.frames import Frame, head

log = logging.getLogger(__name__)
CONTROL_PREFIX = keys.PREFIX + "relay:"
# Handed to a subscription when its channel is subscribed again after a reconnect (e.g. to a
# promoted replica): frames published meanwhile reached nobody, read them from the log now.
RESYNC = Frame(-1, "resync", "")


@dataclass
class Subscription:
    """Frames of one turn for one socket."""

    turn: str
    channel: str
    frames: queue.Queue[Frame] = field(default_factory=queue.Queue)
    confirmed: threading.Event = field(default_factory=threading.Event)
    # A session's own inbox, when it also waits for client frames: items ("frame", frame).
    sink: queue.Queue[tuple[str, Any]] | None = None

    def deliver(self, frame: Frame) -> None:
        """Hand a live frame to whoever waits for it."""
        if self.sink is not None:
            self.sink.put(("frame", frame))
        else:
            self.frames.put(frame)

    def get(self, timeout: float) -> Frame | None:
        """The next frame, or None after timeout seconds of silence."""
        try:
            return self.frames.get(timeout=timeout)
        except queue.Empty:
            return None


class Relay:
    """The per-process subscriber; start() after fork (it runs a listener thread/greenlet)."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._subs: dict[str, list[Subscription]] = {}
        self._lock = threading.Lock()
        self._pubsub: Any = None
        self._control = f"{CONTROL_PREFIX}{os.getpid()}"
        self._started = False
        self._ready = threading.Event()

    def start(self) -> None:
        """Start the listener once per process."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._listen_forever, name="relay", daemon=True).start()

    def subscribe(self, turn: str, timeout_s: float = 5.0,
                  sink: queue.Queue[tuple[str, Any]] | None = None) -> Subscription:
        """Subscribe a socket to a turn and wait until Redis has confirmed the subscription."""
        self.start()
        if not self._ready.wait(timeout_s):
            raise redis.ConnectionError("relay not connected")
        channel = keys.turn_channel(turn)
        sub = Subscription(turn, channel, sink=sink)
        with self._lock:
            existing = self._subs.setdefault(channel, [])
            existing.append(sub)
            first = len(existing) == 1
            if not first:
                sub.confirmed.set()
            else:
                self._pubsub.subscribe(channel)
        if not sub.confirmed.wait(timeout_s):
            self.unsubscribe(sub)
            raise redis.TimeoutError("subscription not confirmed")
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop delivering a turn's frames to this socket."""
        with self._lock:
            subs = self._subs.get(sub.channel, [])
            if sub in subs:
                subs.remove(sub)
            if not subs:
                self._subs.pop(sub.channel, None)
                if self._pubsub is not None:
                    try:
                        self._pubsub.unsubscribe(sub.channel)
                    except redis.RedisError:
                        pass

    def _listen_forever(self) -> None:
        while True:
            try:
                self._listen()
            except redis.RedisError as exc:
                log.warning("relay lost Redis (%s); reconnecting", type(exc).__name__)
            self._ready.clear()
            time.sleep(0.5)

    def _listen(self) -> None:
        pubsub = self._client.pubsub(ignore_subscribe_messages=False)
        with self._lock:
            self._pubsub = pubsub
            channels = [self._control, *self._subs]
        pubsub.subscribe(*channels)
        self._ready.set()
        try:
            for message in pubsub.listen():
                self._dispatch(message)
        finally:
            pubsub.close()

    def _dispatch(self, message: dict[str, Any]) -> None:
        channel = message.get("channel")
        channel = channel.decode() if isinstance(channel, bytes) else channel
        kind = message.get("type")
        with self._lock:
            subs = list(self._subs.get(channel or "", ()))
        if kind == "subscribe":
            for sub in subs:
                if sub.confirmed.is_set():
                    sub.deliver(RESYNC)
                sub.confirmed.set()
        elif kind == "message":
            data = message.get("data")
            frame = head(data) if isinstance(data, bytes) else None
            if frame is None:
                log.warning("relay: a message that is not a frame dropped")
                return
            for sub in subs:
                sub.deliver(frame)
