"""Rate limits: moving windows in Redis (the `limits` package's lists), the address buckets,
and the message length limit."""

from __future__ import annotations

import ipaddress
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import redis
from limits import RateLimitItem, RateLimitItemPerDay
from limits.errors import StorageError
from limits.storage import RedisStorage
from limits.strategies import MovingWindowRateLimiter

from shared import keys
from shared.config import DECLARED, Settings, parse_rate
from shared.errors import RateLimited, TooLarge
from shared.limits.wording import (
    again,
    cs_form,
    czech,
    en_form,
    grouped,
    unavailable,
    window_phrase,
)

STORE_ERRORS = (redis.RedisError, StorageError)


@dataclass(frozen=True)
class Rule:
    kind: str  # whom it counts (a key of SCOPES and REFUSALS): picks the refusal sentence
    item: RateLimitItem
    scope: tuple[str, ...]


# Whom a moving window on messages counts, in refusal order (the user's own limit is named
# first): its scope in Redis from (user, the address's bucket or None). A setting declared with
# `limit=` one of these (shared/config.py) is such a window; nothing else lists it.
SCOPES: Mapping[str, Callable[[str, str | None], tuple[str, ...] | None]] = {
    "user": lambda user, bucket: keys.rate_user(user),
    # Shared by everyone behind the address; none when the message has no address.
    "client": lambda user, bucket: None if bucket is None else keys.rate_client_message(bucket),
    "global": lambda user, bucket: keys.RATE_GLOBAL,
    "daily": lambda user, bucket: keys.RATE_DAILY,
}


def _client_refusal(n: int, window: str, cs: bool) -> str:
    return (f"Z vaší adresy přišlo příliš mnoho požadavků ({n} {window})." if cs else
            f"Too many requests from your address ({n} {window}).")


def _user_refusal(n: int, window: str, cs: bool) -> str:
    return (f"{window.capitalize()} jste poslali {n} "
            f"{cs_form(n, ('zprávu', 'zprávy', 'zpráv'))}." if cs else
            f"You have sent {n} {en_form(n, 'message')} {window}.")


def _global_refusal(n: int, window: str, cs: bool) -> str:
    return (f"Asistent dostal {window} nejvyšší povolený počet zpráv od všech uživatelů "
            f"({grouped(n, cs)})." if cs else
            f"The assistant has reached its limit of {grouped(n, cs)} "
            f"{en_form(n, 'message')} {window} across all users.")


def _daily_refusal(n: int, window: str, cs: bool) -> str:
    return (f"Asistent dosáhl denního limitu dotazů od všech návštěvníků "
            f"({grouped(n, cs)})." if cs else
            f"The assistant has reached its limit of {grouped(n, cs)} "
            f"{en_form(n, 'question')} a day across all visitors.")


# The refusal's sentence per kind (the window's size, its phrase such as "in the last hour",
# Czech or not); the request windows (ticket requests, /healthz) are `client` too.
REFUSALS: Mapping[str, Callable[[int, str, bool], str]] = {
    "client": _client_refusal, "user": _user_refusal, "global": _global_refusal,
    "daily": _daily_refusal}


def message_windows(settings: Settings) -> tuple[tuple[str, RateLimitItem], ...]:
    """(kind, rate) of every setting declared as a message window, in refusal order; a count
    (`ASSISTANT_DAILY_QUESTION_CAP`) is per day, 0 is off."""
    out: list[tuple[str, RateLimitItem]] = []
    for kind in SCOPES:
        for name, declared in DECLARED.items():
            if declared.limit != kind:
                continue
            value = getattr(settings, name)
            if isinstance(value, str):
                out.append((kind, parse_rate(value, declared.env)))
            elif value > 0:
                out.append((kind, RateLimitItemPerDay(value)))
    return tuple(out)


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


class Limiter:
    """Rate limits (moving window, Redis) and the message length limit."""

    def __init__(self, settings: Settings, client: redis.Redis) -> None:
        """Share the app's connection pool; nothing is sent to Redis until the first check."""
        # The pool says where Redis is (one server or the primary Sentinel names): the URL
        # given here only tells `limits` which client library to use.
        storage = RedisStorage("redis://", connection_pool=client.connection_pool,
                               key_prefix=keys.RATE_PREFIX, wrap_exceptions=True)
        self._window = MovingWindowRateLimiter(storage)
        self._storage = storage
        self._max_chars = settings.max_message_chars
        self._v6 = settings.ipv6_prefix
        self._per_client = parse_rate(settings.client_request_limit,
                                      "ASSISTANT_CLIENT_REQUEST_LIMIT")
        self._windows = message_windows(settings)
        self._health = parse_rate(settings.health_request_limit,
                                  "ASSISTANT_HEALTH_REQUEST_LIMIT")

    def check_request(self, client_addr: str, lang: str = "en") -> None:
        """Count one ticket request or SSE start for a client address; raise RateLimited."""
        self._check_one(Rule("client", self._per_client,
                              keys.rate_client(self.bucket(client_addr))), lang)

    def check_health(self, client_addr: str, lang: str = "en") -> None:
        """Count one public /healthz call for a client address; raise RateLimited."""
        self._check_one(Rule("client", self._health,
                              keys.rate_health(self.bucket(client_addr))), lang)

    def _check_one(self, rule: Rule, lang: str) -> None:
        try:
            # A single limit: hit() checks and consumes atomically and consumes nothing when
            # it refuses, so no separate test is needed.
            if not self._window.hit(rule.item, *rule.scope):
                raise self._refusal(rule, lang)
        except STORE_ERRORS as exc:
            raise unavailable(lang) from exc

    def check_length(self, message: str, lang: str) -> None:
        """Raise TooLarge for a message over the length limit (local: no Redis)."""
        if len(message) <= self._max_chars:
            return
        cs = czech(lang)
        if cs:
            text = (f"Vaše zpráva má {grouped(len(message), cs)} "
                    f"{cs_form(len(message), ('znak', 'znaky', 'znaků'))}, povolené "
                    f"maximum je {grouped(self._max_chars, cs)}. Zkraťte ji prosím.")
        else:
            text = (f"Your message is {grouped(len(message), cs)} characters long; the "
                    f"limit is {grouped(self._max_chars, cs)}. Please shorten it.")
        raise TooLarge(f"message of {len(message)} characters", public_message=text)

    def message_rules(self, user: str, client_addr: str | None) -> tuple[Rule, ...]:
        """A message's windows in refusal order (SCOPES): user, address, global, daily."""
        bucket = None if client_addr is None else self.bucket(client_addr)
        rules = []
        for kind, item in self._windows:
            scope = SCOPES[kind](user, bucket)
            if scope is not None:
                rules.append(Rule(kind, item, scope))
        return tuple(rules)

    def request_rule(self, client_addr: str) -> Rule:
        """The per-address request window (ticket requests, SSE starts)."""
        return Rule("client", self._per_client, keys.rate_client(self.bucket(client_addr)))

    def bucket(self, client_addr: str) -> str:
        """The address's bucket in every per-address limit (an IPv6 prefix counts as one)."""
        return address_bucket(client_addr, self._v6)

    def window_keys(self, rules: tuple[Rule, ...]) -> list[str]:
        """The Redis keys of rules' moving-window lists (the `limits` storage's names)."""
        return [self._storage.prefixed_key(r.item.key_for(*r.scope)) for r in rules]

    def window_refusal(self, rule: Rule, oldest: bytes | str | float, lang: str
                       ) -> RateLimited:
        """The 429 of a full window whose oldest entry is `oldest`."""
        # The refusing list is full: its last entry is the oldest hit in the window.
        return self._refusal(rule, lang, float(oldest) + rule.item.get_expiry())

    def _refusal(self, rule: Rule, lang: str, reset_time: float | None = None) -> RateLimited:
        """The 429 for a refused rule, with retry_after from the moving window's reset time."""
        if reset_time is None:
            reset_time = self._window.get_window_stats(rule.item, *rule.scope).reset_time
        # The oldest hit in the window ages out at reset_time; then one slot is free.
        retry = max(1, math.ceil(reset_time - time.time()))
        cs = czech(lang)
        text = REFUSALS[rule.kind](rule.item.amount, window_phrase(rule.item, cs), cs)
        return RateLimited(f"{rule.kind} limit {rule.item}", retry_after=retry,
                           public_message=f"{text} {again(retry, cs)}")


def window_fns(base: int) -> str:
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
