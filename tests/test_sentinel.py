"""Redis with Sentinel: the URL form and its errors, one factory that follows a failover (the
client, pub/sub, limits fail-closed during the switch), and what happens when a failover
loses the newest frames of a turn (asynchronous replication): the worker and the relay both
see it and end the turn with an error frame, never a hole in its text.

The failover tests run a real primary, replica and three Sentinels (tests/sentinel_set.py);
the whole stack under a failover mid-turn is tests/test_faults.py's Sentinel round.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from assistant_cli import stack
from shared import keys
from shared.celery_config import celery_config
from shared.config import settings_from_env, validate
from shared.errors import ConfigError, Unavailable
from shared.frames import FrameLog, NotNext
from shared.limits import Admission, Leases, Limiter
from shared.redis_client import redis_client
from shared.redis_url import SentinelTarget, sentinel_target
from tests.conftest import ALLOC, VAR
from tests.sentinel_set import SentinelSet, start_sentinel_set
from web.follow import INTERRUPTED, TurnFollower
from web.relay import RESYNC, Relay
from worker.emit import FramesLost, TurnEmitter

REDIS_URL = ALLOC.redis_url("test_sentinel (frames lost)")

# --- the URL -----------------------------------------------------------------------------


def test_a_sentinel_url_names_the_sentinels_the_primary_and_the_database() -> None:
    t = sentinel_target("sentinel://:s3cret@10.0.0.5:26379,[::1]:26380,redis-b:26381/mymaster/2")
    assert t == SentinelTarget((("10.0.0.5", 26379), ("::1", 26380), ("redis-b", 26381)),
                               "mymaster", 2, None, "s3cret")
    assert sentinel_target("sentinel://h:1/svc") == SentinelTarget((("h", 1),), "svc", 0)
    assert sentinel_target("redis://127.0.0.1:6379/0") is None
    # The broker's form: one URL per Sentinel, the password for the primary in each.
    assert t.kombu_url() == ("sentinel://:s3cret@10.0.0.5:26379/2;sentinel://:s3cret@[::1]:26380/2;"
                             "sentinel://:s3cret@redis-b:26381/2")
    assert "s3cret" not in t.describe()


@pytest.mark.parametrize("url, says", [
    ("sentinel://10.0.0.5:26379", "service name is missing"),
    ("sentinel://10.0.0.5/mymaster", "is not a host:port"),
    ("sentinel://10.0.0.5:26379,/mymaster", "is not a host:port"),
    ("sentinel://10.0.0.5:99999/mymaster", "out of range"),
    ("sentinel://10.0.0.5:26379/mymaster/zero", "whole number"),
    ("sentinel://10.0.0.5:26379/my master", "service name may hold"),
    ("sentinel://10.0.0.5:26379/mymaster/0/extra", "only a service name"),
    ("sentinel://secretonly@10.0.0.5:26379/mymaster", "user:password"),
    ("sentinel://h:1/mymaster?master_name=x", "no query"),
])
def test_a_malformed_sentinel_url_is_refused_at_start_with_the_form(url: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate(settings_from_env({"ASSISTANT_PROFILE": "test", "ASSISTANT_REDIS_URL": url}))
    assert says in str(err.value)
    assert "sentinel://[[user]:password@]host:port" in str(err.value)
    assert "secretonly" not in str(err.value)


def test_the_broker_follows_the_sentinels_by_the_primarys_name() -> None:
    conf = celery_config(settings_from_env({
        "ASSISTANT_PROFILE": "test",
        "ASSISTANT_REDIS_URL": "sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster/3"}))
    assert conf["broker_url"] == "sentinel://127.0.0.1:26379/3;sentinel://127.0.0.1:26380/3"
    assert conf["broker_transport_options"]["master_name"] == "mymaster"
    assert conf["broker_transport_options"]["visibility_timeout"] > 0
    plain = celery_config(settings_from_env({"ASSISTANT_PROFILE": "test",
                                             "ASSISTANT_REDIS_URL": REDIS_URL}))
    assert plain["broker_url"] == REDIS_URL
    assert "master_name" not in plain["broker_transport_options"]


# --- a real failover ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def sentinels() -> Iterator[SentinelSet]:
    sup = stack.Supervisor(VAR / "log")
    try:
        yield start_sentinel_set(sup)
    finally:
        sup.stop_all()


def _until(check: object, timeout_s: float = 20.0) -> float:
    """Seconds until check() returns without a Redis error (it is retried until then)."""
    start = time.monotonic()
    while True:
        try:
            check()  # type: ignore[operator]
            return time.monotonic() - start
        except (redis.RedisError, Unavailable):
            if time.monotonic() - start > timeout_s:
                raise
            time.sleep(0.1)


def test_the_client_pubsub_and_limits_follow_a_failover(sentinels: SentinelSet) -> None:
    settings = settings_from_env({"ASSISTANT_PROFILE": "test",
                                  "ASSISTANT_REDIS_URL": sentinels.url(4),
                                  "ASSISTANT_MAX_TURNS_PER_USER": "1000",
                                  "ASSISTANT_MAX_TURNS_PER_PROCESS": "1000",
                                  "ASSISTANT_USER_MESSAGE_LIMIT": "100000/hour",
                                  "ASSISTANT_CLIENT_MESSAGE_LIMIT": "100000/hour",
                                  "ASSISTANT_CLIENT_REQUEST_LIMIT": "100000/hour",
                                  "ASSISTANT_GLOBAL_MESSAGE_LIMIT": "100000/hour"})
    client = redis_client(settings)
    client.set("ba:test:before", "1")
    relay = Relay(client)
    turn = uuid.uuid4().hex
    sub = relay.subscribe(turn)
    limiter = Limiter(settings, client)
    admission = Admission(limiter, Leases(settings, client), client)
    limiter.check_request("203.0.113.9")
    refused: list[Unavailable] = []
    other: list[BaseException] = []
    stop = threading.Event()

    def ask_while_switching() -> None:
        # Limits are fail-closed: while there is no primary, a check refuses (503), never
        # lets through uncounted.
        while not stop.is_set():
            try:
                limiter.check_request("203.0.113.9")
                admission.admit("sentinel-user", "hi", uuid.uuid4().hex, "web-test")
            except Unavailable as exc:
                refused.append(exc)
            except Exception as exc:  # noqa: BLE001 - anything but a plain refusal fails
                other.append(exc)
            time.sleep(0.05)

    asker = threading.Thread(target=ask_while_switching)
    asker.start()
    killed = sentinels.kill_primary()
    try:
        took = _until(lambda: client.set("ba:test:after", "1"))
        # Pub/sub: the relay re-subscribes on the new primary, and a frame published there
        # reaches the socket's subscription.
        _until(lambda: _published(client, turn) or (_ for _ in ()).throw(
            redis.ConnectionError("relay not re-subscribed yet")), 20)
        # First the relay's word that it subscribed again (the session reads the log for
        # what was published meanwhile), then the live frame.
        assert sub.get(timeout=5) == RESYNC
        frame = sub.get(timeout=5)
        assert frame is not None and frame.type == "token", frame
    finally:
        stop.set()
        asker.join()
        sentinels.recover(killed)
    assert took < 15, took
    assert client.get("ba:test:before") == b"1"  # replicated before the kill
    assert not other, other
    assert refused, "no check was refused while there was no primary"
    assert all(e.code == 503 for e in refused)
    limiter.check_request("203.0.113.9")  # and they count again on the new primary


def _published(client: redis.Redis, turn: str) -> bool:
    text = f'{{"seq":1,"type":"token","turn":"{turn}","text":"x"}}'
    return int(client.publish(keys.turn_channel(turn), text)) > 0  # type: ignore[arg-type]


# --- frames lost in a failover -----------------------------------------------------------


@pytest.fixture()
def client(services: stack.Supervisor) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(REDIS_URL)
    try:
        yield c
    finally:
        c.close()


def _lose_newest(client: redis.Redis, turn: str, keep_through: int) -> None:
    """What a failover to a replica that lagged leaves: the log without its newest frames."""
    log = keys.turn_log(turn)
    kept = client.xrange(log, max=f"{keep_through}-1")
    client.delete(log)  # a replica's copy: its stream ends at its own newest entry
    for entry_id, fields in kept:
        client.xadd(log, fields, id=entry_id)


def _turn(client: redis.Redis, tokens: int) -> tuple[str, FrameLog]:
    turn = uuid.uuid4().hex
    log = FrameLog(client, turn, 60)
    log.append({"type": "accepted", "turn": turn})
    for i in range(tokens):
        log.append({"type": "token", "turn": turn, "text": f"w{i} "})
    return turn, log


def test_an_append_that_expects_another_seq_writes_nothing(client: redis.Redis) -> None:
    turn, log = _turn(client, 2)
    with pytest.raises(NotNext):
        log.append({"type": "token", "turn": turn, "text": "late"}, expect=2)
    assert log.append({"type": "token", "turn": turn, "text": "w2 "}, expect=3) == 3
    assert [f.seq for f in log.frames_after(-1)] == [0, 1, 2, 3]
    assert FrameLog.text(3, {"type": "token", "turn": turn, "text": "w2 "}) == \
        log.frames_after(2)[0].text


def test_the_worker_ends_the_turn_when_the_log_lost_what_it_sent(client: redis.Redis) -> None:
    turn = uuid.uuid4().hex
    log = FrameLog(client, turn, 60)
    log.append({"type": "accepted", "turn": turn})
    emit = TurnEmitter(log)
    for i in range(5):
        emit.token(f"w{i} ")
    assert emit.seq == 5
    _lose_newest(client, turn, 3)  # frames 4 and 5 were published, never replicated
    with pytest.raises(FramesLost):
        emit.token("w5 ")
    frames = log.frames_after(-1)
    # Nothing renumbered into the seqs clients saw: the log goes on with one error frame.
    assert [(f.seq, f.type) for f in frames] == [(0, "accepted"), (1, "token"), (2, "token"),
                                                 (3, "token"), (4, "error")]
    assert frames[-1].fields()["message"] == INTERRUPTED


def test_a_retried_append_that_had_landed_is_not_written_twice(client: redis.Redis) -> None:
    turn = uuid.uuid4().hex
    log = FrameLog(client, turn, 60)
    log.append({"type": "accepted", "turn": turn})
    emit = TurnEmitter(log)
    emit.token("w0 ")
    # The reply to the next append is lost after it landed: the retry finds it logged.
    log.append({"type": "token", "turn": turn, "text": "w1 "})
    emit.token("w1 ")
    emit.token("w2 ")
    assert [f.fields().get("text") for f in log.frames_after(-1)] == [None, "w0 ", "w1 ", "w2 "]
    assert emit.seq == 3


def _follower(client: redis.Redis, turn: str) -> TurnFollower:
    settings = settings_from_env({"ASSISTANT_PROFILE": "test",
                                  "ASSISTANT_REDIS_URL": REDIS_URL})
    return TurnFollower(client, settings, turn)


def test_the_relay_ends_the_turn_when_a_renumbered_frame_reaches_it(
        client: redis.Redis) -> None:
    turn, log = _turn(client, 5)
    follower = _follower(client, turn)
    assert [f.seq for f in follower.catch_up()] == [0, 1, 2, 3, 4, 5]
    _lose_newest(client, turn, 3)
    # The worker (of an older release, or before it noticed) writes seq 4 again: a frame this
    # client was sent with another text. Not dropped as a duplicate: the turn ends.
    seq = log.append({"type": "token", "turn": turn, "text": "w5 "})
    assert seq == 4
    out = follower.accept(log.frames_after(3)[0])
    assert [(f.seq, f.type) for f in out] == [(6, "error")]
    assert out[0].fields()["message"] == INTERRUPTED
    assert follower.done


def test_the_relay_ends_the_turn_when_its_last_frame_is_gone_from_the_log(
        client: redis.Redis) -> None:
    turn, log = _turn(client, 5)
    follower = _follower(client, turn)
    follower.catch_up()
    _lose_newest(client, turn, 3)
    # The live frames after the switch were missed (the subscriber was reconnecting): what
    # the log holds now is read, and frame 5 is not in it.
    out = follower.catch_up()
    assert [(f.seq, f.type) for f in out] == [(6, "error")]


def test_after_the_relays_resync_the_follower_reads_what_it_missed(
        client: redis.Redis) -> None:
    turn, log = _turn(client, 2)
    follower = _follower(client, turn)
    follower.catch_up()
    log.append({"type": "token", "turn": turn, "text": "w2 "})  # published to nobody
    assert [f.seq for f in follower.accept(RESYNC)] == [3]


def test_an_identical_duplicate_is_still_dropped_quietly(client: redis.Redis) -> None:
    turn, log = _turn(client, 3)
    follower = _follower(client, turn)
    sent = follower.catch_up()
    assert follower.accept(sent[2]) == []  # the relay's copy of a frame read from the log
    assert follower.catch_up() == [] and not follower.done
    log.append({"type": "token", "turn": turn, "text": "w3 "})
    assert [f.seq for f in follower.catch_up()] == [4]
