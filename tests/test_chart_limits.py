"""GET /projects/<id>/chart: the per-address request window comes before
any app read, a chart is reused for a few seconds, and only what the chart shows is cleaned.
The web app runs in-process on a real Redis; the BeCoMe app is a small HTTP server on
loopback that counts its reads."""

from __future__ import annotations

import http.server
import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from flask.testing import FlaskClient

from assistant_cli import stack
from shared.auth import mint_access_token
from shared.config import settings_from_env
from tests.conftest import ALLOC, TEST_ENV, VAR, ensure_session_redis
from web import create_app
from web.project import chart as pc
from web.project import cleaning

URL = ALLOC.redis_url("test_chart_limits")
SECRET = TEST_ENV["ASSISTANT_APP_JWT_SECRET"]


def opinions(n: int) -> list[dict[str, Any]]:
    return [{"user_id": f"u{i}", "user_first_name": f"Expert {i}", "user_last_name": "<b>X</b>",
             "position": "Analyst " * 20, "lower_bound": 1 + i % 5, "peak": 5 + i % 3,
             "upper_bound": 9 + i % 4} for i in range(n)]


class ProjectApp:
    """One project of 2,000 opinions with a stored result; every read is counted."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        outer = self
        bodies = {"/api/v1/projects/p-1": {"id": "p-1", "name": "Office move", "scale_min": 0,
                                           "scale_max": 20, "scale_unit": "days"},
                  "/api/v1/projects/p-1/opinions": opinions(2000),
                  "/api/v1/projects/p-1/result": {"best_compromise_lower": 2,
                                                  "best_compromise_peak": 6,
                                                  "best_compromise_upper": 10, "max_error": 1},
                  "/api/v1/projects/p-1/members": []}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                outer.paths.append(self.path)
                body = bodies.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(body if body is not None else {}).encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"


@pytest.fixture(scope="module")
def project_app() -> Iterator[ProjectApp]:
    app = ProjectApp()
    yield app
    app.server.shutdown()


@pytest.fixture()
def web(project_app: ProjectApp) -> Iterator[FlaskClient]:
    sup = stack.Supervisor(VAR / "log")
    ensure_session_redis(sup)
    client = redis.Redis.from_url(URL)
    client.flushdb()
    project_app.paths.clear()
    env = {**TEST_ENV, "ASSISTANT_REDIS_URL": URL, "ASSISTANT_APP_API_URL": project_app.url,
           "ASSISTANT_CLIENT_REQUEST_LIMIT": "3/minute"}
    try:
        yield create_app({"SETTINGS": settings_from_env(env), "TESTING": True}).test_client()
    finally:
        client.flushdb()
        sup.stop_all()


def chart(web: FlaskClient, token: str, project: str = "p-1") -> Any:
    return web.get(f"/api/v1/assistant/projects/{project}/chart",
                   headers={"Authorization": f"Bearer {token}"})


def test_the_chart_is_rate_limited_before_any_app_read(web: FlaskClient,
                                                       project_app: ProjectApp) -> None:
    token = mint_access_token("chart-limit", SECRET)
    replies = [chart(web, token, "missing") for _ in range(3)]
    assert [r.status_code for r in replies] == [404] * 3
    reads = len(project_app.paths)
    refused = [chart(web, token, f"other-{i}") for i in range(5)]
    assert [r.status_code for r in refused] == [429] * 5
    assert "Too many requests from your address" in refused[0].get_json()["error"]["message"]
    assert len(project_app.paths) == reads, project_app.paths[reads:]


def test_a_chart_is_read_from_the_app_once_for_calls_in_a_row(web: FlaskClient,
                                                              project_app: ProjectApp) -> None:
    token = mint_access_token(f"chart-cache-{uuid.uuid4().hex[:6]}", SECRET)
    first, second = chart(web, token), chart(web, token)
    assert first.status_code == second.status_code == 200
    assert first.get_json() == second.get_json()
    assert first.get_json()["more_experts"] == 2000 - pc.MAX_LISTED
    assert len(project_app.paths) == 4, project_app.paths  # project, opinions, result, members
    other = mint_access_token("chart-cache-someone-else", SECRET)
    assert chart(web, other).status_code == 200
    assert len(project_app.paths) == 8, "another token's chart is read with that token"
    assert chart(web, token).status_code == 429, "a cached chart still counts as a request"


def test_only_the_opinions_the_chart_shows_are_cleaned(monkeypatch: pytest.MonkeyPatch) -> None:
    cleaned: list[int] = []
    real = pc.clean_text
    for module in (pc, cleaning):  # the chart's own fields; the experts' names (person_name)
        monkeypatch.setattr(module, "clean_text", lambda v, limit: (cleaned.append(limit),
                                                                    real(v, limit))[1])
    recomputed: list[int] = []
    real_recompute = pc.recompute
    monkeypatch.setattr(pc, "recompute", lambda o: (recomputed.append(len(o)),
                                                     real_recompute(o))[1])
    project = {"name": "Office move", "scale_min": 0, "scale_max": 20, "scale_unit": "days"}
    result = {"best_compromise_lower": 2, "best_compromise_peak": 6,
              "best_compromise_upper": 10, "max_error": 1}
    data = pc.chart_data(project, opinions(2000), result, [])
    assert len(data["experts"]) == pc.MAX_LISTED and data["more_experts"] == 2000 - pc.MAX_LISTED
    assert data["experts"][0]["name"] == "Expert 0 X"
    # One name per shown expert, plus the project's name and unit; no positions (not shown).
    assert len(cleaned) == pc.MAX_LISTED + 2, len(cleaned)
    assert recomputed == [], "a stored result needs no recomputation for the chart"
    assert pc.chart_data(project, opinions(3), None, [])["result"] == "computed"
