"""HTTP API: tickets, health, and (dev/test only, opted in) a demo token."""

from __future__ import annotations

import json
import re
import secrets

from flask import Blueprint, Response, jsonify

from shared.auth import mint_access_token
from shared.config import INSECURE_DEV_SECRET
from shared.errors import BadRequest, NotFound, Unauthorized, Unavailable
from shared.redis_client import redis_client
from web import drain
from web.auth import bearer_token, check_origin, json_body, settings, verify
from web.guard import current_client, limiter, preferred_lang, trusted_health_caller
from web.health import cached_health
from web.protocol import PROJECT_ID
from web.tickets import issue_ticket

bp = Blueprint("api", __name__)
DEMO_USER = re.compile(r"^[A-Za-z0-9_.-]{1,30}$")


@bp.post("/api/v1/assistant/tickets")
def create_ticket() -> tuple[Response, int]:
    """Exchange the app JWT for a single-use, short-lived WebSocket ticket."""
    check_origin()
    s = settings()
    limiter(s).check_request(current_client(s), preferred_lang())
    token = bearer_token()
    access = verify(token)
    body = json_body()
    project_id = body.get("project_id") if isinstance(body, dict) else None
    if project_id and s.app_api_url:
        # A project turn reads the user's data with this token: the app confirms it first.
        from web.project.app_api import AppApi, confirm_token

        confirm_token(AppApi(s.app_api_url, s.app_api_timeout_s), token,
                      s.app_token_check_cache_s)
    ticket = issue_ticket(redis_client(s), access.user, token, s.ticket_ttl_s,
                          access.expires_at)
    resp = jsonify({"ticket": ticket, "expires_in": s.ticket_ttl_s})
    resp.headers["Cache-Control"] = "no-store"
    return resp, 201


@bp.get("/healthz")
def healthz() -> tuple[Response, int]:
    """Up or down (503); each component's status only for trusted callers."""
    s = settings()
    trusted = trusted_health_caller(s)
    if not trusted:
        limiter(s).check_health(current_client(s), preferred_lang())
    ok, components, checked_at = cached_health(s, redis_client(s))
    body: dict[str, object] = {"ok": ok, "status": "up" if ok else "down"}
    if trusted:
        # Models, index version and worker count help an attacker: operators only.
        body.update(components=components, checked_at=checked_at)
    resp = jsonify(body)
    resp.headers["Cache-Control"] = "no-store"
    return resp, 200 if ok else 503


@bp.post("/api/v1/dev/token")
def dev_token() -> tuple[Response, int]:
    """Mint a demo app token: only with ASSISTANT_DEV_TOKENS in dev/test (404 otherwise)."""
    s = settings()
    # Settings already refuse dev_tokens with a real app secret or in production; checking
    # all three here too keeps the endpoint closed if Settings are ever built another way.
    if s.production or not s.dev_tokens or s.app_jwt_secret != INSECURE_DEV_SECRET:
        raise NotFound("dev token disabled")
    check_origin()
    limiter(s).check_request(current_client(s), preferred_lang())
    body = json_body() or {}
    label = body.get("user", "demo") if isinstance(body, dict) else None
    if not isinstance(label, str) or not DEMO_USER.match(label):
        raise BadRequest("bad demo user", public_message="The user name is not valid.")
    # Each visitor an id of their own (the name is only its prefix): one shared user would
    # share one quota and could resume, cancel and rate everyone's turns.
    user = f"{label}-{secrets.token_hex(16)}"
    return jsonify({"access_token": mint_access_token(user, s.app_jwt_secret),
                    "token_type": "bearer"}), 201


@bp.get("/api/v1/assistant/projects")
def my_projects() -> tuple[Response, int]:
    """The caller's projects (id, name) for the panel's picker, read with their own token."""
    from web.project.app_api import AppApi

    check_origin()
    s = settings()
    limiter(s).check_request(current_client(s), preferred_lang())
    token = bearer_token()
    verify(token)
    if not s.app_api_url:
        return jsonify({"projects": []}), 200
    projects = AppApi(s.app_api_url, s.app_api_timeout_s).my_projects(token)
    return jsonify({"projects": [{"id": str(p.get("id")), "name": str(p.get("name", ""))[:120]}
                                 for p in projects if isinstance(p, dict)]}), 200


@bp.get("/api/v1/assistant/projects/<project_id>/chart")
def project_chart(project_id: str) -> tuple[Response, int]:
    """The data of a project's chart, read with the caller's own token like a turn's
    project context: triangles, mean, median, best compromise, maximum error."""
    from web.project.app_api import AppApi
    from web.project.chart import chart_data
    from web.project.chart_cache import cached_chart

    check_origin()
    s = settings()
    # The limit before any app read, as for every other route (a cached chart counts too).
    limiter(s).check_request(current_client(s), preferred_lang())
    token = bearer_token()
    verify(token)
    if not s.app_api_url:
        raise NotFound("no app API", public_message="Project data is not available on this "
                                                    "server.")
    if not PROJECT_ID.fullmatch(project_id):
        raise BadRequest("bad project id", public_message="This project was not found.")

    def build() -> dict[str, object]:
        b = AppApi(s.app_api_url, s.app_api_timeout_s).project_bundle(token, project_id)
        if not isinstance(b["project"], dict):
            raise NotFound("bad project body", public_message="This project was not found.")
        return chart_data(b["project"], b["opinions"] or [], b["result"], b["members"] or [])

    return jsonify(cached_chart(token, project_id, build)), 200


@bp.post("/api/v1/assistant/feedback")
def feedback() -> tuple[Response, int]:
    """Thumbs up or down (and an optional comment) on one of the caller's own answers."""
    from shared import keys
    from shared.auth import user_hash
    from web.protocol import clean_text
    from web.queue import turn_queue

    check_origin()
    s = settings()
    # Before anything reads Redis for it: a burst is refused here, not queued.
    limiter(s).check_request(current_client(s), preferred_lang())
    user = verify(bearer_token()).user
    body = json_body()
    body = body if isinstance(body, dict) else {}
    turn, rating, comment = body.get("turn"), body.get("rating"), body.get("comment") or ""
    if not isinstance(turn, str) or not re.fullmatch(r"[0-9a-f]{32}", turn) \
            or rating not in ("up", "down") or not isinstance(comment, str) \
            or len(comment) > 1000:
        raise BadRequest("bad feedback", public_message=(
            "Feedback needs the turn, \"up\" or \"down\", and at most 1,000 characters."))
    if not clean_text(comment):
        # A NUL or a lone surrogate cannot be stored in PostgreSQL: refused here, not by the
        # task after it was accepted.
        raise BadRequest("bad comment characters", public_message=(
            "The comment contains characters that cannot be used."))
    owner = redis_client(s).get(keys.turn_owner(turn))
    if owner is None or (owner.decode() if isinstance(owner, bytes) else owner) != user_hash(user):
        raise NotFound("not the caller's turn", public_message="This answer was not found.")
    from shared.feedback import Feedback, store

    # The comment is the person's words: it waits in Redis, the task carries the turn id only.
    # While one task of the turn waits, a new rating only replaces the stored one.
    if store(redis_client(s), Feedback(turn, user_hash(user), 1 if rating == "up" else -1,
                                       comment.strip()), s.replay_ttl_s):
        turn_queue.feedback(turn)
    from shared.metrics import FEEDBACK

    FEEDBACK.labels(rating).inc()
    return jsonify({"ok": True}), 202


@bp.post("/api/v1/assistant/turns/<turn>/cancel")
def cancel(turn: str) -> tuple[Response, int]:
    """Stop one of the caller's running turns: SSE's Stop (a WebSocket sends a cancel frame).

    The stream then ends with the worker's error frame 499, as over a WebSocket."""
    from web.cancel import cancel_turn

    check_origin()
    s = settings()
    limiter(s).check_request(current_client(s), preferred_lang())
    user = verify(bearer_token()).user
    cancel_turn(redis_client(s), s, user, turn)
    return jsonify({"ok": True}), 202


@bp.post("/api/v1/dev/login")
def dev_login() -> tuple[Response, int]:
    """Demo sign-in (dev and test profiles, with ASSISTANT_DEV_LOGIN or ASSISTANT_DEV_TOKENS
    only): forwards to the app's form login."""
    import urllib.error
    import urllib.parse
    import urllib.request

    s = settings()
    # An opt-in (ASSISTANT_DEV_LOGIN, implied by ASSISTANT_DEV_TOKENS): a dev stack that did
    # not ask for the demo serves none.
    if s.production or not s.dev_login or not s.app_api_url:
        raise NotFound("demo login disabled")
    check_origin()
    limiter(s).check_request(current_client(s), preferred_lang())
    body = json_body() or {}
    email, password = body.get("email"), body.get("password")
    if not isinstance(email, str) or not isinstance(password, str) or len(email) > 200 \
            or len(password) > 200:
        raise BadRequest("bad login", public_message="E-mail and password are required.")
    data = urllib.parse.urlencode({"username": email, "password": password}).encode()
    req = urllib.request.Request(f"{s.app_api_url}/api/v1/auth/login", data=data,
                                 method="POST")
    try:
        with urllib.request.urlopen(req, timeout=s.app_api_timeout_s) as resp:  # noqa: S310
            token = json.loads(resp.read())["access_token"]
    except urllib.error.HTTPError as exc:
        if exc.code in (400, 401, 422):
            raise Unauthorized("demo login refused", public_message=(
                "The e-mail or password is not right.")) from None
        raise Unavailable("app login failed") from None
    except (urllib.error.URLError, OSError, ValueError, KeyError):
        raise Unavailable("app login failed") from None
    return jsonify({"access_token": token, "token_type": "bearer"}), 201


@bp.get("/api/v1/ping")
def ping() -> tuple[Response, int]:
    """This web process alone (no dependencies): 200 while it takes new work, 503 once it is
    stopping (SIGTERM, web/drain.py), so a health check or a balancer stops sending it any."""
    if drain.draining.is_set():
        return jsonify({"ok": False, "stopping": True}), 503
    return jsonify({"ok": True}), 200
