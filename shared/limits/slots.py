"""Leases in Redis sorted sets: in-flight turn slots (per user, process, cluster), open
WebSockets and open event streams; a crashed holder's lease frees itself in time."""

from __future__ import annotations

import logging
import time

import redis

from shared import keys
from shared.config import Settings
from shared.errors import RateLimited, Unavailable
from shared.limits.windows import STORE_ERRORS
from shared.limits.wording import again, czech, en_form, unavailable, wait

log = logging.getLogger(__name__)

# A busy slot frees when some running turn ends, which nobody can predict; a few seconds is a
# polite interval for the client to try again.
BUSY_RETRY_AFTER_S = 5


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
        except STORE_ERRORS as exc:
            raise unavailable("en") from exc

    def renew(self, user: str, stream: str) -> None:
        """Keep a stream's slot while it is open."""
        key = keys.streams_user(user)
        try:
            self._client.zadd(key, {stream: time.time() + self.lease_s}, xx=True)
            self._client.expire(key, int(self.lease_s) + 5)
        except STORE_ERRORS:
            pass  # the slot lapses; the next acquire counts without it

    def release(self, user: str, stream: str) -> None:
        """Free a stream's slot."""
        try:
            self._client.zrem(keys.streams_user(user), stream)
        except STORE_ERRORS:
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
        cs = czech(lang)
        if refused == 1:
            n = self._per_user
            text = (f"Máte otevřeno {n} spojení s asistentem, víc najednou nejde. Zavřete "
                    "prosím jiné okno nebo kartu s asistentem." if cs else
                    f"You have {n} connections open to the assistant, the most allowed at "
                    "once. Please close another window or tab with the assistant.")
        else:
            text = ("Z vaší adresy je otevřeno příliš mnoho spojení s asistentem. "
                    if cs else "Too many connections from your address are open. ")
            text += again(BUSY_RETRY_AFTER_S, cs)
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
        except STORE_ERRORS:
            log.warning("could not release a socket's place; it frees when its lease runs out")

    def _run(self, user: str, bucket: str, socket_id: str, mode: str, lang: str) -> int:
        try:
            return int(self._script(
                keys=[keys.sockets_user(user), keys.sockets_address(bucket)],
                args=[socket_id, self._lease_ms, self._per_user, self._per_address, mode]))
        except STORE_ERRORS as exc:
            raise unavailable(lang) from exc


# --- in-flight leases ----------------------------------------------------------------------

# Deadlines use the Redis server clock (TIME), so web hosts with skewed clocks agree on them.
NOW_MS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# A set's members all expire by its highest deadline, so the key may go then too (idle users
# and dead processes leave nothing behind).
EXPIRE_SETS = """
local function expire_at_last(key)
  local top = redis.call('ZRANGE', key, 0, 0, 'REV', 'WITHSCORES')
  if top[2] then redis.call('PEXPIREAT', key, math.floor(tonumber(top[2]))) end
end
"""

def check_caps_lua(sets: tuple[str, str, str], turn: str, caps: tuple[str, str, str],
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


def take_slot_lua(sets: tuple[str, str, str], holder: str, turn: str, lease_ms: str) -> str:
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
_RENEW_LUA = NOW_MS + EXPIRE_SETS + """
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
        cs = czech(lang)
        if refused == 1:
            n = self._per_user
            text = (f"Už se vám připravuje nejvyšší povolený počet odpovědí najednou ({n}). "
                    f"Zkuste to prosím znovu za {wait(BUSY_RETRY_AFTER_S, cs)}, "
                    "až se některá dokončí." if cs else
                    f"You already have {n} {en_form(n, 'answer')} in progress, the most "
                    f"allowed at once. Please try again in {wait(BUSY_RETRY_AFTER_S, cs)}, "
                    "once one has finished.")
        else:
            text = ("Asistent právě odpovídá na jiné dotazy. " if cs else
                    "The assistant is busy answering other questions. ")
            text += again(BUSY_RETRY_AFTER_S, cs)
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
            raise unavailable("en") from exc

    def release(self, turn: str) -> None:
        """Free a turn's slot now; if Redis is unreachable the lease simply runs out instead."""
        try:
            self._release(keys=[keys.slot_holder(turn), keys.SLOTS_ALL], args=[turn])
        except redis.RedisError:
            # Release usually runs in a `finally` while another error is in flight; raising
            # here would mask it, and the slot frees itself at its deadline anyway.
            log.warning("could not release in-flight slot; it frees when its lease runs out")
