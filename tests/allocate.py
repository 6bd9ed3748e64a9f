"""The ports and Redis databases of a test session, handed out by name.

Every listener a test starts and every Redis database it writes is claimed here once, by the
fixture or module that holds it (`ALLOC` in tests/conftest.py), instead of being numbered by
hand in each file:

    SCRIPTED_WEB = ALLOC.port("scripted_stack")           # a web server: an allowed origin
    FLOWER = ALLOC.port("metrics flower", pool="other")   # any other listener
    OWN_REDIS = ALLOC.port("health redis", pool="redis")  # a Redis server of a test's own
    BROKER = ALLOC.redis_url("scripted_stack")            # a database of the session's Redis

A name is claimed once: a second claim of the same name, or a claim when a pool or the
databases have run out, raises `AllocationError` at import (collection) time, before anything
starts. Claim at module level or in a session- or module-scoped fixture (a function-scoped
fixture would claim again on its second run): a module constant is the usual way.

Each holder has its own database for the whole session, so two stacks never share a broker
(a worker would take the other's turns), and a test that flushes its database touches nobody
else's. `ALLOC.table()` lists who holds what (written to var/test[-OFFSET]/allocations.txt at
the end of a session); docs/developing.md, "Ports and Redis databases".
"""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass
from pathlib import Path


class AllocationError(RuntimeError):
    """A resource claimed twice, or none left."""


@dataclass(frozen=True)
class Claim:
    """One resource and who holds it."""

    kind: str  # "port" or "redis db"
    name: str
    value: int
    pool: str
    where: str  # the file and line that claimed it


class Allocator:
    """Ports (from named pools, moved by the session's offset) and the session Redis's
    databases, each handed to one holder by name."""

    def __init__(self, offset: int, pools: dict[str, range], redis_port: int,
                 databases: int) -> None:
        self.offset = offset
        self.pools = {name: range(r.start + offset, r.stop + offset) for name, r in pools.items()}
        spans = sorted(self.pools.items(), key=lambda item: item[1].start)
        for (a, ra), (b, rb) in zip(spans, spans[1:], strict=False):
            if rb.start < ra.stop:
                raise AllocationError(f"the port pools {a!r} and {b!r} overlap")
        self.redis_port = redis_port
        self.databases = databases
        self._ports: dict[str, Claim] = {}
        self._dbs: dict[str, Claim] = {}
        self._taken: dict[int, Claim] = {}  # port -> its claim

    def port(self, name: str, pool: str = "web") -> int:
        """The next free port of pool, now name's."""
        if pool not in self.pools:
            raise AllocationError(f"no port pool {pool!r} (pools: {', '.join(self.pools)})")
        self._unclaimed(self._ports, "port", name)
        # Not one something already listens on: a `make run` stack beside the suite holds
        # ports inside the pools (its demo app, 8030).
        free = next((p for p in self.pools[pool] if p not in self._taken and _bindable(p)),
                    None)
        if free is None:
            raise AllocationError(f"port pool {pool!r} ({_span(self.pools[pool])}) has run out "
                                  f"at {name!r}; widen it in tests/conftest.py\n{self.table()}")
        return self._hold(self._ports, Claim("port", name, free, pool, _caller()))

    def fixed_port(self, name: str, base: int) -> int:
        """A well-known port (base, moved by the offset) that no pool hands out, now name's."""
        value = base + self.offset
        self._unclaimed(self._ports, "port", name)
        inside = [p for p, r in self.pools.items() if value in r]
        if inside:
            raise AllocationError(f"{name!r}: port {value} is in the pool {inside[0]!r}")
        if value in self._taken:
            raise AllocationError(f"{name!r}: port {value} is already "
                                  f"{self._taken[value].name!r}'s ({self._taken[value].where})")
        return self._hold(self._ports, Claim("port", name, value, "fixed", _caller()))

    def redis_db(self, name: str) -> int:
        """The next free database of the session's Redis, now name's."""
        self._unclaimed(self._dbs, "redis db", name)
        if len(self._dbs) >= self.databases:
            raise AllocationError(f"the session's Redis has {self.databases} databases, all "
                                  f"taken, at {name!r}\n{self.table()}")
        return self._hold(self._dbs, Claim("redis db", name, len(self._dbs), "redis",
                                           _caller()))

    def redis_url(self, name: str) -> str:
        """The URL of a database of the session's Redis, now name's."""
        return f"redis://127.0.0.1:{self.redis_port}/{self.redis_db(name)}"

    def claims(self) -> list[Claim]:
        """Every claim, ports first, each kind in the order claimed."""
        return [*self._ports.values(), *self._dbs.values()]

    def table(self) -> str:
        """Who holds what, a line each."""
        lines = [f"offset {self.offset}; session Redis 127.0.0.1:{self.redis_port} with "
                 f"{self.databases} databases; pools: "
                 + ", ".join(f"{p} {_span(r)}" for p, r in self.pools.items())]
        lines += [f"{c.kind:8} {c.value:>5}  {c.pool:6} {c.name:44} {c.where}"
                  for c in self.claims()]
        return "\n".join(lines)

    def _unclaimed(self, held: dict[str, Claim], kind: str, name: str) -> None:
        if name in held:
            raise AllocationError(f"{kind} {name!r} claimed twice: {held[name].where} has "
                                  f"{held[name].value}, {_caller()} asked again")

    def _hold(self, held: dict[str, Claim], claim: Claim) -> int:
        held[claim.name] = claim
        if claim.kind == "port":
            self._taken[claim.value] = claim
        return claim.value


def _bindable(port: int) -> bool:
    """Whether nothing listens on 127.0.0.1:port (a closed connection's TIME_WAIT does not
    count: the servers the tests start reuse the address too)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _span(r: range) -> str:
    return f"{r.start}-{r.stop - 1}"


def _caller() -> str:
    """The first file:line outside this module (the holder that claimed)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
