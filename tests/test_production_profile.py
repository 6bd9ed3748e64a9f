"""The production profile through the Flask test client: no dev endpoints, no forged tokens."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

from assistant_cli import stack
from shared.auth import mint_access_token
from shared.config import INSECURE_DEV_SECRET, settings_from_env
from tests.conftest import TEST_ENV
from web import create_app

STRONG_SECRET = "a-strong-production-app-secret-" + "z" * 16
PRODUCTION = {
    "ASSISTANT_PROFILE": "production",
    "ASSISTANT_REDIS_URL": TEST_ENV["ASSISTANT_REDIS_URL"],
    "ASSISTANT_APP_JWT_SECRET": STRONG_SECRET,
    "ASSISTANT_ALLOWED_ORIGINS": "https://become.example",
    "ASSISTANT_TRUSTED_PROXIES": "none",
}


def client_for(env: dict[str, str]) -> FlaskClient:
    """A test client of an app built with exactly these settings."""
    app = create_app({"SETTINGS": settings_from_env(env), "TESTING": True})
    return app.test_client()


@pytest.fixture()
def production(services: stack.Supervisor) -> Iterator[FlaskClient]:
    """A production app (the limiter needs the test Redis that `services` starts)."""
    yield client_for(PRODUCTION)


@pytest.mark.parametrize("path, body", [
    ("/api/v1/dev/token", {"user": "alice"}),
    ("/api/v1/dev/login", {"email": "alice@example.com", "password": "demo-password"}),
])
def test_production_serves_no_dev_endpoints(production: FlaskClient, path: str,
                                            body: dict[str, str]) -> None:
    resp = production.post(path, json=body, headers={"Origin": "https://become.example"})
    assert resp.status_code == 404
    assert "access_token" not in resp.get_data(as_text=True)


def test_production_refuses_a_token_forged_with_the_dev_secret(production: FlaskClient) -> None:
    forged = mint_access_token("alice", INSECURE_DEV_SECRET)
    resp = production.post("/api/v1/assistant/tickets",
                           headers={"Authorization": f"Bearer {forged}",
                                    "Origin": "https://become.example"})
    assert resp.status_code == 401
    assert resp.get_json()["error"]["code"] == 401
    good = mint_access_token("alice", STRONG_SECRET)
    resp = production.post("/api/v1/assistant/tickets",
                           headers={"Authorization": f"Bearer {good}",
                                    "Origin": "https://become.example"})
    assert resp.status_code == 201 and resp.get_json()["ticket"]


def test_dev_tokens_are_off_in_dev_until_opted_in(services: stack.Supervisor) -> None:
    dev = {"ASSISTANT_REDIS_URL": TEST_ENV["ASSISTANT_REDIS_URL"]}
    resp = client_for(dev).post("/api/v1/dev/token", json={"user": "alice"})
    assert resp.status_code == 404
    resp = client_for({**dev, "ASSISTANT_DEV_TOKENS": "true"}).post("/api/v1/dev/token",
                                                                    json={"user": "alice"})
    assert resp.status_code == 201 and resp.get_json()["access_token"]


@pytest.mark.parametrize("secret", ["weak", INSECURE_DEV_SECRET, None])
def test_start_up_refuses_a_weak_secret(secret: str | None) -> None:
    """None: unset, as in the worker's container; the web server still refuses to start."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env.update(PRODUCTION, ASSISTANT_APP_JWT_SECRET=secret or "", ASSISTANT_WEB_BIND="127.0.0.1:0")
    if secret is None:
        del env["ASSISTANT_APP_JWT_SECRET"]
    proc = subprocess.run([sys.executable, "-m", "gunicorn", "-c", "web/gunicorn_conf.py",
                           "web.wsgi:app"], env=env, cwd=stack.REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1
    assert "production profile refused: ASSISTANT_APP_JWT_SECRET must be set to a strong" \
        in proc.stderr
    assert "Traceback" not in proc.stderr and (secret or "no secret") not in proc.stderr
