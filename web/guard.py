"""Per-process access to the shared limits: request rate, message quotas, in-flight slots."""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
from functools import lru_cache

from flask import request

from shared.config import Settings
from shared.limits import Admission, Leases, Limiter, SocketLeases, StreamSlots
from shared.redis_client import redis_client
from web.client_addr import IPNetwork, client_address, forwarded, parse_networks

log = logging.getLogger(__name__)


@lru_cache(maxsize=4)
def limiter(settings: Settings) -> Limiter:
    """The Limiter of these settings."""
    return Limiter(settings, redis_client(settings))


@lru_cache(maxsize=4)
def leases(settings: Settings) -> Leases:
    """The in-flight slot leases of these settings."""
    return Leases(settings, redis_client(settings))


@lru_cache(maxsize=4)
def admission(settings: Settings) -> Admission:
    """A new turn's limits in one round trip (request window, caps, message windows)."""
    return Admission(limiter(settings), leases(settings), redis_client(settings))


@lru_cache(maxsize=4)
def stream_slots(settings: Settings) -> StreamSlots:
    """The per-user cap on concurrent event streams."""
    return StreamSlots(settings, redis_client(settings))


@lru_cache(maxsize=4)
def socket_leases(settings: Settings) -> SocketLeases:
    """The per-user and per-address caps on open WebSockets."""
    return SocketLeases(settings, redis_client(settings))


def process_id() -> str:
    """This web process, for the per-process in-flight cap."""
    return f"{socket.gethostname()}:{os.getpid()}"


@lru_cache(maxsize=4)
def _proxies(spec: str) -> tuple[IPNetwork, ...]:
    return parse_networks(spec)


def current_client(settings: Settings) -> str:
    """The client address of the current request (forwarded only via trusted proxies)."""
    forwarded = request.headers.get("X-Forwarded-For")
    proxies = _proxies(settings.trusted_proxies)
    if forwarded and not _in(request.remote_addr, proxies):
        _warn_untrusted_proxy(request.remote_addr or "unknown")
    return client_address(request.remote_addr, forwarded, proxies)


@lru_cache(maxsize=64)
def _warn_untrusted_proxy(peer: str) -> None:
    # Once per peer and process: behind a proxy that is not in ASSISTANT_TRUSTED_PROXIES every
    # client is counted as the proxy, so all of them share one rate-limit bucket.
    log.warning("X-Forwarded-For from %s, which is not in ASSISTANT_TRUSTED_PROXIES: every "
                "client behind it shares one rate-limit bucket", peer)


def trusted_health_caller(settings: Settings) -> bool:
    """Whether this request may see /healthz detail (ASSISTANT_HEALTH_TRUSTED)."""
    # A forwarded request (any proxy header, as /metrics reads them) counts only through a
    # trusted proxy that names the client in X-Forwarded-For: behind a local proxy every
    # caller would otherwise look like loopback, and X-Real-IP or Forwarded are not read.
    if forwarded(request.headers) and not (
            request.headers.get("X-Forwarded-For")
            and _in(request.remote_addr, _proxies(settings.trusted_proxies))):
        return False
    return _in(current_client(settings), _proxies(settings.health_trusted))


def _in(addr: str | None, networks: tuple[IPNetwork, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(addr or "")
    except ValueError:
        return False
    return any(ip in net for net in networks)


def preferred_lang() -> str:
    """'cs' when the browser prefers Czech, else 'en' (for refusal sentences)."""
    best = request.accept_languages.best_match(["en", "cs"]) if request else None
    return best or "en"
