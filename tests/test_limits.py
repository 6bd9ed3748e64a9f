"""Limits (section 9, B-2, B-28) against the real Redis on 127.0.0.1:6379, database 7."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
import redis
from limits import parse
from limits.storage import RedisStorage
from limits.strategies import FixedWindowRateLimiter

from shared import keys
from shared.config import Settings, settings_from_env
from shared.errors import ConfigError, RateLimited, TooLarge, Unavailable
from shared.limits import BUSY_RETRY_AFTER_S, Leases, Limiter

REDIS_URL = "redis://127.0.0.1:6379/7"
DOWN_URL = "redis://127.0.0.1:6399/0"  # nothing listens here

Make = Callable[..., Settings]


def make_settings(url: str = REDIS_URL, **env: str) -> Settings:
    """Test settings: ASSISTANT_<NAME> overrides given as NAME=value."""
    return settings_from_env({"ASSISTANT_PROFILE": "test", "ASSISTANT_REDIS_URL": url,
                              **{f"ASSISTANT_{k}": v for k, v in env.items()}})


@pytest.fixture()
def client() -> Iterator[redis.Redis]:
    """A client on database 7, emptied before and after each test."""
    c = redis.Redis.from_url(REDIS_URL)
    c.flushdb()
    try:
        yield c
    finally:
        c.flushdb()
        c.close()


def refused(fn: Callable[[], None]) -> RateLimited:
    """Run fn, expecting a 429; return it."""
    with pytest.raises(RateLimited) as info:
        fn()
    assert info.value.code == 429
    return info.value


# --- rate limits ---------------------------------------------------------------------------


def test_per_user_limit_refuses_with_plain_sentence(client: redis.Redis) -> None:
    lim = Limiter(make_settings(USER_MESSAGE_LIMIT="3/hour"), client)
    for _ in range(3):
        lim.check_message("alice", "hello", "en")
    err = refused(lambda: lim.check_message("alice", "hello", "en"))
    assert 3500 <= err.retry_after <= 3600
    assert err.public_message == ("You have sent 3 messages in the last hour. "
                                  "Please try again in 60 minutes.")
    lim.check_message("bob", "hello", "en")  # another user has their own quota


def test_czech_sentence_for_cs(client: redis.Redis) -> None:
    lim = Limiter(make_settings(USER_MESSAGE_LIMIT="3/hour"), client)
    for _ in range(3):
        lim.check_message("alice", "ahoj", "cs")
    err = refused(lambda: lim.check_message("alice", "ahoj", "cs"))
    assert err.public_message == ("Za poslední hodinu jste poslali 3 zprávy. "
                                  "Zkuste to prosím znovu za 60 minut.")
    assert "You have" in refused(lambda: lim.check_message("alice", "hi", "de")).public_message


def test_per_address_request_limit(client: redis.Redis) -> None:
    lim = Limiter(make_settings(CLIENT_REQUEST_LIMIT="2/minute"), client)
    lim.check_request("203.0.113.9")
    lim.check_request("203.0.113.9")
    err = refused(lambda: lim.check_request("203.0.113.9"))
    assert 55 <= err.retry_after <= 60
    assert err.public_message == ("Too many requests from your address (2 in the last minute). "
                                  "Please try again in 60 seconds.")
    cs = refused(lambda: lim.check_request("203.0.113.9", "cs")).public_message
    assert cs.startswith("Z vaší adresy přišlo příliš mnoho požadavků (2 za poslední minutu).")
    lim.check_request("198.51.100.7")


def test_moving_window_blocks_the_double_burst_a_fixed_window_allows(
        client: redis.Redis) -> None:
    """3 per 2 s: one hit at t=0, two at t=1.7, three at t=2.3.

    A fixed window opened at t=0 restarts at t=2.0 and takes all three late hits: five inside
    0.6 s. The moving window still holds the two t=1.7 hits at t=2.3, so it takes only one.
    """
    lim = Limiter(make_settings(USER_MESSAGE_LIMIT="3 per 2 seconds"), client)
    fixed = FixedWindowRateLimiter(RedisStorage(REDIS_URL, key_prefix="test-fixed"))
    item = parse("3 per 2 seconds")

    def moving_ok() -> bool:
        try:
            lim.check_message("edge", "hi", "en")
        except RateLimited:
            return False
        return True

    t0 = time.monotonic()
    assert moving_ok() and fixed.hit(item, "edge")
    time.sleep(max(0.0, t0 + 1.7 - time.monotonic()))
    assert [moving_ok() for _ in range(2)] == [True, True]
    assert [fixed.hit(item, "edge") for _ in range(2)] == [True, True]
    time.sleep(max(0.0, t0 + 2.3 - time.monotonic()))
    late_moving = [moving_ok() for _ in range(3)]
    late_fixed = [fixed.hit(item, "edge") for _ in range(3)]
    assert late_fixed == [True, True, True]  # 5 hits between t=1.7 and t=2.3
    assert late_moving == [True, False, False]  # never more than 3 in any 2 s
    err = refused(lambda: lim.check_message("edge", "hi", "en"))
    assert 1 <= err.retry_after <= 2  # the t=1.7 hits age out at t=3.7


def test_retry_after_is_when_a_slot_frees(client: redis.Redis) -> None:
    lim = Limiter(make_settings(USER_MESSAGE_LIMIT="2 per 3 seconds"), client)
    lim.check_message("carol", "a", "en")
    lim.check_message("carol", "b", "en")
    time.sleep(1.0)
    err = refused(lambda: lim.check_message("carol", "c", "en"))
    assert err.retry_after == 2
    assert err.public_message.endswith("Please try again in 2 seconds.")
    time.sleep(err.retry_after)
    lim.check_message("carol", "c", "en")  # waiting as told is enough


def test_message_over_4000_characters_is_413_before_any_redis_call() -> None:
    # Redis is down here: the length check is local and comes first.
    lim = Limiter(make_settings(DOWN_URL), redis.Redis.from_url(DOWN_URL))
    with pytest.raises(TooLarge) as info:
        lim.check_message("alice", "x" * 4001, "en")
    assert info.value.code == 413
    assert info.value.public_message == ("Your message is 4,001 characters long; the limit is "
                                         "4,000. Please shorten it.")
    with pytest.raises(TooLarge) as info:
        lim.check_message("alice", "x" * 4001, "cs")
    assert info.value.public_message == ("Vaše zpráva má 4\u00a0001 znaků, povolené maximum "
                                         "je 4\u00a0000. Zkraťte ji prosím.")
    with pytest.raises(Unavailable):  # exactly 4,000 passes the length check
        lim.check_message("alice", "x" * 4000, "en")


def test_global_refusal_does_not_consume_the_users_quota(client: redis.Redis) -> None:
    env = {"USER_MESSAGE_LIMIT": "3/hour"}
    tight = Limiter(make_settings(GLOBAL_MESSAGE_LIMIT="2/hour", **env), client)
    tight.check_message("alice", "1", "en")
    tight.check_message("alice", "2", "en")
    for _ in range(5):
        err = refused(lambda: tight.check_message("bob", "refused", "en"))
        assert "across all users" in err.public_message
    # With room globally, bob still has all 3 of his messages: the refusals cost him nothing.
    roomy = Limiter(make_settings(GLOBAL_MESSAGE_LIMIT="100/hour", **env), client)
    for _ in range(3):
        roomy.check_message("bob", "ok", "en")
    assert "You have sent 3" in refused(lambda: roomy.check_message("bob", "x", "en")
                                        ).public_message


def test_user_refusal_does_not_consume_the_global_limit(client: redis.Redis) -> None:
    lim = Limiter(make_settings(USER_MESSAGE_LIMIT="1/hour", GLOBAL_MESSAGE_LIMIT="3/hour"),
                  client)
    lim.check_message("alice", "1", "en")
    for _ in range(5):
        refused(lambda: lim.check_message("alice", "2", "en"))
    lim.check_message("bob", "1", "en")
    lim.check_message("carol", "1", "en")  # 3 accepted in all: alice's refusals took none


def test_optional_daily_cap_across_all_visitors(client: redis.Redis) -> None:
    off = Limiter(make_settings(), client)
    for i in range(5):
        off.check_message(f"user{i}", "hi", "en")
    client.flushdb()
    lim = Limiter(make_settings(DAILY_QUESTION_CAP="2"), client)
    lim.check_message("alice", "1", "en")
    lim.check_message("bob", "1", "en")
    err = refused(lambda: lim.check_message("carol", "1", "cs"))
    assert 86000 <= err.retry_after <= 86400
    assert err.public_message == ("Asistent dosáhl denního limitu dotazů od všech návštěvníků "
                                  "(2). Zkuste to prosím znovu za 24 hodin.")


def test_no_user_id_or_address_in_key_names(client: redis.Redis) -> None:
    lim = Limiter(make_settings(), client)
    lim.check_request("203.0.113.9")
    lim.check_message("alice@example.org", "hi", "en")
    Leases(make_settings(), client).acquire("alice@example.org", "t1", "web-1")
    names = [k.decode() for k in client.scan_iter("*")]
    assert names and all(n.startswith(keys.PREFIX) for n in names)
    assert not any("alice" in n or "203.0.113.9" in n for n in names)


def test_rate_limit_settings_are_validated() -> None:
    with pytest.raises(ConfigError):
        make_settings(USER_MESSAGE_LIMIT="lots")
    with pytest.raises(ConfigError):
        make_settings(GLOBAL_MESSAGE_LIMIT="10/month")
    with pytest.raises(ConfigError):
        make_settings(DAILY_QUESTION_CAP="-1")
    with pytest.raises(ConfigError):
        make_settings(MAX_TURNS_PER_USER="0")
    s = make_settings()
    assert (s.user_message_limit, s.client_request_limit, s.global_message_limit) == (
        "60/hour", "20/minute", "600/hour")
    assert (s.daily_question_cap, s.max_turns_per_user, s.max_turns_per_process,
            s.max_turns_total, s.max_message_chars) == (0, 2, 8, 0, 4000)


# --- in-flight leases ----------------------------------------------------------------------


def test_third_concurrent_turn_of_a_user_is_refused(client: redis.Redis) -> None:
    leases = Leases(make_settings(), client)
    leases.acquire("alice", "t1", "web-1")
    leases.acquire("alice", "t2", "web-2")
    err = refused(lambda: leases.acquire("alice", "t3", "web-1"))
    assert err.retry_after == BUSY_RETRY_AFTER_S
    assert err.public_message.startswith("You already have 2 answers in progress")
    cs = refused(lambda: leases.acquire("alice", "t3", "web-1", "cs")).public_message
    assert cs.startswith("Už se vám připravuje nejvyšší povolený počet odpovědí najednou (2).")
    leases.acquire("bob", "t4", "web-1")
    leases.acquire("alice", "t1", "web-1")  # the same turn again holds one slot, not two
    leases.release("t1")
    leases.acquire("alice", "t3", "web-1")


def test_process_cap(client: redis.Redis) -> None:
    leases = Leases(make_settings(MAX_TURNS_PER_PROCESS="3"), client)
    for i in range(3):
        leases.acquire(f"user{i}", f"t{i}", "web-1")
    err = refused(lambda: leases.acquire("user9", "t9", "web-1"))
    assert err.public_message == ("The assistant is busy answering other questions. "
                                  "Please try again in 5 seconds.")
    leases.acquire("user9", "t9", "web-2")  # another web process has room


def test_cluster_cap_is_optional(client: redis.Redis) -> None:
    leases = Leases(make_settings(), client)
    for i in range(12):  # off by default: only per-process caps apply
        leases.acquire(f"user{i}", f"a{i}", f"web-{i % 2}")
    client.flushdb()
    capped = Leases(make_settings(MAX_TURNS_TOTAL="2"), client)
    capped.acquire("alice", "t1", "web-1")
    capped.acquire("bob", "t2", "web-2")
    refused(lambda: capped.acquire("carol", "t3", "web-3"))
    capped.release("t2")
    capped.acquire("carol", "t3", "web-3")


def test_an_unrenewed_lease_frees_its_slot(client: redis.Redis) -> None:
    # A crashed holder simply stops renewing.
    leases = Leases(make_settings(SLOT_LEASE_S="1"), client)
    leases.acquire("alice", "t1", "web-1")
    leases.acquire("alice", "t2", "web-1")
    refused(lambda: leases.acquire("alice", "t3", "web-1"))
    time.sleep(1.1)
    leases.acquire("alice", "t3", "web-1")
    assert leases.renew("t1") is False  # a lapsed lease is not taken back


def test_renewing_keeps_the_slot(client: redis.Redis) -> None:
    leases = Leases(make_settings(SLOT_LEASE_S="1"), client)
    leases.acquire("alice", "t1", "web-1")
    leases.acquire("alice", "t2", "web-1")
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        assert leases.renew("t1") and leases.renew("t2")
        time.sleep(leases.renew_every_s)
    refused(lambda: leases.acquire("alice", "t3", "web-1"))
    # Every set expires with its last lease, so nothing is left behind.
    for key in (keys.slots_user("alice"), keys.slots_process("web-1"), keys.SLOTS_ALL,
                keys.slot_holder("t1")):
        assert 0 < client.pttl(key) <= 1000


def test_release_frees_the_slot_and_is_idempotent(client: redis.Redis) -> None:
    leases = Leases(make_settings(), client)
    leases.acquire("alice", "t1", "web-1")
    leases.acquire("alice", "t2", "web-1")
    leases.release("t1")
    leases.release("t1")
    leases.release("never-acquired")
    leases.acquire("alice", "t3", "web-1")
    assert leases.renew("t1") is False
    assert client.zcard(keys.SLOTS_ALL) == 2


def _race(n: int, acquire: Callable[[int], None]) -> list[int]:
    """Run acquire(i) for i in range(n) from n threads released at once; the winners' i."""
    gate = threading.Barrier(n)
    won: list[int] = []
    lock = threading.Lock()

    def run(i: int) -> None:
        gate.wait()
        try:
            acquire(i)
        except RateLimited:
            return
        with lock:
            won.append(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won


@pytest.mark.parametrize(("scope", "cap"), [("user", 2), ("process", 8), ("cluster", 5)])
def test_concurrent_acquires_never_exceed_a_cap(client: redis.Redis, scope: str,
                                                cap: int) -> None:
    settings = make_settings(MAX_TURNS_TOTAL="5" if scope == "cluster" else "0")
    # One client (own connection pool) per thread, like separate web processes.
    clients = [redis.Redis.from_url(REDIS_URL) for _ in range(20)]

    def acquire(i: int) -> None:
        user = "alice" if scope == "user" else f"user{i}"
        process = f"web-{i % 4}" if scope == "cluster" else "web-1"
        Leases(settings, clients[i]).acquire(user, f"t{i}", process)

    try:
        won = _race(20, acquire)
    finally:
        for c in clients:
            c.close()
    assert len(won) == cap
    assert client.zcard(keys.SLOTS_ALL) == cap


# --- Redis down ----------------------------------------------------------------------------


def test_redis_down_refuses_with_503() -> None:
    settings = make_settings(DOWN_URL)
    down = redis.Redis.from_url(DOWN_URL, socket_connect_timeout=1)
    lim, leases = Limiter(settings, down), Leases(settings, down)
    for call in (lambda: lim.check_request("203.0.113.9"),
                 lambda: lim.check_message("alice", "hello", "en"),
                 lambda: leases.acquire("alice", "t1", "web-1"),
                 lambda: leases.renew("t1")):
        with pytest.raises(Unavailable) as info:
            call()
        assert info.value.code == 503
    with pytest.raises(Unavailable) as info:
        lim.check_message("alice", "ahoj", "cs")
    assert info.value.public_message.startswith("Asistent teď nemůže ověřit limity")
    leases.release("t1")  # never raises: the slot would free at its deadline anyway
