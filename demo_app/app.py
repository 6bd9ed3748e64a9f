"""A demo BeCoMe app: the read-only part of its API that the assistant uses. Dev/test fixture only.

Implements docs/spec/become-app-api.md (sections 1-4) for login, /users/me and the project,
opinions, result, members and invitations reads, over its own PostgreSQL database. The schema is
created and seeded on start (demo_app.seed); the stored results are read from a table, not computed
per request. Where our client reads the API, the shapes are the real app's: timestamps in UTC
without an offset ("2026-11-30T12:00:00"), `null` for an empty description and for a member without
a photo, `calculated_at` = the first calculation's time, and /api/v1/health answering
`{"status": "ok", "version": ...}`.

Demo accounts, made-up and for local development and tests only: alice@example.com,
bob@example.com, carol@example.com (and every other seeded expert), all with the password
"demo-password". See demo_app.seed for who belongs to which project.

Differences from the real app: no refresh, writes, photo bytes or rate limits; logout keeps its
list of revoked token ids in memory, as the real app does; login answers `refresh_token: null`.

Optional extension, off by default: with `--opt-out-flag` (or DEMO_APP_OPT_OUT_FLAG=1) each member
also carries `hidden_from_assistants`, an opt-out flag the real app does NOT have
(docs/spec/become-app-api.md section 5). It exists only to exercise our client's handling of such a
flag; without it the members' answers are the real app's shape.

    python -m demo_app.app --port 8031 \
        --dsn postgresql://become_demo@127.0.0.1:5434/become_demo \
        --secret-env ASSISTANT_APP_JWT_SECRET [--opt-out-flag]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import logging
import os
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import jwt
import psycopg
from flask import Flask, Response, request
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from werkzeug.exceptions import HTTPException

from demo_app import seed as demo_seed
from shared.auth import mint_access_token

DEMO_DB = "become_demo"
SECRET_ENV = "ASSISTANT_APP_JWT_SECRET"
HEALTH_PATH = "/api/v1/health"
# What /health reports as the app's version (the real app reports its api_version setting).
APP_VERSION = "1.0.0-demo"
# Set to 1/true to switch on the optional opt-out extension (see the module docstring).
OPT_OUT_ENV = "DEMO_APP_OPT_OUT_FLAG"
ACCESS_TTL_S = 900  # the app's default ACCESS_TOKEN_EXPIRE_MINUTES = 15
# HS256 keys shorter than the hash output are weak (RFC 7518 3.2); refuse them even in a demo.
MIN_SECRET_LEN = 32
CREDENTIALS_ERROR = "Could not validate credentials"

log = logging.getLogger(__name__)


@functools.cache
def _dummy_hash() -> str:
    """Checked on unknown e-mails, so a login costs the same whether the account exists."""
    return demo_seed.hash_password("not-a-real-account")


_PROJECT_FIELDS = """
    SELECT p.id, p.name, p.description, p.scale_min, p.scale_max, p.scale_unit, p.admin_id,
           p.created_at,
           (SELECT count(*) FROM project_members c WHERE c.project_id = p.id) AS member_count,
           me.role
    FROM projects p
"""


class ApiError(Exception):
    """An error answered as {"detail": ...} with a status (and headers)."""

    def __init__(self, status: int, detail: Any, headers: Mapping[str, str] | None = None):
        super().__init__(str(detail))
        self.status = status
        self.detail = detail
        self.headers = dict(headers or {})


def _unauthorized() -> ApiError:
    """The app's one 401 for missing, invalid, expired and wrong-type tokens."""
    return ApiError(401, CREDENTIALS_ERROR, {"WWW-Authenticate": "Bearer"})


def _validation_error(location: str, name: str, kind: str, message: str,
                      value: object) -> ApiError:
    """A 422 shaped like FastAPI's validation errors (docs/spec/become-app-api.md section 1)."""
    return ApiError(422, [{"type": kind, "loc": [location, name], "msg": message,
                           "input": value}])


def _json(body: object, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """A JSON response; `null` is a valid body (the result endpoint answers it)."""
    # json.dumps keeps the contract's field order; Flask's provider would sort the keys.
    return Response(json.dumps(body, ensure_ascii=False), status=status,
                    headers=dict(headers or {}), mimetype="application/json")


def _timestamp(value: datetime) -> str:
    """ISO-8601 in UTC without an offset, as the real app returns it on every database."""
    # Its migrations use plain (naive) datetimes, so its serializer writes no offset at all.
    return value.astimezone(UTC).replace(tzinfo=None).isoformat()


def _uuid(raw: str, location: str, name: str) -> str:
    """The canonical UUID string, or a 422 naming the parameter."""
    try:
        return str(uuid.UUID(raw))
    except ValueError:
        raise _validation_error(location, name, "uuid_parsing",
                                "Input should be a valid UUID", raw) from None


def _triangle(row: Mapping[str, Any], prefix: str) -> dict[str, float]:
    """{lower, peak, upper, centroid} from stored bounds; the centroid is derived, as upstream."""
    lower, peak, upper = (float(row[f"{prefix}_{b}"]) for b in ("lower", "peak", "upper"))
    return {"lower": lower, "peak": peak, "upper": upper,
            "centroid": (lower + peak + upper) / 3}


def _project_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """One project as in contract 4.1."""
    # The app answers null, never "", for a project without a description.
    return {"id": str(row["id"]), "name": row["name"], "description": row["description"] or None,
            "scale_min": float(row["scale_min"]), "scale_max": float(row["scale_max"]),
            "scale_unit": row["scale_unit"], "admin_id": str(row["admin_id"]),
            "created_at": _timestamp(row["created_at"]), "member_count": int(row["member_count"]),
            "role": row["role"]}


def _opinion_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """One opinion as in contract 4.3."""
    lower, peak, upper = (float(row[k]) for k in ("lower_bound", "peak", "upper_bound"))
    return {"id": str(row["id"]), "user_id": str(row["user_id"]), "user_email": row["user_email"],
            "user_first_name": row["user_first_name"], "user_last_name": row["user_last_name"],
            "position": row["position"], "lower_bound": lower, "peak": peak,
            "upper_bound": upper, "centroid": (lower + peak + upper) / 3,
            "created_at": _timestamp(row["created_at"]),
            "updated_at": _timestamp(row["updated_at"])}


def _result_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """The stored result as in contract 4.4."""
    return {"best_compromise": _triangle(row, "best_compromise"),
            "arithmetic_mean": _triangle(row, "mean"), "median": _triangle(row, "median"),
            "max_error": float(row["max_error"]), "num_experts": int(row["num_experts"]),
            "likert_value": row["likert_value"], "likert_decision": row["likert_decision"],
            "calculated_at": _timestamp(row["calculated_at"])}


def photo_url(base_url: str, user: str, has_photo: bool = True) -> str | None:
    """The absolute photo proxy URL the app gives for a user (contains the user id), or None
    when the user has no photo, as the app answers."""
    if not has_photo:
        return None
    # The real `v` is a cache-busting token; any stable value per user serves the same purpose.
    version = hashlib.sha256(f"photo:{user}".encode()).hexdigest()[:16]
    return f"{base_url.rstrip('/')}/api/v1/users/{user}/photo?v={version}"


def _member_json(row: Mapping[str, Any], base_url: str, opt_out_flag: bool) -> dict[str, Any]:
    """One member as in contract 4.5 (plus the opt-out flag only when the extension is on)."""
    user = str(row["user_id"])
    member: dict[str, Any] = {
        "user_id": user, "email": row["email"], "first_name": row["first_name"],
        "last_name": row["last_name"],
        "photo_url": photo_url(base_url, user, bool(row["has_photo"])),
        "role": row["role"], "joined_at": _timestamp(row["joined_at"])}
    if opt_out_flag:
        member["hidden_from_assistants"] = bool(row["hidden_from_assistants"])
    return member


def _invitation_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """One pending invitation as in contract 4.5."""
    return {"id": str(row["id"]), "invitee_email": row["email"],
            "invitee_first_name": row["first_name"], "invitee_last_name": row["last_name"],
            "invited_at": _timestamp(row["invited_at"])}


def _bearer_claims(header: str, secret: str) -> dict[str, Any]:
    """The claims of a valid access token from an Authorization header, else 401."""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized()
    try:
        # The app requires exp and iat; sub is where the user id lives.
        claims = jwt.decode(token.strip(), secret, algorithms=["HS256"],
                            options={"require": ["sub", "exp", "iat"]})
    except jwt.PyJWTError:
        raise _unauthorized() from None
    if claims.get("type") != "access":
        raise _unauthorized()
    try:
        claims["sub"] = str(uuid.UUID(str(claims["sub"])))
    except ValueError:
        raise _unauthorized() from None
    return claims


def create_demo_app(dsn: str, secret: str, *, opt_out_flag: bool = False) -> Flask:
    """The demo app over the PostgreSQL database at dsn (schema and seed ensured first);
    opt_out_flag switches on the optional `hidden_from_assistants` extension."""
    if len(secret) < MIN_SECRET_LEN:
        raise ValueError(f"the JWT secret must be at least {MIN_SECRET_LEN} characters")
    with psycopg.connect(dsn) as conn:
        if demo_seed.ensure_seeded(conn):
            log.info("demo database seeded (version %s)", demo_seed.SEED_VERSION)
    app = Flask(__name__)

    @contextmanager
    def db() -> Iterator[psycopg.Connection[dict[str, Any]]]:
        # A connection per request: a dev fixture on loopback, no pool package needed.
        with psycopg.connect(dsn, row_factory=dict_row, autocommit=True) as conn:
            yield conn

    revoked: set[str] = set()  # logged-out token ids; in memory, like the real app's list

    def current_claims() -> dict[str, Any]:
        claims = _bearer_claims(request.headers.get("Authorization", ""), secret)
        if str(claims.get("jti")) in revoked:
            raise _unauthorized()
        return claims

    def current_user(conn: psycopg.Connection[dict[str, Any]]) -> dict[str, Any]:
        subject = str(current_claims()["sub"])
        row = conn.execute("SELECT id, email, first_name, last_name, has_photo FROM users"
                           " WHERE id = %s", (subject,)).fetchone()
        if row is None:  # a deleted account's token still verifies; the app refuses it
            raise _unauthorized()
        return row

    def member_project(conn: psycopg.Connection[dict[str, Any]], raw_id: str) -> dict[str, Any]:
        # Authentication first, then the path: FastAPI answers 401 before 422 the same way.
        user = current_user(conn)
        pid = _uuid(raw_id, "path", "project_id")
        row = conn.execute(_PROJECT_FIELDS + " LEFT JOIN project_members me"
                           " ON me.project_id = p.id AND me.user_id = %s WHERE p.id = %s",
                           (user["id"], pid)).fetchone()
        if row is None:
            raise ApiError(404, "Project not found")
        if row["role"] is None:
            raise ApiError(403, "Not a member of this project")
        return row

    @app.errorhandler(ApiError)
    def on_api_error(exc: ApiError) -> Response:
        return _json({"detail": exc.detail}, exc.status, exc.headers)

    @app.errorhandler(HTTPException)
    def on_http_error(exc: HTTPException) -> Response:
        return _json({"detail": exc.name}, exc.code or 500)

    @app.errorhandler(Exception)
    def on_error(exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return _json({"detail": "Internal Server Error"}, 500)

    @app.get(HEALTH_PATH)
    def health() -> Response:
        # Exactly the real app's answer: it checks nothing and reports its version.
        return _json({"status": "ok", "version": APP_VERSION})

    @app.post("/api/v1/auth/login")
    def login() -> Response:
        fields = {name: request.form.get(name) for name in ("username", "password")}
        for name, value in fields.items():
            if not value:
                raise _validation_error("body", name, "missing", "Field required", None)
        email, password = str(fields["username"]).strip().lower(), str(fields["password"])
        with db() as conn:
            row = conn.execute("SELECT id, password_hash FROM users WHERE lower(email) = %s",
                               (email,)).fetchone()
        stored = row["password_hash"] if row else _dummy_hash()
        if not demo_seed.verify_password(password, stored) or row is None:
            raise ApiError(401, "Incorrect email or password", {"WWW-Authenticate": "Bearer"})
        token = mint_access_token(str(row["id"]), secret, ACCESS_TTL_S)
        return _json({"access_token": token, "refresh_token": None, "token_type": "bearer",
                      "expires_in": ACCESS_TTL_S})

    @app.post("/api/v1/auth/logout")
    def logout() -> Response:
        claims = current_claims()
        revoked.add(str(claims.get("jti")))
        return _json({"detail": "Logged out"})

    @app.get("/api/v1/users/me")
    def me() -> Response:
        with db() as conn:
            user = current_user(conn)
        return _json({"id": str(user["id"]), "email": user["email"],
                      "first_name": user["first_name"], "last_name": user["last_name"],
                      "photo_url": photo_url(request.host_url, str(user["id"]),
                                             bool(user["has_photo"]))})

    @app.get("/api/v1/projects")
    def projects() -> Response:
        with db() as conn:
            user = current_user(conn)
            rows = conn.execute(_PROJECT_FIELDS + " JOIN project_members me"
                                " ON me.project_id = p.id AND me.user_id = %s"
                                " ORDER BY p.created_at DESC, p.id", (user["id"],)).fetchall()
        return _json([_project_json(r) for r in rows])

    @app.get("/api/v1/projects/<project_id>")
    def project(project_id: str) -> Response:
        with db() as conn:
            row = member_project(conn, project_id)
        return _json(_project_json(row))

    @app.get("/api/v1/projects/<project_id>/opinions")
    def opinions(project_id: str) -> Response:
        with db() as conn:
            pid = member_project(conn, project_id)["id"]
            rows = conn.execute(
                "SELECT o.id, o.user_id, u.email AS user_email, u.first_name AS user_first_name,"
                " u.last_name AS user_last_name, o.position, o.lower_bound, o.peak,"
                " o.upper_bound, o.created_at, o.updated_at"
                " FROM opinions o JOIN users u ON u.id = o.user_id"
                " WHERE o.project_id = %s ORDER BY o.created_at, o.id", (pid,)).fetchall()
        return _json([_opinion_json(r) for r in rows])

    @app.get("/api/v1/projects/<project_id>/result")
    def result(project_id: str) -> Response:
        with db() as conn:
            pid = member_project(conn, project_id)["id"]
            row = conn.execute("SELECT * FROM calculation_results WHERE project_id = %s",
                               (pid,)).fetchone()
        return _json(None if row is None else _result_json(row))

    @app.get("/api/v1/projects/<project_id>/members")
    def members(project_id: str) -> Response:
        with db() as conn:
            pid = member_project(conn, project_id)["id"]
            rows = conn.execute(
                "SELECT m.user_id, u.email, u.first_name, u.last_name, u.has_photo, m.role,"
                " m.joined_at, m.hidden_from_assistants"
                " FROM project_members m JOIN users u ON u.id = m.user_id"
                " WHERE m.project_id = %s ORDER BY m.joined_at, m.user_id", (pid,)).fetchall()
        return _json([_member_json(r, request.host_url, opt_out_flag) for r in rows])

    @app.get("/api/v1/projects/<project_id>/invitations")
    def invitations(project_id: str) -> Response:
        # Members of any role may read them (contract 4.5); the order is the invitation order.
        with db() as conn:
            pid = member_project(conn, project_id)["id"]
            rows = conn.execute(
                "SELECT i.id, u.email, u.first_name, u.last_name, i.invited_at"
                " FROM invitations i JOIN users u ON u.id = i.invitee_id"
                " WHERE i.project_id = %s ORDER BY i.invited_at, i.id", (pid,)).fetchall()
        return _json([_invitation_json(r) for r in rows])

    return app


def demo_dsn(admin_dsn: str) -> str:
    """The demo app's DSN on the same server as admin_dsn (its own role and database)."""
    info = conninfo_to_dict(admin_dsn)
    host, port = info.get("host") or "127.0.0.1", info.get("port") or 5432
    return f"postgresql://{DEMO_DB}@{host}:{port}/{DEMO_DB}"


def main(argv: list[str] | None = None) -> None:
    """`python -m demo_app.app --port PORT --dsn DSN --secret-env NAME`."""
    parser = argparse.ArgumentParser(prog="python -m demo_app.app",
                                     description="Demo BeCoMe app (dev/test fixture only).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dsn", required=True, help="PostgreSQL DSN of the demo database")
    parser.add_argument("--secret-env", default=SECRET_ENV,
                        help="name of the environment variable holding the JWT secret")
    parser.add_argument("--opt-out-flag", action="store_true",
                        default=os.environ.get(OPT_OUT_ENV, "").lower() in ("1", "true", "yes"),
                        help="optional extension the real app lacks: members carry "
                             f"hidden_from_assistants (also ${OPT_OUT_ENV}=1)")
    args = parser.parse_args(argv)
    secret = os.environ.get(args.secret_env, "")
    if len(secret) < MIN_SECRET_LEN:
        parser.error(f"${args.secret_env} must hold a secret of at least {MIN_SECRET_LEN} chars")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    from werkzeug.serving import run_simple

    app = create_demo_app(args.dsn, secret, opt_out_flag=args.opt_out_flag)
    run_simple(args.host, args.port, app, threaded=True,
               use_reloader=False, use_debugger=False)


if __name__ == "__main__":
    main()
