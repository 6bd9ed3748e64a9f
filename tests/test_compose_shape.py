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
