"""/healthz reports each component and turns 503 while Redis is down, 200 when it returns."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assistant_cli import stack
from tests.conftest import ALLOC, VAR, Stack, start_stack, wait_for
from tests.wsutil import http_json

REDIS_PORT = ALLOC.port("own_redis_stack redis", pool="redis")  # stopped by the test
WEB_PORT = ALLOC.port("own_redis_stack")


@pytest.fixture()
def own_redis_stack(services: stack.Supervisor) -> Iterator[tuple[Stack, stack.Supervisor]]:
    """A web + worker pair on a Redis of their own, which this test may stop."""
    redis_sup = stack.Supervisor(VAR / "log")
    url = f"redis://127.0.0.1:{REDIS_PORT}/0"
    stack.ensure_redis(redis_sup, url, VAR / "redis-health")
    s = start_stack(services, "health", WEB_PORT, {"ASSISTANT_REDIS_URL": url})
    try:
        yield s, redis_sup
    finally:
        s.sup.stop_all()
        redis_sup.stop_all()


def health(s: Stack) -> tuple[int, dict]:
    status, body = http_json("GET", f"{s.base_url}/healthz")
    return status, body


def test_health_lists_every_component(real_stack: Stack) -> None:
    assert wait_for(lambda: health(real_stack)[0] == 200, 30)
    _, body = health(real_stack)
    comps = body["components"]
    assert set(comps) == {"redis", "corpus_db", "index", "worker", "model:answer",
                          "model:translation", "model:embeddings", "model:translator"}
    assert comps["index"]["version"] and comps["worker"]["workers"] >= 1


def test_health_follows_redis_down_and_back(own_redis_stack: tuple[Stack, stack.Supervisor]
                                            ) -> None:
    s, redis_sup = own_redis_stack
    assert wait_for(lambda: health(s)[0] == 200, 30), health(s)
    redis_sup.stop_all()
    assert wait_for(lambda: health(s)[0] == 503, 15)
    status, body = health(s)
    assert body["components"]["redis"] == {"ok": False, "error": "unreachable"}
    assert body["components"]["corpus_db"]["ok"] is True
    stack.ensure_redis(redis_sup, f"redis://127.0.0.1:{REDIS_PORT}/0", VAR / "redis-health")
    assert wait_for(lambda: health(s)[0] == 200, 45), health(s)


def test_a_busy_model_server_is_called_slow_not_unreachable() -> None:
    """A model server that accepts but does not answer within the probe's time (a single-slot
    llama.cpp server translating a question) is reported as busy; one that refuses as
    unreachable."""
    import socket

    from shared.config import ModelRole
    from web.health import _model

    with socket.socket() as busy, socket.socket() as closed:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)  # accepts the connection, never answers
        closed.bind(("127.0.0.1", 0))  # bound, not listening: refuses
        roles = {name: ModelRole(name="translator", provider="local", model="m",
                                 base_url=f"http://127.0.0.1:{s.getsockname()[1]}/v1")
                 for name, s in (("busy", busy), ("closed", closed))}
        assert _model(roles["busy"])["error"] == "no answer within 2 s (busy?)"
        assert _model(roles["closed"])["error"] == "unreachable"
