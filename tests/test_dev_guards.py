"""Dev foot-guns: own visitor ids, a loopback-only dev bind, the login gate."""

from __future__ import annotations

from collections.abc import Iterator

import jwt
import pytest
from flask.testing import FlaskClient

from assistant_cli import stack
from assistant_cli.cli import main
from shared.config import INSECURE_DEV_SECRET, settings_from_env
from shared.errors import ConfigError
from tests.conftest import ALLOC, TEST_ENV
from web import create_app

GUARD_FLOWER_PORT = ALLOC.port("test_dev_guards flower", pool="other")
GUARD_FLOWER_REDIS = ALLOC.redis_url("test_dev_guards flower")

DEV = {"ASSISTANT_REDIS_URL": TEST_ENV["ASSISTANT_REDIS_URL"]}
# A closed port: a login that reaches the app at all fails as unavailable (503), not 404.
NO_APP = {"ASSISTANT_APP_API_URL": "http://127.0.0.1:9"}


def client_for(env: dict[str, str]) -> FlaskClient:
    return create_app({"SETTINGS": settings_from_env(env), "TESTING": True}).test_client()


@pytest.fixture()
def redis_up(services: stack.Supervisor) -> Iterator[None]:
    """The limiter counts every request in the test Redis that `services` starts."""
    yield


def test_each_anonymous_visitor_gets_an_id_of_their_own(redis_up: None) -> None:
    """Not one shared user `demo`: two visitors never share a quota or each other's turns."""
    client = client_for({**DEV, "ASSISTANT_DEV_TOKENS": "true"})
    subs = []
    for body in ({"user": "demo"}, {"user": "demo"}, None):
        resp = client.post("/api/v1/dev/token", json=body)
        assert resp.status_code == 201, resp.get_data(as_text=True)
        claims = jwt.decode(resp.get_json()["access_token"], INSECURE_DEV_SECRET,
                            algorithms=["HS256"])
        subs.append(claims["sub"])
    assert len(set(subs)) == 3, subs
    assert all(s.startswith("demo-") and len(s) >= len("demo-") + 24 for s in subs), subs


def test_the_dev_login_needs_an_opt_in(redis_up: None) -> None:
    """ASSISTANT_DEV_LOGIN, or the dev tokens (the demo page's visitors) which imply it."""
    login = {"email": "alice@example.com", "password": "demo-password"}
    resp = client_for({**DEV, **NO_APP}).post("/api/v1/dev/login", json=login)
    assert resp.status_code == 404
    for opt_in in ("ASSISTANT_DEV_TOKENS", "ASSISTANT_DEV_LOGIN"):
        resp = client_for({**DEV, **NO_APP, opt_in: "true"}).post("/api/v1/dev/login",
                                                                  json=login)
        assert resp.status_code == 503, (opt_in, resp.get_data(as_text=True))


@pytest.mark.parametrize("bind", ["0.0.0.0:8000", "[::]:8000", "192.168.1.20:8000",
                                  "become.example:8000"])
def test_run_refuses_a_non_loopback_bind_in_dev(bind: str, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused before anything starts (no var folder, no process); --allow-remote forces it."""
    from assistant_cli.run import check_bind

    monkeypatch.delenv("ASSISTANT_PROFILE", raising=False)
    assert main(["run", "--bind", bind, "--var", "/nonexistent/never-created"]) == 2
    err = capsys.readouterr().err
    assert "loopback" in err and "--allow-remote" in err, err
    dev = settings_from_env({})
    with pytest.raises(ConfigError):
        check_bind(dev, bind, allow_remote=False)
    check_bind(dev, bind, allow_remote=True)
    check_bind(settings_from_env({"ASSISTANT_PROFILE": "production",
                                  "ASSISTANT_APP_JWT_SECRET": "x" * 40,
                                  "ASSISTANT_ALLOWED_ORIGINS": "https://become.example",
                                  "ASSISTANT_TRUSTED_PROXIES": "none"}), bind,
               allow_remote=False)


@pytest.mark.parametrize("bind", ["127.0.0.1:8000", "127.0.0.2:8000", "localhost:8000",
                                  "[::1]:8000"])
def test_run_accepts_a_loopback_bind_in_dev(bind: str) -> None:
    from assistant_cli.run import check_bind

    check_bind(settings_from_env({}), bind, allow_remote=False)


def test_flower_answers_only_a_loopback_host(services: stack.Supervisor) -> None:
    """`run`'s Flower (assistant_cli/flower_guard.py): a foreign Host, as a DNS-rebinding page
    sends it, gets 421; 127.0.0.1 and localhost get Flower."""
    import http.client

    from assistant_cli.flower_guard import host_name
    from assistant_cli.run import Plan, start_processes
    from tests.conftest import VAR, stack_env

    assert [host_name(h) for h in ("127.0.0.1:5555", "localhost", "[::1]:5555", "evil:80")] \
        == ["127.0.0.1", "localhost", "::1", "evil"]
    flower = GUARD_FLOWER_PORT
    sup = stack.Supervisor(VAR / "log")
    try:
        start_processes(sup, Plan(var_dir=VAR, name="guard-flower", flower_port=flower,
                                  web=False, worker=False, beat=False),
                        env=stack_env({"ASSISTANT_REDIS_URL": GUARD_FLOWER_REDIS}))

        def status(host: str) -> int:
            conn = http.client.HTTPConnection("127.0.0.1", flower, timeout=10)
            conn.request("GET", "/", headers={"Host": host})
            code = conn.getresponse().status
            conn.close()
            return code

        assert status(f"127.0.0.1:{flower}") == 200
        assert status(f"localhost:{flower}") == 200
        for foreign in (f"evil.example:{flower}", "evil.example", f"127.0.0.1.evil.example:{flower}"):
            assert status(foreign) == 421, foreign
    finally:
        sup.stop_all()


def test_the_suite_never_shares_the_dev_stacks_redis() -> None:
    """A `make run` stack's broker is the default Redis URL: a test worker on it would take
    the stack's turns (seen: a dev question answered from the test index)."""
    from urllib.parse import urlsplit

    from shared.config import Settings
    from tests.conftest import REDIS_PORT

    dev = urlsplit(Settings().redis_url)
    assert (dev.hostname, dev.port) != ("127.0.0.1", REDIS_PORT)
    assert all(urlsplit(v).port != dev.port for k, v in TEST_ENV.items() if "REDIS" in k)
