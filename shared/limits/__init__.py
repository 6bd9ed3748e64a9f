"""Usage limits (spec section 9, B-2, B-28), shared by every web process through Redis.

Rate limits use the `limits` package's MovingWindowRateLimiter over RedisStorage:

* A fixed window counts per clock-aligned bucket, so a client can spend the whole allowance just
  before a window edge and again just after it: twice the limit inside one window's length.
* A sliding-window counter blends the previous bucket's count by elapsed fraction; it is cheaper
  but only an approximation and can still let somewhat more than the limit through.
* A moving window keeps the timestamp of every accepted hit (a Redis list of at most `amount`
  entries) and counts those younger than the window, so *any* window-long span holds at most
  `amount` hits. It is exact; the cost is one list entry per allowed hit, which is small at
  these limits (60 per user, 600 global, the daily cap). Moving-window timestamps come from
  the web process's clock, so web hosts must keep their clocks in sync (NTP).

One message passes several limits (per user, global, optional daily). `limits` acquires each
one atomically but not several together, and it cannot undo a hit; so a message's windows are
checked by a Lua script of our own over the same moving-window lists (the `limits` storage
format: newest timestamp first, at most `amount` entries): it reads every window and, only when
all accept, pushes the message's timestamp to each. All or nothing: a refusal consumes nothing
anywhere, and no race between processes can charge a counter for a refused message. When
several refuse, the user's own limit is named first (its sentence is the most useful).

In-flight caps (per user, per web process, optionally cluster-wide) are leases: one sorted set
per scope, members are turn ids scored by their deadline on the Redis clock. The same script
prunes expired members, checks every cap and adds to every set in one atomic step, so
concurrent web processes can never overshoot a cap. The holder renews its lease while the turn
runs; a crashed worker or web process stops renewing and its slot frees within the lease time.
The scripts touch several keys, so this needs one Redis (not Redis Cluster), as the app does.

A new turn's admission (Admission.admit, the one way a message is let in) runs both in that one
script, one round trip a message: the address's request window when the message is also a
request (an SSE start), the caps, then the message windows; the turn's terminal frame frees its
slot (shared/frames.py).

If Redis cannot be reached, every check raises Unavailable (503): the service refuses turns
rather than serve without limits.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from dataclasses import dataclass

import redis
from limits import RateLimitItem, RateLimitItemPerDay
from limits.errors import StorageError
from limits.storage import RedisStorage
from limits.strategies import MovingWindowRateLimiter

from shared import keys
from shared.config import Settings, parse_rate
from shared.errors import RateLimited, TooLarge, Unavailable

log = logging.getLogger(__name__)

# A busy slot frees when some running turn ends, which nobody can predict; a few seconds is a
# polite interval for the client to try again.
BUSY_RETRY_AFTER_S = 5

_STORE_ERRORS = (redis.RedisError, StorageError)


# --- plain sentences in English or Czech ---------------------------------------------------

# Czech forms after a number: 1 / 2-4 / 0 and 5+ (accusative, as in "za 5 minut").
_CS_UNITS = {
    "second": ("sekundu", "sekundy", "sekund"),
    "minute": ("minutu", "minuty", "minut"),
    "hour": ("hodinu", "hodiny", "hodin"),
    "day": ("den", "dny", "dní"),
}


def _czech(lang: str) -> bool:
    return lang.strip().lower().split("-")[0] == "cs"


def _cs_form(n: int, forms: tuple[str, str, str]) -> str:
    return forms[0] if n == 1 else forms[1] if 2 <= n <= 4 else forms[2]


def _en_form(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def _amount(n: int, unit: str, cs: bool) -> str:
    """'12 minutes' / '12 minut'."""
    return f"{n} {_cs_form(n, _CS_UNITS[unit]) if cs else _en_form(n, unit)}"


def _wait(seconds: int, cs: bool) -> str:
    """How long to wait, rounded up so that trying again then is never too early."""
    if seconds < 90:
        return _amount(seconds, "second", cs)
    if seconds < 90 * 60:
        return _amount(math.ceil(seconds / 60), "minute", cs)
    return _amount(math.ceil(seconds / 3600), "hour", cs)


def _window_phrase(item: RateLimitItem, cs: bool) -> str:
    """'in the last hour' / 'za poslední hodinu' for the limit's window."""
    unit, n = item.GRANULARITY.name, item.multiples
    if cs:
        last = "posledních" if n >= 5 else "poslední"
        return f"za {last} {_amount(n, unit, cs) if n > 1 else _CS_UNITS[unit][0]}"
    return f"in the last {_amount(n, unit, cs) if n > 1 else unit}"


def _grouped(n: int, cs: bool) -> str:
    # Czech groups thousands with a (non-breaking) space, English with a comma.
    return f"{n:,}".replace(",", "\u00a0") if cs else f"{n:,}"


def _again(seconds: int, cs: bool) -> str:
    if cs:
        return f"Zkuste to prosím znovu za {_wait(seconds, cs)}."
    return f"Please try again in {_wait(seconds, cs)}."


def _unavailable(lang: str) -> Unavailable:
    if _czech(lang):
        text = ("Asistent teď nemůže ověřit limity používání, proto dotazy nepřijímá. "
                "Zkuste to prosím za chvíli.")
    else:
        text = ("The assistant cannot check its usage limits right now, so it is not taking "
                "questions. Please try again shortly.")
    return Unavailable("limit store unreachable", public_message=text)


# --- rate limits ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    kind: str  # "client", "user", "global" or "daily": picks the refusal sentence
    item: RateLimitItem
    scope: tuple[str, ...]


def address_bucket(addr: str, ipv6_prefix: int = 56) -> str:
    """The rate-limit bucket of a client address: an IPv6 client counts per ipv6_prefix."""
    # ISPs delegate a /56 or a /48 to one subscriber (a /64 to one network of theirs), who
    # can then rotate through every address and /64 in it at will.
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return addr
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, ipv6_prefix), strict=False))
    return str(ip)


class StreamSlots:
    """A cap on each user's concurrent event streams, shared by every web process (Redis)."""

    def __init__(self, settings: Settings, client: redis.Redis) -> None:
        self._client = client
        self._cap = settings.max_streams_per_user
        # A crashed process's stream frees itself within this time, as its other slots do.
        self.lease_s = settings.slot_lease_s

    @property
    def renew_every_s(self) -> float:
        """How often an open stream renews its slot (three tries per lease)."""
        return self.lease_s / 3

    def acquire(self, user: str, stream: str) -> None:
        """Take a slot for stream, or raise RateLimited; Unavailable when Redis is down."""
        key = keys.streams_user(user)
        now = time.time()
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.zremrangebyscore(key, "-inf", now)
            pipe.zadd(key, {stream: now + self.lease_s})
            pipe.expire(key, int(self.lease_s) + 5)
            pipe.zcard(key)
            count = pipe.execute()[-1]
            if count > self._cap:
                # Added first, counted after: two racing streams may both be refused, never
                # both let through.
                self._client.zrem(key, stream)
                raise RateLimited("too many streams", retry_after=5, public_message=(
                    "Too many open answer streams. Close one and try again."))
        except _STORE_ERRORS as exc:
            raise _unavailable("en") from exc

    def renew(self, user: str, stream: str) -> None:
        """Keep a stream's slot while it is open."""
        key = keys.streams_user(user)
        try:
            self._client.zadd(key, {stream: time.time() + self.lease_s}, xx=True)
            self._client.expire(key, int(self.lease_s) + 5)
        except _STORE_ERRORS:
            pass  # the slot lapses; the next acquire counts without it

    def release(self, user: str, stream: str) -> None:
        """Free a stream's slot."""
        try:
            self._client.zrem(keys.streams_user(user), stream)
        except _STORE_ERRORS:
            pass


# KEYS: the user's and the address's socket sets. ARGV: socket id, lease ms, user cap, address
# cap. Drops lapsed leases, returns 1 (user) or 2 (address) for a full cap, else holds the
# socket in both until now + lease and returns 0. Each set lives as long as its newest lease.
_SOCKET_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, 2 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now) end
if ARGV[5] == 'new' then
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 1 end
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 2 end
end
for i = 1, 2 do
  redis.call('ZADD', KEYS[i], now + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[2]))
end
return 0
"""


class SocketLeases:
    """Caps on open WebSockets per user and per address bucket: a lease per socket (Redis
    clock), renewed while it lives; a crashed process's sockets free within the lease."""

    def __init__(self, settings: Settings, client: redis.Redis) -> None:
        """Register the script (sent to Redis on first use)."""
        self._client = client
        self._script = client.register_script(_SOCKET_LUA)
        self.lease_s = settings.slot_lease_s
        self._lease_ms = max(1, int(settings.slot_lease_s * 1000))
        self._per_user = settings.max_sockets_per_user
        self._per_address = settings.max_sockets_per_address

    @property
    def renew_every_s(self) -> float:
        """How often an open socket renews its lease (three tries per lease)."""
        return self.lease_s / 3

    def acquire(self, user: str, bucket: str, socket_id: str, lang: str = "en") -> None:
        """Hold a place for a new socket, or raise RateLimited; Unavailable when Redis is down."""
        refused = self._run(user, bucket, socket_id, "new", lang)
        if refused == 0:
            return
        cs = _czech(lang)
        if refused == 1:
            n = self._per_user
            text = (f"Máte otevřeno {n} spojení s asistentem, víc najednou nejde. Zavřete "
                    "prosím jiné okno nebo kartu s asistentem." if cs else
                    f"You have {n} connections open to the assistant, the most allowed at "
                    "once. Please close another window or tab with the assistant.")
        else:
            text = ("Z vaší adresy je otevřeno příliš mnoho spojení s asistentem. "
                    if cs else "Too many connections from your address are open. ")
            text += _again(BUSY_RETRY_AFTER_S, cs)
        raise RateLimited("socket cap " + ("user" if refused == 1 else "address"),
                          retry_after=BUSY_RETRY_AFTER_S, public_message=text)

    def renew(self, user: str, bucket: str, socket_id: str) -> None:
        """Keep an open socket's place (taken back even if it lapsed: the socket is open)."""
        try:
            self._run(user, bucket, socket_id, "renew", "en")
        except Unavailable:
            pass  # the lease lapses; the next renewal takes it back

    def release(self, user: str, bucket: str, socket_id: str) -> None:
        """Free a closed socket's place now (else its lease runs out)."""
        try:
            pipe = self._client.pipeline(transaction=False)
            pipe.zrem(keys.sockets_user(user), socket_id)
            pipe.zrem(keys.sockets_address(bucket), socket_id)
            pipe.execute()
        except _STORE_ERRORS:
            log.warning("could not release a socket's place; it frees when its lease runs out")

    def _run(self, user: str, bucket: str, socket_id: str, mode: str, lang: str) -> int:
        try:
            return int(self._script(
                keys=[keys.sockets_user(user), keys.sockets_address(bucket)],
                args=[socket_id, self._lease_ms, self._per_user, self._per_address, mode]))
        except _STORE_ERRORS as exc:
            raise _unavailable(lang) from exc


class Limiter:
    """Rate limits (moving window, Redis) and the message length limit."""

    def __init__(self, settings: Settings, client: redis.Redis) -> None:
        """Share the app's connection pool; nothing is sent to Redis until the first check."""
        storage = RedisStorage(settings.redis_url, connection_pool=client.connection_pool,
                               key_prefix=keys.RATE_PREFIX, wrap_exceptions=True)
        self._window = MovingWindowRateLimiter(storage)
        self._storage = storage
        self._max_chars = settings.max_message_chars
        self._v6 = settings.ipv6_prefix
        self._per_client = parse_rate(settings.client_request_limit,
                                      "ASSISTANT_CLIENT_REQUEST_LIMIT")
        self._per_user = parse_rate(settings.user_message_limit, "ASSISTANT_USER_MESSAGE_LIMIT")
        self._per_client_message = parse_rate(settings.client_message_limit,
                                              "ASSISTANT_CLIENT_MESSAGE_LIMIT")
        self._health = parse_rate(settings.health_request_limit,
                                  "ASSISTANT_HEALTH_REQUEST_LIMIT")
        self._global = parse_rate(settings.global_message_limit,
                                  "ASSISTANT_GLOBAL_MESSAGE_LIMIT")
        self._daily = (RateLimitItemPerDay(settings.daily_question_cap)
                       if settings.daily_question_cap > 0 else None)

    def check_request(self, client_addr: str, lang: str = "en") -> None:
        """Count one ticket request or SSE start for a client address; raise RateLimited."""
        self._check_one(_Rule("client", self._per_client,
                              keys.rate_client(self.bucket(client_addr))), lang)

    def check_health(self, client_addr: str, lang: str = "en") -> None:
        """Count one public /healthz call for a client address; raise RateLimited."""
        self._check_one(_Rule("client", self._health,
                              keys.rate_health(self.bucket(client_addr))), lang)

    def _check_one(self, rule: _Rule, lang: str) -> None:
        try:
            # A single limit: hit() checks and consumes atomically and consumes nothing when
            # it refuses, so no separate test is needed.
            if not self._window.hit(rule.item, *rule.scope):
                raise self._refusal(rule, lang)
        except _STORE_ERRORS as exc:
            raise _unavailable(lang) from exc

    def check_length(self, message: str, lang: str) -> None:
        """Raise TooLarge for a message over the length limit (local: no Redis)."""
        if len(message) <= self._max_chars:
            return
        cs = _czech(lang)
        if cs:
            text = (f"Vaše zpráva má {_grouped(len(message), cs)} "
                    f"{_cs_form(len(message), ('znak', 'znaky', 'znaků'))}, povolené "
                    f"maximum je {_grouped(self._max_chars, cs)}. Zkraťte ji prosím.")
        else:
            text = (f"Your message is {_grouped(len(message), cs)} characters long; the "
                    f"limit is {_grouped(self._max_chars, cs)}. Please shorten it.")
        raise TooLarge(f"message of {len(message)} characters", public_message=text)

    def message_rules(self, user: str, client_addr: str | None) -> tuple[_Rule, ...]:
        """A message's windows in refusal order: user, address, global, daily."""
        user_rule = _Rule("user", self._per_user, keys.rate_user(user))
        shared = [_Rule("global", self._global, keys.RATE_GLOBAL)]
        if self._daily is not None:
            shared.insert(0, _Rule("daily", self._daily, keys.RATE_DAILY))
        if client_addr is not None:
            # Shared by everyone behind the address.
            shared.append(_Rule("client", self._per_client_message,
                                keys.rate_client_message(self.bucket(client_addr))))
        return (user_rule, *reversed(shared))

    def request_rule(self, client_addr: str) -> _Rule:
        """The per-address request window (ticket requests, SSE starts)."""
        return _Rule("client", self._per_client, keys.rate_client(self.bucket(client_addr)))

    def bucket(self, client_addr: str) -> str:
        """The address's bucket in every per-address limit (an IPv6 prefix counts as one)."""
        return address_bucket(client_addr, self._v6)

    def window_keys(self, rules: tuple[_Rule, ...]) -> list[str]:
        """The Redis keys of rules' moving-window lists (the `limits` storage's names)."""
        return [self._storage.prefixed_key(r.item.key_for(*r.scope)) for r in rules]

    def window_refusal(self, rule: _Rule, oldest: bytes | str | float, lang: str
                       ) -> RateLimited:
        """The 429 of a full window whose oldest entry is `oldest`."""
        # The refusing list is full: its last entry is the oldest hit in the window.
        return self._refusal(rule, lang, float(oldest) + rule.item.get_expiry())

    def _refusal(self, rule: _Rule, lang: str, reset_time: float | None = None) -> RateLimited:
        """The 429 for a refused rule, with retry_after from the moving window's reset time."""
        if reset_time is None:
            reset_time = self._window.get_window_stats(rule.item, *rule.scope).reset_time
        # The oldest hit in the window ages out at reset_time; then one slot is free.
        retry = max(1, math.ceil(reset_time - time.time()))
        cs, n = _czech(lang), rule.item.amount
        window = _window_phrase(rule.item, cs)
        if rule.kind == "client":
            text = (f"Z vaší adresy přišlo příliš mnoho požadavků ({n} {window})." if cs else
                    f"Too many requests from your address ({n} {window}).")
        elif rule.kind == "user":
            text = (f"{window.capitalize()} jste poslali {n} "
                    f"{_cs_form(n, ('zprávu', 'zprávy', 'zpráv'))}." if cs else
                    f"You have sent {n} {_en_form(n, 'message')} {window}.")
        elif rule.kind == "global":
            text = (f"Asistent dostal {window} nejvyšší povolený počet zpráv od všech uživatelů "
                    f"({_grouped(n, cs)})." if cs else
                    f"The assistant has reached its limit of {_grouped(n, cs)} "
                    f"{_en_form(n, 'message')} {window} across all users.")
        else:
            text = (f"Asistent dosáhl denního limitu dotazů od všech návštěvníků "
                    f"({_grouped(n, cs)})." if cs else
                    f"The assistant has reached its limit of {_grouped(n, cs)} "
                    f"{_en_form(n, 'question')} a day across all visitors.")
        return RateLimited(f"{rule.kind} limit {rule.item}", retry_after=retry,
                           public_message=f"{text} {_again(retry, cs)}")


def _window_fns(base: int) -> str:
    """Lua functions over moving-window lists: window i is KEYS[i], its limit and expiry (s)
    are ARGV[base + 2i] and ARGV[base + 2i + 1]; ARGV[1] is now (epoch s)."""
    return f"""
local stamp = ARGV[1]
local t = tonumber(stamp)
local function oldest_if_full(i)
  local limit, expiry = tonumber(ARGV[{base} + 2 * i]), tonumber(ARGV[{base + 1} + 2 * i])
  local entry = redis.call('LINDEX', KEYS[i], limit - 1)
  if entry and tonumber(entry) >= t - expiry then return entry end
  return false
end
local function hit(i)
  redis.call('LPUSH', KEYS[i], stamp)
  redis.call('LTRIM', KEYS[i], 0, tonumber(ARGV[{base} + 2 * i]) - 1)
  redis.call('EXPIRE', KEYS[i], tonumber(ARGV[{base + 1} + 2 * i]))
end
"""


# --- in-flight leases ----------------------------------------------------------------------

# Deadlines use the Redis server clock (TIME), so web hosts with skewed clocks agree on them.
_NOW_MS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# A set's members all expire by its highest deadline, so the key may go then too (idle users
# and dead processes leave nothing behind).
_EXPIRE_SETS = """
local function expire_at_last(key)
  local top = redis.call('ZRANGE', key, 0, 0, 'REV', 'WITHSCORES')
  if top[2] then redis.call('PEXPIREAT', key, math.floor(tonumber(top[2]))) end
end
"""

def _check_caps_lua(sets: tuple[str, str, str], turn: str, caps: tuple[str, str, str],
                    refused: str) -> str:
    """Lua lines that drop lapsed slots and return `refused % n` when cap n is full (1 user,
    2 process, 3 cluster), given the script's names for the user, process and cluster sets."""
    user, proc, cluster = sets
    return f"""
for _, key in ipairs({{{user}, {proc}, {cluster}}}) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
end
-- Acquiring a turn that already holds a live slot only renews it (a retried request).
if not redis.call('ZSCORE', {cluster}, {turn}) then
  if redis.call('ZCARD', {user}) >= tonumber({caps[0]}) then return {refused % 1} end
  if redis.call('ZCARD', {proc}) >= tonumber({caps[1]}) then return {refused % 2} end
  local total = tonumber({caps[2]})
  if total > 0 and redis.call('ZCARD', {cluster}) >= total then return {refused % 3} end
end
"""


def _take_slot_lua(sets: tuple[str, str, str], holder: str, turn: str, lease_ms: str) -> str:
    """Lua lines that hold a turn's slot until now + lease_ms in the three sets, naming the
    user and process sets in its holder hash (what a release reads)."""
    user, proc, cluster = sets
    return f"""
local deadline = now + tonumber({lease_ms})
for _, key in ipairs({{{user}, {proc}, {cluster}}}) do
  redis.call('ZADD', key, deadline, {turn})
  expire_at_last(key)
end
redis.call('HSET', {holder}, 'user', {user}, 'proc', {proc})
redis.call('PEXPIREAT', {holder}, deadline)
"""


# A new turn's admission, every limit in one atomic step (one round trip per message).
# KEYS: the address's request window (when ARGV[2] is 1), the message windows in refusal
# order, then the caps' four keys (Leases.cap_keys). ARGV: now (epoch s), 1 or 0 (a request
# window first), the number of windows w, limit and expiry (s) per window, then the caps' five
# arguments (Leases.cap_args). Returns {0, 0, ''} when admitted; else {1, 1, oldest} (request window full),
# {2, cap, ''} (a cap full: 1 user, 2 process, 3 cluster) or {3, i, oldest} (message window i).
_ADMIT_SETS = ("KEYS[s + 1]", "KEYS[s + 2]", "KEYS[s + 3]")
_ADMIT_LUA = _NOW_MS + _EXPIRE_SETS + _window_fns(2) + """
local req = tonumber(ARGV[2])
local w = tonumber(ARGV[3])
-- The request counts whatever becomes of the message, as a ticket request does.
if req == 1 then
  local entry = oldest_if_full(1)
  if entry then return {1, 1, entry} end
  hit(1)
end
-- The slot before the quotas: a turn refused as busy uses up no message quota.
local s, a = w, 4 + 2 * w
local turn = ARGV[a]
""" + _check_caps_lua(_ADMIT_SETS, "turn", ("ARGV[a + 2]", "ARGV[a + 3]", "ARGV[a + 4]"),
                      "{2, %d, ''}") + """
for i = req + 1, w do
  local entry = oldest_if_full(i)
  if entry then return {3, i - req, entry} end
end
for i = req + 1, w do hit(i) end
""" + _take_slot_lua(_ADMIT_SETS, "KEYS[s + 4]", "turn", "ARGV[a + 1]") + """
return {0, 0, ''}
"""

# KEYS: holder hash, cluster set. ARGV: turn. The user and process sets are named in the
# holder hash (one round trip instead of a read and then a MULTI).
def release_slot_lua(holder: str, cluster: str, turn: str) -> str:
    """Lua lines that free a turn's in-flight slot, given the script's names for its keys.

    The one definition of a release: Slots.release runs it, and the frame log runs it inside
    the script that appends a turn's terminal frame."""
    return f"""
local user = redis.call('HGET', {holder}, 'user')
local proc = redis.call('HGET', {holder}, 'proc')
if user then redis.call('ZREM', user, {turn}) end
if proc then redis.call('ZREM', proc, {turn}) end
redis.call('ZREM', {cluster}, {turn})
redis.call('DEL', {holder})
"""


_RELEASE_LUA = release_slot_lua("KEYS[1]", "KEYS[2]", "ARGV[1]") + "return 1\n"

# KEYS: holder hash, user set, process set, cluster set. ARGV: turn, lease ms.
# Returns 1 when renewed, 0 when the lease had lapsed: its slot may be someone else's by now,
# so it is not taken back behind the caps' back.
_RENEW_LUA = _NOW_MS + _EXPIRE_SETS + """
local turn = ARGV[1]
local score = redis.call('ZSCORE', KEYS[4], turn)
if (not score) or tonumber(score) <= now then return 0 end
local deadline = now + tonumber(ARGV[2])
for i = 2, 4 do
  redis.call('ZADD', KEYS[i], 'XX', deadline, turn)
  expire_at_last(KEYS[i])
end
redis.call('PEXPIREAT', KEYS[1], deadline)
return 1
"""


def _text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


class Leases:
    """In-flight caps as expiring leases in Redis sorted sets (per user, process, cluster)."""

    def __init__(self, settings: Settings, client: redis.Redis) -> None:
        """Register the Lua scripts (sent to Redis on first use)."""
        self._client = client
        self.lease_s = settings.slot_lease_s
        self._lease_ms = max(1, int(settings.slot_lease_s * 1000))
        self._per_user = settings.max_turns_per_user
        self._per_process = settings.max_turns_per_process
        self._total = settings.max_turns_total
        self._renew = client.register_script(_RENEW_LUA)
        self._release = client.register_script(_RELEASE_LUA)

    @property
    def renew_every_s(self) -> float:
        """How often a holder should renew: three tries per lease survive a slow round trip."""
        return self.lease_s / 3

    def cap_args(self, turn: str) -> list[str | int]:
        """The admission script's cap arguments: turn, lease ms and the caps."""
        return [turn, self._lease_ms, self._per_user, self._per_process, self._total]

    @staticmethod
    def cap_keys(user: str, turn: str, process_id: str) -> list[str]:
        """The admission script's cap keys: user, process and cluster sets, then the holder
        hash."""
        return [keys.slots_user(user), keys.slots_process(process_id), keys.SLOTS_ALL,
                keys.slot_holder(turn)]

    def refusal(self, refused: int, lang: str) -> RateLimited:
        """The 429 of a full cap: 1 user, 2 process, 3 cluster."""
        cs = _czech(lang)
        if refused == 1:
            n = self._per_user
            text = (f"Už se vám připravuje nejvyšší povolený počet odpovědí najednou ({n}). "
                    f"Zkuste to prosím znovu za {_wait(BUSY_RETRY_AFTER_S, cs)}, "
                    "až se některá dokončí." if cs else
                    f"You already have {n} {_en_form(n, 'answer')} in progress, the most "
                    f"allowed at once. Please try again in {_wait(BUSY_RETRY_AFTER_S, cs)}, "
                    "once one has finished.")
        else:
            text = ("Asistent právě odpovídá na jiné dotazy. " if cs else
                    "The assistant is busy answering other questions. ")
            text += _again(BUSY_RETRY_AFTER_S, cs)
        scope = {1: "user", 2: "process", 3: "cluster"}[refused]
        return RateLimited(f"{scope} in-flight cap", retry_after=BUSY_RETRY_AFTER_S,
                          public_message=text)

    def renew(self, turn: str) -> bool:
        """Extend a live lease by the lease time; False if it had already lapsed or is gone."""
        try:
            user_key, proc_key = (_text(v) for v in
                                  self._client.hmget(keys.slot_holder(turn), ["user", "proc"]))
            if user_key is None or proc_key is None:
                return False
            return bool(self._renew(keys=[keys.slot_holder(turn), user_key, proc_key,
                                          keys.SLOTS_ALL],
                                    args=[turn, self._lease_ms]))
        except redis.RedisError as exc:
            raise _unavailable("en") from exc

    def release(self, turn: str) -> None:
        """Free a turn's slot now; if Redis is unreachable the lease simply runs out instead."""
        try:
            self._release(keys=[keys.slot_holder(turn), keys.SLOTS_ALL], args=[turn])
        except redis.RedisError:
            # Release usually runs in a `finally` while another error is in flight; raising
            # here would mask it, and the slot frees itself at its deadline anyway.
            log.warning("could not release in-flight slot; it frees when its lease runs out")


class Admission:
    """Every limit of a new turn in one round trip: the address's request window (optional),
    the in-flight caps and the message windows, all or nothing after the request count."""

    def __init__(self, limiter: Limiter, leases: Leases, client: redis.Redis) -> None:
        """Share the limiter's and the leases' settings; the script loads on first use."""
        self.limiter = limiter
        self.leases = leases
        self._admit = client.register_script(_ADMIT_LUA)

    def admit(self, user: str, message: str, turn: str, process_id: str, lang: str = "en",
              client_addr: str | None = None, request_addr: str | None = None) -> None:
        """Take a slot for turn and count its message (and, given request_addr, the request);
        raise TooLarge, RateLimited, or Unavailable when Redis is down."""
        self.limiter.check_length(message, lang)
        rules = self.limiter.message_rules(user, client_addr)
        request = self.limiter.request_rule(request_addr) if request_addr is not None else None
        windows = rules if request is None else (request, *rules)
        args: list[float | int | str] = [time.time(), len(windows) - len(rules), len(windows)]
        for rule in windows:
            args += [rule.item.amount, rule.item.get_expiry()]
        args += self.leases.cap_args(turn)
        try:
            kind, index, entry = self._admit(
                keys=[*self.limiter.window_keys(windows),
                      *Leases.cap_keys(user, turn, process_id)], args=args)
        except _STORE_ERRORS as exc:
            raise _unavailable(lang) from exc
        kind, index = int(kind), int(index)
        if kind == 1 and request is not None:
            raise self.limiter.window_refusal(request, entry, lang)
        if kind == 2:
            raise self.leases.refusal(index, lang)
        if kind == 3:
            raise self.limiter.window_refusal(rules[index - 1], entry, lang)
