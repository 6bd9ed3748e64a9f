"""Claims of docs/security.md that no other test held to account: the app token
sealed in the ticket, and the app's token confirmation reused for its cache time only."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import redis

from assistant_cli import stack
from shared import keys
from shared.auth import mint_access_token
from shared.config import Settings
from shared.errors import Unauthorized
from web.project.app_api import AppApi, confirm_token
from web.tickets import consume_ticket, issue_ticket


@pytest.fixture()
def client(services: stack.Supervisor, settings: Settings) -> Iterator[redis.Redis]:
    """The session's real test Redis (the database of the test settings)."""
    yield redis.Redis.from_url(settings.redis_url)


def test_the_app_token_is_sealed_in_the_ticket(client: redis.Redis) -> None:
    """Redis holds the ticket's record under the ticket's hash, the token encrypted with a key
    only the ticket gives: neither the ticket nor the token is readable from Redis."""
    token = mint_access_token("sealed-user", "s" * 40)
    ticket = issue_ticket(client, "sealed-user", token, 30, time.time() + 900)
    raw = client.get(keys.ticket(ticket))
    assert raw is not None
    stored = raw.decode()
    record = json.loads(stored)
    assert set(record) == {"user", "token", "exp"}
    for visible in (token, ticket, *token.split(".")):
        assert visible not in stored, "the token or ticket is readable in Redis"
    assert not any(ticket in k.decode() for k in client.scan_iter("ba:ticket:*"))
    # The sealed token opens with the ticket, and only once.
    assert consume_ticket(client, ticket).app_token == token
    with pytest.raises(Unauthorized):
        consume_ticket(client, ticket)


def test_a_ticket_record_opens_only_with_its_own_ticket(client: redis.Redis) -> None:
    """Another ticket's key cannot open a record moved under it (the key derives from the
    ticket, not from a constant)."""
    token = mint_access_token("sealed-user", "s" * 40)
    first = issue_ticket(client, "sealed-user", token, 30, time.time() + 900)
    second = issue_ticket(client, "sealed-user", token, 30, time.time() + 900)
    client.set(keys.ticket(second), client.get(keys.ticket(first)) or b"")
    with pytest.raises(Unauthorized):
        consume_ticket(client, second)


class _App(BaseHTTPRequestHandler):
    """GET /api/v1/users/me of a BeCoMe app: yes, until the token is logged out."""

    calls: list[str] = []
    logged_out: set[str] = set()

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        token = self.headers.get("Authorization", "").removeprefix("Bearer ")
        _App.calls.append(token)
        ok = self.path == "/api/v1/users/me" and token not in _App.logged_out
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"id": "u"}' if ok else b'{"detail": "logged out"}')

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def app_api() -> Iterator[AppApi]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _App)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _App.calls.clear()
    _App.logged_out.clear()
    try:
        yield AppApi(f"http://127.0.0.1:{server.server_address[1]}", 2.0)
    finally:
        server.shutdown()
        server.server_close()


def test_the_apps_yes_is_reused_for_its_cache_time_and_no_longer(app_api: AppApi) -> None:
    """docs/security.md: the app confirms a token (GET /users/me), the "yes" reused for
    ASSISTANT_APP_TOKEN_CHECK_CACHE_S; a logout is then seen within that time."""
    token = mint_access_token(f"cache-{time.time_ns()}", "s" * 40)
    confirm_token(app_api, token, 0.6)
    confirm_token(app_api, token, 0.6)
    assert len(_App.calls) == 1, "the yes is reused within the cache time"
    _App.logged_out.add(token)
    confirm_token(app_api, token, 0.6)  # still within the cache time: not asked again
    assert len(_App.calls) == 1
    time.sleep(0.7)
    with pytest.raises(Unauthorized):
        confirm_token(app_api, token, 0.6)
    assert len(_App.calls) == 2, "after the cache time the app is asked again"
    with pytest.raises(Unauthorized):
        confirm_token(app_api, token, 0.6)
    assert len(_App.calls) == 3, "a no is never reused"
    other = mint_access_token(f"cache-other-{time.time_ns()}", "s" * 40)
    confirm_token(app_api, other, 0.6)
    assert _App.calls[-1] == other, "each token is confirmed on its own"
