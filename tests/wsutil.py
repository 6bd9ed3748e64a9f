"""Helpers for talking to a running stack in tests."""

from __future__ import annotations

import http.client
from typing import Any
from urllib.parse import urlparse

from assistant_cli.client import get_ticket, http_json
from shared.auth import mint_access_token


def app_token(stack: Any, user: str = "tester") -> str:
    """An app JWT signed with the stack's secret."""
    return mint_access_token(user, stack.settings.app_jwt_secret)


def upgrade_status(base_url: str, path: str, headers: dict[str, str] | None = None
                   ) -> tuple[int, bytes]:
    """Send a raw WebSocket upgrade request; return the HTTP status and body."""
    u = urlparse(base_url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    conn.request("GET", path, headers={
        "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", **(headers or {})})
    resp = conn.getresponse()
    body = resp.read() if resp.status != 101 else b""
    conn.close()
    return resp.status, body


__all__ = ["app_token", "get_ticket", "http_json", "upgrade_status"]
