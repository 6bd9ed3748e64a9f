"""The demo BeCoMe app over real HTTP: login, tokens, membership checks and the project reads."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import jwt
import psycopg
import pytest

from demo_app.app import APP_VERSION, CREDENTIALS_ERROR
from demo_app.seed import (
    CAFETERIA_MENU,
    DEMO_PASSWORD,
    DEMO_PROJECTS,
    DEMO_USERS,
    FLOOD_PLAN,
    HIDDEN_USER,
    INJECTION_PROJECT,
    INJECTION_TEXT,
    OFFICE_MOVE,
    OLIVER,
    PROJECTS,
    STALE_PROJECT,
    USERS,
    ensure_seeded,
)
from shared.auth import mint_access_token, verify_access_token
from shared.method import Fuzzy, compare_stored, compute
from tests.conftest import TEST_ENV

SECRET = TEST_ENV["ASSISTANT_APP_JWT_SECRET"]
ALICE, BOB, CAROL = (DEMO_USERS[f"{n}@example.com"] for n in ("alice", "bob", "carol"))
PROJECT_FIELDS = {"id", "name", "description", "scale_min", "scale_max", "scale_unit",
                  "admin_id", "created_at", "member_count", "role"}
OPINION_FIELDS = {"id", "user_id", "user_email", "user_first_name", "user_last_name", "position",
                  "lower_bound", "peak", "upper_bound", "centroid", "created_at", "updated_at"}
# The real app's member has no opt-out flag: the demo adds one only as an optional extension.
MEMBER_FIELDS = {"user_id", "email", "first_name", "last_name", "photo_url", "role", "joined_at"}
INVITATION_FIELDS = {"id", "invitee_email", "invitee_first_name", "invitee_last_name",
                     "invited_at"}
RESULT_FIELDS = {"best_compromise", "arithmetic_mean", "median", "max_error", "num_experts",
                 "likert_value", "likert_decision", "calculated_at"}
PROJECT_PATHS = ("", "/opinions", "/result", "/members", "/invitations")


def call(method: str, url: str, token: str | None = None, form: dict[str, str] | None = None,
         authorization: str | None = None) -> tuple[int, dict[str, str], Any]:
    """One request; (status, headers, decoded JSON body) for every status."""
    headers: dict[str, str] = {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if authorization is not None:
        headers["Authorization"] = authorization
    data = urlencode(form).encode() if form is not None else None
    if data is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 - loopback
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read() or b"null")


def get(base: str, path: str, token: str | None = None) -> tuple[int, Any]:
    """GET base + /api/v1 + path; (status, body)."""
    status, _, body = call("GET", f"{base}/api/v1{path}", token)
    return status, body


def login(base: str, email: str, password: str = DEMO_PASSWORD) -> tuple[int, dict[str, str], Any]:
    """POST the login form."""
    return call("POST", f"{base}/api/v1/auth/login", form={"username": email, "password": password})


@pytest.fixture(scope="session")
def tokens(demo_app: str) -> dict[str, str]:
    """An access token per demo user, from the login endpoint."""
    out = {}
    for email in DEMO_USERS:
        status, _, body = login(demo_app, email)
        assert status == 200, body
        out[email.split("@")[0]] = body["access_token"]
    return out


def parse_time(value: str) -> datetime:
    """An API timestamp: like the real app's, it has no offset, and it is read as UTC."""
    parsed = datetime.fromisoformat(value)
    assert parsed.tzinfo is None, f"the real app sends no offset: {value}"
    return parsed.replace(tzinfo=UTC)


def test_health_is_the_real_apps_shape(demo_app: str) -> None:
    assert get(demo_app, "/health") == (200, {"status": "ok", "version": APP_VERSION})


def test_login_issues_a_15_minute_access_token(demo_app: str) -> None:
    status, _, body = login(demo_app, "Alice@Example.com")
    assert status == 200, body
    assert set(body) == {"access_token", "refresh_token", "token_type", "expires_in"}
    assert (body["refresh_token"], body["token_type"], body["expires_in"]) == (None, "bearer", 900)
    assert verify_access_token(body["access_token"], SECRET) == ALICE
    claims = jwt.decode(body["access_token"], SECRET, algorithms=["HS256"])
    assert claims["exp"] - claims["iat"] == 900
    assert claims["type"] == "access" and claims["jti"]


@pytest.mark.parametrize("email, password", [
    ("alice@example.com", "wrong-password"),
    ("nobody@example.com", DEMO_PASSWORD),
    ("carol@example.com", ""),
])
def test_login_refuses_bad_credentials(demo_app: str, email: str, password: str) -> None:
    status, headers, body = login(demo_app, email, password)
    if password:
        assert (status, body) == (401, {"detail": "Incorrect email or password"})
        assert headers["WWW-Authenticate"] == "Bearer"
    else:  # a missing field is a validation error, as in FastAPI
        assert status == 422 and body["detail"][0]["loc"] == ["body", "password"]


@pytest.mark.parametrize("path", ["/users/me", "/projects",
                                  *(f"/projects/{OFFICE_MOVE}{p}" for p in PROJECT_PATHS)])
def test_token_required(demo_app: str, path: str) -> None:
    status, headers, body = call("GET", f"{demo_app}/api/v1{path}")
    assert (status, body) == (401, {"detail": CREDENTIALS_ERROR})
    assert headers["WWW-Authenticate"] == "Bearer"


def _signed(claims: dict[str, Any], secret: str = SECRET) -> str:
    return jwt.encode(claims, secret, algorithm="HS256")


def _claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {"sub": ALICE, "iat": now, "exp": now + 600, "jti": "ab" * 16, "type": "access"}
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


@pytest.mark.parametrize("authorization", [
    pytest.param(f"Bearer {_signed(_claims(type='refresh'))}", id="refresh-type"),
    pytest.param(f"Bearer {mint_access_token(ALICE, SECRET, ttl_s=-60)}", id="expired"),
    pytest.param(f"Bearer {_signed(_claims(), 'another-secret-' * 4)}", id="wrong-secret"),
    pytest.param(f"Bearer {_signed(_claims(iat=None))}", id="no-iat"),
    pytest.param(f"Bearer {_signed(_claims(type=None))}", id="no-type"),
    pytest.param(f"Bearer {mint_access_token(str(uuid.uuid4()), SECRET)}", id="unknown-user"),
    pytest.param(f"Bearer {mint_access_token('alice@example.com', SECRET)}", id="sub-not-uuid"),
    pytest.param("Bearer not.a.jwt", id="garbage"),
    pytest.param(f"Basic {mint_access_token(ALICE, SECRET)}", id="not-bearer"),
])
def test_bad_tokens_are_refused(demo_app: str, authorization: str) -> None:
    for path in ("/users/me", f"/projects/{OFFICE_MOVE}/opinions"):
        status, headers, body = call("GET", f"{demo_app}/api/v1{path}",
                                     authorization=authorization)
        assert (status, body) == (401, {"detail": CREDENTIALS_ERROR}), path
        assert headers["WWW-Authenticate"] == "Bearer"


def test_users_me(demo_app: str, tokens: dict[str, str]) -> None:
    status, me = get(demo_app, "/users/me", tokens["alice"])
    assert status == 200 and me == {
        "id": ALICE, "email": "alice@example.com", "first_name": "Alice",
        "last_name": "Moravcová", "photo_url": me["photo_url"]}
    assert me["photo_url"].startswith(f"{demo_app}/api/v1/users/{ALICE}/photo?v=")
    # No photo: null, as the real app answers.
    assert get(demo_app, "/users/me", tokens["carol"])[1]["photo_url"] is None


def test_project_lists_follow_membership(demo_app: str, tokens: dict[str, str]) -> None:
    status, alice = get(demo_app, "/projects", tokens["alice"])
    assert status == 200
    assert [p["id"] for p in alice] == [STALE_PROJECT, INJECTION_PROJECT, CAFETERIA_MENU,
                                        FLOOD_PLAN, OFFICE_MOVE]
    assert all(set(p) == PROJECT_FIELDS for p in alice)
    created = [parse_time(p["created_at"]) for p in alice]
    assert created == sorted(created, reverse=True)
    assert {p["id"]: p["role"] for p in alice}[OFFICE_MOVE] == "admin"
    status, bob = get(demo_app, "/projects", tokens["bob"])
    assert status == 200
    assert [(p["id"], p["role"]) for p in bob] == [(CAFETERIA_MENU, "admin"),
                                                   (OFFICE_MOVE, "expert")]
    assert get(demo_app, "/projects", tokens["carol"]) == (200, [])


def test_project_detail(demo_app: str, tokens: dict[str, str]) -> None:
    status, project = get(demo_app, f"/projects/{OFFICE_MOVE}", tokens["alice"])
    assert status == 200
    assert project == {**project, "id": OFFICE_MOVE, "name": "Office move budget",
                       "scale_min": 0.0, "scale_max": 100.0, "scale_unit": "kCZK",
                       "admin_id": ALICE, "member_count": 4, "role": "admin",
                       "created_at": "2026-01-12T09:00:00"}
    # A naive timestamp is UTC: 09:00 in the seed's UTC, not 09:00 local time.
    assert parse_time(project["created_at"]) == datetime(2026, 1, 12, 9, 0, tzinfo=UTC)
    assert project in get(demo_app, "/projects", tokens["alice"])[1]
    status, as_bob = get(demo_app, f"/projects/{OFFICE_MOVE}", tokens["bob"])
    assert (status, as_bob) == (200, {**project, "role": "expert"})


@pytest.mark.parametrize("suffix", PROJECT_PATHS)
def test_non_members_get_403(demo_app: str, tokens: dict[str, str], suffix: str) -> None:
    for user, project in (("bob", FLOOD_PLAN), ("carol", OFFICE_MOVE)):
        assert get(demo_app, f"/projects/{project}{suffix}", tokens[user]) == (
            403, {"detail": "Not a member of this project"})


@pytest.mark.parametrize("suffix", PROJECT_PATHS)
def test_unknown_project_404(demo_app: str, tokens: dict[str, str], suffix: str) -> None:
    assert get(demo_app, f"/projects/{uuid.uuid4()}{suffix}", tokens["alice"]) == (
        404, {"detail": "Project not found"})


@pytest.mark.parametrize("suffix", PROJECT_PATHS)
def test_non_uuid_project_id_422(demo_app: str, tokens: dict[str, str], suffix: str) -> None:
    status, body = get(demo_app, f"/projects/not-a-uuid{suffix}", tokens["alice"])
    assert status == 422
    assert body["detail"][0]["loc"] == ["path", "project_id"]
    # Authentication is checked before the path, as the app's framework does.
    assert get(demo_app, f"/projects/not-a-uuid{suffix}")[0] == 401


def test_opinions_shape(demo_app: str, tokens: dict[str, str]) -> None:
    status, opinions = get(demo_app, f"/projects/{FLOOD_PLAN}/opinions", tokens["alice"])
    assert status == 200 and len(opinions) == 60
    assert all(set(o) == OPINION_FIELDS for o in opinions)
    created = [parse_time(o["created_at"]) for o in opinions]
    assert created == sorted(created)
    assert any(o["updated_at"] != o["created_at"] for o in opinions)
    for o in opinions:
        assert 0 <= o["lower_bound"] <= o["peak"] <= o["upper_bound"] <= 100
        assert o["centroid"] == pytest.approx((o["lower_bound"] + o["peak"] + o["upper_bound"]) / 3)
        assert parse_time(o["updated_at"]) >= parse_time(o["created_at"])
        assert o["user_email"].endswith("@example.com") and o["user_first_name"] and o["position"]
    assert len({o["user_id"] for o in opinions}) == 60
    assert ALICE not in {o["user_id"] for o in opinions}  # a member who has not answered


def test_result_is_null_without_a_stored_result(demo_app: str, tokens: dict[str, str]) -> None:
    assert get(demo_app, f"/projects/{INJECTION_PROJECT}/result", tokens["alice"]) == (200, None)
    assert get(demo_app, f"/projects/{INJECTION_PROJECT}/opinions", tokens["alice"]) == (200, [])


def _recomputed(base: str, token: str, project: str) -> Any:
    _, opinions = get(base, f"/projects/{project}/opinions", token)
    return compute([Fuzzy(o["lower_bound"], o["peak"], o["upper_bound"]) for o in opinions])


@pytest.mark.parametrize("project, experts, likert", [
    (OFFICE_MOVE, 4, (50, "Neutral")),
    (FLOOD_PLAN, 60, (50, "Neutral")),
    (CAFETERIA_MENU, 4, (75, "Rather agree")),
])
def test_stored_results_match_a_recomputation(demo_app: str, tokens: dict[str, str],
                                              project: str, experts: int,
                                              likert: tuple[int, str]) -> None:
    status, result = get(demo_app, f"/projects/{project}/result", tokens["alice"])
    assert status == 200 and set(result) == RESULT_FIELDS
    assert compare_stored(result, _recomputed(demo_app, tokens["alice"], project)) == ()
    assert result["num_experts"] == experts
    assert (result["likert_value"], result["likert_decision"]) == likert
    for name in ("best_compromise", "arithmetic_mean", "median"):
        tri = result[name]
        assert tri["centroid"] == pytest.approx((tri["lower"] + tri["peak"] + tri["upper"]) / 3)


@pytest.mark.parametrize("project", [OFFICE_MOVE, FLOOD_PLAN, CAFETERIA_MENU, STALE_PROJECT])
def test_calculated_at_is_the_first_calculation(demo_app: str, tokens: dict[str, str],
                                                project: str) -> None:
    """The app keeps the first calculation's time: later recalculations do not move it."""
    _, result = get(demo_app, f"/projects/{project}/result", tokens["alice"])
    _, opinions = get(demo_app, f"/projects/{project}/opinions", tokens["alice"])
    first = min(parse_time(o["created_at"]) for o in opinions)
    assert parse_time(result["calculated_at"]) == first
    if len(opinions) >= 7:  # every seventh expert changed their mind after it
        assert max(parse_time(o["updated_at"]) for o in opinions) > first


def test_stale_result_disagrees_with_the_opinions(demo_app: str, tokens: dict[str, str]) -> None:
    status, result = get(demo_app, f"/projects/{STALE_PROJECT}/result", tokens["alice"])
    assert status == 200 and result["num_experts"] == 5
    computed = _recomputed(demo_app, tokens["alice"], STALE_PROJECT)
    assert computed.num_experts == 4
    assert {"num_experts", "best_compromise.peak", "max_error"} <= set(
        compare_stored(result, computed))
    assert (result["likert_value"], result["likert_decision"]) == (None, None)  # scale 0-200


def test_empty_description_is_null(demo_app: str, tokens: dict[str, str]) -> None:
    stored = {p.id: p.description for p in PROJECTS}
    assert stored[STALE_PROJECT] == ""  # cleared in the database...
    status, project = get(demo_app, f"/projects/{STALE_PROJECT}", tokens["alice"])
    assert status == 200 and project["description"] is None  # ...and null in the API
    listed = {p["id"]: p for p in get(demo_app, "/projects", tokens["alice"])[1]}
    assert listed[STALE_PROJECT]["description"] is None
    assert listed[OFFICE_MOVE]["description"]


def test_members_carry_roles_and_photos_but_no_opt_out(demo_app: str,
                                                       tokens: dict[str, str]) -> None:
    status, members = get(demo_app, f"/projects/{CAFETERIA_MENU}/members", tokens["bob"])
    assert status == 200 and all(set(m) == MEMBER_FIELDS for m in members), members
    joined = [parse_time(m["joined_at"]) for m in members]
    assert joined == sorted(joined)
    _, project = get(demo_app, f"/projects/{CAFETERIA_MENU}", tokens["bob"])
    assert project["member_count"] == len(members)
    assert [m["user_id"] for m in members if m["role"] == "admin"] == [project["admin_id"]] == [BOB]
    photos = {m["user_id"]: m["photo_url"] for m in members}
    assert photos[HIDDEN_USER] is None and photos[OLIVER.id] is None  # no photo: null
    for user in (ALICE, BOB):
        assert str(photos[user]).startswith(f"{demo_app}/api/v1/users/{user}/photo?v=")
    _, opinions = get(demo_app, f"/projects/{CAFETERIA_MENU}/opinions", tokens["bob"])
    assert {o["user_id"] for o in opinions} <= {m["user_id"] for m in members}


def test_opt_out_flag_is_an_optional_extension(demo_app_opt_out: str) -> None:
    """Switched on (DEMO_APP_OPT_OUT_FLAG=1), members carry the flag the real app lacks."""
    _, _, body = login(demo_app_opt_out, "bob@example.com")
    status, members = get(demo_app_opt_out, f"/projects/{CAFETERIA_MENU}/members",
                          body["access_token"])
    assert status == 200
    assert all(set(m) == MEMBER_FIELDS | {"hidden_from_assistants"} for m in members)
    assert [m["user_id"] for m in members if m["hidden_from_assistants"]] == [HIDDEN_USER]
    _, opinions = get(demo_app_opt_out, f"/projects/{CAFETERIA_MENU}/opinions",
                      body["access_token"])
    assert HIDDEN_USER in {o["user_id"] for o in opinions}  # hidden, but still has an opinion


def test_invitations_list_the_pending_invitees(demo_app: str, tokens: dict[str, str]) -> None:
    status, invitations = get(demo_app, f"/projects/{OFFICE_MOVE}/invitations", tokens["alice"])
    assert status == 200 and all(set(i) == INVITATION_FIELDS for i in invitations)
    assert [(i["invitee_email"], i["invitee_first_name"], i["invitee_last_name"])
            for i in invitations] == [("carol@example.com", "Carol", "Hughes"),
                                      (OLIVER.email, "Oliver", None)]
    invited = [parse_time(i["invited_at"]) for i in invitations]
    assert invited == sorted(invited)
    _, project = get(demo_app, f"/projects/{OFFICE_MOVE}", tokens["alice"])
    assert min(invited) > parse_time(project["created_at"])
    assert all(str(uuid.UUID(i["id"])) == i["id"] for i in invitations)
    # Any member may read them, an expert too; a project without any answers [].
    assert get(demo_app, f"/projects/{OFFICE_MOVE}/invitations", tokens["bob"]) == (
        200, invitations)
    assert get(demo_app, f"/projects/{CAFETERIA_MENU}/invitations", tokens["bob"]) == (200, [])
    # Being invited is not membership: carol's own invitation is not hers to read.
    assert get(demo_app, f"/projects/{OFFICE_MOVE}/invitations", tokens["carol"])[0] == 403


def test_injection_project_text_comes_back_verbatim(demo_app: str,
                                                    tokens: dict[str, str]) -> None:
    status, project = get(demo_app, f"/projects/{INJECTION_PROJECT}", tokens["alice"])
    assert status == 200 and INJECTION_TEXT in project["name"]
    assert "<script>" in project["description"]
    assert DEMO_PROJECTS[project["name"]] == INJECTION_PROJECT


def test_unknown_route_is_a_json_404(demo_app: str, tokens: dict[str, str]) -> None:
    assert get(demo_app, "/no-such-endpoint", tokens["alice"]) == (404, {"detail": "Not Found"})


def test_seeding_is_idempotent(demo_app: str) -> None:
    from demo_app.app import demo_dsn
    from tests.conftest import PG_PORT

    with psycopg.connect(demo_dsn(f"postgresql://postgres@127.0.0.1:{PG_PORT}/postgres")) as conn:
        assert ensure_seeded(conn) is False
        counts = [conn.execute(f"SELECT count(*) FROM {t}").fetchone()
                  for t in ("users", "projects", "opinions", "calculation_results",
                            "invitations")]
    assert counts == [(len(USERS),), (len(PROJECTS),),
                      (sum(len(p.opinions) for p in PROJECTS),), (4,), (2,)]
