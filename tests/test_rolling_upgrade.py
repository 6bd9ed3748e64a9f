"""Releases side by side (shared/contract_peers.py): each process announces the turn-request
versions it reads and writes; one that cannot be mixed with the live ones refuses to start,
with one plain sentence. The reading rule itself: tests/test_turn_request.py."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import redis

from assistant_cli import stack
from shared import contract_peers
from shared.turn_request import READS, VERSION
from tests.conftest import ALLOC, REPO, VAR, stack_env

# A Redis of its own: the suite's stacks announce their workers on theirs every few seconds,
# and one such announcement between `empty` and a check made the refusals below name it too.
URL = f"redis://127.0.0.1:{ALLOC.port('test_rolling_upgrade redis', pool='redis')}/0"
REFUSED_WEB_PORT = ALLOC.port("test_rolling_upgrade: a web server refused", pool="other")


@pytest.fixture(scope="module")
def client() -> Iterator[redis.Redis]:
    sup = stack.Supervisor(VAR / "log")
    try:
        stack.ensure_redis(sup, URL, VAR / "redis-rolling")
        c = redis.Redis.from_url(URL)
        yield c
    finally:
        sup.stop_all()


@pytest.fixture(autouse=True)
def empty(client: redis.Redis) -> None:
    for role in contract_peers.ROLES:
        client.delete(f"ba:contract:{role}")


def test_this_release_joins_processes_of_its_own_versions(client: redis.Redis) -> None:
    contract_peers.announce(client, "web")
    contract_peers.announce(client, "worker")
    assert contract_peers.live(client, "web") == [(READS, VERSION)]
    assert contract_peers.conflict(client, "web") is None
    assert contract_peers.conflict(client, "worker") is None


def test_a_worker_that_cannot_read_what_live_web_servers_write_is_refused(
        client: redis.Redis) -> None:
    contract_peers.announce(client, "web", "reads=1,2 writes=2 web-new:1")
    contract_peers.announce(client, "web", "reads=1 writes=1 web-old:2")
    why = contract_peers.conflict(client, "worker", reads=frozenset({1}))
    assert why == ("live web servers write turn request version 2, which this release does "
                   "not read (it reads 1); upgrade or roll back the web tier first")
    assert contract_peers.conflict(client, "worker", reads=frozenset({1, 2})) is None


def test_a_web_tier_writing_what_live_workers_cannot_read_is_refused(
        client: redis.Redis) -> None:
    contract_peers.announce(client, "worker", "reads=1 writes=1 w-old:1")
    contract_peers.announce(client, "worker", "reads=1,2 writes=1 w-new:2")
    assert contract_peers.conflict(client, "web", writes=2) == (
        "this release writes turn request version 2, which live workers do not read (they "
        "read 1 / 1,2); upgrade the workers first")
    assert contract_peers.conflict(client, "web", writes=1) is None


def test_lapsed_and_withdrawn_processes_do_not_count(client: redis.Redis) -> None:
    client.zadd("ba:contract:web", {"reads=9 writes=9 gone:1": time.time() - 1})
    contract_peers.announce(client, "web", "reads=8 writes=8 stopped:2")
    contract_peers.withdraw(client, "web", "reads=8 writes=8 stopped:2")
    client.zadd("ba:contract:web", {"garbage": time.time() + 60})
    assert contract_peers.live(client, "web") == []
    assert contract_peers.conflict(client, "worker") is None


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=90,
                          check=False)


def test_a_worker_refuses_to_start_beside_web_servers_it_cannot_read(
        client: redis.Redis) -> None:
    contract_peers.announce(client, "web", "reads=99 writes=99 web-future:1")
    env = stack_env({"ASSISTANT_REDIS_URL": URL})
    done = _run([sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "-Q",
                 "turns", "-P", "threads", "-c", "1", "--without-gossip", "--without-mingle"],
                env)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-2000:]
    assert ("become-assistant worker: live web servers write turn request version 99, which "
            "this release does not read") in out
    assert "Traceback" not in out and "ready." not in out


def test_a_web_server_refuses_to_start_beside_workers_that_cannot_read_it(
        client: redis.Redis) -> None:
    contract_peers.announce(client, "worker", "reads=99 writes=99 worker-future:1")
    env = stack_env({"ASSISTANT_REDIS_URL": URL,
                     "ASSISTANT_WEB_BIND": f"127.0.0.1:{REFUSED_WEB_PORT}"})
    done = _run([sys.executable, "-m", "gunicorn", "-c", "web/gunicorn_conf.py",
                 "web.wsgi:app"], env)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-2000:]
    assert ("become-assistant web: this release writes turn request version 1, which live "
            "workers do not read (they read 99)") in out
    assert "Traceback" not in out and "Booting worker" not in out
