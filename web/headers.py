"""Response headers: CSP, HSTS (production), and CORS for the allowed origins only."""

from __future__ import annotations

from typing import Any

from flask import request

from shared.config import Settings

CORS_HEADERS = "Authorization, Content-Type, Last-Event-ID"
CORS_METHODS = "GET, POST"
HSTS = "max-age=31536000; includeSubDomains"


def _csp() -> str:
    """Our own origin only: the panel connects to this host (https and wss), nowhere else."""
    # 'self' covers same-origin ws: and wss: in current browsers; the explicit entries serve
    # older ones. request.host is only ever reflected to the requester itself.
    ws = ("wss://" if request.scheme == "https" else "ws://") + request.host
    return ("default-src 'self'; script-src 'self'; style-src 'self'; "
            f"connect-src 'self' {ws}; img-src 'self'; frame-ancestors 'self'; "
            "base-uri 'none'; form-action 'self'")


def _cors(resp: Any, settings: Settings) -> None:
    """Let an allowed origin's page read our API (bearer tokens, no cookies); others get no
    CORS headers, so their browser refuses to hand them the response."""
    origin = request.headers.get("Origin")
    resp.vary.add("Origin")
    if not origin or origin.rstrip("/") not in settings.allowed_origins:
        return
    resp.headers["Access-Control-Allow-Origin"] = origin
    if request.method == "OPTIONS":
        resp.headers["Access-Control-Allow-Methods"] = CORS_METHODS
        resp.headers["Access-Control-Allow-Headers"] = CORS_HEADERS
        resp.headers["Access-Control-Max-Age"] = "600"


def add_security_headers(resp: Any, settings: Settings) -> Any:
    """Every response's security headers."""
    resp.headers.setdefault("X-Content-Type-Options", "nosniff")
    resp.headers.setdefault("Referrer-Policy", "no-referrer")
    resp.headers.setdefault("Content-Security-Policy", _csp())
    if settings.profile in ("production", "deployed"):
        resp.headers.setdefault("Strict-Transport-Security", HSTS)
    if request.path.startswith("/api/"):
        _cors(resp, settings)
    return resp
