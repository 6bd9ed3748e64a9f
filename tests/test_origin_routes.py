"""Every HTTP route that acts for a signed-in user refuses a foreign Origin on the server:
the browser's preflight is not what keeps another site out. The routes are read
from the app's own URL map, so a new route without the check fails here."""

from __future__ import annotations

import re

import pytest

from shared.config import INSECURE_DEV_SECRET, settings_from_env
from tests.conftest import ALLOC, TEST_ENV
from web import create_app

DOWN_REDIS_PORT = ALLOC.port("test_origin_routes: a Redis that is down", pool="redis")

# Public, credential-free reads a page on any origin may make (and the panel's own files).
PUBLIC = {"/", "/healthz", "/api/v1/ping", "/metrics", "/static/<path:filename>"}
FOREIGN = "http://evil.example"


def _app():  # type: ignore[no-untyped-def]
    # Every route reachable: dev tokens on (dev secret), an app API configured. Redis is not
    # reachable: a request that got past the Origin check would fail otherwise (503), not 403.
    env = {**TEST_ENV, "ASSISTANT_DEV_TOKENS": "true", "ASSISTANT_APP_JWT_SECRET":
           INSECURE_DEV_SECRET, "ASSISTANT_APP_API_URL": "http://127.0.0.1:9",
           "ASSISTANT_REDIS_URL": f"redis://127.0.0.1:{DOWN_REDIS_PORT}/0"}
    return create_app({"SETTINGS": settings_from_env(env), "TESTING": True})


def _routes() -> list[tuple[str, str]]:
    app = _app()
    out = []
    for rule in app.url_map.iter_rules():
        if rule.rule in PUBLIC:
            continue
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            out.append((method, re.sub(r"<[^>]+>", "a" * 32, rule.rule)))
    return out


ROUTES = _routes()


def test_the_route_list_is_the_apps() -> None:
    paths = {p for _, p in ROUTES}
    assert {"/api/v1/assistant/tickets", "/api/v1/assistant/feedback",
            "/api/v1/assistant/chat/stream", "/api/v1/assistant/ws"} <= paths, paths
    assert len(ROUTES) >= 10, ROUTES


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_a_foreign_origin_is_refused_by_the_server(method: str, path: str) -> None:
    client = _app().test_client()
    reply = client.open(path, method=method, headers={
        "Origin": FOREIGN, "Authorization": "Bearer x", "Content-Type": "application/json"},
        data="{}")
    assert reply.status_code == 403, (method, path, reply.status_code, reply.get_data()[:200])
    assert reply.get_json() == {"error": {"code": 403,
                                          "message": "You do not have access to this."}}
    assert "Access-Control-Allow-Origin" not in reply.headers


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_an_allowed_origin_passes_the_check(method: str, path: str) -> None:
    allowed = TEST_ENV["ASSISTANT_ALLOWED_ORIGINS"].split(",")[0]
    reply = _app().test_client().open(path, method=method, headers={
        "Origin": allowed, "Authorization": "Bearer x", "Content-Type": "application/json"},
        data="{}")
    assert reply.status_code != 403, (method, path, reply.get_data()[:200])
