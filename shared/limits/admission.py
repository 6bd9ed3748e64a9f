"""A new turn's admission: the address's request window, the in-flight caps and the message
windows in one Lua script, all or nothing (one round trip a message)."""

from __future__ import annotations

import time

import redis

from shared.limits.slots import EXPIRE_SETS, NOW_MS, Leases, check_caps_lua, take_slot_lua
from shared.limits.windows import STORE_ERRORS, Limiter, window_fns
from shared.limits.wording import unavailable

# A new turn's admission, every limit in one atomic step (one round trip per message).
# KEYS: the address's request window (when ARGV[2] is 1), the message windows in refusal
# order, then the caps' four keys (Leases.cap_keys). ARGV: now (epoch s), 1 or 0 (a request
# window first), the number of windows w, limit and expiry (s) per window, then the caps' five
# arguments (Leases.cap_args). Returns {0, 0, ''} when admitted; else {1, 1, oldest} (request window full),
# {2, cap, ''} (a cap full: 1 user, 2 process, 3 cluster) or {3, i, oldest} (message window i).
_ADMIT_SETS = ("KEYS[s + 1]", "KEYS[s + 2]", "KEYS[s + 3]")
_ADMIT_LUA = NOW_MS + EXPIRE_SETS + window_fns(2) + """
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
""" + check_caps_lua(_ADMIT_SETS, "turn", ("ARGV[a + 2]", "ARGV[a + 3]", "ARGV[a + 4]"),
                      "{2, %d, ''}") + """
for i = req + 1, w do
  local entry = oldest_if_full(i)
  if entry then return {3, i - req, entry} end
end
for i = req + 1, w do hit(i) end
""" + take_slot_lua(_ADMIT_SETS, "KEYS[s + 4]", "turn", "ARGV[a + 1]") + """
return {0, 0, ''}
"""

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
        except STORE_ERRORS as exc:
            raise unavailable(lang) from exc
        kind, index = int(kind), int(index)
        if kind == 1 and request is not None:
            raise self.limiter.window_refusal(request, entry, lang)
        if kind == 2:
            raise self.leases.refusal(index, lang)
        if kind == 3:
            raise self.limiter.window_refusal(rules[index - 1], entry, lang)
