"""The routes' plain errors through Flask's test client: no stack, no sockets, no workers.

Each request fails before a turn would be enqueued. Routes that count the request first (the
per-address limit) use the session's real test Redis, started here when it is not running.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from assistant_cli import stack
from shared.auth import mint_access_token
from shared.config import Settings
from tests.conftest import VAR, ensure_session_redis
from web import create_app

CHAT = "/api/v1/assistant/chat/stream"
EVENTS = "/api/v1/assistant/turns/{turn}/events"
TICKETS = "/api/v1/assistant/tickets"


@pytest.fixture(scope="module")
def app(settings: Settings) -> Iterator[Flask]:
    """The real app factory on the test settings, with the test Redis running."""
    sup = stack.Supervisor(VAR / "log")
    try:
        ensure_session_redis(sup)
        yield create_app({"SETTINGS": settings, "TESTING": True})
    finally:
        sup.stop_all()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture(scope="module")
def token(settings: Settings) -> str:
    return mint_access_token("route-errors", settings.app_jwt_secret)


def plain_error(resp: Any, code: int) -> dict[str, Any]:
    """The response is `{"error": {"code", "message"}}` with that status, and nothing else."""
    assert resp.status_code == code, resp.get_data(as_text=True)
    assert resp.mimetype == "application/json"
    text = resp.get_data(as_text=True)
    for leak in ("Traceback", "File \"", "Error:", "werkzeug", ".py"):
        assert leak not in text, text
    body = json.loads(text)
    assert set(body) == {"error"} and body["error"]["code"] == code
    assert set(body["error"]) <= {"code", "message", "retry_after"}
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return dict(body["error"])


def test_unknown_route_is_a_plain_404(client: FlaskClient) -> None:
    plain_error(client.get("/api/v1/assistant/nothing-here"), 404)


@pytest.mark.parametrize(("method", "path"), [("get", CHAT), ("delete", TICKETS),
                                              ("post", EVENTS.format(turn="t1"))])
def test_wrong_method_is_a_plain_405(client: FlaskClient, method: str, path: str) -> None:
    error = plain_error(getattr(client, method)(path), 405)
    assert error["message"] == "This method is not allowed here."


@pytest.mark.parametrize("path", [CHAT, TICKETS])
@pytest.mark.parametrize("authorization", [None, "Bearer", "Basic dXNlcjpwdw==",
                                           "Bearer not.a.jwt", "Bearer " + "x" * 300])
def test_missing_or_invalid_token_is_a_plain_401(client: FlaskClient, path: str,
                                                 authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    error = plain_error(client.post(path, json={"message": "hi"}, headers=headers), 401)
    assert error["message"] == "Please sign in again."


def test_a_token_signed_with_another_secret_is_a_plain_401(client: FlaskClient) -> None:
    forged = mint_access_token("route-errors", "another-secret-" + "0" * 40)
    plain_error(client.post(CHAT, json={"message": "hi"},
                            headers={"Authorization": f"Bearer {forged}"}), 401)


def test_resume_without_token_is_a_plain_401(client: FlaskClient) -> None:
    plain_error(client.get(EVENTS.format(turn="t1")), 401)


@pytest.mark.parametrize("body", [b"{", b"{\"message\": ", b"\xff\xfe", b"[" * 100_000])
def test_malformed_json_is_a_plain_422(client: FlaskClient, token: str, body: bytes) -> None:
    resp = client.post(CHAT, data=body, content_type="application/json",
                       headers={"Authorization": f"Bearer {token}"})
    assert plain_error(resp, 422)["message"] == "The request body is not valid JSON."


@pytest.mark.parametrize(("body", "message"), [
    ([1, 2], "The request body must be a JSON object."),
    ("just text", "The request body must be a JSON object."),
    ({"message": "   "}, "Please type a question."),
    ({"message": "hi\x00"}, "The message contains characters that cannot be used."),
    ({"message": "hi", "history": "no"}, "The conversation history is not valid."),
    ({"message": "hi", "project_id": 7}, "The project id is not valid."),
    ({"message": "hi", "mode": "agent"},
     "The mode is set on the server; choosing it per message is only for development."),
])
def test_an_invalid_ask_is_a_plain_422(client: FlaskClient, token: str, body: Any,
                                       message: str) -> None:
    resp = client.post(CHAT, json=body, headers={"Authorization": f"Bearer {token}"})
    assert plain_error(resp, 422)["message"] == message


def test_a_message_over_the_character_limit_is_a_plain_413(client: FlaskClient, token: str,
                                                           settings: Settings) -> None:
    resp = client.post(CHAT, json={"message": "x" * (settings.max_message_chars + 1)},
                       headers={"Authorization": f"Bearer {token}"})
    assert plain_error(resp, 413)["message"].startswith("The message is too long")


def test_a_body_over_the_frame_limit_is_a_plain_413(client: FlaskClient, token: str,
                                                    settings: Settings) -> None:
    body = json.dumps({"message": "x" * settings.ws_max_frame_bytes})
    resp = client.post(CHAT, data=body, content_type="application/json",
                       headers={"Authorization": f"Bearer {token}"})
    assert plain_error(resp, 413)["message"] == "The request is too large."


def test_a_bad_last_event_id_is_a_plain_422(client: FlaskClient, token: str) -> None:
    resp = client.get(EVENTS.format(turn="t1"), headers={
        "Authorization": f"Bearer {token}", "Last-Event-ID": "seven"})
    assert plain_error(resp, 422)["message"] == "Last-Event-ID must be a number."


def test_resuming_a_turn_that_is_not_yours_is_a_plain_404(client: FlaskClient,
                                                          token: str) -> None:
    resp = client.get(EVENTS.format(turn="f" * 32), headers={"Authorization": f"Bearer {token}"})
    assert plain_error(resp, 404)["message"] == "This answer is no longer available."


def test_a_foreign_origin_is_a_plain_403(client: FlaskClient, token: str) -> None:
    resp = client.post(CHAT, json={"message": "hi"}, headers={
        "Authorization": f"Bearer {token}", "Origin": "https://evil.example"})
    plain_error(resp, 403)


@pytest.mark.parametrize("query", ["", "?ticket=", "?ticket=not-a-ticket"])
def test_the_socket_without_a_valid_ticket_is_a_plain_401(client: FlaskClient,
                                                          query: str) -> None:
    plain_error(client.get(f"/api/v1/assistant/ws{query}"), 401)


def _claims_token(secret: str, **change: Any) -> str:
    """A token like the app's, with one claim changed (None deletes it)."""
    import time

    import jwt

    now = int(time.time())
    claims: dict[str, Any] = {"sub": "route-errors", "iat": now, "exp": now + 900,
                              "type": "access", "jti": "c" * 32}
    claims.update(change)
    return jwt.encode({k: v for k, v in claims.items() if v is not None}, secret,
                      algorithm="HS256")


BEARER_ROUTES = [("post", CHAT), ("post", TICKETS), ("get", EVENTS.format(turn="t1")),
                 ("post", "/api/v1/assistant/feedback"), ("get", "/api/v1/assistant/projects"),
                 ("get", "/api/v1/assistant/projects/p-1/chart"),
                 ("post", f"/api/v1/assistant/turns/{'a' * 32}/cancel")]


@pytest.mark.parametrize(("method", "path"), BEARER_ROUTES)
@pytest.mark.parametrize("change", [{"type": "refresh"}, {"sub": ""},
                                    {"exp": 4_102_444_800}],  # 2100: a century-long token
                         ids=["refresh-token", "empty-sub", "century-long"])
def test_every_bearer_route_refuses_a_token_the_app_would_not_accept(
        client: FlaskClient, settings: Settings, method: str, path: str,
        change: dict[str, Any]) -> None:
    """A refresh token (the app issues one at every login), an empty sub and an
    unbounded lifetime are refused by the web tier itself, on every route that takes a token;
    the same token with the change undone is accepted (not 401)."""
    bad = _claims_token(settings.app_jwt_secret, **change)
    good = _claims_token(settings.app_jwt_secret)
    send = getattr(client, method)
    # A blank question: the chat route refuses it (422) after the token, so no turn starts.
    body = {"message": "   "}
    plain_error(send(path, json=body, headers={"Authorization": f"Bearer {bad}"}), 401)
    assert send(path, json=body, headers={"Authorization": f"Bearer {good}"}).status_code != 401
