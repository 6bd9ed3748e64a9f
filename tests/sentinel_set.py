"""A Redis primary, a replica and three Sentinels on loopback (Debian's redis-server and
redis-sentinel), for the tests and the fault round that kill the primary mid-turn.

The Sentinels watch the primary as `mymaster` with a quorum of 2 and call it down after
DOWN_AFTER_MS without an answer, so a failover takes about two seconds. kill_primary()
SIGKILLs whichever server is the primary now; recover() waits until the Sentinels name the
other one, starts the killed one again as a replica of the new primary, and waits until the
Sentinels may fail over again, so the next round can fail over once more.
"""

from __future__ import annotations

import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from assistant_cli import stack
from tests.conftest import ALLOC, VAR

SERVICE = "mymaster"
DOWN_AFTER_MS = 1000
# A Sentinel that voted in a failover starts none of its own for twice this: failovers in a
# row closer than that can find no leader (-failover-abort-not-elected) and take 10 to 30 s.
FAILOVER_TIMEOUT_MS = 5000
# Two servers (each primary and replica in turn) and three Sentinels (one set at a time:
# tests/test_sentinel.py's and the fault suite's, each stopped before the next).
SERVER_PORTS = tuple(ALLOC.port(f"sentinel set: server {n}", pool="redis") for n in (1, 2))
SENTINEL_PORTS = tuple(ALLOC.port(f"sentinel set: sentinel {n}", pool="redis") for n in (1, 2, 3))
# A recovery slower than this is nudged (SentinelSet._heal): once, in a loaded CI run, the
# replica was not healthy in every Sentinel's eyes 60 s after the restart.
HEAL_AFTER_S = 20.0
# The options every Sentinel monitors the primary with.
_OPTIONS = {"down-after-milliseconds": DOWN_AFTER_MS, "failover-timeout": FAILOVER_TIMEOUT_MS,
            "parallel-syncs": 1}
# Where a lagging replica is pointed: nothing listens there.
NOWHERE_PORT = ALLOC.port("sentinel set: a primary that is not there", pool="redis")


def sentinel_binary() -> str:
    """Debian's redis-sentinel (`make system-deps-test` installs it)."""
    found = shutil.which("redis-sentinel")
    if not found:
        raise stack.StackError("no redis-sentinel: apt-get install redis-sentinel "
                               "(make system-deps-test does)")
    return found


def _answers(server_port: int) -> bool:
    try:
        return bool(redis.Redis(port=server_port, socket_timeout=1,
                                socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


@dataclass
class SentinelSet:
    """The running set: its processes and where they listen."""

    sup: stack.Supervisor
    data: Path
    servers: dict[int, stack.Proc] = field(default_factory=dict)
    sentinels: list[stack.Proc] = field(default_factory=list)
    killed_at: float = 0.0  # when kill_primary last killed one (monotonic seconds)

    def url(self, db: int = 0) -> str:
        """ASSISTANT_REDIS_URL for this set."""
        hosts = ",".join(f"127.0.0.1:{p}" for p in SENTINEL_PORTS)
        return f"sentinel://{hosts}/{SERVICE}/{db}"

    def primary_port(self) -> int | None:
        """The port the Sentinels name as the primary now (None if none answers)."""
        for p in SENTINEL_PORTS:
            try:
                addr = redis.Redis(port=p, socket_timeout=1, socket_connect_timeout=1
                                   ).sentinel_get_master_addr_by_name(SERVICE)
            except redis.RedisError:
                continue
            if addr:
                return int(addr[1])
        return None

    def start_server(self, server_port: int, replica_of: int | None) -> None:
        """A data server (no persistence: what is not replicated is lost with it)."""
        argv = [stack.redis_server_binary(), "--bind", "127.0.0.1", "--port", str(server_port),
                "--save", "", "--appendonly", "no", "--dir", str(self.data)]
        if replica_of is not None:
            argv += ["--replicaof", "127.0.0.1", str(replica_of)]
        proc = self.sup.start(f"sentinel-set-redis-{server_port}", argv)
        stack.wait_until(lambda: _answers(server_port), 20, f"redis {server_port}", proc)
        self.servers[server_port] = proc

    def replica_ready(self, primary: int) -> bool:
        """The other server replicates from `primary` and every Sentinel sees it as healthy."""
        return self.not_ready(primary) is None

    def not_ready(self, primary: int) -> str | None:
        """Why the other server is not yet a healthy replica of `primary` in every Sentinel's
        eyes, or None when it is."""
        other = next(p for p in SERVER_PORTS if p != primary)
        try:
            info = redis.Redis(port=other, socket_timeout=1).info("replication")
        except redis.RedisError as exc:
            return f"server {other} does not answer ({exc})"
        if info.get("role") != "slave" or info.get("master_link_status") != "up" \
                or int(info.get("master_port", 0)) != primary:
            return (f"server {other}: role {info.get('role')}, master port "
                    f"{info.get('master_port')}, link {info.get('master_link_status')}")
        for p in SENTINEL_PORTS:
            try:
                sentinel = redis.Redis(port=p, socket_timeout=1)
                named = sentinel.sentinel_get_master_addr_by_name(SERVICE)
                replicas = sentinel.sentinel_slaves(SERVICE)
            except redis.RedisError as exc:
                return f"sentinel {p} does not answer ({exc})"
            if not named or int(named[1]) != primary:
                return f"sentinel {p} names {named} as the primary"
            seen = [r for r in replicas if int(r["port"]) == other]
            if not any(not r["is_sdown"] and r.get("master-link-status") == "ok" for r in seen):
                return (f"sentinel {p} sees server {other} as "
                        + (", ".join(f"{r.get('flags')} link {r.get('master-link-status')}"
                                     for r in seen) or "no replica"))
        return None

    def _heal(self, primary: int, why: str) -> None:
        """Nudge what a slow failover left behind: the replica pointed at the primary again,
        a Sentinel still naming the old primary pointed at the new one (SENTINEL REMOVE and
        MONITOR, as the Sentinel docs re-point one), one that lost the replica reset so that
        it rediscovers it from the primary's INFO."""
        print(f"sentinel set: healing after a slow recovery ({why})", flush=True)
        other = next(p for p in SERVER_PORTS if p != primary)
        try:
            redis.Redis(port=other, socket_timeout=2).replicaof("127.0.0.1", str(primary))
        except redis.RedisError:
            pass
        for p in SENTINEL_PORTS:
            sentinel = redis.Redis(port=p, socket_timeout=2)
            try:
                named = sentinel.sentinel_get_master_addr_by_name(SERVICE)
                if not named or int(named[1]) != primary:
                    sentinel.sentinel_remove(SERVICE)
                    sentinel.sentinel_monitor(SERVICE, "127.0.0.1", primary, 2)
                    for option, value in _OPTIONS.items():
                        sentinel.sentinel_set(SERVICE, option, value)
                else:
                    sentinel.execute_command("SENTINEL RESET", SERVICE)
            except redis.RedisError:
                continue

    def kill_primary(self, behind_s: float = 0.0) -> int:
        """SIGKILL the primary (its unreplicated writes die with it); the port it listened on.

        behind_s > 0 makes the replica lag first: it is pointed at a port where nothing
        listens (its data stays, nothing more arrives), the primary goes on taking writes for
        behind_s, and those die with it: what asynchronous replication loses when a
        primary dies before its replica caught up. The replica is promoted all the same.
        """
        primary = self.primary_port()
        assert primary is not None, "the Sentinels name no primary"
        if behind_s > 0:
            replica = next(p for p in SERVER_PORTS if p != primary)
            redis.Redis(port=replica, socket_timeout=2).replicaof("127.0.0.1", str(NOWHERE_PORT))
            time.sleep(behind_s)
        self.servers[primary].popen.send_signal(signal.SIGKILL)
        self.killed_at = time.monotonic()
        return primary

    def recover(self, killed: int, timeout_s: float = 60) -> int:
        """Wait for the Sentinels to promote the replica, start the killed server again as
        its replica and wait until it is in sync, and until the Sentinels may fail over
        again (FAILOVER_TIMEOUT_MS); the new primary's port."""
        proc = self.servers.pop(killed)
        self.sup.stop(proc, timeout_s=1)
        stack.wait_until(lambda: self.primary_port() not in (None, killed), timeout_s,
                         "a Sentinel failover")
        primary = self.primary_port()
        assert primary is not None
        self.start_server(killed, replica_of=primary)
        started = time.monotonic()
        healed = False
        while (why := self.not_ready(primary)) is not None:
            waited = time.monotonic() - started
            if waited > timeout_s:
                logs = "\n".join(f"{proc.name}:\n{stack.tail(proc.log, 15)}"
                                  for proc in self.sentinels)
                raise stack.StackError(f"the replica's sync not ready after {timeout_s:.0f}s: "
                                       f"{why}\n{logs}")
            if not healed and waited > HEAL_AFTER_S:
                self._heal(primary, why)
                healed = True
            time.sleep(0.2)
        time.sleep(max(0.0, self.killed_at + 2 * FAILOVER_TIMEOUT_MS / 1000 + 1
                       - time.monotonic()))
        return primary


def start_sentinel_set(sup: stack.Supervisor) -> SentinelSet:
    """Start the primary, its replica and three Sentinels; wait until all see each other."""
    data = VAR / "sentinel-set"
    if data.exists():
        shutil.rmtree(data)  # Sentinels rewrite their config: start from a clean one
    data.mkdir(parents=True)
    ss = SentinelSet(sup, data)
    primary, replica = SERVER_PORTS
    ss.start_server(primary, None)
    ss.start_server(replica, replica_of=primary)
    for p in SENTINEL_PORTS:
        conf = data / f"sentinel-{p}.conf"
        conf.write_text("\n".join([
            "bind 127.0.0.1", f"port {p}", "daemonize no", f"dir {data}",
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary} 2",
            # A short failover-timeout, so that failovers can follow one another every ten
            # seconds or so.
            *(f"sentinel {option} {SERVICE} {value}" for option, value in _OPTIONS.items()),
            ""]))
        proc = sup.start(f"sentinel-{p}", [sentinel_binary(), str(conf)])
        stack.wait_until(lambda p=p: _answers(p), 20, f"sentinel {p}", proc)
        ss.sentinels.append(proc)
    stack.wait_until(lambda: ss.replica_ready(primary), 30, "the Sentinels to see the replica")
    return ss
