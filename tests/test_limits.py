"""Limits (docs/spec/behaviour.md section 9, B-2, B-28) against a real Redis (this test session's,
database 7).

Every message and in-flight cap is checked the way production checks it: through the
admission script (Admission.admit, which web/follow.py calls for each new turn; the only way
in).
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import redis
from limits import parse
from limits.storage import RedisStorage
from limits.strategies import FixedWindowRateLimiter

from assistant_cli import stack
from shared import keys
from shared.config import Settings, settings_from_env
from shared.errors import ConfigError, RateLimited, TooLarge, Unavailable
from shared.limits import BUSY_RETRY_AFTER_S, Admission, Leases, Limiter, address_bucket
from tests.conftest import ALLOC, VAR, ensure_session_redis

REDIS_URL = ALLOC.redis_url("test_limits")  # emptied before and after each test
DOWN_PORT = ALLOC.port("test_limits: a Redis that is down (nothing listens)", pool="redis")
DOWN_URL = f"redis://127.0.0.1:{DOWN_PORT}/0"

Make = Callable[..., Settings]


def make_settings(url: str = REDIS_URL, **env: str) -> Settings:
    """Test settings: ASSISTANT_<NAME> overrides given as NAME=value."""
    return settings_from_env({"ASSISTANT_PROFILE": "test", "ASSISTANT_REDIS_URL": url,
                              **{f"ASSISTANT_{k}": v for k, v in env.items()}})


@pytest.fixture(scope="module")
def redis_server() -> Iterator[None]:
    """This session's Redis (started here when no other test has started it yet)."""
    sup = stack.Supervisor(VAR / "log")
    ensure_session_redis(sup)
    try:
        yield
    finally:
        sup.stop_all()


@pytest.fixture()
def client(redis_server: None) -> Iterator[redis.Redis]:
    """A client on the module's database, emptied before and after each test."""
    c = redis.Redis.from_url(REDIS_URL)
    c.flushdb()
    try:
        yield c
    finally:
        c.flushdb()
        c.close()


class Turns:
    """New turns admitted by the production admission script, as web/follow.py admits them."""

    def __init__(self, client: redis.Redis, url: str = REDIS_URL, **env: str) -> None:
        s = make_settings(url, **env)
        self.limiter, self.leases = Limiter(s, client), Leases(s, client)
        self.admission = Admission(self.limiter, self.leases, client)
        self._n = 0

    def ask(self, user: str, message: str = "hi", lang: str = "en", addr: str | None = None,
            request_addr: str | None = None, turn: str | None = None, hold: bool = False,
            process: str = "web-1") -> str:
        """Admit one turn; its slot is given back at once unless hold (quota tests)."""
        self._n += 1
        turn = turn or f"t{self._n}"
        self.admission.admit(user, message, turn, process, lang, addr, request_addr)
        if not hold:
            self.leases.release(turn)
        return turn


def refused(fn: Callable[[], object]) -> RateLimited:
    """Run fn, expecting a 429; return it."""
    with pytest.raises(RateLimited) as info:
        fn()
    assert info.value.code == 429
    return info.value


# --- rate limits ---------------------------------------------------------------------------


def test_per_user_limit_refuses_with_plain_sentence(client: redis.Redis) -> None:
    turns = Turns(client, USER_MESSAGE_LIMIT="3/hour")
    for _ in range(3):
        turns.ask("alice", "hello", "en")
    err = refused(lambda: turns.ask("alice", "hello", "en"))
    assert 3500 <= err.retry_after <= 3600
    assert err.public_message == ("You have sent 3 messages in the last hour. "
                                  "Please try again in 60 minutes.")
    turns.ask("bob", "hello", "en")  # another user has their own quota


def test_czech_sentence_for_cs(client: redis.Redis) -> None:
    turns = Turns(client, USER_MESSAGE_LIMIT="3/hour")
    for _ in range(3):
        turns.ask("alice", "ahoj", "cs")
    err = refused(lambda: turns.ask("alice", "ahoj", "cs"))
    assert err.public_message == ("Za poslední hodinu jste poslali 3 zprávy. "
                                  "Zkuste to prosím znovu za 60 minut.")
    assert "You have" in refused(lambda: turns.ask("alice", "hi", "de")).public_message


def test_per_address_message_limit_counts_every_user_behind_the_address(
        client: redis.Redis) -> None:
    turns = Turns(client, CLIENT_MESSAGE_LIMIT="3/hour")
    for user in ("alice", "bob", "carol"):
        turns.ask(user, addr="203.0.113.9")
    err = refused(lambda: turns.ask("dave", addr="203.0.113.9"))
    assert err.public_message.startswith("Too many requests from your address (3 in the last "
                                         "hour).")
    turns.ask("dave", addr="198.51.100.7")  # another address has its own allowance
    turns.ask("dave")  # and a turn counted per user only is not refused for the address


def test_per_address_request_limit(client: redis.Redis) -> None:
    # Ticket requests, event streams, resumes, cancels and the projects list count here.
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


def test_sse_starts_count_in_the_address_request_window(client: redis.Redis) -> None:
    # An SSE start is a request and a message at once: the admission script counts it in the
    # same window as check_request, whatever becomes of the message.
    turns = Turns(client, CLIENT_REQUEST_LIMIT="3/minute")
    turns.ask("alice", addr="203.0.113.9", request_addr="203.0.113.9")
    turns.ask("bob", addr="203.0.113.9", request_addr="203.0.113.9")
    turns.limiter.check_request("203.0.113.9")  # an event stream of the same address
    err = refused(lambda: turns.ask("carol", addr="203.0.113.9", request_addr="203.0.113.9"))
    assert err.public_message.startswith("Too many requests from your address (3 in the last "
                                         "minute).")
    refused(lambda: turns.limiter.check_request("203.0.113.9"))
    assert client.zcard(keys.SLOTS_ALL) == 0, "a refused start holds no slot"
    turns.ask("carol", addr="198.51.100.7", request_addr="198.51.100.7")


def test_moving_window_blocks_the_double_burst_a_fixed_window_allows(
        client: redis.Redis) -> None:
    """3 per 2 s: one hit at t=0, two at t=1.7, three at t=2.3.

    A fixed window opened at t=0 restarts at t=2.0 and takes all three late hits: five inside
    0.6 s. The moving window still holds the two t=1.7 hits at t=2.3, so it takes only one.
    """
    turns = Turns(client, USER_MESSAGE_LIMIT="3 per 2 seconds")
    fixed = FixedWindowRateLimiter(RedisStorage(REDIS_URL, key_prefix="test-fixed"))
    item = parse("3 per 2 seconds")

    def moving_ok() -> bool:
        try:
            turns.ask("edge")
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
    err = refused(lambda: turns.ask("edge"))
    assert 1 <= err.retry_after <= 2  # the t=1.7 hits age out at t=3.7


def test_retry_after_is_when_a_slot_frees(client: redis.Redis) -> None:
    turns = Turns(client, USER_MESSAGE_LIMIT="2 per 3 seconds")
    turns.ask("carol", "a")
    turns.ask("carol", "b")
    time.sleep(1.0)
    err = refused(lambda: turns.ask("carol", "c"))
    assert err.retry_after == 2
    assert err.public_message.endswith("Please try again in 2 seconds.")
    time.sleep(err.retry_after)
    turns.ask("carol", "c")  # waiting as told is enough


def test_message_over_4000_characters_is_413_before_any_redis_call() -> None:
    # Redis is down here: the length check is local and comes first.
    turns = Turns(redis.Redis.from_url(DOWN_URL), DOWN_URL)
    with pytest.raises(TooLarge) as info:
        turns.ask("alice", "x" * 4001, "en")
    assert info.value.code == 413
    assert info.value.public_message == ("Your message is 4,001 characters long; the limit is "
                                         "4,000. Please shorten it.")
    with pytest.raises(TooLarge) as info:
        turns.ask("alice", "x" * 4001, "cs")
    assert info.value.public_message == ("Vaše zpráva má 4\u00a0001 znaků, povolené maximum "
                                         "je 4\u00a0000. Zkraťte ji prosím.")
    with pytest.raises(Unavailable):  # exactly 4,000 passes the length check
        turns.ask("alice", "x" * 4000, "en")


def test_global_refusal_does_not_consume_the_users_quota(client: redis.Redis) -> None:
    env = {"USER_MESSAGE_LIMIT": "3/hour"}
    tight = Turns(client, GLOBAL_MESSAGE_LIMIT="2/hour", **env)
    tight.ask("alice", "1")
    tight.ask("alice", "2")
    for _ in range(5):
        err = refused(lambda: tight.ask("bob", "refused"))
        assert "across all users" in err.public_message
    # With room globally, bob still has all 3 of his messages: the refusals cost him nothing.
    roomy = Turns(client, GLOBAL_MESSAGE_LIMIT="100/hour", **env)
    for _ in range(3):
        roomy.ask("bob", "ok")
    assert "You have sent 3" in refused(lambda: roomy.ask("bob", "x")).public_message


def test_user_refusal_does_not_consume_the_global_limit(client: redis.Redis) -> None:
    turns = Turns(client, USER_MESSAGE_LIMIT="1/hour", GLOBAL_MESSAGE_LIMIT="3/hour")
    turns.ask("alice", "1")
    for _ in range(5):
        refused(lambda: turns.ask("alice", "2"))
    turns.ask("bob", "1")
    turns.ask("carol", "1")  # 3 accepted in all: alice's refusals took none
    assert "across all users" in refused(lambda: turns.ask("dan", "1")).public_message


def test_optional_daily_cap_across_all_visitors(client: redis.Redis) -> None:
    off = Turns(client)
    for i in range(5):
        off.ask(f"user{i}")
    client.flushdb()
    turns = Turns(client, DAILY_QUESTION_CAP="2")
    turns.ask("alice", "1")
    turns.ask("bob", "1")
    err = refused(lambda: turns.ask("carol", "1", "cs"))
    assert 86000 <= err.retry_after <= 86400
    assert err.public_message == ("Asistent dosáhl denního limitu dotazů od všech návštěvníků "
                                  "(2). Zkuste to prosím znovu za 24 hodin.")


def test_no_user_id_or_address_in_key_names(client: redis.Redis) -> None:
    turns = Turns(client)
    turns.limiter.check_request("203.0.113.9")
    turns.ask("alice@example.org", addr="203.0.113.9", request_addr="203.0.113.9", hold=True)
    names = [k.decode() for k in client.scan_iter("*")]
    assert names and all(n.startswith(keys.PREFIX) for n in names)
    assert any("slots:user" in n for n in names) and any("addr-msg" in n for n in names)
    assert not any("alice" in n or "203.0.113.9" in n for n in names)


@pytest.mark.parametrize("addr, bucket", [
    ("203.0.113.9", "203.0.113.9"),
    ("::ffff:203.0.113.9", "203.0.113.9"),
    ("2001:db8:1:ab01::1", "2001:db8:1:ab00::/56"),
    ("2001:db8:1:abff:ffff:ffff:ffff:fff0", "2001:db8:1:ab00::/56"),
    ("not-an-address", "not-an-address"),
])
def test_ipv6_clients_are_bucketed_per_56_by_default(addr: str, bucket: str) -> None:
    assert address_bucket(addr) == bucket
    assert Limiter(make_settings(), redis.Redis.from_url(DOWN_URL)).bucket(addr) == bucket


def test_the_ipv6_prefix_is_configurable() -> None:
    lim = Limiter(make_settings(IPV6_PREFIX="48"), redis.Redis.from_url(DOWN_URL))
    assert lim.bucket("2001:db8:1:ab01::1") == "2001:db8:1::/48"
    assert ipaddress.ip_network(lim.bucket("2001:db8:1:ffff::1")).prefixlen == 48
    for bad in ("16", "65", "128"):
        with pytest.raises(ConfigError):
            make_settings(IPV6_PREFIX=bad)


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


# --- in-flight caps ------------------------------------------------------------------------


def test_third_concurrent_turn_of_a_user_is_refused(client: redis.Redis) -> None:
    turns = Turns(client)
    turns.ask("alice", turn="t1", hold=True)
    turns.ask("alice", turn="t2", hold=True, process="web-2")
    err = refused(lambda: turns.ask("alice", turn="t3", hold=True))
    assert err.retry_after == BUSY_RETRY_AFTER_S
    assert err.public_message.startswith("You already have 2 answers in progress")
    cs = refused(lambda: turns.ask("alice", lang="cs", turn="t3", hold=True)).public_message
    assert cs.startswith("Už se vám připravuje nejvyšší povolený počet odpovědí najednou (2).")
    turns.ask("bob", turn="t4", hold=True)
    turns.ask("alice", turn="t1", hold=True)  # the same turn again holds one slot, not two
    turns.leases.release("t1")
    turns.ask("alice", turn="t3", hold=True)


def test_a_turn_refused_as_busy_uses_up_no_message_quota(client: redis.Redis) -> None:
    turns = Turns(client, USER_MESSAGE_LIMIT="3/hour")
    turns.ask("alice", turn="t1", hold=True)
    turns.ask("alice", turn="t2", hold=True)
    for _ in range(4):
        refused(lambda: turns.ask("alice", turn="t3", hold=True))
    turns.leases.release("t1")
    turns.ask("alice", turn="t3")  # the third of three: the busy refusals counted nothing
    assert "You have sent 3" in refused(lambda: turns.ask("alice")).public_message


def test_process_cap(client: redis.Redis) -> None:
    turns = Turns(client, MAX_TURNS_PER_PROCESS="3")
    for i in range(3):
        turns.ask(f"user{i}", turn=f"t{i}", hold=True)
    err = refused(lambda: turns.ask("user9", turn="t9", hold=True))
    assert err.public_message == ("The assistant is busy answering other questions. "
                                  "Please try again in 5 seconds.")
    turns.ask("user9", turn="t9", hold=True, process="web-2")  # another process has room


def test_cluster_cap_is_optional(client: redis.Redis) -> None:
    turns = Turns(client)
    for i in range(12):  # off by default: only per-process caps apply
        turns.ask(f"user{i}", turn=f"a{i}", hold=True, process=f"web-{i % 2}")
    client.flushdb()
    capped = Turns(client, MAX_TURNS_TOTAL="2")
    capped.ask("alice", turn="t1", hold=True)
    capped.ask("bob", turn="t2", hold=True, process="web-2")
    refused(lambda: capped.ask("carol", turn="t3", hold=True, process="web-3"))
    capped.leases.release("t2")
    capped.ask("carol", turn="t3", hold=True, process="web-3")


def test_an_unrenewed_lease_frees_its_slot(client: redis.Redis) -> None:
    # A crashed holder simply stops renewing.
    turns = Turns(client, SLOT_LEASE_S="1")
    turns.ask("alice", turn="t1", hold=True)
    turns.ask("alice", turn="t2", hold=True)
    refused(lambda: turns.ask("alice", turn="t3", hold=True))
    time.sleep(1.1)
    turns.ask("alice", turn="t3", hold=True)
    assert turns.leases.renew("t1") is False  # a lapsed lease is not taken back


def test_renewing_keeps_the_slot(client: redis.Redis) -> None:
    turns = Turns(client, SLOT_LEASE_S="1")
    leases = turns.leases
    turns.ask("alice", turn="t1", hold=True)
    turns.ask("alice", turn="t2", hold=True)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        assert leases.renew("t1") and leases.renew("t2")
        time.sleep(leases.renew_every_s)
    refused(lambda: turns.ask("alice", turn="t3", hold=True))
    # Every set expires with its last lease, so nothing is left behind.
    for key in (keys.slots_user("alice"), keys.slots_process("web-1"), keys.SLOTS_ALL,
                keys.slot_holder("t1")):
        assert 0 < client.pttl(key) <= 1000


def test_release_frees_the_slot_and_is_idempotent(client: redis.Redis) -> None:
    turns = Turns(client)
    leases = turns.leases
    turns.ask("alice", turn="t1", hold=True)
    turns.ask("alice", turn="t2", hold=True)
    leases.release("t1")
    leases.release("t1")
    leases.release("never-acquired")
    turns.ask("alice", turn="t3", hold=True)
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


@pytest.mark.parametrize(("scope", "cap"), [("user", 2), ("process", 8), ("cluster", 5),
                                            ("messages", 3)])
def test_concurrent_admissions_never_exceed_a_cap(client: redis.Redis, scope: str,
                                                  cap: int) -> None:
    env = {"MAX_TURNS_TOTAL": "5" if scope == "cluster" else "0"}
    if scope == "messages":
        env.update(USER_MESSAGE_LIMIT="3/hour", MAX_TURNS_PER_USER="50")
    # One client (own connection pool) per thread, like separate web processes.
    clients = [redis.Redis.from_url(REDIS_URL) for _ in range(20)]

    def acquire(i: int) -> None:
        user = "alice" if scope in ("user", "messages") else f"user{i}"
        process = f"web-{i % 4}" if scope in ("cluster", "messages") else "web-1"
        Turns(clients[i], **env).ask(user, turn=f"t{i}", hold=True, process=process)

    try:
        won = _race(20, acquire)
    finally:
        for c in clients:
            c.close()
    assert len(won) == cap
    assert client.zcard(keys.SLOTS_ALL) == cap


# --- Redis down ----------------------------------------------------------------------------


def test_redis_down_refuses_with_503() -> None:
    down = redis.Redis.from_url(DOWN_URL, socket_connect_timeout=1)
    turns = Turns(down, DOWN_URL)
    for call in (lambda: turns.limiter.check_request("203.0.113.9"),
                 lambda: turns.ask("alice", "hello"),
                 lambda: turns.leases.renew("t1")):
        with pytest.raises(Unavailable) as info:
            call()
        assert info.value.code == 503
    with pytest.raises(Unavailable) as info:
        turns.ask("alice", "ahoj", "cs")
    assert info.value.public_message.startswith("Asistent teď nemůže ověřit limity")
    turns.leases.release("t1")  # never raises: the slot would free at its deadline anyway


# ---- the message windows are declared with their settings (pure: no Redis call) ------------

def test_message_windows_are_the_settings_declared_as_limits() -> None:
    from shared.config import DECLARED
    from shared.limits import windows

    declared = {name: d.limit for name, d in DECLARED.items() if d.limit}
    assert declared.items() >= {"client_message_limit": "client", "user_message_limit": "user",
                                "global_message_limit": "global",
                                "daily_question_cap": "daily"}.items()
    assert set(declared.values()) <= set(windows.SCOPES)
    assert set(windows.REFUSALS) == set(windows.SCOPES)
    limiter = Limiter(make_settings(DAILY_QUESTION_CAP="50"), redis.Redis(port=DOWN_PORT))
    kinds = [r.kind for r in limiter.message_rules("u", "192.0.2.7")]
    assert kinds == sorted(kinds, key=list(windows.SCOPES).index)  # the refusal order
    assert set(kinds) == {"user", "client", "global", "daily"}
    # No address: no address window; no daily cap: no daily window.
    assert {r.kind for r in Limiter(make_settings(), redis.Redis(port=DOWN_PORT)).message_rules(
        "u", None)} == {"user", "global"}


def test_a_setting_declared_as_a_limit_is_a_window_of_every_message(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A new limit is one `limit=` on its setting: the admission's windows gain it."""
    import dataclasses

    from shared.config import DECLARED
    from shared.limits import windows

    extra = dataclasses.replace(DECLARED["client_request_limit"], limit="user")
    monkeypatch.setattr(windows, "DECLARED", {**DECLARED, "client_request_limit": extra})
    limiter = Limiter(make_settings(CLIENT_REQUEST_LIMIT="500/day"), redis.Redis(port=DOWN_PORT))
    rules = limiter.message_rules("u", None)
    assert [(r.kind, str(r.item)) for r in rules][:2] == [
        ("user", "60 per 1 hour"), ("user", "500 per 1 day")]
    refusal = limiter.window_refusal(rules[1], time.time(), "en")
    assert refusal.public_message.startswith("You have sent 500 messages in the last day.")
