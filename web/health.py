"""Component health for /healthz: Redis, corpus database and index, worker, model roles."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import psycopg
import redis

from shared import corpus_store, keys
from shared.config import ModelRole, Settings, role_spec
from shared.errors import AssistantError, IndexMissing


def _redis(client: redis.Redis) -> dict[str, Any]:
    try:
        client.ping()
        return {"ok": True}
    except redis.RedisError:
        return {"ok": False, "error": "unreachable"}


def _corpus(settings: Settings) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        with corpus_store.connect(settings.corpus_read_dsn, autocommit=True) as conn:
            info = corpus_store.current_index(conn)
    except AssistantError as exc:
        db_ok = not isinstance(exc, IndexMissing)
        return {"ok": db_ok, **({} if db_ok else {"error": "unreachable"})}, \
            {"ok": False, "error": "no index built"}
    except psycopg.Error:
        return {"ok": False, "error": "query failed"}, {"ok": False, "error": "unknown"}
    return {"ok": True}, {"ok": True, "version": info.version, "passages": info.passages,
                          "embedding_model": info.embedding_model}


def _worker(client: redis.Redis) -> dict[str, Any]:
    try:
        alive = sum(1 for _ in client.scan_iter(keys.WORKER_HEARTBEAT_PATTERN, count=100))
    except redis.RedisError:
        return {"ok": False, "error": "unknown (Redis unreachable)"}
    return {"ok": alive > 0, "workers": alive}


PROBE_S = 2  # how long a model server's /models may take before it counts as not answering


def _model(role: ModelRole) -> dict[str, Any]:
    req = urllib.request.Request(role.base_url + "/models")
    if role.provider == "api":
        req.add_header("Authorization", f"Bearer {role.key_for_request}")
    error = "unreachable"
    try:
        with urllib.request.urlopen(req, timeout=PROBE_S) as resp:  # noqa: S310 - configured URL
            ok = 200 <= resp.status < 300
    except (urllib.error.URLError, OSError, ValueError) as exc:
        ok = False
        # A local llama.cpp server has one slot: while it translates or answers, it accepts
        # the probe and answers it late. That is not the same as nothing listening.
        if isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None),
                                                       TimeoutError):
            error = f"no answer within {PROBE_S} s (busy?)"
    out: dict[str, Any] = {"ok": ok, "provider": role.provider, "model": role.model}
    if not ok:
        out["error"] = error
    return out


def _app_api(url: str) -> dict[str, Any]:
    """The BeCoMe app's API (project questions read it): its address and whether it answers
    its health endpoint as the app does ({"status": "ok"})."""
    out: dict[str, Any] = {"ok": False, "url": url, "optional": True,
                           "without": "project questions are unavailable"}
    try:
        with urllib.request.urlopen(url + "/api/v1/health", timeout=2) as resp:  # noqa: S310
            body = json.loads(resp.read(4096) or b"null")
    except (urllib.error.URLError, OSError, ValueError):
        return {**out, "error": "unreachable"}
    if isinstance(body, dict) and body.get("status") == "ok":
        return {**out, "ok": True}
    return {**out, "error": "not the BeCoMe app's health answer"}


def check_health(settings: Settings, client: redis.Redis) -> tuple[bool, dict[str, Any]]:
    """(every required component ok, per-component status).

    Optional components ({"optional": true}: the offline translator, the app API) are listed
    with what is lost without them; a turn still runs while they are down, so they do not turn
    the whole service down."""
    db, index = _corpus(settings)
    components: dict[str, Any] = {"redis": _redis(client), "corpus_db": db, "index": index,
                                  "worker": _worker(client)}
    for role in settings.roles:
        spec = role_spec(role.name)
        if not spec.health or (spec.used_when and not getattr(settings, spec.used_when)):
            continue
        status = _model(role)
        components[f"model:{role.name}"] = \
            {**status, "optional": True, "without": spec.without} if spec.without else status
    if settings.app_api_url:
        components["app_api"] = _app_api(settings.app_api_url)
    return all(c["ok"] for c in components.values() if not c.get("optional")), components


_cache_lock = threading.Lock()
_cached: tuple[float, bool, dict[str, Any]] | None = None


def cached_health(settings: Settings, client: redis.Redis
                  ) -> tuple[bool, dict[str, Any], float]:
    """check_health at most once per health_cache_s in this process: (ok, components, when).

    Each check opens a database connection, scans Redis and calls every model (hosted ones
    with the API key): callers in the same few seconds share one result, and concurrent
    callers wait for the one check in progress instead of starting their own.
    """
    global _cached
    with _cache_lock:
        if _cached is None or time.monotonic() - _cached[0] >= settings.health_cache_s:
            ok, components = check_health(settings, client)
            _cached = (time.monotonic(), ok, components)
        checked_mono, ok, components = _cached
    return ok, components, round(time.time() - (time.monotonic() - checked_mono), 3)
