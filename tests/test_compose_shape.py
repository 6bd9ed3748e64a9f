"""docker/compose.yaml's shape, read as YAML (no Docker here): which service holds which
secret, Redis with a password, Flower behind a Host check, PostgreSQL without `trust`
(docs/security.md). `make docker-smoke` runs the file for real."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

DOCKER = Path(__file__).resolve().parent.parent / "docker"
COMPOSE: dict[str, Any] = yaml.safe_load((DOCKER / "compose.yaml").read_text(encoding="utf-8"))
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
# The secrets compose substitutes, and the settings that carry each.
SECRET_VARS = ("REDIS_PASSWORD", "POSTGRES_PASSWORD", "CORPUS_OWNER_PASSWORD",
               "CORPUS_READER_PASSWORD", "ASSISTANT_DB_PASSWORD", "ASSISTANT_APP_JWT_SECRET",
               "ASSISTANT_API_KEY")


def env(service: str) -> dict[str, str]:
    """The service's environment after YAML merges."""
    value = SERVICES[service].get("environment") or {}
    assert isinstance(value, dict), f"{service}: environment must be a mapping"
    return {k: str(v) for k, v in value.items()}


def secrets_of(service: str) -> set[str]:
    """The secrets a service's environment (and command) refers to."""
    text = " ".join(f"{k}={v}" for k, v in env(service).items()) + " " + " ".join(
        map(str, SERVICES[service].get("command") or []))
    return {name for name in SECRET_VARS if re.search(rf"\b{name}\b", text)}


# Exactly what each service may hold.
NEEDS = {
    "redis": {"REDIS_PASSWORD"},
    "postgres": {"POSTGRES_PASSWORD", "CORPUS_OWNER_PASSWORD", "CORPUS_READER_PASSWORD",
                 "ASSISTANT_DB_PASSWORD"},
    "llm-chat": set(),
    "embeddings": set(),
    "flower": {"REDIS_PASSWORD"},
    "beat": {"REDIS_PASSWORD"},
    "index": {"REDIS_PASSWORD", "CORPUS_OWNER_PASSWORD", "ASSISTANT_API_KEY"},
    "worker": {"REDIS_PASSWORD", "CORPUS_READER_PASSWORD", "ASSISTANT_DB_PASSWORD",
               "ASSISTANT_API_KEY"},
    "corpus-worker": {"REDIS_PASSWORD", "CORPUS_OWNER_PASSWORD", "CORPUS_READER_PASSWORD",
                      "ASSISTANT_DB_PASSWORD", "ASSISTANT_API_KEY"},
    "web": {"REDIS_PASSWORD", "CORPUS_READER_PASSWORD", "ASSISTANT_DB_PASSWORD",
            "ASSISTANT_APP_JWT_SECRET", "ASSISTANT_API_KEY"},
    "proxy": set(),
}


def test_every_service_is_listed() -> None:
    assert set(SERVICES) == set(NEEDS)


@pytest.mark.parametrize("service", sorted(NEEDS))
def test_each_service_holds_only_the_secrets_it_needs(service: str) -> None:
    assert secrets_of(service) == NEEDS[service]


def test_only_the_web_tier_holds_the_app_secret() -> None:
    assert [s for s in SERVICES if "ASSISTANT_APP_JWT_SECRET" in secrets_of(s)] == ["web"]


def test_the_worker_that_answers_users_never_holds_the_owner_dsn() -> None:
    """Corpus jobs run on a worker of their own; the turns worker reads as the reader."""
    def queues(service: str) -> set[str]:
        command = SERVICES[service]["command"]
        return set(command[command.index("-Q") + 1].split(","))

    assert "ASSISTANT_CORPUS_DSN" not in env("worker")
    assert queues("worker") == {"turns", "feedback"}
    assert queues("corpus-worker") == {"corpus"}
    assert "corpus_owner" in env("corpus-worker")["ASSISTANT_CORPUS_DSN"]


def test_redis_needs_its_password() -> None:
    entrypoint = (DOCKER / "redis" / "entrypoint.sh").read_text(encoding="utf-8")
    assert "requirepass" in entrypoint and "REDIS_PASSWORD:?" in entrypoint
    assert "ENTRYPOINT" in (DOCKER / "redis" / "Dockerfile").read_text(encoding="utf-8")
    assert env("redis")["REDIS_PASSWORD"].startswith("${REDIS_PASSWORD:?")
    urls = [v for s in SERVICES for k, v in env(s).items()
            if k in ("ASSISTANT_REDIS_URL", "CELERY_BROKER_URL")]
    assert urls and all(u.startswith("redis://:${REDIS_PASSWORD:?") for u in urls), urls


def test_flower_is_reached_only_through_the_host_check() -> None:
    assert "ports" not in SERVICES["flower"], "Flower itself is never published"
    assert "-A" not in SERVICES["flower"]["command"], "Flower loads none of our settings"
    assert any(str(p).endswith(":5555") for p in SERVICES["proxy"]["ports"])
    conf = (DOCKER / "proxy" / "nginx.conf").read_text(encoding="utf-8")
    default = re.search(r"listen 5555 default_server;\s*return 421;", conf)
    named = re.search(r"listen 5555;\s*server_name 127\.0\.0\.1 localhost;", conf)
    assert default and named, "a foreign Host must get 421 from the Flower port"


def test_postgres_never_trusts() -> None:
    entrypoint = (DOCKER / "postgres" / "entrypoint.sh").read_text(encoding="utf-8")
    initdb = entrypoint[entrypoint.index("initdb -D"):entrypoint.index(">/dev/null")]
    assert "trust" not in initdb, initdb
    assert "--auth-local=scram-sha-256" in initdb and "--auth-host=scram-sha-256" in initdb


def test_a_web_container_has_time_to_stop_by_itself() -> None:
    """compose's grace before SIGKILL outlasts gunicorn's graceful_timeout with room for the
    processes to exit on a loaded host (a rollout once saw 15.5 s, SIGKILLed at 15 s)."""
    conf = (DOCKER.parent / "web" / "gunicorn_conf.py").read_text(encoding="utf-8")
    graceful = int(re.search(r"^graceful_timeout = (\d+)$", conf, re.M).group(1))  # type: ignore[union-attr]
    grace = int(str(SERVICES["web"]["stop_grace_period"]).rstrip("s"))
    assert grace >= graceful + 15, (grace, graceful)


def test_the_rollout_in_the_docs_gives_each_service_its_grace_period() -> None:
    """docs/operations.md's `docker stop --time` per service is compose's stop_grace_period."""
    ops = (DOCKER.parent / "docs" / "operations.md").read_text(encoding="utf-8")
    for service in ("worker", "web"):
        told = re.findall(rf"--scale {service}=3 {service}\b.*?docker stop --time (\d+)", ops,
                          re.S)
        assert told and {int(t) for t in told} == {
            int(str(SERVICES[service]["stop_grace_period"]).rstrip("s"))}, (service, told)


def proxy_server(port: int) -> str:
    """The nginx server block that listens on `port`."""
    conf = (DOCKER / "proxy" / "nginx.conf").read_text(encoding="utf-8")
    body = re.search(rf"server \{{\s*listen {port};(.*?)\n  \}}", conf, re.S)
    assert body, port
    return body.group(1)


def test_the_proxy_passes_a_refused_or_vanished_request_to_another_web_container() -> None:
    """A web container being replaced refuses, resets or (once gone) never answers a connect,
    and answers a WebSocket upgrade with 503: nginx tries another container instead of
    failing the ask (the first rollout smoke: 17 tickets unanswered in 10 s, a 502)."""
    conf = (DOCKER / "proxy" / "nginx.conf").read_text(encoding="utf-8")
    valid = re.search(r"resolver 127\.0\.0\.11 valid=(\d+)s", conf)
    assert valid and int(valid.group(1)) <= 2, "a removed container leaves the upstream soon"
    web = proxy_server(8000)
    connect = re.search(r"proxy_connect_timeout (\d+)s;", web)
    assert connect and int(connect.group(1)) <= 3, "nginx's default connect wait is 60 s"
    nexts = re.findall(r"proxy_next_upstream ([^;]+);", web)
    assert nexts and all({"error", "timeout", "http_502", "http_503"} <= set(n.split())
                         for n in nexts), nexts
    # Only a ticket, whose repeat is harmless, is passed on after its POST reached a container.
    tickets = re.search(r"location = /api/v1/assistant/tickets \{(.*?)\}", web, re.S)
    assert tickets and "non_idempotent" in tickets.group(1)
    assert web.count("non_idempotent") == 1
