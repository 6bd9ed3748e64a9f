"""Which turn-request versions the live web processes write and the live workers read.

Each process announces itself in Redis while it runs (a sorted set per role, scored by when the
announcement lapses) and, before it takes any work, checks the other role's live processes: a
web tier that writes a version some live worker cannot read, or a worker that cannot read what
a live web process writes, refuses to start with one plain sentence. So a release that cannot
be mixed with the one running is stopped at its start, never mid-turn (docs/operations.md,
"Rolling upgrades").
"""

from __future__ import annotations

import os
import socket
import time

import redis

from shared import keys
from shared.turn_request import READS, VERSION

ANNOUNCE_TTL_S = 30.0
ROLES = ("web", "worker")


def _key(role: str) -> str:
    return f"{keys.PREFIX}contract:{role}"


def member(reads: frozenset[int] = READS, writes: int = VERSION) -> str:
    """This process's entry: `reads=1,2 writes=1 <host>:<pid>`."""
    return (f"reads={','.join(str(v) for v in sorted(reads))} writes={writes} "
            f"{socket.gethostname()}:{os.getpid()}")


def announce(client: redis.Redis, role: str, entry: str | None = None) -> None:
    """Say (again) that this process runs, for ANNOUNCE_TTL_S."""
    now = time.time()
    pipe = client.pipeline(transaction=False)
    pipe.zremrangebyscore(_key(role), "-inf", now)
    pipe.zadd(_key(role), {entry or member(): now + ANNOUNCE_TTL_S})
    pipe.execute()


def withdraw(client: redis.Redis, role: str, entry: str | None = None) -> None:
    """This process stops."""
    client.zrem(_key(role), entry or member())


def live(client: redis.Redis, role: str) -> list[tuple[frozenset[int], int]]:
    """(reads, writes) of each live process of a role."""
    out = []
    for raw in client.zrangebyscore(_key(role), time.time(), "+inf"):
        text = raw.decode() if isinstance(raw, bytes) else str(raw)
        fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
        try:
            out.append((frozenset(int(v) for v in fields["reads"].split(",")),
                        int(fields["writes"])))
        except (KeyError, ValueError):
            continue
    return out


def conflict(client: redis.Redis, role: str, reads: frozenset[int] = READS,
             writes: int = VERSION) -> str | None:
    """Why a process of `role` with these versions cannot join the live ones, or None."""
    if role == "worker":
        unread = sorted({w for _, w in live(client, "web")} - reads)
        if unread:
            return (f"live web servers write turn request version {unread[0]}, which this "
                    f"release does not read (it reads {_list(reads)}); upgrade or roll back "
                    "the web tier first")
        return None
    readers = [r for r, _ in live(client, "worker")]
    if any(writes not in r for r in readers):
        return (f"this release writes turn request version {writes}, which live workers do "
                f"not read (they read {' / '.join(_list(r) for r in readers)}); upgrade the "
                "workers first")
    return None


def _list(versions: frozenset[int]) -> str:
    return ",".join(str(v) for v in sorted(versions))
