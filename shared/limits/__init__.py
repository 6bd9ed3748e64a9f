"""Usage limits (docs/spec/behaviour.md section 9, B-2, B-28), shared by every web process through
Redis.

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

from shared.limits.admission import Admission
from shared.limits.slots import (
    BUSY_RETRY_AFTER_S,
    Leases,
    SocketLeases,
    StreamSlots,
    release_slot_lua,
)
from shared.limits.windows import Limiter, address_bucket

__all__ = ["BUSY_RETRY_AFTER_S", "Admission", "Leases", "Limiter", "SocketLeases", "StreamSlots",
           "address_bucket", "release_slot_lua"]
